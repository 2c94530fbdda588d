"""report.md from run.json alone: ``render_report(run) -> str``, ``write_report(run_dir)``."""

from __future__ import annotations

from nasplan.report.render import render_report, write_report

__all__ = ["render_report", "write_report"]
