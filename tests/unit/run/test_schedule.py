"""The order of a run's repetitions (``run.schedule``), the stop rule (``measure.adaptive``)
and a test run in parts merged (``measure.merge``), on recorded series of real runs."""

from __future__ import annotations

import copy
import dataclasses
import io
import itertools
import statistics
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nasplan.analysis import summarize
from nasplan.input.network import MtuSpec, NetworkSpec
from nasplan.input.plan import Adaptive, Order, PlanTest, Target
from nasplan.measure import kinds
from nasplan.measure.merge import done_indices, kept_part, merge
from nasplan.measure.record import skipped
from nasplan.progress import Place, PlainProgress
from nasplan.run.schedule import Cell, network_groups, slices, time_left_s

# bits/s of repetitions of real runs (docs/examples/ts253d-10g/run.json): a steady 1 GbE link
# and an SMB copy over 10 GbE whose rate swings with the NAS's cache
STEADY = [949442633, 951149515, 954878140, 953239134, 955889236]
NOISY = [2460934138, 2925954484, 1850012520, 2471640893, 3058541235, 4095154987, 4313691097]


def _test(test_id: str, repetitions: int = 3, rule: Adaptive | None = None) -> PlanTest:
    target = Target("nas", None, None)
    count = rule.max_n if rule else repetitions
    return PlanTest(test_id, test_id, "iperf3", "nas", "ws", target, count, adaptive=rule)


def _cell(test: PlanTest, previous: dict[str, Any] | None = None) -> Cell:
    return Cell(kinds.bind(test), previous)


def _record(test: PlanTest, rates: Sequence[float]) -> dict[str, Any]:
    """A part's record as the iperf3 kind leaves it: one repetition a rate."""
    reps = [
        {"index": index, "status": "ok", "error": None, "raw_file": None, "bits_per_second": rate}
        | {"started_s": 3.0 * n, "ended_s": 3.0 * n + 2.0}
        for n, (index, rate) in enumerate(zip(test.indices, rates, strict=False))
    ]
    return {
        "id": test.id,
        "kind": "iperf3",
        "name": test.id,
        "status": "ok",
        "error": None,
        "params": {"repetitions": test.repetitions},
        "path": {"theoretical_bits_per_second": None},
        "repetitions": reps,
        "summary": summarize([r["bits_per_second"] for r in reps], "bits_per_second"),
        "efficiency": None,
    }


def _run(
    cells: list[Cell], order: Order, seed: int = 7, rates: Callable[[str, int], float] | None = None
) -> list[tuple[str, int]]:
    """Every part the schedule gives, run at once: the (test id, repetition) sequence."""
    ran = []
    for step in slices(cells, order, seed):
        test = step.cell.part(step.first, step.count)
        ran += [(test.id, index) for index in test.indices]
        values = [rates(test.id, i) if rates else 1e9 for i in test.indices]
        step.cell.returned(_record(test, values), ended=True)
    return ran


def test_interleaved_rounds_run_repetition_r_of_every_test_in_turn() -> None:
    cells = [_cell(_test("a", 3)), _cell(_test("b", 2)), _cell(_test("c", 1))]

    ran = _run(cells, Order("interleaved"))

    assert ran == [("a", 1), ("b", 1), ("c", 1), ("a", 2), ("b", 2), ("a", 3)]
    assert [len(cell.parts) for cell in cells] == [3, 2, 1]


def test_sequential_runs_each_test_whole_in_one_part_as_before() -> None:
    cells = [_cell(_test("a", 3)), _cell(_test("b", 2))]
    parts: list[PlanTest] = []
    for step in slices(cells, Order("sequential"), 0):
        parts.append(step.cell.part(step.first, step.count))
        step.cell.returned(_record(parts[-1], [1e9] * step.count), ended=True)

    # the very PlanTest of the plan: the kind runs it exactly as before
    assert [p is c.test for p, c in zip(parts, cells, strict=True)] == [True, True]


