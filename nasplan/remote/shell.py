"""The one command-building layer: POSIX sh, PowerShell and cmd.exe quoting behind one contract.

Call sites build argv lists and scripts; only this module turns them into shell text. A value
a shell cannot carry safely is refused (``ShellQuoteError``), never passed through half-quoted.

On Windows the OpenSSH server hands the exec string to its *default shell*: ``cmd.exe`` unless
``HKLM:\\SOFTWARE\\OpenSSH\\DefaultShell`` names another (often ``powershell.exe``). nasplan's
scripts there are PowerShell, sent as ``powershell.exe ... -EncodedCommand BASE64``: that line
holds only letters, digits, ``+/=`` and dashes, so cmd.exe and PowerShell run it unchanged and
no plan value is ever parsed by cmd.exe.
"""

from __future__ import annotations

import base64
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

# re-exported: what quoting refuses is caught as shell.ShellQuoteError
from nasplan.errors import ShellQuoteError as ShellQuoteError

# CreateProcess takes 32767 characters; cmd.exe refuses lines over 8191 (its documented limit).
CMD_LINE_LIMIT = 8191
POWERSHELL_EXE = "powershell.exe"
# PowerShell treats these as single quotes too (its tokenizer's "quote" class); double them all.
_PS_SINGLE_QUOTES = "'\u2018\u2019\u201a\u201b"
# cmd.exe expands %VAR% even inside double quotes (and !VAR! with delayed expansion), and a
# quote or newline ends the argument: no quoting can carry these through cmd.exe.
_CMD_UNSAFE = re.compile(r'[%!"\r\n\x00]')
_CMD_BARE = re.compile(r"^[A-Za-z0-9_+=./:\\-]+$")


class Shell(Protocol):
    """How one shell quotes arguments and runs a script sent as an SSH exec string."""

    @property
    def name(self) -> str:
        """``sh``, ``powershell`` or ``cmd``."""
        ...

    def quote(self, arg: str) -> str:
        """``arg`` as one literal word of this shell."""
        ...

    def join(self, argv: Sequence[str]) -> str:
        """A command line that runs ``argv[0]`` with exactly ``argv[1:]`` as its arguments."""
        ...

    def exec_line(self, script: str) -> str:
        """The SSH exec string that runs ``script`` (POSIX sh text, or PowerShell on Windows)."""
        ...


@dataclass(frozen=True)
class PosixSh:
    """``sh`` on Linux, BSD and macOS: single quotes, ``'`` as ``'"'"'``."""

    name: str = "sh"

    def quote(self, arg: str) -> str:
        return shlex.quote(arg)

    def join(self, argv: Sequence[str]) -> str:
        return shlex.join(argv)

    def exec_line(self, script: str) -> str:
        return shlex.join(["sh", "-c", script])


def encoded_command(script: str) -> str:
    """PowerShell's ``-EncodedCommand`` value: base64 of the UTF-16LE script."""
    return base64.b64encode(script.encode("utf-16-le")).decode("ascii")


def _powershell_argv(script: str) -> list[str]:
    return [
        POWERSHELL_EXE,
        "-NoLogo",
        "-NoProfile",
        "-NonInteractive",
        "-ExecutionPolicy",
        "Bypass",
        "-EncodedCommand",
        encoded_command(script),
    ]


def _native_argument(arg: str) -> str:
    """Refuse what Windows PowerShell 5.1 passes to a native .exe wrongly (it does not escape
    ``"`` and lets a trailing ``\\`` of a quoted argument escape the closing quote)."""
    if '"' in arg or "\x00" in arg:
        raise ShellQuoteError(f"{arg!r}: a double quote cannot be passed to a Windows program")
    if arg.endswith("\\") and (not arg or any(c.isspace() for c in arg)):
        raise ShellQuoteError(f"{arg!r}: a trailing backslash after a space breaks Windows quoting")
    return arg


