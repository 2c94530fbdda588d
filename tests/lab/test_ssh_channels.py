"""Commands on one SSH connection (nasplan.remote.ssh) against a real sshd: nothing nasplan sends
for a command may reach the host after that command's channel is closed, whatever the timing.

paramiko answers the host's CLOSE from its own thread; a command's thread that is descheduled
between building its EOF and sending it (a loaded machine) used to send the EOF after that
CLOSE: sshd then dropped the whole connection ("packet referred to nonexistent channel"), and
every command on it failed ("Channel is not open"), or the EOF hit the next channel sshd gave
the same number. The tests hold each EOF back to make that timing certain.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import paramiko
import pytest
from paramiko.common import cMSG_CHANNEL_EOF, cMSG_CHANNEL_REQUEST

from nasplan.input.inventory import load_inventory
from nasplan.lab import LabState
from nasplan.remote.ssh import SshRunner, connect

LAB = {
    "name": "rcch",
    "lan": {"prefix": "198.19.33.0/24", "rate": "1G"},
    "hosts": {"rcch1": {"personality": "debian"}},
    "links": [],
}
LATE_S = 0.3


@pytest.fixture(scope="module")
def lab(running_lab: Any) -> Iterator[LabState]:
    with running_lab(LAB) as state:
        yield state


@pytest.fixture
def runner(lab: LabState) -> Iterator[SshRunner]:
    opened = connect(load_inventory(lab.inventory_path).hosts["rcch1"])
    try:
        yield opened
    finally:
        opened.close()


def hold_back_eofs(runner: SshRunner, monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Delay every EOF a command's own thread sends by LATE_S (paramiko's transport thread, which
    answers the host's CLOSE, is not delayed); returns the list of when each was held."""
    transport = runner.connection.client.get_transport()
    assert transport is not None
    send = transport._send_user_message
    held: list[float] = []

    def late(message: paramiko.Message) -> None:
        is_eof = message.asbytes()[:1] == cMSG_CHANNEL_EOF
        if is_eof and threading.current_thread() is not transport:
            held.append(time.monotonic())
            time.sleep(LATE_S)
        send(message)

    monkeypatch.setattr(transport, "_send_user_message", late)
    return held


def sshd_complaints(lab: LabState) -> list[str]:
    log = (lab.host_dir("rcch1") / "sshd.log").read_text(errors="replace")
    return [line for line in log.splitlines() if "nonexistent channel" in line]


