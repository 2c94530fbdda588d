"""The one place that opens SSH connections: strict host keys, argv quoted, results as values."""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import paramiko
from fabric import Connection

from nasplan.errors import HostError, HostLostError
from nasplan.input.inventory import Host, ssh_file_errors
from nasplan.remote import become, host_keys, local, shell, ssh_route
from nasplan.remote.runner import Launched, Result, Runner, RunnerBase
from nasplan.remote.timeouts import Timeouts, from_environ
from nasplan.units import format_seconds

_READ_CHUNK_BYTES = 65536
T = TypeVar("T")
# Prefixed to a POSIX script (see SshRunner._input_safe): without input it reads /dev/null
# (nasplan sends it no EOF); with input, its shell reads the rest of it before it ends.
_NO_INPUT = "exec </dev/null\n"
_DRAIN_INPUT = "trap 'cat >/dev/null 2>&1' EXIT\n"
# between two tries at a new connection in place of a silent one that failed at once (refused)
_RECONNECT_PAUSE_S = 0.5

# paramiko logs a connection that fails in its own thread (a host whose sshd froze: "Error
# reading SSH protocol banner") as a traceback at ERROR, which Python's last-resort handler
# prints on the terminal. nasplan says what failed itself, in one line: paramiko's log goes
# only where the user's own logging set-up sends it.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


