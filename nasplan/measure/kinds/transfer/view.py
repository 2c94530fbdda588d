"""The file transfers' section of report.md (``section.md.j2`` beside it), which the iSCSI kind
shares: each test's directions and repetitions, what its kinds say once there. From run.json
alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nasplan.measure import kinds
from nasplan.measure.kind import Record, Section


def view(tests: Sequence[Record]) -> dict[str, Any]:
    """What ``section.md.j2`` shows: the tests, each kind's note once (in run order), and what
    each test's first line adds after the path."""
    notes: list[str] = []
    for test in tests:
        note = kinds.readout(test).section_note
        if note and note not in notes:
            notes.append(note)
    return {
        "tests": list(tests),
        "notes": notes,
        "details": {t["id"]: kinds.readout(t).detail_text(t) for t in tests},
    }


SECTION = Section(__name__.rpartition(".")[0], view)
