"""iperf3's one repetition for real, between two network namespaces: numbers, nothing left."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from nasplan.facts.gather import parse_iperf3_version
from nasplan.measure.kinds.iperf3.repetition import run_repetition
from nasplan.measure.kinds.iperf3.server import READY_MARKER, server_launch_script
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.kinds.iperf3.tool import (
    Iperf3Error,
    server_start_script,
    server_stop_script,
    temp_paths,
)
from nasplan.remote.runner import Launched, LocalRunner, Result


def installed_iperf3_version() -> str:
    said = subprocess.run(["iperf3", "--version"], capture_output=True, text=True, check=True)
    version = parse_iperf3_version(said.stdout.splitlines()[0])
    assert version, said.stdout
    return version


class CountingRunner(LocalRunner):
    """A LocalRunner that counts the servers it launched on their own channel, and keeps the
    scripts it ran."""

    launched = 0

    def __init__(self, name: str, netns: str | None = None) -> None:
        super().__init__(name, netns)
        self.scripts: list[str] = []

    def run_script(self, script: str, **kwargs: Any) -> Result:
        self.scripts.append(script)
        return super().run_script(script, **kwargs)

    def start_until(self, script: str, markers: Sequence[str], *, timeout_s: float) -> Launched:
        self.launched += 1
        return super().start_until(script, markers, timeout_s=timeout_s)


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    """Two namespaces joined by a veth pair: server 198.18.250.1, client 198.18.250.2."""
    tag = uuid.uuid4().hex[:6]
    server_ns, client_ns = f"npt-iperf-s{tag}", f"npt-iperf-c{tag}"
    server_if, client_if = f"nptis{tag}", f"nptic{tag}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)

    try:
        ip("netns", "add", server_ns)
        ip("netns", "add", client_ns)
        ip("link", "add", server_if, "type", "veth", "peer", "name", client_if)
        for ns, ifname, address in (
            (server_ns, server_if, "198.18.250.1/30"),
            (client_ns, client_if, "198.18.250.2/30"),
        ):
            ip("link", "set", ifname, "netns", ns)
            ip("-n", ns, "link", "set", ifname, "name", "eth0")
            ip("-n", ns, "addr", "add", address, "dev", "eth0")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "link", "set", "eth0", "up")
        yield server_ns, client_ns
    finally:
        # deleting a namespace deletes the veth pair with it
        for ns in (server_ns, client_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True, timeout=10)


def _ours() -> set[int]:
    """The inodes of this file's namespaces (``npt-iperf-*``)."""
    netns = Path("/run/netns")
    names = netns.glob("npt-iperf-*") if netns.is_dir() else []
    return {path.stat().st_ino for path in names}


def iperf3_pids() -> set[int]:
    """The running iperf3 processes in this file's namespaces (other labs may run beside)."""
    found, ours = set(), _ours()
    for entry in Path("/proc").iterdir():
        try:
            if (
                entry.name.isdigit()
                and (entry / "comm").read_text().strip() == "iperf3"
                and (entry / "ns" / "net").stat().st_ino in ours
            ):
                status = (entry / "status").read_text()
                if "\nState:\tZ" not in status:
                    found.add(int(entry.name))
        except OSError:
            continue
    return found


def test_run_repetition_for_real_leaves_nothing_behind(namespaces: tuple[str, str]) -> None:
    server_ns, client_ns = namespaces
    server, client = LocalRunner("nas", netns=server_ns), LocalRunner("ws", netns=client_ns)
    before = iperf3_pids()
    token = f"test-{uuid.uuid4().hex[:8]}"
    params = Iperf3Params(duration_s=1, parallel=2, window_bytes=262144, port=5299)
    raw, rep = run_repetition(server, client, "iperf3", "iperf3", "198.18.250.1", params, token)
    assert json.loads(raw)["end"]["sum_received"]["bits_per_second"] == rep["bits_per_second"]
    assert 10**8 < rep["bits_per_second"] < 10**12  # an unshaped veth: sane, not a fixed number
    assert rep["streams"] == 2
    assert iperf3_pids() <= before  # no iperf3 of ours left
    assert not list(Path("/tmp").glob(f"nasplan-iperf3-{token}*"))


