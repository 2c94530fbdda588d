"""``nasplan/run/resume.py``: the command that finishes a stopped run."""

from __future__ import annotations

import shlex
from pathlib import Path

from nasplan.run.resume import resume_command


def test_the_resume_command_repeats_what_resume_needs_quoted_for_a_shell() -> None:
    command = resume_command(
        Path("runs/20261202T031900Z-nas upgrade"),
        ["duration_s=2", '{"sizes": ["1GiB"]}'],
        ["nas,pc"],
        ["tcp[client=pc,nic=lan*"],
        keep=True,
    )
    assert shlex.split(command) == [
        "nasplan", "apply", "--resume", "runs/20261202T031900Z-nas upgrade",
        "-e", "duration_s=2", "-e", '{"sizes": ["1GiB"]}',
        "--limit", "nas,pc", "--tests", "tcp[client=pc,nic=lan*", "--keep",
    ]  # fmt: skip


def test_a_plain_run_is_resumed_by_its_directory_alone() -> None:
    assert resume_command(Path("runs/x")) == "nasplan apply --resume runs/x"
