"""SMB transfers from a Windows client: UNC paths, the PowerShell scripts, one repetition.

No Windows host exists here: the scripts are checked as built text, and a recording runner that
speaks PowerShell stands in for the host (its answers are the scripts' own marker lines).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nasplan.hosts.session import HostSession
from nasplan.input.inventory import Host
from nasplan.measure import methods
from nasplan.measure.kinds.transfer import runs as transfer_test
from nasplan.measure.tools import transfer_windows
from nasplan.remote import shell


def test_unc_path_joins_share_directory_and_name() -> None:
    path = transfer_windows.unc_path("198.19.16.10", "data", "bench/run 1", "x.bin")
    assert path == "\\\\198.19.16.10\\data\\bench\\run 1\\x.bin"


@pytest.mark.parametrize("bad", ["..", "a:b", 'quo"te', "star*", "new\nline"])
def test_unc_path_refuses_names_windows_cannot_hold(bad: str) -> None:
    with pytest.raises(ValueError, match="not a usable name"):
        transfer_windows.unc_path("198.19.16.10", "data", bad)


def test_timed_script_reads_the_password_from_stdin_and_quotes_every_value() -> None:
    script = transfer_windows.timed_copy_script(
        "\\\\nas\\it's", "\\\\nas\\it's\\f.bin", "C:\\Temp\\d", "read", "o'brien"
    )
    assert "$password = [Console]::In.ReadLine()" in script
    assert "$user = 'o''brien'\n" in script
    assert "$share = '\\\\nas\\it''s'\n" in script
    assert "$local = 'C:\\Temp\\d\\source.bin'\n" in script
    assert "[IO.FileOptions]0x20000000" in script  # unbuffered read: the server, not a cache
    assert "NASPLAN_ELAPSED_NS=" in script and "NASPLAN_EXIT=" in script
    assert "Remove-SmbMapping" in script
    with pytest.raises(ValueError):
        transfer_windows.timed_copy_script("s", "r", "d", "both", "u")


@pytest.fixture()
def windows(fake_runner: Callable[[str], Any]) -> Callable[[], Any]:
    """A FakeRunner that speaks PowerShell, as a Windows client does."""

    def make() -> Any:
        runner = fake_runner("win11")
        runner.use_shell(shell.windows(None))
        return runner

    return make


def _xfer() -> transfer_test.Transfer:
    return transfer_test.Transfer(
        method=methods.method("smb"),
        directions=("write",),
        size_bytes=250_000_000,
        remote_name="nasplan-t-1.bin",
        share="data",
        smb_user="admin",
        password_env="W10_TEST_SMB_PASSWORD",
    )


def test_a_windows_repetition_is_timed_by_the_script_and_the_password_goes_on_stdin(
    monkeypatch: pytest.MonkeyPatch, windows: Callable[[], Any]
) -> None:
    monkeypatch.setenv("W10_TEST_SMB_PASSWORD", "s3cret;$(x)")
    client = windows().expect("Copy-Item", "NASPLAN_ELAPSED_NS=2000000000\r\nNASPLAN_EXIT=0\r\n")
    rep, _ = transfer_test.repetition(client, _xfer(), "write", "C:\\T\\d", "198.19.16.10")
    assert rep["status"] == "ok"
    assert rep["bytes_per_second"] == 125_000_000
    assert rep["bits_per_second"] == 1_000_000_000
    [call] = client.calls
    script, stdin = call.text, call.stdin
    assert stdin == "s3cret;$(x)\n"
    assert "s3cret" not in script
    assert "$remote = '\\\\198.19.16.10\\data\\nasplan-t-1.bin'" in script


def test_a_failed_windows_copy_reports_the_scripts_reason(
    monkeypatch: pytest.MonkeyPatch, windows: Callable[[], Any]
) -> None:
    monkeypatch.setenv("W10_TEST_SMB_PASSWORD", "pw")
    said = "nasplan: cannot open \\\\198.19.16.10\\data as admin: (the exception's message)"
    rep, _ = transfer_test.repetition(
        windows().expect("New-SmbMapping", said + "\r\n", exited=2),
        _xfer(),
        "write",
        "C:\\T\\d",
        "198.19.16.10",
    )
    assert rep["status"] == "failed"
    assert "cannot open \\\\198.19.16.10\\data as admin" in rep["error"]


def test_a_windows_client_is_told_plainly_that_only_smb_is_measured(
    windows: Callable[[], Any],
) -> None:
    session = HostSession(Host(name="win11", address="198.19.16.20"))
    session.runner = windows()  # it must not be asked anything
    xfer = transfer_test.Transfer(
        methods.method("rsync"), ("write",), 1_000_000, "x.bin", remote_dir="/data"
    )
    local_dir, error = transfer_test.prepare_client(xfer, session, None)  # type: ignore[arg-type]
    assert local_dir is None
    assert error is not None and "over SMB only" in error and "not rsync" in error


def test_the_source_file_dir_is_the_last_line_the_setup_printed(
    windows: Callable[[], Any],
) -> None:
    made = "C:\\Users\\me\\AppData\\Local\\Temp\\nasplan-xfer-0123456789ab\r\n"
    client = windows().expect("RandomNumberGenerator", made)
    local_dir, error = transfer_windows.make_source(client, 4 * 2**30, 60)
    assert (local_dir, error) == (
        "C:\\Users\\me\\AppData\\Local\\Temp\\nasplan-xfer-0123456789ab",
        None,
    )
    [call] = client.calls
    assert "$size = [long]4294967296" in call.text and call.stdin is None
    # incompressible (RandomNumberGenerator), like /dev/urandom on POSIX
    failed, why = transfer_windows.make_source(
        windows().expect("RandomNumberGenerator", exited=1), 1, 60
    )
    assert failed is None and why is not None and "cannot create the source file" in why