def test_shuffled_rounds_are_permutations_repeatable_from_the_seed() -> None:
    def order(seed: int) -> list[tuple[str, int]]:
        cells = [_cell(_test(name, 4)) for name in "abcde"]
        return _run(cells, Order("shuffled"), seed)

    first = order(12345)
    assert first == order(12345)
    rounds = [first[i : i + 5] for i in range(0, 20, 5)]
    for number, one_round in enumerate(rounds, 1):
        assert sorted(one_round) == [(name, number) for name in "abcde"]
    assert any([t for t, _ in r] != list("abcde") for r in rounds)  # not the plan's order
    assert first != order(54321)


def test_a_steady_link_stops_at_its_third_repetition_a_noisy_copy_runs_to_max() -> None:
    rule = Adaptive(min_n=3, max_n=12, ci_halfwidth=0.02)
    series = {"steady": itertools.cycle(STEADY), "noisy": itertools.cycle(NOISY)}
    cells = [_cell(_test("steady", rule=rule)), _cell(_test("noisy", rule=rule))]

    ran = _run(cells, Order("interleaved"), rates=lambda test_id, _: next(series[test_id]))

    steady, noisy = (cell.record()["adaptive"] for cell in cells)
    assert (steady["reached"], steady["n"], steady["statistic"]) == (True, 3, "t")
    assert steady["ci_halfwidth"] is not None and steady["ci_halfwidth"] <= 0.02
    low, high = steady["interval"]["low"], steady["interval"]["high"]
    assert low < statistics.median(STEADY[:3]) < high
    assert steady["interval"]["metric"] == "bits_per_second"
    assert (noisy["reached"], noisy["n"], noisy["statistic"]) == (False, 12, "order statistics")
    assert noisy["ci_halfwidth"] > 0.02 and noisy["needed"] > 12
    # the steady cell dropped out of the rounds after its third
    assert [i for t, i in ran if t == "steady"] == [1, 2, 3]
    assert ran[-9:] == [("noisy", i) for i in range(4, 13)]
    assert cells[0].record()["params"]["repetitions"] == 3


def test_sequential_adaptive_runs_min_at_once_then_one_at_a_time() -> None:
    rule = Adaptive(min_n=4, max_n=8, ci_halfwidth=0.0035)
    cells = [_cell(_test("steady", rule=rule))]
    rates = itertools.cycle(STEADY)
    counts = []
    for step in slices(cells, Order("sequential"), 0):
        counts.append(step.count)
        test = step.cell.part(step.first, step.count)
        step.cell.returned(_record(test, [next(rates) for _ in test.indices]), ended=True)

    assert counts == [4, 1, 1]  # 4, then the 5th (±0.39 %), the 6th (±0.34 %): clear


def test_merged_parts_are_one_record_in_order_with_the_summary_of_all() -> None:
    test = _test("a", 3)
    parts = [_record(dataclasses.replace(test, first_repetition=i, repetitions=1), [r]) for i, r
             in ((1, 9e8), (2, 8e8), (3, 7e8))]  # fmt: skip
    parts[1]["repetitions"][0].update(status="failed", error="stalled")

    merged = merge([(p, 0.0) for p in parts], kinds.bind(test).summarize)

    assert [r["index"] for r in merged["repetitions"]] == [1, 2, 3]
    assert merged["summary"] == summarize([9e8, 7e8], "bits_per_second")
    assert (merged["status"], merged["error"]) == ("failed", "repetition 2: stalled")
    assert done_indices(merged, [None]) == {1, 3}
    kept = kept_part(merged)
    assert kept is not None and [r["index"] for r in kept["repetitions"]] == [1, 3]


def test_a_resumed_cell_runs_only_what_failed_or_is_missing() -> None:
    test = _test("a", 4)
    before = _record(dataclasses.replace(test, repetitions=3), [9e8, 8e8, 7e8])
    before["repetitions"][1].update(status="failed", error="stalled")
    kept_b = _record(_test("b", 1), [1e9])
    cells = [_cell(test, before), _cell(_test("b", 1), kept_b)]

    ran = _run(cells, Order("interleaved"))

    assert ran == [("a", 2), ("a", 4)]
    record = cells[0].record()
    assert [(r["index"], r["status"]) for r in record["repetitions"]] == [
        (1, "ok"),
        (2, "ok"),
        (3, "ok"),
        (4, "ok"),
    ]
    kept = cells[1].record()  # nothing to run: kept as it was, a copy of its own
    assert kept == kept_b and kept is not kept_b


