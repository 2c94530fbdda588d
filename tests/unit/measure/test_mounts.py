"""Mounting a share on a client, the real-host commands: the mount and unmount scripts run by
dash here, on a runner whose host has stand-ins for mount, mount.cifs, smbnetfs, iscsiadm,
fusermount and sudo that record their argv (the lab's kernel has no cifs, nfs or iscsi_tcp:
smbnetfs for real is in tests/lab/test_disk_profile_share_lab.py).

What a user would notice: the password never in any argv, only in a 0600 file; the mount
written into the host's lock before it is made; a mount that failed half way undone; the
commands a real client runs (mount -t cifs / -t nfs, iscsiadm discovery, login, logout)."""

from __future__ import annotations

import dataclasses
import os
import secrets
import shutil
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from nasplan.errors import CannotStart
from nasplan.measure import mounts
from nasplan.remote.runner import Result, RunnerBase

PASSWORD = "s3cret pass'word"
# each stand-in logs its argv (one line, words joined by |) and what the test asks of it
RECORDER = """#!/bin/sh
name=$(basename "$0")
{ printf '%s' "$name"; for a in "$@"; do printf '|%s' "$a"; done; echo; } >> "$LOG"
case $name in
  mount)
    for a in "$@"; do case $a in credentials=*)
      f=${a#credentials=}; f=${f%%,*}
      stat -c 'credentials mode %a' "$f" >> "$LOG"; cat "$f" >> "$LOG" ;; esac; done
    [ -z "$FAIL_MOUNT" ] || { echo "mount error(13): Permission denied" >&2; exit 32; } ;;
  smbnetfs) mkdir -p "$1/$SERVER/$SHARE" ;;
  iscsiadm) case "$*" in *--login*) [ -z "$FAIL_LOGIN" ] ||
      { echo "iscsiadm: initiator reported error (24 - iSCSI login failed)" >&2; exit 24; } ;;
    esac ;;
  id) echo "${FAKE_UID:-0}" ;;
  nbdfuse) # -P PIDFILE MP --command ... --chap-file F --running R: serves MP/nbd at once
    pidfile=$2 mp=$3; prev=
    for a in "$@"; do
      [ "$prev" = --chap-file ] && { stat -c 'chap mode %a' "$a" >> "$LOG"; cat "$a" >> "$LOG"; }
      [ "$prev" = --running ] && rm -f -- "$a"
      prev=$a
    done
    : > "$mp/nbd"; echo $$ > "$pidfile" ;;
  sudo) [ "$1" = -n ] && shift; exec "$@" ;;
esac
exit 0
"""
TOOLS = ("mount", "umount", "mount.cifs", "modinfo", "smbnetfs", "iscsiadm", "fusermount3", "id",
         "nbdfuse")  # fmt: skip


class Here(RunnerBase):
    """Runs scripts with dash on this machine, the stand-ins first on PATH."""

    name = "ws"

    def __init__(self, env: dict[str, str], prefix: str) -> None:
        self.env = env
        self.stdins: list[str | None] = []
        self.prefix = prefix

    def token(self) -> str:
        """A mount's token, of this test's own (/tmp/nasplan-mnt-PREFIX...)."""
        return self.prefix + secrets.token_hex(3)

    def run(self, argv: object, **_: object) -> Result:
        raise AssertionError(f"unexpected command {argv}")

    def run_script(self, script: str, *, stdin: str | None = None, **_: object) -> Result:
        self.stdins.append(stdin)
        done = subprocess.run(
            ["dash", "-c", script], input=stdin or "", capture_output=True, text=True,
            env=self.env, timeout=30, check=False,
        )  # fmt: skip
        return Result("script", done.stdout, done.stderr, done.returncode)


