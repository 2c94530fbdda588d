"""Every SSH file an inventory names, broken as a user might break it, through ``nasplan apply
--check``: exit 2, one line naming the file (and its line where it has lines), never a
traceback, no hang, nothing connected.

known_hosts, identity files and ssh_config: binary, empty, cut short, unreadable, a directory,
a FIFO, and what each can be wrong with besides (a line with bad base64, a public key where a
private one belongs, a passphrase with no agent, a Host line that does not split).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from keyfiles import write_private_key

from nasplan.cli import main

ED25519_LINE = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
BINARY = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def apply_check(tmp_path: Path, key: str, path: Path) -> tuple[int, list[str], float]:
    """``nasplan apply --check`` of a plan whose hosts share ``key: path``: (exit code, the
    lines it printed, seconds); a traceback fails the test."""
    write_private_key(tmp_path / "id_good")
    (tmp_path / "known_good").write_text("")
    files = {
        "identity_file": str(tmp_path / "id_good"),
        "known_hosts": str(tmp_path / "known_good"),
    }
    files[key] = str(path)
    settings = ", ".join(f"{name}: '{value}'" for name, value in files.items())
    port = closed_port()
    (tmp_path / "inventory.yaml").write_text(
        f"vars: {{user: root, {settings}}}\n"
        f"hosts:\n  nas: {{address: 127.0.0.1, port: {port}}}\n"
        f"  ws: {{address: 127.0.0.1, port: {port}}}\n"
    )
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "name: files\ninventory: inventory.yaml\ntests:\n"
        "  - {id: t, kind: iperf3, server: nas, client: ws, target: 127.0.0.1, duration_s: 1}\n"
    )
    started = time.monotonic()
    result = CliRunner().invoke(main, ["apply", "--check", str(plan)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback instead of a message: {result.exception!r}")
    return result.exit_code, result.output.strip().splitlines(), time.monotonic() - started


def file_with(data: bytes, mode: int = 0o600) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        path = tmp_path / "the-file"
        path.write_bytes(data)
        path.chmod(mode)
        return path

    return make


def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "the-file"
    os.mkfifo(path, 0o600)
    return path


def directory(tmp_path: Path) -> Path:
    path = tmp_path / "the-file"
    path.mkdir(mode=0o700)
    return path


def key_bytes(tmp_path: Path, passphrase: bytes | None = None) -> tuple[bytes, bytes]:
    """A new private key's bytes and its public key line's."""
    key = write_private_key(tmp_path / "made", passphrase)
    return key.read_bytes(), key.with_name("made.pub").read_bytes()


def private_key(
    cut: int | None = None, public: bool = False, passphrase: bytes | None = None
) -> Callable[[Path], Path]:
    def make(tmp_path: Path) -> Path:
        private, public_line = key_bytes(tmp_path, passphrase)
        data = public_line if public else private[:cut]
        return file_with(data)(tmp_path)

    return make


CASES = [
    # (key, how the file is made, what the one line says)
    ("known_hosts", file_with(BINARY), ":1:1: not UTF-8 text"),
    ("known_hosts", file_with(f"nas {ED25519_LINE}\nws ssh-ed25519 AAAA!!\n".encode()),
     ":2:16: known_hosts: the ssh-ed25519 key is not valid base64"),
    ("known_hosts", file_with(f"nas {ED25519_LINE[:60]}\n".encode()),
     ":1:17: known_hosts: the ssh-ed25519 key is cut short"),
    ("known_hosts", file_with(b"nas ssh-ed25519\n"),
     ":1:5: known_hosts: expected HOSTS KEY-TYPE BASE64-KEY"),
    ("known_hosts", file_with(f"@trusted nas {ED25519_LINE}\n".encode()),
     ":1:1: known_hosts: unknown marker @trusted"),
    ("known_hosts", fifo, "known_hosts: {path}: is a FIFO, expected a regular file"),
    ("known_hosts", directory, "known_hosts: {path}: is a directory, expected a regular file"),
    ("identity_file", file_with(BINARY), ":1:1: identity_file: is not a private key: binary"),
    ("identity_file", file_with(b""), ":1:1: identity_file: is empty, expected a private key"),
    ("identity_file", private_key(cut=150), ":1:1: identity_file: is cut short: it has no "
     "-----END OPENSSH PRIVATE KEY----- line"),
    ("identity_file", private_key(public=True), ":1:1: identity_file: is a public key"),
    ("identity_file", private_key(passphrase=b"a long passphrase"),
     ":1:1: identity_file: is encrypted with a passphrase and no ssh-agent runs"),
    ("identity_file", file_with(b"PuTTY-User-Key-File-3: ssh-ed25519\n"),
     ":1:1: identity_file: is a PuTTY key"),
    ("identity_file", fifo, "identity_file: {path}: is a FIFO, expected a regular file"),
    ("identity_file", directory, "identity_file: {path}: is a directory, expected a regular"),
    ("ssh_config", file_with(BINARY), ":1:1: not UTF-8 text"),
    ("ssh_config", file_with(b"Host nas\n  HostName 127.0.0.1\n  Identi"),
     ":3:3: ssh_config: 'Identi' has no value (a line cut short?)"),
    ("ssh_config", file_with(b'Host "nas\n'), ":1:1: ssh_config: Host '\"nas': No closing"),
    ("ssh_config", file_with(b"Host nas\n  Port twenty-two\n"),
     ":2:3: ssh_config: Port 'twenty-two' is not a number from 1 to 65535"),
    ("ssh_config", file_with(b"Include ~/.ssh/config.d/*\n"),
     ":1:1: ssh_config: Include is not followed"),
    ("ssh_config", file_with(b"Host nas\n  ProxyJump -oProxyCommand=id\n"),
     ":2:3: ssh_config: '-oProxyCommand=id' is not a ProxyJump"),
    ("ssh_config", fifo, "ssh_config: {path}: is a FIFO, expected a regular file"),
    ("ssh_config", directory, "ssh_config: {path}: is a directory, expected a regular file"),
]  # fmt: skip


@pytest.mark.parametrize(("key", "make", "said"), CASES)
def test_a_broken_ssh_file_is_one_located_line_and_exit_2(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    key: str,
    make: Callable[[Path], Path],
    said: str,
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    path = make(tmp_path)
    code, lines, seconds = apply_check(tmp_path, key, path)
    assert code == 2, lines
    assert seconds < 10  # a FIFO is never opened for reading
    expected = said.format(path=path)
    if expected.startswith(":"):  # located in the file itself, once for the hosts sharing it
        assert len(lines) == 1 and lines[0].startswith(f"{path}{expected}"), lines
    else:  # about the file as a whole: where the inventory names it, for each host
        assert lines and all(expected in line for line in lines), lines
        assert all(line.startswith(str(tmp_path / "inventory.yaml")) for line in lines), lines


def test_an_unreadable_ssh_file_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root reads any file, so the refusal a user gets is played by the system call itself
    path = file_with(f"nas {ED25519_LINE}\n".encode())(tmp_path)
    real_open = os.open

    def refused(name: str | os.PathLike[str], *args: int, **kwargs: int) -> int:
        if Path(name) == path:
            raise PermissionError(13, "Permission denied")
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr("nasplan.input.localfile.os.open", refused)
    code, lines, _ = apply_check(tmp_path, "known_hosts", path)
    assert code == 2
    assert lines and all(line.endswith(f"{path}: cannot read: Permission denied") for line in lines)
    assert lines[0].startswith(f"{tmp_path / 'inventory.yaml'}:"), lines


def test_an_encrypted_key_is_left_to_the_agent_when_one_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with an agent, the key may be in it: the connection asks the agent (nothing listens here)
    monkeypatch.setenv("SSH_AUTH_SOCK", str(tmp_path / "no-agent"))
    path = private_key(passphrase=b"a long passphrase")(tmp_path)
    code, lines, _ = apply_check(tmp_path, "identity_file", path)
    assert code == 3
    said = [line for line in lines if "identity_file" in line]
    assert said and "is encrypted with a passphrase and no ssh-agent holds it" in said[0]


def ssh_string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def test_what_openssh_reads_and_paramiko_cannot_check_is_no_error(tmp_path: Path) -> None:
    security_key = base64.b64encode(
        ssh_string(b"sk-ssh-ed25519@openssh.com") + ssh_string(bytes(32)) + ssh_string(b"ssh:")
    ).decode()
    salt = os.urandom(20)
    hashed = hmac.new(salt, b"nas", hashlib.sha1).digest()
    hashed_name = f"|1|{base64.b64encode(salt).decode()}|{base64.b64encode(hashed).decode()}"
    known = file_with(
        (
            f"@cert-authority *.example.com {ED25519_LINE}\n"
            f"@revoked * {ED25519_LINE}\n"
            f"nas sk-ssh-ed25519@openssh.com {security_key}\n"
            f"{hashed_name} {ED25519_LINE}\n"
            f"[nas]:2222,198.19.80.*,!198.19.80.9 {ED25519_LINE}  a comment\n"
            "# a comment\n\n"
        ).encode()
    )(tmp_path)
    code, lines, _ = apply_check(tmp_path, "known_hosts", known)
    assert code == 3, lines  # read: the hosts are reached for, and refuse the connection
    assert any("connection refused" in line for line in lines), lines
