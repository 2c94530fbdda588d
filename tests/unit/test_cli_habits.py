"""The command line's habits (issue 27): -v/-vv/-q, -e @file and -e '{json}', --format json,
located errors as FILE:LINE:COL, escaped terminal output, one unreachable line in the user's
terms, shell completion, and refusals before the first connection."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pytest
from click.testing import CliRunner
from keyfiles import write_private_key

from nasplan.cli import main
from nasplan.errors import HostError, InputError
from nasplan.input.extra_vars import extra_vars
from nasplan.input.inventory import Host
from nasplan.input.loader import located
from nasplan.input.plan import load_plan
from nasplan.output import REDACTED
from nasplan.progress import PlainProgress, QuietProgress
from nasplan.remote.runner import Result, RunnerBase
from nasplan.run.check import check
from nasplan.verbosity import COMMANDS, SCRIPTS, TIMINGS, Trace, TracedRunner, Verbosity

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"

INVENTORY = """\
vars: {user: root, framing: tc, known_hosts: known_hosts, identity_file: key}
hosts:
  nas:
    address: 127.0.0.1
    port: PORT
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.18.0.10/24}
  ws:
    address: 127.0.0.1
    port: PORT
"""
PLAN = """\
name: demo
inventory: inventory.yaml
vars: {duration_s: 1}
tests:
  - {id: lan, kind: iperf3, server: nas, client: ws, repetitions: 1,
     duration_s: "{{ vars.duration_s }}"}
"""
SMB_TEST = """\
  - {id: smb, kind: transfer, method: smb, server: nas, client: ws, share: data, user: u,
     password_env: NASPLAN_HABITS_SMB, repetitions: 1}