@pytest.fixture
def host(tmp_path: Path) -> Iterator[tuple[Here, Path, Path]]:
    """The runner, the stand-ins' log and the host's lock (a name of this test's own)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in (*TOOLS, "sudo"):
        (bin_dir / tool).write_text(RECORDER)
        (bin_dir / tool).chmod(0o755)
    name = f"nasplan-unit-{secrets.token_hex(4)}"
    (bin_dir / "uname").write_text(f"#!/bin/sh\necho {name}\n")
    (bin_dir / "uname").chmod(0o755)
    lock = Path(f"/tmp/nasplan-{name}.lock")
    lock.mkdir()
    log = tmp_path / "log"
    env = {"PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(log), "SERVER": "198.18.7.10",
           "SHARE": "data"}  # fmt: skip
    # (the mount points and configs of this test's tokens only: other test runs' are theirs;
    # not named "unit...", which an older copy of this fixture removed wherever it ran)
    prefix = f"ut{secrets.token_hex(4)}"
    try:
        yield Here(env, prefix), log, lock
    finally:
        shutil.rmtree(lock)
        for made in Path("/tmp").glob(f"nasplan-mnt*-{prefix}*"):
            shutil.rmtree(made, ignore_errors=True)


def smb(**given: object) -> mounts.Share:
    values: dict[str, object] = {"protocol": "smb", "server": "198.18.7.10", "name": "data",
                                 "user": "ann", "password": PASSWORD, **given}  # fmt: skip
    return mounts.Share(**values)  # type: ignore[arg-type]


def argvs(log: Path) -> list[list[str]]:
    return [line.split("|") for line in log.read_text().splitlines() if "|" in line]


def test_smb_with_the_kernels_cifs_takes_the_password_from_a_0600_file_never_argv(
    host: tuple[Here, Path, Path],
) -> None:
    runner, log, lock = host
    token = runner.token()
    found = mounts.mount(runner, smb(version="3.0"), token)
    assert found.how == "kernel" and found.path == f"/tmp/nasplan-mnt-{token}"
    assert found.describe() == "SMB //198.18.7.10/data mounted with the kernel's client"
    assert runner.stdins == [PASSWORD + "\n"]
    said = log.read_text()
    assert PASSWORD not in "".join("|".join(a) for a in argvs(log))
    assert "credentials mode 600\nusername=ann\npassword=" + PASSWORD + "\n" in said
    (mount,) = [a for a in argvs(log) if a[0] == "mount"]
    assert mount[:5] == ["mount", "-t", "cifs", "//198.18.7.10/data", found.mount_point]
    assert mount[6] == f"credentials=/tmp/nasplan-mntcfg-{token}/credentials,uid=0,gid=0,vers=3.0"
    # the credentials are gone once mounted; the mount is in the lock, made before it
    assert not Path(f"/tmp/nasplan-mntcfg-{token}/credentials").exists()
    assert (lock / "mounts").read_text() == f"kernel {found.mount_point}\n"
    assert (lock / "files").read_text().split() == [found.mount_point, found.config_dir]

    assert mounts.unmount(runner, found) is None
    assert argvs(log)[-1] == ["umount", "--", found.mount_point]
    assert not Path(found.mount_point).exists() and not Path(found.config_dir).exists()


def test_smb_without_cifs_in_the_kernel_mounts_with_smbnetfs(
    host: tuple[Here, Path, Path],
) -> None:
    runner, log, lock = host
    (Path(runner.env["PATH"].split(":")[0]) / "mount.cifs").unlink()  # no cifs-utils
    token = runner.token()
    problems: list[str] = []
    with mounts.mounted(runner, smb(), token, problems) as found:
        assert found.how == "fuse"
        assert found.path == f"{found.mount_point}/198.18.7.10/data"
        conf = Path(found.config_dir) / ".smb" / "smbnetfs.conf"
        assert conf.read_text() == f'auth "198.18.7.10/data" "ann" "{PASSWORD}"\n'
        assert stat.S_IMODE(conf.stat().st_mode) == 0o600
        assert stat.S_IMODE(Path(found.config_dir).stat().st_mode) == 0o700
        (smbnetfs,) = [a for a in argvs(log) if a[0] == "smbnetfs"]
        assert smbnetfs[1:] == [
            found.mount_point, "-o", f"config={conf},smb_query_browsers=false"
        ]  # fmt: skip
        assert (lock / "mounts").read_text() == f"fuse {found.mount_point}\n"
    assert problems == []
    assert argvs(log)[-1] == ["fusermount3", "-u", found.mount_point]
    assert not Path(found.config_dir).exists()


def test_nfs_mounts_with_the_kernel_through_sudo_for_a_login_user(
    host: tuple[Here, Path, Path],
) -> None:
    runner, log, _ = host
    runner.env["FAKE_UID"] = "1000"
    share = mounts.Share(protocol="nfs", server="198.18.7.10", name="/volume1/data", version="4.1")
    found = mounts.mount(runner, share, runner.token())
    assert found.describe() == "NFS 198.18.7.10:/volume1/data mounted with the kernel's client"
    assert [a for a in argvs(log) if a[0] == "sudo"] == [
        ["sudo", "-n", "true"],  # (may it mount? else the user-space bridge)
        ["sudo", "-n", "mount", "-t", "nfs", "-o", "vers=4.1", "198.18.7.10:/volume1/data",
         found.mount_point],
    ]  # fmt: skip
    assert mounts.unmount(runner, found) is None


def test_a_mount_refused_is_said_and_leaves_no_mount_point(host: tuple[Here, Path, Path]) -> None:
    runner, _, lock = host
    runner.env["FAIL_MOUNT"] = "1"
    token = runner.token()
    with pytest.raises(CannotStart) as said:
        mounts.mount(runner, smb(), token)
    assert str(said.value) == (
        "ws: cannot mount SMB //198.18.7.10/data (mount): mount -t cifs //198.18.7.10/data: "
        "mount error(13): Permission denied"
    )
    assert not Path(f"/tmp/nasplan-mnt-{token}").exists()
    assert not Path(f"/tmp/nasplan-mntcfg-{token}").exists()
    assert (lock / "mounts").read_text() == f"kernel /tmp/nasplan-mnt-{token}\n"  # (harmless)


def test_iscsi_discovers_logs_in_and_a_failed_login_is_logged_out(
    host: tuple[Here, Path, Path],
) -> None:
    runner, log, lock = host
    runner.env["FAIL_LOGIN"] = "1"
    iqn = "iqn.2005-10.org.freenas.ctl:scratch"
    share = mounts.Share(protocol="iscsi", server="198.18.7.10", name=iqn, lun=1)
    with pytest.raises(CannotStart, match=r"\(login\): iscsiadm login to .*login failed\)$"):
        mounts.mount(runner, share, runner.token())
    node = ["iscsiadm", "-m", "node", "-T", iqn, "-p", "198.18.7.10:3260"]
    assert [a for a in argvs(log) if a[0] == "iscsiadm"] == [
        ["iscsiadm", "-m", "discovery", "-t", "sendtargets", "-p", "198.18.7.10:3260"],
        [*node, "--login"],
        [*node, "--logout"],
    ]
    assert (lock / "mounts").read_text() == f"iscsi {iqn} 198.18.7.10:3260\n"
    assert share.describe() == f"iSCSI {iqn} LUN 1 on 198.18.7.10:3260"


def test_an_smb_password_with_a_double_quote_is_refused_for_smbnetfs(
    host: tuple[Here, Path, Path],
) -> None:
    runner, log, _ = host
    log.write_text("")
    with pytest.raises(CannotStart, match=r"\(config\): smbnetfs cannot read a user or password"):
        mounts.mount(runner, smb(how="fuse", password='a"b'), runner.token())
    assert not any(a[0] == "smbnetfs" for a in argvs(log))


def test_once_the_runs_lease_runs_out_the_watchdog_unmounts_and_removes_the_password(
    host: tuple[Here, Path, Path],
) -> None:
    """nasplan killed with the share mounted: the watchdog started with the mount (registered
    in the lock) sees the lease run out and undoes it, as every process nasplan leaves does."""
    runner, log, lock = host
    (Path(runner.env["PATH"].split(":")[0]) / "mount.cifs").unlink()  # smbnetfs
    (lock / "lease").write_text("99999999\n")  # the run alive
    found = mounts.mount(runner, smb(), runner.token())
    pid, token = (lock / "pids").read_text().split()
    assert token == found.mount_point
    assert _watching(pid)
    time.sleep(1.5)
    assert Path(found.config_dir).exists()  # lease ahead: nothing done
    (lock / "lease").write_text("0\n")  # nasplan stopped renewing it
    deadline = time.monotonic() + 10
    while Path(found.config_dir).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(found.config_dir).exists()  # the password with it
    assert argvs(log)[-1] == ["fusermount3", "-u", "-z", found.mount_point]
    deadline = time.monotonic() + 10  # (it exits just after it removed the config)
    while not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ended(pid)


def _watching(pid: str) -> bool:
    """``pid`` runs the watchdog: its command line says so once its exec has finished (a read
    while the kernel swaps its memory for the new program's gives nothing)."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if Path(f"/proc/{pid}/cmdline").read_bytes().count(b"nasplan-mount-watch") == 1:
            return True
        time.sleep(0.05)
    return False


def _ended(pid: str) -> bool:
    """Gone, or a zombie waiting for its parent (init) to reap it."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat_line.rsplit(")", 1)[1].split()[0] == "Z"


def test_a_run_that_unmounts_ends_its_watchdog(host: tuple[Here, Path, Path]) -> None:
    runner, log, lock = host
    (lock / "lease").write_text("99999999\n")
    found = mounts.mount(runner, smb(), runner.token())
    pid = (lock / "pids").read_text().split()[0]
    assert mounts.unmount(runner, found) is None
    # ended when the unmount returns: the run's release right after must not find it ending
    # (and say the run left it behind)
    assert _ended(pid)
    assert [a[0] for a in argvs(log)].count("umount") == 1  # the run's own, not the watchdog's


def test_unmounting_removes_what_the_test_made_in_the_share_and_nothing_else(
    host: tuple[Here, Path, Path],
) -> None:
    """A test cut short (Ctrl-C) leaves its directory in the share: removed before unmounting,
    by this test's token only (another run's and the NAS's own are not this test's). The
    stand-in mount leaves the share's files in the mount point: rmdir keeps them too."""
    runner, _, _ = host
    token = runner.token()
    found = mounts.mount(runner, smb(), token)
    share = Path(found.path)
    (share / f"nasplan-fio-{token}").mkdir()
    (share / f"nasplan-fio-{token}" / "fio.bin").write_text("x")
    (share / "nasplan-fio-otherrun").mkdir()
    (share / "photos").mkdir()
    assert mounts.unmount(runner, found, str(share)) is None
    assert {p.name for p in share.iterdir()} == {"nasplan-fio-otherrun", "photos"}


