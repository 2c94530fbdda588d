"""The add-a-transfer-method recipe of docs/architecture.md, followed for ``method: webdav``
(curl PUT and GET to the NAS's WebDAV server, a tool new to nasplan) in a scratch copy of the
checkout: it touches the files its steps name and no other, the guards and the method's own test
pass, and a plan may say ``method: webdav`` there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scratch_tree import Recipe, ScratchTree

CURL = r'''\
"""curl (WebDAV): PUT and GET argv that print what they moved, and a pure parser of that line."""

from __future__ import annotations

# ``-w``: the bytes and the rate curl measured, one line after the transfer
WRITE_OUT = {
    "put": "%{size_upload} %{speed_upload}\n",
    "get": "%{size_download} %{speed_download}\n",
}


class CurlParseError(ValueError):
    """curl said no ``-w`` line (it failed before the transfer ended)."""


def argv(config: str, url: str, *, put: str | None = None, delete: bool = False) -> list[str]:
    """``curl -K config`` (the login, never in argv) to ``url``: a PUT of ``put``, a DELETE,
    else a GET into nothing."""
    base = ["curl", "-sS", "--fail", "-K", config]
    if delete:
        return [*base, "-X", "DELETE", url]
    way = "put" if put else "get"
    sent = ["-T", put] if put else []
    return [*base, *sent, "-o", "/dev/null", "-w", WRITE_OUT[way], url]


def parse(output: str) -> tuple[int, float]:
    """(bytes, bytes per second) of the ``-w`` line."""
    for line in reversed(output.strip().splitlines()):
        words = line.split()
        if len(words) == 2 and all(w.replace(".", "", 1).isdigit() for w in words):
            return int(words[0]), float(words[1])
    raise CurlParseError(f"no curl -w line in {output.strip()[-200:]!r}")


def config(user: str, password: str) -> str:
    """curl ``-K`` text with the login, quoted as curl's config reads it."""
    quoted = f"{user}:{password}".replace("\\", "\\\\").replace('"', '\\"')
    return f'user = "{quoted}"\n'
'''

WEBDAV = r'''\
"""``method: webdav``: curl PUTs the file to the NAS's WebDAV server and GETs it back; the
password from the environment, in a curl config file written from stdin."""

from __future__ import annotations

import dataclasses
import os
from typing import TYPE_CHECKING

from nasplan.measure.methods.base import (
    SETUP_TIMEOUT_S,
    Command,
    Parsed,
    Transfer,
    TransferMethod,
    TransferSettings,
    join,
    needs_setting,
)
from nasplan.measure.tools import curl, transfer
from nasplan.remote.runner import Runner

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs


class Webdav(TransferMethod):
    """WebDAV over HTTP to a directory of the NAS's WebDAV server."""

    name = "webdav"
    label = "WebDAV"

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        return {test.client: ("curl",)}

    def concrete(self, s: TransferSettings, base: Transfer, server: HostSession) -> Transfer:
        if not s.path or not s.password_env:
            raise needs_setting(self.name, "path" if not s.path else "password_env")
        user = str(s.user or server.host.user or "guest")
        return dataclasses.replace(
            base, remote_dir=s.path, smb_user=user, password_env=s.password_env
        )

    def tool(self, xfer: Transfer) -> str:
        return "curl"

    def url(self, xfer: Transfer, address: str) -> str:
        return f"http://{address}{join(xfer.remote_dir, xfer.remote_name)}"

    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        config = f"{local_dir}/{transfer.AUTH_NAME}"
        if direction == "write":
            source = f"{local_dir}/{transfer.SOURCE_NAME}"
            return curl.argv(config, self.url(xfer, address), put=source), []
        return curl.argv(config, self.url(xfer, address)), []

    def parse(self, xfer: Transfer, output: str) -> Parsed:
        try:
            moved, rate = curl.parse(output)
        except curl.CurlParseError as exc:
            raise transfer.TransferParseError(str(exc)) from exc
        return {"tool_bytes_per_second": rate, "bytes": moved}

    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        config = f"{local_dir}/{transfer.AUTH_NAME}"
        argv = curl.argv(config, self.url(xfer, address), delete=True)
        result = client.run(argv, timeout_s=SETUP_TIMEOUT_S)
        return [] if result.ok else [f"curl DELETE {xfer.remote_name}: {result.stderr.strip()}"]

    def credentials(self, xfer: Transfer) -> tuple[str | None, str | None]:
        password = os.environ.get(xfer.password_env or "")
        if not password:
            return None, f"environment variable {xfer.password_env} (WebDAV password) is not set"
        return password, None

    def auth_stdin(self, xfer: Transfer, secret: str) -> str | None:
        assert xfer.smb_user is not None
        return curl.config(xfer.smb_user, secret)
'''

# what ``curl -w '%{size_upload} %{speed_upload}\\n'`` prints after a 1 GiB PUT
CAPTURE = "1073741824 112358132\n"

UNIT_TEST = r'''\
"""method: webdav: curl's argv and its -w line."""

from __future__ import annotations

from pathlib import Path

from nasplan.measure.methods import method
from nasplan.measure.methods.base import Transfer

CAPTURE = Path(__file__).resolve().parents[3] / "fixtures" / "curl" / "put-1gib.txt"


