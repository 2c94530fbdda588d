"""What ``apply --check`` reads for a test (nasplan/measure/probes.py): each probe run by this
machine's own sh, as a host's would run it, on real directories; nothing written."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

from nasplan.measure import probes
from nasplan.measure.kind import PROBE_CANNOT_TELL, Probe


def run(probe: Probe) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", "-c", probe.script], input=probe.stdin, capture_output=True, text=True, timeout=10
    )


def test_a_writable_directory_is_there_and_anything_else_says_why(tmp_path: Path) -> None:
    there = tmp_path / "data"
    there.mkdir()
    before = sorted(tmp_path.rglob("*"))
    assert run(probes.writable_directory("nas", str(there), "the disk test's path")).returncode == 0
    missing = run(probes.writable_directory("nas", str(tmp_path / "volume1" / "t"), "the path"))
    assert missing.returncode == 1
    assert missing.stdout.strip() == f"{tmp_path / 'volume1' / 't'} does not exist"
    (tmp_path / "file").write_text("x")
    a_file = run(probes.writable_directory("nas", str(tmp_path / "file"), "the path"))
    assert a_file.stdout.strip() == f"{tmp_path / 'file'} is not a directory"
    if os.geteuid() != 0:  # root may write anywhere: -w says yes
        there.chmod(0o555)
        shut = run(probes.writable_directory("nas", str(there), "the path"))
        assert "is not writable by" in shut.stdout
        there.chmod(0o755)
    assert sorted(tmp_path.rglob("*")) == [*before, tmp_path / "file"]  # the probes wrote nothing
    # a path with blanks and quotes is one argument, never shell text
    odd = tmp_path / "a dir; touch 'x'"
    odd.mkdir()
    assert run(probes.writable_directory("nas", str(odd), "the path")).returncode == 0
    assert not (Path.cwd() / "x").exists()


def test_a_share_s_login_goes_on_stdin_and_a_missing_tool_cannot_tell() -> None:
    probe = probes.smb_share("ws", "198.18.0.10", "data", "bench/one", "u", "s3cret pass")
    assert "s3cret" not in probe.script and probe.stdin == (
        "username = u\npassword = s3cret pass\n"
    )
    assert "//198.18.0.10/data -A /dev/stdin -D bench/one -c ls" in probe.script
    assert probe.host == "ws" and probe.what == "SMB share //198.18.0.10/data directory bench/one"
    # the tool itself: run with a PATH where it is not
    env = {"PATH": "/nonexistent"}
    done = subprocess.run(
        ["/bin/sh", "-c", probe.script], input=probe.stdin, capture_output=True, text=True,
        env=env, timeout=10,
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip()) == (
        PROBE_CANNOT_TELL,
        "smbclient is not installed yet",
    )


def test_a_listing_that_fails_says_its_tool_s_last_line(tmp_path: Path) -> None:
    probe = probes.nfs_export("ws", "198.18.0.10", "/export/data", 3)
    assert shlex.split(probe.script.splitlines()[0]) == [
        "set", "--", "nfs-ls", "nfs://198.18.0.10/export/data/?version=3"
    ]  # fmt: skip
    # the same script with a tool that fails as nfs-ls does: its last line is the reason
    tool = tmp_path / "nfs-ls"
    tool.write_text(
        "#!/bin/sh\necho 'nfs_mount: RPC error'\necho\n"
        "echo 'Failed to mount nfs share : mount/mnt call failed with \"NFS3ERR_NOENT\"' >&2\n"
        "exit 10\n"
    )
    tool.chmod(0o755)
    env = {"PATH": f"{tmp_path}:/usr/bin:/bin"}
    done = subprocess.run(
        ["/bin/sh", "-c", probe.script], capture_output=True, text=True, env=env, timeout=10
    )
    assert done.returncode == 1
    assert done.stdout.strip().endswith('mount/mnt call failed with "NFS3ERR_NOENT"')


def test_a_hosts_looks_in_one_script_answer_as_each_alone(tmp_path: Path) -> None:
    """``together``'s one round trip, read back by ``apart``: each look's exit status, output
    and error as the look run alone gives them (real sh, busybox-safe constructs)."""
    from nasplan.remote.runner import Result

    there = tmp_path / "data"
    there.mkdir()
    scripts = [
        probes.writable_directory("nas", str(there), "the path").script,
        probes.writable_directory("nas", str(tmp_path / "gone"), "the path").script,
        f"echo partly; echo 'a complaint' >&2; exit {PROBE_CANNOT_TELL}",
        'read -r line; echo "read: [$line]"',  # a look reads /dev/null, not the next look
    ]
    alone = [
        subprocess.run(["sh", "-c", s], stdin=subprocess.DEVNULL, capture_output=True, text=True)
        for s in scripts
    ]
    done = subprocess.run(  # input the looks must not see
        ["sh", "-c", probes.together(scripts)], input="not theirs\n", capture_output=True, text=True
    )
    found = probes.apart(Result("sh", done.stdout, done.stderr, done.returncode), len(scripts))
    assert [r.exited for r in found] == [a.returncode for a in alone] == [0, 1, 3, 0]
    assert [r.stdout.strip() for r in found] == [a.stdout.strip() for a in alone]
    assert found[3].stdout.strip() == "read: []"
    assert [r.stderr.strip() for r in found] == [a.stderr.strip() for a in alone]
    # cut off half-way: the looks that did not answer take the whole command's failure
    cut = probes.apart(Result("sh", done.stdout.split("@@nasplan:probe-2@@")[0], "", 124), 4)
    assert [r.exited for r in cut] == [0, 1, 124, 124]
    assert cut[3].stderr == "no answer (exit 124)"
