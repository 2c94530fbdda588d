"""nasplan's reader of Ansible inventories against Ansible itself: for each inventory of the
corpus (tests/fixtures/ansible/, taken from Ansible's guide, its plugins' examples and its own
tests, each with where it came from), ``ansible-inventory -i X [-i Y] --list`` is run here and
nasplan must give the same hosts, groups and vars after precedence, or refuse the input in one
located line saying why.

Two levels: the reader (every var of every host, ``ansible_*`` included, exactly as Ansible
prints it) and the inventory a plan gets (addresses, users, ports, connection and the user's
vars), since nasplan also refuses what it cannot use (a password, two local hosts).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.input.ansible import CONNECTION_FIELDS
from nasplan.input.ansible_graph import merged
from nasplan.input.ansible_sources import read_sources
from nasplan.input.inventory import CONNECTION_KEYS, Inventory, load_inventory, read_inventory
from nasplan.input.inventory_view import hidden, list_view
from nasplan.input.loader import located

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ansible"
ANSIBLE_INVENTORY = Path(sys.executable).parent / "ansible-inventory"
BATCH = Path(__file__).with_name("ansible_batch.py")


@dataclass(frozen=True)
class Case:
    """Sources given as ``-i`` in order (relative to FIXTURES, or a host list), and what nasplan
    refuses: ``reader`` (the inventory itself) or ``user`` (a host nasplan cannot use), each the
    words of the one located line expected."""

    sources: tuple[str, ...]
    reader: str | None = None
    user: str | None = None
    playbook: str | None = None  # the directory both run from (FIXTURES/...): its group_vars/

    def playbook_dir(self) -> Path | None:
        return FIXTURES / self.playbook if self.playbook else None

    @property
    def id(self) -> str:
        named = " -i ".join(self.sources)
        return f"{named} (from {self.playbook})" if self.playbook else named

    def paths(self) -> list[Path]:
        return [
            FIXTURES / s if not s.startswith("hostlist:") else Path(s[9:]) for s in self.sources
        ]


def case(
    *sources: str, reader: str | None = None, user: str | None = None, playbook: str | None = None
) -> Case:
    return Case(tuple(sources), reader, user, playbook)


CORPUS = [
    # Ansible's inventory guide
    case("guide/basic.ini"),
    case("guide/basic.yml"),
    case("guide/basic-ungrouped.yml"),
    case("guide/multiple-groups.yml"),
    case("guide/multiple-groups-ungrouped.yml"),
    case("guide/parent-child.yml"),
    case("guide/ranges.ini"),
    case("guide/ranges.yml"),
    case("guide/ranges-stride.ini"),
    case("guide/ranges-stride.yml"),
    case("guide/ranges-alpha.ini"),
    case("guide/ranges-and-vars.ini"),
    case("guide/host-vars.ini"),
    case("guide/host-vars.yml"),
    case("guide/port.ini"),
    case("guide/aliases.ini"),
    case("guide/aliases.yml"),
    case("guide/group-vars.ini"),
    case("guide/group-vars.yml"),
    case("guide/nested.ini", reader="[usa:children] includes undefined group 'northeast'"),
    case("guide/nested.yml"),
    case("guide/group-priority.yml"),
    case("guide/connection-examples.ini"),
    case("guide/local.ini"),
    case("guide/groups/hosts"),
    case("guide/groups"),
    case("guide/by-location.ini"),
    case("guide/per-environment/inventory_test", "guide/per-environment/inventory_staging"),
    case("guide/var-load-order/staging", "guide/var-load-order/production"),
    case("guide/var-load-order/production", "guide/var-load-order/staging"),
    case("guide/inventory-dir"),
    case(
        "guide/inventory-dir-wrong-order",
        reader="[production:children] includes undefined group 'atlanta_prod'",
    ),
    # the examples of ansible-core's yaml and ini inventory plugins
    case("plugin-examples/yaml.yml"),
    case("plugin-examples/ini-example-1.ini"),
    case("plugin-examples/ini-example-2.ini"),
    # ansible-core's integration tests
    case("integration/inventory_yaml/test.yml"),
    case(
        "integration/inventory_yaml/test_int_hostname.yml",
        reader="mapping key '1234' is not a string",
    ),
    case("integration/inventory_ini/inventory.ini", user="'ansibletest1' is not supported"),
    case("integration/ansible-inventory/files/complex.ini", user="a second host with connection"),
    case("integration/ansible-inventory/files/valid_sample.yml"),
    case("integration/ansible-inventory/files/unicode.yml", user="is not valid"),
    case("integration/ansible-inventory/files/invalid_sample.yml", reader="mapping key '7.2'"),
    case("integration/ansible-inventory/files/valid_sample.toml", reader="a TOML inventory"),
    case("integration/inventory/inv_with_int.yml", reader="mapping key '0'"),
    case("integration/inventory/test_empty.yml", user="lists no hosts"),
    case("integration/inventory/1/2/inventory.yml", reader="inventory plugin's configuration"),
    case("integration/inventory_constructed/invs/1"),
    case("integration/inventory_constructed/static_inventory.yml"),
    case("integration/inventory_script/inventory.sh", reader="an inventory script"),
    case("integration/inventory-invalid-group/inventory.ini"),
    case("integration/var_blending/inventory", user="a second host with connection"),
    case("integration/group_by/inventory.group_by", user="a second host with connection"),
    case("integration/path_with_comma_in_inventory/this,path,has,commas"),
    case("integration/hash/test_inv1.yml", "integration/hash/test_inv2.yml"),
    # ansible-core's unit tests
    case("units/ini"),
    case("units/ini_explicit_ungrouped"),
    case("units/ini_variables_stringify"),
    case("units/test.yaml"),
    case("units/empty", user="lists no hosts"),
    case("units/vars-dir"),
    # Ansible's rules, each in a file written here (fixtures README)
    case("rules/typing.ini"),
    case("rules/typing.yml"),
    case("rules/ignored-dir"),
    case("rules/ignored-dir/30-sub"),
    case("rules/vars-dirs"),
    case("rules/ports.ini"),
    case("rules/several/a.ini", "rules/several/b.ini", "rules/several/c.yml"),
    case(
        "rules/several/c.yml",
        "rules/several/b.ini",
        "rules/several/a.ini",
        reader="[child:vars] names undefined group 'child'",
    ),
    case("rules/deep.yml"),
    case("rules/yaml-strings.yml"),
    case("rules/same-dir/a.ini", "rules/same-dir/b.ini"),
    case("rules/two-dirs/one", "rules/two-dirs/two"),
    case("rules/two-dirs/two/hosts", "rules/two-dirs/one/hosts"),
    case("rules/ungrouped.ini"),
    case("rules/pending.ini"),
    case("hostlist:nas1,nas2:2222,[2001:db8::1]:2200,"),
    case("hostlist:nas1,h[1:2],", user="'h[1:2]' is not valid"),
    case("guide/basic.yml", "hostlist:extra1,mail.example.com:2022,"),
    # the shapes of real projects' inventories (each file says where it was seen), run from
    # the playbook directory where they have one
    case("realworld/k8s-cluster/inventory.ini"),
    case("realworld/terraform-k3s/inventory.ini"),
    case(
        "realworld/homelab/inventory/hosts.yml",
        playbook="realworld/homelab",
        user="'ansible.netcommon.network_cli' is not supported",
    ),
    case("realworld/homelab/inventory/hosts.yml"),
    case("realworld/lab-template/inventory.yml"),
]


def ansible_environment(home: Path) -> dict[str, str]:
    """Ansible with no configuration but its defaults, no state left in the real home."""
    (home / "ansible.cfg").write_text("")
    return {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "ANSIBLE_CONFIG": str(home / "ansible.cfg"),
        "ANSIBLE_LOCAL_TEMP": str(home / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
        "LC_ALL": "C.UTF-8",
    }


def run_ansible(cases: Sequence[Case], home: Path) -> dict[str, dict[str, Any] | None]:
    """Each case's ``ansible-inventory -i ... --list``, each run from an empty directory of its
    own (tests/unit/ansible_batch.py); None where Ansible cannot parse a source (with the
    default settings it would only warn and go on without it)."""
    jobs = []
    for index, corpus_case in enumerate(cases):
        cwd = corpus_case.playbook_dir() or home / f"run{index}"
        cwd.mkdir(exist_ok=True)
        argv = ["ansible-inventory"]
        for path in corpus_case.paths():
            argv += ["-i", str(path)]
        jobs.append(
            {
                "argv": [*argv, "--list"],
                "cwd": str(cwd),
                "out": str(cwd / "out"),
                "err": str(cwd / "err"),
            }
        )
    environment = {**ansible_environment(home), "ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED": "1"}
    done = subprocess.run(
        [sys.executable, str(BATCH)],
        input=json.dumps(jobs),
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    codes = json.loads(done.stdout)
    listings: dict[str, dict[str, Any] | None] = {}
    for corpus_case, job, code in zip(cases, jobs, codes, strict=True):
        listings[corpus_case.id] = (
            plain(json.loads(Path(job["out"]).read_text())) if code == 0 else None
        )
    return listings


@pytest.fixture(scope="module")
def listings(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any] | None]:
    """Every case's listing."""
    assert ANSIBLE_INVENTORY.exists(), "ansible-core is a test dependency: pip install -e '.[test]'"
    return run_ansible(CORPUS, tmp_path_factory.mktemp("ansible"))


