"""What a phase of a run works through (``Reach``): the run's host sessions, its directory, its
console, how it connects to a host, and its tasks; one value handed to each phase."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nasplan.hosts.session import HostSession
from nasplan.input.inventory import Host
from nasplan.progress import Progress
from nasplan.remote.runner import Runner
from nasplan.tasks import Tasks


@dataclass(frozen=True)
class Reach:
    """The run's sessions (filled as hosts answer), run directory, console (redacted), connector
    (traced with -v) and tasks."""

    sessions: dict[str, HostSession]
    run_dir: Path
    progress: Progress
    connector: Callable[[Host], Runner]
    tasks: Tasks
