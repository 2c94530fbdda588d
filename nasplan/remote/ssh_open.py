"""Opening a host's SSH connection, hop by hop: each hop's key checked, every failure (a key
unknown, changed or revoked, a login refused, the network) one line in a user's words."""

from __future__ import annotations

import contextlib
import errno
import logging
import socket

import paramiko
from fabric import Connection

from nasplan.errors import HostError
from nasplan.input.inventory import Host, ssh_file_errors
from nasplan.remote import host_keys, ssh_route
from nasplan.remote.timeouts import Timeouts

# paramiko logs a connection that fails in its own thread (a host whose sshd froze: "Error
# reading SSH protocol banner") as a traceback at ERROR, which Python's last-resort handler
# prints on the terminal. nasplan says what failed itself, in one line: paramiko's log goes
# only where the user's own logging set-up sends it.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


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


def open_host(
    host: Host, timeout_s: float, timeouts: Timeouts
) -> tuple[Connection, tuple[Connection, ...]]:
    """``host``'s connection, opened, and the jump hosts' it rides on (first hop first).

    ssh_config aliases, users, ports, identity and known_hosts files are honoured, and its
    ProxyJump or the inventory's ``proxy_jump``: each jump host is connected to in turn, every
    hop's host key checked (``nasplan.remote.ssh_route``), the host reached over a
    ``direct-tcpip`` channel of the last hop. Raises HostError with a one-line reason
    (unknown/changed/revoked key with fingerprint, auth, network; the hop it happened at).
    """
    # checked when the plan was loaded too, content and all; this catches a file swapped since
    problems = ssh_file_errors(host, content=False)
    if problems:
        raise HostError("; ".join(problems))
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
        _open(way.target, way.known[-1], host.name, through, timeout_s)
    except BaseException:
        for hop in reversed(opened):
            with contextlib.suppress(Exception):
                hop.close()
        raise
    return way.target, way.hops


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
