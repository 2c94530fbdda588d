"""The disk-profile tests' section of report.md (``section.md.j2`` beside it): run.json alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nasplan.measure.kind import Record


def view(tests: Sequence[Record]) -> dict[str, Any]:
    """What ``section.md.j2`` shows: the tests, as run.json has them."""
    return {"tests": list(tests)}
