"""A command's output read off its SSH channel: all of it until it ends (a ``Result``), or until
it printed its ready markers (a ``Launched`` left running, its output read on as it comes)."""

from __future__ import annotations

import select
import time
from collections.abc import Callable, Sequence

import paramiko

from nasplan.remote.runner import Launched, Result
from nasplan.units import format_seconds

_READ_CHUNK_BYTES = 65536
# how a read of a channel's output ended
_READY, _ENDED, _TIMED_OUT = "ready", "ended", "timed out"


def collect(channel: paramiko.Channel, shown: str, timeout_s: float | None) -> Result:
    """What the command on ``channel`` printed and its exit status once it ended; 124 once
    ``timeout_s`` passed first (its output so far kept)."""
    stdout, stderr, how = _read(channel, timeout_s, None)
    return _result(channel, shown, stdout, stderr, timeout_s if how == _TIMED_OUT else None)


def until(
    markers: Sequence[str], shown: str, timeout_s: float
) -> Callable[[paramiko.Channel], Launched]:
    """Read a channel's output until it holds every one of ``markers`` (then it is left open)
    or its end."""
    wanted = [marker.encode() for marker in markers]

    def collect_until(channel: paramiko.Channel) -> Launched:
        stdout, stderr, how = _read(channel, timeout_s, wanted)
        text = stdout.decode(errors="replace")
        if how != _READY:
            ended = _result(
                channel, shown, stdout, stderr, timeout_s if how == _TIMED_OUT else None
            )
            return Launched(text, ended)
        return Launched(
            text,
            None,
            channel.close,
            lambda seconds: _exits_within(channel, seconds),
            lambda: _read_ready(channel),
        )

    return collect_until


def _read(
    channel: paramiko.Channel, timeout_s: float | None, wanted: Sequence[bytes] | None
) -> tuple[bytearray, bytearray, str]:
    """A channel's standard output and error until its standard output holds every one of
    ``wanted`` (None: until its end), its command ended, or ``timeout_s`` passed; and which."""
    stdout, stderr = bytearray(), bytearray()
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        if channel.recv_ready():
            stdout += channel.recv(_READ_CHUNK_BYTES)
            if wanted is not None and all(marker in stdout for marker in wanted):
                return stdout, stderr, _READY
            continue
        if channel.recv_stderr_ready():
            stderr += channel.recv_stderr(_READ_CHUNK_BYTES)
            continue
        if channel.exit_status_ready() and (channel.eof_received or channel.closed):
            return stdout, stderr, _ENDED
        if deadline is not None and time.monotonic() > deadline:
            return stdout, stderr, _TIMED_OUT
        if channel.eof_received:
            # after EOF paramiko's pipe stays readable: select would return at once until the
            # exit status comes (sshd sends it once it reaped the command), a busy loop on the
            # control node's CPU for every command; wait for the status itself
            channel.status_event.wait(0.05)
            continue
        select.select([channel], [], [], 0.05)


def _result(
    channel: paramiko.Channel,
    shown: str,
    stdout: bytearray,
    stderr: bytearray,
    timed_out_s: float | None,
) -> Result:
    """The Result of an ended command, or (``timed_out_s``) of one that outlived it (124)."""
    text = stdout.decode(errors="replace")
    if timed_out_s is not None:
        return Result(shown, text, f"timed out after {format_seconds(timed_out_s)}", 124)
    return Result(shown, text, stderr.decode(errors="replace"), channel.recv_exit_status())


def _read_ready(channel: paramiko.Channel) -> str | None:
    """What came on ``channel``'s standard output since the last read, without waiting ("":
    nothing); None once it ended or was closed. Its standard error is left where it is."""
    got = bytearray()
    try:
        while channel.recv_ready():
            got += channel.recv(_READ_CHUNK_BYTES)
    except (paramiko.SSHException, OSError, EOFError):
        return None
    if not got and (channel.closed or channel.eof_received):
        return None
    return got.decode(errors="replace")


def _exits_within(channel: paramiko.Channel, seconds: float) -> bool:
    """Whether the command on ``channel`` ended (its exit status came) within ``seconds``."""
    channel.status_event.wait(seconds)
    return channel.exit_status_ready()
