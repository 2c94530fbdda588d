"""The resource sampler: its parser on real output, and the loop run on this machine."""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

import jsonschema
import pytest

from nasplan.measure import sampler
from nasplan.measure.kinds.iperf3 import server as iperf3_server
from nasplan.remote.runner import LocalRunner
from nasplan.sections import split_sections

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "sampler"


@pytest.fixture(autouse=True)
def own_host_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loops run here see a host lock of this test's own (/tmp/nasplan-$(uname -n).lock),
    none: a lock this machine keeps (a run killed here, its lease run out) would end them at
    their first sample, as it should on a host."""
    stub = tmp_path / "uname"
    node = f"sampler-test-{os.getpid()}"
    stub.write_text(f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec /bin/uname "$@"\n')
    stub.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert not Path(f"/tmp/nasplan-{node}.lock").exists()


def test_idle_host() -> None:
    parsed = sampler.parse((FIXTURES / "idle-dash.txt").read_text())
    assert parsed["samples"] == 5
    assert parsed["cpu_busy_percent_median"] == pytest.approx(0.495, abs=0.01)
    assert parsed["cpu_busy_percent_max"] == pytest.approx(12.0)
    assert parsed["mem_available_bytes_min"] == 24296960 * 1024
    assert parsed["duration_s"] == pytest.approx(2.01)


def test_both_cores_busy_is_100_percent() -> None:
    parsed = sampler.parse((FIXTURES / "busy-2-cores-dash.txt").read_text())
    assert parsed["cpu_busy_percent_median"] == 100.0


def test_nothing_sampled() -> None:
    parsed = sampler.parse("")
    assert parsed["samples"] == 0
    assert parsed["cpu_busy_percent_median"] is None


def test_loop_samples_and_leaves_nothing_behind() -> None:
    runner = LocalRunner()
    token = f"unit-{os.getpid()}"
    pid = sampler.start(runner, token, max_s=30)
    assert pid is not None
    out, flag = _sampled(token, 2)
    result = sampler.stop(runner, token, pid)
    assert result is not None and result["samples"] >= 2
    assert not Path(out).exists() and not Path(flag).exists()
    assert _gone(str(pid))  # at once: the stop waited for it


def test_riding_along_in_a_server_start_and_stop_samples_and_leaves_nothing_behind(
    tmp_path: Path,
) -> None:
    # the iperf3 server's own start and stop scripts carry the host's sampler: here with real
    # `true` as the server (it ends at once: the start fails, the sampler runs all the same)
    runner = LocalRunner()
    token = f"unit-ride-{os.getpid()}"
    pidfile, logfile = str(tmp_path / "s.pid"), str(tmp_path / "s.log")
    start = iperf3_server.server_start_script(
        "true", 1, pidfile, logfile, also=sampler.start_text(token, max_s=30)
    )
    started = runner.run_script(start)
    assert started.exited == 1 and "ended before it listened" in started.stderr
    pid_text = split_sections(started.stdout)[sampler.STARTED]
    assert pid_text.isdigit()
    out, flag = _sampled(token, 2)
    stop = iperf3_server.server_stop_script(
        pidfile, logfile, grace_s=0, also=sampler.stop_text(token, int(pid_text))
    )
    stopped = runner.run_script(stop)
    assert stopped.ok
    parsed = sampler.parse(split_sections(stopped.stdout)[sampler.SECTION])
    assert parsed["samples"] >= 2
    assert not Path(out).exists() and not Path(flag).exists()
    assert _gone(pid_text)  # gone once stopped, not still ending: the stop waited for it


def _sampled(token: str, samples: int) -> tuple[str, str]:
    """Wait until the loop wrote ``samples`` whole samples (0.5 s apart, later on a loaded
    host); its output and flag files."""
    out, flag = sampler.paths(token)
    deadline = time.monotonic() + 20
    while Path(out).read_text().count(" E\n") < samples and time.monotonic() < deadline:
        time.sleep(0.1)
    return out, flag


def _gone(pid: str) -> bool:
    """Gone, or a zombie waiting for a lazy init to reap it: either way no longer running."""
    status = Path(f"/proc/{pid}/status")
    return not status.exists() or "\nState:\tZ" in status.read_text()


@pytest.mark.parametrize("shell", ["sh", "busybox"])
def test_riding_in_a_client_script_it_samples_the_client_whole_and_leaves_nothing_behind(
    shell: str,
) -> None:
    # one round trip: the sampler started before the "client" (real sh, 1.2 s of work that
    # prints like a client), stopped after it; the client's own output comes first, untouched
    runner = LocalRunner()
    token = f"unit-client-{os.getpid()}-{shell}"
    ride = sampler.ride(token, start=True, stop=True, pid=None, max_s=30)
    argv = ["sh", "-c", "sleep 1.2; printf '{\\n  \"end\": {}\\n}\\n'"]
    script = iperf3_server.client_script(argv, before=ride.before, said=ride.said, stop=ride.stop)
    if shell == "busybox":
        script = f"exec busybox sh -c {shlex.quote(script)}"
    done = runner.run_script(script)

    assert done.ok, done.stderr
    assert iperf3_server.client_said(done.stdout) == '{\n  "end": {}\n}\n'
    sections = split_sections(done.stdout)
    assert sections[sampler.STARTED].isdigit()
    parsed = sampler.parse(sections[sampler.SECTION])
    assert parsed["samples"] >= 2 and parsed["duration_s"] >= 0.9  # the client's whole second
    out, flag = sampler.paths(token)
    assert not Path(out).exists() and not Path(flag).exists()
    assert _gone(sections[sampler.STARTED])


def test_a_client_that_failed_leaves_its_sampler_running_for_a_stop_of_its_own() -> None:
    runner = LocalRunner()
    token = f"unit-client-failed-{os.getpid()}"
    ride = sampler.ride(token, start=True, stop=True, pid=None, max_s=30)
    argv = ["sh", "-c", "echo 'iperf3: error - unable to connect' >&2; exit 1"]
    script = iperf3_server.client_script(argv, before=ride.before, said=ride.said, stop=ride.stop)
    done = runner.run_script(script)

    assert done.exited == 1 and "unable to connect" in done.stderr  # the client's own
    sections = split_sections(done.stdout)
    assert sampler.SECTION not in sections  # not stopped: the client did not end well
    pid = sections[sampler.STARTED]
    assert not _gone(pid)
    time.sleep(0.6)
    assert sampler.stop(runner, token, int(pid)) is not None  # what the teardown does
    assert _gone(pid)


def test_riding_in_several_client_scripts_it_starts_in_the_first_and_stops_in_the_last() -> None:
    runner = LocalRunner()
    token = f"unit-clients-{os.getpid()}"
    argv = ["sh", "-c", "sleep 0.6; echo done"]
    first = sampler.ride(token, start=True, stop=False, pid=None, max_s=30)
    one = runner.run_script(iperf3_server.client_script(argv, before=first.before, said=first.said))
    pid = split_sections(one.stdout)[sampler.STARTED]
    assert iperf3_server.client_said(one.stdout) == "done\n" and not _gone(pid)
    last = sampler.ride(token, start=False, stop=True, pid=int(pid), max_s=30)
    assert last.before == last.said == ""
    two = runner.run_script(iperf3_server.client_script(argv, stop=last.stop))

    assert iperf3_server.client_said(two.stdout) == "done\n"
    parsed = sampler.parse(split_sections(two.stdout)[sampler.SECTION])
    assert parsed["duration_s"] >= 1.0  # both clients' time, in one series
    assert _gone(pid)


def test_lines_of_the_older_sampler_still_parse_without_disks_or_nics() -> None:
    parsed = sampler.parse((FIXTURES / "idle-dash.txt").read_text())
    series = parsed["series"]
    assert series["t_s"] == [1.0, 2.01]
    assert series["cpu_busy_percent"][0] == pytest.approx(0.5, abs=0.01)
    assert series["mem_available_bytes"] == [24303500 * 1024, 24296960 * 1024]
    assert series["disks"] == {} and series["nics"] == {}


def test_the_loop_here_reads_disk_and_nic_counters() -> None:
    runner = LocalRunner()
    token = f"unit-series-{os.getpid()}"
    pid = sampler.start(runner, token, max_s=30)
    assert pid is not None
    time.sleep(2.2)
    result = sampler.stop(runner, token, pid)
    assert result is not None
    series = result["series"]
    assert len(series["t_s"]) >= 2 and all(
        0.9 < t - s < 1.3 for s, t in zip([0, *series["t_s"]], series["t_s"], strict=False)
    )
    assert all(v is None or 0 <= v <= 100 for v in series["cpu_busy_percent"])
    for rates in [*series["disks"].values(), *series["nics"].values()]:
        assert all(len(column) == len(series["t_s"]) for column in rates.values())
        assert all(v is None or v >= 0 for column in rates.values() for v in column)


def test_series_of_a_real_1g_iperf3_run_then_a_direct_write() -> None:
    series = sampler.parse((FIXTURES / "netns-iperf3-1g-then-dd-dash.txt").read_text())["series"]
    assert series["t_s"] == [1.0, 2.01, 3.02, 4.02, 5.03]
    # tbf shapes what the veth sends, Ethernet header included: 1 Gbit/s = 125 MB/s at most
    sent = series["nics"]["tlcap1"]["tx_bytes_per_second"]
    assert all(110e6 < rate < 125e6 for rate in sent[2:4]), sent
    # iperf3 started within the second before 2.01 and ended within the one before 5.03
    assert sent[0] < 1000 and 50e6 < sent[1] < 110e6 and sent[4] < sent[3] / 2
    received = series["nics"]["tlcap1"]["rx_bytes_per_second"]
    assert max(received) < 200_000  # only the peer's ACKs came back
    written = series["disks"]["vda"]["write_bytes_per_second"]
    # dd wrote 300 MiB (314.6 MB) within the last second
    assert written[-1] == pytest.approx(300 * 2**20, rel=0.02)
    assert max(written[:-1]) < 1e6
    assert all(0 <= busy <= 100 for busy in series["cpu_busy_percent"])
    assert set(series) == {
        "t_s",
        "cpu_busy_percent",
        "cpu_busiest_core_percent",
        "mem_available_bytes",
        "disks",
        "nics",
    }


def test_a_line_cut_short_when_the_loop_was_killed_is_ignored() -> None:
    text = (FIXTURES / "netns-iperf3-1g-then-dd-dash.txt").read_text()
    cut = text + text.splitlines()[-1].replace(" E", "")[:-20] + "\n"
    assert sampler.parse(cut)["samples"] == sampler.parse(text)["samples"] == 12


def test_one_busy_core_shows_beside_the_whole_machine() -> None:
    # core 1 of 2 kept busy by a loop pinned to it: the machine reads about half busy
    parsed = sampler.parse((FIXTURES / "one-core-busy-dash.txt").read_text())
    assert parsed["cpu_cores"] == 2
    assert parsed["cpu_busiest_core_percent_median"] == 100.0
    assert parsed["cpu_busiest_core_percent_max"] == 100.0
    assert 45 < parsed["cpu_busy_percent_median"] < 65
    assert parsed["series"]["cpu_busiest_core_percent"] == [100.0] * 5


def test_lines_without_per_core_counters_have_no_busiest_core() -> None:
    parsed = sampler.parse((FIXTURES / "netns-iperf3-1g-then-dd-dash.txt").read_text())
    assert parsed["cpu_cores"] is None
    assert parsed["cpu_busiest_core_percent_median"] is None
    assert set(parsed["series"]["cpu_busiest_core_percent"]) == {None}


def test_the_loop_here_reads_every_core() -> None:
    runner = LocalRunner()
    token = f"unit-cores-{os.getpid()}"
    pid = sampler.start(runner, token, max_s=30)
    assert pid is not None
    time.sleep(1.2)
    result = sampler.stop(runner, token, pid)
    assert result is not None
    assert result["cpu_cores"] == os.cpu_count()
    assert result["cpu_busiest_core_percent_max"] is not None


def test_the_busiest_core_fits_run_json_s_resources() -> None:
    schema = json.loads(
        (Path(__file__).resolve().parents[3] / "nasplan/schemas/run.schema.json").read_text()
    )
    resources = schema["$defs"]["test"]["properties"]["resources"]
    parsed = sampler.parse((FIXTURES / "one-core-busy-dash.txt").read_text())
    jsonschema.validate({"nas": parsed}, {**resources, "$defs": schema["$defs"]})


@pytest.mark.parametrize("layout", ["v1", "v2"])
def test_the_loop_reads_its_own_cgroup_s_memory_limit_not_the_machine_s(
    tmp_path: Path, layout: str
) -> None:
    # the loop's own groups (from /proc/self/cgroup, as a shell here sees them) under a cgroup
    # tree of this test's: a 128 MiB limit with 100 MiB used, 40 MiB of it reclaimable file pages
    mib = 2**20
    lines = [line.split(":", 2) for line in Path("/proc/self/cgroup").read_text().splitlines()]
    root = tmp_path / "cgroup"
    if layout == "v2":
        (group,) = [root / path.lstrip("/") for _, controllers, path in lines if not controllers]
        files = {"memory.max": 128 * mib, "memory.current": 100 * mib}
        stat = f"anon 60\nfile 40\ninactive_file {40 * mib}\nactive_file 0\n"
    else:
        memory = [path for _, controllers, path in lines if "memory" in controllers.split(",")]
        if not memory:
            pytest.skip("no cgroup v1 memory controller in this process's groups")
        group = root / "memory" / memory[0].lstrip("/")
        files = {"memory.limit_in_bytes": 128 * mib, "memory.usage_in_bytes": 100 * mib}
        stat = f"cache 40\ninactive_file 1\ntotal_cache 40\ntotal_inactive_file {40 * mib}\n"
    group.mkdir(parents=True, exist_ok=True)
    for name, value in files.items():
        (group / name).write_text(f"{value}\n")
    (group / "memory.stat").write_text(stat)
    out, flag = tmp_path / "out.txt", tmp_path / "run"
    flag.touch()
    loop = sampler.loop_text(str(out), str(flag), 2, cgroup_root=str(root))
    done = LocalRunner().run(["sh", "-c", loop, "nasplan-sampler", ""], timeout_s=20)
    assert done.ok, done.stderr
    result = sampler.parse(out.read_text())
    # (128 - 100 + 40) MiB: what the group may still take, not the machine's MemAvailable
    assert result["mem_available_bytes_min"] == 68 * mib
    # without a limit ("max"), the machine's
    if layout == "v2":
        (group / "memory.max").write_text("max\n")
        out.unlink()
        flag.touch()
        LocalRunner().run(["sh", "-c", loop, "nasplan-sampler", ""], timeout_s=20)
        assert sampler.parse(out.read_text())["mem_available_bytes_min"] > 68 * mib
