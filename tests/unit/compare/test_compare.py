"""nasplan compare: matching, ratios, verdicts, environment diff, matrices, formats, old runs."""

from __future__ import annotations

import copy
import csv
import io
import itertools
import json
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nasplan import results
from nasplan.analysis import efficiency, summarize
from nasplan.cli import main
from nasplan.compare import compare_runs, render
from nasplan.compare.matrix import build_matrix, parse_label
from nasplan.errors import InputError
from nasplan.report import mermaid
from nasplan.results import load_run, save_run
from nasplan.significance import mann_whitney_u, verdict

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "sample"


def with_values(run: dict[str, Any], test_id: str, values: list[float]) -> dict[str, Any]:
    """A copy of ``run`` whose test ``test_id`` has one ok repetition per value."""
    run = copy.deepcopy(run)
    test = next(t for t in run["tests"] if t["id"] == test_id)
    template = {**test["repetitions"][0], "status": "ok", "error": None}
    test["repetitions"] = [
        {**template, "index": i, "bits_per_second": v, "received_bits_per_second": v}
        for i, v in enumerate(values, start=1)
    ]
    test["params"]["repetitions"] = len(values)
    test["status"] = "ok"
    test["error"] = None
    test["summary"] = summarize(values)
    test["efficiency"] = efficiency(
        test["summary"]["median"], test["path"]["theoretical_bits_per_second"]
    )
    return run


def only_lan(run: dict[str, Any]) -> dict[str, Any]:
    run = copy.deepcopy(run)
    run["tests"] = [t for t in run["tests"] if t["id"] == "lan-single"]
    run["status"] = "ok"
    return run


@pytest.fixture()
def sample() -> dict[str, Any]:
    return only_lan(load_run(SAMPLE))


def row(markdown: str, first_cell: str) -> list[str]:
    for line in markdown.splitlines():
        if line.startswith(f"| {first_cell} |"):
            return [c.strip() for c in line.split("|")[1:-1]]
    raise AssertionError(f"no row {first_cell!r} in:\n{markdown}")


# --- statistics --------------------------------------------------------------------------------


def brute_force_p(first: list[float], second: list[float]) -> Fraction:
    """Two-sided permutation p of the rank sum, by listing every split (for checking the DP):
    the smaller tail doubled, capped at 1 (with ties the distribution is not symmetric)."""
    pooled = first + second
    ranks = {v: (sorted(pooled).index(v) + 1 + len(pooled) - sorted(pooled)[::-1].index(v)) / 2
             for v in pooled}  # fmt: skip
    n, total = len(first), len(pooled)
    observed = sum(ranks[v] for v in first)
    sums = [sum(ranks[pooled[i]] for i in s) for s in itertools.combinations(range(total), n)]
    low = sum(1 for s in sums if s <= observed + 1e-9)
    high = sum(1 for s in sums if s >= observed - 1e-9)
    return min(Fraction(2 * min(low, high), len(sums)), Fraction(1))


def test_mann_whitney_is_exact_for_fully_separated_samples() -> None:
    u, p_value = mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert u == 0
    assert p_value == pytest.approx(2 / 252)  # only the two extreme splits of C(10, 5)


def test_mann_whitney_matches_enumeration_with_ties() -> None:
    first = [9.1, 9.3, 9.3, 9.5, 9.6, 9.2]
    second = [9.3, 9.4, 9.6, 9.7, 9.8]
    _, p_value = mann_whitney_u(first, second)
    assert p_value == pytest.approx(float(brute_force_p(first, second)))
    assert mann_whitney_u([5.0] * 5, [5.0] * 5)[1] == 1.0


def test_verdict_with_five_repetitions_uses_mann_whitney() -> None:
    before = [940e6, 941e6, 939e6, 942e6, 940.5e6]
    after = [2.30e9, 2.31e9, 2.29e9, 2.32e9, 2.30e9]
    result = verdict(before, after)
    assert (result.verdict, result.rule) == ("better", "mann-whitney")
    assert result.p_value == pytest.approx(2 / 252)
    assert "Mann–Whitney U p = 0.00794, 5 vs 5 repetitions" in result.explanation
    assert verdict(after, before).verdict == "worse"


