"""NFS transfers with libnfs nfs-cp: its output on real captures, the URLs and commands built."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.facts.gather import parse_facts
from nasplan.hosts.session import HostSession
from nasplan.input import plan as plan_module
from nasplan.input.inventory import Host
from nasplan.input.plan import load_plan
from nasplan.measure.kinds import transfer as transfer_kind
from nasplan.measure.kinds.transfer import runs as transfer_runs
from nasplan.measure.tools import transfer
from nasplan.platforms import detect

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures"
MIB32 = 32 * 2**20


def fixture(name: str) -> str:
    return (FIXTURES / "transfer" / name).read_text()


@pytest.mark.parametrize("name", ["nfs-cp-4.0-write.txt", "nfs-cp-4.0-read.txt"])
def test_nfs_cp_reports_the_bytes_copied_and_no_rate(name: str) -> None:
    assert transfer.parse_nfs_cp(fixture(name)) == {"tool_bytes_per_second": None, "bytes": MIB32}


@pytest.mark.parametrize(
    ("name", "cause"),
    [
        ("nfs-cp-4.0-exists.txt", "NFS3ERR_EXIST"),
        ("nfs-cp-4.0-denied.txt", "MNT3ERR_ACCES"),
        ("nfs-cp-4.0-v4-write-fails.txt", "Failed to write to dest file"),
    ],
)
def test_nfs_cp_failures_name_the_cause(name: str, cause: str) -> None:
    with pytest.raises(transfer.TransferParseError, match=cause):
        transfer.parse_nfs_cp(fixture(name))


def test_timed_nfs_cp_output() -> None:
    duration_s, exited, output = transfer.parse_timed(fixture("timed-nfs-cp-write.txt"))
    assert (duration_s, exited) == (0.177638382, 0)
    assert transfer.parse_nfs_cp(output)["bytes"] == MIB32


@pytest.mark.parametrize(
    ("address", "export", "version", "url"),
    [
        ("198.18.39.10", "/data", None, "nfs://198.18.39.10/data/f.bin"),
        ("198.18.39.10", "/volume1/data/", 4, "nfs://198.18.39.10/volume1/data/f.bin?version=4"),
        ("198.18.39.10", "/", 3, "nfs://198.18.39.10/f.bin?version=3"),
        ("fd00::5", "data", None, "nfs://[fd00::5]/data/f.bin"),
    ],
)
def test_nfs_url(address: str, export: str, version: int | None, url: str) -> None:
    assert transfer.nfs_url(address, export, "f.bin", version) == url


@pytest.mark.parametrize("export", ["/my data", "/data?x", "/a#b", "/50%"])
def test_nfs_url_refuses_what_libnfs_would_misread(export: str) -> None:
    with pytest.raises(ValueError, match="nfs:// URL"):
        transfer.nfs_url("198.18.39.10", export, "f.bin")


INVENTORY = """\
hosts:
  nas: {address: 198.18.39.10, vars: {nfs: {export: /data, server_path: /srv/nfs/export}}}
  ws: {address: 198.18.39.11}
"""


def load_test(tmp_path: Path, settings: str) -> plan_module.TestSpec:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(
        "name: t\ninventory: inventory.yaml\ntests:\n"
        f"  - {{kind: transfer, method: nfs, server: nas, client: ws, size: 1MiB, {settings}}}\n"
    )
    (test,) = load_plan(path).tests
    return test


def test_nfs_plan_needs_an_export_or_a_mounted_path(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="'export' is required"):
        load_test(tmp_path, "direction: write")


NFS_CP_OK = f"copied 1048576 bytes\n{transfer.ELAPSED_MARK}500000000\n{transfer.EXIT_MARK}0\n"


def test_export_from_inventory_vars_makes_nfs_cp_commands(
    tmp_path: Path, fake_runner: Callable[[str], Any]
) -> None:
    test = load_test(
        tmp_path,
        "export: '{{ hosts.nas.nfs.export }}', server_path: '{{ hosts.nas.nfs.server_path }}'",
    )
    assert transfer_kind.KIND.needs(test, transfer_kind.KIND.settings(test)) == {"ws": ("nfs-cp",)}
    server = HostSession(Host("nas", "198.18.39.10"))
    xfer = transfer_kind.transfer_for(transfer_kind.KIND.settings(test), test, server, "abcd")
    assert (xfer.export, xfer.server_path) == ("/data", "/srv/nfs/export")
    runner = fake_runner("ws").expect("nfs-cp", NFS_CP_OK).expect("nfs-cp", NFS_CP_OK)
    for direction in ("write", "read"):
        rep, _ = transfer_runs.repetition(runner, xfer, direction, "/tmp/x", "198.18.39.10")
        assert rep["status"] == "ok" and rep["bytes_per_second"] == 2 * 2**20
    write, read = runner.texts()
    url = f"nfs://198.18.39.10/data/{xfer.remote_name}"
    assert f"nfs-cp /tmp/x/source.bin {url}" in write
    # nfs-cp creates its destination exclusively: the old read copy goes first.
    assert "rm -f -- /tmp/x/read.bin || exit $?\nnasplan_mono() {" in read
    assert f"nfs-cp {url} /tmp/x/read.bin" in read


def test_nfs_with_a_mounted_path_still_copies_with_dd(tmp_path: Path) -> None:
    test = load_test(tmp_path, "mounted_path: /mnt/nas")
    assert transfer_kind.KIND.needs(test, transfer_kind.KIND.settings(test)) == {}
    xfer = transfer_kind.transfer_for(
        transfer_kind.KIND.settings(test), test, HostSession(Host("nas", "198.18.39.10")), "abcd"
    )
    assert xfer.export is None and xfer.mounted_path == "/mnt/nas"


def test_debian_installs_nfs_cp_from_its_package() -> None:
    facts = parse_facts((FIXTURES / "facts" / "debian12-root.txt").read_text())
    assert facts.tool("nfs-cp") is None
    [command] = detect(facts).install_commands(facts, ["nfs-cp"])
    assert command.description == "apt-get install libnfs-utils"
    assert "--no-install-recommends libnfs-utils" in command.script
    assert "command -v nfs-cp" in command.script


@pytest.mark.parametrize(("direction", "files"), [("write", 2), ("read", 1), ("both", 3)])
def test_nfs_space_counts_the_seed_only_when_the_test_reads(
    tmp_path: Path, direction: str, files: int
) -> None:
    """nfs-cp writes a file per write, and an untimed seed only for a test that reads: a
    write-only test of two repetitions needs room for two copies on the NAS, not three (a 1 GiB
    volume took no two 400 MiB writes)."""
    test = load_test(
        tmp_path,
        f"direction: {direction}, repetitions: 2, export: /data, server_path: /srv/nfs/export",
    )
    settings = transfer_kind.KIND.settings(test)
    xfer = transfer_kind.transfer_for(
        settings, test, HostSession(Host("nas", "198.18.39.10")), "abcd"
    )
    on_nas = [n for n in transfer_kind.needs_of(xfer, "ws", "nas", False) if n.host == "nas"]
    assert [n.bytes for n in on_nas] == [files * 2**20]
