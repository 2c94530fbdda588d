"""The workstation as a host (``connection: local``): inventories, validation, the connector,
and the local runner's contract (input, timeouts, processes left running, sudo)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.analysis import shared_kernels
from nasplan.cli import main
from nasplan.errors import InputError
from nasplan.input.inventory import Host, load_inventory, ssh_file_errors
from nasplan.remote.become import BecomeError
from nasplan.remote.local import LocalHostRunner
from nasplan.remote.runner import LocalRunner
from nasplan.remote.ssh import connect, server_key_fingerprint
from nasplan.verbosity import COMMANDS, Verbosity

PC = Host(name="pc", address="pc", connection="local")
LOCAL_RUNNERS: dict[str, Callable[[], LocalRunner]] = {
    "LocalRunner": lambda: LocalRunner("pc"),
    "LocalHostRunner": lambda: LocalHostRunner(PC),
}


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_native_local_host_needs_no_address_user_or_ssh_files(tmp_path: Path) -> None:
    inventory = load_inventory(
        write(
            tmp_path / "inventory.yaml",
            "vars: {user: root, identity_file: no-such-key, known_hosts: kh}\n"
            "hosts:\n  nas: {address: 198.18.0.10}\n  pc: {connection: local}\n",
        )
    )
    nas, pc = inventory.hosts["nas"], inventory.hosts["pc"]
    assert pc.is_local and not nas.is_local and nas.connection == "ssh"
    assert ssh_file_errors(pc) == []  # the missing key is the NAS's problem, not the local host's
    assert [line.split(": ", 2)[1] for line in ssh_file_errors(nas)] == ["hosts.nas.identity_file"]


def test_validate_passes_a_plan_whose_local_host_has_no_key(tmp_path: Path) -> None:
    write(tmp_path / "inventory.yaml", "hosts:\n  pc: {connection: local}\n")
    plan = write(
        tmp_path / "plan.yaml",
        "name: p\ninventory: inventory.yaml\ntests:\n"
        "  - {id: d, kind: disk, host: pc, path: /var/tmp, size: 1MiB}\n",
    )
    result = CliRunner().invoke(main, ["validate", str(plan)])
    assert result.exit_code == 0 and result.output.strip() == "ok", result.output


@pytest.mark.parametrize(
    ("inventory", "where"),
    [
        (
            "hosts:\n  pc: {connection: local}\n  ws:\n    vars: {connection: local}\n",
            ":4:24: hosts.ws.vars.connection: ws is a second host",
        ),
        (
            "groups:\n  mine: {hosts: [pc, ws], vars: {connection: local}}\n"
            "hosts: {pc: {}, ws: {}}\n",
            ":2:46: groups.mine.vars.connection: ws is a second host",
        ),
    ],
)
def test_two_local_hosts_are_refused_at_the_second_one(
    tmp_path: Path, inventory: str, where: str
) -> None:
    write(tmp_path / "inventory.yaml", inventory)
    plan = write(
        tmp_path / "plan.yaml",
        "name: p\ninventory: inventory.yaml\ntests:\n"
        "  - {id: d, kind: disk, host: pc, path: /var/tmp, size: 1MiB}\n",
    )
    result = CliRunner().invoke(main, ["validate", str(plan)])
    assert result.exit_code == 2 and "Traceback" not in result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(str(tmp_path / "inventory.yaml") + where), line
    assert "(pc is one already)" in line and "reach ws over SSH" in line


def test_a_bad_connection_is_refused_at_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "inventory.yaml", "hosts:\n  pc: {connection: telnet}\n")
    with pytest.raises(InputError, match=r":2:20: hosts\.pc\.connection: 'telnet' is not one of"):
        load_inventory(path)


def test_ansible_connection_local_is_a_local_host_and_ssh_ones_stay_ssh(tmp_path: Path) -> None:
    inventory = load_inventory(
        write(
            tmp_path / "hosts",
            "[clients]\npc ansible_connection=local\n"
            "[nas]\nnas ansible_host=198.18.0.10 ansible_connection=ansible.builtin.paramiko\n"
            "ws ansible_host=198.18.0.11 ansible_connection=smart\n",
        )
    )
    assert {name: host.connection for name, host in inventory.hosts.items()} == {
        "pc": "local",
        "nas": "ssh",
        "ws": "ssh",
    }
    assert inventory.warnings == ()


def test_two_ansible_local_hosts_are_refused_where_the_second_is_set(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hosts",
        "[clients]\npc ansible_connection=local\nws ansible_connection=ansible.builtin.local\n",
    )
    with pytest.raises(InputError) as caught:
        load_inventory(path)
    assert str(caught.value).startswith(
        f"{path}:3:4: _meta.hostvars.ws.ansible_connection: ws is a second host"
    )


def test_the_connector_hands_a_local_host_a_local_runner_that_is_traced() -> None:
    said: list[str] = []
    runner = Verbosity(COMMANDS).traced(connect, said.append)(PC)
    try:
        assert runner.run(["echo", "it's here"]).stdout == "it's here\n"
    finally:
        runner.close()
    assert said == ["pc: $ echo 'it'\"'\"'s here'"]
    local = connect(PC)
    assert isinstance(local, LocalHostRunner) and server_key_fingerprint(local) is None


@pytest.fixture(params=sorted(LOCAL_RUNNERS))
def local_runner(request: pytest.FixtureRequest) -> Iterator[LocalRunner]:
    runner = LOCAL_RUNNERS[request.param]()
    yield runner
    runner.close()


def _gone(pid: int, within_s: float = 3.0) -> bool:
    """Whether process ``pid`` ended (gone, or a zombie nobody reaped yet) within ``within_s``."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.02)
    return False


