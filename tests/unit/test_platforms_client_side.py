"""What a test asks a host's platform (``platforms.of(runner)``) instead of asking whether it is
Windows: its script language, its shell layer, the tool that does another's job there, and the
transfer method's own copy there."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nasplan import platforms
from nasplan.measure.methods import METHODS
from nasplan.measure.methods.smb_windows import WindowsShareCopy
from nasplan.platforms.generic import GenericLinux
from nasplan.platforms.windows import Windows
from nasplan.remote import shell


def test_a_runner_speaking_powershell_is_windows_and_one_speaking_sh_a_posix_host(
    fake_runner: Callable[[str], Any],
) -> None:
    pc, nas = fake_runner("pc"), fake_runner("nas")
    pc.use_shell(shell.windows("powershell.exe"))
    assert platforms.of(pc).name == "windows"
    assert (platforms.of(pc).scripts, platforms.of(pc).posix_shell) == ("powershell", False)
    assert platforms.of(nas).name == "linux"  # every POSIX platform runs the same scripts
    assert (platforms.of(nas).scripts, platforms.of(nas).posix_shell) == ("sh", True)
    assert platforms.of(None).posix_shell  # no runner yet: POSIX, as shell.of says


def test_each_platform_gives_its_shell_layer_and_speaks_it() -> None:
    assert Windows().host_shell(None) == shell.windows(None)
    assert GenericLinux().host_shell(None) == shell.POSIX
    for platform in platforms.registry():
        assert platform.speaks(platform.host_shell(None))
    assert not Windows().speaks(shell.POSIX)
    assert not GenericLinux().speaks(shell.windows(None))


def test_windows_runs_diskspd_for_fio_and_every_other_tool_is_itself() -> None:
    assert Windows().equivalent("fio") == "diskspd"
    assert Windows().equivalent("iperf3") == "iperf3"
    assert all(p.equivalent("fio") == "fio" for p in platforms.registry() if p.posix_shell)


def test_only_smb_copies_from_a_windows_client_and_nothing_has_an_own_copy_on_posix() -> None:
    own = {name: m.own_copy(Windows()) for name, m in METHODS.items()}
    assert isinstance(own.pop("smb"), WindowsShareCopy)
    assert set(own.values()) == {None}
    assert all(m.own_copy(GenericLinux()) is None for m in METHODS.values())
