"""The simulated lab: hosts as network namespaces with a real sshd, joined by tc-shaped veths.

Public API: ``up``, ``down``, ``status``, ``reshape``, ``LabState``, ``load_lab``.
"""

from __future__ import annotations

from nasplan.lab.lifecycle import LabStatus, down, reshape, status, up
from nasplan.lab.model import Lab, load_lab
from nasplan.lab.state import HostState, LabState, LinkState

__all__ = [
    "HostState",
    "Lab",
    "LabState",
    "LabStatus",
    "LinkState",
    "down",
    "load_lab",
    "reshape",
    "status",
    "up",
]
