"""The NAS side of the write-ups, for real: a lab NAS with an HDD volume and an SSD volume at
disk-like rates (nbdkit's rate filter behind loop devices) and a memory limit (a cgroup), three
clients. The TS-253D shape (links x volumes x read/write in one table against the HDD volume and
the 2.5G link), an office NAS with three clients at once, many-file copies over SMB and NFS, a
cold read beside a cached one, rsync to a cable address with no hand-made known_hosts."""

from __future__ import annotations

import io
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import LabContext

from nasplan.input.plan import load_plan
from nasplan.lab import LabState, lifecycle, services
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

MIB = 2**20
LIMIT = 128 * MIB
LAB = {
    "name": "nas36-side",
    "lan": {"prefix": "198.18.168.0/24", "rate": "1G"},
    "hosts": {
        "nas": {
            "personality": "qnap",
            "services": ["smb", "nfs"],
            "memory": "128MiB",
            "volumes": {
                "hdd": {"rate": "180MiB/s", "size": "384MiB", "path": "/share/HDD"},
                "ssd": {"rate": "900MiB/s", "size": "384MiB", "filesystem": "btrfs",
                        "disks": 2, "raid": "raid1"},
            },
        },
        "pc": {},
        "mac": {},
        "laptop": {},
    },
    "links": [
        {"name": "p2p25", "rate": "2.5G",
         "a": {"host": "nas", "interface": "eth1", "address": "198.18.169.1/30"},
         "b": {"host": "pc", "interface": "eth1", "address": "198.18.169.2/30"}},
        {"name": "p2p10", "rate": "10G",
         "a": {"host": "nas", "interface": "eth2", "address": "198.18.169.5/30"},
         "b": {"host": "pc", "interface": "eth2", "address": "198.18.169.6/30"}},
        # a cable the plan addresses for its run: no known_hosts line has its address
        {"name": "cable", "rate": "10G",
         "a": {"host": "nas", "interface": "eth3"}, "b": {"host": "mac", "interface": "eth1"}},
    ],
}  # fmt: skip
SMB = {
    "user": "{{ hosts.nas.smb.user }}",
    "password_env": "{{ hosts.nas.smb.password_env }}",
}


@pytest.fixture(scope="module")
def nas(running_lab: LabContext) -> Iterator[LabState]:
    """The lab, up for this file's tests; afterwards nothing of its volumes is left."""
    with running_lab(LAB) as state:
        yield state
        made = (list(state.loops), list(state.fuse_dirs), list(state.volume_pids))
        group = state.hosts["nas"].cgroup
    loops, fuse_dirs, pids = made
    attached = subprocess.run(["losetup", "-l", "-n", "-O", "NAME"], capture_output=True,
                              text=True, check=True).stdout.split()  # fmt: skip
    assert not set(loops) & set(attached)
    mounts = Path("/proc/self/mounts").read_text()
    assert not any(d in mounts for d in fuse_dirs)
    assert not any(Path(f"/proc/{pid}").exists() and _cmd(pid).startswith("nbd") for pid in pids)
    assert group is not None and not Path(group).exists()


