"""Fuzz: thousands of plans and inventories, generated from the JSON Schemas and then mutated.

Whatever the document, ``nasplan validate`` ends in ok or exit 2 with ``FILE...: message``
lines, never a traceback; a plan that validates also survives ``apply --check`` (hosts
answering with captured facts, or unreachable). Seeded, so a failure is reproducible: the
assertion message carries the document.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.errors import HostError, InputError
from nasplan.input.inventory import Host, load_inventory
from nasplan.input.loader import load_schema
from nasplan.input.plan import load_plan
from nasplan.progress import PlainProgress
from nasplan.remote.runner import Result, RunnerBase
from nasplan.run import check as check_module

FACTS = Path(__file__).parent.parent / "fixtures" / "facts" / "debian12-root.txt"
SEED = 20261201
# Values that have broken a parser somewhere: wrong types, shell and tool syntax, Jinja.
HOSTILE: list[Any] = [
    None, True, False, 0, -1, 1.0, 2.5, 2**70, 1e400, "", " ", "-x", "--", "a;b", "a:b",
    "eth0;touch /tmp/x", "$(id)", "`id`", "a\nb", "x" * 300, "../../etc", "/", "//", "1e400",
    "2.0", "nan", "{{ 1/0 }}", "{{ vars.nope }}", "{{ ''.__class__ }}", "{{ 'x' * 2 ** 33 }}",
    "{{ vars }}", "{{ hosts }}", "{% for %}", "{{", "}}", "link:", "link:p2p@", "nas.",
    ".lan", "nas.lan", "nas.nope", "198.19.80.2", "::1", "198.19.80.0/30", "300.1.1.1",
    "1G", "1GiB", "0", [], {}, [1, [2]], {"a": {"b": None}}, ["nas"], {"name": "eth0"},
]  # fmt: skip
# Strings that match the schemas' patterns, for generating valid documents.
PATTERN_SAMPLES = {
    "name": ["nas", "ws", "plan-1", "qnap.home"],
    # a test's repetitions: a number, or until the median is clear (min <= max, said at load)
    "repetitions": [
        1,
        3,
        {"min": 3, "max": 15, "until": {"ci_halfwidth": "2%"}},
        {"min": 2, "max": 6, "until": {"ci_halfwidth": 0.05}},
    ],
    "id": ["t1", "lan", "p2p-jumbo"],
    "address": ["nas", "ws", "198.19.80.2", "fe80::1"],
    "user": ["root", "admin", "me.you@home"],
    "interface_name": ["eth0", "eth1", "lan", "p2p", "Ethernet 2"],
    "ip_interface": ["198.19.80.2/24", "198.19.80.3", "198.19.80.5/30"],
    "ipv4_prefix": ["198.19.80.0/30", "198.19.81.0/24", "198.19.82.0/31"],
    "remote_path": ["/srv", "/volume1/data", "/share/Public Files"],
    "volume_path": ["/share/HDD", "/volume1", "/mnt/tank/media"],
    "export_path": ["/volume1/data", "/export"],
    "share_path": ["dir", "a/b", "nasplan"],
    "share": ["data", "home$", "public"],
    "client_file": ["/root/.ssh/id_ed25519", "~/.ssh/known_hosts"],
    "local_path": ["/dev/null", "keys/id", "~/.ssh/id_ed25519"],
    "rate": ["1G", "2.5G", "10G", 1000000000],
    "size": ["1MiB", "2MB", "64MiB", 1048576],
    "byte_rate": ["180MiB/s", "900MiB/s", "1.5GiB/s", "200MB/s"],
    "env": ["NAS_PW", "SMB_PASSWORD"],
    "window": ["4M", "128K"],
    "matrix": [{"run": [1, 2]}, {"run": ["a"]}],
}
# Plan keys whose schema is inline: which samples fit them.
KEY_SAMPLES = {
    "window": "window",
    "size": "size",
    "password_env": "env",
    "become_password_env": "env",
    "speed": "rate",
}


class FactsRunner(RunnerBase):
    """A host answering every command with captured facts of a real Debian 12 host."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.facts = FACTS.read_text()

    def run(self, argv: Any, **kwargs: Any) -> Result:
        return Result(" ".join(map(str, argv)), "", "", 0)

    def run_script(self, script: str, **kwargs: Any) -> Result:
        return Result(script, self.facts, "", 0)