class SshRunner(RunnerBase):
    """Runs commands on one host over one SSH connection (a ``nasplan.remote.runner.Runner``)."""

    def __init__(
        self,
        host: Host,
        connection: Connection,
        become_password: str | None = None,
        timeouts: Timeouts | None = None,
        jumps: Sequence[Connection] = (),
    ) -> None:
        self.name = host.name
        self.host = host
        self.connection = connection
        # the jump hosts' connections the host's rides on, first hop first (closed with it)
        self.jumps = tuple(jumps)
        self.is_root = host.user == "root"
        self.become_password = become_password
        self.timeouts = timeouts or Timeouts()
        # Set once the host stopped answering: later commands fail at once, not after a timeout.
        self.lost: str | None = None
        self.host_shell: shell.HostShell = shell.POSIX
        # when the host last answered (time.monotonic): a channel opened, a command's result
        self._heard_at = time.monotonic()
        # connections that went silent and were replaced (and the jump connections they rode
        # on): their commands may still end on them; closed with the runner
        self._silent: list[Connection] = []
        self._replacing = threading.Lock()
        self._closed = False
        # why the last try at a new connection in place of a silent one failed
        self._reconnect_error: str | None = None

    def use_shell(self, host_shell: shell.HostShell) -> None:
        """Speak ``host_shell`` from now on (set once the facts show a Windows host)."""
        self.host_shell = host_shell
        if host_shell.is_windows:
            # No sudo on Windows: an administrator's OpenSSH session is already elevated.
            self.is_root = True

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        """Run ``argv`` (each argument quoted by the host's shell) and return its Result."""
        script = self.host_shell.argv_script(argv)
        return self.run_script(script, timeout_s=timeout_s, stdin=stdin, sudo=sudo)

    def run_script(
        self,
        script: str,
        *,
        timeout_s: float | None = None,
        stdin: str | None = None,
        sudo: bool = False,
    ) -> Result:
        """Run a script (POSIX sh; PowerShell on Windows); ``sudo``: as root (sudo when not root).

        With a become password sudo reads it from stdin (never argv); without, ``sudo -n``.
        Raises become.BecomeError when sudo itself refuses (wrong password, not allowed).
        """
        if not sudo or self.is_root:
            sent = self._input_safe(script, stdin is not None)
            return self._exec(self.host_shell.exec_line(sent), script, timeout_s, stdin)
        # the script reads /dev/null unless sudo is fed (a password, or the command's input)
        fed = stdin is not None or self.become_password is not None
        return become.as_root(
            lambda command, feed: self._exec(command, script, timeout_s, feed),
            self._input_safe(script, fed),
            stdin,
            self.become_password,
            (str(self.connection.user), self.name),
        )

    def try_script(self, script: str, *, timeout_s: float) -> Result | None:
        """Run shell text as the login user; None when the host did not answer within
        ``timeout_s``, without marking it lost (a lease renewal during a short link outage
        must not end the run). A silent connection is replaced by a new one meanwhile."""
        if self.lost:
            return None
        try:
            command = self.host_shell.exec_line(self._input_safe(script, False))
            return self._exec(command, script, timeout_s, None, False)
        except HostLostError:
            return None

    def _input_safe(self, script: str, fed: bool) -> str:
        """``script`` such that the host cannot close its channel before nasplan's EOF came.

        paramiko answers the host's CLOSE of a channel from its own thread, while the thread
        running the command sends that channel's input and EOF: the CLOSE can overtake them.
        sshd frees a channel once both sides closed it and reuses its number for the next one, so
        input or an EOF sent after the CLOSE either makes sshd drop the whole connection
        ("packet referred to nonexistent channel": every command on it fails, e.g. with "Channel
        is not open") or lands in another command's channel. So: a command without input reads
        /dev/null and gets no EOF at all (_exec sends none); one with input reads what is left of
        it once it ends, so its shell ends only after nasplan's EOF. Windows hosts: unchanged.
        """
        if self.host_shell.is_windows:
            return script
        return (_DRAIN_INPUT if fed else _NO_INPUT) + script

    def _lose(self, reason: str, mark: bool = True) -> HostLostError:
        message = f"{self.name}: {reason}"
        if mark:
            self.lost = self.lost or message
        return HostLostError(self.name, self.lost or message)

    def start_until(self, script: str, markers: Sequence[str], *, timeout_s: float) -> Launched:
        """Start ``script`` (POSIX sh, as the login user) on its own channel and return once its
        standard output holds every one of ``markers``, the channel left open
        (``Launched.close``); or once it ended or ``timeout_s`` passed without them
        (``Launched.ended``, the channel closed)."""
        command = self.host_shell.exec_line(self._input_safe(script, False))
        return self._on_channel(
            command,
            timeout_s,
            None,
            collect=_until(markers, script, timeout_s),
            timed_out=lambda result: Launched("", result),
            keep=lambda launched: launched.ended is None,
        )

    def _exec(
        self,
        command: str,
        shown: str,
        timeout_s: float | None,
        stdin: str | None,
        mark_lost: bool = True,
    ) -> Result:
        limit_s = timeout_s or self.timeouts.command_s
        return self._on_channel(
            command,
            limit_s,
            stdin,
            mark_lost,
            collect=lambda channel: self._collect(channel, shown, limit_s),
            timed_out=lambda result: dataclasses.replace(result, command=shown),
        )

    def _on_channel(
        self,
        command: str,
        timeout_s: float,
        stdin: str | None,
        mark_lost: bool = True,
        *,
        collect: Callable[[paramiko.Channel], T],
        timed_out: Callable[[Result], T],
        keep: Callable[[T], bool] = lambda _: False,
    ) -> T:
        """``command`` on a new channel, what ``collect`` makes of it; the channel is closed
        after, unless ``keep`` says what was collected still runs on it."""
        asked = time.monotonic()
        deadline = asked + timeout_s
        transport, channel = self._open(asked, deadline, mark_lost)
        if channel is None:
            return timed_out(
                Result(command, "", f"timed out after {format_seconds(timeout_s)}", 124)
            )
        channel_s = self.timeouts.channel_s
        # paramiko waits for the answer to the exec request without a limit. Every channel_s
        # without it, the watchdog asks whether the connection still answers (a new channel
        # within channel_s): a host that does is slow, not gone (a loaded machine), and the wait
        # goes on, up to the command's own timeout (then only this channel is closed). One that
        # does not is silent: replaced by a new connection (``_replace``) while the wait goes
        # on; a host that answers on none for a whole lease is lost: closing the transport ends
        # every wait on it. A transport is never closed for one slow answer: other threads'
        # commands share it.
        answered = threading.Event()
        outcome: list[str] = []

        def watch() -> None:
            while not answered.wait(channel_s):
                if time.monotonic() > deadline:
                    outcome.append("timed out")
                    channel.close()
                    return
                if _answers(transport, channel_s) or answered.is_set():
                    self._heard_at = time.monotonic()
                    continue
                self._replace(transport, self._patience_end(asked))
                if self._current() is transport and time.monotonic() >= self._patience_end(asked):
                    outcome.append("lost")
                    transport.close()
                    return

        watchdog = threading.Thread(target=watch, name=f"exec-watchdog {self.name}", daemon=True)
        kept = False
        try:
            channel.settimeout(channel_s)
            watchdog.start()
            try:
                channel.exec_command(command)
            finally:
                answered.set()
            if stdin:
                channel.sendall(stdin.encode())
            if stdin is not None or self.host_shell.is_windows:
                # No EOF without input: the script reads /dev/null (see _input_safe).
                channel.shutdown_write()
            collected = collect(channel)
            self._heard_at = time.monotonic()
            kept = keep(collected)
            return collected
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if outcome == ["timed out"]:
                return timed_out(
                    Result(command, "", f"timed out after {format_seconds(timeout_s)}", 124)
                )
            reason = str(exc) or type(exc).__name__
            if transport is not self._current():
                # its connection went silent and was replaced: the host answers on the new one,
                # what this command did there is not known
                said = f"SSH connection lost while it ran ({reason}); its outcome is unknown"
                return timed_out(Result(command, "", said, 255))
            if outcome == ["lost"]:
                raise self._lose(self._silence(asked), mark_lost) from None
            raise self._lose(f"SSH connection lost: {reason}", mark_lost) from None
        finally:
            if not kept:
                channel.close()

    def _current(self) -> paramiko.Transport | None:
        """The transport of the connection new commands go on."""
        transport: paramiko.Transport | None = self.connection.client.get_transport()
        return transport

    def _patience_end(self, asked: float) -> float:
        """When a host silent since ``asked`` counts as lost: a lease after the later of that
        and its last answer (what the run started there has stopped by itself by then)."""
        return max(asked, self._heard_at) + self.timeouts.lease_s

    def _silence(self, asked: float) -> str:
        silent_s = time.monotonic() - max(asked, self._heard_at)
        tried = f" (a new connection: {self._reconnect_error})" if self._reconnect_error else ""
        return f"host stopped answering: no answer for {silent_s:.0f} s{tried}"

    def _open(
        self, asked: float, deadline: float, mark_lost: bool
    ) -> tuple[paramiko.Transport, paramiko.Channel | None]:
        """A new channel on the current connection and that connection; no channel (None)
        when ``deadline`` passed first. A connection that gives none within channel_s is
        silent and replaced by a new one (``_replace``); the host is lost (HostLostError)
        once none answered for a whole lease, or at once when its connection ended."""
        channel_s = self.timeouts.channel_s
        while True:
            if self.lost:
                raise HostLostError(self.name, self.lost)
            transport = self._current()
            if transport is None or not transport.is_active():
                # a connection that has ended is gone, not slow: lost, whoever asked
                reason = self._jump_lost() or "SSH connection lost"
                self._close_jumps()
                raise self._lose(reason, True)
            now = time.monotonic()
            until = min(deadline, self._patience_end(asked))
            try:
                channel = transport.open_session(timeout=max(0.1, min(channel_s, until - now)))
            except (paramiko.SSHException, OSError, EOFError) as exc:
                reason = str(exc) or type(exc).__name__
                if "Timeout" not in reason:
                    raise self._lose(f"SSH connection lost: {reason}", mark_lost) from None
                self._replace(transport, until)
                if time.monotonic() < until:
                    continue
                if time.monotonic() < deadline:
                    raise self._lose(self._silence(asked), mark_lost) from None
                return transport, None
            self._heard_at = time.monotonic()
            return transport, channel

    def _replace(self, silent: paramiko.Transport, until: float) -> None:
        """Put a new connection in place of ``silent`` (no channel within channel_s), trying
        until ``until``; nothing when another thread did already.

        After an outage of the path, TCP retransmits on a connection only after a backoff that
        doubles with each try: the connection stays silent for about as long again as the
        outage lasted, while a new one answers as soon as the path is back. Commands running
        on the silent connection end there (it is closed with the runner).
        """
        if not self._replacing.acquire(timeout=max(0.0, until - time.monotonic())):
            return
        try:
            while self._current() is silent and not self.lost and not self._closed:
                left_s = until - time.monotonic()
                if left_s <= 0:
                    return
                try:
                    fresh = connect(
                        self.host,
                        timeout_s=min(self.timeouts.connect_s, left_s),
                        become_password=self.become_password,
                    )
                except HostError as exc:
                    self._reconnect_error = str(exc).removeprefix(f"{self.name}: ")
                    time.sleep(min(_RECONNECT_PAUSE_S, max(0.0, until - time.monotonic())))
                    continue
                assert isinstance(fresh, SshRunner)
                if self._closed:  # the run let go of the host meanwhile
                    fresh.close()
                    return
                # the new connection rides on jump connections of its own
                self._silent += [self.connection, *reversed(self.jumps)]
                self.connection, self.jumps = fresh.connection, fresh.jumps
                self._heard_at = time.monotonic()
        finally:
            self._replacing.release()

    @staticmethod
    def _collect(channel: paramiko.Channel, shown: str, timeout_s: float | None) -> Result:
        stdout, stderr = bytearray(), bytearray()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            if channel.recv_ready():
                stdout += channel.recv(_READ_CHUNK_BYTES)
                continue
            if channel.recv_stderr_ready():
                stderr += channel.recv_stderr(_READ_CHUNK_BYTES)
                continue
            if channel.exit_status_ready() and (channel.eof_received or channel.closed):
                break
            if deadline is not None and time.monotonic() > deadline:
                return Result(
                    shown,
                    stdout.decode(errors="replace"),
                    f"timed out after {format_seconds(timeout_s)}",
                    124,
                )
            if channel.eof_received:
                # after EOF paramiko's pipe stays readable: select would return at once until
                # the exit status comes (sshd sends it once it reaped the command), a busy loop
                # on the control node's CPU for every command; wait for the status itself
                channel.status_event.wait(0.05)
                continue
            select.select([channel], [], [], 0.05)
        return Result(
            shown,
            stdout.decode(errors="replace"),
            stderr.decode(errors="replace"),
            channel.recv_exit_status(),
        )

    def _jump_lost(self) -> str | None:
        """Which jump host's connection ended, if one did (the host's ends with it)."""
        for hop in self.jumps:
            transport = hop.client.get_transport()
            if transport is None or not transport.is_active():
                return f"SSH connection lost: the jump host {ssh_route.label(hop)} closed it"
        return None

    def _close_jumps(self) -> None:
        """Close the jump hosts' connections, last hop first."""
        for hop in reversed(self.jumps):
            with contextlib.suppress(Exception):  # one already gone must not stop the rest
                hop.close()

    def close(self) -> None:
        """Close the SSH connection (and those it replaced), then the jump hosts' it rode on."""
        self._closed = True
        try:
            for connection in [*self._silent, self.connection]:
                with contextlib.suppress(Exception):  # a silent one may fail to close cleanly
                    connection.close()
        finally:
            self._close_jumps()

    def host_key(self) -> str | None:
        """The key the host showed on this connection (checked when it opened)."""
        transport = self.connection.client.get_transport()
        if transport is None:
            return None
        key = transport.get_remote_server_key()
        return f"{key.get_name()} {key.get_base64()}"


