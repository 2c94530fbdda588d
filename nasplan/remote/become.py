"""Becoming root through sudo: where the password comes from, the sudo command, its failures.

The password never appears in argv: ``sudo -S`` reads it as the first line of standard input,
and every file nasplan writes masks it (``RunContext.secrets``).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping, Sequence

from nasplan.errors import HostError, InputError
from nasplan.input.inventory import Host
from nasplan.remote.runner import Result, RunnerBase

# Printed by the root shell first: when it is missing, sudo itself failed, not the script.
SUDO_OK_MARKER = "@@nasplan:sudo-ok@@"
EXIT_NOT_FOUND = 127


class BecomeError(HostError):
    """sudo refused (wrong or missing password, user not allowed): the host cannot be used."""


def passwords_for(
    hosts: Mapping[str, Host],
    environ: Mapping[str, str],
    prompted: str | None = None,
) -> dict[str, str]:
    """Host name -> sudo password: the host's ``become_password_env`` variable, else ``prompted``.

    Raises InputError when a host names a variable that is not set and nothing was prompted.
    """
    passwords: dict[str, str] = {}
    unset: list[str] = []
    for name, host in sorted(hosts.items()):
        variable = host.become_password_env
        if variable and variable in environ:
            passwords[name] = environ[variable]
        elif prompted is not None:
            passwords[name] = prompted
        elif variable:
            unset.append(
                f"{name}: the inventory takes the sudo password from ${variable}, which is "
                f"not set; export it or pass --ask-become-pass (-K)"
            )
    if unset:
        raise InputError(unset)
    return passwords


def prompt_password(ask: Callable[[str], str]) -> str:
    """Ask once for the sudo password (``ask`` hides the input, e.g. click.prompt)."""
    return ask("BECOME password (sudo)")


def sudo_command(script: str, *, with_password: bool) -> str:
    """``sudo ... -- sh -c SCRIPT`` text; the script first prints SUDO_OK_MARKER on stderr.

    With a password: ``-S`` reads it from stdin, ``-p ''`` prints no prompt, ``-k`` ignores
    cached credentials so sudo always consumes that first line (else the command would read it).
    Without: ``-n`` fails at once instead of waiting for a password nobody will type.
    """
    marked = f"printf '%s\\n' {shlex.quote(SUDO_OK_MARKER)} >&2\n{script}"
    flags = ["-S", "-k", "-p", ""] if with_password else ["-n"]
    return shlex.join(["sudo", *flags, "--", "sh", "-c", marked])


def sudo_stdin(password: str, stdin: str | None) -> str:
    """What to feed sudo -S: the password line, then the command's own input."""
    return f"{password}\n{stdin or ''}"


def check_sudo(result: Result, user: str, host: str, *, with_password: bool) -> Result:
    """``result`` without the marker line; BecomeError when sudo itself refused to run it."""
    lines = result.stderr.splitlines(keepends=True)
    if any(line.strip() == SUDO_OK_MARKER for line in lines):
        kept = [line for line in lines if line.strip() != SUDO_OK_MARKER]
        return Result(result.command, result.stdout, "".join(kept), result.exited)
    if result.exited == 0:
        return result
    reason = sudo_failure(result.stderr, result.exited, user, host, with_password=with_password)
    raise BecomeError(reason)


def as_root(
    send: Callable[[str, str | None], Result],
    script: str,
    stdin: str | None,
    password: str | None,
    who: tuple[str, str],
) -> Result:
    """``script`` run as root through sudo by ``send(command, feed)`` (a runner's own exec):
    the password first on sudo's standard input (never argv), else ``sudo -n``; ``who`` is
    (user, host) for the message when sudo itself refuses (BecomeError)."""
    with_password = password is not None
    feed = stdin if password is None else sudo_stdin(password, stdin)
    result = send(sudo_command(script, with_password=with_password), feed)
    return check_sudo(result, *who, with_password=with_password)


class SudoRunner(RunnerBase):
    """A runner whose ``sudo=True`` commands become root through sudo when its login is not
    root: ``become_password`` on sudo's standard input (never argv), else ``sudo -n``.

    A subclass says how it runs a script as its login user (``_as_login``), how it sends the
    sudo command line (``_send``), what of a script it sends through sudo (``_for_sudo``) and
    who its login user is (``_login_user``).
    """

    is_root: bool
    become_password: str | None

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
        Raises BecomeError when sudo itself refuses (wrong password, not allowed).
        """
        if not sudo or self.is_root:
            return self._as_login(script, timeout_s, stdin)
        # what sudo reads: a password, or the command's input
        fed = stdin is not None or self.become_password is not None
        return as_root(
            lambda command, feed: self._send(command, script, timeout_s, feed),
            self._for_sudo(script, fed),
            stdin,
            self.become_password,
            (self._login_user(), self.name),
        )

    def _as_login(self, script: str, timeout_s: float | None, stdin: str | None) -> Result:
        """Run ``script`` as the login user, ``stdin`` on its input."""
        raise NotImplementedError

    def _send(self, command: str, shown: str, timeout_s: float | None, feed: str | None) -> Result:
        """Run the sudo ``command`` line (``shown`` in the Result), ``feed`` on its input."""
        raise NotImplementedError

    def _for_sudo(self, script: str, fed: bool) -> str:
        """The script as sudo's shell runs it (``fed``: sudo's input carries something)."""
        return script

    def _login_user(self) -> str:
        raise NotImplementedError


def sudo_failure(stderr: str, exited: int, user: str, host: str, *, with_password: bool) -> str:
    """One line saying why sudo refused, from its exit status and (English) messages."""
    text = stderr.lower()
    if exited == EXIT_NOT_FOUND or "sudo: not found" in text or "sudo: command not found" in text:
        return f"sudo: not installed on {host}; log in as root or install sudo"
    if "not in the sudoers" in text or "not allowed to" in text or "may not run sudo" in text:
        return f"sudo: {user} may not run commands as root on {host}"
    if not with_password:
        return (
            f"sudo: {user} on {host} needs a password for sudo: name an environment variable "
            f"in the inventory (become_password_env) or pass --ask-become-pass (-K)"
        )
    # The marker line never came: sudo did not start the shell, and a password was given, so
    # it was refused whatever the (localised) wording of sudo's messages.
    return f"sudo: wrong password for {user} on {host}"
