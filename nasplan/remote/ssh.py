"""The one place that opens SSH connections: strict host keys, argv quoted, results as values."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import errno
import hashlib
import logging
import select
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import paramiko
from fabric import Config, Connection

from nasplan.errors import HostError, HostLostError
from nasplan.input.inventory import Host, ssh_file_errors
from nasplan.input.localfile import private_file_problem
from nasplan.remote import become, local, shell
from nasplan.remote.runner import Launched, Result, Runner, RunnerBase
from nasplan.remote.timeouts import Timeouts, from_environ

_READ_CHUNK_BYTES = 65536
T = TypeVar("T")
# Prefixed to a POSIX script (see SshRunner._input_safe): without input it reads /dev/null
# (nasplan sends it no EOF); with input, its shell reads the rest of it before it ends.
_NO_INPUT = "exec </dev/null\n"
_DRAIN_INPUT = "trap 'cat >/dev/null 2>&1' EXIT\n"

# paramiko logs a connection that fails in its own thread (a host whose sshd froze: "Error
# reading SSH protocol banner") as a traceback at ERROR, which Python's last-resort handler
# prints on the terminal. nasplan says what failed itself, in one line: paramiko's log goes
# only where the user's own logging set-up sends it.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def fingerprint(key: paramiko.PKey) -> str:
    """OpenSSH-style fingerprint, e.g. ``ssh-ed25519 SHA256:Xk1...``."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return f"{key.get_name()} SHA256:{base64.b64encode(digest).decode().rstrip('=')}"


class UnknownHostKeyError(paramiko.SSHException):
    """The server's key is not in known_hosts: refused, with its fingerprint for the user."""


class _RefuseUnknownHostKey(paramiko.MissingHostKeyPolicy):
    """Refuse hosts that are not in known_hosts (Fabric's default would accept them silently),
    unless known_hosts holds this very key for another address the inventory gives the same
    host (``aliases``: its name, its interfaces' addresses): a cable's address is then trusted
    with the host's verified key, for this connection only (nothing is written)."""

    def __init__(self, known_hosts: Sequence[Path], aliases: Sequence[str] = ()) -> None:
        self.known_hosts = known_hosts
        self.aliases = aliases

    def missing_host_key(
        self, client: paramiko.SSHClient, hostname: str, key: paramiko.PKey
    ) -> None:
        keys = client.get_host_keys()
        port = hostname.rpartition("]:")[2] if hostname.startswith("[") else None
        for alias in self.aliases:
            name = f"[{alias}]:{port}" if port else alias
            known = keys.lookup(name)
            if known is not None and known.get(key.get_name()) == key:
                keys.add(hostname, key.get_name(), key)
                return
        where = ", ".join(str(p) for p in self.known_hosts) or "no known_hosts file"
        raise UnknownHostKeyError(
            f"host key for {hostname} is not known ({fingerprint(key)}); "
            f"not in {where}. Verify the fingerprint on the host "
            f"(ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub) and add it with ssh-keyscan"
        )


def known_hosts_files(host: Host, ssh_config: dict[str, object]) -> list[Path]:
    """Known_hosts files checked for ``host``: the inventory's, else ssh_config's, else ~/.ssh."""
    if host.known_hosts is not None:
        return [host.known_hosts]
    configured = ssh_config.get("userknownhostsfile")
    if configured:
        names = configured if isinstance(configured, list) else str(configured).split()
        return [Path(str(n)).expanduser() for n in names]
    return [Path("~/.ssh/known_hosts").expanduser()]


def host_aliases(host: Host) -> list[str]:
    """Other names the inventory gives ``host``: its name, its address, its interfaces'
    addresses (a known_hosts line under any of them vouches for its key)."""
    found = [host.name, host.address]
    found += [i.address for i in host.interfaces.values() if i.address]
    return list(dict.fromkeys(found))


def _harden(connection: Connection, host: Host) -> None:
    files = known_hosts_files(host, dict(connection.ssh_config))
    keys = connection.client.get_host_keys()
    for path in files:
        problem = private_file_problem(path, secret=False)
        if problem:
            raise HostError(f"{host.name}: known_hosts file {path}: {problem}")
        if path.is_file():
            # HostKeys.load, not SSHClient.load_host_keys: nasplan never writes known_hosts back.
            keys.load(str(path))
    configured_keys = connection.ssh_config.get("identityfile") or []
    for name in configured_keys if isinstance(configured_keys, list) else [configured_keys]:
        key_path = Path(str(name)).expanduser()
        problem = private_file_problem(key_path, secret=True)
        if problem:
            raise HostError(f"{host.name}: IdentityFile {key_path} (ssh_config): {problem}")
    policy = _RefuseUnknownHostKey(files, host_aliases(host))
    connection.client.set_missing_host_key_policy(policy)
    gateway = connection.gateway
    if isinstance(gateway, Connection):  # ProxyJump: the jump host is checked just as strictly
        _harden(gateway, host)


