"""The lab's own files told apart without importing the lab: a lab file, and an inventory
``nasplan lab up`` writes (``nasplan validate`` of a plain plan need not load the lab's code)."""

from __future__ import annotations

from pathlib import Path

from nasplan.errors import InputError
from nasplan.input.loader import read_yaml

STATE_PARENT = ".lab"
INVENTORY_NAME = "inventory.yaml"


def generated_by_lab(inventory_path: Path) -> bool:
    """True for ``<dir>/.lab/<lab name>/inventory.yaml``, where ``lab up`` writes inventories."""
    parts = inventory_path.parts
    return inventory_path.name == INVENTORY_NAME and len(parts) >= 3 and parts[-3] == STATE_PARENT


def is_lab_file(path: Path) -> bool:
    """True when ``path`` reads as a lab file (``lan`` and ``hosts``, no ``tests``)."""
    try:
        data = read_yaml(path).data
    except InputError:
        return False
    return isinstance(data, dict) and "lan" in data and "hosts" in data and "tests" not in data


def lab_file_for(inventory_path: Path) -> Path | None:
    """The lab file beside ``.lab/`` whose name is the state directory's; None when none is."""
    lab_dir, name = inventory_path.parent.parent.parent, inventory_path.parent.name
    for candidate in sorted(lab_dir.glob("*.yaml")):
        if is_lab_file(candidate) and read_yaml(candidate).data.get("name") == name:
            return candidate
    return None