def test_a_significant_but_tiny_change_is_within_noise() -> None:
    before = [940e6, 940.1e6, 940.2e6, 940.3e6, 940.4e6]
    after = [950e6, 950.1e6, 950.2e6, 950.3e6, 950.4e6]  # +1 %, every value higher
    result = verdict(before, after)
    assert result.verdict == "within noise"
    assert "change below 3 %" in result.explanation


def test_three_against_three_is_told_by_a_test_fit_for_small_samples() -> None:
    # Mann–Whitney cannot reach p < 0.05 at 3 vs 3; Welch's t-test on the logarithms can, and
    # says what the data shows: 34 % lower, ranges apart, is worse, and the test is named.
    result = verdict([1.00e9, 1.05e9, 1.10e9], [0.66e9, 0.69e9, 0.72e9])
    assert (result.verdict, result.rule) == ("worse", "welch-log")
    assert result.p_value is not None and result.p_value < 0.001
    assert result.explanation.startswith("Welch's t-test on log values p = ")
    assert result.explanation.endswith(", 3 vs 3 repetitions (small samples)")
    tenfold = verdict([1.00e9, 1.02e9, 0.98e9], [10.1e9, 9.9e9, 10.0e9])
    assert tenfold.verdict == "better"
    # a 5 % change among noisy values is not significant, said with p and n, not "noise"
    noisy = verdict([1.0e9, 1.1e9, 0.9e9], [1.05e9, 1.15e9, 0.95e9])
    assert (noisy.verdict, noisy.rule) == ("not significant", "welch-log")
    assert "3 vs 3 repetitions" in noisy.explanation and "p = " in noisy.explanation
    # one value a side: nothing to test with; how many would tell
    alone = verdict([1.00e9], [0.66e9])
    assert (alone.verdict, alone.rule, alone.needed_per_side) == (
        "too few repetitions to tell", "too-few", 5
    )  # fmt: skip
    # the same value on both sides is no change at all, however few
    same = verdict([1500.0], [1500.0])
    assert same.verdict == "within noise" and "below 3 %" in same.explanation


def test_a_large_change_the_test_cannot_tell_is_not_significant_not_noise() -> None:
    # ×1.17 with p = 0.2 is no evidence either way: never "within noise" (which is under 3 %)
    result = verdict([1e9] * 5, [1.17e9, 0.9e9, 1.3e9, 1.0e9, 1.25e9])
    assert (result.verdict, result.rule) == ("not significant", "mann-whitney")
    assert result.explanation.endswith("5 vs 5 repetitions; p ≥ 0.05")


def test_times_are_better_when_lower() -> None:
    before, after = [46.3, 46.5, 46.1, 46.4, 46.2], [18.3, 18.2, 18.4, 18.1, 18.5]
    assert verdict(before, after, higher_is_better=False).verdict == "better"


# --- compare_runs ------------------------------------------------------------------------------


def test_ten_gig_run_is_better_with_the_ratio_of_the_medians(sample: dict[str, Any]) -> None:
    slow = with_values(sample, "lan-single", [953e6, 954e6, 955e6, 956e6, 957e6])
    fast = with_values(sample, "lan-single", [9.50e9, 9.54e9, 9.55e9, 9.56e9, 9.57e9])
    fast["hosts"]["nas"]["interfaces"]["lan"]["speed_bits_per_second"] = 10**10
    comparison = compare_runs([slow, fast], ["link=1G", "link=10G"])
    test = comparison["tests"][0]
    versus = test["versus_first"][1]
    assert versus["ratio"] == pytest.approx(9.55e9 / 955e6)
    assert (versus["verdict"], versus["rule"]) == ("better", "mann-whitney")
    markdown = render(comparison)
    cells = row(markdown, "lan-single")
    assert cells[1:3] == ["955.0 Mbit/s", "9.55 Gbit/s (×10.00)"]
    assert cells[4:6] == ["**better**", "Mann–Whitney U p = 0.00794, 5 vs 5 repetitions"]
    assert "Headline: lan-single is **better** in link=10G: 9.55 Gbit/s against 955.0 Mbit/s" in (
        markdown
    )
    assert row(markdown, "nas.lan: nominal speed")[1:] == ["1 Gbit/s", "10 Gbit/s"]


