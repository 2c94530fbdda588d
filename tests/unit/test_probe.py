"""``nasplan probe``: read-only commands only, raw answers redacted into a fixture directory
that parses back to what nasplan derived live; the recorded probe directories too."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from os_facts import framed

from nasplan.cli import main
from nasplan.output import REDACTED, AddressMask, redactor_of
from nasplan.probe import derive, probe, rederive, write

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NETTOOLS = FIXTURES / "nettools"
PROBES = sorted(p for p in (FIXTURES / "probe").glob("*") if p.is_dir())
SECRET = "s3cr3t-Pa55word"
# What would change a host: none of it may appear in a probe's commands.
CHANGES = re.compile(
    r"\b(link set|addr (add|del|replace)|route (add|del)|mtu \d|install|mkdir|rm -|"
    r"kill|midclt call interface\.(update|commit)|systemctl|tee|touch)\b|>\s*(?!&|/dev/null)\S"
)


def nettools(name: str) -> str:
    return (NETTOOLS / name).read_text(encoding="utf-8")


def debian_host(runner: Any) -> Any:
    """A Debian host with iproute2 and net-tools, as captured in tests/fixtures/nettools/."""
    facts = nettools("facts-iproute2.txt").replace("uid@@\n0", "uid@@\n1000")
    runner.allow("nasplan_section hostname", facts)
    runner.allow(
        "@@nasplan:addr@@",
        framed({"addr": nettools("iproute2-addr.json"), "route": nettools("iproute2-route.json")}),
    )
    runner.allow(
        "@@nasplan:addr-text@@",
        framed(
            {
                "addr-text": nettools("iproute2-addr.txt"),
                "route-text": nettools("iproute2-route.txt"),
            }
        ),
    )
    runner.allow(
        "@@nasplan:ifconfig@@",
        framed(
            {
                "ifconfig": nettools("net-tools-ifconfig-a.txt"),
                "proc-net-route": nettools("proc-net-route.txt"),
            }
        ),
    )
    runner.allow("iperf3 --version", "iperf 3.12 (cJSON 1.7.15)\n")
    runner.allow("sudo -n -l", f"sudo: a password is required\nPASSWORD={SECRET}\n", exited=1)
    runner.allow("", "some version 1.0\n")  # the other tools' versions
    return runner


def test_probe_runs_only_read_only_commands_without_sudo(
    fake_runner: Callable[[str], Any],
) -> None:
    runner = debian_host(fake_runner("nas"))
    answers = probe(runner)
    assert not any(call.sudo or call.stdin for call in runner.calls)
    for call in runner.calls:
        assert not CHANGES.search(call.text), call.text
    files = [a.file for a in answers]
    assert files[0] == "facts/facts.txt"
    assert {"nettools/state-ip-json.txt", "nettools/state-ip-text.txt"} <= set(files)
    assert "nettools/state-ifconfig.txt" in files and "sudo/sudo-n-l.txt" in files
    assert "tools/iperf3-version.txt" in files


def test_the_checker_sees_a_command_that_changes_a_host() -> None:
    for text in ("ip link set dev eth1 mtu 9000", "opkg install iperf3", "echo x > /etc/f"):
        assert CHANGES.search(text), text


PRINT = "SHA256:NYYOB6fjxOcw3jQHqUqmWeu1sP9rBavpzrMURdga1nc"


@pytest.mark.parametrize("masked", [False, True])
def test_written_directory_parses_back_to_what_was_derived(
    fake_runner: Callable[[str], Any], tmp_path: Path, masked: bool
) -> None:
    answers = probe(debian_host(fake_runner("nas")))
    live = derive(answers)
    out = tmp_path / "probe"
    mask = AddressMask() if masked else None
    write(out, "nas", answers, redactor_of([SECRET]), host_key=f"ssh-ed25519 {PRINT}", mask=mask)
    derived = json.loads((out / "derived.json").read_text(encoding="utf-8"))
    assert rederive(out) == derived
    states = derived["states"]
    assert set(states) == {"ip-json", "ip-text", "ifconfig"}
    assert states["ip-json"]["eth1"]["mtu_bytes"] == 9000
    text = "\n".join(p.read_text(encoding="utf-8") for p in out.rglob("*") if p.is_file())
    assert SECRET not in text and REDACTED in text
    readme = (out / "README.md").read_text(encoding="utf-8")
    assert "platform (as nasplan detected it): debian" in readme
    assert (PRINT in readme) != masked
    if masked:
        assert "198.19.33" not in text and "b2:f9:51" not in text.lower()
        assert states["ip-json"]["eth1"]["addresses"][0].startswith("10.")
        assert states["ip-json"] != live["states"]["ip-json"]
    else:
        assert derived == json.loads(json.dumps(live))


def test_a_facts_answer_nasplan_does_not_understand_is_kept_raw(
    fake_runner: Callable[[str], Any], tmp_path: Path
) -> None:
    runner = fake_runner("odd").allow("nasplan_section hostname", "@@nasplan:hostname@@\nodd\n")
    answers = probe(runner)
    assert [a.file for a in answers] == ["facts/facts.txt"]
    derived = derive(answers)
    assert "nasplan probe" in derived["error"] and "@@nasplan:end@@" in derived["error"]
    write(tmp_path / "p", "odd", answers, redactor_of([]), host_key=None, mask=None)
    assert "could not read the facts" in (tmp_path / "p" / "README.md").read_text()


def test_masking_is_consistent_and_keeps_what_parsers_compute_on() -> None:
    mask = AddressMask()
    one = mask.text("inet 198.18.0.10/24 brd 198.18.0.255 netmask 255.255.255.0 ::1 127.0.0.1")
    two = mask.text("198.18.0.0/24 dev eth0 src 198.18.0.10 fe80::1c2d:3eff:fe4f:5a6b")
    assert one == "inet 10.0.1.10/24 brd 10.0.1.255 netmask 255.255.255.0 ::1 127.0.0.1"
    assert two.startswith("10.0.1.0/24 dev eth0 src 10.0.1.10 fe80::")
    assert mask.text("02:AB:cd:00:11:22 02-AB-CD-00-11-22") == "02:00:00:00:00:01 02-00-00-00-00-01"
    # /proc/net/route's little-endian hex: masked the same way
    assert mask.text("eth0\t0A0012C6\t00000000\t0001") == "eth0\t0A01000A\t00000000\t0001"


@pytest.mark.parametrize("directory", PROBES, ids=[p.name for p in PROBES])
def test_recorded_probe_directories_parse_to_what_nasplan_derived_live(directory: Path) -> None:
    derived = json.loads((directory / "derived.json").read_text(encoding="utf-8"))
    assert "error" not in derived
    assert rederive(directory) == derived


def test_there_are_recorded_probes_of_every_lab_personality() -> None:
    assert {p.name for p in PROBES} >= {"lab-debian", "lab-qnap", "lab-synology", "lab-truenas"}


def test_probe_exit_codes(tmp_path: Path) -> None:
    known_hosts = tmp_path / "known_hosts"
    known_hosts.write_text("")
    known_hosts.chmod(0o600)
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        f"hosts:\n  nas:\n    address: 127.0.0.1\n    port: 1\n    known_hosts: {known_hosts}\n"
    )
    cli = CliRunner()
    missing = cli.invoke(
        main, ["probe", "ghost", "-i", str(inventory), "--out", str(tmp_path / "o")]
    )
    assert missing.exit_code == 2 and "no host 'ghost'" in missing.output
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    full = cli.invoke(main, ["probe", "nas", "-i", str(inventory), "--out", str(tmp_path / "full")])
    assert full.exit_code == 2 and "not an empty directory" in full.output
    down = cli.invoke(main, ["probe", "nas", "-i", str(inventory), "--out", str(tmp_path / "o")])
    assert down.exit_code == 3 and "cannot connect" in down.output
    assert not (tmp_path / "o").exists()


def test_masking_covers_what_identifies_a_machine() -> None:
    """--mask-addresses: the boot id (a lab probe's facts and derived.json), the host key's
    fingerprint, disks' by-id names and serials; the same value, the same placeholder (hosts
    sharing a boot id still do)."""
    kept = Path(__file__).resolve().parents[1] / "fixtures" / "probe" / "lab-debian"
    boot_id = json.loads((kept / "derived.json").read_text())["facts"]["boot_id"]
    mask = AddressMask()
    facts = mask.text((kept / "facts" / "facts.txt").read_text())
    derived = mask.text((kept / "derived.json").read_text())
    readme = mask.text((kept / "README.md").read_text())
    assert boot_id in (kept / "facts" / "facts.txt").read_text()
    for text in (facts, derived):
        assert boot_id not in text and "00000000-0000-0000-0000-000000000001" in text
    assert "SHA256:" in readme and "NYYOB6fjxOcw3jQHqUqmWeu1sP9rBavpzrMURdga1nc" not in readme
    zpool = "\tata-WDC_WD40EFRX-68N32N0_WD-WCC7K1234567-part1  ONLINE  0 0 0\n"
    masked = mask.text(zpool + "wwn-0x5000c500a1b2c3d4 SerialNumber : ZA1B2C3 usb-storage")
    assert "WCC7K1234567" not in masked and "5000c500a1b2c3d4" not in masked
    assert "ZA1B2C3" not in masked and "-part1  ONLINE" in masked and "usb-storage" in masked
