"""The add-a-platform recipe of docs/architecture.md, followed for Alpine Linux (apk) in a scratch
copy of the checkout: it touches the files its steps name and no other, the guards stay green,
and the new platform is detected and installs with apk there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scratch_tree import ROOT, Recipe, ScratchTree

ALPINE = '''\
"""Alpine Linux: tools from apk, installed only when missing."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from nasplan.platforms.base import Command, PlatformBase, installer_path

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts

# Tools whose Alpine package has another name; the others come in a package of their own name.
PACKAGES = {"nfs-cp": "libnfs", "ping": "iputils-ping"}


class Alpine(PlatformBase):
    """Alpine Linux (ID in /etc/os-release); BusyBox's sh, musl."""

    name = "alpine"

    def matches(self, facts: HostFacts) -> bool:
        return facts.os_id == "alpine"

    def install_missing(self, facts: HostFacts, missing: list[str]) -> list[Command]:
        apk = installer_path(facts, missing, "apk", "this Alpine host has no apk")
        names = sorted({PACKAGES.get(p, p) for p in missing})
        lines = [shlex.join([apk, "add", "--no-progress", "-q", *names])]
        lines.extend(f"command -v {shlex.quote(p)}" for p in missing)
        return [Command("\\n".join(lines), f"apk add {' '.join(names)}", sudo=True)]
'''

# Alpine 3.20's /etc/os-release, in the facts' own section
OS_RELEASE = """\
@@nasplan:marker:/etc/os-release@@
NAME="Alpine Linux"
ID=alpine
VERSION_ID=3.20.3
PRETTY_NAME="Alpine Linux v3.20"
HOME_URL="https://alpinelinux.org/"
BUG_REPORT_URL="https://gitlab.alpinelinux.org/alpine/aports/-/issues"

"""

UNIT_TEST = '''\
"""Alpine: detected from its facts, iperf3 from apk."""

from __future__ import annotations

from pathlib import Path

from nasplan.facts.gather import parse_facts
from nasplan.platforms import detect, posix_by_hint

FACTS = Path(__file__).resolve().parents[2] / "fixtures" / "facts" / "alpine-3.20.txt"


def test_an_alpine_host_is_alpine_and_gets_iperf3_from_apk() -> None:
    facts = parse_facts(FACTS.read_text(encoding="utf-8"))
    platform = detect(facts)
    assert (platform.name, platform.os_name(facts)) == ("alpine", "Alpine Linux v3.20")
    assert posix_by_hint("alpine")
    (command,) = platform.install_commands(facts, ["iperf3", "fio"])
    assert command.description == "apk add iperf3"
    assert command.script.startswith("/sbin/apk add --no-progress -q iperf3\\n")
    assert command.sudo
'''


def alpine_facts() -> str:
    """A Debian capture with Alpine's os-release, its apk and no apt-get nor iperf3."""
    debian = (ROOT / "tests" / "fixtures" / "facts" / "debian12-root.txt").read_text()
    head, rest = debian.split("@@nasplan:marker:/etc/os-release@@\n", 1)
    rest = rest.split("\n\n", 1)[1]
    rest = rest.replace("iperf3=/usr/bin/iperf3\n", "iperf3=\n")
    rest = rest.replace("apt-get=/usr/bin/apt-get\n", "apt-get=\napk=/sbin/apk\n")
    return head + OS_RELEASE + rest


def follow(tree: ScratchTree) -> None:
    """The recipe's steps, in its order."""
    # 1. the platform's module
    tree.write("nasplan/platforms/alpine.py", ALPINE)
    # 2. the registry: a vendor marker before Debian and the generic Linux
    init = "nasplan/platforms/__init__.py"
    tree.insert_before(
        init, "from nasplan.platforms.base import", "from nasplan.platforms.alpine import Alpine\n"
    )
    tree.insert_before(init, "        Debian(),\n", "        Alpine(),\n")

    # 3. the inventory schema's platform enum
    def inventory(schema: dict[str, Any]) -> None:
        schema["$defs"]["platform"]["enum"].append("alpine")

    tree.edit_json("nasplan/schemas/inventory.schema.json", inventory)
    # 4. the reference page
    tree.regenerate_references()
    # 5. its module in the architecture's module table
    tree.replace(
        "docs/architecture.md", "`macos.py` `windows.py` |", "`macos.py` `windows.py` `alpine.py` |"
    )
    # 6. its row in docs/platforms.md
    tree.insert_before(
        "docs/platforms.md",
        "| Windows 10/11 |",
        "| Alpine Linux | `/etc/os-release` | `apk add` |\n",
    )
    # 7. its unit test, on its facts
    tree.write("tests/fixtures/facts/alpine-3.20.txt", alpine_facts())
    tree.write("tests/unit/platforms/test_alpine.py", UNIT_TEST)
    # 8. (only when: its package manager is not looked up yet) apk in TOOL_NAMES
    tree.insert_after("nasplan/facts/gather.py", '    "apt-get",\n', '    "apk",\n')


def test_the_platform_recipe_gives_a_platform_the_guards_and_its_own_test_accept(
    tmp_path: Path,
) -> None:
    recipe = Recipe.read("Add a platform", "alpine")
    assert recipe.files == {
        "nasplan/platforms/alpine.py",
        "nasplan/platforms/__init__.py",
        "nasplan/schemas/inventory.schema.json",
    }
    tree = ScratchTree.copy(tmp_path)

    follow(tree)

    recipe.assert_touched(tree.changed(), applied={"nasplan/facts/gather.py"})
    tree.assert_guards_pass(extra=["tests/unit/platforms/test_alpine.py"])
    said = tree.python(
        """
        from nasplan import platforms
        from nasplan.platforms.base import PlatformBase

        alpine = next(p for p in platforms.registry() if p.name == "alpine")
        print(isinstance(alpine, PlatformBase), alpine.scripts, alpine.equivalent("fio"))
        """
    )
    assert said.splitlines() == ["True sh fio"]
