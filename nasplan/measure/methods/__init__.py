"""The transfer methods by the name a plan gives them (``method: smb``): the explicit registry."""

from __future__ import annotations

from nasplan.measure.methods.base import TransferMethod
from nasplan.measure.methods.copy import Copy
from nasplan.measure.methods.nfs import Nfs
from nasplan.measure.methods.rsync import Rsync
from nasplan.measure.methods.smb import Smb

# in the plan schema's order
METHODS: dict[str, TransferMethod] = {m.name: m for m in (Smb(), Rsync(), Copy(), Nfs())}


def method(name: str) -> TransferMethod:
    """The method a plan names ``name``."""
    return METHODS[name]


def label(name: str) -> str:
    """How people say a method (``SMB``); an unknown one (a later run.json) by its name."""
    found = METHODS.get(name)
    return found.label if found else name
