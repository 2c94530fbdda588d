"""Values in a run are values, not shared objects: what carries results between the run's
phases is a frozen dataclass, what a cell logs is deeply read-only, and every record a merge or
a cell gives out shares no mutable list or dict with what it was built from."""

from __future__ import annotations

import ast
import dataclasses
import io
import typing
from pathlib import Path
from types import MappingProxyType
from typing import Any, cast

import pytest

from nasplan.input.plan import Plan, PlanTest, Target
from nasplan.measure import kinds
from nasplan.measure.kind import RunContext
from nasplan.measure.merge import kept_part, merge
from nasplan.measure.record import FrozenList, frozen, thawed
from nasplan.progress import PlainProgress
from nasplan.run import cell as cell_module
from nasplan.run import paths
from nasplan.run.cell import Cell, Entry
from nasplan.run.overlap import Overlap

PACKAGE = Path(__file__).resolve().parents[1].parent / "nasplan"

# dataclasses of nasplan/run that are an object's changing state, not a value handed on: the
# one test's cell (it owns its log and adds to it), the run's clock, a host's network changes,
# the network phase (its checks, warnings and error as its steps go), the lease keeper (when
# each host's lease was last renewed)
STATEFUL = {"Cell", "RunClock", "HostNetwork", "NetworkPhase", "LeaseKeeper"}