def test_the_time_left_counts_each_cell_from_its_own_repetitions() -> None:
    rule = Adaptive(min_n=3, max_n=6, ci_halfwidth=0.02)
    fixed, adaptive_cell = _cell(_test("a", 4)), _cell(_test("b", rule=rule))
    fixed.taken, fixed.seconds = {1, 2}, [(10.0, 2)]
    adaptive_cell.taken, adaptive_cell.seconds = {1}, [(2.0, 1)]

    assert time_left_s([fixed, adaptive_cell]) == (2 * 5.0 + 2 * 2.0, 2 * 5.0 + 5 * 2.0)


def test_the_console_says_the_cell_the_repetitions_the_last_rate_and_the_time_left() -> None:
    out = io.StringIO()
    progress = PlainProgress(out)
    place = Place("lan[size=1G]", 2, 6, "3–15", "941.2 Mbit/s", (240.0, 540.0), noun="cell")
    progress.place(place)
    progress.test("lan[size=1G]", 4, 1, 12.0)
    progress.test("other", 1, 3, 12.0)  # a test the place is not about: as before

    assert out.getvalue().splitlines() == [
        "test lan[size=1G]: repetition 4/3–15 (cell 2 of 6, last 941.2 Mbit/s, 4–9 min left)",
        "test other: repetition 1/3 (~12 s in all)",
    ]
    assert Place("a", 1, 1, "3").text() == ""  # one test, nothing known yet: the plain line


def _mtus(*pairs: tuple[str, int]) -> NetworkSpec:
    return NetworkSpec(interfaces=tuple(MtuSpec(h, "eth1", "p2p", mtu) for h, mtu in pairs))


def test_cells_are_grouped_by_network_settings_the_nearest_group_next() -> None:
    jumbo = _mtus(("nas", 9000), ("pc", 9000))
    mixed = _mtus(("nas", 9000), ("pc", 1500))
    plain = _mtus(("nas", 1500), ("pc", 1500))
    tests = [("a", jumbo), ("b", plain), ("c", mixed), ("d", jumbo), ("e", None)]
    cells = [_cell(dataclasses.replace(_test(i), network=spec)) for i, spec in tests]

    groups = network_groups(cells, NetworkSpec())

    # no change first; then jumbo (two changes, as the others: the plan's order), the mixed
    # MTUs (one setting apart from jumbo), the plain ones (one more)
    assert [[c.test.id for c in group] for _, group in groups] == [["e"], ["a", "d"], ["c"], ["b"]]
    assert [spec for spec, _ in groups] == [NetworkSpec(), jumbo, mixed, plain]
    assert network_groups(cells[:1], jumbo) == [(jumbo, cells[:1])]  # one group: as before


def test_a_transfer_in_parts_lists_its_writes_then_its_reads_as_one_run_does() -> None:
    def part(index: int, offset_s: float) -> tuple[dict[str, Any], float]:
        reps = [
            {"index": index, "direction": d, "status": "ok", "error": None, "raw_file": None,
             "bits_per_second": 8e8, "bytes_per_second": 1e8, "started_s": 0.5, "ended_s": 1.5}
            for d in ("write", "read")
        ]  # fmt: skip
        record = _record(_test("smb", 1), [])
        record.update(kind="transfer", repetitions=reps, directions={})
        record["params"]["direction"] = "both"
        return record, offset_s

    transfer = kinds.kind("transfer").bind(_test("smb", 2))
    merged = merge([part(1, 0.0), part(2, 10.0)], transfer.summarize)

    assert [(r["direction"], r["index"], r["started_s"]) for r in merged["repetitions"]] == [
        ("write", 1, 0.5),
        ("write", 2, 10.5),
        ("read", 1, 0.5),
        ("read", 2, 10.5),
    ]
    assert done_indices(merged, ["write", "read"]) == {1, 2}
    merged["repetitions"].pop()  # read 2 never ran: repetition 2 is not done
    assert done_indices(merged, ["write", "read"]) == {1}


