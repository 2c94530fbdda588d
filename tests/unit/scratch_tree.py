"""A scratch copy of the checkout in which a recipe of docs/architecture.md is followed, step by
step, and on which the suite's guards then run: a recipe is true when doing exactly what it says
touches exactly the files it names and leaves every guard green.

The API a recipe test uses (``tests/unit/recipes/``)::

    tree = ScratchTree.copy(tmp_path)       # what git tracks or would add; of tests/ no test
                                            # module but the guards
    recipe = Recipe.read("Add a transfer method", "ftp")   # the steps, NAME -> ftp
    tree.write("nasplan/measure/methods/ftp.py", text)     # a step's new file
    tree.insert_before("nasplan/...", anchor, text)         # a line into a registry
    tree.replace("nasplan/...", old, new)                   # one exact change
    tree.edit_json("nasplan/schemas/plan.schema.json", change)  # change(document) in place
    tree.regenerate_references()            # scripts/gen-reference.py, as the recipe says
    recipe.assert_touched(tree.changed(), applied={"nasplan/facts/gather.py"})  # those, no more
    tree.assert_guards_pass(extra=[...])    # GUARDS in a fresh pytest, the tree's nasplan first
    tree.python(script)                     # a script's stdout, importing the tree's nasplan
    tree.cli("apply", "plan.yaml")          # nasplan itself, run from the tree

``Recipe.files``: the ``nasplan/...`` paths of its steps that always apply; ``Recipe.only_when``
those of its *Only when* steps (a test names the ones its example applied); ``other_files``:
the paths outside the package (``docs/...``, ``tests/...``) its steps name. ``assert_touched``
holds the tree's changes to exactly those. ``run_guards(extra)`` runs the tests a recipe wrote
too (its ``tests/unit/...`` files) beside the guards, and returns the finished process (a test
that leaves a step out expects its guard to fail: ``run_guards(guards=[one])``).
``GUARDS``: the tests that hold the whole tree together (every module documented, the floors,
the registries against the schemas, the generated reference pages, the docs' links); a recipe
that leaves one red is not followed (or not true).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

# The tests that guard the tree as a whole, not one module's behaviour.
GUARDS = (
    "tests/unit/test_architecture.py",
    "tests/unit/test_docs_reference.py",
    "tests/unit/test_start_up_imports.py",
    "tests/unit/recipes/test_registries.py",
)
# Not files of the tree (``changed`` reads the scratch tree, which has no git to ask).
_SKIPPED_DIRS = {
    ".git",
    ".venv",
    "__pycache__",
    ".mypy_cache",
    ".ruff_cache",
    ".hypothesis",
    "build",
}


@dataclass(frozen=True)
class Recipe:
    """One ``## heading`` of docs/architecture.md: its numbered steps with ``NAME`` filled in."""

    heading: str
    steps: tuple[str, ...]

    @classmethod
    def read(cls, heading: str, name: str, doc: Path = DOC, **words: str) -> Recipe:
        """``## heading``'s steps with ``NAME`` as ``name`` (and ``TOOL="curl"``: each such
        word of ``words`` as its value)."""
        text = doc.read_text(encoding="utf-8")
        assert f"\n## {heading}\n" in text, f"docs/architecture.md has no ## {heading}"
        section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
        steps = re.split(r"^\d+\. ", section, flags=re.MULTILINE)[1:]
        for word, value in {"NAME": name, **words}.items():
            steps = [step.replace(word, value) for step in steps]
        return cls(heading, tuple(steps))

    def _paths(self, always: bool) -> set[str]:
        return {
            path
            for step in self.steps
            if step.startswith("*Only when*") != always
            for path in re.findall(r"`((?:nasplan|docs|tests)/[^`*]+)`", step)
        }

    @property
    def files(self) -> set[str]:
        """The package files its steps that always apply name."""
        return {p for p in self._paths(True) if p.startswith("nasplan/")}

    @property
    def only_when(self) -> set[str]:
        """The files its *Only when* steps name."""
        return self._paths(False)

    @property
    def other_files(self) -> set[str]:
        """The files outside the package (``docs/``, ``tests/``) its always-steps name; a name
        ending in ``/`` is a directory a new file goes into."""
        return {p for p in self._paths(True) if not p.startswith("nasplan/")}

    def assert_touched(self, changed: set[str], applied: Iterable[str] = ()) -> None:
        """``changed`` is what the steps name: those that always apply, and the package files
        ``applied`` of its *Only when* steps (each must be one of them); no file more, none
        less, and a new file in each directory named."""
        applied = set(applied)
        assert applied <= self.only_when, f"not in an *Only when* step: {applied - self.only_when}"
        expected = self.files | self.other_files | applied
        folders = {name for name in expected if name.endswith("/")}
        files = expected - folders
        unnamed = {c for c in changed if c not in files and not c.startswith(tuple(folders))}
        untouched = {f for f in files if f not in changed}
        untouched |= {d for d in folders if not any(c.startswith(d) for c in changed)}
        assert not unnamed, f"{self.heading}: touched, though no step names them: {unnamed}"
        assert not untouched, f"{self.heading}: named by a step, not touched: {untouched}"