def test_a_late_eof_never_follows_the_close(
    lab: LabState, runner: SshRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    held = hold_back_eofs(runner, monkeypatch)
    before = sshd_complaints(lab)
    for index in range(3):
        assert runner.run_script(f"echo {index}").stdout == f"{index}\n"
    # With input: the EOF must be sent, and still arrives before the host closes.
    assert runner.run_script("cat", stdin="fed\n").stdout == "fed\n"
    assert runner.run_script("read -r line; echo got $line", stdin="one\ntwo\n").stdout == (
        "got one\n"
    )
    assert runner.run_script("exit 3", stdin="x").exited == 3
    assert runner.lost is None
    assert sshd_complaints(lab) == before
    # the EOFs of the commands with input were held back (and any a command's thread sent
    # together with its CLOSE when it closed the channel first: those two go in order)
    assert len(held) >= 3


def test_a_command_without_input_reads_nothing_and_ends(runner: SshRunner) -> None:
    started = time.monotonic()
    result = runner.run_script("cat; echo done")
    assert (result.stdout, result.exited) == ("done\n", 0)
    assert time.monotonic() - started < 5


def test_threads_at_once_on_one_connection_with_late_eofs(
    lab: LabState, runner: SshRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    hold_back_eofs(runner, monkeypatch)
    before = sshd_complaints(lab)
    failures: list[str] = []

    def work(index: int) -> None:
        for turn in range(8):
            try:
                if turn % 2:
                    result = runner.run_script("cat", stdin=f"{index}-{turn}\n")
                    expected = f"{index}-{turn}\n"
                else:
                    result = runner.run_script(f"echo {index}-{turn}")
                    expected = f"{index}-{turn}\n"
            except Exception as exc:  # a lost connection fails every thread: say which
                failures.append(f"{index}-{turn}: {exc}")
                return
            if (result.stdout, result.exited) != (expected, 0):
                failures.append(f"{index}-{turn}: {result}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert runner.lost is None
    assert sshd_complaints(lab) == before


def late_exec_requests(
    runner: SshRunner, monkeypatch: pytest.MonkeyPatch, delay_s: float | None
) -> None:
    """Exec requests reach the host ``delay_s`` late (None: never), so their answers come that
    late, while the connection itself keeps answering (a channel opens at once)."""
    transport = runner.connection.client.get_transport()
    assert transport is not None
    send = transport._send_user_message

    def late(message: paramiko.Message) -> None:
        data = message.asbytes()
        if data[:1] != cMSG_CHANNEL_REQUEST or data[5:13] != b"\x00\x00\x00\x04exec":
            send(message)
        elif delay_s is not None:
            threading.Timer(delay_s, send, args=(message,)).start()

    monkeypatch.setattr(transport, "_send_user_message", late)


def test_a_slow_exec_answer_does_not_end_the_commands_beside_it(
    lab: LabState, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One command's exec answered later than the channel timeout (a loaded host) used to make
    nasplan close the whole connection: every other command on it failed, the host was lost."""
    monkeypatch.setenv("NASPLAN_CHANNEL_S", "1")
    runner = connect(load_inventory(lab.inventory_path).hosts["rcch1"])
    try:
        late_exec_requests(runner, monkeypatch, 1.6)
        results: dict[str, object] = {}

        def run(name: str, script: str) -> None:
            try:
                results[name] = runner.run_script(script, timeout_s=10).stdout
            except Exception as exc:
                results[name] = exc

        threads = [
            threading.Thread(target=run, args=("long", "sleep 2; echo slept")),
            threading.Thread(target=run, args=("renewal", "echo renewed")),
        ]
        threads[0].start()
        time.sleep(0.2)
        threads[1].start()
        for thread in threads:
            thread.join()
        assert results == {"long": "slept\n", "renewal": "renewed\n"}
        assert runner.lost is None
    finally:
        runner.close()


def test_an_exec_never_answered_times_out_alone_and_the_host_stays(
    lab: LabState, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NASPLAN_CHANNEL_S", "1")
    runner = connect(load_inventory(lab.inventory_path).hosts["rcch1"])
    try:
        with monkeypatch.context() as patched:
            late_exec_requests(runner, patched, None)
            started = time.monotonic()
            result = runner.run_script("echo never", timeout_s=2.5)
            assert result.exited == 124 and "timed out after 2.5 s" in result.stderr
            assert 2.5 <= time.monotonic() - started < 6
        assert runner.lost is None
        assert runner.run_script("echo after").stdout == "after\n"
    finally:
        runner.close()


def test_the_first_command_on_a_new_connection_is_not_held_back_by_a_delayed_ack(
    lab: LabState,
) -> None:
    """sshd announces its host keys as the first channel opens; unanswered, the client's delayed
    ACK (40 ms) held sshd's answer back, and every connection's first command (the facts) took
    ~45 ms instead of a few. Compared with the second command on the same connection."""
    host = load_inventory(lab.inventory_path).hosts["rcch1"]
    firsts, seconds = [], []
    for _ in range(5):
        runner = connect(host)
        try:
            for times in (firsts, seconds):
                began = time.perf_counter()
                assert runner.run_script("true").ok
                times.append(time.perf_counter() - began)
        finally:
            runner.close()
    firsts.sort()
    seconds.sort()
    assert firsts[2] < seconds[2] + 0.02, (firsts, seconds)


def test_an_idle_connection_wakes_its_reader_about_once_a_second_and_closes_at_once(
    runner: SshRunner,
) -> None:
    """paramiko's reader thread woke ten times a second on an idle connection (to see whether
    it was closed): with 30 hosts, ~23 ms of CPU a second and as many GIL hand-overs taken from
    the thread running the plan. Now about once a second; commands and close stay prompt."""
    transport = runner.connection.client.get_transport()
    assert transport is not None
    wakes: list[float] = []
    check = transport.packetizer._check_keepalive

    def counted() -> None:
        wakes.append(time.monotonic())
        check()

    transport.packetizer._check_keepalive = counted  # type: ignore[method-assign]
    assert runner.run_script("true").ok
    time.sleep(2.5)
    assert 1 <= len(wakes) <= 4, wakes  # ten a second before: ~25
    began = time.perf_counter()
    assert runner.run_script("echo hi").stdout == "hi\n"  # a packet wakes it at once
    assert time.perf_counter() - began < 0.5
    began = time.perf_counter()
    runner.close()
    assert time.perf_counter() - began < 0.3  # close does not wait for the reader's next wake
    assert not transport.is_active()
