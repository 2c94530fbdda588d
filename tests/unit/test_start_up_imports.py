"""What ``nasplan apply`` imports: the kinds its plan uses and no other, the network phase only
for a plan that changes the network. Every module costs start-up time on every run, so this is
checked in a fresh interpreter running the real command (hosts that refuse the connection)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.input.loader import load_schema
from nasplan.measure import kinds

KIND_MODULES = {name: f"nasplan.measure.kinds.{module}" for name, module in kinds.MODULES.items()}
# The network phase's modules (and its NIC state models) an apply without network changes has
# no use for.
NETWORK_PHASE = (
    "nasplan.run.network_phase",
    "nasplan.network.state",
    "nasplan.network.backends",
    "nasplan.network.checks",
    "nasplan.network.restore",
    "nasplan.network.scripts",
)

# Runs the CLI as the console script does, then prints the exit code, the modules loaded and
# those loaded when the first connection to a host began (its socket's connect).
RUN_CLI = """
import json, socket, sys
first = []
connect = socket.socket.connect
def first_connect(self, *args, **kwargs):
    if not first:
        first.append(sorted(sys.modules))
    return connect(self, *args, **kwargs)
socket.socket.connect = first_connect
from nasplan.cli import main
try:
    main(sys.argv[1:], prog_name="nasplan")
except SystemExit as exc:
    code = exc.code
print(json.dumps({"exit": code, "modules": sorted(sys.modules), "first": (first or [None])[0]}))
"""
# What a run needs only once its hosts answered (the report, its charts, a comparison) and the
# libraries they bring: none of it delays the first connection.
AFTER_THE_HOSTS = ("nasplan.report", "nasplan.compare", "nasplan.diagnose", "jinja2", "matplotlib")


def refused_port() -> int:
    """A local TCP port nothing listens on (bound, then closed): connecting is refused at once."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def write_plan(tmp_path: Path, tests: list[dict[str, Any]], **extra: Any) -> Path:
    """A plan over two local hosts that refuse SSH (``nas``, ``ws``), with ``tests``."""
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    known_hosts.chmod(0o600)
    port = refused_port()
    host = {"address": "127.0.0.1", "port": port, "known_hosts": str(known_hosts)}
    inventory = {
        "hosts": {
            "nas": {**host, "interfaces": {"p2p": {"name": "eth1", "role": "test"}}},
            "ws": {**host, "interfaces": {"p2p": {"name": "eth1", "role": "test"}}},
        }
    }
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    plan = {"name": "imports", "inventory": "inventory.yaml", **extra, "tests": tests}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def run_cli(*args: str, cwd: Path) -> tuple[int, set[str]]:
    """``nasplan ARGS`` in a fresh interpreter: (exit code, the modules it had loaded)."""
    code, modules, _ = run_cli_connecting(*args, cwd=cwd)
    return code, modules


def run_cli_connecting(*args: str, cwd: Path) -> tuple[int, set[str], set[str] | None]:
    """``nasplan ARGS`` in a fresh interpreter: (exit code, the modules it had loaded, those
    it had loaded as its first connection began; None: it connected nowhere)."""
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    first = report["first"]
    return report["exit"], set(report["modules"]), None if first is None else set(first)


def after_the_hosts(modules: set[str]) -> list[str]:
    """The modules of ``modules`` that belong to AFTER_THE_HOSTS."""
    return sorted(
        m for m in modules if any(m == p or m.startswith(f"{p}.") for p in AFTER_THE_HOSTS)
    )


IPERF3 = {"id": "tcp", "kind": "iperf3", "server": "nas", "client": "ws", "duration_s": 1}
LATENCY = {"id": "rtt", "kind": "latency", "server": "nas", "client": "ws"}


