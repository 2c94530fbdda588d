"""What every test kind gets while a plan runs: the plan, the host sessions, where to write."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nasplan.hosts import HostSession
    from nasplan.plan import Plan
    from nasplan.progress import Progress


@dataclass
class RunContext:
    """Passed explicitly to every test kind; ``secrets`` are masked in everything written."""

    plan: Plan
    sessions: Mapping[str, HostSession]
    run_dir: Path
    progress: Progress
    secrets: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    # apply saves run.json with this record (the running test) after every repetition
    on_checkpoint: Callable[[dict[str, Any]], None] | None = None
    running: dict[str, Any] | None = None

    def checkpoint(self, record: dict[str, Any]) -> None:
        """Keep ``record`` (the test being run, its finished repetitions) safe on disk now."""
        self.running = record
        if self.on_checkpoint is not None:
            self.on_checkpoint(record)
