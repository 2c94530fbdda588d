"""A ``connection: local`` host: the control node itself, its commands run here with no SSH.

The workstation in front of the user is often one end of the tests (iperf3's client). As a
local host it needs no sshd to itself: facts, tools, tests and network changes run through
``LocalRunner`` (each command in a session of its own, killed with its process group when it
outlives its timeout, what ``start_until`` left running killed at ``close``), as root through
sudo when nasplan does not run as root: the password on sudo's standard input, never in argv.
"""

from __future__ import annotations

import getpass
import os

from nasplan.input.inventory import Host
from nasplan.remote import become
from nasplan.remote.runner import LocalRunner, Result
from nasplan.remote.timeouts import Timeouts, from_environ


class LocalHostRunner(become.SudoRunner, LocalRunner):
    """Runs an inventory's local host's commands on this machine (a ``Runner``): POSIX sh
    here, as root through sudo when nasplan is not root."""

    def __init__(
        self, host: Host, become_password: str | None = None, timeouts: Timeouts | None = None
    ) -> None:
        super().__init__(host.name)
        self.host = host
        self.become_password = become_password
        self.is_root = os.geteuid() == 0
        self.default_timeout_s = (timeouts or Timeouts()).command_s

    def _as_login(self, script: str, timeout_s: float | None, stdin: str | None) -> Result:
        return LocalRunner.run_script(self, script, timeout_s=timeout_s, stdin=stdin)

    def _send(self, command: str, shown: str, timeout_s: float | None, feed: str | None) -> Result:
        return self._exec(["sh", "-c", command], shown, timeout_s, feed)

    def _login_user(self) -> str:
        return getpass.getuser()


def connect(host: Host, *, become_password: str | None = None) -> LocalHostRunner:
    """The runner of a ``connection: local`` host: nothing to open, nothing to check."""
    return LocalHostRunner(host, become_password, from_environ())
