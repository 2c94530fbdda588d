"""Match tests across runs: by id (else by name), comparable only when the workload is the same."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasplan.measure import kinds

# Parameters that say where or how long a test ran, not what it asked of the path: a run on the
# new link (other target and address) or with more repetitions still answers the same question.
CONTEXT_PARAMS = frozenset(
    {
        "address",
        "bind_address",
        "client",
        # a transfer's or disk test's directions: each direction is compared on its own row
        "direction",
        "duration_s",
        "omit_s",
        "port",
        "repetitions",
        "server",
        "target",
    }
)

# Workload parameters that may differ when the runs are labelled along a dimension: the file
# size (1 GB vs 10 GB, the page-cache experiment) is what such a comparison is about.
SIZE_PARAMS = frozenset({"size", "size_bytes"})


def _across(test: Mapping[str, Any], mismatches: list[str]) -> list[str]:
    """A test's mismatches when every one is a parameter its kind compares across (iperf3's
    streams: ``Readout.across_params``), else []."""
    names = {m.partition(":")[0] for m in mismatches}
    if not mismatches or not names <= kinds.readout(test).across_params:
        return []
    return list(mismatches)


@dataclass(frozen=True)
class MatchedTest:
    """One test across runs: ``tests[i]`` is its dict in run i, or None when that run lacks it.

    ``mismatches`` name workload parameters that differ (``parallel: 1 → 2``): such a row shows
    the numbers but gives no ratio or verdict. ``differences`` name context parameters that differ;
    ``across`` the workload parameters (size) compared across a labelled dimension.
    """

    key: str
    name: str
    kind: str
    tests: list[dict[str, Any] | None]
    mismatches: list[str] = field(default_factory=list)
    differences: list[str] = field(default_factory=list)
    across: list[str] = field(default_factory=list)  # workload compared across a label dimension

    @property
    def comparable(self) -> bool:
        """True when the first run has it, another run has it, and no workload parameter differs."""
        present = [t for t in self.tests if t is not None]
        return self.tests[0] is not None and len(present) > 1 and not self.mismatches


def _shown(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def param_differences(
    tests: Sequence[Mapping[str, Any] | None], keys: frozenset[str] | None, *, within: bool
) -> list[str]:
    """``["parallel: 1 → 2"]`` for each param (and ``kind``) that differs between present tests.

    ``within=True`` looks only at ``keys``; ``within=False`` at every other parameter.
    """
    present = [t for t in tests if t is not None]
    names: set[str] = set()
    for test in present:
        names.update(test.get("params") or {})
    found = []
    if not within or keys is None:
        kinds = [_shown(t.get("kind")) for t in present]
        if len(set(kinds)) > 1:
            found.append(f"kind: {' → '.join(kinds)}")
    for name in sorted(names):
        if keys is not None and (name in keys) != within:
            continue
        values = [_shown((t.get("params") or {}).get(name)) for t in present]
        if len(set(values)) > 1:
            found.append(f"{name}: {' → '.join(values)}")
    return found


def match_tests(runs: Sequence[Mapping[str, Any]]) -> list[MatchedTest]:
    """Tests of all runs matched by id (by name when an id was renamed), in first-seen order."""
    order: list[str] = []
    names: dict[str, str] = {}
    by_key: dict[str, list[dict[str, Any] | None]] = {}
    for index, run in enumerate(runs):
        taken: set[str] = set()
        for test in run.get("tests", []):
            key = test["id"]
            if key not in by_key:
                renamed = [
                    k
                    for k in order
                    if names[k] == test.get("name") and by_key[k][index] is None and k not in taken
                ]
                key = renamed[0] if renamed and test.get("name") else key
            if key not in by_key:
                order.append(key)
                names[key] = str(test.get("name") or key)
                by_key[key] = [None] * len(runs)
            if by_key[key][index] is None:
                by_key[key][index] = test
                taken.add(key)
    matched = []
    for key in order:
        tests = by_key[key]
        first = next(t for t in tests if t is not None)
        mismatches = param_differences(tests, CONTEXT_PARAMS, within=False)
        across = _across(first, mismatches)
        matched.append(
            MatchedTest(
                key=key,
                name=names[key],
                kind=str(first.get("kind")),
                tests=tests,
                mismatches=[] if across else mismatches,
                differences=param_differences(tests, CONTEXT_PARAMS, within=True) + across,
                across=across,
            )
        )
    return matched