class ScratchTree:
    """A copy of the checkout under ``root``; ``changed()`` against the copy as it was made."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._before = self._digests()

    @classmethod
    def copy(cls, tmp_path: Path, guards: Iterable[str] = GUARDS) -> ScratchTree:
        """The checkout (the working tree, uncommitted edits too) under ``tmp_path/tree``: the
        files git tracks or would add, and of ``tests/`` every file but the test modules not in
        ``guards`` (symbolic links stay links)."""
        root = tmp_path / "tree"
        kept = set(guards)
        for relative in _checkout_files():
            source = ROOT / relative
            if _is_test_module(relative) and relative not in kept:
                continue
            target = root / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                target.symlink_to(os.readlink(source))
            else:
                shutil.copy2(source, target)
        return cls(root)

    # --- the steps --------------------------------------------------------------------------

    def path(self, relative: str) -> Path:
        return self.root / relative

    def read(self, relative: str) -> str:
        return self.path(relative).read_text(encoding="utf-8")

    def write(self, relative: str, text: str) -> None:
        """A new file (or a whole new text), dedented."""
        target = self.path(relative)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")

    def replace(self, relative: str, old: str, new: str) -> None:
        """``old`` (found exactly once) becomes ``new``."""
        source = self.read(relative)
        assert source.count(old) == 1, f"{relative}: {old!r} found {source.count(old)} times"
        self.path(relative).write_text(source.replace(old, new), encoding="utf-8")

    def insert_before(self, relative: str, anchor: str, text: str) -> None:
        self.replace(relative, anchor, text + anchor)

    def insert_after(self, relative: str, anchor: str, text: str) -> None:
        self.replace(relative, anchor, anchor + text)

    def edit_json(self, relative: str, change: Callable[[Any], None]) -> None:
        """``change(document)`` in place, written back as the schemas are (indent 2)."""
        document = json.loads(self.read(relative))
        change(document)
        self.path(relative).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")

    def regenerate_references(self) -> None:
        """docs/plan-reference.md and docs/inventory-reference.md from the tree's schemas."""
        self._run([sys.executable, "scripts/gen-reference.py"], timeout_s=60)

    # --- the checks -------------------------------------------------------------------------

    def changed(self) -> set[str]:
        """The files added, removed or changed since the copy was made."""
        after = self._digests()
        names = self._before.keys() | after.keys()
        return {name for name in names if self._before.get(name) != after.get(name)}

    def run_guards(
        self, extra: Iterable[str] = (), guards: Iterable[str] = GUARDS
    ) -> subprocess.CompletedProcess[str]:
        """The guard tests and ``extra`` (tests the recipe wrote) in a fresh pytest in the tree,
        its nasplan first on sys.path."""
        tests = [*guards, *extra]
        argv = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests]
        return self._run(argv, timeout_s=600, check=False)

    def assert_guards_pass(self, extra: Iterable[str] = ()) -> None:
        done = self.run_guards(extra)
        said = done.stdout[-6000:] + done.stderr[-2000:]
        assert done.returncode == 0, f"a guard failed in the scratch tree:\n{said}"

    def python(self, script: str) -> str:
        """``script`` (dedented) in a fresh interpreter in the tree; its stdout."""
        code = textwrap.dedent(script)
        check = "import nasplan, pathlib\nassert pathlib.Path(nasplan.__file__).parent == "
        check += "pathlib.Path('nasplan').resolve(), nasplan.__file__\n"
        return self._run([sys.executable, "-c", check + code], timeout_s=120).stdout

    def cli(self, *args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
        """``nasplan ARGS`` run from the tree, its nasplan; the finished process."""
        return self._run([sys.executable, "-m", "nasplan", *args], timeout_s, check=False)

    def _run(
        self, argv: list[str], timeout_s: float, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "PYTHONPATH": str(self.root),
            "XDG_CACHE_HOME": str(self.root.parent / "cache"),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        done = subprocess.run(
            argv,
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            check=False,
        )
        if check:
            assert done.returncode == 0, f"{argv[1:]}: {done.stdout[-3000:]}{done.stderr[-3000:]}"
        return done

    def _digests(self) -> dict[str, str]:
        return {
            path.relative_to(self.root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in _files(self.root)
            if not path.is_symlink()
        }


def _checkout_files() -> list[str]:
    """The checkout's files as git sees them: tracked, and new ones it does not ignore (no
    build output, no runs, no caches); a file deleted but not yet committed left out. Without
    git (an unpacked source archive): every file but caches."""
    argv = ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"]
    try:
        listed = subprocess.run(argv, capture_output=True, check=True).stdout.decode()
    except (OSError, subprocess.CalledProcessError):
        return [path.relative_to(ROOT).as_posix() for path in _files(ROOT)]
    names = sorted({name for name in listed.split("\0") if name})
    return [name for name in names if os.path.lexists(ROOT / name)]


def _is_test_module(relative: str) -> bool:
    name = relative.rsplit("/", 1)[-1]
    return relative.startswith("tests/") and name.startswith("test_") and name.endswith(".py")


def _files(root: Path) -> list[Path]:
    """Every file under ``root`` but caches, links included, not followed."""
    found = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS and not d.endswith(".egg-info"))
        here = Path(directory)
        found += [here / d for d in dirs if (here / d).is_symlink()]
        found += [here / f for f in sorted(files) if not f.endswith(".pyc")]
    return found
