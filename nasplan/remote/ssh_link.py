"""A host's SSH connection kept usable: a new channel on it for each command, a connection that
went silent replaced by a new one, the host lost once it answered on none for a whole lease.

After an outage of the path TCP retransmits on a connection only after a backoff that doubles
with each try: the old connection stays silent about as long again as the outage lasted, while
a new one answers as soon as the path is back. Commands running on a replaced connection end
there (it is closed with the link).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import paramiko
from fabric import Connection

from nasplan.errors import HostError, HostLostError
from nasplan.remote import ssh_route
from nasplan.remote.timeouts import Timeouts

# between two tries at a new connection in place of a silent one that failed at once (refused)
_RECONNECT_PAUSE_S = 0.5

# opens a new connection to the host within the seconds given: it and its jump hosts' (HostError)
Reconnect = Callable[[float], tuple[Connection, tuple[Connection, ...]]]


@dataclass(eq=False)
class SshLink:
    """One host's current SSH connection, the jump hosts' it rides on and those it replaced."""

    name: str
    connection: Connection
    # the jump hosts' connections the host's rides on, first hop first (closed with it)
    jumps: tuple[Connection, ...]
    timeouts: Timeouts
    reconnect: Reconnect
    # Set once the host stopped answering: later commands fail at once, not after a timeout.
    lost: str | None = field(default=None, init=False)
    # when the host last answered (time.monotonic): a channel opened, a command's result
    heard_at: float = field(default_factory=time.monotonic, init=False)
    # connections that went silent and were replaced (and the jump connections they rode on):
    # their commands may still end on them; closed with the link
    _silent: list[Connection] = field(default_factory=list, init=False)
    _replacing: threading.Lock = field(default_factory=threading.Lock, init=False)
    _closed: bool = field(default=False, init=False)
    # why the last try at a new connection in place of a silent one failed
    _reconnect_error: str | None = field(default=None, init=False)

    def heard(self) -> None:
        """The host answered just now."""
        self.heard_at = time.monotonic()

    def lose(self, reason: str, mark: bool = True) -> HostLostError:
        """The error for a host gone for ``reason``; ``mark``: its later commands fail at once."""
        message = f"{self.name}: {reason}"
        if mark:
            self.lost = self.lost or message
        return HostLostError(self.name, self.lost or message)

    def current(self) -> paramiko.Transport | None:
        """The transport of the connection new commands go on."""
        transport: paramiko.Transport | None = self.connection.client.get_transport()
        return transport

    def patience_end(self, asked: float) -> float:
        """When a host silent since ``asked`` counts as lost: a lease after the later of that
        and its last answer (what the run started there has stopped by itself by then)."""
        return max(asked, self.heard_at) + self.timeouts.lease_s

    def silence(self, asked: float) -> str:
        """Why a host silent since ``asked`` counts as lost, in a user's words."""
        silent_s = time.monotonic() - max(asked, self.heard_at)
        tried = f" (a new connection: {self._reconnect_error})" if self._reconnect_error else ""
        return f"host stopped answering: no answer for {silent_s:.0f} s{tried}"

    def open_channel(
        self, asked: float, deadline: float, mark_lost: bool
    ) -> tuple[paramiko.Transport, paramiko.Channel | None]:
        """A new channel on the current connection and that connection; no channel (None)
        when ``deadline`` passed first. A connection that gives none within channel_s is
        silent and replaced by a new one (``replace``); the host is lost (HostLostError)
        once none answered for a whole lease, or at once when its connection ended."""
        channel_s = self.timeouts.channel_s
        while True:
            if self.lost:
                raise HostLostError(self.name, self.lost)
            transport = self.current()
            if transport is None or not transport.is_active():
                # a connection that has ended is gone, not slow: lost, whoever asked
                reason = self._jump_lost() or "SSH connection lost"
                self.close_jumps()
                raise self.lose(reason, True)
            now = time.monotonic()
            until = min(deadline, self.patience_end(asked))
            try:
                channel = transport.open_session(timeout=max(0.1, min(channel_s, until - now)))
            except (paramiko.SSHException, OSError, EOFError) as exc:
                reason = str(exc) or type(exc).__name__
                if "Timeout" not in reason:
                    raise self.lose(f"SSH connection lost: {reason}", mark_lost) from None
                self.replace(transport, until)
                if time.monotonic() < until:
                    continue
                if time.monotonic() < deadline:
                    raise self.lose(self.silence(asked), mark_lost) from None
                return transport, None
            self.heard()
            return transport, channel

    def replace(self, silent: paramiko.Transport, until: float) -> None:
        """Put a new connection in place of ``silent`` (no channel within channel_s), trying
        until ``until``; nothing when another thread did already."""
        if not self._replacing.acquire(timeout=max(0.0, until - time.monotonic())):
            return
        try:
            while self.current() is silent and not self.lost and not self._closed:
                left_s = until - time.monotonic()
                if left_s <= 0:
                    return
                try:
                    connection, jumps = self.reconnect(min(self.timeouts.connect_s, left_s))
                except HostError as exc:
                    self._reconnect_error = str(exc).removeprefix(f"{self.name}: ")
                    time.sleep(min(_RECONNECT_PAUSE_S, max(0.0, until - time.monotonic())))
                    continue
                if self._closed:  # the run let go of the host meanwhile
                    _close_all([connection, *reversed(jumps)])
                    return
                # the new connection rides on jump connections of its own
                self._silent += [self.connection, *reversed(self.jumps)]
                self.connection, self.jumps = connection, jumps
                self.heard()
        finally:
            self._replacing.release()

    def _jump_lost(self) -> str | None:
        """Which jump host's connection ended, if one did (the host's ends with it)."""
        for hop in self.jumps:
            transport = hop.client.get_transport()
            if transport is None or not transport.is_active():
                return f"SSH connection lost: the jump host {ssh_route.label(hop)} closed it"
        return None

    def close_jumps(self) -> None:
        """Close the jump hosts' connections, last hop first."""
        _close_all(reversed(self.jumps))

    def close(self) -> None:
        """Close the connection (and those it replaced), then the jump hosts' it rode on."""
        self._closed = True
        try:
            _close_all([*self._silent, self.connection])
        finally:
            self.close_jumps()


def _close_all(connections: Iterable[Connection]) -> None:
    """Close each of ``connections``; one that fails to close (a silent one, one already gone)
    does not stop the rest."""
    for connection in connections:
        with contextlib.suppress(Exception):
            connection.close()
