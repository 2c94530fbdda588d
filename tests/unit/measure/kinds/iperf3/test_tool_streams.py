"""iperf3's per-stream figures (end.streams[].sender): what bounds one TCP stream."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nasplan.measure.kinds.iperf3 import multi as iperf3_multi
from nasplan.measure.kinds.iperf3.tool import parse, repetition_fields

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3"


def parsed(name: str) -> dict:
    return parse((FIXTURES / name).read_text())


def test_each_stream_s_window_and_rtt_of_a_small_socket_window() -> None:
    (stream,) = parsed("3.12/tcp-window-8k.json")["per_stream"]
    assert stream == {
        "bits_per_second": 6581294251.29198,
        "retransmits": 16,
        "max_snd_cwnd_bytes": 217200,
        "max_snd_wnd_bytes": 11584,  # the receiver's window: -w 8K on both ends
        "min_rtt_us": 10,
        "mean_rtt_us": 11,
        "max_rtt_us": 12,
    }


def test_four_streams_are_four_rows_that_add_up_to_the_sum() -> None:
    result = parsed("3.12/tcp-window-8k-parallel-4.json")
    streams = result["per_stream"]
    assert len(streams) == 4 and {s["max_snd_wnd_bytes"] for s in streams} == {11584}
    assert sum(s["bits_per_second"] for s in streams) == result["sent_bits_per_second"]
    assert repetition_fields(result)["per_stream"] == streams  # kept in run.json


def test_a_reverse_run_has_no_sender_figures_in_the_client_s_output() -> None:
    raw = json.loads((FIXTURES / "3.12/tcp-window-16k-reverse.json").read_text())
    assert raw["end"]["streams"][0]["sender"]["max_snd_cwnd"] == 0  # zeros, not the server's
    assert parsed("3.12/tcp-window-16k-reverse.json")["per_stream"] is None


def test_bidir_keeps_only_the_streams_the_client_sent_on() -> None:
    (stream,) = parsed("3.12/tcp-bidir.json")["per_stream"]
    assert stream["mean_rtt_us"] == 1611 and stream["max_snd_wnd_bytes"] == 4939776


def test_iperf3_3_1_3_has_no_advertised_window_and_udp_no_streams() -> None:
    first, second = parsed("3.1.3/tcp-parallel-2.json")["per_stream"]
    assert first["max_snd_cwnd_bytes"] == 785796 and first["max_snd_wnd_bytes"] is None
    assert second["mean_rtt_us"] == 89
    assert parsed("3.12/udp-100m.json")["per_stream"] is None


def test_one_process_per_stream_keeps_every_process_s_stream() -> None:
    one = parsed("3.12/tcp-window-8k.json")
    combined = iperf3_multi.combine([one, one])
    assert combined["per_stream"] == one["per_stream"] * 2


def test_the_parallel_clients_and_their_outputs_directory_are_registered_in_the_host_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a killed run's parallel clients leave is listed where the next run looks for it."""
    node = f"multireg-{os.getpid()}"
    stub = tmp_path / "uname"  # the lock is /tmp/nasplan-$(uname -n).lock: one of this test's own
    stub.write_text(f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec /bin/uname "$@"\n')
    stub.chmod(0o755)
    fake = tmp_path / "iperf3"
    fake.write_text("#!/bin/sh\necho '{}'\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    lock_dir = Path(f"/tmp/nasplan-{node}.lock")
    lock_dir.mkdir()
    try:
        argvs = [[str(fake), "-J", "-c", "198.19.240.1", "-p", str(p)] for p in (5201, 5202)]
        done = subprocess.run(
            ["sh", "-c", iperf3_multi.client_script(argvs, [5201, 5202])],
            capture_output=True, text=True, check=True, timeout=30,
        )  # fmt: skip
        (directory,) = (lock_dir / "files").read_text().split()
        assert directory.startswith("/tmp/nasplan-iperf3-multi.")
        assert not Path(directory).exists()  # the script itself removed it, having ended well
        pids = [line.split(" ", 1) for line in (lock_dir / "pids").read_text().splitlines()]
        tokens = [token for pid, token in pids if pid != "-"]  # "-": the directory, no process
        assert tokens == ["-J -c 198.19.240.1 -p 5201", "-J -c 198.19.240.1 -p 5202"]
        assert done.stdout.count(iperf3_multi.MARKER) == 2
    finally:
        shutil.rmtree(lock_dir, ignore_errors=True)
