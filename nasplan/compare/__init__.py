"""Compare runs: tests matched across runs, ratios, verdicts, environment diff, matrices.

Public API: ``compare_runs(runs, labels) -> dict`` and ``render(comparison, format) -> str``.
"""

from __future__ import annotations

from nasplan.compare.model import compare_runs
from nasplan.compare.render import FORMATS, render

__all__ = ["FORMATS", "compare_runs", "render"]
