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

Disk profiles (``kind: disk-profile``) stand beside them, on the NAS's volume or ``through`` its
SMB share or NFS export, in the states a profile ends in: ok, a failed job, a mount refused (no
repetition), Ctrl-C mid-grid (some cells measured, the rest not), killed and resumed (the kept
part and the new one merged as ``apply --resume`` merges them), an unmount that failed (a
warning), lost, skipped; tables may tabulate another metric (``metric: iops``) and list more
tables (``tables:``). ``check_profiles`` holds their grid to its repetitions.

The records are made from real lab runs' (tests/fixtures/runs/mixed, disk-profile-lab), so a
kind's record has its real shape: a new kind adds its template record to ``TEMPLATES`` and
inherits the lot.
The invariants live here (not in nasplan) because they are what a reader of the report sees,
checked from outside; lab tests can check a real run's report with the same ``check``.
"""

from __future__ import annotations

import copy
import json
import re
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import strategies as st

from nasplan.analysis import summarize
from nasplan.measure import kinds, together
from nasplan.measure.kinds.disk_profile import KIND as PROFILE
from nasplan.measure.kinds.disk_profile.settings import ProfileSettings
from nasplan.measure.merge import done_indices, done_pairs, kept_part, merge
from nasplan.measure.record import lost_host_record, stopped_record, warn
from nasplan.report.pivot_cell import DASH, SHORT, SHORT_BASE

ROOT = Path(__file__).resolve().parents[2]
MIXED = json.loads((ROOT / "tests" / "fixtures" / "runs" / "mixed" / "run.json").read_text())
TEMPLATES = {t["id"]: t for t in MIXED["tests"]}  # smb (transfer), lan (iperf3), ...
PROFILE_RUN = json.loads(
    (ROOT / "tests" / "fixtures" / "runs" / "disk-profile-lab" / "run.json").read_text()
)
# cdm: the CrystalDiskMark grid on the NAS's volume; smb: through the share; nfs, refused: a
# mount refused (NFS, and an SMB share that is not there)
PROFILES = {t["id"]: t for t in PROFILE_RUN["tests"]}

LINKS = ("p2p1", "p2p25", "p2p10")
VOLUMES = ("hdd", "ssd")
REP_STATES = ("ok", "ok", "ok", "failed", "missing")  # run.json: ok or failed; missing: never ran
TEST_STATES = ("ok", "ok", "failed", "interrupted", "lost", "skipped", "not run")
PROFILE_STATES = ("resumed", "refused", "interrupted", "ok", "failed", "lost", "skipped", "not run")
THROUGH = ("smb", None, "nfs")
MODES = (("read", "write"), ("read", "write", "mix"), ("write",))
# what a run records of a test it stopped before its kind handed anything over (Cell.record)
NO_PARAMS = {"server": "", "client": "", "target": "?"}
UNMOUNT = "umount /tmp/nasplan-mnt-5e1f0a2b: target is busy"
FIO_FAILED = "fio job failed with error 5 (exit 1): fio: io_u error on file: Input/output error"
PROFILE_KEYS = ("bytes_per_second", "iops", "latency_mean_us", "latency_p50_us")
PROFILE_KEYS += ("latency_p99_us", "latency_p999_us", "read_bytes_per_second")
PROFILE_KEYS += ("write_bytes_per_second",)


def _rep(
    index: int, direction: str | None, state: str, rate: float, short: bool, job: str = ""
) -> dict:
    """One repetition in the shape its kind records it (a disk profile's: ``job``, its mode
    the direction, the lab run's repetition of that job and mode scaled to ``rate``)."""
    duration = 1.2 if short else 4.5
    rep: dict[str, Any] = {"index": index, "status": state, "error": None, "raw_file": None}
    if job:
        name = f"{job.replace(' ', '-').lower()}-{direction}-{index}"
        rep.update(profile_job=job, direction=direction, raw_file=f"raw/cdm/{name}.json")
        if state != "ok":
            return {**rep, "error": FIO_FAILED}
        real = next(
            r
            for r in PROFILES["cdm"]["repetitions"]
            if (r["profile_job"], r["direction"]) == (job, direction)
        )
        factor = rate / real["bytes_per_second"]
        for key in (k for k in PROFILE_KEYS if real.get(k) is not None):
            rep[key] = real[key] / factor if "latency" in key else real[key] * factor
        return rep
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


SETTINGS = ProfileSettings(host="nas", path="")  # (its summary reads the record alone)


def _summarized(record: dict[str, Any]) -> dict[str, Any]:
    return PROFILE.summarize(record, SETTINGS)


@st.composite
def _measured(draw: st.DrawFn, keys: Sequence[tuple[int, str, str]], fails: bool) -> list[dict]:
    """A repetition of each ``(index, job, mode)`` in that order, some failed when ``fails``."""
    reps = []
    for index, job, mode in keys:
        state = draw(st.sampled_from(REP_STATES[:4])) if fails else "ok"
        # from a dying disk's random writes (a few KB/s) to an NVMe's sequential reads
        rate = draw(st.sampled_from([4e3, 3.9e4])) if draw(st.booleans()) else 0.0
        rate = rate or draw(st.floats(1e6, 3e9, allow_subnormal=False))
        reps.append(_rep(index, mode, state, rate, False, job))
    return reps


@st.composite
def _profile(draw: st.DrawFn, base_id: str, cell: dict[str, str]) -> dict | None:
    """A disk-profile record at ``cell``, on the NAS's volume or through its share, ending in
    a drawn state (PROFILE_STATES); None: the run never reached it."""
    state = draw(st.sampled_from(PROFILE_STATES))
    if state == "not run":
        return None
    via = draw(st.sampled_from(THROUGH))
    record = copy.deepcopy(PROFILES["cdm"])
    record.update(id=_cell_id(base_id, cell), base_id=base_id, cell=dict(cell), warnings=[])
    params = record["params"]
    every = params["jobs"]
    jobs = draw(st.lists(st.sampled_from(every), min_size=1, max_size=4, unique=True))
    jobs.sort(key=every.index)
    modes = list(draw(st.sampled_from(MODES)))
    count = draw(st.integers(1, 3))
    params.update(jobs=jobs, modes=modes, repetitions=count, volume=cell.get("volume"))
    if via:
        real = {"smb": "refused" if state == "refused" else "smb", "nfs": "nfs"}[via]
        through = copy.deepcopy(PROFILES[real]["params"]["through"])  # (refused: not mounted)
        if via == "nfs" and state != "refused":  # (the lab's kernel has no NFS client)
            through["mounted"] = "NFS 198.18.180.10:/v1 mounted with the kernel's client"
        params.update(path=None, profile=None, through=through)
    keys = [(i, job, mode) for i in range(1, count + 1) for job in jobs for mode in modes]
    fails = state != "ok" and draw(st.booleans())
    if state == "refused" and via:  # the mount refused: no repetition
        refused = PROFILES["refused" if via == "smb" else "nfs"]["error"]
        record.update(repetitions=[], error=refused)
        record = _summarized(record)
    elif state == "skipped" or state == "refused":  # (record.skipped: no kind's params)
        record.update(status="skipped", error="the network setup failed", repetitions=[])
        record.update(params=dict(NO_PARAMS), summary=summarize([], "bits_per_second"))
    elif state in ("interrupted", "resumed", "lost"):  # stopped mid-grid
        cut = draw(st.integers(0, len(keys) - 1))
        record["repetitions"] = draw(_measured(keys[:cut], fails))
        if state == "resumed" or draw(st.booleans()):
            record = _summarized(record)
        else:  # as its kind's last checkpoint left it: not summarised, no grid
            record.update(status="failed", error=None, summary=summarize([], "bytes_per_second"))
            record.pop("grid", None)
        if not cut and state == "interrupted" and draw(st.booleans()):  # nothing handed over
            record.update(params=dict(NO_PARAMS), summary=summarize([], "bits_per_second"))
            record.pop("grid", None)
        if state == "lost":
            record = lost_host_record(record, f"host {'ws' if via else 'nas'} stopped answering")
        else:
            record = stopped_record(record, count)
        if state == "resumed":
            record = _resumed(draw, record, keys)
    else:
        record["repetitions"] = draw(_measured(keys, fails))
        record = _summarized(record)
    if record["params"].get("through") and state != "refused" and draw(st.booleans()):
        client, mounted = params["through"]["client"], params["through"]["mounted"]
        said = f"{client}: could not unmount {mounted.split(' mounted')[0]}: {UNMOUNT}"
        warn(record, f"{said} (the next run's clean-up of {client} unmounts it)")
    return record


def _resumed(
    draw: st.DrawFn, stopped: dict[str, Any], keys: Sequence[tuple[int, str, str]]
) -> dict[str, Any]:
    """``stopped`` resumed as ``apply --resume`` does: what ended ok kept (merge.kept_part), the
    repetitions of every index not done run again but for the jobs and modes kept (the kind's
    ``PlanTest.wants``), the two parts merged; marked ``resumed`` for the run to say so."""
    done = done_pairs(stopped)
    taken = done_indices(stopped, PROFILE.directions_asked(stopped))
    again = [(i, j, m) for i, j, m in keys if i not in taken and (i, f"{j} {m}") not in done]
    part = {**copy.deepcopy(stopped), "warnings": [], "status": "failed", "error": None}
    part["repetitions"] = draw(_measured(again, draw(st.booleans())))
    kept = kept_part(stopped)
    parts = [(kept, 0.0), (_summarized(part), 30.0)] if kept else [(_summarized(part), 0.0)]
    return {**merge(parts, _summarized), "resumed": True}


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
    if draw(st.booleans()):
        shapes.append(("disk", "profile", True))  # a disk profile per volume and link
    for base_id, template, has_volume in shapes:
        for link in links:
            for volume in volumes if has_volume and volumes else [None]:
                cell = {"link": link, **({"volume": volume} if volume else {})}
                kind = "disk-profile" if template == "profile" else TEMPLATES[template]["kind"]
                planned.append({"id": _cell_id(base_id, cell), "kind": kind})
                if template == "profile":
                    record = draw(_profile(base_id, cell))
                else:
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
    ids = [base_id for base_id, _, _ in shapes]
    if draw(st.booleans()):
        table["baseline"] = draw(_pair(links, volumes, ids))
    against = draw(st.lists(_pair(links, volumes, ids), max_size=2))
    if against:
        table["against"] = against
    run["plan"]["table"] = table
    if draw(st.booleans()):  # more tables, one of another metric (a disk profile's IOPS)
        metric = draw(st.sampled_from(["iops", "latency_p99_us", "bytes_per_second"]))
        run["plan"]["tables"] = [{**table, "metric": metric}, {"rows": ["test"]}]
    warned = [f"{t['id']}: {w}" for t in tests for w in t.get("warnings") or []]
    run["warnings"] = warned
    statuses = {t["status"] for t in tests}
    run["status"] = next((s for s in ("interrupted", "failed") if s in statuses), "ok")
    resumed = [t.pop("resumed") for t in tests if "resumed" in t]
    if resumed or draw(st.booleans()):
        run["resumed_at"] = [run["started_at"]]
    return run


def _pair(
    links: Sequence[str], volumes: Sequence[str], ids: Sequence[str]
) -> st.SearchStrategy[dict[str, str]]:
    pairs = [{"link": link} for link in links] + [{"volume": v} for v in volumes]
    pairs += [{"test": t} for t in ids]
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
                if not cell["values"]:  # not measured: never a 0
                    assert "×" not in cell["text"], cell["text"]
                    assert not re.match(r"0(\.0*)?\b", cell["text"]), cell["text"]
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
                if cell["median"]:  # a slow disk's 0.038 MiB/s, never a 0
                    assert not re.match(r"0(\.0*)? ", cell["text"]), cell["text"]
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
        for direction in kind.directions_asked(test):
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


def check_visible(run: Mapping[str, Any], report: str) -> None:
    """Every test that did not end ok is listed with its status and error, every warning is
    said with its test's id."""
    from nasplan.report.render import error_of, heading

    for test in run["tests"]:
        if test["status"] != "ok":
            said = f"- **{heading(test)}**: {test['status']}: {error_of(test)}"
            assert said in report, said
        for warning in test.get("warnings") or []:
            assert f"- {test['id']}: {warning}" in report, (test["id"], warning)


def _section(report: str, test: Mapping[str, Any]) -> str:
    """A test's own section of report.md (``### id: name``), up to the next heading."""
    from nasplan.report.render import heading

    head = f"\n### {heading(test)}\n"
    assert report.count(head) == 1, head
    body = report.split(head, 1)[1]
    return re.split(r"\n#{2,3} ", body, maxsplit=1)[0]


def _charted(report: str) -> dict[str, float]:
    """The byte-rate chart's bars: category -> value in bytes/s (its axis' unit)."""
    title = 'title "Median file transfer and disk rate per test and direction"'
    if title not in report:
        return {}
    chart = report.split(title, 1)[1].split("```", 1)[0]
    categories = re.findall(r'"([^"]*)"', re.search(r"x-axis \[(.*)\]", chart)[1])  # type: ignore[index]
    unit = re.search(r'y-axis "([^"]+)"', chart)[1]  # type: ignore[index]
    factor = {"MiB/s": 2**20}[unit]  # (the report's unit of byte rates, as its tables')
    bars = re.findall(r"bar \[(.*)\]", chart)[-1].split(", ")
    return {c: float(v) * factor for c, v in zip(categories, bars, strict=True)}


def check_profiles(run: Mapping[str, Any], report: str) -> None:
    """A disk profile shows each job, mode and repetition once (a resumed run's too); each
    grid cell the median of its ok repetitions, in MB/s (10^6) in its section and MiB/s in the
    results table and the chart, as the rest of the report; a cell not measured ``–`` in the
    grid and the results table, never 0, and not charted."""
    from nasplan.measure.kinds.disk_profile.view import mb_text
    from nasplan.report import headline
    from nasplan.report.charts import run_charts
    from nasplan.units import format_metric

    charted = _charted(report)
    for chart in run_charts(run):  # --charts png: a bar not measured is a mark, never a 0
        for value, mark in zip(chart.values[0], chart.marks[0], strict=True):
            assert (value is None) != (mark is None) and (value is None or value > 0), chart
    for test in (t for t in run["tests"] if t.get("kind") == "disk-profile"):
        reps = test["repetitions"]
        keys = [(r["profile_job"], r["direction"], r["index"]) for r in reps]
        assert len(keys) == len(set(keys)), (test["id"], keys)
        section = _section(report, test)
        # (a record checkpointed mid-grid has no ``grid`` yet: its section shows what ran)
        assert ("No job of its grid was measured." in section) == (not reps), section
        rows = {row["label"]: row for row in headline.rows(test)}
        modes = test["params"].get("modes") or []
        for job in test["params"].get("jobs") or []:
            line = next((x for x in section.splitlines() if x.startswith(f"| {job} | ")), None)
            assert line is None or line.count("|") == len(modes) + 2, line
            shown = [c.strip() for c in line.split("|")[2:-1]] if line else [DASH] * len(modes)
            for mode, text in zip(modes, shown, strict=True):
                ok = [
                    r["bytes_per_second"]
                    for r in reps
                    if (r["profile_job"], r["direction"], r["status"]) == (job, mode, "ok")
                ]
                row = rows.get(f"{test['id']} ({job} {mode})")
                name = f"{test['id']} {job} {mode}"
                if not ok:
                    assert text == DASH, (name, line)
                    assert name not in charted, name
                    assert row is None or (row["median_text"], row["n"]) == (DASH, 0), row
                    continue
                median = statistics.median(ok)
                assert text == mb_text(median) and float(text) > 0, (name, text, median)
                assert row is not None and row["n"] == len(ok), (name, row)
                assert row["median_text"] == format_metric(median, "bytes_per_second")
                assert row["median_text"].endswith(" MiB/s"), row
                assert float(row["median_text"].split()[0]) > 0, row
                assert f"| {row['median_text']} |" in report, row["median_text"]
                assert charted[name] == pytest.approx(median, rel=0.06, abs=0.006 * 2**20)


def check(run: Mapping[str, Any], report: str, table: Mapping[str, Any] | None) -> None:
    """Every invariant over one run, its report.md text and its table."""
    check_table(table)
    check_counted(run, report)
    check_status(run, report)
    check_visible(run, report)
    check_profiles(run, report)
    assert "Traceback" not in report