def test_a_put_is_timed_and_its_rate_read_from_curl_s_line() -> None:
    webdav = method("webdav")
    xfer = Transfer(webdav, ("write",), 2**30, "nasplan-1.bin", remote_dir="/dav/bench")
    argv, before = xfer.command("write", "/tmp/x", "198.18.0.10")
    assert argv[-1] == "http://198.18.0.10/dav/bench/nasplan-1.bin" and before == []
    assert "-T" in argv and "/tmp/x/smb-auth" in argv
    parsed = webdav.parse(xfer, CAPTURE.read_text())
    assert parsed == {"tool_bytes_per_second": 112358132.0, "bytes": 2**30}
'''


def follow(tree: ScratchTree) -> None:
    """The recipe's steps (and its *Only when* step for a new tool), in its order."""
    # 1. the method's module
    tree.write("nasplan/measure/methods/webdav.py", WEBDAV)
    # 2. the registry, in the schema's order
    init = "nasplan/measure/methods/__init__.py"
    tree.insert_before(
        init,
        "\n# in the plan schema's order",
        "from nasplan.measure.methods.webdav import Webdav\n",
    )
    tree.replace(
        init, "(Smb(), Rsync(), Copy(), Nfs())", "(Smb(), Rsync(), Copy(), Nfs(), Webdav())"
    )

    # 3. the plan schema: the method's enum and description, its if/then, its settings, a hint
    def plan(schema: dict[str, Any]) -> None:
        transfer = schema["$defs"]["transfer"]
        method = transfer["properties"]["method"]
        method["enum"].append("webdav")
        method["description"] += "; webdav: curl PUT and GET to path on the NAS's WebDAV server"
        for key, said in (
            ("path", "directory on the NAS's WebDAV server"),
            ("user", "the WebDAV user"),
            ("password_env", "its password"),
        ):
            transfer["properties"][key]["description"] += f"; webdav: {said}"
        transfer["allOf"].append(
            {"if": {"properties": {"method": {"const": "webdav"}}},
             "then": {"required": ["path", "password_env"]}}
        )  # fmt: skip
        hints = schema["$defs"]["test"]["properties"]["kind"]["x-hints"]
        hints["webdav"] = (
            "WebDAV is a method of the transfer kind: write `kind: transfer` and `method: webdav`"
        )

    tree.edit_json("nasplan/schemas/plan.schema.json", plan)
    # 4. the reference page
    tree.regenerate_references()
    # 5. the module table: the method, and (step 8) its tool's row
    tree.replace(
        "docs/architecture.md", "`rsync.py` `copy.py` |", "`rsync.py` `copy.py` `webdav.py` |"
    )
    tree.insert_before(
        "docs/architecture.md",
        "| `nasplan/measure/tools/ping.py` |",
        "| `nasplan/measure/tools/curl.py` | curl's WebDAV argv, a parser of its `-w` line |\n",
    )
    # 6. the manual: the method line, and what it needs
    tree.replace("docs/measurements.md", "| copy\n", "| copy | webdav\n")
    tree.insert_before(
        "docs/measurements.md",
        "`method: nfs` with `export:`",
        "`method: webdav` needs `path` (a directory on the NAS's WebDAV server) and curl.\n",
    )
    # 7. its unit test, on curl's output
    tree.write("tests/fixtures/curl/put-1gib.txt", CAPTURE)
    tree.write("tests/unit/measure/methods/test_webdav.py", UNIT_TEST)
    # 8. (only when: its tool is new) the tool's module and its name in the facts
    tree.write("nasplan/measure/tools/curl.py", CURL)
    tree.insert_after("nasplan/facts/gather.py", '    "rsync",\n', '    "curl",\n')


def test_the_method_recipe_gives_a_method_the_guards_its_test_and_a_plan_accept(
    tmp_path: Path,
) -> None:
    recipe = Recipe.read("Add a transfer method", "webdav", TOOL="curl")
    assert recipe.files == {
        "nasplan/measure/methods/webdav.py",
        "nasplan/measure/methods/__init__.py",
        "nasplan/schemas/plan.schema.json",
    }
    tree = ScratchTree.copy(tmp_path)

    follow(tree)

    applied = {"nasplan/measure/tools/curl.py", "nasplan/facts/gather.py"}
    recipe.assert_touched(tree.changed(), applied)
    tree.assert_guards_pass(extra=["tests/unit/measure/methods/test_webdav.py"])
    tree.write(
        "inventory.yaml", "hosts:\n  nas: {address: 198.18.0.10}\n  ws: {address: 198.18.0.11}\n"
    )
    test = "{kind: transfer, server: nas, client: ws, method: webdav, password_env: DAV_PW"
    tree.write(
        "plan.yaml", f"name: dav\ninventory: inventory.yaml\ntests:\n  - {test}, path: /dav}}\n"
    )
    tree.write("bad.yaml", f"name: dav\ninventory: inventory.yaml\ntests:\n  - {test}}}\n")
    said = tree.python(
        """
        from pathlib import Path

        from nasplan.errors import InputError
        from nasplan.input.plan import load_plan
        from nasplan.measure.kinds import bind

        bound = bind(load_plan(Path("plan.yaml")).tests[0])
        print(bound.needs, bound.description)
        try:
            load_plan(Path("bad.yaml"))
        except InputError as exc:
            print(exc.messages[0])
        """
    )
    needs, refused = said.splitlines()
    assert needs.startswith("{'ws': ('curl',)}")
    assert "path" in refused
