"""The user-space iSCSI initiator nasplan drives: ``iscsi_rw.py`` over libiscsi, on the client.

Why not Debian's ``libiscsi-bin`` tools themselves: they ship no ``iscsi-dd`` (upstream keeps
it among the examples), and ``iscsi-perf`` only reads, for a fixed time rather than N bytes,
and prints MiB/s labelled "MB/s". ``iscsi_rw.py`` calls the same library (``libiscsi.so.7``)
through Python's ctypes: a timed sequential write (ended by SYNCHRONIZE CACHE) or read of N
bytes, several requests in flight, one JSON line out. No kernel module, no mount.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from nasplan.errors import ToolError
from nasplan.remote.runner import Result, Runner

SCRIPT_NAME = "iscsi_rw.py"
SCRIPT = resources.files("nasplan.measure.kinds.iscsi").joinpath(SCRIPT_NAME).read_text()
DEFAULT_PORT = 3260
INITIATOR_NAME = "iqn.2026-12.dev.nasplan:initiator"
# The script's own exit status for a failure it explains in its JSON line.
EXIT_EXPLAINED = 3


class IscsiError(ToolError):
    """An initiator run failed; ``stage`` is load, login, capacity, write, read or sync."""

    def __init__(self, message: str, stage: str = "run") -> None:
        super().__init__(message)
        self.stage = stage


@dataclass(frozen=True)
class Target:
    """Where the LUN is: portal address and port, IQN, LUN number, optional CHAP user."""

    address: str
    iqn: str
    lun: int
    port: int = DEFAULT_PORT
    chap_user: str | None = None

    @property
    def portal(self) -> str:
        return (
            f"[{self.address}]:{self.port}"
            if ":" in self.address
            else f"{self.address}:{self.port}"
        )

    @property
    def url(self) -> str:
        """``iscsi://198.18.0.10:3260/iqn.../1``: for messages (no user, no secret in it)."""
        return f"iscsi://{self.portal}/{self.iqn}/{self.lun}"


# what install_argv prints (and nothing else) when the client has no python3
NO_PYTHON = "@@nasplan:no-python3@@"


def install_argv() -> list[str]:
    """Look for python3 (NO_PYTHON printed without it, nothing made), then make a private temp
    dir, write the script (from stdin) into it, print the dir: one round trip."""
    script = (
        f"command -v python3 >/dev/null 2>&1 || {{ echo {NO_PYTHON}; exit 1; }}; "
        'd=$(mktemp -d "${TMPDIR:-/tmp}/nasplan-iscsi.XXXXXX") && '
        f'cat > "$d/{SCRIPT_NAME}" && printf "%s\\n" "$d"'
    )
    return ["sh", "-c", script]


def probe_argv(python: str, directory: str) -> list[str]:
    """Load libiscsi and exit: tells whether the client can run the initiator at all."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import iscsi_rw as m; m.load_library(); "
        "print('libiscsi ok')"
    )
    return [python, "-c", code, directory]


def rw_argv(
    python: str,
    directory: str,
    target: Target,
    direction: str,
    size_bytes: int,
    request_bytes: int,
    queue_depth: int,
) -> list[str]:
    """One timed sequential ``direction`` of ``size_bytes``; the CHAP secret goes on stdin."""
    argv = [
        python, f"{directory.rstrip('/')}/{SCRIPT_NAME}",
        "--portal", target.portal,
        "--iqn", target.iqn,
        "--lun", str(target.lun),
        "--direction", direction,
        "--size-bytes", str(size_bytes),
        "--request-bytes", str(request_bytes),
        "--depth", str(queue_depth),
        "--initiator", INITIATOR_NAME,
    ]  # fmt: skip
    if target.chap_user:
        argv += ["--chap-user", target.chap_user]
    return argv


def cleanup_argv(directory: str) -> list[str]:
    return ["rm", "-rf", "--", directory]


def parse_output(stdout: str) -> dict[str, Any]:
    """The script's JSON line -> ``{"direction", "bytes", "duration_s", "login_s", ...}``.

    Raises IscsiError with the script's own message (``{"error", "stage"}``) or, when no JSON
    line came (python3 missing, killed), with the text that came instead.
    """
    for line in reversed(stdout.strip().splitlines()):
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError:
                continue
            if not isinstance(found, dict):
                continue
            if found.get("error"):
                raise IscsiError(str(found["error"]), str(found.get("stage") or "run"))
            if not isinstance(found.get("duration_s"), (int, float)) or found["duration_s"] <= 0:
                raise IscsiError(f"no duration in the initiator's output: {line}")
            return found
    tail = stdout.strip().splitlines()[-1:] or ["no output"]
    raise IscsiError(f"the initiator printed no result ({tail[0]})")


def run_once(
    runner: Runner, argv: list[str], secret: str | None, timeout_s: float
) -> tuple[str, dict[str, Any]]:
    """One timed run of ``rw_argv``'s ``argv`` on the client: (raw output, parsed result);
    IscsiError when it failed."""
    result: Result = runner.run(
        argv, stdin=f"{secret}\n" if secret is not None else None, timeout_s=timeout_s
    )
    raw = result.stdout + (f"\n[stderr]\n{result.stderr}" if result.stderr.strip() else "")
    try:
        parsed = parse_output(result.stdout)
    except IscsiError as exc:
        if result.exited not in (0, EXIT_EXPLAINED) and exc.stage == "run":
            detail = (result.stderr.strip().splitlines() or ["no message"])[-1]
            raise IscsiError(f"initiator exited {result.exited}: {detail}") from exc
        raise
    return raw, parsed
