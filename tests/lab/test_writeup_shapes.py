"""The write-ups' experiments, each from one plan, in the lab (issue 24): the TS-253D's three
links with jumbo frames on the 10G cable only, the FreeNAS box's SMB against iSCSI, and a matrix
run stopped by Ctrl-C and resumed. Each report's table is read back cell by cell against the
numbers computed here from run.json's repetitions."""

from __future__ import annotations

import hashlib
import re
import signal
import statistics
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml
from lab_helpers import finish, host_tmp_files, nasplan_process, nic_state

from nasplan.lab import LabState, iscsi, netns, services
from nasplan.lab.model import Names
from nasplan.results import load_run

MIB = 2**20
SIZES = ["8MiB", "32MiB"]
# The TS-253D's network: the PC and a QNAP over the 1G LAN, the NAS's 2.5G port and a 10G card.
TS_LAB = {
    "name": "wsh-ts253d",
    "lan": {"prefix": "198.19.152.0/24", "rate": "1G"},
    "hosts": {"nas": {"personality": "qnap", "services": ["smb"]}, "pc": {"personality": "debian"}},
    "links": [
        {"name": "p2p25", "rate": "2.5G", "mtu": 1500,
         "a": {"host": "nas", "interface": "eth1", "address": "198.19.153.1/30"},
         "b": {"host": "pc", "interface": "eth1", "address": "198.19.153.2/30"}},
        {"name": "p2p10", "rate": "10G", "mtu": 1500,
         "a": {"host": "nas", "interface": "eth2", "address": "198.19.153.5/30"},
         "b": {"host": "pc", "interface": "eth2", "address": "198.19.153.6/30"}},
    ],
}  # fmt: skip
# The FreeNAS box: one NAS serving the same disks as an SMB share and an iSCSI LUN.
FN_LAB = {
    "name": "wsh-freenas",
    "lan": {"prefix": "198.19.154.0/24", "rate": "1G"},
    "hosts": {
        "nas": {"personality": "truenas", "services": ["smb", "iscsi"],
                "iscsi": {"lun_size": "64MiB", "chap": True}},
        "ws": {"personality": "debian"},
    },
}  # fmt: skip
SMB = {
    "kind": "transfer",
    "method": "smb",
    "server": "nas",
    "direction": "both",
    "share": "{{ hosts.nas.smb.share }}",
    "user": "{{ hosts.nas.smb.user }}",
    "password_env": "{{ hosts.nas.smb.password_env }}",
}
# A cell: ``262.3 MiB/s ×1.08* ⚠ under 3 s (250.1–274.5, n=2) cpu-bound``
CELL = re.compile(
    r"(?P<median>[0-9.]+) MiB/s (?:baseline|×(?P<ratio>[0-9.]+)(?P<mark>\*| n\.s\.| ≈)?) "
    r"(?P<short>⚠ (?:baseline )?under 3 s )?"
    r"\((?P<low>[0-9.]+)–(?P<high>[0-9.]+), n=(?P<n>[0-9]+)\) (?P<verdict>[a-z-]+)"
)


def nasplan(*args: str, **env: str) -> subprocess.Popen[str]:
    return nasplan_process(*args, env=env)


def run_plan(plan_file: Path, out: Path, **env: str) -> dict[str, Any]:
    proc = nasplan("apply", str(plan_file), "--out", str(out), **env)
    err = finish(proc)
    assert proc.returncode == 0, err
    return load_run(out)


def nothing_left(state: LabState) -> None:
    """No file of nasplan's in a lab host's /tmp (no initiator, no revert, no lock)."""
    assert all(state.host_path(name, "/tmp").is_dir() for name in state.hosts)
    assert host_tmp_files(state, "nasplan*") == set()


