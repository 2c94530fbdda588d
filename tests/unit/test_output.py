"""One redaction path for every byte nasplan writes: files through nasplan.output, progress
through RedactedProgress; no other module may open a file for writing."""

from __future__ import annotations

import ast
import io
import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.output import (
    env_names,
    redactor_of,
    secrets_from_environ,
    sync_files,
    write_text,
)
from nasplan.progress import PlainProgress, RedactedProgress

PACKAGE = Path(__file__).resolve().parents[2] / "nasplan"
FIXTURE_RUN = Path(__file__).resolve().parents[1] / "fixtures" / "runs"

# The lab writes its own files (sshd configs, keys, its state): it holds no secret of a run.
# Charts (also the timeline figures) are images of numbers drawn by matplotlib from run.json,
# which is redacted already.
ALLOWED = {
    PACKAGE / "output.py",
    PACKAGE / "report" / "charts.py",
    PACKAGE / "report" / "timeline_charts.py",
}
WRITERS = {"write_text", "write_bytes", "mkstemp", "fdopen", "dump", "savefig"}


def _writes_file(call: ast.Call) -> str | None:
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if isinstance(func, ast.Attribute) and name in WRITERS:
        return str(name)
    if name == "open":
        modes = [a for a in call.args[1:2] if isinstance(a, ast.Constant)]
        modes += [k.value for k in call.keywords if k.arg == "mode"]
        if isinstance(func, ast.Attribute) and not call.args and not call.keywords:
            return None
        for mode in modes:
            if isinstance(mode, ast.Constant) and any(c in str(mode.value) for c in "wax+"):
                return "open for writing"
        if any(not isinstance(a, ast.Constant) for a in call.args[1:2]):
            return "open with a computed mode"
    return None


def test_no_module_writes_a_file_except_through_nasplan_output() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in ALLOWED or (PACKAGE / "lab") in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and (what := _writes_file(node)):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {what}")
    assert offenders == []


def test_the_checker_sees_the_ways_of_writing_a_file() -> None:
    samples = [
        "Path('x').write_text('s')",
        "open('x', 'w')",
        "open('x', mode='a')",
        "json.dump({}, handle)",
        "os.fdopen(fd, 'w')",
    ]
    for sample in samples:
        call = ast.parse(sample).body[0].value  # type: ignore[attr-defined]
        assert _writes_file(call), sample
    assert _writes_file(ast.parse("open('x')").body[0].value) is None  # type: ignore[attr-defined]


def test_secrets_are_every_env_variable_the_plan_or_inventory_names() -> None:
    plan = {"tests": [{"kind": "transfer", "smb": {"password_env": "SMB_PW"}}]}
    host = {"become_password_env": "SUDO_PW", "vars": {"chap_secret_env": "CHAP"}}
    assert sorted(env_names([plan, host])) == ["CHAP", "SMB_PW", "SUDO_PW"]
    environ = {"SMB_PW": "smb-secret", "SUDO_PW": "sudo-secret", "CHAP": "", "OTHER": "x"}
    assert secrets_from_environ([plan, host], environ) == ["smb-secret", "sudo-secret"]


def test_files_and_progress_lines_are_masked(tmp_path: Path) -> None:
    written = write_text(tmp_path / "raw" / "x.txt", "pw=hunter22 ok", redactor_of(["hunter22"]))
    assert written.read_text() == "pw=******** ok"
    stream = io.StringIO()
    secrets: list[str] = []
    progress = RedactedProgress(PlainProgress(stream), secrets)
    secrets.append("s3cr3t-token")  # learned during the run: masked from then on
    progress.host("nas", "sudo: s3cr3t-token refused")
    progress.message("mount //nas/share pass=s3cr3t-token")
    progress.test_done("t", "failed", "error s3cr3t-token")
    assert "s3cr3t-token" not in stream.getvalue()
    assert stream.getvalue().count("********") == 3


def test_report_and_compare_mask_secrets_the_plan_names(tmp_path: Path) -> None:
    dirs = []
    for index in range(2):
        run = json.loads((FIXTURE_RUN / "sample" / "run.json").read_text())
        run["plan"]["vars"] = {"token_env": "FT_TOKEN"}
        run["tests"][0]["name"] = "leaked tok-0123456789 here"
        target = tmp_path / f"run{index}"
        target.mkdir()
        (target / "run.json").write_text(json.dumps(run))
        dirs.append(str(target))
    env = {"FT_TOKEN": "tok-0123456789"}
    result = CliRunner(env=env).invoke(main, ["report", dirs[0]])
    assert result.exit_code == 0, result.output
    report = (Path(dirs[0]) / "report.md").read_text()
    assert "tok-0123456789" not in report and "leaked ******** here" in report
    result = CliRunner(env=env).invoke(main, ["compare", *dirs, "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "tok-0123456789" not in result.output


def test_in_run_writes_skip_fsync_and_are_synced_with_their_directories_at_the_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[Path] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    run_dir = tmp_path / "runs" / "r1"
    raw = run_dir / "raw" / "lan" / "rep-1.json"
    write_text(raw, "{}\n", redactor_of([]), durable=False)  # its directories are made
    write_text(run_dir / "run.json", "{}\n", redactor_of([]), durable=False)
    assert synced == []  # nothing between two measurements
    assert raw.read_text() == "{}\n"
    sync_files([raw, run_dir / "run.json", run_dir / "gone.json"], run_dir)
    assert set(synced) == {
        raw,
        run_dir / "run.json",
        raw.parent,
        raw.parent.parent,
        run_dir,
    }  # not runs/ above the run, not a file that is not there
    synced.clear()
    write_text(run_dir / "report.md", "# r\n", redactor_of([]))
    assert len(synced) == 1 and synced[0].parent == run_dir  # durable: its temporary file