def _until(
    markers: Sequence[str], shown: str, timeout_s: float
) -> Callable[[paramiko.Channel], Launched]:
    """Read a channel's output until it holds every one of ``markers`` (then it is left open)
    or its end."""
    wanted = [marker.encode() for marker in markers]

    def collect(channel: paramiko.Channel) -> Launched:
        stdout, stderr = bytearray(), bytearray()
        deadline = time.monotonic() + timeout_s
        while True:
            if channel.recv_ready():
                stdout += channel.recv(_READ_CHUNK_BYTES)
                if all(marker in stdout for marker in wanted):
                    return Launched(
                        stdout.decode(errors="replace"),
                        None,
                        channel.close,
                        lambda seconds: _exits_within(channel, seconds),
                        lambda: _read_ready(channel),
                    )
                continue
            if channel.recv_stderr_ready():
                stderr += channel.recv_stderr(_READ_CHUNK_BYTES)
                continue
            if channel.exit_status_ready() and (channel.eof_received or channel.closed):
                text = stdout.decode(errors="replace")
                ended = Result(
                    shown, text, stderr.decode(errors="replace"), channel.recv_exit_status()
                )
                return Launched(text, ended)
            if time.monotonic() > deadline:
                text = stdout.decode(errors="replace")
                return Launched(
                    text, Result(shown, text, f"timed out after {format_seconds(timeout_s)}", 124)
                )
            select.select([channel], [], [], 0.05)

    return collect


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


