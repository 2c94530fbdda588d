"""Any file a user names or Ansible's rules find for them (the plan, its ``inventory:``, ``-i``,
a file of an inventory directory, ``-e @vars.yml``, ``group_vars/``, ``host_vars/``) that is
binary, empty, truncated, unreadable, a directory, a FIFO or a dangling link: ``nasplan
validate`` ends at once with exit 2 and one line naming the file (and its line where it has
one), never a traceback; or exit 0 where Ansible reads it as nothing (an empty vars file, an
empty directory of vars files).

Unreadable is tested as root can be refused: the command runs without the capabilities that
let root read any file (util-linux ``setpriv``), on a file of mode 000.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.loader import located

INVENTORY = (
    "all:\n  hosts:\n    nas: {ansible_host: 198.18.122.10}\n"
    "    ws: {ansible_host: 198.18.122.11}\n"
)
TEST = "  - {id: t, kind: iperf3, server: nas, client: ws}\n"
KINDS = ("binary", "empty", "truncated", "unreadable", "directory", "fifo", "dangling")
# where a bad file stands: the file, and the validate arguments (run in the case's directory)
ROLES = {
    "plan": ("plan.yaml", ["plan.yaml"]),
    "plan's inventory": ("named.yml", ["named-plan.yaml"]),
    "-i": ("given.yml", ["-i", "given.yml", "plan.yaml"]),
    "inventory directory": ("invdir/20-more.yml", ["-i", "invdir", "plan.yaml"]),
    "-e @": ("vars.yml", ["-e", "@vars.yml", "plan.yaml"]),
    "group_vars": ("group_vars/all.yml", ["plan.yaml"]),
    "host_vars": ("host_vars/nas/10-first.yml", ["plan.yaml"]),
}
# what Ansible reads as nothing, nasplan too: (role, kind) -> exit 0
READ_AS_NOTHING = {
    ("inventory directory", "empty"),
    ("inventory directory", "directory"),  # a subdirectory with no inventory in it
    ("-e @", "empty"),
    ("group_vars", "empty"),
    ("group_vars", "directory"),  # group_vars/all.yml/ as a directory of vars files
    ("host_vars", "empty"),
    ("host_vars", "directory"),
}


def make_bad(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists() or path.is_symlink():
        path.unlink()
    if kind == "binary":
        path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff\xfe" + bytes(range(256)))
    elif kind == "empty":
        path.write_text("")
    elif kind == "truncated":
        path.write_text("all:\n  hosts:\n    nas: {ansible_host: 198.18.1")
    elif kind == "unreadable":
        path.write_text("a: 1\n")
        path.chmod(0o000)
    elif kind == "directory":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to(path.parent / "nowhere")


@pytest.fixture
def case_dir(tmp_path: Path) -> Path:
    """A valid plan and inventory, and every place a bad file can stand, filled with good ones."""
    (tmp_path / "inventory.yml").write_text(INVENTORY)
    (tmp_path / "plan.yaml").write_text(f"name: p\ninventory: inventory.yml\ntests:\n{TEST}")
    (tmp_path / "named-plan.yaml").write_text(f"name: p\ninventory: named.yml\ntests:\n{TEST}")
    (tmp_path / "named.yml").write_text(INVENTORY)
    (tmp_path / "given.yml").write_text(INVENTORY)
    (tmp_path / "invdir").mkdir()
    (tmp_path / "invdir" / "10-hosts.yml").write_text(INVENTORY)
    (tmp_path / "invdir" / "20-more.yml").write_text("all:\n  vars: {colour: blue}\n")
    (tmp_path / "vars.yml").write_text("duration_s: 1\n")
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text("colour: blue\n")
    (tmp_path / "host_vars" / "nas").mkdir(parents=True)
    (tmp_path / "host_vars" / "nas" / "10-first.yml").write_text("colour: green\n")
    return tmp_path


@pytest.fixture
def no_hang() -> Iterator[None]:
    """A read that blocks (a FIFO) fails the test instead of hanging it."""

    def stop(signum: int, frame: object) -> None:
        raise TimeoutError("validate did not return within 10 s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(10)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def run_validate(directory: Path, args: list[str], unreadable: bool) -> tuple[int, str]:
    if unreadable:
        setpriv = shutil.which("setpriv")
        assert setpriv, "util-linux's setpriv runs nasplan as a root that cannot read mode 000"
        without_override = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
        done = subprocess.run(
            [*without_override, sys.executable, "-m", "nasplan", "validate", *args],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done.returncode, done.stdout + done.stderr
    cwd = Path.cwd()
    os.chdir(directory)
    try:
        result = CliRunner().invoke(main, ["validate", *args])
    finally:
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    return result.exit_code, result.output


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("role", ROLES)
def test_a_bad_file_is_one_line_naming_it(
    case_dir: Path, no_hang: None, role: str, kind: str
) -> None:
    name, args = ROLES[role]
    code, out = run_validate(case_dir, args, unreadable=False)
    assert (code, out.strip()) == (0, "ok"), out  # the good files validate
    make_bad(case_dir / name, kind)
    code, out = run_validate(case_dir, args, unreadable=kind == "unreadable")
    if (role, kind) in READ_AS_NOTHING:
        assert (code, out.strip()) == (0, "ok"), out
        return
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1, out
    line = lines[0]
    if role == "plan's inventory" and kind not in ("binary", "truncated", "empty"):
        where = located(line)
        assert where is not None and where.file == "named-plan.yaml", line
        assert where.line == 2 and where.path == "inventory" and name in where.message, line
    elif kind in ("binary", "truncated") or (kind == "empty" and role != "-e @"):
        where = located(line)
        assert where is not None and Path(where.file).name in name, line
    else:
        assert line.startswith("nasplan: ") and name in line, line
