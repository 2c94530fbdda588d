"""sudo: where the password comes from, the command (never carrying it), real sudo outcomes."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.errors import InputError
from nasplan.input.inventory import Host
from nasplan.remote import become
from nasplan.remote.runner import Result

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_become_password_comes_from_the_named_variable_else_the_prompt() -> None:
    hosts = {
        "nas": Host("nas", "198.18.30.10", become_password_env="NAS_PW"),
        "ws": Host("ws", "198.18.30.11"),
    }
    assert become.passwords_for(hosts, {"NAS_PW": "s3cret"}) == {"nas": "s3cret"}
    both = become.passwords_for(hosts, {"NAS_PW": "s3cret"}, prompted="typed")
    assert both == {"nas": "s3cret", "ws": "typed"}
    with pytest.raises(InputError, match=r"\$NAS_PW, which is not set"):
        become.passwords_for(hosts, {})


def test_sudo_command_never_carries_the_password() -> None:
    command = become.sudo_command("id -u", with_password=True)
    assert command.startswith("sudo -S -k -p '' -- sh -c ")
    assert become.sudo_stdin("s3cret", None) == "s3cret\n"
    assert "s3cret" not in command
    assert become.sudo_command("id -u", with_password=False).startswith("sudo -n -- sh -c ")


def sudo_result(name: str, exited: int, stdout: str = "") -> Result:
    return Result("id -u", stdout, (FIXTURES / "sudo" / name).read_text(), exited)


def test_sudo_outcomes_from_real_sudo_stderr() -> None:
    ok = become.check_sudo(sudo_result("ok.stderr", 0, "0\n"), "admin", "nas", with_password=True)
    assert (ok.stdout, ok.stderr) == ("0\n", "")
    with pytest.raises(become.BecomeError, match=r"^sudo: wrong password for admin on nas$"):
        become.check_sudo(
            sudo_result("wrong-password.stderr", 1), "admin", "nas", with_password=True
        )
    with pytest.raises(become.BecomeError, match=r"needs a password for sudo.*-K"):
        become.check_sudo(sudo_result("no-password.stderr", 1), "admin", "nas", with_password=False)


def test_a_failing_script_under_sudo_is_not_a_sudo_error() -> None:
    stderr = f"{become.SUDO_OK_MARKER}\nsynogear: failed\n"
    result = become.check_sudo(Result("x", "", stderr, 2), "admin", "nas", with_password=True)
    assert (result.exited, result.stderr) == (2, "synogear: failed\n")