def ansible_groups(listing: dict[str, Any]) -> dict[str, set[str]]:
    """Each group of a --list output -> its hosts, its children's included; empty ones out."""

    def hosts(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        group = listing.get(name, {})
        found = set(group.get("hosts", []))
        for child in group.get("children", []):
            if child not in seen:
                found |= hosts(child, seen | {name})
        return found

    groups = {name: hosts(name) for name in listing if name not in ("_meta", "all")}
    return {name: members for name, members in groups.items() if members}


def ansible_hosts(listing: dict[str, Any]) -> set[str]:
    return set(listing["_meta"]["hostvars"]) | set().union(*ansible_groups(listing).values())


def as_json(value: Any) -> Any:
    """A value as JSON carries it (tuples as lists, dates as text), to compare with Ansible's."""
    return json.loads(json.dumps(value, default=str))


def plain(value: Any) -> Any:
    """Ansible's JSON of a value: ``!unsafe`` text printed as ``{"__ansible_unsafe": text}``."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def reader_view(
    paths: Sequence[Path], playbook_dir: Path | None = None
) -> tuple[dict[str, Any], dict[str, set[str]]]:
    """nasplan's reader: every host's vars after precedence, and each non-empty group."""
    read = read_sources(paths, playbook_dir)
    graph = read.graph
    hostvars = {
        name: as_json(merged(graph.layers(entry, read.vars_dirs))[0])
        for name, entry in graph.hosts.items()
    }
    groups: dict[str, set[str]] = {}
    for name, entry in graph.hosts.items():
        for group in graph.ordered_groups(entry):
            groups.setdefault(group, set()).add(name)
    return hostvars, groups


def assert_one_located_line(error: InputError, words: str) -> None:
    assert len(error.messages) == 1, error.messages
    line = error.messages[0]
    assert located(line) is not None, line
    assert words in line, line


CASES = [pytest.param(c, id=c.id) for c in CORPUS]


@pytest.mark.parametrize("corpus_case", CASES)
def test_the_reader_gives_what_ansible_gives(
    corpus_case: Case, listings: dict[str, dict[str, Any] | None]
) -> None:
    listing = listings[corpus_case.id]
    if corpus_case.reader is not None:
        with pytest.raises(InputError) as refused:
            reader_view(corpus_case.paths())
        assert_one_located_line(refused.value, corpus_case.reader)
        return
    assert listing is not None, "Ansible could not read it: the case must say nasplan refuses it"
    hostvars, groups = reader_view(corpus_case.paths(), corpus_case.playbook_dir())
    assert set(hostvars) == ansible_hosts(listing)
    for name, found in hostvars.items():
        assert found == listing["_meta"]["hostvars"].get(name, {}), name
    assert {g: m for g, m in groups.items() if g != "all"} == ansible_groups(listing)


def expected_host(name: str, hostvars: dict[str, Any]) -> dict[str, Any]:
    """What nasplan's Host must hold for a host Ansible lists with ``hostvars`` (the connection
    as Ansible's ssh connection takes it: test_the_connection_is_what_ansibles_ssh_uses)."""
    port = hostvars.get("ansible_ssh_port", hostvars.get("ansible_port"))
    connection = str(hostvars.get("ansible_connection", "ssh")).removeprefix("ansible.builtin.")
    return {
        "address": str(hostvars.get("ansible_ssh_host", hostvars.get("ansible_host", name))),
        "user": hostvars.get("ansible_ssh_user", hostvars.get("ansible_user")),
        "port": int(port) if port is not None else None,
        "connection": "local" if connection == "local" else "ssh",
        "vars": {
            k: v
            for k, v in hostvars.items()
            if not k.startswith(("ansible_", "nasplan_"))
            # a plain port=, user=, address= is the user's var, never the connection
            and (k not in CONNECTION_KEYS or k in CONNECTION_FIELDS)
        },
    }


def nasplan_host(inventory: Inventory, name: str) -> dict[str, Any]:
    host = inventory.hosts[name]
    return {
        "address": host.address,
        "user": host.user,
        "port": host.port,
        "connection": host.connection,
        "vars": as_json(dict(host.vars)),
    }


USER_CASES = [pytest.param(c, id=c.id) for c in CORPUS if c.reader is None]


@pytest.mark.parametrize("corpus_case", USER_CASES)
def test_the_inventory_a_plan_gets_is_what_ansible_gives(
    corpus_case: Case, listings: dict[str, dict[str, Any] | None]
) -> None:
    """The hosts nasplan can use as Ansible gives them; a host it cannot use (a network_cli
    switch, a password) left out with its reason (``user``), or the whole refused in one line
    where the inventory itself is unusable (no host, two local hosts)."""
    listing = listings[corpus_case.id]
    try:
        inventory = load_inventory(corpus_case.paths(), playbook_dir=corpus_case.playbook_dir())
    except InputError as refused:
        assert corpus_case.user is not None, refused
        assert_one_located_line(refused, corpus_case.user)
        return
    assert listing is not None
    left_out = set(inventory.unusable)
    if corpus_case.user is not None:
        lines = [line for lines in inventory.unusable.values() for line in lines]
        assert any(corpus_case.user in line for line in lines), lines
        assert all(located(line) for line in lines), lines
        assert len([w for w in inventory.warnings if "nasplan leaves host" in w]) == len(left_out)
    assert set(inventory.hosts) | left_out == ansible_hosts(listing)
    assert not set(inventory.hosts) & left_out
    for name in inventory.hosts:
        expected = expected_host(name, listing["_meta"]["hostvars"].get(name, {}))
        assert nasplan_host(inventory, name) == expected, name
    groups = {g: m - left_out for g, m in ansible_groups(listing).items()}
    assert {g: set(m) for g, m in inventory.groups.items() if m} == {
        g: m for g, m in groups.items() if m
    }


@pytest.mark.parametrize("corpus_case", USER_CASES)
def test_nasplan_inventory_list_is_ansible_inventory_list(
    corpus_case: Case, listings: dict[str, dict[str, Any] | None]
) -> None:
    """``nasplan inventory --list`` prints what ``ansible-inventory --list`` prints (a
    password's value hidden), whichever hosts nasplan can use."""
    listing = listings[corpus_case.id]
    try:
        read = read_inventory(corpus_case.paths(), playbook_dir=corpus_case.playbook_dir())
    except InputError:
        assert corpus_case.user is not None
        return
    assert listing is not None
    expected = {k: v for k, v in listing.items() if k != "_meta"}
    expected["_meta"] = {
        "hostvars": {h: hidden(v) for h, v in listing["_meta"]["hostvars"].items()}
    }
    assert list_view(read) == expected