@pytest.fixture(scope="module")
def lab_up(running_lab: Any) -> Iterator[Callable[[dict[str, Any]], LabState]]:
    """``lab_up(spec)``: a lab for this module's tests, brought down at the module's end; then
    nothing of it is left on the machine (no namespace, no root-side interface)."""
    with ExitStack() as stack:
        yield lambda spec: stack.enter_context(running_lab(spec))
    for spec in (TS_LAB, FN_LAB):
        prefix = Names(spec["name"]).link_prefix
        assert [n for n in netns.list_namespaces() if n.startswith(f"npl-{spec['name']}-")] == []
        links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, check=True)
        assert prefix not in links.stdout


@pytest.fixture(scope="module")
def ts_lab(lab_up: Any) -> LabState:
    return lab_up(TS_LAB)


@pytest.fixture(scope="module")
def fn_lab(lab_up: Any) -> LabState:
    return lab_up(FN_LAB)


def write_plan(path: Path, plan: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


# --- the report's table, read back ------------------------------------------------------------


def table_of(report: str) -> tuple[str, list[str], dict[str, list[str]]]:
    """The heading, the header and the rows (first cell -> the others) of the report's first
    table under ``## Table``."""
    section = report[report.index("\n## Table") + 1 :].splitlines()
    start = next(i for i, line in enumerate(section) if line.startswith("|"))
    end = next(i for i, line in enumerate(section) if i > start and not line.startswith("|"))
    split = [[c.strip() for c in line.strip("|").split("|")] for line in section[start:end]]
    assert set(split[1]) == {"---"}
    return section[0], split[0], {row[0]: row[1:] for row in split[2:]}


def rates(record: Mapping[str, Any], direction: str) -> list[float]:
    """The record's successful repetitions' rates in one direction, from the repetitions."""
    reps = [r for r in record["repetitions"] if r["direction"] == direction]
    assert reps and all(r["status"] == "ok" for r in reps), (record["id"], reps)
    return [r["bytes"] / r["duration_s"] for r in reps]


def both_ways_twice(record: Mapping[str, Any]) -> bool:
    reps = record["repetitions"]
    return sorted((r["direction"], r["index"], r["status"]) for r in reps) == [
        (d, i, "ok") for d in ("read", "write") for i in (1, 2)
    ]


def cell_bytes(record: Mapping[str, Any]) -> set[int]:
    return {r["bytes"] for r in record["repetitions"]}


def mib(value: float) -> str:
    return f"{value / MIB:.1f}"


def check_cell(
    text: str, record: Mapping[str, Any], direction: str, base: Mapping[str, Any] | None
) -> None:
    """A cell's median, min–max, n, ratio and verdict against the record's repetitions."""
    found = CELL.fullmatch(text)
    assert found, text
    values = rates(record, direction)
    median = statistics.median(values)
    assert found["median"] == mib(median), (text, values)
    assert (found["low"], found["high"]) == (mib(min(values)), mib(max(values))), (text, values)
    assert int(found["n"]) == len(values) == record["params"]["repetitions"]
    assert found["verdict"] == record["bottleneck"][direction]["verdict"]
    # a repetition under 3 s is marked in the cell; a ratio on a short baseline says so
    durations = [r["duration_s"] for r in record["repetitions"] if r["direction"] == direction]
    base_durations = [
        r["duration_s"] for r in (base or {}).get("repetitions", []) if r["direction"] == direction
    ]
    if min(durations) < 2.95:
        assert found["short"] == "⚠ under 3 s ", text
    elif base is not None and base_durations and min(base_durations) < 2.95:
        assert found["short"] == "⚠ baseline under 3 s ", text
    else:
        assert found["short"] is None, text
    if base is None:
        assert " baseline " in text and found["ratio"] is None, text
        return
    base_median = statistics.median(rates(base, direction))
    assert found["ratio"] == f"{median / base_median:.2f}", (text, median, base_median)
    if abs(median / base_median - 1) < 0.03:  # compare's rule: within noise, before any test
        assert found["mark"] == " ≈", text
    else:
        assert found["mark"] in ("*", " n.s."), text


def check_table(
    report: str,
    heading: str,
    header: Sequence[str],
    cells: Mapping[tuple[str, str], tuple[Mapping[str, Any], str, Mapping[str, Any] | None]],
) -> None:
    """The report's table has ``header`` and, at (row, column), the cell of (record,
    direction, baseline record) for every cell; nothing else."""
    found_heading, found_header, rows = table_of(report)
    assert found_heading == heading
    assert found_header == list(header)
    assert {(row, column) for row in rows for column in header[1:]} == set(cells)
    for row, texts in rows.items():
        for column, text in zip(header[1:], texts, strict=True):
            record, direction, base = cells[(row, column)]
            check_cell(text, record, direction, base)


# --- 1. the TS-253D write-up ------------------------------------------------------------------


def test_ts253d_three_links_jumbo_on_10g_only_in_one_table(
    ts_lab: LabState, tmp_path: Path
) -> None:
    state = ts_lab
    password = services.read_password(state.host_dir("nas"))
    assert password
    before = {name: nic_state(state, name)["nics"] for name in ("nas", "pc")}
    assert before["nas"]["eth2"][0] == before["pc"]["eth2"][0] == 1500
    plan = {
        "name": "ts253d-writeup",
        "inventory": str(state.inventory_path),
        "matrix": {"link": ["lan", "p2p25", "p2p10"]},
        # as the write-up: jumbo frames on the 10G card and the PC's end only, for the run
        "network": {"confirm_timeout_s": 30},
        "interfaces": [
            {"host": "nas", "interface": "p2p10", "mtu": 9000},
            {"host": "pc", "interface": "p2p10", "mtu": 9000},
        ],
        "table": {"rows": ["link"], "columns": ["size", "direction"],
                  "baseline": {"link": "p2p25"}},
        "tests": [
            {"id": "smb", **SMB, "client": "pc", "target": "nas.{{ matrix.link }}",
             "matrix": {"size": SIZES}, "repetitions": 2},
        ],
    }  # fmt: skip
    plan_file = write_plan(tmp_path / "ts253d.yaml", plan)
    run = run_plan(plan_file, tmp_path / "run", NASPLAN_LAB_SMB_PASSWORD=password)

    records = {(t["cell"]["link"], t["cell"]["size"]): t for t in run["tests"]}
    assert list(records) == [(link, size) for link in ("lan", "p2p25", "p2p10") for size in SIZES]
    for (link, size), record in records.items():
        assert record["status"] == "ok" and record["base_id"] == "smb", record["error"]
        assert record["id"] == f"smb[link={link},size={size}]"
        # each cell's file was the cell's size, both ways, twice
        assert both_ways_twice(record) and cell_bytes(record) == {int(size[:-3]) * MIB}
        # the 10G cable's cells ran at MTU 9000, the others at 1500
        mtu = 9000 if link == "p2p10" else 1500
        assert record["path"]["mtu_bytes"] == mtu, (link, record["path"])
        speed = {"lan": 10**9, "p2p25": 25 * 10**8, "p2p10": 10**10}[link]
        assert record["path"]["speed_bits_per_second"] == speed

    # the plan's network section made the change on both ends, checked and put it back
    network = run["network"]
    assert network["status"] == "ok" and "groups" not in network
    for host in ("nas", "pc"):
        made = network["hosts"][host]
        assert made["armed"] and made["confirmed"] and made["status"] == "restored", made
        assert made["applied"]["eth2"]["mtu_bytes"] == 9000
        assert made["after"]["eth2"]["mtu_bytes"] == 1500
        assert set(made["applied"]) == {"eth2"}  # the LAN and the 2.5G cable untouched
    pings = [c for c in network["checks"] if c["check"] == "df-ping"]
    assert pings and all(c["ok"] for c in pings), pings
    # ... and read back from the hosts themselves: as they were
    assert {name: nic_state(state, name)["nics"] for name in ("nas", "pc")} == before
    nothing_left(state)

    header = ["link", *(f"{size} · {d}" for size in SIZES for d in ("write", "read"))]
    cells = {
        (link, f"{size} · {d}"): (records[(link, size)], d,
                                  None if link == "p2p25" else records[("p2p25", size)])
        for link in ("lan", "p2p25", "p2p10") for size in SIZES for d in ("write", "read")
    }  # fmt: skip
    report = (tmp_path / "run" / "report.md").read_text()
    assert report.index("## Table") < report.index("## Hosts")
    check_table(report, "## Table: link × size, direction", header, cells)


# --- 2. the FreeNAS write-up ------------------------------------------------------------------


def test_freenas_smb_against_iscsi_both_sizes_both_ways_in_one_table(
    fn_lab: LabState, tmp_path: Path
) -> None:
    state = fn_lab
    password = services.read_password(state.host_dir("nas"))
    secret = iscsi.read_secret(state.host_dir("nas"))
    assert password and secret
    plan = {
        "name": "freenas-writeup",
        "inventory": str(state.inventory_path),
        "table": {"rows": ["size"], "columns": ["test", "direction"], "baseline": {"test": "smb"}},
        "tests": [
            {"id": "smb", **SMB, "client": "ws", "matrix": {"size": SIZES}, "repetitions": 2},
            {"id": "iscsi", "kind": "iscsi", "server": "nas", "client": "ws",
             "iqn": "{{ hosts.nas.iscsi.iqn }}", "lun": 1, "scratch": True, "direction": "both",
             "chap_user": "{{ hosts.nas.iscsi.chap_user }}",
             "chap_secret_env": "{{ hosts.nas.iscsi.chap_secret_env }}",
             "matrix": {"size": SIZES}, "repetitions": 2},
        ],
    }  # fmt: skip
    plan_file = write_plan(tmp_path / "freenas.yaml", plan)
    env = {"NASPLAN_LAB_SMB_PASSWORD": password, "NASPLAN_LAB_ISCSI_SECRET": secret}
    run = run_plan(plan_file, tmp_path / "run", **env)

    records = {(t["base_id"], t["cell"]["size"]): t for t in run["tests"]}
    assert list(records) == [(test, size) for test in ("smb", "iscsi") for size in SIZES]
    for (test, size), record in records.items():
        assert record["status"] == "ok", record["error"]
        assert record["kind"] == ("transfer" if test == "smb" else "iscsi")
        assert both_ways_twice(record) and cell_bytes(record) == {int(size[:-3]) * MIB}
    nothing_left(state)

    header = ["size", *(f"{t} · {d}" for t in ("smb", "iscsi") for d in ("write", "read"))]
    cells = {
        (size, f"{test} · {d}"): (records[(test, size)], d,
                                  None if test == "smb" else records[("smb", size)])
        for size in SIZES for test in ("smb", "iscsi") for d in ("write", "read")
    }  # fmt: skip
    report = (tmp_path / "run" / "report.md").read_text()
    check_table(report, "## Table: size × test, direction", header, cells)


# --- 3. a matrix run stopped by Ctrl-C and resumed --------------------------------------------


def digests(run_dir: Path, record: Mapping[str, Any]) -> dict[str, str]:
    return {
        r["raw_file"]: hashlib.sha256((run_dir / r["raw_file"]).read_bytes()).hexdigest()
        for r in record["repetitions"]
        if r.get("raw_file")
    }


def test_a_matrix_run_stopped_after_two_cells_is_resumed_to_the_whole_table(
    ts_lab: LabState, tmp_path: Path
) -> None:
    state = ts_lab
    password = services.read_password(state.host_dir("nas"))
    assert password
    plan = {
        "name": "ts253d-resume",
        "inventory": str(state.inventory_path),
        "matrix": {"link": ["lan", "p2p25"]},
        "table": {"rows": ["link"], "columns": ["size", "direction"],
                  "baseline": {"link": "p2p25"}},
        "tests": [
            {"id": "smb", **SMB, "client": "pc", "target": "nas.{{ matrix.link }}",
             "matrix": {"size": SIZES}, "repetitions": 2},
        ],
        "order": "sequential",  # cell after cell: Ctrl-C falls between the cells' repetitions
    }  # fmt: skip
    plan_file = write_plan(tmp_path / "resume.yaml", plan)
    ids = [f"smb[link={link},size={size}]" for link in ("lan", "p2p25") for size in SIZES]
    run_dir = tmp_path / "run"
    env = {"NASPLAN_LAB_SMB_PASSWORD": password}

    proc = nasplan("apply", str(plan_file), "--out", str(run_dir), **env)
    assert proc.stderr is not None
    seen = ""
    for line in proc.stderr:  # the third cell has begun: Ctrl-C
        seen += line
        if line.startswith(f"test {ids[2]}: write, repetition 1/2"):
            proc.send_signal(signal.SIGINT)
            break
    err = finish(proc, seen)
    assert proc.returncode == 130, err
    stopped = load_run(run_dir)
    assert stopped["status"] == "interrupted"
    done = {t["id"]: t for t in stopped["tests"] if t["id"] in ids[:2]}
    assert set(done) == set(ids[:2])
    assert all(t["status"] == "ok" and len(t["repetitions"]) == 4 for t in done.values())
    kept = {test_id: digests(run_dir, record) for test_id, record in done.items()}
    nothing_left(state)

    # the stopped run's report already has the plan's table: what it did not reach, not run
    header = ["link", *(f"{size} · {d}" for size in SIZES for d in ("write", "read"))]
    report = (run_dir / "report.md").read_text()
    assert "⚠ the plan's table" not in report
    heading, found_header, rows = table_of(report)
    assert heading == "## Table: link × size, direction"
    assert (found_header, list(rows)) == (header, ["lan", "p2p25"])
    # the third cell, in flight, interrupted; the fourth, never begun, not run
    assert rows["p2p25"] == ["interrupted"] * 2 + ["not run"] * 2
    for column, text in enumerate(rows["lan"]):  # measured; no ratio, and why
        size, direction = SIZES[column // 2], ("write", "read")[column % 2]
        median = statistics.median(rates(done[f"smb[link=lan,size={size}]"], direction))
        why = "interrupted" if size == SIZES[0] else "not run"
        assert text.startswith(f"{mib(median)} MiB/s no ratio: baseline {why} "), text
        assert "×" not in text, text
    assert "4 tests (2 ok, 1 interrupted, 1 not run)" in report

    resumed = nasplan("apply", "--resume", str(run_dir), **env)
    err = finish(resumed)
    assert resumed.returncode == 0, err

    run = load_run(run_dir)
    assert run["status"] == "ok" and len(run["resumed_at"]) == 1
    # the resumed run ran the cells the stopped one had not finished, and only those
    again = run["sequence"][len(stopped["sequence"]) :]
    assert run["sequence"][: len(stopped["sequence"])] == stopped["sequence"]
    assert {test_id for test_id, _ in again} == set(ids[2:])
    records = {t["id"]: t for t in run["tests"]}
    assert list(records) == ids
    for test_id, record in records.items():
        assert record["status"] == "ok", record["error"]
        assert both_ways_twice(record)
        if test_id in done:  # the finished cells kept as they were, raw files and all
            assert record["repetitions"] == done[test_id]["repetitions"]
            assert digests(run_dir, record) == kept[test_id]
    nothing_left(state)

    by_cell = {(t["cell"]["link"], t["cell"]["size"]): t for t in records.values()}
    cells = {
        (link, f"{size} · {d}"): (by_cell[(link, size)], d,
                                  None if link == "p2p25" else by_cell[("p2p25", size)])
        for link in ("lan", "p2p25") for size in SIZES for d in ("write", "read")
    }  # fmt: skip
    report = (run_dir / "report.md").read_text()
    check_table(report, "## Table: link × size, direction", header, cells)
