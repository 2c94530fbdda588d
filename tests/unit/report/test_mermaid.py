"""Mermaid charts in report.md: well-formed, showing the run's numbers and topology."""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.report import mermaid, render_report
from nasplan.report.render import write_report
from nasplan.results import load_run

SAMPLE = Path(__file__).resolve().parents[2] / "fixtures" / "runs" / "sample"


@pytest.fixture()
def run() -> dict[str, Any]:
    return load_run(SAMPLE)


def test_report_has_a_valid_throughput_chart_and_topology(run: dict[str, Any]) -> None:
    text = render_report(run)
    blocks = mermaid.blocks(text)
    diagrams = [mermaid.diagram(b) for b in blocks]
    assert [d.splitlines()[0] for d in diagrams] == ["flowchart LR", "xychart-beta"]
    assert all(mermaid.validate(b) == [] for b in blocks)
    # the TCP maximum grey behind, the medians blue: never mermaid's near-white default
    assert mermaid.colours(blocks[1]) == [mermaid.LIMIT_COLOUR, mermaid.DATA_COLOURS[0]]
    # the legend is a line under the chart (a title carrying it was cut at 700 px)
    assert "```\n\n*Blue: median; grey, behind: TCP maximum.*" in text
    assert 'title "Median throughput per test"' in blocks[1]
    chart = diagrams[1]
    assert 'x-axis ["lan-single", "p2p-parallel"]' in chart  # the failed test has no bar
    # the TCP maximum of each path is a bar behind its own test's, not a line between tests
    assert chart.splitlines()[4:] == ["    bar [0.96, 9.93]", "    bar [0.94, 9.39]"]
    assert "line [" not in chart
    assert 'y-axis "Gbit/s" 0 --> 10' in chart


def test_topology_shows_the_p2p_link_and_the_lan(run: dict[str, Any]) -> None:
    flowchart = mermaid.blocks(render_report(run))[0]
    assert 'h0["nas<br/>debian · 198.18.0.10"]' in flowchart
    assert 'h0 ---|"p2p: 10 Gbit/s · MTU 9000<br/>198.18.1.1 ↔ 198.18.1.2"| h1' in flowchart
    assert 'n0(["lan · 198.18.0.0/24 · 1 Gbit/s"])' in flowchart


def test_quotes_in_names_are_escaped_and_still_valid(run: dict[str, Any]) -> None:
    odd = copy.deepcopy(run)
    odd["hosts"]['my "nas"'] = odd["hosts"].pop("nas")
    odd["tests"][0]["id"] = 'lan "single"'
    blocks = mermaid.blocks(render_report(odd))
    assert all(mermaid.validate(b) == [] for b in blocks), blocks
    assert "my #quot;nas#quot;" in blocks[0]
    assert "\"lan 'single'\"" in blocks[1]


def test_validator_rejects_what_mermaid_would_not_draw() -> None:
    chart = "\n".join(
        [
            "xychart-beta",
            'title "t"',
            'x-axis ["a", "b"]',
            'y-axis "Gbit/s" 0 --> 10',
            "bar [1, 2, 3]",
            "line [1, 20]",
        ]
    )
    errors = mermaid.validate(chart)
    assert "bar: 3 values for 2 categories" in errors
    assert "line: 20.0 outside the y-axis 0.0..10.0" in errors
    flow = 'flowchart LR\n    a["x"]\n    end["y"]\n    a ---|"l"| b\n    a ---|"bad " quote"| a'
    errors = mermaid.validate(flow)
    assert any("'end' is a mermaid keyword" in e for e in errors)
    assert any("undefined node b" in e for e in errors)
    assert any("not in the emitted flowchart subset" in e for e in errors)
    assert mermaid.validate("pie\n") == ["line 1: unknown diagram type 'pie'"]


def test_axis_tops_are_round_numbers() -> None:
    chart = mermaid.quantity_chart("t", "bits", ["a"], [956e6])
    assert chart is not None and 'y-axis "Mbit/s" 0 --> 1000' in chart
    assert mermaid.quantity_chart("t", "bits", ["a"], [None]) is None


def test_report_charts_without_matplotlib_say_how_to_get_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(SAMPLE, tmp_path / "run")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import fails as if not installed
    with pytest.raises(InputError, match="--charts needs matplotlib: install it") as info:
        write_report(tmp_path / "run", charts="png")
    assert not (tmp_path / "run" / "charts").exists()
    # nasplan runs in a venv here: a system package would not be seen, pip into it would
    assert sys.prefix != sys.base_prefix
    assert f"{sys.executable} -m pip install matplotlib" in str(info.value)
    assert "apt install" not in str(info.value)


def test_a_matplotlib_that_does_not_load_is_not_called_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nasplan.report import charts

    def old_matplotlib(name: str) -> Any:
        raise ImportError("numpy.core.multiarray failed to import")

    shutil.copytree(SAMPLE, tmp_path / "run")
    monkeypatch.setattr(charts, "_import", old_matplotlib)
    with pytest.raises(InputError) as info:
        write_report(tmp_path / "run", charts="png")
    text = str(info.value)
    assert "matplotlib is installed but does not load (numpy.core.multiarray" in text
    assert "another numpy" in text and "pip install --upgrade matplotlib" in text
    assert "needs matplotlib: install" not in text


def test_report_references_chart_files_when_given(run: dict[str, Any]) -> None:
    report = render_report(run, ["charts/throughput.png"])
    assert "![throughput](charts/throughput.png)" in report
    assert "charts/" not in render_report(run)


@pytest.mark.parametrize("chart_format", ["png", "svg"])
def test_report_charts_drawn_with_matplotlib(tmp_path: Path, chart_format: str) -> None:
    shutil.copytree(SAMPLE, tmp_path / "run")
    report = write_report(tmp_path / "run", charts=chart_format).read_text()
    chart = tmp_path / "run" / "charts" / f"throughput.{chart_format}"
    head = chart.read_bytes()[:200]
    assert (
        head.startswith(b"\x89PNG")
        if chart_format == "png"
        else b"<svg" in head or b"<?xml" in head
    )
    assert f"](charts/throughput.{chart_format})" in report


def test_a_title_too_wide_for_the_chart_is_cut_at_a_comma_and_said_whole_in_the_caption() -> None:
    """Chromium cut a 66-character title at 700 px: the chart shows the part that fits, the
    caption under it (which no width cuts) the whole title."""
    title = "links[link=p2p25,volume=hdd]: memory available on nas, 2 s averages"
    chart = mermaid.steps_chart(title, "s", [1.0, None, 2.0], "GiB", 2.0, caption="Blue bars: nas.")
    assert chart is not None
    assert 'title "links[link=p2p25,volume=hdd]: memory available on nas"' in chart
    assert chart.endswith(f"*{title}. Blue bars: nas.*")
    short = mermaid.steps_chart("smb: rate, per second", "s", [1.0], "MB/s", 1.0, caption="Blue.")
    assert short is not None and 'title "smb: rate, per second"' in short
    assert short.endswith("*Blue.*")
    no_comma = "x" * 70
    chart = mermaid.quantity_chart(no_comma, "bytes", ["a"], [1.0])
    assert chart is not None
    assert f'title "{"x" * 59}…"' in chart and chart.endswith(f"*{no_comma}.*")
