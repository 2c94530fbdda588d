"""Lab iSCSI target: Debian's user-space ``tgtd`` with one file-backed scratch LUN (``iscsi``).

tgtd runs in the host's network namespace and in a mount namespace of its own, a child of the
host's (its private /tmp), with its own ``/run``, so its control socket never meets the
machine's or another lab host's; ``tgtadm`` reaches it with ``nsenter`` into tgtd's namespaces.
Everything else (the LUN's backing file, the CHAP secret in a 0600 file, logs) lives under
``<state>/hosts/<host>/iscsi``, unless the LUN is on one of the host's volumes
(``iscsi: {volume: NAME}``): then it is a sparse file at the volume's root, on the same disks
as the volume's SMB share and NFS export, so iSCSI and SMB compare protocols, not storage.
tgtd ignores SIGTERM: ``stop`` asks it to exit through tgtadm.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nasplan.errors import LabError
from nasplan.lab import daemon, netns
from nasplan.lab.state import InRoot
from nasplan.units import parse_size

TGTD = "/usr/sbin/tgtd"
TGTADM = "/usr/sbin/tgtadm"
ISCSI_PORT = 3260
TARGET_ID = 1
LUN = 1
CHAP_USER = "nasplan"
CHAP_SECRET_ENV = "NASPLAN_LAB_ISCSI_SECRET"
DEFAULT_LUN_SIZE = "64MiB"
READY_TIMEOUT_S = 15.0
TGTADM_TIMEOUT_S = 10.0
# a LUN on one of the host's volumes (``iscsi: {volume: NAME}``): this file at the volume's root
VOLUME_LUN_NAME = ".nasplan-iscsi-lun1.img"


@dataclass(frozen=True)
class IscsiFiles:
    """Where a host's target lives: LUN backing file, secret, settings, logs, PID."""

    root: Path

    lun_path = InRoot("lun1.img")
    secret_path = InRoot("chap-secret")
    settings_path = InRoot("target.json")
    out_path = InRoot("tgtd.out")
    pid_path = InRoot("tgtd.pid")


def iscsi_files(host_dir: Path) -> IscsiFiles:
    """The iSCSI layout under a lab host's state directory."""
    return IscsiFiles(host_dir / "iscsi")


def target_iqn(host_name: str) -> str:
    """The lab target's IQN for a host: ``iqn.2026-12.lab.nasplan:<host>.scratch``."""
    return f"iqn.2026-12.lab.nasplan:{host_name.lower()}.scratch"


def start_script() -> str:
    """Shell text: a private ``/run`` holding tgtd's control socket, then exec tgtd."""
    return "\n".join(
        [
            "set -e",
            "mount -t tmpfs -o mode=0755 nasplan-iscsi-run /run",
            "mkdir -p /run/tgtd",
            f'exec {shlex.quote(TGTD)} -f --iscsi "portal=$1"',
        ]
    )


def tgtadm(pid: int, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run tgtadm inside tgtd's network and mount namespaces (where its socket is)."""
    argv = ["nsenter", "-t", str(pid), "-m", "-n", TGTADM, "--lld", "iscsi", *args]
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, check=False, timeout=TGTADM_TIMEOUT_S
        )
    except subprocess.TimeoutExpired as exc:
        raise LabError(f"tgtadm {' '.join(args[:4])} timed out") from exc


def configure_commands(iqn: str, lun_path: Path | str, chap_secret: str | None) -> list[list[str]]:
    """tgtadm arguments: target, LUN 1 on ``lun_path``, open to all initiators, CHAP account.

    tgtadm takes the CHAP password only as an argument: it lives there for the few
    milliseconds of the lab's own setup, before any measurement, inside the lab's namespace.
    """
    tid = str(TARGET_ID)
    commands = [
        ["--op", "new", "--mode", "target", "--tid", tid, "-T", iqn],
        ["--op", "new", "--mode", "logicalunit", "--tid", tid, "--lun", str(LUN),
         "-b", str(lun_path)],
        ["--op", "bind", "--mode", "target", "--tid", tid, "-I", "ALL"],
    ]  # fmt: skip
    if chap_secret is not None:
        commands += [
            ["--op", "new", "--mode", "account", "--user", CHAP_USER, "--password", chap_secret],
            ["--op", "bind", "--mode", "account", "--tid", tid, "--user", CHAP_USER],
        ]
    return commands