def test_run_repetition_launches_a_recent_server_on_its_channel(
    namespaces: tuple[str, str],
) -> None:
    """iperf3 >= 3.7: the server runs in the foreground of its own command, ready once it said
    it listens; the measurement is the same, and nothing of it is left after."""
    server_ns, client_ns = namespaces
    server, client = CountingRunner("nas", netns=server_ns), LocalRunner("ws", netns=client_ns)
    before = iperf3_pids()
    token = f"test-{uuid.uuid4().hex[:8]}"
    params = Iperf3Params(duration_s=1, parallel=2, port=5296)
    version = installed_iperf3_version()
    raw, rep = run_repetition(
        server, client, "iperf3", "iperf3", "198.18.250.1", params, token,
        server_iperf3_version=version, client_iperf3_version=version,
    )  # fmt: skip
    assert server.launched == 1
    # seen to end on its channel: the stop script has no grace left to wait (it naps 10 ms)
    (stop,) = server.scripts
    assert "\ngrace=0\n" in stop
    assert json.loads(raw)["end"]["sum_received"]["bits_per_second"] == rep["bits_per_second"]
    assert 10**8 < rep["bits_per_second"] < 10**12
    assert rep["streams"] == 2
    assert iperf3_pids() <= before
    assert not list(Path("/tmp").glob(f"nasplan-iperf3-{token}*"))


def test_launched_server_never_takes_a_port_someone_else_listens_on(
    namespaces: tuple[str, str], tmp_path: Path
) -> None:
    """A NAS's own iperf3 daemon on the port: the launched server cannot listen, nasplan says
    the port is in use (a busy server, retried), and leaves the other daemon running."""
    server_ns, client_ns = namespaces
    before = iperf3_pids()
    theirs = tmp_path / "theirs.pid"
    subprocess.run(
        ["ip", "netns", "exec", server_ns, "iperf3", "-s", "-D", "-p", "5295", "-I", str(theirs)],
        check=True, timeout=10,
    )  # fmt: skip
    deadline = time.monotonic() + 5
    while not theirs.exists() or not theirs.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    their_pid = int(theirs.read_text())
    try:
        server, client = CountingRunner("nas", netns=server_ns), LocalRunner("ws", netns=client_ns)
        token = f"test-{uuid.uuid4().hex[:8]}"
        pauses: list[float] = []
        with pytest.raises(Iperf3Error, match="iperf3 port 5295 is already in use"):
            run_repetition(
                server, client, "iperf3", "iperf3", "198.18.250.1", Iperf3Params(duration_s=1,
                port=5295), token, server_iperf3_version=installed_iperf3_version(),
                sleep=pauses.append,
            )  # fmt: skip
        assert server.launched == 4 and len(pauses) == 3  # retried as a busy server
        assert their_pid in iperf3_pids()  # theirs: never stopped
        assert iperf3_pids() <= before | {their_pid}  # none of ours left
        assert not list(Path("/tmp").glob(f"nasplan-iperf3-{token}*"))
    finally:
        os.kill(their_pid, 15)


def test_run_repetition_for_real_reports_connection_refused(namespaces: tuple[str, str]) -> None:
    server_ns, client_ns = namespaces
    server, client = LocalRunner("nas", netns=server_ns), LocalRunner("ws", netns=client_ns)
    before = iperf3_pids()
    token = f"test-{uuid.uuid4().hex[:8]}"
    began = time.monotonic()
    with pytest.raises(Iperf3Error, match="unable to connect to server: Connection refused"):
        # the client aims at its own address, where nothing listens
        run_repetition(
            server, client, "iperf3", "iperf3", "198.18.250.2", Iperf3Params(duration_s=1), token
        )
    assert time.monotonic() - began < 5
    assert iperf3_pids() <= before
    assert not list(Path("/tmp").glob(f"nasplan-iperf3-{token}*"))


def listening(namespace: str, port: int) -> bool:
    """Whether TCP ``port`` is in the namespace's LISTEN table (state 0A)."""
    tables = subprocess.run(
        ["ip", "netns", "exec", namespace, "cat", "/proc/net/tcp", "/proc/net/tcp6"],
        capture_output=True, text=True, timeout=10,
    ).stdout  # fmt: skip
    return any(
        line.split()[1].endswith(f":{port:04X}") and line.split()[3] == "0A"
        for line in tables.splitlines()[1:]
        if len(line.split()) > 3
    )


