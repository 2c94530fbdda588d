"""Every state a run can end in, generated, and what its report must hold in each of them.

``runs()`` is a hypothesis strategy of run.json documents: matrix tests (a copy per link and
volume, iperf3 per link without a volume, a second copy without a volume, optionally with
several clients or a set of files) whose records end in every status a run gives them (ok,
failed, interrupted, not run, lost, skipped), whose repetitions and directions end in every
status too (ok, failed, interrupted, missing: a test stopped between a repetition's write and
its read), some under analysis.MIN_TRUSTED_S, some sender-limited UDP, some resumed; and every
table shape a plan asks for (rows, columns, baseline, several ``against``).

``check(run, text_of)`` asserts the invariants over one run: its report, the table and a
comparison render; every cell with a rate has, for its ratio and for each ``against``, a
ratio, ``baseline`` or ``no ratio: <reason>``; a ratio built on a short cell is marked; every
repetition that finished ok is counted; a test's status word agrees with its warnings.

The records are made from a real lab run's (tests/fixtures/runs/mixed), so a kind's record has
its real shape: a new kind adds its template record to ``TEMPLATES`` and inherits the lot.
The invariants live here (not in nasplan) because they are what a reader of the report sees,
checked from outside; lab tests can check a real run's report with the same ``check``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from nasplan.analysis import summarize
from nasplan.measure import kinds, together
from nasplan.report.pivot_cell import SHORT, SHORT_BASE

ROOT = Path(__file__).resolve().parents[2]
MIXED = json.loads((ROOT / "tests" / "fixtures" / "runs" / "mixed" / "run.json").read_text())
TEMPLATES = {t["id"]: t for t in MIXED["tests"]}  # smb (transfer), lan (iperf3), ...

LINKS = ("p2p1", "p2p25", "p2p10")
VOLUMES = ("hdd", "ssd")
REP_STATES = ("ok", "ok", "ok", "failed", "missing")  # run.json: ok or failed; missing: never ran
TEST_STATES = ("ok", "ok", "failed", "interrupted", "lost", "skipped", "not run")


def _rep(index: int, direction: str | None, state: str, rate: float, short: bool) -> dict:
    """One repetition in the shape its kind records it."""
    duration = 1.2 if short else 4.5
    rep: dict[str, Any] = {"index": index, "status": state, "error": None, "raw_file": None}
    if state != "ok":
        rep["error"] = "exit 1: copy failed"
    if direction is None:
        rep.update(bits_per_second=rate * 8 if state == "ok" else None, duration_s=duration)
        rep.update(sent_bits_per_second=rate * 8 if state == "ok" else None)
        return rep
    rep.update(direction=direction, duration_s=duration if state == "ok" else None)
    rep.update(
        bytes=int(rate * duration) if state == "ok" else None,
        bytes_per_second=rate if state == "ok" else None,
        bits_per_second=rate * 8 if state == "ok" else None,
    )
    return rep


@st.composite
def _record(draw: st.DrawFn, template_id: str, base_id: str, cell: dict[str, str]) -> dict | None:
    """A test record of ``template_id``'s kind at ``cell``, ending in a drawn state; None: the
    run never reached it (``not run``)."""
    record = copy.deepcopy(TEMPLATES[template_id])
    state = draw(st.sampled_from(TEST_STATES))
    if state == "not run":
        return None
    values = ",".join(f"{k}={v}" for k, v in cell.items())
    record.update(id=f"{base_id}[{values}]", base_id=base_id, cell=dict(cell), warnings=[])
    record.pop("bottleneck", None)
    kind = kinds.readout(record)
    directions: list[str | None] = ["write", "read"] if kind.directed else [None]
    clients = ["pc", "mac", "laptop"] if kind.directed and draw(st.booleans()) else []
    lost = draw(st.sampled_from(clients)) if clients and draw(st.booleans()) else None
    if clients:
        record["params"]["clients"] = clients
    udp = not kind.directed and draw(st.booleans())
    if udp:  # asked 4 Gbit/s of a 2.5G link; the sender may not have reached it
        record["params"].update(protocol="udp", udp_bitrate_bits_per_second=4e9)
    if kind.directed and draw(st.booleans()):
        record["params"]["files"] = {"count": draw(st.sampled_from([1, 10])), "size": "1MiB"}
    count = draw(st.integers(1, 4))
    short = draw(st.booleans())
    reps = []
    for index in range(1, count + 1):
        for direction in directions:
            rep_state = draw(st.sampled_from(REP_STATES)) if state != "skipped" else "missing"
            if rep_state == "missing":
                continue
            rate = draw(st.floats(1e6, 2e9, allow_subnormal=False))
            rep = _rep(index, direction, rep_state, rate, short and draw(st.booleans()))
            if clients:  # each client's part; a lost client's repetitions have none
                here = [c for c in clients if c != lost or index == 1]
                rep["clients"] = {
                    c: {"status": "ok", "bytes_per_second": rate / len(here)} for c in here
                }
            if udp and rep_state == "ok":
                sent = draw(st.sampled_from([4e9, 7.01e8]))
                rep.update(sent_bits_per_second=sent, lost_percent=67.5, packets=10**6)
                rep.update(lost_packets=675000, jitter_ms=0.02, bits_per_second=sent * 0.325)
            if direction is not None and record["params"].get("files") and rep_state == "ok":
                rep.update(files_per_second=draw(st.floats(0.5, 5000.0)))
                rep.update(one_file_bytes_per_second=draw(st.floats(1e6, 2e9)))
            reps.append(rep)
    record["repetitions"] = reps
    # a finished record has its summaries; a stopped one may not (it was stopped before its
    # kind summarised it: new_record's empty ones)
    summarised = state in ("ok", "failed") or draw(st.booleans())
    if kind.directed:
        record["directions"] = {
            d: summarize(
                [
                    r["bytes_per_second"]
                    for r in reps
                    if r["direction"] == d and r["status"] == "ok"
                ],
                "bytes_per_second",
            )
            for d in directions
            if summarised and any(r["direction"] == d for r in reps)
        }
        record.pop("together", None)
        if clients:
            record["together"] = {
                d: together.summary(reps, "bytes_per_second", d) for d in record["directions"]
            }
    ok = [r[kind.metric] for r in reps if r["status"] == "ok" and kind.metric in r]
    if kind.directed:
        ok = [r["bits_per_second"] for r in reps if r["status"] == "ok"]
    record["summary"] = summarize(ok if summarised else [], "bits_per_second")
    if state == "lost" or lost:
        record.update(status="failed", error=f"host {lost or 'nas'} stopped answering")
    elif state == "interrupted":
        record.update(status="interrupted", error="interrupted: the run was stopped")
    elif state == "skipped":
        record.update(status="skipped", error="the network setup failed", repetitions=[])
    else:
        record.update(status=state, error=None if state == "ok" else "a repetition failed")
    if draw(st.booleans()):
        record["warnings"] = ["UDP 67.5 % lost: the sender reached 701 Mbit/s of 4 Gbit/s asked"]
    return record


@st.composite
def runs(draw: st.DrawFn) -> dict[str, Any]:
    """A run.json document in one of the states a run ends in, with a plan ``table:``."""
    links = draw(st.lists(st.sampled_from(LINKS), min_size=1, max_size=3, unique=True))
    volumes = draw(st.lists(st.sampled_from(VOLUMES), max_size=2, unique=True))
    tests: list[dict[str, Any]] = []
    planned: list[dict[str, Any]] = []
    shapes = [("smb", "smb", True), ("net", "lan", False)]
    if draw(st.booleans()):
        shapes.append(("lun", "nfs", False))  # a copy without a volume: iSCSI beside SMB
    for base_id, template, has_volume in shapes:
        for link in links:
            for volume in volumes if has_volume and volumes else [None]:
                cell = {"link": link, **({"volume": volume} if volume else {})}
                planned.append({"id": _cell_id(base_id, cell), "kind": TEMPLATES[template]["kind"]})
                record = draw(_record(template, base_id, cell))
                if record is not None:
                    tests.append(record)
    run = copy.deepcopy({k: v for k, v in MIXED.items() if k != "tests"})
    run["tests"] = tests
    run["plan"] = {**run["plan"], "tests": planned}
    dims = ["test", "link", *(["volume"] if volumes else []), "direction"]
    rows = draw(st.sampled_from(["link", "test", *(["volume"] if volumes else [])]))
    columns = [d for d in dims if d != rows and draw(st.booleans())]
    table: dict[str, Any] = {"rows": [rows], "columns": columns}
    if draw(st.booleans()):
        table["baseline"] = draw(_pair(links, volumes))
    against = draw(st.lists(_pair(links, volumes), max_size=2))
    if against:
        table["against"] = against
    run["plan"]["table"] = table
    warned = [f"{t['id']}: {w}" for t in tests for w in t.get("warnings") or []]
    run["warnings"] = warned
    statuses = {t["status"] for t in tests}
    run["status"] = next((s for s in ("interrupted", "failed") if s in statuses), "ok")
    if draw(st.booleans()):
        run["resumed_at"] = [run["started_at"]]
    return run


def _pair(links: Sequence[str], volumes: Sequence[str]) -> st.SearchStrategy[dict[str, str]]:
    pairs = [{"link": link} for link in links] + [{"volume": v} for v in volumes]
    pairs += [{"test": t} for t in ("smb", "net")]
    return st.sampled_from(pairs)


def _cell_id(base_id: str, cell: Mapping[str, str]) -> str:
    return f"{base_id}[{','.join(f'{k}={v}' for k, v in cell.items())}]"


# --- the invariants -----------------------------------------------------------------------


def check_table(table: Mapping[str, Any] | None) -> None:
    """Every cell with a rate says, for its ratio and each against ratio, a ratio,
    ``baseline`` or ``no ratio: <reason>``; a ratio built on a short cell is marked."""
    if table is None:
        return
    for page in table["tables"]:
        for row in page["rows"]:
            for cell in row["cells"]:
                if not cell["values"]:
                    assert "×" not in cell["text"], cell["text"]
                    continue
                main = [cell["ratio"] is not None, cell["baseline"], bool(cell["no_ratio"])]
                assert sum(main) == 1 or (cell["ratios"] and not any(main)), cell["text"]
                if cell["no_ratio"]:
                    assert f"no ratio: {cell['no_ratio']}" in cell["text"], cell["text"]
                for one in table["against"]:
                    label = "/".join(f"{d}={v}" for d, v in one.items())
                    assert any(
                        e["label"] == label or e["label"].startswith(f"{label}/")
                        for e in cell["against"]
                    ), (label, cell["text"])
                for entry in [*cell["against"], *cell["ratios"]]:
                    said = [
                        "ratio" in entry,
                        bool(entry.get("baseline")),
                        bool(entry.get("no_ratio")),
                    ]
                    assert sum(said) == 1, (entry, cell["text"])
                    of = f" of {entry['label']}"
                    assert of in cell["text"], (of, cell["text"])
                    if entry.get("baseline") and cell["baseline"]:
                        assert f", also{of}" in cell["text"], cell["text"]
                        assert "baseline baseline" not in cell["text"], cell["text"]
                    if entry.get("short_baseline") and not cell["short"]:
                        assert SHORT_BASE in cell["text"], cell["text"]
                if cell["short"]:
                    assert SHORT in cell["text"], cell["text"]
                elif cell["short_baseline"]:
                    assert SHORT_BASE in cell["text"], cell["text"]
                assert cell["n"] == len(cell["values"]) > 0


def check_counted(run: Mapping[str, Any], report: str) -> None:
    """Every repetition that finished ok is counted in its test's results row."""
    from nasplan.report import headline

    for test in run["tests"]:
        kind = kinds.readout(test)
        rows = {row["label"]: row for row in headline.rows(test)}
        for direction in kind.directions_asked(test) if kind.directed else [None]:
            ok = kind.ok_repetitions(test, direction)
            if not ok:
                continue
            label = f"{test['id']} ({direction})" if direction else test["id"]
            row = rows.get(label) or rows.get(test["id"])
            assert row is not None, (label, list(rows))
            assert row["n"] == len(ok), (label, row["n"], len(ok))
            assert row["median_text"] != "–", label


