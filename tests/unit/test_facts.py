"""Host facts: the one-round-trip script, run for real, and its parser on captured output."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import NasplanError
from nasplan.facts.gather import (
    FACTS_SCRIPT,
    TOOL_NAMES,
    HostFacts,
    facts_script_with,
    gather,
    parse_facts,
    parse_iperf3_version,
    split_also,
)
from nasplan.hosts.lock import EXIT_BUSY, acquire_script, parse_holder
from nasplan.remote.runner import LocalRunner, Result
from nasplan.sections import split_sections

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "facts"
ALL_FIXTURES = sorted(p.name for p in FIXTURES.glob("*.txt"))


def fixture(name: str) -> HostFacts:
    return parse_facts((FIXTURES / name).read_text())


def test_debian12_root_capture() -> None:
    facts = fixture("debian12-root.txt")
    assert facts.hostname == "vm"
    assert (facts.os_id, facts.os_version) == ("debian", "12")
    assert facts.os_pretty == "Debian GNU/Linux 12 (bookworm)"
    assert (facts.kernel, facts.arch) == ("6.18.44-fc-v669", "x86_64")
    assert facts.cpu_model == "Intel(R) Xeon(R) Processor"
    assert facts.cpu_cores == 2
    assert facts.memory_bytes == 24684084 * 1024
    assert facts.is_root is True
    eth0 = facts.interface("eth0")
    assert eth0 is not None
    assert (eth0.mtu_bytes, eth0.state, eth0.driver) == (1400, "up", "virtio_net")
    assert eth0.speed_mbps is None  # virtio reports -1: unknown, not a speed
    assert eth0.addresses == ("192.0.2.2/24", "fd00::2/64", "fe80::fc:ff:fe00:1/64")
    ifb0 = facts.interface("ifb0")
    assert ifb0 is not None and ifb0.state == "down" and ifb0.addresses == ()
    assert facts.tool("iperf3") == "/usr/bin/iperf3"
    assert facts.tool("apt-get") == "/usr/bin/apt-get"
    assert facts.tool("opkg") is None and facts.tool("midclt") is None
    assert facts.iperf3_version == "3.12"
    assert set(facts.markers) == {"/etc/os-release"}
    assert "ID=debian" in facts.markers["/etc/os-release"]


def test_nonroot_capture_finds_tools_off_path() -> None:
    facts = fixture("debian12-nonroot.txt")
    assert facts.is_root is False
    # PATH was /usr/local/bin:/usr/bin:/bin; ethtool lives in /usr/sbin.
    assert facts.tool("ethtool") == "/usr/sbin/ethtool"
    assert facts.tool("iperf3") == "/usr/bin/iperf3"


def test_veth_in_netns_capture() -> None:
    facts = fixture("debian12-netns-veth.txt")
    assert [nic.name for nic in facts.interfaces] == ["eth1", "lo"]
    eth1 = facts.interface("eth1")
    assert eth1 is not None
    assert eth1.driver == "veth"  # from ethtool -i: veth has no device/driver link
    assert (eth1.mtu_bytes, eth1.speed_mbps, eth1.duplex, eth1.state) == (9000, 10000, "full", "up")
    assert eth1.addresses[0] == "198.18.251.1/30"
    lo = facts.interface("lo")
    assert lo is not None and lo.addresses == ("127.0.0.1/8", "::1/128")


def test_busybox_ash_gives_the_same_facts_as_dash() -> None:
    dash, busybox = fixture("debian12-netns-veth.txt"), fixture("busybox.txt")
    assert busybox.interfaces == dash.interfaces
    assert (busybox.tool("ip") or "").endswith("/ip")
    without_tools = {**busybox.to_dict(), "tools": None}
    assert without_tools == {**dash.to_dict(), "tools": None}


def test_ifconfig_fallback_when_ip_is_missing() -> None:
    facts = fixture("busybox-ifconfig.txt")
    assert facts.tool("ip") is None
    eth1 = facts.interface("eth1")
    assert eth1 is not None
    assert eth1.addresses == ("198.18.251.1/30", "fe80::1c4a:f5ff:fec0:d477/64")
    assert facts.interfaces == fixture("debian12-netns-veth.txt").interfaces


def test_qnap_lab_capture_with_busybox_ifconfig() -> None:
    facts = fixture("qnap-lab-busybox-ifconfig.txt")
    assert facts.os_id is None  # no os-release: platform comes from the markers
    assert "Model = TS-253D" in facts.markers["/etc/config/uLinux.conf"]
    assert facts.markers["getcfg System Version"] == "5.1.0"
    assert facts.tool("iperf3") is None and facts.tool("opkg") == "/opt/bin/opkg"
    assert facts.tool("ip") is None and facts.tool("ifconfig") == "/usr/local/bin/ifconfig"
    eth0 = facts.interface("eth0")
    assert eth0 is not None
    assert (eth0.mtu_bytes, eth0.addresses) == (1500, ("198.19.240.10/28",))
    installed = fixture("qnap-lab-busybox-ifconfig-entware-iperf3.txt")
    assert installed.tool("iperf3") == "/opt/bin/iperf3" and installed.iperf3_version == "3.12"


def test_synology_lab_capture_as_admin() -> None:
    facts = fixture("synology-dsm7-lab-admin.txt")
    assert facts.is_root is False
    assert 'productversion="7.2.1"' in facts.markers["/etc.defaults/VERSION"]
    assert 'upnpmodelname="DS920+"' in facts.markers["/etc/synoinfo.conf"]
    assert facts.tool("iperf3") is None and facts.iperf3_version is None
    assert facts.tool("synogear") == "/usr/syno/bin/synogear"


def test_each_tool_is_probed_once() -> None:
    assert len(TOOL_NAMES) == len(set(TOOL_NAMES))


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_json_round_trip(name: str) -> None:
    facts = fixture(name)
    again = HostFacts.from_dict(json.loads(json.dumps(facts.to_dict())))
    assert again == facts
    assert set(facts.to_dict()["tools"]) >= set(TOOL_NAMES)


@pytest.mark.parametrize(
    ("line", "version"),
    [
        ("iperf 3.12 (cJSON 1.7.15)", "3.12"),
        ("iperf 3.16 (cJSON 1.7.15)", "3.16"),
        ("iperf 3.9", "3.9"),
        ("iperf 3.1.3", "3.1.3"),
        ("iperf 3.17.1 (cJSON 1.7.15)\n", "3.17.1"),
        ("iperf3: error - unrecognized option", None),
        ("", None),
    ],
)
def test_iperf3_version(line: str, version: str | None) -> None:
    assert parse_iperf3_version(line) == version


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "sh: 1: syntax error\n",
        "\x00\xff@@nasplan:@@\n@@nasplan:nic@@\nmtu=big\nspeed=\n",
        "@@nasplan:uid@@\nroot\n@@nasplan:meminfo@@\nMemTotal: lots\n@@nasplan:ip-addr@@\n1: x\n",
        "@@nasplan:ifconfig@@\n   inet addr:999.1.1.1 Mask:255.0.0.0\neth0\n inet6 addr: zz/64\n",
    ],
)
def test_garbage_never_raises(garbage: str) -> None:
    facts = parse_facts(garbage)
    assert facts.memory_bytes is None and facts.is_root is None and facts.cpu_cores is None
    assert all(nic.addresses == () and nic.mtu_bytes is None for nic in facts.interfaces)
    assert facts.tool("iperf3") is None


def test_truncated_output_keeps_what_arrived() -> None:
    text = (FIXTURES / "debian12-root.txt").read_text()
    facts = parse_facts(text[: text.index("@@nasplan:tools@@")])
    assert facts.memory_bytes == 24684084 * 1024
    assert facts.interfaces == () and facts.tool("iperf3") is None


def local_shell(command: str) -> Result:
    """Run a script on this machine for real (the FakeRunner's reply)."""
    return LocalRunner().run_script(command, timeout_s=20)


def test_gather_for_real_matches_python_in_one_call(fake_runner: Callable[[str], Any]) -> None:
    runner = fake_runner("local").expect("@@nasplan:", reply=local_shell)
    facts = gather(runner)
    [call] = runner.calls
    assert call.script and not call.sudo and call.stdin is None  # no root, no input needed
    uname = os.uname()
    assert facts.hostname == socket.gethostname()
    assert (facts.kernel, facts.arch) == (uname.release, uname.machine)
    assert facts.is_root == (os.geteuid() == 0)
    assert facts.cpu_cores == os.cpu_count()
    meminfo = Path("/proc/meminfo").read_text().splitlines()
    mem_kib = next(int(line.split()[1]) for line in meminfo if line.startswith("MemTotal:"))
    assert facts.memory_bytes == mem_kib * 1024
    assert {nic.name for nic in facts.interfaces} == set(os.listdir("/sys/class/net"))
    for nic in facts.interfaces:
        assert nic.mtu_bytes == int(Path(f"/sys/class/net/{nic.name}/mtu").read_text())
    lo = facts.interface("lo")
    assert lo is not None and "127.0.0.1/8" in lo.addresses
    assert facts.tool("iperf3") == shutil.which("iperf3")


@pytest.mark.parametrize("shell", [["busybox", "sh"], ["dash"], ["bash", "--posix"]])
def test_script_runs_the_same_under_other_shells(shell: list[str]) -> None:
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed")
    proc = subprocess.run(
        [*shell, "-c", FACTS_SCRIPT], capture_output=True, text=True, timeout=20, check=False
    )
    assert proc.returncode == 0
    other, ours = parse_facts(proc.stdout), gather(LocalRunner())
    assert other.interfaces == ours.interfaces
    assert (other.cpu_cores, other.memory_bytes, other.os_id) == (
        ours.cpu_cores,
        ours.memory_bytes,
        ours.os_id,
    )
    # hostname, kernel and tool paths come from shell builtins (read, a PATH walk): each shell
    # must find what the system's own tools say
    assert (other.hostname, other.kernel) == (socket.gethostname(), os.uname().release)
    assert other.tools == ours.tools
    assert other.tool("iperf3") == shutil.which("iperf3")


def test_gather_raises_when_the_script_fails_silently(fake_runner: Callable[[str], Any]) -> None:
    runner = fake_runner("nas").expect("@@nasplan:", stderr="sh: cannot execute\n", exited=127)
    with pytest.raises(NasplanError, match=r"nas: gathering facts failed \(exit 127\)"):
        gather(runner)


def test_gather_uses_partial_output_of_a_failed_run(fake_runner: Callable[[str], Any]) -> None:
    text = (FIXTURES / "debian12-root.txt").read_text()
    facts = gather(fake_runner("nas").expect("@@nasplan:", text, exited=124))
    assert facts.os_id == "debian"


@pytest.mark.parametrize("shell", [["busybox", "sh"], ["dash"]])
def test_the_host_lock_taken_in_the_facts_round_trip_is_what_it_is_alone(
    shell: list[str], tmp_path: Path
) -> None:
    """apply takes a host's lock in the facts' own round trip: the facts must parse as without
    it, and the lock script's output and exit status (75: held by another run) come back whole."""
    if shutil.which(shell[0]) is None:
        pytest.skip(f"{shell[0]} is not installed")
    # the lock directory is /tmp/nasplan-$(uname -n).lock: a uname of this test's own
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    node = f"factslock-{os.getpid()}-{shell[0]}"
    real_uname = shutil.which("uname")
    (bin_dir / "uname").write_text(
        f'#!/bin/sh\n[ "$1" = -n ] && echo {node} || exec {real_uname} "$@"\n'
    )
    (bin_dir / "uname").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    lock_dir = Path(f"/tmp/nasplan-{node}.lock")

    def run(script: str) -> Result:
        proc = subprocess.run(
            [*shell, "-c", script], capture_output=True, text=True, timeout=20, env=env
        )
        return Result(script, proc.stdout, proc.stderr, proc.returncode)

    def steady(text: str) -> HostFacts:
        """The facts without free space, which the machine's other work changes meanwhile."""
        found = parse_facts(text)
        return replace(found, storage={k: v for k, v in found.storage.items() if k != "df"})

    try:
        alone = steady(run(FACTS_SCRIPT).stdout)
        first, taken = split_also(run(facts_script_with(acquire_script("run-a", 30))))
        assert first.exited == 0 and steady(first.stdout) == alone
        assert taken is not None and taken.exited == 0
        assert split_sections(taken.stdout)["locked"].strip() == str(lock_dir)
        assert "run_id=run-a" in (lock_dir / "owner").read_text().splitlines()

        second, refused = split_also(run(facts_script_with(acquire_script("run-b", 30))))
        assert steady(second.stdout) == alone
        assert refused is not None and refused.exited == EXIT_BUSY
        holder = parse_holder(refused.stdout)
        assert holder.fields["run_id"] == "run-a" and holder.lease_left_s in (29, 30, 31)
    finally:
        shutil.rmtree(lock_dir, ignore_errors=True)


def test_a_facts_round_trip_cut_before_its_lock_script_ended_has_no_lock_result() -> None:
    cut = Result("facts", FIXTURES.joinpath("debian12-root.txt").read_text()[:2000], "", 255)
    facts, also = split_also(cut)
    assert facts is cut and also is None