def _cmd(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def run_plan(state: LabState, tmp_path: Path, plan: dict[str, Any], env: Any) -> dict[str, Any]:
    """Apply ``plan`` against the lab; its run.json (every test ok)."""
    env.setenv(services.SMB_PASSWORD_ENV, services.read_password(state.host_dir("nas")) or "")
    plan.setdefault("inventory", str(state.inventory_path))
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    outcome = apply(RunRequest(load_plan(path), out=tmp_path / "run"), make_progress(io.StringIO()))
    run = load_run(tmp_path / "run")
    assert outcome.exit_code == EXIT_OK, [(t["id"], t["error"]) for t in run["tests"]]
    return run


def test_the_ts253d_table_links_by_volumes_against_the_hdd_and_the_2_5g_link(
    nas: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    links = ["lan", "p2p25", "p2p10"]
    plan = {
        "name": "ts253d-volumes",
        "table": {"rows": ["link"], "columns": ["volume", "direction"],
                  "baseline": {"volume": "hdd"}, "against": [{"link": "p2p25"}]},
        "tests": [
            {"id": "disk", "kind": "disk", "host": "nas", "size": "64MiB", "repetitions": 1,
             "matrix": {"volume": ["hdd", "ssd"]}},
            {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas", "client": "pc",
             "target": "nas.{{ matrix.link }}", "size": "32MiB", "repetitions": 2, **SMB,
             "matrix": {"link": links, "volume": ["hdd", "ssd"]}},
        ],
    }  # fmt: skip
    run = run_plan(nas, tmp_path, plan, monkeypatch)
    tests = {t["id"]: t for t in run["tests"]}

    # what each volume is, as the facts found it
    volumes = run["hosts"]["nas"]["volumes"]
    assert volumes["hdd"]["found"]["filesystem"] == "ext4"
    ssd = volumes["ssd"]["found"]
    assert (ssd["filesystem"], ssd["raid"], len(ssd["disks"])) == ("btrfs", "raid1", 2)
    assert run["hosts"]["nas"]["facts"]["memory_limit_bytes"] == LIMIT
    # the disks at their shaped rates: the HDD about 180 MiB/s, the SSD's reads much faster
    hdd_read = tests["disk[volume=hdd]"]["directions"]["read"]["median"]
    ssd_read = tests["disk[volume=ssd]"]["directions"]["read"]["median"]
    assert 120 * MIB < hdd_read < 260 * MIB, hdd_read / MIB
    # (the SSD's reads are held by the machine's CPU well below its 900 MiB/s: still faster)
    assert ssd_read > 1.2 * hdd_read, (ssd_read / MIB, hdd_read / MIB)
    # each copy judged against its own volume's disk
    for link in links:
        for volume in ("hdd", "ssd"):
            record = tests[f"smb[link={link},volume={volume}]"]
            assert record["params"]["share"] == volume
            for verdict in record["bottleneck"].values():
                assert f"of volume {volume}'s sequential" in verdict["text"], verdict["text"]
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Table: link × volume, direction" in report
    table = report.split("## Table:")[1].split("\n## ")[0]
    row = next(line for line in table.splitlines() if line.startswith("| p2p10 |"))
    # each SSD cell: ×ratio to the HDD volume, and ×ratio of link=p2p25
    assert row.count(" of link=p2p25 ") == 4 and row.count(" baseline ") == 2, row
    ssd_write = tests["smb[link=p2p10,volume=ssd]"]["directions"]["write"]["median"]
    hdd_write = tests["smb[link=p2p10,volume=hdd]"]["directions"]["write"]["median"]
    assert f"×{ssd_write / hdd_write:.2f}" in row


def test_an_office_nas_serves_three_clients_at_once(
    nas: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clients = ["pc", "mac", "laptop"]
    plan = {
        "name": "office",
        "tests": [
            {"id": "net", "kind": "iperf3", "server": "nas", "clients": clients,
             "duration_s": 2, "repetitions": 2},
            {"id": "bidir", "kind": "iperf3", "server": "nas", "clients": clients,
             "duration_s": 2, "repetitions": 1, "bidir": True},
            {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas",
             "clients": clients, "volume": "ssd", "size": "16MiB", "repetitions": 2, **SMB},
        ],
    }  # fmt: skip
    run = run_plan(nas, tmp_path, plan, monkeypatch)
    tests = {t["id"]: t for t in run["tests"]}

    net = tests["net"]
    top = net["path"]["theoretical_bits_per_second"]  # the NAS's own 1G LAN port
    for rep in net["repetitions"]:
        shares = [part["bits_per_second"] for part in rep["clients"].values()]
        assert set(rep["clients"]) == set(clients)
        assert rep["bits_per_second"] == pytest.approx(sum(shares))
        assert rep["bits_per_second"] < 1.02 * top
        assert rep["start_spread_s"] < 1.0  # started together, not one after another
        assert 1 / 3 < rep["fairness"] <= 1.0
    assert net["together_verdict"]["forward"]["verdict"] == "nas-link"
    back = tests["bidir"]["together"]
    assert set(back) == {"forward", "reverse"} and set(back["reverse"]["clients"]) == set(clients)
    smb = tests["smb"]
    for direction in ("write", "read"):
        shares = smb["together"][direction]["clients"]
        assert set(shares) == set(clients)
        assert smb["directions"][direction]["median"] * 8 < 1.02 * top
    report = (tmp_path / "run" / "report.md").read_text()
    assert "(forward, its clients together): iperf3 forward of 3 clients together" in report
    assert re.search(r"pc [0-9.]+ / mac [0-9.]+ / laptop [0-9.]+ Mbit/s, Jain", report)


def test_many_files_over_smb_and_nfs_beside_one_file_of_the_same_bytes(
    nas: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {
        "name": "many",
        "tests": [
            {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas", "client": "pc",
             "volume": "hdd", "files": {"count": 200, "size": "64KiB"}, "repetitions": 2, **SMB},
            {"id": "nfs", "kind": "transfer", "method": "nfs", "server": "nas", "client": "pc",
             "volume": "hdd", "repetitions": 2,
             "files": [{"count": 150, "size": "64KiB"}, {"count": 2, "size": "4MiB"}]},
        ],
    }  # fmt: skip
    run = run_plan(nas, tmp_path, plan, monkeypatch)
    tests = {t["id"]: t for t in run["tests"]}
    for test_id, files in (("smb", 200), ("nfs", 152)):
        reps = tests[test_id]["repetitions"]
        assert [r["direction"] for r in reps] == ["write", "write", "read", "read"]
        for rep in reps:
            assert rep["files"] == files
            assert rep["files_per_second"] == pytest.approx(files / rep["duration_s"])
            # a file of the same bytes right after the set: the small-file penalty
            assert rep["one_file_bytes_per_second"] > 0
    assert tests["nfs"]["params"]["export"] == "/hdd"
    # what the copies left on the NAS's volume: nothing
    left = {p.name for p in nas.host_path("nas", "/share/HDD").iterdir()}
    assert left == {"lost+found"}
    report = (tmp_path / "run" / "report.md").read_text()
    assert re.search(r"\| smb \(write\) \| SMB write, 200 files of 64 KiB \|", report)
    assert "slower than one file of the same bytes" in report or "faster" in report


def test_a_cold_read_beside_a_cached_one_on_a_nas_with_a_memory_limit(
    nas: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {
        "name": "cold",
        "tests": [
            {"id": "disk", "kind": "disk", "host": "nas", "volume": "hdd", "size": "64MiB",
             "repetitions": 1},
            {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas", "client": "pc",
             "target": "nas.p2p10", "volume": "hdd", "size": "48MiB", "read_cache": "both",
             "repetitions": 2, **SMB},
        ],
    }  # fmt: skip
    run = run_plan(nas, tmp_path, plan, monkeypatch)
    tests = {t["id"]: t for t in run["tests"]}
    smb = tests["smb"]
    assert smb["cache"]["server_cache_bytes"] == LIMIT  # the NAS's RAM is its limit
    cold = [r for r in smb["repetitions"] if r["direction"] == "cold-read"]
    assert len(cold) == 2
    for rep in cold:
        assert rep["cache"].startswith("dropped the page cache of /share/HDD/nasplan-smb-")
    # a cold read comes off the disk: never faster than the disk reads
    disk_read = tests["disk"]["directions"]["read"]["median"]
    assert smb["directions"]["cold-read"]["median"] < 1.25 * disk_read
    report = (tmp_path / "run" / "report.md").read_text()
    assert "right after the write: NAS RAM 128 MiB (its memory limit) vs 48 MiB moved" in report
    assert "memory limit: 128.0 MiB (of" in report
    # the NAS's sampler reads its memory limit, not the machine's RAM
    available = smb["resources"]["nas"]["mem_available_bytes_min"]
    assert 0 < available <= LIMIT, available / MIB
    # the lab dimension: the same NAS with less memory, changed while the lab is up
    assert lifecycle.set_memory(nas.state_dir, "nas", "64MiB") == "64 MiB"
    try:
        group = Path(str(nas.hosts["nas"].cgroup))
        limits = [group / name for name in ("memory.max", "memory.limit_in_bytes")]
        (limit,) = [path for path in limits if path.exists()]
        assert int(limit.read_text()) == 64 * MIB
    finally:
        lifecycle.set_memory(nas.state_dir, "nas", "128MiB")


def test_without_a_disk_test_copies_are_judged_by_the_volume_s_rate_and_the_memory_limit(
    nas: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # no disk test: the lab's inventory says volume hdd does 180 MiB/s; 192 MiB moved on a NAS
    # whose memory limit is 128 MiB
    plan = {
        "name": "stated",
        "tests": [
            {"id": "smb", "kind": "transfer", "method": "smb", "server": "nas", "client": "pc",
             "target": "nas.p2p10", "volume": "hdd", "size": "192MiB", "repetitions": 1, **SMB},
        ],
    }  # fmt: skip
    run = run_plan(nas, tmp_path, plan, monkeypatch)
    assert run["hosts"]["nas"]["volumes"]["hdd"]["bytes_per_second"] == 180 * MIB
    (smb,) = run["tests"]
    report = (tmp_path / "run" / "report.md").read_text()
    for direction, verdict in smb["bottleneck"].items():
        rate = smb["directions"][direction]["median"]
        text = verdict["text"]
        assert f"of volume hdd's sequential {direction} (180 MiB/s, the inventory's rate)" in text
        assert "no disk test of this NAS" not in text
        # 192 MiB do not fit in 128 MiB: above the volume's rate by far is not the NAS's cache
        if rate > 180 * MIB / 0.85 * 192 / 64:
            assert verdict["verdict"] == "faster-than-disk", text
            assert "the 192 MiB moved do not fit in the NAS's 128 MiB memory limit" in text
        elif 0.85 * 180 * MIB <= rate < 180 * MIB / 0.85:
            assert verdict["verdict"] == "disk-bound", text
        assert f"- **smb** ({direction}): {text}" in report


def test_rsync_to_a_cable_address_with_no_hand_made_known_hosts(
    nas: LabState, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = {
        "name": "cable",
        "links": [{"name": "cable", "a": {"host": "nas", "interface": "cable"},
                   "b": {"host": "mac", "interface": "cable"}, "prefix": "198.18.170.0/30"}],
        "tests": [
            {"id": "rsync", "kind": "transfer", "method": "rsync", "server": "nas",
             "client": "mac", "target": "link:cable@nas", "volume": "hdd", "size": "8MiB",
             "repetitions": 1, "ssh_identity": str(nas.identity_path)},
        ],
    }  # fmt: skip
    assert "198.18.170.1" not in nas.known_hosts_path.read_text()
    run = run_plan(nas, tmp_path, plan, monkeypatch)
    (record,) = run["tests"]
    assert record["params"]["address"] == "198.18.170.1"
    assert [r["status"] for r in record["repetitions"]] == ["ok", "ok"]

    # nasplan's own connection to an address no line of its known_hosts names: the NAS's key,
    # known under its cable's address, vouches for its LAN address (the inventory gives both)
    cable = [line for line in nas.known_hosts_path.read_text().splitlines()
             if line.split()[0] in ("198.18.169.1", "198.18.168.11")]  # fmt: skip
    known = tmp_path / "cable_known_hosts"
    known.write_text("\n".join(cable) + "\n")
    known.chmod(0o600)
    own = tmp_path / "own"
    own.mkdir()
    ping = {
        "name": "own",
        "known_hosts": str(known),
        "tests": [{"id": "ping", "kind": "latency", "server": "nas", "client": "pc",
                   "count": 2, "repetitions": 1}],
    }  # fmt: skip
    assert "198.18.168.10 " not in known.read_text()
    (ping_record,) = run_plan(nas, own, ping, monkeypatch)["tests"]
    assert ping_record["status"] == "ok"