class SshRunner(RunnerBase):
    """Runs commands on one host over one SSH connection (a ``nasplan.remote.runner.Runner``)."""

    def __init__(
        self,
        host: Host,
        connection: Connection,
        become_password: str | None = None,
        timeouts: Timeouts | None = None,
    ) -> None:
        self.name = host.name
        self.host = host
        self.connection = connection
        self.is_root = host.user == "root"
        self.become_password = become_password
        self.timeouts = timeouts or Timeouts()
        # Set once the host stopped answering: later commands fail at once, not after a timeout.
        self.lost: str | None = None
        self.host_shell: shell.HostShell = shell.POSIX

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
        """Run shell text as the login user; None when the host did not answer, without
        marking it lost (a lease renewal during a short link outage must not end the run)."""
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
        if self.lost:
            raise HostLostError(self.name, self.lost)
        transport = self.connection.client.get_transport()
        if transport is None or not transport.is_active():
            # a connection that has ended is gone, not slow: lost, whoever asked
            raise self._lose("SSH connection lost", True)
        channel_s = self.timeouts.channel_s
        try:
            channel = transport.open_session(timeout=channel_s)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            reason = str(exc) or type(exc).__name__
            if "Timeout" in reason:
                raise self._lose(
                    f"host stopped answering: no SSH channel within {channel_s:g} s", mark_lost
                ) from None
            raise self._lose(f"SSH connection lost: {reason}", mark_lost) from None
        # paramiko waits for the answer to the exec request without a limit. Every channel_s
        # without it, the watchdog asks whether the connection still answers (a new channel
        # within channel_s): a host that does is slow, not gone (a loaded machine), and the wait
        # goes on, up to the command's own timeout (then only this channel is closed). One that
        # does not is lost: closing the transport ends every wait on it. The transport is never
        # closed for one slow answer: other threads' commands share it.
        deadline = time.monotonic() + timeout_s
        answered = threading.Event()
        outcome: list[str] = []

        def watch() -> None:
            while not answered.wait(channel_s):
                if time.monotonic() > deadline:
                    outcome.append("timed out")
                    channel.close()
                    return
                if not _answers(transport, channel_s) and not answered.is_set():
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
            kept = keep(collected)
            return collected
        except (paramiko.SSHException, OSError, EOFError) as exc:
            if outcome == ["timed out"]:
                return timed_out(Result(command, "", f"timed out after {timeout_s} s", 124))
            reason = str(exc) or type(exc).__name__
            if outcome == ["lost"]:
                reason = f"host stopped answering: no SSH channel within {channel_s:g} s"
                raise self._lose(reason, mark_lost) from None
            raise self._lose(f"SSH connection lost: {reason}", mark_lost) from None
        finally:
            if not kept:
                channel.close()

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
                    shown, stdout.decode(errors="replace"), f"timed out after {timeout_s} s", 124
                )
            select.select([channel], [], [], 0.05)
        return Result(
            shown,
            stdout.decode(errors="replace"),
            stderr.decode(errors="replace"),
            channel.recv_exit_status(),
        )

    def close(self) -> None:
        """Close the SSH connection."""
        self.connection.close()

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
                return Launched(text, Result(shown, text, f"timed out after {timeout_s} s", 124))
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

    ``~/.ssh/config`` aliases, users, ports and ProxyJump are honoured (through Fabric).
    ``become_password``: fed to sudo on stdin when a command needs root and the user is not root.
    Raises HostError with a one-line reason (unknown/changed key with fingerprint, auth, network).
    """
    if host.is_local:
        return local.connect(host, become_password=become_password)
    problems = ssh_file_errors(host)
    if problems:  # checked when the plan was loaded too; this catches a file swapped since
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
    connection = Connection(
        host.address,
        user=host.user,
        port=host.port,
        connect_timeout=timeout_s,
        connect_kwargs=connect_kwargs,
        # An inventory's ssh_config replaces ~/.ssh/config, as `ssh -F FILE` does.
        config=Config(runtime_ssh_path=str(host.ssh_config) if host.ssh_config else None),
    )
    _harden(connection, host)
    target = f"{host.name} ({connection.user}@{connection.host}:{connection.port})"
    try:
        connection.open()
    except paramiko.BadHostKeyException as exc:
        raise HostError(
            f"{target}: host key CHANGED: got {fingerprint(exc.key)}, "
            f"known_hosts has {fingerprint(exc.expected_key)}; refusing to connect"
        ) from None
    except UnknownHostKeyError as exc:
        raise HostError(f"{target}: {exc}") from None
    except paramiko.AuthenticationException as exc:
        raise HostError(f"{target}: authentication failed: {exc}") from None
    except (TimeoutError, paramiko.SSHException, OSError, EOFError) as exc:
        where = f"{connection.host}:{connection.port}"
        reason = connect_reason(exc, timeout_s)
        raise HostError(f"{host.name}: cannot connect to {where}: {reason}") from None
    _no_delay(connection)
    user = connection.user
    runner = SshRunner(host, connection, become_password, timeouts)
    runner.is_root = user == "root"
    return runner


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
    return fingerprint(transport.get_remote_server_key()) if transport is not None else None