"""


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then let go)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def write_plan(tmp_path: Path, plan: str = PLAN) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY.replace("PORT", str(closed_port())))
    (tmp_path / "known_hosts").write_text("")
    write_private_key(tmp_path / "key")
    (tmp_path / "plan.yaml").write_text(plan)
    return tmp_path / "plan.yaml"


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``nasplan ARGS`` -> (exit code, stdout, stderr); a traceback fails the test."""
    result = CliRunner(env=env).invoke(main, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback: {result.exception!r}")
    return result.exit_code, result.stdout, result.stderr


# --- located errors -------------------------------------------------------------------------


def test_a_located_error_is_printed_as_file_line_col_without_a_prefix(tmp_path: Path) -> None:
    plan = write_plan(tmp_path, PLAN.replace("server: nas", "server: nax"))
    code, out, err = invoke("validate", str(plan))
    assert code == 2 and out == ""
    (line,) = err.splitlines()
    assert re.match(rf"^{re.escape(str(plan))}:5:\d+: tests\[0\]\.server: .*'nax'", line), line
    # an error with no place in a file keeps the program's name
    code, _, err = invoke("validate", str(tmp_path / "missing.yaml"))
    assert code == 2 and err.startswith("nasplan: ") and "file not found" in err


def test_located_takes_a_line_apart_and_leaves_other_lines_alone() -> None:
    found = located("plans/a b.yaml:3:5: tests[0].server: unknown host 'x'")
    assert found is not None
    assert found.to_dict() == {
        "file": "plans/a b.yaml",
        "line": 3,
        "column": 5,
        "path": "tests[0].server",
        "message": "unknown host 'x'",
    }
    syntax = located("p.yaml:1:2: YAML syntax error: found character")
    assert syntax is not None and (syntax.path, syntax.message) == (
        None,
        "YAML syntax error: found character",
    )
    assert located("-e x: -e:5:3: aliases expand") is None
    assert located("nas: cannot connect") is None


# --- --format json ----------------------------------------------------------------------------


def test_validate_format_json(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    code, out, _ = invoke("validate", str(plan), "--format", "json")
    assert code == 0 and json.loads(out) == {"ok": True, "errors": [], "warnings": []}
    write_plan(tmp_path, PLAN.replace("server: nas", "server: nax"))
    code, out, err = invoke("validate", str(plan), "--format", "json")
    assert code == 2 and err == ""
    document = json.loads(out)
    assert document["ok"] is False
    (error,) = document["errors"]
    assert (error["file"], error["line"], error["path"]) == (str(plan), 5, "tests[0].server")
    assert "'nax'" in error["message"]


def test_apply_check_format_json_and_one_unreachable_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    code, out, err = invoke("apply", str(plan), "--check", "--format", "json")
    assert code == 3
    document = json.loads(out)
    keys = {"hosts", "installs", "changes", "tests", "looked", "estimate", "problems", "exit_code"}
    assert set(document) == keys
    assert document["tests"] == [{"id": "lan", "would_run": "iperf3 TCP ws -> nas, 1 x 1 s"}]
    nas = document["hosts"]["nas"]
    assert nas["reachable"] is False
    assert re.fullmatch(
        r"nas: cannot connect to 127\.0\.0\.1:\d+: connection refused.*", nas["error"]
    )
    # on the console: one line per unreachable host, in the user's terms, said once
    code, out, err = invoke("apply", str(plan), "--check")
    assert code == 3 and out == ""
    lines = [line for line in err.splitlines() if "cannot connect" in line]
    assert len(lines) == 2, err  # nas and ws, each once
    assert "Errno" not in err and "Unable to connect" not in err
    assert re.match(r"host nas: \[unreachable\] cannot connect to 127\.0\.0\.1:\d+: connection "
                    r"refused", sorted(lines)[0])  # fmt: skip


def test_apply_format_json_needs_check(tmp_path: Path) -> None:
    code, _, err = invoke("apply", str(write_plan(tmp_path)), "--format", "json")
    assert code == 2 and "--format json goes with --check" in err


def test_lab_status_format_json_when_the_lab_is_not_up(tmp_path: Path) -> None:
    code, out, _ = invoke(
        "lab", "status", "--state-dir", str(tmp_path / "none"), "--format", "json"
    )
    assert code == 0
    assert json.loads(out) == {"up": False, "hosts": [], "links": [], "problems": []}


def test_lab_status_json_names_each_host_and_its_state() -> None:
    from nasplan.lab.cli import status_dict
    from nasplan.lab.lifecycle import HostStatus, LabStatus, LinkStatus
    from nasplan.lab.state import HostState, LabState, LinkState

    state = LabState(Path("/s"), "demo", "lab.yaml", "br", "198.18.0.1", "nl", "ns")
    nas = HostState("nas", "ns-nas", "198.18.0.10/24", "qnap", "v0", sshd_pid=42)
    ws = HostState("ws", "ns-ws", "198.18.0.11/24", "debian", "v1", sshd_pid=43)
    link = LinkState("p2p", "10G", 9000, [("ns-nas", "eth1"), (None, "v2")])
    found = LabStatus(
        state,
        [HostStatus(nas, True, True), HostStatus(ws, True, False)],
        [LinkStatus(link, [10_000_000_000, None])],
        ["ws: sshd is not running"],
    )
    document = json.loads(json.dumps(status_dict(found)))
    assert document["up"] is True and document["lab"] == "demo"
    assert [(h["name"], h["state"]) for h in document["hosts"]] == [
        ("nas", "running"),
        ("ws", "sshd not running"),
    ]
    assert document["links"][0]["ends"][1] == {"namespace": None, "device": "v2"}
    assert document["problems"] == ["ws: sshd is not running"]


# --- -e ---------------------------------------------------------------------------------------


def test_extra_vars_from_a_file_json_and_key_value_merge_left_to_right(tmp_path: Path) -> None:
    (tmp_path / "vars.yml").write_text("duration_s: 2\nrepetitions: 3\nnested: {a: 1}\n")
    (tmp_path / "vars.json").write_text('{"repetitions": 4}')
    merged = extra_vars(
        [f"@{tmp_path / 'vars.yml'}", f"@{tmp_path / 'vars.json'}", '{"duration_s": 5}', "x=y"]
    )
    assert merged == {"duration_s": 5, "repetitions": 4, "nested": {"a": 1}, "x": "y"}
    assert extra_vars(["{duration_s: 7, mode: fast}", "duration_s=8"]) == {
        "duration_s": 8,
        "mode": "fast",
    }


def test_extra_vars_errors_are_located_in_their_file(tmp_path: Path) -> None:
    (tmp_path / "bad.yml").write_text("duration_s: 2\nrepetitions: [3\n")
    with pytest.raises(InputError, match=rf"^{re.escape(str(tmp_path / 'bad.yml'))}:3:1: YAML"):
        extra_vars([f"@{tmp_path / 'bad.yml'}"])
    (tmp_path / "list.yml").write_text("- 1\n")
    with pytest.raises(InputError, match=r"list\.yml:1:1: \(root\): .*expected a mapping"):
        extra_vars([f"@{tmp_path / 'list.yml'}"])
    with pytest.raises(InputError, match=r"missing\.yml: file not found"):
        extra_vars([f"@{tmp_path / 'missing.yml'}"])
    with pytest.raises(InputError, match="expected KEY=VALUE, @FILE or a mapping"):
        extra_vars(["duration_s"])
    (tmp_path / "fifo").unlink(missing_ok=True)
    os.mkfifo(tmp_path / "fifo")  # bounded reads: a FIFO is refused at once, never read
    with pytest.raises(InputError, match="is a FIFO"):
        extra_vars([f"@{tmp_path / 'fifo'}"])


def test_extra_vars_reach_the_plan_through_the_command_line(tmp_path: Path) -> None:
    plan = write_plan(tmp_path)
    (tmp_path / "vars.yml").write_text("duration_s: 'x'\n")
    code, _, err = invoke("validate", str(plan), "-e", f"@{tmp_path / 'vars.yml'}")
    assert code == 2 and "tests[0].duration_s: 'x' is not of type 'integer'" in err
    code, out, _ = invoke("validate", str(plan), "-e", f"@{tmp_path / 'vars.yml'}", "-e",
                          '{"duration_s": 3}')  # fmt: skip
    assert code == 0 and out.strip() == "ok"
    assert (
        load_plan(plan, extra_vars=extra_vars(['{"duration_s": 3}']))
        .tests[0]
        .settings["duration_s"]
        == 3
    )


# --- refusals before connecting ---------------------------------------------------------------


def test_apply_refuses_an_unset_password_variable_before_connecting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = write_plan(tmp_path, PLAN + SMB_TEST)
    monkeypatch.delenv("NASPLAN_HABITS_SMB", raising=False)
    code, _, err = invoke("apply", str(plan), "--out", str(tmp_path / "run"))
    assert code == 2, err
    assert "nasplan: test smb: the SMB password comes from $NASPLAN_HABITS_SMB" in err
    assert "connecting" not in err and not (tmp_path / "run").exists()


def test_apply_check_of_an_example_plan_without_its_lab_says_lab_up(tmp_path: Path) -> None:
    for name in ("lab.yaml", "nas-upgrade.yaml"):
        shutil.copy(ROOT / "plans" / "examples" / name, tmp_path / name)
    code, _, err = invoke("apply", str(tmp_path / "nas-upgrade.yaml"), "--check")
    assert code == 2
    assert f"sudo nasplan lab up {tmp_path / 'lab.yaml'}" in err and "the lab is not up" in err


def test_restore_of_a_directory_that_does_not_exist_says_so(tmp_path: Path) -> None:
    code, _, err = invoke("restore", str(tmp_path / "runs" / "nope"))
    assert code == 2 and "no such directory" in err
    assert "changed no network settings" not in err
    code, _, err = invoke("restore", str(tmp_path))
    assert code == 2 and "not a run directory (no run.json in it)" in err


# --- the unreachable line ---------------------------------------------------------------------


def test_connect_to_a_closed_port_says_connection_refused_in_one_line(tmp_path: Path) -> None:
    from nasplan.remote.ssh import connect

    write_plan(tmp_path)
    port = closed_port()
    host = Host("nas", "127.0.0.1", port=port, known_hosts=tmp_path / "known_hosts")
    with pytest.raises(HostError) as caught:
        connect(host, timeout_s=5)
    assert str(caught.value).startswith(
        f"nas: cannot connect to 127.0.0.1:{port}: connection refused"
    )
    assert "Errno" not in str(caught.value)


def test_connect_reasons_in_a_users_terms() -> None:
    import errno

    import paramiko

    from nasplan.remote.ssh_open import connect_reason

    wrapped = paramiko.ssh_exception.NoValidConnectionsError(
        {("198.18.2.109", 22): ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")}
    )
    assert connect_reason(wrapped, 10).startswith("connection refused")
    assert connect_reason(TimeoutError("timed out"), 10) == "no answer within 10 s"
    assert connect_reason(OSError(errno.EHOSTUNREACH, "No route to host"), 10) == "no route to host"
    assert connect_reason(socket.gaierror(-2, "Name or service not known"), 10).startswith(
        "no such host name"
    )


# --- -v, -vv, -q ------------------------------------------------------------------------------


class Answers(RunnerBase):
    """Answers the facts script with a captured Debian output, anything else with ``ok``."""

    name = "answers"

    def __init__(self) -> None:
        self.facts = (FIXTURES / "facts" / "debian12-root.txt").read_text()

    def run(self, argv: Sequence[str], **_: object) -> Result:
        return Result(" ".join(argv), "ok\n", "", 0)

    def run_script(self, script: str, **_: object) -> Result:
        return Result("facts", self.facts, "", 0)


def test_v_says_each_command_whole_with_its_host_and_vv_its_exit_status(tmp_path: Path) -> None:
    said: list[str] = []
    runner = TracedRunner(Answers(), Trace("nas", COMMANDS, said.append, ["s3cret"]))
    runner.run(["echo", "s3cret", "a  b"], sudo=True)
    assert said == [f"nas: $ sudo echo {REDACTED} 'a  b'"]
    said.clear()
    # a long one-line command (a fio job) whole, never cut
    fio = ["fio", "--name=nasplan", "--filename=/srv/" + "d" * 300, "--rw=write", "--bs=1M"]
    runner.run(fio)
    assert said == [f"nas: $ {shlex.join(fio)}"]
    said.clear()
    runner = TracedRunner(Answers(), Trace("nas", TIMINGS, said.append, ["s3cret"]))
    # a script's lines each on a line of their own, as they are: no literal \n
    runner.run_script("a 'b  c'\n    d\n")
    assert said[:2] == ["nas: $ a 'b  c'", "nas:       d"]
    assert re.fullmatch(r"nas: exit 0 after \d+\.\d\d s: a 'b  c'", said[2]), said[2]
    said.clear()
    # a long script (the facts script) by its first lines below -vvv, whole at -vvv
    script = "\n".join(f"line {i}" for i in range(1, 41))
    runner.run_script(script)
    assert said[:12] == ["nas: $ line 1", *(f"nas:   line {i}" for i in range(2, 13))]
    assert said[12] == "nas:   ... (28 more lines of this script: -vvv)"
    said.clear()
    runner = TracedRunner(Answers(), Trace("nas", SCRIPTS, said.append, ["s3cret"]))
    runner.run_script(script)
    assert said[:40] == ["nas: $ line 1", *(f"nas:   line {i}" for i in range(2, 41))]


def test_check_with_v_says_the_facts_command_per_host(tmp_path: Path) -> None:
    plan = load_plan(write_plan(tmp_path))
    stream = io.StringIO()
    check(plan, PlainProgress(stream), connector=lambda host: Answers(), environ={},
          verbosity=Verbosity(COMMANDS))  # fmt: skip
    lines = stream.getvalue().splitlines()
    assert any(line.startswith("nas: $ ") for line in lines), lines
    assert any(line.startswith("ws: $ ") for line in lines), lines
    quiet = io.StringIO()
    check(plan, PlainProgress(quiet), connector=lambda host: Answers(), environ={})
    assert "$ " not in quiet.getvalue()


def test_q_says_only_what_went_wrong() -> None:
    stream = io.StringIO()
    progress = QuietProgress(stream)
    progress.host("nas", "connecting")
    progress.host("ws", "[unreachable] cannot connect to 198.18.0.11:22: connection refused")
    progress.test("lan", 1, 3, 30.0)
    progress.test_done("lan", "ok", "median 941 Mbit/s")
    progress.test_done("p2p", "failed", "ws: lost")
    progress.message("test lan: would run iperf3")
    progress.message("problem: test smb: $X is not set")
    assert stream.getvalue().splitlines() == [
        "host ws: [unreachable] cannot connect to 198.18.0.11:22: connection refused",
        "test p2p: failed ws: lost",
        "problem: test smb: $X is not set",
    ]


def test_q_and_v_flags(tmp_path: Path) -> None:
    assert Verbosity.from_flags(3, False).level == SCRIPTS
    assert Verbosity.from_flags(5, False).level == SCRIPTS
    assert Verbosity.from_flags(0, True).quiet
    code, _, err = invoke("apply", str(write_plan(tmp_path)), "-q", "-v", "--check")
    assert code == 2 and "-q and -v together" in err
    code, out, err = invoke("apply", str(write_plan(tmp_path)), "-q", "--check")
    assert code == 3 and out == ""
    assert "connecting" not in err and err.count("[unreachable]") == 2


# --- the terminal -----------------------------------------------------------------------------

LIVE = textwrap.dedent(
    """
    import sys
    from nasplan.progress import LiveProgress, make_progress
    progress = make_progress()
    assert isinstance(progress, LiveProgress), type(progress)
    progress.host("nas", "[in use] held by run [/x] of [bold]me")
    progress.test("t[/1]", 1, 2, 0.0)
    progress.message("ws: [lost] a [/ b")
    progress.close()
    print("CLOSED", file=sys.stderr)
    """
)


def test_live_progress_on_a_terminal_shows_brackets_as_they_are() -> None:
    import pty

    main_fd, side_fd = pty.openpty()
    env = {**os.environ, "COLUMNS": "200", "TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-c", LIVE], stdin=side_fd, stdout=side_fd,
                            stderr=side_fd, env=env, cwd=ROOT)  # fmt: skip
    os.close(side_fd)
    chunks = []
    while True:
        try:
            chunk = os.read(main_fd, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(main_fd)
    assert proc.wait(timeout=30) == 0, b"".join(chunks).decode(errors="replace")
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    assert "MarkupError" not in text and "CLOSED" in text, text
    assert "[in use] held by run [/x] of [bold]me" in text, text
    assert "t[/1]" in text, text
    assert "ws: [lost] a [/ b" in text, text


# --- shell completion -------------------------------------------------------------------------


def test_shell_completion_of_commands_and_the_lab_group() -> None:
    env = {"_NASPLAN_COMPLETE": "bash_complete", "COMP_WORDS": "nasplan ", "COMP_CWORD": "1"}
    result = CliRunner(env=env).invoke(main, [], prog_name="nasplan")
    names = {line.split(",", 1)[1] for line in result.stdout.splitlines() if "," in line}
    assert {"apply", "validate", "restore", "lab", "compare"} <= names, result.stdout
    source = CliRunner(env={"_NASPLAN_COMPLETE": "bash_source"}).invoke(
        main, [], prog_name="nasplan"
    )
    assert "_nasplan_completion" in source.stdout


def test_no_help_shows_restructuredtext_backticks() -> None:
    """--help is read in a terminal: ``x`` would show its four backticks as they are."""
    import click

    commands = ["", *sorted(main.commands)] if isinstance(main, click.Group) else [""]
    for name in commands:
        result = CliRunner().invoke(main, [*([name] if name else []), "--help"])
        assert result.exit_code == 0, name
        assert "``" not in result.output, f"nasplan {name} --help"