def _transfer_rep(index: int, direction: str, rate: float = 1e8) -> dict[str, Any]:
    return {"index": index, "direction": direction, "status": "ok", "error": None,
            "raw_file": f"raw/smb/{direction}-{index}.txt", "bytes_per_second": rate,
            "bits_per_second": rate * 8, "started_s": 1.0, "ended_s": 2.0}  # fmt: skip


@pytest.mark.parametrize("order", ["sequential", "interleaved"])
def test_a_resumed_transfer_keeps_each_finished_direction_and_measures_each_missing_one_once(
    order: str,
) -> None:
    """Killed after write 2 (and with read 3 of an earlier try failed): the resumed run keeps
    write 1, read 1, cold-read 1 and write 2 as they were, measures read 2, cold-read 2 and
    every direction of 3, none twice."""
    settings = {"method": "smb", "direction": "both", "read_cache": "both"}
    test = dataclasses.replace(_test("smb", 3), kind="transfer", settings=settings)
    before = _record(test, [])
    before.update(kind="transfer", directions={})
    before["params"].update(direction="both", read_cache="both")
    before["repetitions"] = [
        _transfer_rep(1, "write"), _transfer_rep(2, "write"), _transfer_rep(1, "read"),
        _transfer_rep(1, "cold-read"),
        {**_transfer_rep(3, "read"), "status": "failed", "error": "stalled"},
    ]  # fmt: skip
    kept = copy.deepcopy(before["repetitions"][:4])
    cell = Cell(kinds.bind(test), before)
    measured: list[tuple[int, str]] = []
    for step in slices([cell], Order(order), 7):
        part = cell.part(step.first, step.count)
        pairs = [(i, d) for d in ("write", "read", "cold-read") for i in part.indices
                 if part.wants(i, d)]  # fmt: skip
        measured += pairs
        record = copy.deepcopy(before)
        record["repetitions"] = [_transfer_rep(i, d, 2e8) for i, d in pairs]
        cell.returned(record, ended=True)

    assert sorted(measured) == [(2, "cold-read"), (2, "read"), (3, "cold-read"), (3, "read"),
                                (3, "write")]  # fmt: skip
    reps = cell.record()["repetitions"]
    assert sorted((r["index"], r["direction"]) for r in reps) == [
        (i, d) for i in (1, 2, 3) for d in ("cold-read", "read", "write")
    ]
    assert [r for r in reps if r["bytes_per_second"] == 1e8] == kept  # byte for byte
    assert cell.record()["status"] == "ok" and cell.stopped()


def test_a_lost_client_leaves_the_kept_repetitions_labelled_with_the_clients_they_measured() -> (
    None
):
    """Three clients at once: repetition 1 measured all three; the part of repetition 2 could
    not start (laptop lost). The merged record still names the three clients and the address
    repetition 1 measured with; its results row says so, not pc's alone."""
    test = dataclasses.replace(_test("net", 2), settings={"clients": ["pc", "mac", "laptop"]})
    measured = _record(dataclasses.replace(test, repetitions=1), [2.7e9])
    measured["params"].update(client="pc", clients=["pc", "mac", "laptop"], address="198.18.0.10")
    measured["repetitions"][0]["clients"] = {c: {"bits_per_second": 9e8} for c in test.clients}
    lost = skipped(dataclasses.replace(test, first_repetition=2, repetitions=1), "")
    lost.update(status="failed", error="laptop: the connection stopped answering")

    merged = merge([(measured, 0.0), (lost, 5.0)], kinds.bind(test).summarize)

    assert merged["params"]["clients"] == ["pc", "mac", "laptop"]
    assert merged["params"]["address"] == "198.18.0.10"
    assert set(merged["repetitions"][0]["clients"]) == {"pc", "mac", "laptop"}
    flow = kinds.readout(merged).flow(merged, None)
    assert flow.startswith("pc + mac + laptop → "), flow
    # a record of such a test that never ran names its clients too
    assert lost["params"]["clients"] == ["pc", "mac", "laptop"]
