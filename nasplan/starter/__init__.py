"""``nasplan init``: a starter inventory, plan and simulated lab, written into a directory.

The files are the package's own (``nasplan/starter/*.yaml``), so that a user who installed
nasplan with pip or pipx has a plan to start from: the plan validates against the inventory as
written, and against the inventory the lab writes (tests/unit/test_starter.py), and runs in the
lab (tests/lab/test_answers_lab.py).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from nasplan.errors import InputError
from nasplan.output import redactor_of, write_text

FILES = ("inventory.yaml", "plan.yaml", "lab.yaml")
LAB_NAME = "starter-lab"


def write(directory: Path, *, force: bool = False) -> list[Path]:
    """Write FILES into ``directory`` (made when missing); InputError, nothing written, when
    one is there already and ``force`` is not set. Their paths, in FILES' order."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory}: not a directory")
    targets = [directory / name for name in FILES]
    there = [str(path) for path in targets if path.exists() or path.is_symlink()]
    if there and not force:
        raise InputError(
            f"{', '.join(there)}: already there, nothing written (another directory, or "
            "--force to overwrite)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    source = resources.files("nasplan").joinpath("starter")
    for name, target in zip(FILES, targets, strict=True):
        target.unlink(missing_ok=True)  # a symlink is replaced, never written through
        write_text(target, source.joinpath(name).read_text(encoding="utf-8"), redactor_of(()))
    return targets


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