def check_status(run: Mapping[str, Any], report: str) -> None:
    """A test's status word agrees with its warnings, and the run's top says how many."""
    from nasplan.report import headline

    warned = [t for t in run["tests"] if t.get("warnings")]
    for test in warned:
        for row in headline.rows(test):
            assert "warning" in row["status"], (test["id"], row["status"])
    said = {str(w) for w in run.get("warnings") or []}
    for test in run["tests"]:
        kind = kinds.readout(test)
        said |= {f"{test['id']}: {w}" for w in test.get("warnings") or []}
        said |= {f"{test['id']}: {c.text}" for c in kind.caveats(test)}
        for row in headline.rows(test) if kind.caveats(test) else []:
            assert "⚠" in row["status"], (test["id"], row["status"])  # never a plain ok
    count = len(said)
    top = next(line for line in report.splitlines() if line.startswith("Run status:"))
    if count:
        noun = "warning" if count == 1 else "warnings"
        assert f", {count} {noun}" in top, top
    else:
        assert "warning" not in top, top


def check(run: Mapping[str, Any], report: str, table: Mapping[str, Any] | None) -> None:
    """Every invariant over one run, its report.md text and its table."""
    check_table(table)
    check_counted(run, report)
    check_status(run, report)
    assert "Traceback" not in report
