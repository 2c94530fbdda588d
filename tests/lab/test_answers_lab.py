"""Answers a user can quote, for real (issue 35): the TS-253D-shaped table whose 10G row gets
jumbo frames through a matrix ``include:`` and still finds its baseline, read back cell by cell
against run.json; UDP asked for more than the link carries, judged and warned; an interleaved
run stopped by Ctrl-C that names its report and the exact ``--resume`` command, which then
finishes it; ``apply --check`` reading a missing directory, share and export on the hosts; and
``nasplan init``'s starter plan run on its own lab."""

from __future__ import annotations

import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import host_tmp_files

from nasplan.lab import LabState, netns, services
from nasplan.lab.model import Names
from nasplan.results import load_run
from nasplan.units import format_bits_per_second, format_bytes_per_second

ROOT = Path(__file__).resolve().parents[2]
# A QNAP-style NAS and a PC: the 1G LAN, a 2.5G cable and a 10G cable (Samba and NFS on the NAS).
LAB = {
    "name": "ans35",
    "lan": {"prefix": "198.19.100.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "debian", "services": ["smb", "nfs"]},
              "pc": {"personality": "debian"}},
    "links": [
        {"name": "p2p25", "rate": "2.5G", "mtu": 1500,
         "a": {"host": "nas", "interface": "eth1", "address": "198.19.101.1/30"},
         "b": {"host": "pc", "interface": "eth1", "address": "198.19.101.2/30"}},
        {"name": "p2p10", "rate": "10G", "mtu": 1500,
         "a": {"host": "nas", "interface": "eth2", "address": "198.19.101.5/30"},
         "b": {"host": "pc", "interface": "eth2", "address": "198.19.101.6/30"}},
    ],
}  # fmt: skip
SMB = {
    "kind": "transfer",
    "method": "smb",
    "server": "nas",
    "client": "pc",
    "share": "{{ hosts.nas.smb.share }}",
    "user": "{{ hosts.nas.smb.user }}",
    "password_env": "{{ hosts.nas.smb.password_env }}",
}
SHORT = "⚠ under 3 s"
UDP_MAXIMUM_1G = 972.3e6  # a 1G link's UDP maximum at MTU 1500 (full-size datagrams)


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state
    prefix = Names(LAB["name"]).link_prefix
    assert [n for n in netns.list_namespaces() if n.startswith(f"npl-{LAB['name']}-")] == []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
    assert prefix not in links.stdout


@pytest.fixture()
def env(lab: LabState) -> dict[str, str]:
    password = services.read_password(lab.host_dir("nas"))
    assert password
    return {services.SMB_PASSWORD_ENV: password}


