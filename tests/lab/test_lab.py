"""The simulated lab for real: sshd with strict host keys, shaped throughput, up/down, errors."""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import paramiko
import pytest
import yaml
from click.testing import CliRunner

from nasplan import lab
from nasplan.cli import main as nasplan_main
from nasplan.errors import LabError
from nasplan.lab import netns, sshd
from nasplan.lab.cli import lab as lab_cli
from nasplan.lab.model import load_lab
from nasplan.lab.state import HostState, LabState

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_LAB = ROOT / "plans/examples/lab.yaml"
GBIT = 1e9
IPERF_PORT = 5299


def ssh(
    state: LabState, host: str, command: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """The system ssh client, as a user would run it with the lab's ssh_config."""
    argv = ["ssh", "-F", str(state.ssh_config_path), "-o", "BatchMode=yes", *options, host, command]
    return subprocess.run(argv, capture_output=True, text=True, timeout=20, check=False)


def paramiko_client(state: LabState, known_hosts: Path) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    client.load_host_keys(str(known_hosts))
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    return client


def wait_listening(namespace: str, port: int, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        out = subprocess.run(
            ["ss", "-N", namespace, "-Hltn", f"sport = :{port}"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        if out.strip():
            return
        time.sleep(0.05)
    raise AssertionError(f"iperf3 server not listening in {namespace} after {timeout_s} s")


def iperf3_bits_per_second(server: HostState, address: str, client: HostState) -> float:
    """Receiver throughput of a 2 s TCP iperf3 run from ``client`` to ``server``'s ``address``."""
    server_argv = ["iperf3", "-s", "-1", "-B", address, "-p", str(IPERF_PORT)]
    proc = subprocess.Popen(
        ["ip", "netns", "exec", server.namespace, *server_argv],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_listening(server.namespace, IPERF_PORT)
        client_argv = ["iperf3", "-c", address, "-p", str(IPERF_PORT), "-t", "2", "-J"]
        out = subprocess.run(
            ["ip", "netns", "exec", client.namespace, *client_argv],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
        return float(json.loads(out)["end"]["sum_received"]["bits_per_second"])
    finally:
        proc.terminate()
        proc.wait(timeout=5)


def lab_leftovers(state: LabState) -> dict[str, list[str]]:
    return {
        "namespaces": [n for n in netns.list_namespaces() if n.startswith(state.namespace_prefix)],
        "links": [n for n in netns.root_links() if n.startswith(state.link_prefix)],
    }


def test_system_ssh_reaches_each_host_in_its_namespace(example_lab: LabState) -> None:
    for name, host in example_lab.hosts.items():
        proc = ssh(example_lab, name, "hostname; ip -4 -o addr show dev eth0")
        assert proc.returncode == 0, proc.stderr
        hostname, address_line = proc.stdout.splitlines()
        assert hostname == name
        assert f"inet {host.address} " in address_line


def test_paramiko_connects_with_reject_policy_and_generated_known_hosts(
    example_lab: LabState,
) -> None:
    nas = example_lab.hosts["nas"]
    client = paramiko_client(example_lab, example_lab.known_hosts_path)
    try:
        client.connect(
            nas.ip,
            username="root",
            key_filename=str(example_lab.identity_path),
            look_for_keys=False,
            allow_agent=False,
            timeout=10,
        )
        _, stdout, _ = client.exec_command("ip -4 -o addr show dev eth1")
        assert "inet 198.18.11.1/30 " in stdout.read().decode()
    finally:
        client.close()
    assert oct(example_lab.identity_path.stat().st_mode & 0o777) == "0o600"


def test_wrong_known_hosts_entry_is_refused(example_lab: LabState, tmp_path: Path) -> None:
    nas, ws = example_lab.hosts["nas"], example_lab.hosts["ws"]
    lines = example_lab.known_hosts_path.read_text().splitlines()
    ws_key = next(line for line in lines if line.startswith(f"{ws.ip} ")).split(" ", 1)[1]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"{nas.ip} {ws_key}\n")

    proc = ssh(example_lab, "nas", "true", "-o", f"UserKnownHostsFile={wrong}")
    assert proc.returncode == 255
    assert "Host key verification failed" in proc.stderr

    client = paramiko_client(example_lab, wrong)
    with pytest.raises(paramiko.BadHostKeyException):
        client.connect(
            nas.ip,
            username="root",
            key_filename=str(example_lab.identity_path),
            look_for_keys=False,
            allow_agent=False,
            timeout=10,
        )
    client.close()


def test_lan_is_shaped_to_1g(example_lab: LabState) -> None:
    nas, ws = example_lab.hosts["nas"], example_lab.hosts["ws"]
    bits_per_second = iperf3_bits_per_second(nas, nas.ip, ws)
    # tc-framing TCP maximum at 1G/1500 is 956 Mbit/s; unshaped veth gives well over 10 Gbit/s.
    assert 0.85 * GBIT < bits_per_second < 1.0 * GBIT


def test_p2p_link_is_shaped_to_10g(example_lab: LabState) -> None:
    nas, ws = example_lab.hosts["nas"], example_lab.hosts["ws"]
    bits_per_second = iperf3_bits_per_second(nas, "198.18.11.1", ws)
    assert 3 * GBIT < bits_per_second < 10 * GBIT


def test_reshape_changes_measured_rate_and_inventory(example_lab: LabState) -> None:
    nas, ws = example_lab.hosts["nas"], example_lab.hosts["ws"]
    try:
        lab.reshape(example_lab.state_dir, "p2p", "2G")
        inventory = yaml.safe_load(example_lab.inventory_path.read_text())
        assert inventory["hosts"]["ws"]["interfaces"]["p2p"]["speed"] == "2G"
        bits_per_second = iperf3_bits_per_second(nas, "198.18.11.1", ws)
        assert 1.7 * GBIT < bits_per_second < 2.0 * GBIT
    finally:
        lab.reshape(example_lab.state_dir, "p2p", "10G")
    inventory = yaml.safe_load(example_lab.inventory_path.read_text())
    assert inventory["hosts"]["ws"]["interfaces"]["p2p"]["speed"] == "10G"


def test_up_twice_is_harmless(example_lab: LabState) -> None:
    again = lab.up(Path(example_lab.lab_file), example_lab.state_dir)
    assert again.pids == example_lab.pids
    assert all(netns.pid_alive(pid) for pid in again.pids)
    assert ssh(example_lab, "ws", "true").returncode == 0


def test_status_shows_hosts_namespaces_sshd_and_links(example_lab: LabState) -> None:
    result = CliRunner().invoke(
        lab_cli, ["status", example_lab.lab_file, "--state-dir", str(example_lab.state_dir)]
    )
    assert result.exit_code == 0, result.output
    nas_line = next(line for line in result.output.splitlines() if "host nas" in line)
    assert (
        example_lab.hosts["nas"].namespace in nas_line
        and f"{example_lab.hosts['nas'].sshd_pid} running" in nas_line
    )
    p2p_line = next(line for line in result.output.splitlines() if "link p2p" in line)
    assert "10G" in p2p_line and "10.00 Gbit/s" in p2p_line


def test_lan_prefix_in_use_is_refused_before_anything_is_made(
    example_lab: LabState, tmp_path: Path
) -> None:
    lab_file = tmp_path / "clash.yaml"
    clash = EXAMPLE_LAB.read_text().replace("name: nas-lab", "name: clash")
    lab_file.write_text(clash.replace("198.18.0.0/24", "198.18.10.0/24"))
    namespaces_before = netns.list_namespaces()
    # The example lab's bridge holds 198.18.10.1/24, the LAN prefix this lab asks for too.
    with pytest.raises(LabError, match=r"overlaps 198\.18\.10\.1/24"):
        lab.up(lab_file, tmp_path / "state")
    assert netns.list_namespaces() == namespaces_before
    assert not (tmp_path / "state").exists()


DOWN_LAB = {
    "name": "down-test",
    "lan": {"prefix": "198.18.21.0/24", "rate": "100M"},
    "hosts": {"x": {"personality": "qnap"}, "y": {}},
    "links": [{"name": "t", "rate": "1G", "a": {"host": "x", "interface": "t0"},
               "b": {"host": "y", "interface": "t0"}}],
}  # fmt: skip


def test_down_leaves_nothing_even_when_pieces_are_already_gone(tmp_path: Path) -> None:
    lab_file = tmp_path / "down.yaml"
    lab_file.write_text(yaml.safe_dump(DOWN_LAB))
    state = lab.up(lab_file, tmp_path / "state")
    try:
        stray = subprocess.Popen(["ip", "netns", "exec", state.hosts["x"].namespace, "sleep", "60"])
        # `ip netns exec` enters the namespace a moment after Popen returns: wait until it has.
        deadline = time.monotonic() + 5
        while stray.pid not in netns.namespace_pids(state.hosts["x"].namespace):
            assert time.monotonic() < deadline, "the stray process never entered the namespace"
            time.sleep(0.02)
        # A half-broken lab: one namespace deleted by hand while its sshd still runs.
        subprocess.run(["ip", "netns", "delete", state.hosts["y"].namespace], check=True)
    finally:
        lab.down(lab_file, tmp_path / "state")
    stray.wait(timeout=5)
    assert lab_leftovers(state) == {"namespaces": [], "links": []}
    assert [pid for pid in state.pids if netns.pid_alive(pid)] == []
    assert not state.state_dir.exists()
    lab.down(lab_file, tmp_path / "state")  # idempotent


def test_deleting_a_veth_the_kernel_is_already_removing_is_no_failure() -> None:
    # A namespace's deletion takes its veth ends with it a moment later, in the kernel: lab down
    # deleting the root-side end in that moment must neither fail nor leave the link behind.
    for attempt in range(20):
        namespace, root_end, inner_end = (f"npl-ld-ns{attempt}", "npl-ld-r0", "npl-ld-i0")
        subprocess.run(["ip", "netns", "add", namespace], check=True)
        try:
            subprocess.run(
                ["ip", "link", "add", root_end, "type", "veth", "peer", "name", inner_end],
                check=True,
            )
            subprocess.run(["ip", "link", "set", inner_end, "netns", namespace], check=True)
        finally:
            subprocess.run(["ip", "netns", "delete", namespace], check=True)
        netns.delete_link(root_end)
        assert not netns.link_exists(root_end)


def test_failure_half_way_undoes_everything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    started: list[int] = []
    real_start = sshd.start

    def start(namespace: str, wrapper: Path, log_path: Path, cgroup: Path | None = None) -> int:
        started.append(real_start(namespace, wrapper, log_path, cgroup))
        return started[-1]

    def never_ready(address: str, pid: int, log_path: Path, timeout_s: float = 10.0) -> None:
        raise LabError(f"sshd for {address} not listening (injected)")

    monkeypatch.setattr(sshd, "start", start)
    monkeypatch.setattr(sshd, "wait_ready", never_ready)
    lab_file = tmp_path / "fail.yaml"
    lab_file.write_text(yaml.safe_dump({**DOWN_LAB, "name": "fail-test"}))
    with pytest.raises(LabError, match=r"lab up failed and was undone: .*\(injected\)"):
        lab.up(lab_file, tmp_path / "state")
    names = load_lab(lab_file).names
    assert len(started) == 2
    assert [pid for pid in started if netns.pid_alive(pid)] == []
    assert [n for n in netns.list_namespaces() if n.startswith(names.namespace_prefix)] == []
    assert [n for n in netns.root_links() if n.startswith(names.link_prefix)] == []
    assert not (tmp_path / "state").exists()


def test_non_root_user_gets_a_clear_error_without_traceback() -> None:
    # load what validation needs while still root: nobody cannot read the venv (nor this
    # session's cache of valid documents: validated again, by what was imported here)
    import jsonschema  # noqa: F401

    load_lab(EXAMPLE_LAB)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child process
        try:
            os.close(read_fd)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            result = CliRunner().invoke(nasplan_main, ["lab", "up", str(EXAMPLE_LAB)])
            payload = {"exit_code": result.exit_code, "output": result.output}
            os.write(write_fd, json.dumps(payload).encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd) as pipe:
        payload = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert payload["exit_code"] == 1
    assert payload["output"].strip() == "nasplan: nasplan lab needs root (network namespaces)"


def test_up_again_repairs_a_lab_whose_sshd_died(
    make_lab: Callable[[dict[str, Any]], LabState],
) -> None:
    spec = {
        "name": "repair-test",
        "lan": {"prefix": "198.18.22.0/24", "rate": "1G"},
        "hosts": {"solo": {"personality": "truenas"}},
    }
    state = make_lab(spec)
    old_pid = state.hosts["solo"].sshd_pid
    assert old_pid is not None
    netns.stop_pids([old_pid])
    repaired = make_lab(spec)
    assert repaired.hosts["solo"].sshd_pid not in (None, old_pid)
    proc = ssh(repaired, "solo", "hostname")
    assert (proc.returncode, proc.stdout.strip()) == (0, "solo"), proc.stderr
