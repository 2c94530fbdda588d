"""Several threads running commands at once on ONE SSH connection, counted by failure message
(needs root: it uses the lab).

nasplan runs commands on a host from more than one thread over the host's one connection (the
lease renewals beside the test's own commands). This drives that: ``--threads`` threads each run
``--commands`` short commands through nasplan's own ``SshRunner`` (``--via nasplan``) or through
bare paramiko on the same kind of connection (``--via paramiko``), optionally while ``--load``
busy-loop processes (started here, killed by PID at the end) keep the CPUs full. A connection
on which a command failed is counted, closed and replaced (a "round"); the failures are counted
by message and the paramiko DEBUG lines before the first few are printed.
``--channel-s`` sets nasplan's channel timeout (NASPLAN_CHANNEL_S): a short one makes an exec
reply slowed by the load outlast it, which is what the exec watchdog reacts to.

    sudo .venv/bin/python bench/channel_stress.py --threads 4 --commands 200 --load 2
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import paramiko
import yaml

from nasplan import lab
from nasplan.errors import HostLostError
from nasplan.input.inventory import Host, load_inventory
from nasplan.remote import ssh
from nasplan.remote.timeouts import Timeouts

LAB = {
    "name": "rcst",
    "description": "one host: many channels at once on one SSH connection",
    "lan": {"prefix": "198.19.32.0/24", "rate": "1G"},
    "hosts": {"rc1": {"personality": "debian"}},
    "links": [],
}
# What nasplan's commands look like: a no-op, some output, a detached process started the way a
# sampler or an iperf3 server is (its PID printed), input on stdin read back.
SCRIPTS: list[tuple[str, str | None]] = [
    ("true", None),
    ("echo out; echo err >&2", None),
    ("nohup sh -c 'sleep 0.2' >/dev/null 2>&1 </dev/null & echo $!", None),
    ("cat", "fed on stdin\n"),
]
DEBUG_LINES = 60
# A command that has not ended by then is counted as a failure (hung), not waited for.
COMMAND_TIMEOUT_S = 15.0


class RingHandler(logging.Handler):
    """Keeps the last ``size`` paramiko log lines (all threads) to print when something fails."""

    def __init__(self, size: int) -> None:
        super().__init__(logging.DEBUG)
        self.lines: collections.deque[str] = collections.deque(maxlen=size)
        self.setFormatter(logging.Formatter("%(relativeCreated)9.1f %(threadName)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@dataclass
class Tally:
    """Counts across rounds: commands run, failures by message, the slowest command."""

    commands: int = 0
    rounds: int = 0
    failures: collections.Counter[str] = field(default_factory=collections.Counter)
    slowest_s: float = 0.0
    traces: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ok(self, seconds: float) -> None:
        with self.lock:
            self.commands += 1
            self.slowest_s = max(self.slowest_s, seconds)

    def failed(self, message: str, trace: list[str]) -> None:
        with self.lock:
            self.commands += 1
            # one key per kind of failure: numbers (channel ids, seconds) vary
            self.failures[re.sub(r"\d+(\.\d+)?", "N", message)] += 1
            if len(self.traces) < 3:
                self.traces.append(f"--- {message}\n" + "\n".join(trace))


def nasplan_worker(
    host: Host, timeouts: Timeouts
) -> tuple[Callable[[str, str | None], str], Callable[[], None]]:
    """(run one command -> its stdout, close) over one nasplan SshRunner."""
    os.environ["NASPLAN_CHANNEL_S"] = f"{timeouts.channel_s:g}"
    runner = ssh.connect(host)

    def run(script: str, stdin: str | None) -> str:
        result = runner.run_script(script, stdin=stdin, timeout_s=COMMAND_TIMEOUT_S)
        if result.exited != 0:
            raise RuntimeError(f"exit {result.exited}: {result.stderr.strip()}")
        return result.stdout

    return run, runner.close


def paramiko_worker(
    host: Host, timeouts: Timeouts
) -> tuple[Callable[[str, str | None], str], Callable[[], None]]:
    """(run one command -> its stdout, close) with bare paramiko on a connection set up as
    nasplan's (the same connect, TCP_NODELAY): open a channel, exec, feed, read, close."""
    runner = ssh.connect(host)
    transport = runner.connection.client.get_transport()
    assert transport is not None

    def run(script: str, stdin: str | None) -> str:
        channel = transport.open_session(timeout=timeouts.channel_s)
        channel.settimeout(COMMAND_TIMEOUT_S)
        try:
            channel.exec_command(script)
            if stdin:
                channel.sendall(stdin.encode())
            channel.shutdown_write()
            out = channel.makefile("rb").read()
            status = channel.recv_exit_status()
        finally:
            channel.close()
        if status != 0:
            raise RuntimeError(f"exit {status}")
        return out.decode()

    return run, runner.close