def unreachable(host: Host) -> FactsRunner:
    raise HostError(f"{host.name}: no hosts in the unit suite")


class Generator:
    """Documents built from a JSON Schema: valid by construction where the schema says how."""

    def __init__(self, schema: dict[str, Any], rng: random.Random) -> None:
        self.schema = schema
        self.rng = rng

    def resolve(self, node: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in node:
            target: Any = self.schema
            for part in node["$ref"].removeprefix("#/").split("/"):
                target = target[part]
            name = node["$ref"].rsplit("/", 1)[-1]
            node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            if name in PATTERN_SAMPLES:
                node["x-sample"] = name
        return node

    def value(self, node: dict[str, Any], depth: int = 0) -> Any:
        node = self.resolve(node)
        rng = self.rng
        if "x-sample" in node:
            return rng.choice(PATTERN_SAMPLES[node["x-sample"]])
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return rng.choice(node["enum"])
        for key in ("oneOf", "anyOf"):
            if key in node and "properties" not in node:
                return self.value(rng.choice(node[key]), depth)
        kind = node.get("type", "object" if "properties" in node else "string")
        if isinstance(kind, list):
            kind = rng.choice(kind)
        if kind == "object":
            return self.mapping(node, depth)
        if kind == "array":
            count = rng.randint(node.get("minItems", 0), max(node.get("minItems", 0), 3))
            return [self.value(node.get("items", {}), depth + 1) for _ in range(count)]
        if kind == "integer":
            low = node.get("minimum", 0)
            return rng.randint(low, min(node.get("maximum", low + 100), low + 100))
        if kind == "number":
            return round(rng.uniform(node.get("minimum", 0), node.get("maximum", 10)), 2)
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        if "pattern" in node:
            return rng.choice(["nas", "eth0", "/srv", "198.19.80.2"])
        return rng.choice(["demo", "a test", "nas", "ws"])

    def mapping(self, node: dict[str, Any], depth: int) -> dict[str, Any]:
        rng = self.rng
        props: dict[str, Any] = node.get("properties", {})
        out: dict[str, Any] = {}
        for key, sub in props.items():
            if key in node.get("required", []) or (depth < 4 and rng.random() < 0.5):
                samples = PATTERN_SAMPLES.get(KEY_SAMPLES.get(key, ""))
                out[key] = rng.choice(samples) if samples else self.value(sub, depth + 1)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and depth < 4:
            names = PATTERN_SAMPLES["name"]
            for name in rng.sample(names, rng.randint(1, 2)):
                out[name] = self.value(extra, depth + 1)
        return out


def mutate(doc: Any, rng: random.Random) -> Any:
    """Replace, drop or add one node somewhere in ``doc``."""
    doc = copy.deepcopy(doc)
    parents: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key in node:
                parents.append((node, key))
                walk(node[key])
        elif isinstance(node, list):
            for index in range(len(node)):
                parents.append((node, index))
                walk(node[index])

    walk(doc)
    if not parents:
        return rng.choice(HOSTILE)
    parent, key = rng.choice(parents)
    action = rng.random()
    if action < 0.7:
        parent[key] = copy.deepcopy(rng.choice(HOSTILE))
    elif action < 0.85 and isinstance(parent, dict):
        del parent[key]
    elif isinstance(parent, dict):
        parent[rng.choice(["extra", "vars", "hosts", "tests", "interfaces"])] = rng.choice(HOSTILE)
    return doc


def mutate_text(text: str, rng: random.Random) -> str:
    """Cut, or splice YAML syntax into, the text of a document."""
    at = rng.randrange(len(text) + 1)
    if rng.random() < 0.3:
        return text[:at]
    junk = rng.choice(
        ["&a ", "*a", "*b", ": ", "- ", "[", "{", "}", "\t", "!!binary ", "? ", "<<: "]
    )
    return text[:at] + junk + text[at:]


INVENTORY_BASE = """\
hosts:
  nas:
    address: 198.19.80.2
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.19.80.2/24}
      p2p: {name: eth1, role: test, speed: 10G, address: 198.19.80.5/30}
  ws:
    address: 198.19.80.3
    interfaces:
      p2p: {name: eth1, role: test, speed: 10G, address: 198.19.80.6/30}
"""


def plan_documents(rng: random.Random, count: int) -> Iterator[tuple[Any, bool]]:
    """(plan data, whether it was mutated): kinds picked evenly, hosts from INVENTORY_BASE."""
    schema = load_schema("plan")
    gen = Generator(schema, rng)
    kinds = ["iperf3", "transfer", "latency", "disk", "ping-sweep"]
    for index in range(count):
        doc: dict[str, Any] = {"name": f"fuzz{index}", "inventory": "inventory.yaml", "tests": []}
        for _ in range(rng.randint(1, 3)):
            test = gen.value(schema["$defs"][rng.choice(kinds)])
            if "server" in test:  # one client (the schema allows clients instead)
                test.setdefault("client", "ws")
            for role in ("server", "client", "host"):
                if role in test:
                    test[role] = rng.choice(["nas", "ws"])
            if "server" in test and "client" in test:
                test["server"], test["client"] = rng.sample(["nas", "ws"], 2)
            test.pop("port", None)
            test.pop("id", None)
            test.pop("target", None)
            # the inventory below names no volume, and a test has one client or several
            test.pop("volume", None)
            test.pop("clients", None)
            if test["kind"] == "disk":
                test.setdefault("path", "/srv")
            if test["kind"] == "transfer":
                # every method's own keys, so whichever method was drawn has what it needs
                test.update(share="data", password_env="NAS_PW", path="dir")
                test.update(mounted_path="/mnt/nas", export="/volume1/data")
            if "server" in test and rng.random() < 0.6:
                server = test["server"]
                ends = ["198.19.80.2", f"{server}.p2p"] + (["nas.lan"] if server == "nas" else [])
                test["target"] = rng.choice([*ends, f"link:l1@{server}"])
            doc["tests"].append(test)
        if any(str(t.get("target", "")).startswith("link:") for t in doc["tests"]):
            doc["links"] = [
                {
                    "name": "l1",
                    "a": {"host": "nas", "interface": "p2p"},
                    "b": {"host": "ws", "interface": "p2p"},
                    "prefix": "198.19.80.4/30",
                    "mtu": rng.choice([1500, 9000]),
                }
            ]
        if rng.random() < 0.2:
            doc["interfaces"] = [{"host": "nas", "interface": "lan", "mtu": 9000}]
        mutated = rng.random() < 0.6
        yield (mutate(doc, rng) if mutated else doc), mutated


def _dump(doc: Any) -> str:
    """YAML text of ``doc`` (libyaml's emitter when there is one: the fuzz stays fast)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return str(yaml.dump(doc, Dumper=dumper, sort_keys=False))


def _is_message(text: str) -> bool:
    return all(re.match(r"^\S.*?: \S", line) for line in text.splitlines())


def test_generated_and_mutated_plans_validate_or_exit_2(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    (tmp_path / "inventory.yaml").write_text(INVENTORY_BASE)
    path = tmp_path / "plan.yaml"
    counts = {"ok": 0, "refused": 0}
    for doc, _ in plan_documents(rng, 1000):
        text = _dump(doc)
        if rng.random() < 0.15:
            text = mutate_text(text, rng)
        path.write_text(text)
        try:
            plan = load_plan(path)
        except InputError as exc:
            counts["refused"] += 1
            assert _is_message(str(exc)), f"{exc}\n--- plan:\n{text}"
            continue
        except Exception as exc:  # the point of the test: nothing else may escape
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- plan:\n{text}") from exc
        counts["ok"] += 1
        connector = FactsRunner if rng.random() < 0.5 else unreachable
        try:
            check_module.check(plan, PlainProgress(_Null()), connector)
        except Exception as exc:
            raise AssertionError(f"apply --check: {exc!r}\n--- plan:\n{text}") from exc
    # both sides are exercised: a fuzz that only ever fails validation proves little
    assert counts["ok"] > 250 and counts["refused"] > 250, counts


class _Null:
    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def inventory_documents(rng: random.Random, count: int) -> Iterator[Any]:
    """Native inventories from the schema, Ansible ones from a template; most mutated."""
    gen = Generator(load_schema("inventory"), rng)
    ansible = yaml.safe_load(
        """
all:
  vars: {ansible_user: admin}
  children:
    nas:
      hosts:
        nas: {ansible_host: 198.19.80.2, interfaces: {lan: {name: eth0}}}
    ws:
      hosts:
        ws: {ansible_host: 198.19.80.3, ansible_port: 22, nasplan_platform: debian}
"""
    )
    for _ in range(count):
        doc = gen.value(gen.schema) if rng.random() < 0.6 else copy.deepcopy(ansible)
        for _ in range(rng.randint(0, 2)):
            doc = mutate(doc, rng)
        yield doc


def test_generated_and_mutated_inventories_load_or_exit_2(tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    path = tmp_path / "inventory.yaml"
    counts = {"ok": 0, "refused": 0}
    for doc in inventory_documents(rng, 1000):
        text = _dump(doc)
        if rng.random() < 0.15:
            text = mutate_text(text, rng)
        path.write_text(text)
        try:
            load_inventory(path)
        except InputError as exc:
            counts["refused"] += 1
            assert _is_message(str(exc)), f"{exc}\n--- inventory:\n{text}"
            continue
        except Exception as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- inventory:\n{text}") from exc
        counts["ok"] += 1
    assert counts["ok"] > 150 and counts["refused"] > 150, counts


@pytest.mark.parametrize("seed", range(3))
def test_validate_command_exits_0_or_2_only(tmp_path: Path, seed: int) -> None:
    """The same through the real command line, on a smaller sample."""
    rng = random.Random(SEED + 100 + seed)
    (tmp_path / "inventory.yaml").write_text(INVENTORY_BASE)
    path = tmp_path / "plan.yaml"
    for doc, _ in plan_documents(rng, 60):
        path.write_text(_dump(doc))
        result = CliRunner().invoke(main, ["validate", str(path)])
        assert result.exit_code in (0, 2), f"{result.exception!r}\n{path.read_text()}"
        assert result.exception is None or isinstance(result.exception, SystemExit)


LAB_BASE = """\
name: hi-fuzz
lan: {prefix: 198.19.80.0/24, rate: 1G, mtu: 1500}
hosts:
  nas: {personality: qnap, personality_options: {entware: false}, services: [smb]}
  ws: {}
links:
  - name: p2p
    rate: 10G
    mtu: 9000
    a: {host: nas, interface: eth1, address: 198.19.81.1/30}
    b: {host: ws, interface: eth1, address: 198.19.81.2/30}
"""


def test_generated_and_mutated_lab_files_load_or_exit_2(tmp_path: Path) -> None:
    from nasplan.lab.model import load_lab

    rng = random.Random(SEED + 2)
    base = yaml.safe_load(LAB_BASE)
    path = tmp_path / "lab.yaml"
    counts = {"ok": 0, "refused": 0}
    for _ in range(400):
        doc = base
        for _ in range(rng.choice([0, 0, 1, 1, 2])):
            doc = mutate(doc, rng)
        text = _dump(doc)
        path.write_text(mutate_text(text, rng) if rng.random() < 0.15 else text)
        try:
            load_lab(path)
        except InputError as exc:
            counts["refused"] += 1
            assert _is_message(str(exc)), f"{exc}\n--- lab:\n{text}"
            continue
        except Exception as exc:
            raise AssertionError(f"{type(exc).__name__}: {exc}\n--- lab:\n{text}") from exc
        counts["ok"] += 1
    assert counts["ok"] > 50 and counts["refused"] > 50, counts