def nasplan(
    *args: str, env: Mapping[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "nasplan", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONFAULTHANDLER": "1", **(env or {})},
    )  # fmt: skip


def finish(proc: subprocess.Popen[str], seen: str = "", timeout_s: float = 120) -> tuple[str, str]:
    """(stdout, stderr) once it ended; one that hangs dumps its threads and fails the test."""
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate(timeout=10)
        raise AssertionError(f"nasplan hung:\n{seen}{err}") from None
    return out, seen + err


def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def table_of(report: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """The heading, the header and the rows (first cell -> the others) of the report's table."""
    section = report[report.index("\n## Table") + 1 :].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith("|"))
    end = next(i for i, line in enumerate(section) if i > start and not line.startswith("|"))
    split = [[c.strip() for c in line.strip("|").split("|")] for line in section[start:end]]
    return section[0], split[0], {row[0]: row[1:] for row in split[2:]}


def rep_rates(record: Mapping[str, Any], direction: str) -> list[float]:
    """What each ok repetition of the direction moved, from run.json's repetitions: iperf3's
    received bit/s, a copy's bytes over its seconds."""
    reps = [r for r in record["repetitions"] if r["status"] == "ok"]
    if record["kind"] == "iperf3":
        return [r["bits_per_second"] for r in reps]
    return [r["bytes"] / r["duration_s"] for r in reps if r["direction"] == direction]


def short(record: Mapping[str, Any], direction: str) -> bool:
    durations = [
        r["duration_s"]
        for r in record["repetitions"]
        if r["status"] == "ok" and r.get("direction") in (None, direction)
    ]
    return min(durations) < 2.95


def rate_text(record: Mapping[str, Any], value: float) -> str:
    if record["kind"] == "iperf3":
        return format_bits_per_second(value)
    return format_bytes_per_second(value)


def check_cell(
    text: str, record: Mapping[str, Any], direction: str, base: Mapping[str, Any] | None
) -> None:
    """A cell against the repetitions of its record and of its baseline's, all from run.json:
    median, the ratio (or the word baseline), the short marks, min–max, n, what limited it."""
    values = rep_rates(record, direction)
    median = statistics.median(values)
    head = rate_text(record, median)
    if base is None:
        head += " baseline"
    else:
        ratio = median / statistics.median(rep_rates(base, direction))
        head += f" ×{ratio:.2f}"
    assert text.startswith(head), (text, head)
    rest = text[len(head) :]
    marks = re.match(r"^(\*| n\.s\.| ≈| n too small)?( ⚠ (?:baseline )?under 3 s)? \(", rest)
    assert marks, text
    if base is None:
        assert marks[1] is None, text
    if short(record, direction):
        assert marks[2] == f" {SHORT}", text
    elif base is not None and short(base, direction):
        assert marks[2] == " ⚠ baseline under 3 s", text
    low, high = (rate_text(record, v).split(" ")[0] for v in (min(values), max(values)))
    tail = f"({low}–{high}, n={len(values)})"
    if record["kind"] == "transfer":
        tail += f" {record['bottleneck'][direction]['verdict']}"
    assert text.endswith(tail), (text, tail)


# --- 1. the TS-253D table: jumbo frames on the 10G cable only, through an include ----------------


def test_a_row_with_jumbo_frames_by_include_finds_its_baseline_cell_by_cell(
    lab: LabState, env: dict[str, str], tmp_path: Path
) -> None:
    mtu = "{{ matrix.mtu | default(1500) }}"
    plan = {
        "name": "ans-ts253d",
        "inventory": str(lab.inventory_path),
        "matrix": {"link": ["lan", "p2p25", "p2p10"], "include": [{"link": "p2p10", "mtu": 9000}]},
        "network": {"confirm_timeout_s": 30},
        "interfaces": [
            {"host": "nas", "interface": "p2p10", "mtu": mtu},
            {"host": "pc", "interface": "p2p10", "mtu": mtu},
        ],
        "table": {"rows": ["link"], "columns": ["test", "direction"],
                  "baseline": {"link": "p2p25"}},
        "tests": [
            {"id": "net", "kind": "iperf3", "server": "nas", "client": "pc",
             "target": "nas.{{ matrix.link }}", "duration_s": 1, "repetitions": 2},
            {"id": "smb", **SMB, "target": "nas.{{ matrix.link }}", "size": "8MiB",
             "direction": "both", "repetitions": 2},
        ],
    }  # fmt: skip
    plan_file = write_plan(tmp_path / "plan.yaml", plan)
    proc = nasplan("apply", str(plan_file), "--out", str(tmp_path / "run"), env=env)
    _, err = finish(proc)
    assert proc.returncode == 0, err
    run = load_run(tmp_path / "run")
    records = {(t["base_id"], t["cell"]["link"]): t for t in run["tests"]}
    assert all(t["status"] == "ok" for t in records.values())
    # jumbo frames on the 10G cable's cells only, as the include asked
    for (_, link), record in records.items():
        assert record["path"]["mtu_bytes"] == (9000 if link == "p2p10" else 1500), record["id"]
        assert ("mtu" in record["cell"]) == (link == "p2p10")

    heading, header, rows = table_of((tmp_path / "run" / "report.md").read_text())
    # one table (no mtu=9000 table of its own); mtu beside the rows
    assert heading == "## Table: link × test, direction"
    assert header == ["link", "mtu", "net · forward", "smb · write", "smb · read"]
    assert {link: cells[0] for link, cells in rows.items()} == {
        "lan": "–", "p2p25": "–", "p2p10": "9000"
    }  # fmt: skip
    for link, cells in rows.items():
        for column, text in zip(header[2:], cells[1:], strict=True):
            test, direction = column.split(" · ")
            base = None if link == "p2p25" else records[(test, "p2p25")]
            check_cell(text, records[(test, link)], direction, base)
    report = (tmp_path / "run" / "report.md").read_text()
    assert (
        "`mtu` goes with link (one value per row, as the plan set it): shown beside the rows "
        "rather than as tables of their own, and each cell is compared with the link=p2p25 "
        "cell of its column whatever its `mtu`." in report
    )
    assert f"`{SHORT}`: a repetition of the cell took under 3 s" in report


# --- 2. UDP asked for more than the link carries ---------------------------------------------


def test_udp_over_the_link_s_capacity_is_judged_against_the_rate_asked(
    lab: LabState, tmp_path: Path
) -> None:
    plan = {
        "name": "ans-udp",
        "inventory": str(lab.inventory_path),
        "tests": [{"id": "udp", "kind": "iperf3", "server": "nas", "client": "pc",
                   "target": "nas.lan", "protocol": "udp", "bitrate": "2G",
                   "duration_s": 1, "repetitions": 2}],
    }  # fmt: skip
    plan_file = write_plan(tmp_path / "plan.yaml", plan)
    proc = nasplan("apply", str(plan_file), "--out", str(tmp_path / "run"))
    _, err = finish(proc)
    assert proc.returncode == 0, err  # a warning, not a failure
    run = load_run(tmp_path / "run")
    (test,) = run["tests"]
    reps = [r for r in test["repetitions"] if r["status"] == "ok"]
    assert test["status"] == "ok" and len(reps) == 2
    lost, packets = sum(r["lost_packets"] for r in reps), sum(r["packets"] for r in reps)
    loss = lost / packets * 100
    assert loss > 1.0  # 2 Gbit/s into a 1 Gbit/s link
    warnings = [w for w in run["warnings"] if w.startswith("udp: ")]
    assert warnings[0].startswith(
        "udp: UDP at 2.00 Gbit/s asks more than the path's UDP maximum (972.3 Mbit/s)"
    )
    sent = statistics.median(r["sent_bits_per_second"] for r in reps)
    if sent >= 0.9 * UDP_MAXIMUM_1G:  # the sender filled the path: the loss is the path's
        assert warnings[1] == (
            f"udp: UDP loss {loss:.1f} % ({lost} of {packets} datagrams) at 2.00 Gbit/s, over "
            "the 1 % a stream of voice or video tolerates: more than the path carries"
        )
        # the sender's own 1G link held it back: the first warning says why, not a third one
        assert len(warnings) == 2
    else:  # a machine too busy to send even that: its host is named, not the path
        assert "so its host (CPU) limited it, not the path" in warnings[1], warnings[1]
        assert len(warnings) == 3
    report = (tmp_path / "run" / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| udp |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    median = statistics.median(r["bits_per_second"] for r in reps)
    assert cells[1] == "iperf3 UDP, 1 stream at 2.00 Gbit/s"
    assert cells[6] == "2.00 Gbit/s rate asked (1 Gbit/s, MTU 1500)"
    assert cells[7] == f"{median / 2e9 * 100:.1f} %"  # of what it asked, not of the link
    assert f"⚠ asked over the UDP maximum ⚠ loss {loss:.1f} %" in cells[9]
    assert ("⚠ sent under the rate asked" in cells[9]) == (sent < 0.9 * UDP_MAXIMUM_1G)
    assert "UDP maximum 972.3 Mbit/s." in report
    assert "grey line: rate asked" in report and "TCP maximum" not in report.split("## How")[0]
    assert "## Warnings\n\n- udp: UDP at 2.00 Gbit/s" in report


def test_udp_loss_from_a_sender_that_could_not_send_is_not_put_on_the_path(
    lab: LabState, tmp_path: Path
) -> None:
    # 40 Gbit/s asked over the 10G cable: no lab sender sends 90 % of its UDP maximum
    plan = {
        "name": "ans-udp-sender",
        "inventory": str(lab.inventory_path),
        "tests": [{"id": "udp", "kind": "iperf3", "server": "nas", "client": "pc",
                   "target": "nas.p2p10", "protocol": "udp", "bitrate": "40G",
                   "duration_s": 1, "repetitions": 1}],
    }  # fmt: skip
    plan_file = write_plan(tmp_path / "plan.yaml", plan)
    proc = nasplan("apply", str(plan_file), "--out", str(tmp_path / "run"))
    _, err = finish(proc)
    assert proc.returncode == 0, err
    run = load_run(tmp_path / "run")
    (test,) = run["tests"]
    (rep,) = [r for r in test["repetitions"] if r["status"] == "ok"]
    assert rep["sent_bits_per_second"] < 0.9 * 10 * UDP_MAXIMUM_1G
    warnings = [w for w in run["warnings"] if w.startswith("udp: ")]
    sent = format_bits_per_second(rep["sent_bits_per_second"])
    assert f"udp: the UDP sender sent {sent} (median)" in "\n".join(warnings), warnings
    assert not any("more than the path carries" in w for w in warnings), warnings
    loss = [w for w in warnings if "UDP loss" in w]
    if loss:  # whatever was lost: the sender's host is named
        assert f"the sender reached only {sent}, so its host (CPU) limited it" in loss[0]
    report = (tmp_path / "run" / "report.md").read_text()
    row = next(line for line in report.splitlines() if line.startswith("| udp |"))
    assert "⚠ sent under the rate asked" in row


# --- 3. an interleaved run stopped by Ctrl-C -------------------------------------------------


def test_an_interrupted_interleaved_run_names_its_report_and_resume_command(
    lab: LabState, tmp_path: Path
) -> None:
    tcp = {"kind": "iperf3", "server": "nas", "client": "pc", "target": "nas.lan",
           "duration_s": "{{ vars.duration_s }}"}  # fmt: skip
    plan = {
        "name": "ans-stop",
        "inventory": str(lab.inventory_path),
        "vars": {"duration_s": 2},
        "tests": [
            {"id": "a", **tcp, "repetitions": 1},  # done in the first round
            *({"id": name, **tcp, "repetitions": 2} for name in ("b", "c", "d", "e")),
        ],
    }
    plan_file = write_plan(tmp_path / "plan.yaml", plan)
    run_dir = tmp_path / "run"
    proc = nasplan("apply", str(plan_file), "--out", str(run_dir), "-e", "duration_s=1")
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:  # c's first repetition has begun: Ctrl-C
        seen += line
        if line.startswith("test c: repetition 1/2"):
            proc.send_signal(signal.SIGINT)
            break
    out, err = finish(proc, seen)
    assert proc.returncode == 130, err
    stopped = load_run(run_dir)
    statuses = {t["id"]: (t["status"], len(t["repetitions"])) for t in stopped["tests"]}
    # a ended; b waited for its second round; c was in flight: interrupted, not failed
    assert statuses == {"a": ("ok", 1), "b": ("interrupted", 1), "c": ("interrupted", 0)}
    assert stopped["tests"][1]["error"] == (
        "interrupted: the run was stopped after 1 of 2 repetitions"
    )
    counted = "5 tests (1 ok, 2 interrupted, 2 not run)"
    assert out.splitlines()[-1] == f"report: {run_dir / 'report.md'} ({counted})"
    report = (run_dir / "report.md").read_text()
    assert f": {counted}." in report.splitlines()[2]
    command = f"nasplan apply --resume {run_dir} -e duration_s=1"
    said = f"to finish this run, keeping what it measured: {command}"
    assert said in err.splitlines()
    assert err.rstrip().endswith("nasplan: interrupted")

    # the command as printed finishes the run
    argv = shlex.split(command)
    assert argv[:2] == ["nasplan", "apply"]
    resumed = nasplan(*argv[1:])
    _, err = finish(resumed)
    assert resumed.returncode == 0, err
    run = load_run(run_dir)
    assert run["status"] == "ok" and len(run["resumed_at"]) == 1
    assert [(t["id"], t["status"], len(t["repetitions"])) for t in run["tests"]] == [
        ("a", "ok", 1), ("b", "ok", 2), ("c", "ok", 2), ("d", "ok", 2), ("e", "ok", 2)
    ]  # fmt: skip
    assert ": 5 tests (5 ok)." in (run_dir / "report.md").read_text()


# --- 4. --check reads what each test needs ---------------------------------------------------


def test_check_fails_on_a_missing_path_share_and_export_and_writes_nothing(
    lab: LabState, env: dict[str, str], tmp_path: Path
) -> None:
    nfs = "{{ hosts.nas.nfs.%s }}"
    plan = {
        "name": "ans-check",
        "inventory": str(lab.inventory_path),
        "tests": [
            {"id": "disk-ok", "kind": "disk", "host": "nas", "path": "/tmp"},
            {"id": "disk-gone", "kind": "disk", "host": "nas", "path": "/tmp/no-such-volume"},
            {"id": "smb-ok", **SMB},
            {"id": "smb-gone", **SMB, "share": "nosuch"},
            {"id": "smb-dir-gone", **SMB, "path": "no-such-dir"},
            {"id": "nfs-ok", **SMB, "method": "nfs", "export": nfs % "export",
             "server_path": nfs % "server_path"},
            {"id": "nfs-gone", **SMB, "method": "nfs", "export": "/nosuch"},
            {"id": "rsync-gone", **SMB, "method": "rsync", "path": "/tmp/no-such-dir"},
        ],
    }  # fmt: skip
    for test in plan["tests"][5:]:
        for key in ("share", "user", "password_env"):
            test.pop(key)
    plan_file = write_plan(tmp_path / "plan.yaml", plan)
    share = services.smb_files(lab.host_dir("nas")).share_path
    before = (host_tmp_files(lab, "*"), sorted(share.rglob("*")))
    proc = nasplan("apply", str(plan_file), "--check", env=env)
    out, err = finish(proc)
    assert proc.returncode == 1, out + err  # a test would fail: not input, not unreachable
    said = err.splitlines()
    address = "198.19.100.10"
    assert "nas: the disk test's path /tmp (a writable directory): there (for disk-ok)" in said
    assert "problem: the disk test's path on nas: /tmp/no-such-volume does not exist" in said
    assert f"pc: SMB share //{address}/data: there (for smb-ok)" in said
    gone = next(line for line in said if line.startswith(f"problem: SMB share //{address}/nosuch"))
    assert "NT_STATUS_BAD_NETWORK_NAME" in gone, gone
    missing_dir = next(
        line for line in said if line.startswith(f"problem: SMB share //{address}/data directory")
    )
    assert "no-such-dir" in missing_dir and "NT_STATUS_OBJECT_NAME_NOT_FOUND" in missing_dir
    assert f"pc: NFS export {address}:/data: there (for nfs-ok)" in said
    assert any(line.startswith(f"problem: NFS export {address}:/nosuch from pc: ") for line in said)
    assert "problem: the rsync directory on nas: /tmp/no-such-dir does not exist" in said
    # read, never written: nothing new in the hosts' /tmp, nothing in the share
    assert (host_tmp_files(lab, "*"), sorted(share.rglob("*"))) == before
    password = env[services.SMB_PASSWORD_ENV]
    assert password not in out + err


# --- 5. nasplan init's starter, on its own lab ------------------------------------------------


def test_the_starter_plan_runs_on_the_starter_lab(tmp_path: Path) -> None:
    init = nasplan("init", "first", cwd=tmp_path)
    out, err = finish(init)
    assert init.returncode == 0, err
    steps = [line.strip() for line in out.splitlines() if line.startswith("  ")]
    up, export, apply, down = (
        next(s for s in steps if s.startswith(p))
        for p in ("sudo nasplan lab up", "export NAS_SMB_PASSWORD=$(",
                  "nasplan apply first/plan.yaml -i", "sudo nasplan lab down")
    )  # fmt: skip
    lab_up = nasplan(*shlex.split(up)[2:], cwd=tmp_path)
    try:
        _, err = finish(lab_up)
        assert lab_up.returncode == 0, err
        password_file = tmp_path / "first/.lab/starter-lab/hosts/nas/smb/password"
        assert f"$(sudo cat {password_file.relative_to(tmp_path)})" in export
        env = {"NAS_SMB_PASSWORD": password_file.read_text().strip()}
        run = nasplan(*shlex.split(apply)[1:], "--out", "run", env=env, cwd=tmp_path)
        _, err = finish(run, timeout_s=300)
        assert run.returncode == 0, err
        done = load_run(tmp_path / "run")
        assert [(t["id"], t["status"]) for t in done["tests"]] == [
            ("net[link=lan]", "ok"), ("net-back[link=lan]", "ok"), ("smb[link=lan]", "ok"),
            ("disk", "ok"),
        ]  # fmt: skip
        report = (tmp_path / "run" / "report.md").read_text()
        assert "## Table: link × test, direction" in report
        assert "Not in this table (not matrix cells): `disk`; their results are in" in report
    finally:
        lab_down = nasplan(*shlex.split(down)[2:], cwd=tmp_path)
        finish(lab_down)
    assert lab_down.returncode == 0
    assert [n for n in netns.list_namespaces() if n.startswith("npl-starter-lab-")] == []