class _PromptTransport(paramiko.Transport):
    """paramiko's Transport, answering at once what OpenSSH's sshd sends right after login.

    sshd announces its host keys (a ``hostkeys-00@openssh.com`` global request, no reply wanted)
    just as the client opens its first channel. paramiko sends nothing back, so the client's
    kernel holds its ACK (delayed ACK), and sshd, whose socket keeps Nagle's algorithm on for a
    session without a terminal, holds its answer to the channel open until that ACK comes: the
    first command on every connection (the facts, on every host of every run) waited for the
    delayed-ACK timer. An SSH_MSG_IGNORE sent on receipt carries the ACK at once.

    Its reader thread wakes once a second, not ten times, when nothing comes: only to see whether
    the transport was closed, a handshake timed out or a keepalive is due (nasplan sets none),
    none of which needs a tenth of a second. A connection's packets wake it at once either way.
    Every wake-up takes Python's GIL from the thread that runs the plan, once per idle
    connection: a tenth as many wake-ups is a tenth of that cost (bench/README.md).
    """

    _active_check_timeout = 1.0

    def _parse_global_request(self, m: paramiko.Message) -> None:
        super()._parse_global_request(m)  # type: ignore[misc]
        if not self.server_mode and self.is_active():
            # the connection may be going meanwhile: then there is nothing to hurry
            with contextlib.suppress(paramiko.SSHException, OSError, EOFError):
                self.send_ignore(1)


