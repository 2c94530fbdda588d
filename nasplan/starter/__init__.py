"""``nasplan init``: a starter inventory, plan and simulated lab, written into a directory.

The files are the package's own (``nasplan/starter/*.yaml``), so that a user who installed
nasplan with pip or pipx has a plan to start from: the plan validates against the inventory as
written, and against the inventory the lab writes (tests/unit/test_starter.py), and runs in the
lab (tests/lab/test_answers_lab.py).
"""

from __future__ import annotations

import re
from importlib import resources
from pathlib import Path

from nasplan.errors import InputError
from nasplan.output import redactor_of, write_text

FILES = ("inventory.yaml", "plan.yaml", "lab.yaml")
LAB_NAME = "starter-lab"


def write(directory: Path, *, force: bool = False) -> list[Path]:
    """Write FILES into ``directory`` (made when missing); InputError, nothing written, when
    one is there already and ``force`` is not set. Their paths, in FILES' order."""
    source = resources.files("nasplan").joinpath("starter")
    files = {name: source.joinpath(name).read_text(encoding="utf-8") for name in FILES}
    return write_files(directory, files, force=force)


def next_steps(directory: Path) -> list[str]:
    """What to do with the files, as commands run from the current directory."""
    here = "" if directory.resolve() == Path.cwd().resolve() else f"{directory}/"
    lab_dir = f"{here}.lab/{LAB_NAME}"
    return [
        f"edit {here}inventory.yaml (your NAS's and PC's addresses, users, interfaces) and the "
        f"vars of {here}plan.yaml (share, disk path), then:",
        f"  nasplan validate {here}plan.yaml",
        "  export NAS_SMB_PASSWORD=...",
        f"  nasplan apply {here}plan.yaml --check",
        f"  nasplan apply {here}plan.yaml",
        "or try it first on a simulated NAS (Linux, as root; docs/lab.md):",
        f"  sudo nasplan lab up {here}lab.yaml",
        f"  export NAS_SMB_PASSWORD=$(sudo cat {lab_dir}/hosts/nas/smb/password)",
        f"  nasplan apply {here}plan.yaml -i {lab_dir}/inventory.yaml -e size=64MiB "
        "-e duration_s=2 -e repetitions=2",
        f"  sudo nasplan lab down {here}lab.yaml",
    ]


def example_names() -> list[str]:
    """The example plans shipped in the package (``nasplan/examples/``, the tree's
    ``plans/examples/``): each one with ``tests:``, by name without ``.yaml``."""
    examples = resources.files("nasplan").joinpath("examples")
    names = []
    for entry in examples.iterdir():
        if entry.name.endswith(".yaml") and "\ntests:" in entry.read_text(encoding="utf-8"):
            names.append(entry.name.removesuffix(".yaml"))
    return sorted(names)


def _lab_named(name: str) -> str | None:
    """The shipped lab file whose ``name:`` is ``name``, None when none is."""
    examples = resources.files("nasplan").joinpath("examples")
    for entry in sorted(examples.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".yaml") and f"\nname: {name}\n" in entry.read_text(
            encoding="utf-8"
        ):
            return entry.name
    return None


def example_files(name: str) -> dict[str, str]:
    """File name -> text for ``nasplan init --example NAME``: the plan, and the inventory it
    names (under ``inventory/`` beside it) or the lab file that writes its inventory."""
    if name not in example_names():
        known = ", ".join(example_names())
        raise InputError(f"--example {name}: no such example (examples: {known})")
    package = resources.files("nasplan")
    plan = package.joinpath("examples").joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    files = {f"{name}.yaml": plan}
    match = re.search(r"^inventory: (\S+)$", plan, re.MULTILINE)
    inventory = match.group(1) if match else ""
    if inventory.startswith("../../inventory/"):
        own = inventory.removeprefix("../../inventory/")
        text = package.joinpath("example_inventories").joinpath(own).read_text(encoding="utf-8")
        files[f"inventory/{own}"] = text
        files[f"{name}.yaml"] = plan.replace(
            f"inventory: {inventory}\n", f"inventory: inventory/{own}\n"
        )
    elif inventory.startswith(".lab/"):
        lab = _lab_named(inventory.split("/")[1])
        if lab is not None:
            files[lab] = package.joinpath("examples").joinpath(lab).read_text(encoding="utf-8")
    return files


def write_files(directory: Path, files: dict[str, str], *, force: bool = False) -> list[Path]:
    """Write ``files`` (name -> text) into ``directory``, as ``write`` writes the starter."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory}: not a directory")
    targets = [directory / name for name in files]
    there = [str(path) for path in targets if path.exists() or path.is_symlink()]
    if there and not force:
        raise InputError(
            f"{', '.join(there)}: already there, nothing written (another directory, or "
            "--force to overwrite)"
        )
    for target, text in zip(targets, files.values(), strict=True):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.unlink(missing_ok=True)  # a symlink is replaced, never written through
        write_text(target, text, redactor_of(()))
    return targets


def docs_files() -> dict[str, str]:
    """``nasplan init --docs``: the manual (``docs/*.md``) as shipped in the package."""
    docs = resources.files("nasplan").joinpath("docs")
    return {
        f"docs/{entry.name}": entry.read_text(encoding="utf-8")
        for entry in sorted(docs.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".md")
    }