def test_a_local_runner_gives_each_command_its_input_and_nothing_else(
    local_runner: LocalRunner,
) -> None:
    argv = ["sh", "-c", 'read -r line; printf "%s|%s" "$line" "$1"', "sh", "a b;$c"]
    said = local_runner.run(argv, stdin="fed\n")
    assert said.ok and said.stdout == "fed|a b;$c"
    assert local_runner.run_script("cat; exit 3").exited == 3  # /dev/null, not the terminal
    renewed = local_runner.try_script("echo renewed", timeout_s=5)
    assert renewed is not None and renewed.stdout == "renewed\n"
    assert local_runner.lost is None


def test_a_local_command_past_its_timeout_is_killed_with_what_it_started(
    local_runner: LocalRunner, tmp_path: Path
) -> None:
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    result = local_runner.run_script(f"sleep 60 & echo $! > {pidfile}; wait", timeout_s=0.5)
    assert result.exited == 124 and result.stderr == "timed out after 0.5 s"
    assert time.monotonic() - started < 5
    assert _gone(int(pidfile.read_text()))


def test_close_kills_what_start_until_left_running(local_runner: LocalRunner) -> None:
    launched = local_runner.start_until(
        "echo $$; echo ready; exec sleep 60", ["ready"], timeout_s=5
    )
    assert launched is not None and launched.ended is None
    pid = int(launched.output.split()[0])
    assert launched.ended_within is not None and not launched.ended_within(0.05)
    assert not _gone(pid, 0.1)
    local_runner.close()
    assert _gone(pid)


def test_close_kills_a_command_another_thread_still_waits_for(
    local_runner: LocalRunner, tmp_path: Path
) -> None:
    pidfile, results = tmp_path / "sleep.pid", []
    script = f"sleep 60 & echo $! > {pidfile}; wait"
    waiter = threading.Thread(target=lambda: results.append(local_runner.run_script(script)))
    waiter.start()
    deadline = time.monotonic() + 5
    while not (pidfile.exists() and pidfile.read_text().strip()):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    local_runner.close()
    waiter.join(timeout=5)
    assert not waiter.is_alive() and results[0].exited == -9
    assert _gone(int(pidfile.read_text()))


def test_start_until_says_how_a_command_ended_before_it_was_ready(
    local_runner: LocalRunner,
) -> None:
    ended = local_runner.start_until("echo nope; echo why >&2; exit 4", ["ready"], timeout_s=5)
    assert ended is not None and ended.ended is not None
    assert (ended.output, ended.ended.exited, ended.ended.stderr) == ("nope\n", 4, "why\n")
    slow = local_runner.start_until("echo $$; exec sleep 60", ["ready"], timeout_s=0.3)
    assert slow is not None and slow.ended is not None and slow.ended.exited == 124
    slow.close()
    local_runner.close()
    assert _gone(int(slow.output.split()[0]))


FAKE_SUDO = """#!/bin/sh
# sudo's stand-in: notes its arguments, takes the password line (-S), runs what follows --
printf '%s\\n' "$*" >> "$FAKE_SUDO_ARGV"
case " $* " in
  *" -S "*) read -r pw; [ "$pw" = s3cret-pw ] || { echo 'Sorry, try again.' >&2; exit 1; } ;;
  *" -n "*) echo 'sudo: a password is required' >&2; exit 1 ;;
esac
while [ "$1" != -- ]; do shift; done
shift
exec "$@"
"""


@pytest.fixture
def fake_sudo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``sudo`` first on PATH: a stand-in that checks the password it reads on stdin."""
    (tmp_path / "bin").mkdir()
    write(tmp_path / "bin" / "sudo", FAKE_SUDO).chmod(0o755)
    argv_file = tmp_path / "sudo-argv"
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_SUDO_ARGV", str(argv_file))
    return argv_file


def test_a_local_host_becomes_root_through_sudo_with_the_password_on_stdin(
    fake_sudo: Path,
) -> None:
    runner = LocalHostRunner(PC, become_password="s3cret-pw")
    runner.is_root = False  # as a user's workstation: nasplan runs as that user
    result = runner.run(["sh", "-c", "cat; echo done"], sudo=True, stdin="input\n")
    assert result.ok and result.stdout == "input\ndone\n" and result.stderr == ""
    assert result.command == "sh -c 'cat; echo done'"
    assert "s3cret-pw" not in fake_sudo.read_text() and "-S -k" in fake_sudo.read_text()
    assert runner.run_script("echo plain").stdout == "plain\n"  # no sudo where none is asked
    assert fake_sudo.read_text().count("-- sh -c") == 1


def test_sudo_refusing_a_local_host_says_why(fake_sudo: Path) -> None:
    wrong = LocalHostRunner(PC, become_password="wrong")
    wrong.is_root = False
    with pytest.raises(BecomeError, match=r"sudo: wrong password for .* on pc"):
        wrong.run_script("true", sudo=True)
    none = LocalHostRunner(PC)
    none.is_root = False
    with pytest.raises(BecomeError, match=r"needs a password for sudo: .*become_password_env"):
        none.run_script("true", sudo=True)


def test_a_local_host_s_cpu_is_its_own_not_shared_with_the_machine_running_nasplan() -> None:
    # a workstation as a local host: its kernel is nasplan's machine's, which is itself
    assert shared_kernels({"pc": "b1", "nas": "b2"}, "b1", {"pc"}) == {}
    # the lab's client as a local host: it still shares its kernel with the lab's NAS
    assert shared_kernels({"pc": "b1", "nas": "b1"}, "b1", {"pc"}) == {
        "nas": ["pc", "the machine running nasplan"],
        "pc": ["nas"],
    }
