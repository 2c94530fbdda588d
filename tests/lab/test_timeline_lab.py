"""Per-second timelines from a real run: iperf3, an SMB copy and fio over a 1G-shaped lab LAN."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan.input.plan import load_plan
from nasplan.lab import LabState, services
from nasplan.progress import make_progress
from nasplan.report import mermaid
from nasplan.report.render import write_report
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

LAB = {
    "name": "tl-lab",
    "lan": {"prefix": "198.19.64.0/24", "rate": "1G"},
    "hosts": {"nas": {"services": ["smb"]}, "ws": {}},
}
SPEED_BITS_PER_SECOND = 10**9


def test_timelines_of_a_real_run(
    make_lab: Callable[[dict[str, Any]], LabState],
    tmp_path: Path,
    shared_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    state = make_lab(LAB)
    password = services.read_password(state.host_dir("nas"))
    assert password
    monkeypatch.setenv(services.SMB_PASSWORD_ENV, password)
    smb = "{{ hosts.nas.smb.%s }}"
    plan = {
        "name": "timeline",
        "inventory": str(state.inventory_path),
        "tests": [
            {"kind": "iperf3", "id": "net", "server": "nas", "client": "ws",
             "repetitions": 1, "duration_s": 3},
            # 256 MiB at 1 Gbit/s: about 2.3 s each way, so the NIC counters see whole seconds.
            {"kind": "transfer", "id": "smb", "server": "nas", "client": "ws", "method": "smb",
             "size": "256MiB", "repetitions": 1, "share": smb % "share", "user": smb % "user",
             "password_env": smb % "password_env"},
            {"kind": "disk", "id": "fio", "host": "nas", "path": str(shared_dir),
             "size": "16MiB", "direction": "write", "repetitions": 1},
        ],
    }  # fmt: skip
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(plan))
    run_dir = tmp_path / "run"
    outcome = apply(RunRequest(load_plan(plan_path), out=run_dir), make_progress(io.StringIO()))
    assert outcome.exit_code == EXIT_OK
    run = load_run(run_dir)  # validates against schemas/run.schema.json
    tests = {t["id"]: t for t in run["tests"]}

    # iperf3: one point per second of the 3 s run, each near the 1G link's TCP maximum.
    net = tests["net"]
    theoretical = net["path"]["theoretical_bits_per_second"]
    (series,) = net["timeline"]["throughput"]
    assert series["source"] == "iperf3" and series["fall"] is None
    assert len(series["bits_per_second"]) == 3
    for value in series["bits_per_second"]:
        assert 0.8 * theoretical < value < 1.03 * theoretical, series
    rep = net["repetitions"][0]
    assert rep["started_s"] < series["t_s"][0] <= rep["ended_s"] + 0.5
    # The sampler, started and stopped within the client's own script, saw the same traffic
    # on the client's NIC, on the same clock (iperf3's seconds
    # are placed from the repetition's start, before the server's start-up round trip: a
    # sampler second may straddle iperf3's first one).
    ws = net["resources"]["ws"]["series"]
    sent = ws["nics"][net["path"]["client_interface"]]["tx_bytes_per_second"]
    first, last = series["t_s"][0], series["t_s"][-1]
    busy = [v * 8 for t, v in zip(ws["t_s"], sent, strict=True) if first < t <= last + 1]
    assert busy and all(v < 1.05 * SPEED_BITS_PER_SECOND for v in busy), busy
    assert max(busy) > 0.85 * theoretical, busy
    assert all(0 <= v <= 100 for v in ws["cpu_busy_percent"] if v is not None)
    assert all(m and m > 0 for m in ws["mem_available_bytes"])
    # The server's sampler, started and stopped within the iperf3 server's own start and stop
    # scripts, saw the whole run arrive on the server's NIC.
    nas = net["resources"]["nas"]["series"]
    got = nas["nics"][net["path"]["server_interface"]]["rx_bytes_per_second"]
    assert sum(1 for v in got if v and v * 8 > 0.85 * theoretical) >= 2, got

    # SMB: the client's NIC per second, write (transmitted) then read (received).
    copy = tests["smb"]
    by_direction = {s["direction"]: s for s in copy["timeline"]["throughput"]}
    assert set(by_direction) == {"write", "read"}
    for direction, s in by_direction.items():
        assert s["source"] == "nic" and s["nic"] == copy["path"]["client_interface"]
        top = max(v for v in s["bits_per_second"] if v is not None)
        assert 0.6 * theoretical < top < 1.05 * SPEED_BITS_PER_SECOND, (direction, s)
        rep = next(r for r in copy["repetitions"] if r["direction"] == direction)
        assert rep["started_s"] - 0.5 < s["t_s"][0] and s["t_s"][-1] < rep["ended_s"] + 0.5
    write, read = by_direction["write"], by_direction["read"]
    assert write["t_s"][-1] < read["t_s"][0]

    # fio: a 16 MiB job ends within a second, so fio logs no whole second: no series, no error.
    assert tests["fio"]["status"] == "ok" and tests["fio"]["timeline"] is None
    assert list(shared_dir.glob("nasplan-fio-*")) == []

    # The report draws each timeline as a valid Mermaid chart, a bar a second (a band of its
    # own colour where nothing was measured, never a bar at 0), with the TCP maximum as a line.
    report = (run_dir / "report.md").read_text()
    assert "## Rate over time" in report
    assert "### net (iperf3), per second" in report and "### smb (transfer), per second" in report
    charts = [b for b in mermaid.blocks(report) if "rate per second" in b]
    assert len(charts) == 2 and all(mermaid.validate(b) == [] for b in charts)
    net_chart = next(b for b in charts if '"net: ' in b)
    bars = [line.strip() for line in net_chart.splitlines() if line.strip().startswith("bar")]
    lines = [line.strip() for line in net_chart.splitlines() if line.strip().startswith("line")]
    # the rate, the band over second 0 (iperf3's intervals start at 1), the TCP maximum
    assert (len(bars), len(lines)) == (2, 1)
    assert mermaid.colours(net_chart)[1] == mermaid.GAP_COLOUR
    flat = {float(v) for v in lines[0][len("line [") : -1].split(", ")}
    assert flat == {round(theoretical / 1e6, 2)}

    # --charts svg adds one figure per timeline (throughput and CPU), shown in that section.
    write_report(run_dir, charts="svg")
    figures = sorted(p.name for p in (run_dir / "charts").glob("timeline-*.svg"))
    assert figures == ["timeline-net.svg", "timeline-smb.svg"]
    report = (run_dir / "report.md").read_text()
    assert "![net: rate, CPU and memory per second](charts/timeline-net.svg)" in report
    assert (run_dir / "charts" / "timeline-smb.svg").read_text().lstrip().startswith("<?xml")