def busybox_shell(tmp_path: Path, alone: bool) -> tuple[str, dict[str, str]]:
    """BusyBox's sh and its environment: a few applets first on PATH (iproute2's `ss` still
    found), or BusyBox alone with iperf3, as on a QTS or DSM shell."""
    busybox, iperf3 = shutil.which("busybox"), shutil.which("iperf3")
    assert busybox and iperf3, "make test installs busybox and iperf3"
    applets = tmp_path / "busybox-bin"
    applets.mkdir()
    listed = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    few = ("sh", "sleep", "grep", "cat", "rm", "hostname", "kill")
    for applet in listed.stdout.split() if alone else few:
        (applets / applet).symlink_to(busybox)
    if alone:
        (applets / "iperf3").symlink_to(iperf3)
    path = str(applets) if alone else f"{applets}:{os.environ['PATH']}"
    return str(applets / "sh"), {**os.environ, "PATH": path}


@pytest.mark.parametrize("alone", [False, True], ids=["applets-first", "busybox-alone"])
def test_server_scripts_under_busybox_start_and_kill_an_idle_server(
    namespaces: tuple[str, str], tmp_path: Path, alone: bool
) -> None:
    """BusyBox applets first on PATH (iproute2's ss still found), and BusyBox alone, as on a QTS
    or DSM shell: no ss, the server's readiness read from /proc/net/tcp."""
    server_ns, _ = namespaces
    shell, env = busybox_shell(tmp_path, alone)
    pidfile, logfile = temp_paths(f"bb-{uuid.uuid4().hex[:8]}", 5298)

    ip = shutil.which("ip") or "ip"  # iproute2's, not BusyBox's (the PATH given to the shell)

    def in_ns(script: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ip, "netns", "exec", server_ns, shell, "-c", script],
            env=env, capture_output=True, text=True, timeout=30,
        )  # fmt: skip

    started = in_ns(server_start_script("iperf3", 5298, pidfile, logfile))
    assert started.returncode == 0, started.stderr
    pid = int(Path(pidfile).read_text())
    assert pid in iperf3_pids()
    # ready means listening already: the port is in the namespace's LISTEN table (0A)
    assert listening(server_ns, 5298)
    stopped = in_ns(server_stop_script(pidfile, logfile, grace_s=0))
    assert stopped.returncode == 0
    assert pid not in iperf3_pids()
    assert not Path(pidfile).exists() and not Path(logfile).exists()


@pytest.mark.parametrize("alone", [False, True], ids=["applets-first", "busybox-alone"])
def test_launch_script_under_busybox_says_when_it_listens(
    namespaces: tuple[str, str], tmp_path: Path, alone: bool
) -> None:
    """The launched server under BusyBox's sh: ready when iperf3 says it listens (the port is
    then in the LISTEN table), its PID in the pidfile, stopped by the stop script, which ends
    the script that waited for it."""
    server_ns, _ = namespaces
    shell, env = busybox_shell(tmp_path, alone)
    pidfile, logfile = temp_paths(f"bbl-{uuid.uuid4().hex[:8]}", 5294)
    ip = shutil.which("ip") or "ip"
    script = server_launch_script("iperf3", 5294, pidfile, logfile)
    proc = subprocess.Popen(
        [ip, "netns", "exec", server_ns, shell, "-c", script],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        said = b""
        while READY_MARKER.encode() not in said:
            chunk = proc.stdout.read1(4096)
            assert chunk, f"ended before it listened: {said!r}"
            said += chunk
        server = int(Path(pidfile).read_text())
        assert server in iperf3_pids()  # the script runs it and waits for it
        assert proc.poll() is None
        assert listening(server_ns, 5294)
        stopped = subprocess.run(
            [ip, "netns", "exec", server_ns, shell, "-c",
             server_stop_script(pidfile, logfile, grace_s=0)],
            env=env, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert stopped.returncode == 0
        assert proc.wait(timeout=10) != 0  # its server killed, not ended by itself
        assert server not in iperf3_pids()
        assert not Path(pidfile).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