def _no_delay(connection: Connection) -> None:
    """Send each SSH packet at once (TCP_NODELAY), as OpenSSH does for its sessions.

    paramiko leaves Nagle's algorithm on: a command's small packets then wait for the peer's
    delayed ACK, several times per command (bench/README.md). Through a ProxyJump the
    transport's socket is a channel, which has no such option.
    """
    transport = connection.client.get_transport()
    sock = getattr(transport, "sock", None)
    if isinstance(sock, socket.socket) and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def connect(
    host: Host, *, timeout_s: float | None = None, become_password: str | None = None
) -> Runner:
    """Open an SSH connection to ``host`` with strict host-key checking; a ``connection: local``
    host gets a ``nasplan.remote.local`` runner instead (no SSH: it is this machine).

    ssh_config aliases, users, ports, identity and known_hosts files are honoured, and its
    ProxyJump or the inventory's ``proxy_jump``: each jump host is connected to in turn, every
    hop's host key checked (``nasplan.remote.ssh_route``), the host reached over a
    ``direct-tcpip`` channel of the last hop. ``become_password``: fed to sudo on stdin when a
    command needs root and the user is not root. Raises HostError with a one-line reason
    (unknown/changed/revoked key with fingerprint, auth, network; the hop it happened at).
    """
    if host.is_local:
        return local.connect(host, become_password=become_password)
    # checked when the plan was loaded too, content and all; this catches a file swapped since
    problems = ssh_file_errors(host, content=False)
    if problems:
        raise HostError("; ".join(problems))
    timeouts = from_environ()
    if timeout_s is None:
        timeout_s = timeouts.connect_s
    # banner and auth timeouts too: a host whose sshd hangs after the TCP accept is named.
    connect_kwargs: dict[str, object] = {
        "allow_agent": True,
        "banner_timeout": timeout_s,
        "auth_timeout": timeout_s,
        "channel_timeout": timeouts.channel_s,
        "transport_factory": _PromptTransport,
    }
    if host.identity_file is not None:
        connect_kwargs["key_filename"] = [str(host.identity_file)]
        connect_kwargs["look_for_keys"] = False
    way = ssh_route.route(host, connect_kwargs, timeout_s)
    opened: list[Connection] = []
    try:
        through = ""
        for hop, known in zip(way.hops, way.known[:-1], strict=True):
            _open(hop, known, f"{host.name}: jump host", through, timeout_s)
            opened.append(hop)
            through = f"through {ssh_route.label(hop)}"
        target = way.target
        _open(target, way.known[-1], host.name, through, timeout_s)
    except BaseException:
        for hop in reversed(opened):
            with contextlib.suppress(Exception):
                hop.close()
        raise
    user = target.user
    runner = SshRunner(host, target, become_password, timeouts, way.hops)
    runner.is_root = user == "root"
    return runner