@dataclass(frozen=True)
class PowerShell:
    """PowerShell (Windows PowerShell 5.1 and 7): verbatim single-quoted strings.

    Inside ``'...'`` nothing expands (``$x``, ``$(...)``, backticks, ``%VAR%`` stay text); the
    only special character is the single quote itself, in all its Unicode forms, doubled.
    """

    name: str = "powershell"

    def quote(self, arg: str) -> str:
        if "\x00" in arg:
            raise ShellQuoteError(f"{arg!r}: NUL cannot be passed to PowerShell")
        return "'" + "".join(c * 2 if c in _PS_SINGLE_QUOTES else c for c in arg) + "'"

    def join(self, argv: Sequence[str]) -> str:
        if not argv:
            raise ShellQuoteError("an empty command")
        program, *args = argv
        return "& " + " ".join(self.quote(a) for a in [program, *map(_native_argument, args)])

    def exec_line(self, script: str) -> str:
        return _checked_length(" ".join(_powershell_argv(script)))


@dataclass(frozen=True)
class Cmd:
    """cmd.exe, the Windows OpenSSH server's default shell.

    Arguments are double-quoted with MSVCRT rules (backslashes before a quote doubled);
    characters cmd.exe expands or splits on even inside quotes (``% ! "`` and newlines) are
    refused. Scripts run through ``powershell.exe -EncodedCommand``.
    """

    name: str = "cmd"

    def quote(self, arg: str) -> str:
        unsafe = _CMD_UNSAFE.search(arg)
        if unsafe:
            raise ShellQuoteError(
                f"{arg!r}: cmd.exe cannot carry {unsafe.group(0)!r} safely in an argument"
            )
        if _CMD_BARE.match(arg):
            return arg
        # Inside "..." cmd.exe takes & | < > ^ ( ) literally; only a trailing run of
        # backslashes needs doubling so that it does not escape the closing quote.
        trailing = len(arg) - len(arg.rstrip("\\"))
        return '"' + arg + "\\" * trailing + '"'

    def join(self, argv: Sequence[str]) -> str:
        if not argv:
            raise ShellQuoteError("an empty command")
        return _checked_length(" ".join(self.quote(a) for a in argv))

    def exec_line(self, script: str) -> str:
        return self.join(_powershell_argv(script))


def _checked_length(line: str) -> str:
    if len(line) > CMD_LINE_LIMIT:
        raise ShellQuoteError(
            f"a command of {len(line)} characters exceeds the {CMD_LINE_LIMIT}-character limit "
            f"of a Windows command line"
        )
    return line


def for_default_shell(path: str | None) -> Shell:
    """The Shell of a Windows OpenSSH ``DefaultShell`` value (None or empty: cmd.exe)."""
    program = (path or "").replace("/", "\\").rsplit("\\", 1)[-1].lower()
    if program in ("powershell.exe", "pwsh.exe", "powershell", "pwsh"):
        return PowerShell()
    if program in ("", "cmd.exe", "cmd"):
        return Cmd()
    # bash.exe (WSL, Git for Windows) and others take POSIX quoting of the exec string.
    return PosixSh()


@dataclass(frozen=True)
class HostShell:
    """A host's login shell (what SSH hands the exec string to) and its script language.

    POSIX hosts: ``sh`` both. Windows: cmd.exe or PowerShell as login shell, PowerShell scripts.
    """

    login: Shell
    scripts: Shell

    @property
    def is_windows(self) -> bool:
        return isinstance(self.scripts, PowerShell)

    def argv_script(self, argv: Sequence[str]) -> str:
        """A script in this host's script language that runs ``argv`` and keeps its exit status."""
        if self.is_windows:
            return self.scripts.join(argv) + "\nexit $LASTEXITCODE"
        return self.scripts.join(argv)

    def exec_line(self, script: str) -> str:
        """The SSH exec string that runs ``script`` through the login shell."""
        if self.is_windows:  # any login shell runs powershell.exe with its base64 argument
            return _checked_length(self.login.join(_powershell_argv(script)))
        return self.login.exec_line(script)


POSIX = HostShell(PosixSh(), PosixSh())


def windows(default_shell: str | None) -> HostShell:
    """A Windows host whose OpenSSH ``DefaultShell`` is ``default_shell`` (None: cmd.exe)."""
    return HostShell(for_default_shell(default_shell), PowerShell())


class _Speaks(Protocol):
    """What ``of`` reads of a ``Runner`` (named here: runner.py imports this)."""

    @property
    def host_shell(self) -> HostShell: ...


def of(runner: _Speaks | None) -> HostShell:
    """The HostShell a runner speaks: its ``host_shell`` (POSIX for no runner yet)."""
    return POSIX if runner is None else runner.host_shell