def test_a_regression_is_worse_and_efficiency_change_in_points(sample: dict[str, Any]) -> None:
    good = with_values(sample, "lan-single", [950e6, 951e6, 952e6, 953e6, 954e6])
    bad = with_values(sample, "lan-single", [800e6, 801e6, 802e6, 803e6, 804e6])
    markdown = render(compare_runs([good, bad], ["before", "after"]))
    cells = row(markdown, "lan-single")
    assert cells[2] == "802.0 Mbit/s (×0.84)"
    assert cells[3] == "99.5 % → 83.9 % (−15.7 pts)"
    assert cells[4] == "**worse**"
    assert cells[5].startswith("Mann–Whitney U p = 0.00794")


def test_no_change_is_within_noise_and_said_so(sample: dict[str, Any]) -> None:
    a = with_values(sample, "lan-single", [940e6, 945e6, 950e6, 946e6, 944e6])
    b = with_values(sample, "lan-single", [942e6, 947e6, 949e6, 943e6, 948e6])
    markdown = render(compare_runs([a, b]))
    assert row(markdown, "lan-single")[4] == "within noise"
    assert "Headline: **no difference**: every compared test is within noise" in markdown
    assert "Environment: nothing nasplan records changed between the runs." in markdown


def test_tests_match_by_id_or_renamed_id_and_only_with_the_same_workload(
    sample: dict[str, Any],
) -> None:
    renamed = copy.deepcopy(sample)
    renamed["tests"][0]["id"] = "lan-one-stream"  # same name, new id
    other = copy.deepcopy(sample)
    other["tests"][0]["params"]["window_bytes"] = 65536
    other["tests"][0]["params"]["duration_s"] = 30
    by_name = compare_runs([sample, renamed])["tests"]
    assert [t["id"] for t in by_name] == ["lan-single"]
    assert by_name[0]["comparable"]
    mismatch = compare_runs([sample, other])
    assert not mismatch["tests"][0]["comparable"]
    assert mismatch["tests"][0]["mismatches"] == ["window_bytes: – → 65536"]
    markdown = render(mismatch)
    assert row(markdown, "lan-single")[4:] == ["not compared", "window_bytes: – → 65536"]
    assert "- **lan-single**: ran with other settings: duration_s: 2 → 30." in markdown


def test_environment_diff_names_what_changed(sample: dict[str, Any]) -> None:
    after = copy.deepcopy(sample)
    ws = after["hosts"]["ws"]["facts"]
    ws["iperf3_version"] = "3.17"
    ws["memory_bytes"] = 16 * 2**30
    next(n for n in ws["interfaces"] if n["name"] == "eth0")["mtu_bytes"] = 9000
    after["hosts"]["nas"]["facts"]["markers"] = {
        "/etc.defaults/VERSION": 'productversion="7.2.1"\nbuildnumber="69057"\n'
    }
    comparison = compare_runs([sample, after])
    changed = {c["aspect"]: c["values"] for c in comparison["environment"]["changed"]}
    assert changed["ws: iperf3"] == ["3.16", "3.17"]
    assert changed["ws: RAM"][1] == "16.0 GiB"
    assert changed["ws eth0: MTU"] == ["1500", "9000"]
    assert changed["nas: firmware"] == ["–", "DSM 7.2.1-69057"]
    assert comparison["environment"]["unchanged_count"] > 10


