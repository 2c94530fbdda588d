"""The layout as documented: every module of the package named in docs/architecture.md."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "nasplan"


def documented_paths(text: str) -> set[str]:
    """Module paths named in the doc: ``nasplan/x/y.py``, and ``a.py b.py`` after a folder."""
    named: set[str] = set()
    for cell in re.findall(r"^\| (.+?) \|", text, re.MULTILINE):
        folder = ""
        for word in re.findall(r"`([^`]+)`", cell):
            if word.startswith("nasplan/"):
                folder = word.rsplit("/", 1)[0] if word.endswith(".py") else word.rstrip("/")
                named.add(word)
            elif word.endswith(".py") and folder:
                named.add(f"{folder}/{word}")
    return named


def test_every_module_is_in_the_architecture_doc() -> None:
    named = documented_paths((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    modules = {path.relative_to(ROOT).as_posix() for path in PACKAGE.rglob("*.py")}
    missing = sorted(modules - named)
    assert not missing, f"add these modules to docs/architecture.md: {missing}"
    gone = sorted(name for name in named if name.endswith(".py") and name not in modules)
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"