@contextmanager
def cpu_load(processes: int) -> Iterator[list[int]]:
    """``processes`` busy loops (nice 0) for the block; killed by their PIDs afterwards."""
    procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()


def one_round(
    make: Callable[..., tuple[Callable[[str, str | None], str], Callable[[], None]]],
    host: Host,
    timeouts: Timeouts,
    threads: int,
    budget: list[int],
    tally: Tally,
    ring: RingHandler,
) -> None:
    """Threads run commands on one connection until the budget is spent or one fails."""
    run, close = make(host, timeouts)
    broken = threading.Event()
    budget_lock = threading.Lock()

    def worker(index: int) -> None:
        turn = index
        while not broken.is_set():
            with budget_lock:
                if budget[0] <= 0:
                    return
                budget[0] -= 1
            script, stdin = SCRIPTS[turn % len(SCRIPTS)]
            turn += 1
            started = time.monotonic()
            try:
                out = run(script, stdin)
                if stdin and out != stdin:
                    raise RuntimeError(f"stdin came back as {out!r}")
            except (HostLostError, paramiko.SSHException, OSError, EOFError, RuntimeError) as exc:
                if not broken.is_set():
                    broken.set()
                    tally.failed(f"{type(exc).__name__}: {exc}", list(ring.lines))
                return
            tally.ok(time.monotonic() - started)

    workers = [
        threading.Thread(target=worker, args=(i,), name=f"worker{i}", daemon=True)
        for i in range(threads)
    ]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    close()
    tally.rounds += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--commands", type=int, default=400, help="in all, over the threads")
    parser.add_argument("--load", type=int, default=0, help="busy-loop processes meanwhile")
    parser.add_argument("--via", choices=("nasplan", "paramiko", "both"), default="both")
    parser.add_argument("--channel-s", type=float, default=Timeouts().channel_s)
    args = parser.parse_args()
    ring = RingHandler(DEBUG_LINES)
    paramiko_log = logging.getLogger("paramiko")
    paramiko_log.setLevel(logging.DEBUG)
    paramiko_log.addHandler(ring)
    timeouts = Timeouts(channel_s=args.channel_s)
    makers = {"nasplan": nasplan_worker, "paramiko": paramiko_worker}
    chosen = list(makers) if args.via == "both" else [args.via]
    with tempfile.TemporaryDirectory(prefix="nasplan-race-") as tmp:
        workdir = Path(tmp)
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(LAB))
        state = lab.up(lab_file, workdir / "state")
        try:
            host = load_inventory(state.inventory_path).hosts["rc1"]
            sshd_log = workdir / "state/hosts/rc1/sshd.log"
            with cpu_load(args.load) as pids:
                print(f"load: {len(pids)} busy loops (PIDs {pids})", flush=True)
                for via in chosen:
                    tally = Tally()
                    log_offset = sshd_log.stat().st_size if sshd_log.exists() else 0
                    budget = [args.commands]
                    started = time.monotonic()
                    while budget[0] > 0:
                        one_round(makers[via], host, timeouts, args.threads, budget, tally, ring)
                    wall_s = time.monotonic() - started
                    report(via, args, tally, wall_s)
                    sshd_said(sshd_log, log_offset)
        finally:
            lab.down(lab_file, workdir / "state")


def report(via: str, args: argparse.Namespace, tally: Tally, wall_s: float) -> None:
    failed = sum(tally.failures.values())
    print(
        f"\n{via}: {tally.commands} commands, {args.threads} threads on one connection, "
        f"load {args.load}, channel_s {args.channel_s:g}: {failed} failed, "
        f"{tally.rounds} connection(s), slowest command {tally.slowest_s:.2f} s, "
        f"{wall_s:.1f} s wall"
    )
    for message, count in tally.failures.most_common():
        print(f"  {count:5d}  {message}")
    for trace in tally.traces:
        print(trace)


def sshd_said(log: Path, offset: int) -> None:
    """What the host's sshd logged meanwhile, but the logins: counted by kind of line."""
    if not log.exists():
        return
    with log.open("rb") as handle:
        handle.seek(offset)
        lines = handle.read().decode(errors="replace").splitlines()
    said = collections.Counter(
        re.sub(r"\d+(\.\d+)*", "N", line)
        for line in lines
        if line.strip() and not line.startswith("Accepted publickey")
    )
    print("  sshd:" + ("" if said else " nothing but the logins"))
    for line, count in said.most_common():
        print(f"  {count:5d}  {line}")


if __name__ == "__main__":
    main()
