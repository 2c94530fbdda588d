"""One command on a new channel of a host's SSH link, watched while the host answers its exec
request: a slow host waited for, a silent connection replaced, a host silent for a lease lost.

paramiko waits for the answer to the exec request without a limit. Every channel_s without it,
the watchdog asks whether the connection still answers (a new channel within channel_s): a host
that does is slow, not gone (a loaded machine), and the wait goes on, up to the command's own
timeout (then only this channel is closed). One that does not is silent: replaced by a new
connection (``SshLink.replace``) while the wait goes on; a host that answers on none for a whole
lease is lost: closing the transport ends every wait on it. A transport is never closed for one
slow answer: other threads' commands share it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

import paramiko

from nasplan.remote.runner import Result
from nasplan.remote.ssh_link import SshLink
from nasplan.units import format_seconds

T = TypeVar("T")


def on_channel(
    link: SshLink,
    command: str,
    timeout_s: float,
    stdin: str | None,
    mark_lost: bool = True,
    *,
    send_eof: bool,
    collect: Callable[[paramiko.Channel], T],
    timed_out: Callable[[Result], T],
    keep: Callable[[T], bool] = lambda _: False,
) -> T:
    """``command`` on a new channel, what ``collect`` makes of it; the channel is closed
    after, unless ``keep`` says what was collected still runs on it. ``send_eof``: an EOF after
    the input even without any (never to a POSIX script without input: see
    ``SshRunner._input_safe``)."""
    asked = time.monotonic()
    deadline = asked + timeout_s
    transport, channel = link.open_channel(asked, deadline, mark_lost)
    if channel is None:
        return timed_out(_timeout(command, timeout_s))
    answered = threading.Event()
    outcome: list[str] = []
    watchdog = threading.Thread(
        target=_watch,
        args=(link, transport, channel, asked, deadline, answered, outcome),
        name=f"exec-watchdog {link.name}",
        daemon=True,
    )
    kept = False
    try:
        channel.settimeout(link.timeouts.channel_s)
        watchdog.start()
        try:
            channel.exec_command(command)
        finally:
            answered.set()
        if stdin:
            channel.sendall(stdin.encode())
        if stdin is not None or send_eof:
            channel.shutdown_write()
        collected = collect(channel)
        link.heard()
        kept = keep(collected)
        return collected
    except (paramiko.SSHException, OSError, EOFError) as exc:
        if outcome == ["timed out"]:
            return timed_out(_timeout(command, timeout_s))
        reason = str(exc) or type(exc).__name__
        if transport is not link.current():
            # its connection went silent and was replaced: the host answers on the new one,
            # what this command did there is not known
            said = f"SSH connection lost while it ran ({reason}); its outcome is unknown"
            return timed_out(Result(command, "", said, 255))
        if outcome == ["lost"]:
            raise link.lose(link.silence(asked), mark_lost) from None
        raise link.lose(f"SSH connection lost: {reason}", mark_lost) from None
    finally:
        if not kept:
            channel.close()


def _timeout(command: str, timeout_s: float) -> Result:
    return Result(command, "", f"timed out after {format_seconds(timeout_s)}", 124)


def _watch(
    link: SshLink,
    transport: paramiko.Transport,
    channel: paramiko.Channel,
    asked: float,
    deadline: float,
    answered: threading.Event,
    outcome: list[str],
) -> None:
    """Until ``answered``: every channel_s, whether the host still answers (see the module's
    doc); ``outcome`` says why the watch ended the wait (``timed out``, ``lost``)."""
    channel_s = link.timeouts.channel_s
    while not answered.wait(channel_s):
        if time.monotonic() > deadline:
            outcome.append("timed out")
            channel.close()
            return
        if _answers(transport, channel_s) or answered.is_set():
            link.heard()
            continue
        link.replace(transport, link.patience_end(asked))
        if link.current() is transport and time.monotonic() >= link.patience_end(asked):
            outcome.append("lost")
            transport.close()
            return


def _answers(transport: paramiko.Transport, channel_s: float) -> bool:
    """Whether the host still answers on ``transport``: a new channel opened within
    ``channel_s`` (and closed again), or refused (e.g. sshd's MaxSessions reached)."""
    try:
        probe = transport.open_session(timeout=channel_s)
    except paramiko.ChannelException:
        return True
    except (paramiko.SSHException, OSError, EOFError):
        return False
    probe.close()
    return True