def test_two_label_dimensions_make_a_matrix(sample: dict[str, Any]) -> None:
    medians = {("1G", "hdd"): 111e6, ("1G", "ssd"): 112e6, ("10G", "hdd"): 221e6,
               ("10G", "ssd"): 558e6}  # fmt: skip
    runs, labels = [], []
    for (link, disk), value in medians.items():
        runs.append(with_values(sample, "lan-single", [value * 0.99, value, value * 1.01]))
        labels.append(f"link={link},disk={disk}")
    markdown = render(compare_runs(runs, labels))
    assert "## link × disk" in markdown
    assert row(markdown, "link \\ disk") == ["link \\ disk", "hdd", "ssd"]
    assert row(markdown, "10G") == ["10G", "221.0 Mbit/s (×1.99)", "558.0 Mbit/s (×5.03)"]
    assert build_matrix([{"link": "1G"}, {"link": "10G"}]) is None  # one dimension: no matrix


def test_a_matrix_heads_each_direction_by_its_own_label() -> None:
    run = load_run(Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "mixed")
    runs = [copy.deepcopy(run) for _ in range(4)]
    labels = ["link=1G,disk=hdd", "link=1G,disk=ssd", "link=10G,disk=hdd", "link=10G,disk=ssd"]
    markdown = render(compare_runs(runs, labels))
    headings = [line for line in markdown.splitlines() if line.startswith("### smb")]
    assert headings == ["### smb (write): SMB 10G", "### smb (read): SMB 10G"]


def test_labels_must_be_one_per_run_and_well_formed(sample: dict[str, Any]) -> None:
    with pytest.raises(InputError, match="--label given 1 times for 2 runs"):
        compare_runs([sample, sample], ["link=1G"])
    with pytest.raises(InputError, match="given twice"):
        parse_label("link=1G,link=10G")
    assert parse_label("before") == {"run": "before"}


def test_without_labels_the_varying_plan_vars_name_the_runs(sample: dict[str, Any]) -> None:
    a, b = copy.deepcopy(sample), copy.deepcopy(sample)
    a["plan"]["vars"] = {"link": "1G", "duration_s": 2}
    b["plan"]["vars"] = {"link": "10G", "duration_s": 2}
    assert [r["title"] for r in compare_runs([a, b])["runs"]] == ["link=1G", "link=10G"]


def test_every_format_is_deterministic_and_csv_has_a_row_per_test_and_run(
    sample: dict[str, Any],
) -> None:
    a = with_values(sample, "lan-single", [940e6, 941e6, 942e6, 943e6, 939e6])
    b = with_values(sample, "lan-single", [2.3e9, 2.31e9, 2.32e9, 2.29e9, 2.33e9])
    for output_format in ("markdown", "json", "csv"):
        first = render(compare_runs([a, b]), output_format).encode()
        again = render(compare_runs([copy.deepcopy(a), copy.deepcopy(b)]), output_format)
        assert first == again.encode()
    rows = list(csv.DictReader(io.StringIO(render(compare_runs([a, b]), "csv"))))
    assert [(r["test_id"], r["direction"], r["run_index"]) for r in rows] == [
        ("lan-single", "forward", "0"),
        ("lan-single", "forward", "1"),
    ]
    assert float(rows[1]["ratio_to_first"]) == pytest.approx(2.31e9 / 941e6)
    assert rows[1]["verdict"] == "better"
    data = json.loads(render(compare_runs([a, b]), "json"))
    assert data["tests"][0]["versus_first"][1]["verdict"] == "better"


def test_compare_markdown_has_a_well_formed_chart(sample: dict[str, Any]) -> None:
    a = with_values(sample, "lan-single", [940e6, 941e6, 942e6])
    b = with_values(sample, "lan-single", [2.3e9, 2.31e9, 2.32e9])
    blocks = mermaid.blocks(render(compare_runs([a, b], ["2.5G", "10G"])))
    assert len(blocks) == 1
    assert mermaid.validate(blocks[0]) == []
    assert mermaid.diagram(blocks[0]).startswith("xychart-beta horizontal")
    # one series, a bar per test and run that has a median (mermaid draws a series' 0 as a
    # stub, so no run has a series of zeros where the other run's bars are)
    assert mermaid.colours(blocks[0]) == [mermaid.DATA_COLOURS[0]]
    assert 'x-axis ["lan-single · 2.5G", "lan-single · 10G"]' in blocks[0]
    assert [x.strip() for x in blocks[0].splitlines() if x.strip().startswith("bar")] == [
        "bar [0.94, 2.31]"
    ]


