"""A host's commands over SSH: ``connect`` opens the connection (``ssh_open``: strict host keys,
jump hosts), ``SshRunner`` runs each command on a channel of its own (``ssh_channel``) of a link
kept usable through silences (``ssh_link``), argv quoted by the host's shell, sudo through
``become``, results as values (``ssh_output``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from fabric import Connection

from nasplan.errors import HostLostError
from nasplan.input.inventory import Host
from nasplan.remote import become, host_keys, local, shell, ssh_output, ssh_route
from nasplan.remote.runner import Launched, Result, Runner
from nasplan.remote.ssh_channel import on_channel
from nasplan.remote.ssh_link import SshLink
from nasplan.remote.ssh_open import open_host
from nasplan.remote.timeouts import Timeouts, from_environ

# Prefixed to a POSIX script (see SshRunner._input_safe): without input it reads /dev/null
# (nasplan sends it no EOF); with input, its shell reads the rest of it before it ends.
_NO_INPUT = "exec </dev/null\n"
_DRAIN_INPUT = "trap 'cat >/dev/null 2>&1' EXIT\n"


class SshRunner(become.SudoRunner):
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
        self.is_root = host.user == "root"
        self.become_password = become_password
        self.timeouts = timeouts or Timeouts()
        self.host_shell: shell.HostShell = shell.POSIX
        self.link = SshLink(
            host.name,
            connection,
            tuple(jumps),
            self.timeouts,
            lambda timeout_s: open_host(host, timeout_s, self.timeouts),
        )

    @property
    def connection(self) -> Connection:
        """The connection new commands go on (a new one once the last went silent)."""
        return self.link.connection

    @property
    def jumps(self) -> tuple[Connection, ...]:
        """The jump hosts' connections the host's rides on, first hop first."""
        return self.link.jumps

    @property
    def lost(self) -> str | None:  # type: ignore[override]  # read-only here: the link sets it
        """Set once the host stopped answering: later commands fail at once, not after a
        timeout."""
        return self.link.lost

    def use_shell(self, host_shell: shell.HostShell) -> None:
        """Speak ``host_shell`` from now on (set once the facts show a Windows host)."""
        self.host_shell = host_shell
        if host_shell.is_windows:
            # No sudo on Windows: an administrator's OpenSSH session is already elevated.
            self.is_root = True

    def _as_login(self, script: str, timeout_s: float | None, stdin: str | None) -> Result:
        sent = self._input_safe(script, stdin is not None)
        return self._exec(self.host_shell.exec_line(sent), script, timeout_s, stdin)

    def _send(self, command: str, shown: str, timeout_s: float | None, feed: str | None) -> Result:
        return self._exec(command, shown, timeout_s, feed)

    def _for_sudo(self, script: str, fed: bool) -> str:
        # the script reads /dev/null unless sudo is fed (a password, or the command's input)
        return self._input_safe(script, fed)

    def _login_user(self) -> str:
        return str(self.connection.user)

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

    def start_until(self, script: str, markers: Sequence[str], *, timeout_s: float) -> Launched:
        """Start ``script`` (POSIX sh, as the login user) on its own channel and return once its
        standard output holds every one of ``markers``, the channel left open
        (``Launched.close``); or once it ended or ``timeout_s`` passed without them
        (``Launched.ended``, the channel closed)."""
        command = self.host_shell.exec_line(self._input_safe(script, False))
        return on_channel(
            self.link,
            command,
            timeout_s,
            None,
            send_eof=self.host_shell.is_windows,
            collect=ssh_output.until(markers, script, timeout_s),
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
        return on_channel(
            self.link,
            command,
            limit_s,
            stdin,
            mark_lost,
            send_eof=self.host_shell.is_windows,
            collect=lambda channel: ssh_output.collect(channel, shown, limit_s),
            timed_out=lambda result: dataclasses.replace(result, command=shown),
        )

    def close(self) -> None:
        """Close the SSH connection (and those it replaced), then the jump hosts' it rode on."""
        self.link.close()

    def host_key(self) -> str | None:
        """The key the host showed on this connection (checked when it opened)."""
        transport = self.link.current()
        if transport is None:
            return None
        key = transport.get_remote_server_key()
        return f"{key.get_name()} {key.get_base64()}"


def connect(
    host: Host, *, timeout_s: float | None = None, become_password: str | None = None
) -> Runner:
    """Open an SSH connection to ``host`` with strict host-key checking (``ssh_open.open_host``:
    ssh_config, jump hosts, every hop's key checked); a ``connection: local`` host gets a
    ``nasplan.remote.local`` runner instead (no SSH: it is this machine).

    ``become_password``: fed to sudo on stdin when a command needs root and the user is not
    root. Raises HostError with a one-line reason (the hop it happened at).
    """
    if host.is_local:
        return local.connect(host, become_password=become_password)
    timeouts = from_environ()
    target, hops = open_host(host, timeouts.connect_s if timeout_s is None else timeout_s, timeouts)
    runner = SshRunner(host, target, become_password, timeouts, hops)
    runner.is_root = target.user == "root"
    return runner


def server_key_fingerprint(runner: Runner) -> str | None:
    """The fingerprint of the key the host showed on this connection (checked against
    known_hosts when it opened): ``ssh-ed25519 SHA256:...``; None without a transport (or
    without SSH: a local host)."""
    if not isinstance(runner, SshRunner):
        return None
    transport = runner.link.current()
    return host_keys.fingerprint(transport.get_remote_server_key()) if transport else None


def jump_route(runner: Runner) -> str | None:
    """``through root@198.19.0.10:22`` for a host reached through jump hosts, else None."""
    if not isinstance(runner, SshRunner) or not runner.jumps:
        return None
    return "through " + ",".join(ssh_route.label(hop) for hop in runner.jumps)
