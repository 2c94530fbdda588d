"""The live view in a real terminal (tmux, 20 rows) of a run of 30 matrix cells: the overall
line, the running cell never hidden, the last finished cells, colour for ok / failed / warning,
plain under NO_COLOR. Needs tmux (Makefile's TEST_APT_PACKAGES); skipped without it, failed in
CI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROWS, COLUMNS = 20, 120


def _tmux() -> str:
    found = shutil.which("tmux")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("the live view's tmux test needs tmux, and CI must run it")
        pytest.skip("needs tmux (make test-setup)")
    return found


def _screen(tmp_path: Path, environ: dict[str, str]) -> tuple[str, str]:
    """What a 20-row terminal shows once the fake run's cell 25 runs: (plain text, with the
    escape sequences of its colours)."""
    tmux = _tmux()
    socket = str(tmp_path / "tmux.sock")
    command = " ".join(
        [
            *(f"{k}={v}" for k, v in environ.items()),
            sys.executable,
            str(HERE / "progress_fake_run.py"),
            "30",
            "25",
        ]
    )
    base = [tmux, "-S", socket, "-f", "/dev/null"]
    subprocess.run(
        [*base, "new-session", "-d", "-x", str(COLUMNS), "-y", str(ROWS), command],
        check=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    try:
        text = ""
        for _ in range(60):  # until the running cell is drawn (python and rich start)
            time.sleep(0.25)
            text = subprocess.run(
                [*base, "capture-pane", "-p"], capture_output=True, text=True, check=True
            ).stdout
            if "p2p25" in text and "24/30" in text:
                break
        time.sleep(0.5)  # one more refresh of the live view
        text = subprocess.run(
            [*base, "capture-pane", "-p"], capture_output=True, text=True, check=True
        ).stdout
        coloured = subprocess.run(
            [*base, "capture-pane", "-p", "-e"], capture_output=True, text=True, check=True
        ).stdout
    finally:
        subprocess.run([*base, "kill-server"], check=False)
    return text, coloured


def test_thirty_cells_on_twenty_rows_keep_the_running_cell_and_say_where_the_run_is(
    tmp_path: Path,
) -> None:
    text, coloured = _screen(tmp_path, {"PYTHONPATH": str(HERE.parents[1])})
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) <= ROWS, text
    assert "..." not in text, text  # rich's crop
    overall = next(line for line in lines if "cells" in line)
    # cells done of the plan's, repetitions done (24 cells of 3 before cell 25's first), time left
    assert "cells 24/30" in overall and "72 repetitions done" in overall, overall
    assert "~36 s left" in overall, overall
    running = [line for line in lines if "p2p25" in line]
    assert len(running) == 1 and "write, repetition 1/3" in running[0], text
    assert "now 941.2 Mbit/s" in running[0], running[0]
    # the last finished cells right above it, the earlier ones counted on one line
    assert "p2p24" in text and "p2p02" not in text, text
    assert any("earlier finished" in line and "failed" in line for line in lines), text
    # colours: ok green (32), failed red (31), a warning yellow (33)
    ok = next(line for line in coloured.splitlines() if "p2p22" in line)
    failed = next(line for line in coloured.splitlines() if "p2p24" in line)
    warned = next(line for line in coloured.splitlines() if "p2p20" in line)
    assert "\x1b[32m" in ok and "\x1b[31m" in failed and "\x1b[33m" in warned, coloured


def test_no_color_keeps_the_live_view_plain(tmp_path: Path) -> None:
    text, coloured = _screen(tmp_path, {"PYTHONPATH": str(HERE.parents[1]), "NO_COLOR": "1"})
    assert "p2p25" in text and "cells 24/30" in text, text
    for code in ("\x1b[31m", "\x1b[32m", "\x1b[33m"):
        assert code not in coloured, coloured