@pytest.mark.parametrize("command", [["apply", "--check"], ["apply"]])
def test_an_iperf3_plan_imports_the_iperf3_kind_alone_and_no_network_phase(
    tmp_path: Path, command: list[str]
) -> None:
    plan = write_plan(tmp_path, [IPERF3])
    code, modules = run_cli(*command, str(plan), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert code == 3  # both hosts unreachable: the run went through to the end
    assert KIND_MODULES["iperf3"] in modules
    assert sorted(m for m in KIND_MODULES.values() if m in modules) == [KIND_MODULES["iperf3"]]
    assert not [m for m in NETWORK_PHASE if m in modules]
    assert "nasplan.lab" not in modules


@pytest.mark.parametrize("command", [["apply", "--check"], ["apply"]])
def test_nothing_of_the_report_charts_or_compare_is_imported_before_the_first_connection(
    tmp_path: Path, command: list[str]
) -> None:
    plan = write_plan(tmp_path, [IPERF3, LATENCY])
    code, modules, first = run_cli_connecting(
        *command, str(plan), "--out", str(tmp_path / "run"), cwd=tmp_path
    )
    assert code == 3 and first is not None  # it connected (and was refused)
    assert after_the_hosts(first) == []
    assert "paramiko" in first  # the harness saw the real connection, not an earlier socket
    if command == ["apply"]:  # the report is written after: imported then; --check's not at all
        assert "nasplan.report.render" in modules and "jinja2" in modules
        assert "nasplan.run.check" not in modules


def test_the_report_of_apply_is_written_without_the_unused_kinds(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, [IPERF3])
    code, modules = run_cli("apply", str(plan), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert code == 3
    assert "nasplan.report.render" in modules
    record = json.loads((tmp_path / "run" / "run.json").read_text())["tests"][0]
    assert (record["id"], record["kind"]) == ("tcp", "iperf3")
    assert "tcp" in (tmp_path / "run" / "report.md").read_text()


def test_each_kind_a_plan_uses_is_imported(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, [IPERF3, LATENCY])
    code, modules = run_cli("apply", "--check", str(plan), cwd=tmp_path)
    assert code == 3
    loaded = sorted(m for m in KIND_MODULES.values() if m in modules)
    assert loaded == sorted([KIND_MODULES["iperf3"], KIND_MODULES["latency"]])


def test_a_plan_that_changes_the_network_imports_the_network_phase(tmp_path: Path) -> None:
    plan = write_plan(
        tmp_path, [IPERF3], interfaces=[{"host": "nas", "interface": "p2p", "mtu": 9000}]
    )
    code, modules = run_cli("apply", str(plan), "--out", str(tmp_path / "run"), cwd=tmp_path)
    assert code == 3
    assert "nasplan.run.network_phase" in modules
    network = json.loads((tmp_path / "run" / "run.json").read_text())["network"]
    assert network["declared"]["interfaces"] and network["status"] == "failed"


def test_validate_imports_no_kind_no_network_phase_and_not_the_lab(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, [IPERF3, LATENCY])
    code, modules = run_cli("validate", str(plan), cwd=tmp_path)
    assert code == 0
    assert not [m for m in (*KIND_MODULES.values(), *NETWORK_PHASE) if m in modules]
    assert not [m for m in modules if m == "nasplan.lab" or m.startswith("nasplan.lab.")]


def test_a_plan_run_again_is_not_validated_again(tmp_path: Path) -> None:
    # nasplan.input.schema_memo: a before/after check runs the same plan and inventory again and
    # again; jsonschema (30-70 ms to import) is only needed the first time
    plan = write_plan(tmp_path, [IPERF3])
    out = str(tmp_path / "run")
    first_code, first = run_cli("apply", str(plan), "--out", out + "1", cwd=tmp_path)
    again_code, again = run_cli("apply", str(plan), "--out", out + "2", cwd=tmp_path)
    assert first_code == again_code == 3
    assert "jsonschema" in first and "jsonschema" not in again
    plan.write_text(plan.read_text().replace("duration_s: 1", "duration_s: x"))
    code, modules = run_cli("validate", str(plan), cwd=tmp_path)
    assert code == 2 and "jsonschema" in modules


def test_the_registry_names_every_kind_of_the_schema_and_each_module_holds_its_kind() -> None:
    schema = load_schema("plan")
    in_schema = schema["$defs"]["test"]["properties"]["kind"]["enum"]
    assert list(kinds.MODULES) == in_schema
    assert {name: kinds.kind(name).name for name in kinds.MODULES} == {n: n for n in in_schema}
