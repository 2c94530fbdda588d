"""docs/examples/ (linked from the README) are what nasplan draws today from their kept run.json
files: `make examples` draws them again; this test runs the same commands into a scratch copy
and fails when a committed example differs (a report or comparison change without `make
examples`)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "docs" / "examples"


def _make_examples_commands() -> list[list[str]]:
    """The nasplan commands of the Makefile's ``examples`` target, ``$(EXAMPLES)`` kept."""
    text = (ROOT / "Makefile").read_text(encoding="utf-8").replace("\\\n", " ")
    recipe = text.split("\nexamples:", 1)[1].split("\n\n", 1)[0]
    return [
        line.split("/nasplan ", 1)[1].split()
        for line in recipe.splitlines()
        if "$(BIN)/nasplan " in line
    ]


def test_the_committed_examples_are_what_make_examples_draws(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")  # the examples' PNG charts (the test extra has it)
    copy = tmp_path / "examples"
    shutil.copytree(EXAMPLES, copy)
    commands = _make_examples_commands()
    assert [c[0] for c in commands] == ["report", "report", "report", "compare"]
    written = []
    for command in commands:
        args = [a.replace("$(EXAMPLES)", str(copy)) for a in command]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
        out = args[args.index("--out") + 1] if "--out" in args else f"{args[1]}/report.md"
        written.append(Path(out))
    for path in written:
        committed = EXAMPLES / path.relative_to(copy)
        stale = path.read_text(encoding="utf-8") != committed.read_text(encoding="utf-8")
        assert not stale, f"{committed.relative_to(ROOT)} is stale: run `make examples`"
    # every example Markdown file the README's examples page links is one of them
    linked = re.findall(r"\]\(([^)]+\.md)\)", (EXAMPLES / "README.md").read_text("utf-8"))
    assert {EXAMPLES / link for link in linked} <= {EXAMPLES / p.relative_to(copy) for p in written}
