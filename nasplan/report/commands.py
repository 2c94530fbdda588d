"""The report's *Commands* section: each test's commands as its hosts ran them (run.json's
``repetitions[].commands``), whole and shell-quoted, the repetitions that ran the same ones
together; a pure function of run.json."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.measure.commands import shown


def _numbers(indices: Sequence[int]) -> str:
    """``repetition 3``, ``repetitions 1–5``, ``repetitions 1, 3``."""
    if len(indices) == 1:
        return f"repetition {indices[0]}"
    if list(indices) == list(range(indices[0], indices[-1] + 1)):
        return f"repetitions {indices[0]}–{indices[-1]}"
    return "repetitions " + ", ".join(str(i) for i in indices)


def test_commands(test: Mapping[str, Any]) -> list[tuple[str, list[str]]]:
    """``[(what, lines)]``: each distinct list of commands of a test's repetitions, with the
    repetitions (and direction) that ran it: ``("write, repetitions 1–5", ["pc: smbclient
    ..."])``; [] when none was kept (a run from before they were)."""
    groups: dict[tuple[str | None, tuple[str, ...]], list[int]] = {}
    for rep in test.get("repetitions") or []:
        kept = rep.get("commands") or []
        if not kept:
            continue
        lines = tuple(shown(c) for c in kept)
        groups.setdefault((rep.get("direction"), lines), []).append(int(rep.get("index") or 0))
    return [
        (", ".join(p for p in (direction, _numbers(sorted(indices))) if p), list(lines))
        for (direction, lines), indices in groups.items()
    ]


def views(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{"id", "groups": [(what, lines)]}]`` for each test that kept its commands."""
    found = []
    for test in run.get("tests") or []:
        groups = test_commands(test)
        if groups:
            found.append({"id": test["id"], "groups": groups})
    return found