# SSH_MSG_CHANNEL_OPEN_FAILURE reason codes (RFC 4254 5.1) -> what the user reads
_CHANNEL_REFUSALS = {
    1: "refuses to forward to it (sshd's AllowTcpForwarding or PermitOpen there)",
    2: "cannot reach it (no route from there, or nothing listens)",
}


def _open(
    connection: Connection,
    known: host_keys.KnownHosts,
    who: str,
    through: str,
    timeout_s: float,
) -> None:
    """Open ``connection`` (``through`` the hop it rides on: ``through root@gw:22``, or ""),
    its key checked against ``known``; HostError saying why not, prefixed ``who`` (``nas``, ``nas:
    jump host``) and, for a key or a login, the connection's ``user@host:port``."""
    named = f"{who} ({ssh_route.label(connection)}{' ' + through if through else ''})"
    where = f"{connection.host}:{connection.port}{' ' + through if through else ''}"
    try:
        connection.open()
    except paramiko.BadHostKeyException as exc:
        if known.revoked(exc.key):
            reason = host_keys.revoked_message(connection.host, exc.key, known)
            raise HostError(f"{named}: {reason}") from None
        raise HostError(
            f"{named}: host key CHANGED: got {host_keys.fingerprint(exc.key)}, "
            f"known_hosts has {host_keys.fingerprint(exc.expected_key)}; refusing to connect"
        ) from None
    except (host_keys.UnknownHostKeyError, host_keys.RevokedHostKeyError) as exc:
        raise HostError(f"{named}: {exc}") from None
    except paramiko.AuthenticationException as exc:
        raise HostError(f"{named}: authentication failed: {exc}") from None
    except paramiko.ChannelException as exc:
        reason = _CHANNEL_REFUSALS.get(exc.code, exc.text)
        raise HostError(f"{who}: cannot connect to {where}: the jump host {reason}") from None
    except (TimeoutError, paramiko.SSHException, OSError, EOFError) as exc:
        reason = connect_reason(exc, timeout_s)
        raise HostError(f"{who}: cannot connect to {where}: {reason}") from None
    _no_delay(connection)


# errno -> what a user reads (paramiko wraps them as "[Errno None] Unable to connect to ...")
_SOCKET_REASONS = {
    errno.ECONNREFUSED: "connection refused (is sshd running on that port?)",
    errno.ETIMEDOUT: "timed out",
    errno.EHOSTUNREACH: "no route to host",
    errno.ENETUNREACH: "network unreachable",
    errno.ECONNRESET: "connection reset",
}


def connect_reason(exc: BaseException, timeout_s: float) -> str:
    """Why a connection failed, in a user's terms: ``connection refused (...)``, ``no answer
    within 10 s``, ``no such host name``; never paramiko's ``[Errno None] Unable to ...``."""
    if isinstance(exc, paramiko.ssh_exception.NoValidConnectionsError) and exc.errors:
        reasons = sorted({connect_reason(one, timeout_s) for one in exc.errors.values()})
        return "; ".join(reasons)
    if isinstance(exc, (TimeoutError, socket.timeout)) or "timed out" in str(exc).lower():
        return f"no answer within {timeout_s:g} s"
    if isinstance(exc, socket.gaierror):
        return f"no such host name ({exc.strerror or exc})"
    if isinstance(exc, OSError) and exc.errno in _SOCKET_REASONS:
        return _SOCKET_REASONS[exc.errno]
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    if isinstance(exc, EOFError) or "banner" in str(exc).lower():
        return "SSH did not answer (no SSH banner: sshd hung, or not an SSH server there?)"
    return str(exc) or type(exc).__name__


def server_key_fingerprint(runner: Runner) -> str | None:
    """The fingerprint of the key the host showed on this connection (checked against
    known_hosts when it opened): ``ssh-ed25519 SHA256:...``; None without a transport (or
    without SSH: a local host)."""
    if not isinstance(runner, SshRunner):
        return None
    transport = runner.connection.client.get_transport()
    return host_keys.fingerprint(transport.get_remote_server_key()) if transport else None


def jump_route(runner: Runner) -> str | None:
    """``through root@198.19.0.10:22`` for a host reached through jump hosts, else None."""
    if not isinstance(runner, SshRunner) or not runner.jumps:
        return None
    return "through " + ",".join(ssh_route.label(hop) for hop in runner.jumps)
