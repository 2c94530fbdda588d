"""The runner contract (nasplan/remote/runner.py): one protocol every runner and every test double
meets, with RunnerBase's defaults for what a small runner does not do."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import NasplanError
from nasplan.facts.gather import gather_with
from nasplan.hosts.session import HostSession, close_sessions, mark_lost_hosts
from nasplan.input.inventory import Host
from nasplan.remote import shell, ssh_output
from nasplan.remote.local import LocalHostRunner
from nasplan.remote.runner import LocalRunner, Result, Runner, RunnerBase
from nasplan.remote.ssh import SshRunner

TESTS = Path(__file__).resolve().parents[1]
FIXTURES = TESTS / "fixtures"
# Every runner double of the test suites: file, class, how to make one.
DOUBLES: list[tuple[str, str, Callable[[type[Any]], Any]]] = [
    ("unit/conftest.py", "FakeRunner", lambda cls: cls("nas")),
    ("unit/test_fuzz_schemas.py", "FactsRunner", lambda cls: cls("nas")),
    ("unit/test_small_truths.py", "NoRunner", lambda cls: cls()),
    ("unit/test_small_truths.py", "Fixed", lambda cls: cls("facts")),
    ("unit/test_leases.py", "_RenewalClock", lambda cls: cls("nas")),
    ("unit/test_leases.py", "_ReleasedHost", lambda cls: cls("nas")),
    ("unit/network/test_bsd.py", "RecordedBsdHost", lambda cls: cls()),
    ("unit/measure/test_timeline.py", "RateLimitedFio", lambda cls: cls()),
    ("lab/test_iperf3_tool.py", "CountingRunner", lambda cls: cls("nas")),
]


def _load(relative: str) -> Any:
    """A test module by path (tests/unit and tests/lab hold files of the same name)."""
    path = TESTS / relative
    name = "runner_contract_" + relative.replace("/", "_").removesuffix(".py")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("relative", "name", "make"), DOUBLES, ids=[d[1] for d in DOUBLES])
def test_every_runner_double_meets_the_whole_runner_protocol(
    relative: str, name: str, make: Callable[[type[Any]], Any]
) -> None:
    cls = getattr(_load(relative), name)
    assert issubclass(cls, RunnerBase), f"{name}: subclass nasplan.remote.runner.RunnerBase"
    runner = make(cls)
    assert isinstance(runner, Runner)
    assert runner.lost is None and runner.host_shell == shell.POSIX


def test_the_product_runners_meet_the_protocol() -> None:
    ssh = SshRunner(Host(name="nas", address="198.18.0.10"), connection=None)  # type: ignore[arg-type]
    local = LocalHostRunner(Host(name="pc", address="pc", connection="local"))
    assert isinstance(ssh, Runner) and isinstance(LocalRunner(), Runner)
    assert isinstance(local, Runner) and local.lost is None and local.host_shell == shell.POSIX
    assert ssh.lost is None and ssh.host_shell == shell.POSIX


class _Echo(RunnerBase):
    """The smallest runner: only ``run`` and ``run_script``; it notes what it was given."""

    name = "echo"

    def __init__(self) -> None:
        self.scripts: list[str] = []

    def run(self, argv: Any, **_: object) -> Result:
        return self.run_script(" ".join(argv))

    def run_script(self, script: str, **_: object) -> Result:
        self.scripts.append(script)
        return Result(script, "said\n", "", 0)


def test_runner_base_defaults_never_lose_the_host_renew_as_a_command_and_cannot_launch() -> None:
    runner = _Echo()
    renewed = runner.try_script("renew", timeout_s=5)
    assert renewed is not None and renewed.stdout == "said\n" and runner.scripts == ["renew"]
    assert runner.start_until("iperf3 -s", ["listening"], timeout_s=5) is None
    runner.close()
    assert runner.lost is None and runner.scripts == ["renew"]


def test_a_posix_only_runner_refuses_a_windows_host_with_a_message() -> None:
    runner = _Echo()
    runner.use_shell(shell.POSIX)
    with pytest.raises(NasplanError, match="echo: a Windows host, and this runner speaks only"):
        runner.use_shell(shell.windows(None))
    assert runner.host_shell == shell.POSIX
    # the facts find out: a host whose sh is refused is Windows, which this runner cannot speak
    refusing = _Echo()
    refusing.run_script = lambda script, **_: Result(  # type: ignore[method-assign]
        script, "", "'sh' is not recognized as an internal or external command", 1
    )
    with pytest.raises(NasplanError, match="speaks only POSIX sh"):
        gather_with(refusing, None, windows=False)


class _Closing(_Echo):
    def __init__(self, lost: str | None) -> None:
        super().__init__()
        self.lost = lost
        self.closed = 0

    def close(self) -> None:
        self.closed += 1
        raise OSError("already gone")  # closing must never mask the run's outcome


def test_sessions_read_lost_and_close_through_the_protocol() -> None:
    gone, fine = _Closing("nas: host stopped answering"), _Closing(None)
    sessions = {
        "nas": HostSession(Host(name="nas", address="198.18.0.10"), gone),
        "ws": HostSession(Host(name="ws", address="198.18.0.11"), fine),
        "off": HostSession(Host(name="off", address="198.18.0.12")),
    }
    assert mark_lost_hosts(sessions) == ["nas"]
    assert sessions["nas"].lost and sessions["nas"].error == "nas: host stopped answering"
    assert not sessions["ws"].lost and not sessions["off"].lost
    close_sessions(sessions)
    assert gone.closed == 1 and fine.closed == 1


def test_a_local_runner_leaves_a_command_running_once_it_said_it_is_ready() -> None:
    launched = LocalRunner().start_until("echo ready; sleep 1", ["ready"], timeout_s=5)
    assert launched is not None and launched.ended is None and "ready" in launched.output
    assert launched.ended_within is not None and not launched.ended_within(0.05)
    launched.close()


def test_a_local_runners_launched_command_is_read_on_as_it_prints_until_it_ends() -> None:
    runner = LocalRunner()
    try:
        launched = runner.start_until(
            "echo ready; sleep 0.2; echo one; sleep 0.2; printf 'tw'; sleep 0.2; echo o",
            ["ready"],
            timeout_s=5,
        )
        assert launched is not None and launched.read is not None
        assert launched.read() == ""  # nothing new yet, and no wait for it
        got, deadline = [], time.monotonic() + 5
        while (text := launched.read()) is not None and time.monotonic() < deadline:
            got.append(text)
            time.sleep(0.05)
        assert "".join(got) == "one\ntwo\n" and "tw" in got  # as it came, not at its end
        assert launched.read() is None
        launched.close()
        assert launched.read() is None
        # one let go of while it runs is not read any more
        running = runner.start_until("echo ready; echo more; sleep 5", ["ready"], timeout_s=5)
        assert running is not None and running.read is not None
        running.close()
        assert running.read() is None
    finally:
        runner.close()


def test_no_product_code_probes_a_runner_for_a_capability() -> None:
    package = TESTS.parent / "nasplan"
    probes = [
        f"{path.relative_to(package)}:{number}"
        for path in package.rglob("*.py")
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if ("getattr(" in line and "runner" in line) or "isinstance(server, Launcher)" in line
    ]
    assert not probes, f"capabilities belong in nasplan.remote.runner.Runner: {probes}"


class _EndedChannel:
    """A channel whose output ended (EOF: paramiko's pipe then stays readable) while its exit
    status comes ``after_s`` later, as sshd sends it once it has reaped the command."""

    def __init__(self, after_s: float) -> None:
        import os
        import threading

        self._read, write = os.pipe()
        os.write(write, b"x")  # readable for good, as paramiko's pipe after EOF
        self.status_event = threading.Event()
        threading.Timer(after_s, self.status_event.set).start()
        self.eof_received, self.closed, self.looks = True, False, 0

    def fileno(self) -> int:
        return self._read

    def recv_ready(self) -> bool:
        self.looks += 1
        return False

    def recv_stderr_ready(self) -> bool:
        return False

    def exit_status_ready(self) -> bool:
        return self.status_event.is_set()

    def recv_exit_status(self) -> int:
        return 0


def test_a_commands_end_is_waited_for_not_polled_between_its_eof_and_its_exit_status() -> None:
    channel = _EndedChannel(after_s=0.3)
    result = ssh_output.collect(channel, "true", timeout_s=5)  # type: ignore[arg-type]
    assert result.exited == 0
    assert channel.looks < 20  # a busy loop looked thousands of times in 0.3 s