def test_iscsi_with_chap_through_iscsiadm_never_puts_the_secret_in_argv(
    host: tuple[Here, Path, Path],
) -> None:
    """(iscsiadm is a stand-in: the lab's kernel has no iscsi_tcp)"""
    runner, log, lock = host
    iqn = "iqn.2005-10.org.freenas.ctl:scratch"
    share = mounts.Share(protocol="iscsi", server="198.18.7.10", name=iqn, lun=1, user="ann",
                         password=PASSWORD)  # fmt: skip
    runner.env["FAIL_LOGIN"] = "1"  # (after the CHAP user is given)
    with pytest.raises(CannotStart, match=r"\(login\): iscsiadm login to "):
        mounts.mount(runner, share, runner.token())
    assert PASSWORD not in "".join("|".join(a) for a in argvs(log))
    node = ["iscsiadm", "-m", "node", "-T", iqn, "-p", "198.18.7.10:3260"]
    assert [*node, "--login"] in argvs(log) and [*node, "--logout"] in argvs(log)
    assert (lock / "mounts").read_text() == f"iscsi {iqn} 198.18.7.10:3260\n"


@pytest.mark.parametrize("protocol", ["nfs", "iscsi"])
def test_without_a_kernel_client_nfs_and_iscsi_go_through_the_user_space_bridge(
    host: tuple[Here, Path, Path], protocol: str
) -> None:
    """No nfs or iscsi_tcp module (modinfo fails, as in a container): nbdfuse serves the
    bridge's one file; the CHAP secret reaches it in a 0600 file, never in argv."""
    runner, log, lock = host
    (Path(runner.env["PATH"].split(":")[0]) / "modinfo").write_text("#!/bin/sh\nexit 1\n")
    iqn = "iqn.2005-10.org.freenas.ctl:scratch"
    name, extra = (
        ("/volume1/data", {"path": "bench", "size_bytes": 16 << 20})
        if (protocol == "nfs")
        else (iqn, {"lun": 1, "user": "ann", "password": PASSWORD})
    )
    share = mounts.Share(protocol=protocol, server="198.18.7.10", name=name, **extra)  # type: ignore[arg-type]
    token = runner.token()
    problems: list[str] = []
    with mounts.mounted(runner, share, token, problems, "bench") as found:
        assert found.bridged and found.path == f"{found.mount_point}/nbd"
        library = "libnfs" if protocol == "nfs" else "libiscsi"
        assert found.describe() == (
            f"{share.describe()} through the user-space bridge ({library}, nbdfuse)"
        )
        (nbdfuse,) = [a for a in argvs(log) if a[0] == "nbdfuse"]
        cfg = found.config_dir
        assert nbdfuse[3:7] == [found.mount_point, "--command", "python3", f"{cfg}/nbd_bridge.py"]
        assert (Path(cfg) / "nbd_bridge.py").read_text() == mounts.BRIDGE
        assert (lock / "mounts").read_text() == f"fuse {found.mount_point}\n"
    if protocol == "nfs":
        assert nbdfuse[7:] == ["nfs", "198.18.7.10", "/volume1/data",
                               f"/bench/nasplan-nbd-{token}", str(16 << 20), "--running",
                               f"{cfg}/running"]  # fmt: skip
    else:
        assert nbdfuse[7:11] == ["iscsi", "198.18.7.10:3260", iqn, "1"]
        assert f"chap mode 600\nann\n{PASSWORD}\n" in log.read_text()
        assert PASSWORD not in "".join("|".join(a) for a in argvs(log))
    assert problems == []
    assert argvs(log)[-1] == ["fusermount3", "-u", found.mount_point]
    assert not Path(cfg).exists()  # (the stand-in's nbd file keeps the mount point here)