def test_a_test_one_run_lacks_has_no_bar_and_is_named_under_the_chart() -> None:
    a = with_values(load_run(SAMPLE), "lan-single", [940e6, 941e6, 942e6])
    b = with_values(load_run(SAMPLE), "lan-single", [2.3e9, 2.31e9, 2.32e9])
    b["tests"] = [t for t in b["tests"] if t["id"] != "p2p-parallel"]
    text = render(compare_runs([a, b], ["2.5G", "10G"]))
    (block,) = mermaid.blocks(text)
    assert "p2p-parallel · 10G" not in block
    (bars,) = [x.strip() for x in block.splitlines() if x.strip().startswith("bar")]
    assert "0" not in bars[5:-1].split(", ")
    caption = text.split(block)[1].split("\n")[3]
    assert caption.startswith("*A bar per test and run (TEST · RUN). No bar: ")
    assert "p2p-parallel · 10G (not in it)" in caption


# --- command line and old runs -----------------------------------------------------------------


def test_cli_compare_writes_the_file_in_the_format_asked(
    tmp_path: Path, sample: dict[str, Any]
) -> None:
    for name, values in (("a", [940e6, 941e6, 942e6]), ("b", [9.4e9, 9.5e9, 9.6e9])):
        (tmp_path / name).mkdir()
        save_run(tmp_path / name, with_values(sample, "lan-single", values))
    out = tmp_path / "compare.json"
    args = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json"]
    result = CliRunner().invoke(main, [*args, "--out", str(out), "--label", "1G", "--label", "10G"])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["runs"][1]["title"] == "10G"
    alone = CliRunner().invoke(main, ["compare", str(tmp_path / "a")])
    assert alone.exit_code == 2
    assert "compare needs at least two run directories" in alone.output


def test_a_version_0_run_gets_a_clear_message(tmp_path: Path, sample: dict[str, Any]) -> None:
    old = {**sample, "schema_version": 0}
    (tmp_path / "run.json").write_text(json.dumps(old))
    with pytest.raises(InputError) as error:
        load_run(tmp_path)
    assert "run.json schema_version 0 is older than this nasplan reads (only version 1)" in str(
        error.value
    )
    assert "written by nasplan 0.1.0" in str(error.value)