def target_settings(host_name: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """What target.json holds for a host's ``iscsi`` options: ``{iqn, lun, lun_size_bytes,
    chap_user, volume}`` (chap_user None without CHAP; volume None for a LUN in the lab's
    state directory), from the lab file alone."""
    chap = bool(options.get("chap", True))
    return {
        "iqn": target_iqn(host_name),
        "lun": LUN,
        "lun_size_bytes": parse_size(options.get("lun_size", DEFAULT_LUN_SIZE)),
        "chap_user": CHAP_USER if chap else None,
        "volume": options.get("volume"),
    }


def lun_path(
    files: IscsiFiles, settings: Mapping[str, Any], volumes: Mapping[str, str] | None
) -> str:
    """The LUN's backing file as tgtd sees it: a hidden file at the root of its volume
    (``volumes``: name -> path where tgtd sees it), else in the state directory."""
    if settings.get("volume") is None:
        return str(files.lun_path)
    return f"{(volumes or {})[settings['volume']].rstrip('/')}/{VOLUME_LUN_NAME}"


def setup_iscsi(
    host_dir: Path,
    host_name: str,
    options: Mapping[str, Any],
    *,
    sshd_pid: int | None = None,
    volumes: Mapping[str, str] | None = None,
) -> IscsiFiles:
    """Make the sparse LUN file (``lun_path``: on its volume, in the mount namespace of the
    host whose sshd is ``sshd_pid``, where the options name one), the CHAP secret (0600) and
    target.json; the layout."""
    files = iscsi_files(host_dir)
    files.root.mkdir(parents=True, exist_ok=True)
    files.root.chmod(0o700)
    settings = target_settings(host_name, options)
    if settings["volume"] is not None:
        assert sshd_pid is not None
        path = lun_path(files, settings, volumes)
        _make_lun_on_host(sshd_pid, path, settings["lun_size_bytes"])
    else:
        with files.lun_path.open("wb") as handle:
            handle.truncate(settings["lun_size_bytes"])
    if settings["chap_user"]:
        descriptor = os.open(files.secret_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as handle:
            # iSCSI CHAP secrets are 12 to 16 characters for most initiators and targets.
            handle.write(secrets.token_hex(8) + "\n")
    files.settings_path.write_text(json.dumps(settings) + "\n")
    return files


def _make_lun_on_host(sshd_pid: int, path: str, size_bytes: int) -> None:
    """A sparse file of ``size_bytes`` at ``path`` in the host's mount namespace."""
    argv = ["nsenter", f"--target={sshd_pid}", "--mount", "--",
            "truncate", "-s", str(size_bytes), "--", path]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise LabError(f"cannot make the iSCSI LUN {path}: {done.stderr.strip()}")


def read_secret(host_dir: Path) -> str | None:
    """The lab target's CHAP secret (from its 0600 file), or None without CHAP."""
    try:
        return iscsi_files(host_dir).secret_path.read_text().strip() or None
    except FileNotFoundError:
        return None


def start_iscsi(
    sshd_pid: int,
    address: str,
    host_dir: Path,
    host_name: str,
    options: Mapping[str, Any],
    volumes: Mapping[str, str] | None = None,
) -> list[int]:
    """Set up and start tgtd on ``address``:3260 of the host whose sshd is ``sshd_pid``
    (its LUN on one of ``volumes``, name -> path where tgtd sees it, when options name one),
    configure it; its PID."""
    for program in (TGTD, TGTADM):
        if not Path(program).exists():
            raise LabError(f"{program} is missing: apt-get install tgt")
    files = setup_iscsi(host_dir, host_name, options, sshd_pid=sshd_pid, volumes=volumes)
    argv = [*daemon.OWN_MOUNTS, "sh", "-c", start_script(), "sh", f"{address}:{ISCSI_PORT}"]
    pid = daemon.spawn_on_host(sshd_pid, argv, files.out_path)
    files.pid_path.write_text(f"{pid}\n")
    try:
        daemon.wait_listening("tgtd", address, ISCSI_PORT, pid, files.out_path, READY_TIMEOUT_S)
        settings = json.loads(files.settings_path.read_text())
        lun = lun_path(files, settings, volumes)
        for args in configure_commands(settings["iqn"], lun, read_secret(host_dir)):
            done = tgtadm(pid, args)
            if done.returncode != 0:
                raise LabError(f"tgtadm {' '.join(args[:4])}: {done.stderr.strip()}")
    except LabError as exc:
        stop(host_dir)
        netns.stop_pids([pid])
        raise LabError(f"iSCSI target for {address} did not start: {exc}") from exc
    return [pid]


def stop(host_dir: Path) -> None:
    """Ask a host's tgtd to exit (it ignores SIGTERM); nothing when it is not running."""
    pid = _pid(iscsi_files(host_dir))
    if pid is not None and netns.pid_alive(pid):
        # tgtd leaves only once it has no target; --force ends a session still logged in.
        tgtadm(pid, ["--op", "delete", "--mode", "target", "--tid", str(TARGET_ID), "--force"])
        tgtadm(pid, ["--op", "delete", "--mode", "system"])


def inventory_vars(host_dir: Path) -> dict[str, Any]:
    """Host vars: ``{"iscsi": {iqn, lun, port, scratch, chap_user, chap_secret_env, ...}}``.

    The secret is not among them: it stays in the 0600 file; users export it into the
    environment variable named by ``chap_secret_env``.
    """
    files = iscsi_files(host_dir)
    if not files.settings_path.exists():
        return {}
    return vars_of(json.loads(files.settings_path.read_text()), files)


def vars_of(settings: Mapping[str, Any], files: IscsiFiles) -> dict[str, Any]:
    """Host vars of a target's settings (what ``inventory_vars`` gives once target.json is
    written; ``nasplan validate`` uses it before the lab is up)."""
    found: dict[str, Any] = {
        "iqn": settings["iqn"],
        "lun": settings["lun"],
        "port": ISCSI_PORT,
        "lun_size_bytes": settings["lun_size_bytes"],
        "scratch": True,
    }
    if settings.get("volume"):
        found["volume"] = settings["volume"]
    if settings.get("chap_user"):
        found.update(
            chap_user=settings["chap_user"],
            chap_secret_env=CHAP_SECRET_ENV,
            chap_secret_file=str(files.secret_path),
        )
    return {"iscsi": found}


def problems(host_name: str, host_dir: Path) -> list[str]:
    """What is wrong with a host's target (empty when it runs or the host has none)."""
    files = iscsi_files(host_dir)
    if not files.settings_path.exists():
        return []
    pid = _pid(files)
    if pid is None:
        return [f"{host_name}: tgtd has no PID file {files.pid_path}"]
    if not netns.pid_alive(pid):
        return [f"{host_name}: tgtd (PID {pid}) is not running"]
    return []


def _pid(files: IscsiFiles) -> int | None:
    try:
        return int(files.pid_path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