def test_with_mount_auto_an_nfs_kernel_mount_that_fails_falls_back_to_the_bridge(
    host: tuple[Here, Path, Path],
) -> None:
    runner, log, lock = host
    runner.env["FAIL_MOUNT"] = "1"
    share = mounts.Share(protocol="nfs", server="198.18.7.10", name="/volume1/data",
                         size_bytes=1 << 20)  # fmt: skip
    token = runner.token()
    with mounts.mounted(runner, share, token, []) as found:
        assert found.bridged and found.path == f"{found.mount_point}/nbd"
        assert found.describe() == (
            "NFS 198.18.7.10:/volume1/data through the user-space bridge (libnfs, nbdfuse) "
            "(the kernel's mount failed: mount error(13): Permission denied)"
        )
        assert (lock / "mounts").read_text().split("\n")[:2] == [
            f"kernel {found.mount_point}", f"fuse {found.mount_point}",
        ]  # fmt: skip
    assert [a[:3] for a in argvs(log) if a[0] in ("mount", "nbdfuse")] == [
        ["mount", "-t", "nfs"], ["nbdfuse", "-P", f"{found.config_dir}/nbdfuse.pid"],
    ]  # fmt: skip
    # asked for the kernel's client, its failure is the test's
    with pytest.raises(CannotStart, match=r"\(mount\): mount -t nfs 198.18.7.10:/volume1/data: "):
        mounts.mount(runner, dataclasses.replace(share, how="kernel"), token + "k")