def _dataclasses_of_run() -> dict[str, bool]:
    """Each dataclass defined in nasplan/run -> whether it is frozen."""
    found: dict[str, bool] = {}
    for path in sorted((PACKAGE / "run").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for decorator in node.decorator_list:
                text = ast.unparse(decorator)
                if text.startswith(("dataclass", "dataclasses.dataclass")):
                    found[f"{path.name}:{node.name}"] = "frozen=True" in text
    return found


def test_every_dataclass_of_the_run_is_frozen_but_the_stateful_objects() -> None:
    found = _dataclasses_of_run()
    assert "cell.py:Returned" in found and "schedule.py:Slice" in found
    loose = sorted(name for name, frz in found.items() if not frz)
    assert sorted(name.split(":")[1] for name in loose) == sorted(STATEFUL), (
        f"frozen=True, or name it in STATEFUL with why: {loose}"
    )


def test_the_log_s_entries_hold_no_mutable_container_types() -> None:
    for entry in typing.get_args(Entry):
        assert entry.__dataclass_params__.frozen, entry
        for one in dataclasses.fields(entry):
            said = str(one.type)
            assert not said.startswith(("dict", "list", "set")), f"{entry.__name__}.{one.name}"


def _mutable(value: Any) -> list[Any]:
    """Every dict, list and set reachable in ``value`` (a record)."""
    found: list[Any] = []
    if isinstance(value, dict | list | set):
        found.append(value)
    if isinstance(value, typing.Mapping):
        for item in value.values():
            found += _mutable(item)
    elif isinstance(value, list | tuple | set):
        for item in value:
            found += _mutable(item)
    return found


def _shared(one: Any, other: Any) -> list[Any]:
    """The dicts and lists ``one`` and ``other`` both hold (by identity)."""
    ids = {id(item) for item in _mutable(other)}
    return [item for item in _mutable(one) if id(item) in ids]


def _test(repetitions: int) -> PlanTest:
    target = Target("nas", None, None)
    return PlanTest("p2p", "p2p", "iperf3", "nas", "ws", target, repetitions)


def _part(indices: list[int]) -> dict[str, Any]:
    reps = [
        {"index": i, "status": "ok", "error": None, "raw_file": None, "bits_per_second": 9e8}
        | {"started_s": 0.0, "ended_s": 2.0, "intervals": [8e8, 1e9]}
        for i in indices
    ]
    return {
        "id": "p2p",
        "kind": "iperf3",
        "name": "p2p",
        "status": "ok",
        "error": None,
        "params": {"repetitions": len(reps), "clients": ["ws"]},
        "path": {"theoretical_bits_per_second": None, "hops": [1, 2]},
        "repetitions": reps,
        "summary": {"metric": "bits_per_second"},
        "efficiency": None,
        "warnings": ["a warning"],
        "resources": {"ws": {"samples": 2, "series": {"t_s": [0.0, 1.0]}}},
        "timeline": {"throughput": [{"repetition": i, "t_s": [0.5]} for i in indices]},
    }


@pytest.mark.parametrize("offsets", [[0.0], [0.0, 10.0]], ids=["one part", "two parts"])
def test_a_merged_record_shares_no_list_or_dict_with_its_parts(offsets: list[float]) -> None:
    parts = [(_part([n + 1]), offset) for n, offset in enumerate(offsets)]
    merged = merge(parts, kinds.bind(_test(len(parts))).summarize)
    assert merged["repetitions"]
    for part, _ in parts:
        assert _shared(merged, part) == []


def test_merge_takes_frozen_parts_and_gives_plain_ones() -> None:
    parts = [(frozen(_part([1])), 0.0), (frozen(_part([2])), 10.0)]
    merged = merge(parts, kinds.bind(_test(2)).summarize)
    assert [r["started_s"] for r in merged["repetitions"]] == [0.0, 10.0]
    assert not any(isinstance(v, MappingProxyType | FrozenList) for v in _walk(merged))
    kept = kept_part(frozen(_part([1])))
    assert kept is not None and type(kept["repetitions"]) is list


def _walk(value: Any) -> list[Any]:
    found = [value]
    if isinstance(value, typing.Mapping):
        for item in value.values():
            found += _walk(item)
    elif isinstance(value, list | tuple):
        for item in value:
            found += _walk(item)
    return found


def test_frozen_and_thawed_round_trip_a_record() -> None:
    record = {**_part([1, 2]), "cell": {"mtu": (1500, 9000)}}
    kept = frozen(record)
    assert _mutable(kept) == [] and thawed(kept) == record
    assert _shared(thawed(kept), record) == []
    with pytest.raises(TypeError):
        kept["repetitions"][0]["intervals"] += [1.0]


def _values(entry: Any) -> dict[str, Any]:
    """A log entry's fields, as they are held."""
    return {one.name: getattr(entry, one.name) for one in dataclasses.fields(entry)}


def _ran(cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Cell:
    clock = iter(float(n) for n in range(100, 200))
    monkeypatch.setattr(cell_module, "time", type("T", (), {"monotonic": lambda: next(clock)}))
    cell.part(1, 2)
    handed = _part([1])
    cell.returned(handed)
    handed["repetitions"].append(_part([2])["repetitions"][0])
    cell.returned(handed, ended=True)
    cell.torn_down(cell.number, {"resources": _part([1])["resources"]}, None)
    return cell


def test_a_logged_entry_is_read_only_all_the_way_down(monkeypatch: pytest.MonkeyPatch) -> None:
    cell = _ran(Cell(kinds.bind(_test(2))), monkeypatch)
    for entry in cell.log:
        assert _mutable(tuple(_values(entry).values())) == [], entry
    with pytest.raises(TypeError):
        cell.parts[0].record["repetitions"][0]["status"] = "failed"  # type: ignore[index]
    with pytest.raises(AttributeError):
        cell.log.append(cell.log[0])  # type: ignore[attr-defined]


def test_changing_a_cell_s_record_does_not_change_its_log(monkeypatch: pytest.MonkeyPatch) -> None:
    before = _part([1])
    cell = _ran(Cell(kinds.bind(_test(3)), before), monkeypatch)
    logged = [thawed(_values(entry)) for entry in cell.log]
    record = cell.record()
    for item in _mutable(record):
        if isinstance(item, dict):
            item["changed"] = True
        else:
            item.append("changed")

    assert [thawed(_values(entry)) for entry in cell.log] == logged
    assert "changed" not in cell.record()
    assert before == _part([1])  # the resumed run's record it was given, untouched


def test_the_routes_a_phase_returns_are_read_only_and_leave_the_given_ones_as_they_were() -> None:
    given = {"ws": {"198.18.251.1": {"interface": "eth1"}}}
    found = paths.ask_routes(
        cast(Plan, None), [], {}, given, Overlap.serial(), PlainProgress(io.StringIO())
    )
    assert found == given and found is not given
    with pytest.raises(TypeError):
        found["nas"] = {}  # type: ignore[index]
    with pytest.raises(TypeError):
        found["ws"]["198.18.251.2"] = {}  # type: ignore[index]
    context = RunContext(cast(Plan, None), {}, PlainProgress(io.StringIO()), None, None)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        context.routes["ws"] = {}  # type: ignore[index]