def test_a_version_0_run_loads_through_a_registered_migration(
    tmp_path: Path, sample: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    old = {**sample, "schema_version": 0}
    old["run_name"] = old.pop("run_id")  # what a version 0 might have called it

    def from_0(run: dict[str, Any]) -> dict[str, Any]:
        run["run_id"] = run.pop("run_name")
        return run

    monkeypatch.setitem(results.MIGRATIONS, 0, from_0)
    (tmp_path / "run.json").write_text(json.dumps(old))
    loaded = load_run(tmp_path)
    assert loaded["schema_version"] == 1
    assert loaded["run_id"] == sample["run_id"]
    assert json.loads((tmp_path / "run.json").read_text())["schema_version"] == 0  # file untouched


def test_compare_exits_by_what_it_found_and_fail_on_gates_a_change(
    sample: dict[str, Any], tmp_path: Path
) -> None:
    before = with_values(sample, "lan-single", [940e6, 941e6, 942e6, 943e6, 944e6])
    after = with_values(sample, "lan-single", [500e6, 501e6, 502e6, 503e6, 504e6])
    dirs = []
    for name, run in (("a", before), ("b", after)):
        (tmp_path / name).mkdir()
        save_run(tmp_path / name, run)
        dirs.append(str(tmp_path / name))
    cli = CliRunner()
    assert cli.invoke(main, ["compare", *dirs]).exit_code == 0
    failed = cli.invoke(main, ["compare", *dirs, "--fail-on", "worse"])
    assert failed.exit_code == 1, failed.output
    assert cli.invoke(main, ["compare", dirs[1], dirs[0], "--fail-on", "worse"]).exit_code == 0
    # nothing comparable: every test of the second run is another workload
    other = copy.deepcopy(sample)
    for test in other["tests"]:
        test["params"]["mss_bytes"] = 1000
    (tmp_path / "c").mkdir()
    save_run(tmp_path / "c", other)
    nothing = cli.invoke(main, ["compare", dirs[0], str(tmp_path / "c")])
    assert nothing.exit_code == 4, nothing.output


def test_each_run_s_bottleneck_verdict_is_in_its_transfer_cell_json_and_csv() -> None:
    """'network-bound at 1G, protocol-bound at 10G' in one table, not three reports."""
    first = load_run(Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "mixed")
    second = copy.deepcopy(first)
    second["run_id"] += "-10g"
    smb = next(t for t in second["tests"] if t["id"] == "smb")
    smb["bottleneck"]["read"]["verdict"] = "network-bound"
    del smb["bottleneck"]["write"]
    comparison = compare_runs([first, second], ["1g", "10g"])
    rows = {row["label"]: row for row in comparison["tests"]}
    read, write = rows["smb (read)"], rows["smb (write)"]
    assert [side["bottleneck"] for side in read["runs"]] == ["cpu-bound", "network-bound"]
    assert [side["bottleneck"] for side in write["runs"]] == ["cpu-bound", None]
    assert [side["bottleneck"] for side in rows["lan"]["runs"]] == [None, None]  # iperf3
    markdown = render(comparison)
    line = next(x for x in markdown.splitlines() if x.startswith("| smb (read) |"))
    cells = [c.strip() for c in line.split("|")[1:-1]]
    assert cells[1].endswith(", cpu-bound") and cells[2].endswith(", network-bound")
    assert "ends with what limited it in that run" in markdown
    assert not next(x for x in markdown.splitlines() if x.startswith("| lan |")).endswith("bound")
    table = list(csv.DictReader(io.StringIO(render(comparison, "csv"))))
    found = {(r["test_id"], r["direction"], r["run_index"]): r["bottleneck"] for r in table}
    assert found[("smb", "read", "1")] == "network-bound"
    assert found[("smb", "write", "1")] == "" and found[("lan", "forward", "0")] == ""
    assert json.loads(render(comparison, "json"))["tests"][0]["runs"][0]["bottleneck"] is None


def test_runs_of_other_plans_on_other_hosts_say_how_little_matched() -> None:
    full = load_run(SAMPLE)
    a = with_values(full, "lan-single", [940e6, 941e6, 942e6])
    b = with_values(only_lan(full), "lan-single", [4.1e9, 4.12e9, 4.14e9])
    b["plan"]["name"] = "another-nas"
    b["hosts"] = {f"other-{name}": host for name, host in b["hosts"].items()}
    comparison = compare_runs([a, b], ["old", "new"])
    matched = comparison["matched"]
    assert (matched["compared"], matched["rows"], matched["little"]) == (1, 3, True)
    assert matched["plans"] == ["another-nas", "nas-upgrade"] and matched["shared_hosts"] == []
    opening = render(comparison).split("\n\n")[1]
    assert (
        "⚠ **Little matched**: 1 of 3 test rows could be compared (the runs are of other plans "
        "(another-nas and nas-upgrade); they share no host): the verdicts below say nothing of "
        "the rest, and little of the runs as a whole." in opening
    )
    assert opening.index("Little matched") < opening.index("Headline:")
    # one plan, the same hosts, every test compared: nothing to say
    same = compare_runs([a, with_values(a, "lan-single", [950e6, 951e6, 952e6])], ["x", "y"])
    assert not same["matched"]["little"]
    assert "Little matched" not in render(same)
