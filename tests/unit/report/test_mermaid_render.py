"""Every Mermaid block of every kept run and example report, rendered by mermaid 11 in headless
Chromium (as GitHub does) in its light (default) and dark themes: no error, and each data
series' colour contrasts with the chart's background in both.

Needs Debian's ``chromium`` and the ``mermaid`` npm package under ``build/mermaid`` (``make
test-setup`` installs both: scripts/ensure-mermaid.sh); skipped, saying so, without them,
except in CI (``CI`` set), where their absence fails the test.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from nasplan.report import mermaid, render_report
from nasplan.results import load_run

ROOT = Path(__file__).resolve().parents[3]
BUNDLE = ROOT / "build" / "mermaid" / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
RUNS = ROOT / "tests" / "fixtures" / "runs"
EXAMPLES = ROOT / "docs" / "examples"
# WCAG 2.1's minimum contrast for graphical objects (1.4.11).
MIN_CONTRAST = 3.0
NAMED = {"white": "#ffffff", "black": "#000000"}

PAGE = """<html><body><pre id="out">pending</pre>
<script src="{bundle}"></script>
<script>
const charts = {charts};
(async () => {{
  const results = [];
  for (const theme of ["default", "dark"]) {{
    mermaid.initialize({{startOnLoad: false, theme}});
    for (let i = 0; i < charts.length; i++) {{
      try {{
        const {{svg}} = await mermaid.render(`c${{theme}}${{i}}`, charts[i]);
        const d = document.createElement("div");
        d.innerHTML = svg;
        const bg = d.querySelector("rect.background");
        const series = [...d.querySelectorAll("g.plot > g")].map(g => ({{
          name: g.getAttribute("class"),
          colour: g.querySelector("rect")?.getAttribute("fill")
            || g.querySelector("path")?.getAttribute("stroke")}}));
        results.push({{theme, i, background: bg && bg.getAttribute("fill"), series}});
      }} catch (e) {{ results.push({{theme, i, error: String(e)}}); }}
    }}
  }}
  document.getElementById("out").textContent = JSON.stringify(results);
}})();
</script></body></html>
"""


def _luminance(colour: str) -> float:
    text = NAMED.get(colour.lower(), colour).lstrip("#")
    if len(text) == 3:
        text = "".join(c * 2 for c in text)
    channels = [int(text[i : i + 2], 16) / 255 for i in (0, 2, 4)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG contrast ratio of two CSS colours (``#rgb``, ``#rrggbb``, white, black)."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _documents(tmp: Path) -> dict[str, str]:
    """Every kept run rendered now, and every example Markdown file as it is in docs/."""
    found = {}
    for run_dir in sorted(p.parent for p in RUNS.glob("*/run.json")):
        found[f"runs/{run_dir.name}"] = render_report(load_run(run_dir))
    for path in sorted(EXAMPLES.rglob("*.md")):
        found[str(path.relative_to(ROOT))] = path.read_text(encoding="utf-8")
    # a comparison of every kept run: each run's bars in a palette colour of its own
    from nasplan.compare import compare_runs, render

    runs = [
        load_run(p.parent) for p in sorted([*RUNS.glob("*/run.json"), *EXAMPLES.glob("*/run.json")])
    ]
    found["compare of the kept runs"] = render(
        compare_runs(runs, [f"r{i}" for i in range(len(runs))])
    )
    return found


def render_in_browser(charts: list[str], tmp: Path) -> list[dict[str, Any]]:
    """Each chart rendered in both themes: ``{"theme", "i", "background", "series"}`` or
    ``{"theme", "i", "error"}``."""
    page = tmp / "charts.html"
    page.write_text(
        PAGE.format(bundle=BUNDLE.as_uri(), charts=json.dumps(charts)), encoding="utf-8"
    )
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=30000",
         f"--user-data-dir={tmp / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, flags=re.DOTALL)
    assert found is not None and found.group(1) != "pending", dom[-2000:]
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    results: list[dict[str, Any]] = json.loads(text)
    return results


def missing_browser() -> str | None:
    """What the render test lacks (chromium, the mermaid bundle), or None."""
    if not (shutil.which("chromium") or shutil.which("chromium-browser")):
        return "chromium"
    if not BUNDLE.exists():
        return f"the mermaid bundle ({BUNDLE.relative_to(ROOT)})"
    return None


def require_browser(environ: Mapping[str, str]) -> None:
    """Skip without chromium or the bundle; in CI (``CI`` set) fail instead: ``make test``
    installs both there, and a skip would hide a capability gone missing."""
    missing = missing_browser()
    if missing is None:
        return
    why = f"needs {missing} (make test-setup: scripts/ensure-mermaid.sh)"
    if environ.get("CI"):
        pytest.fail(f"the Mermaid render test {why}, and CI must run it", pytrace=False)
    pytest.skip(why)


def test_every_chart_renders_and_its_series_read_in_light_and_dark(tmp_path: Path) -> None:
    require_browser(os.environ)
    where: list[str] = []
    charts: list[str] = []
    for name, text in _documents(tmp_path).items():
        for index, body in enumerate(mermaid.blocks(text)):
            where.append(f"{name} block {index + 1}")
            charts.append(body)
    assert len(charts) >= 10
    problems = []
    xycharts = 0
    for result in render_in_browser(charts, tmp_path):
        label = f"{where[result['i']]} ({result['theme']} theme)"
        if "error" in result:
            problems.append(f"{label}: {result['error']}")
            continue
        if not result["series"]:
            continue
        xycharts += 1
        background = result["background"]
        problems.extend(
            f"{label}: {s['name']} {s['colour']} on {background}: contrast "
            f"{contrast(s['colour'], background):.2f} < {MIN_CONTRAST}"
            for s in result["series"]
            if contrast(s["colour"], background) < MIN_CONTRAST
        )
    assert problems == []
    assert xycharts >= 10


def test_the_palette_itself_contrasts_with_both_backgrounds() -> None:
    """mermaid's light chart background is white, its dark theme's #333."""
    for colour in (*mermaid.DATA_COLOURS, mermaid.LIMIT_COLOUR):
        assert contrast(colour, "white") >= MIN_CONTRAST
        assert contrast(colour, "#333") >= MIN_CONTRAST
    # mermaid's own default first series colour is what made the charts vanish on white
    assert contrast("#ECECFF", "white") < MIN_CONTRAST


def test_without_a_browser_ci_fails_and_elsewhere_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(pytest.fail.Exception, match="needs chromium"):
        require_browser({"CI": "true"})
    with pytest.raises(pytest.skip.Exception, match="needs chromium"):
        require_browser({})
    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/chromium")
    monkeypatch.setattr(sys.modules[__name__], "BUNDLE", ROOT / "build" / "no-such-bundle.js")
    with pytest.raises(pytest.fail.Exception, match="mermaid bundle"):
        require_browser({"CI": "1"})


GEOMETRY_PAGE = """<html><body><div id="host" style="width:700px"></div><pre id="out">pending</pre>
<script src="{bundle}"></script>
<script>
const charts = {charts};
(async () => {{
  const results = [];
  const host = document.getElementById("host");
  for (const theme of ["default", "dark"]) {{
    mermaid.initialize({{startOnLoad: false, theme}});
    for (let i = 0; i < charts.length; i++) {{
      try {{
        const {{svg}} = await mermaid.render(`g${{theme}}${{i}}`, charts[i]);
        host.innerHTML = svg;
        const root = host.querySelector("svg");
        const title = root.querySelector("g.chart-title text");
        const box = title && title.getBoundingClientRect();
        const frame = root.getBoundingClientRect();
        const series = [...root.querySelectorAll("g.plot > g")].map(g => ({{
          name: g.getAttribute("class"),
          rects: [...g.querySelectorAll("rect")].map(r => ["x", "y", "width", "height"].map(
            k => parseFloat(r.getAttribute(k))))}}));
        results.push({{theme, i, width: frame.width,
          title: box && [box.left - frame.left, box.width], series}});
      }} catch (e) {{ results.push({{theme, i, error: String(e)}}); }}
    }}
  }}
  document.getElementById("out").textContent = JSON.stringify(results);
}})();
</script></body></html>
"""


def render_geometry(charts: list[str], tmp: Path) -> list[dict[str, Any]]:
    """Each xychart rendered (attached, so its boxes are measured) in both themes: its viewBox
    width, its title's ``[x, width]`` and each plot's rects ``[x, y, width, height]`` in the
    order mermaid drew them."""
    page = tmp / "geometry.html"
    page.write_text(
        GEOMETRY_PAGE.format(bundle=BUNDLE.as_uri(), charts=json.dumps(charts)), encoding="utf-8"
    )
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None
    dom = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=30000",
         f"--user-data-dir={tmp / 'profile-geometry'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180, check=True,
    ).stdout  # fmt: skip
    found = re.search(r'<pre id="out">(.*?)</pre>', dom, flags=re.DOTALL)
    assert found is not None and found.group(1) != "pending", dom[-2000:]
    text = found.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    results: list[dict[str, Any]] = json.loads(text)
    return results


def _series_values(body: str) -> list[tuple[str, list[float]]]:
    """A chart's bar and line series in the order drawn: ``(keyword, values)``."""
    return [
        (line.split(" ", 1)[0], [float(v) for v in line.split("[", 1)[1][:-1].split(", ")])
        for line in (x.strip() for x in mermaid.diagram(body).splitlines())
        if line.startswith(("bar [", "line ["))
    ]


def _overlap(a: list[float], b: list[float]) -> float:
    """The area two rects ``[x, y, width, height]`` share."""
    width = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    height = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    return max(0.0, width) * max(0.0, height)


def _covered(rect: list[float], by: list[float]) -> bool:
    return _overlap(rect, by) >= rect[2] * rect[3] - 0.5


def test_rendered_charts_draw_only_what_was_measured_and_hide_nothing(tmp_path: Path) -> None:
    """In the rendered SVG of every report's and comparison's xychart, light and dark: a title
    (the chart's only text line of its own) inside the chart's width; a value never measured is
    no bar of its own (mermaid draws a 0 as a stub from the plot's edge: only a later band of
    GAP_COLOUR may stand there, covering it); no two data series share a place (a bar drawn
    over another's hides it); and each measured value's bar is longer than a 0's stub."""
    require_browser(os.environ)
    where: list[str] = []
    charts: list[str] = []
    for name, text in _documents(tmp_path).items():
        for index, body in enumerate(mermaid.blocks(text)):
            if mermaid.diagram(body).startswith("xychart-beta"):
                where.append(f"{name} block {index + 1}")
                charts.append(body)
    assert len(charts) >= 10
    problems = []
    bands = 0
    for result in render_geometry(charts, tmp_path):
        body = charts[result["i"]]
        label = f"{where[result['i']]} ({result['theme']} theme)"
        if "error" in result:
            problems.append(f"{label}: {result['error']}")
            continue
        x, width = result["title"]
        if x < 0 or x + width > result["width"] + 0.5:
            problems.append(f"{label}: title {x:.0f}..{x + width:.0f} cut at {result['width']}")
        palette = mermaid.colours(body)
        declared = _series_values(body)
        plots = result["series"]
        assert len(plots) == len(declared), label
        kinds = [
            "band" if colour == mermaid.GAP_COLOUR else "limit" if colour == mermaid.LIMIT_COLOUR
            else "data" if keyword == "bar" else "line"
            for colour, (keyword, _) in zip(palette, declared, strict=True)
        ]  # fmt: skip
        data = [i for i, k in enumerate(kinds) if k == "data"]
        band = next((i for i, k in enumerate(kinds) if k == "band"), None)
        bands += band is not None
        for index in data:
            values = declared[index][1]
            rects = plots[index]["rects"]
            assert len(values) == len(rects), label
            for slot, rect in enumerate(rects):
                missing = band is not None and declared[band][1][slot] > 0
                if missing and (band < index or not _covered(rect, plots[band]["rects"][slot])):
                    problems.append(f"{label}: slot {slot} unmeasured, yet a bar shows")
                # a measured value has no band at all (a rect of no height is not drawn)
                if band is not None and not missing and plots[band]["rects"][slot][3] > 0:
                    problems.append(f"{label}: slot {slot} measured, yet the band shows under it")
            for other in data:
                if other > index:
                    problems.extend(
                        f"{label}: series {index} and {other} share slot {slot}"
                        for slot, (a, b) in enumerate(
                            zip(rects, plots[other]["rects"], strict=True)
                        )
                        if _overlap(a, b) > 1.0
                    )
    assert problems[:20] == []
    assert bands >= 2  # the kept timelines have seconds where nothing was measured


SHOT_PAGE = """<html><body style="margin:0"><div id="host" style="width:700px"></div>
<script src="{bundle}"></script>
<script>
mermaid.initialize({{startOnLoad: false, theme: "{theme}"}});
mermaid.render("shot", {chart}).then(r => {{ document.getElementById("host").innerHTML = r.svg; }});
</script></body></html>
"""


def screenshot(chart: str, theme: str, tmp: Path) -> Any:
    """``chart`` rendered by mermaid in ``theme``, as Chromium paints it: a Pillow RGB image."""
    image = pytest.importorskip("PIL.Image")
    page = tmp / f"shot-{theme}.html"
    page.write_text(
        SHOT_PAGE.format(bundle=BUNDLE.as_uri(), theme=theme, chart=json.dumps(chart)),
        encoding="utf-8",
    )
    png = tmp / f"shot-{theme}.png"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None
    subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=10000",
         f"--user-data-dir={tmp / 'profile-shot'}", "--window-size=720,520", "--hide-scrollbars",
         f"--screenshot={png}", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    return image.open(png).convert("RGB")


def _columns(picture: Any, colour: str) -> set[int]:
    """The x of every pixel column holding ``colour`` (within 4 per channel: no blend)."""
    want = [int(colour[i : i + 2], 16) for i in (1, 3, 5)]
    width, height = picture.size
    pixels = picture.load()
    return {
        x
        for x in range(width)
        for y in range(height)
        if all(abs(a - b) <= 4 for a, b in zip(pixels[x, y], want, strict=True))
    }


@pytest.mark.parametrize("theme", ["default", "dark"])
def test_the_nothing_measured_band_paints_nothing_under_a_measured_bar(
    tmp_path: Path, theme: str
) -> None:
    """As Chromium paints a timeline, light and dark: the band's colour stands only at the
    seconds with no data, never under a measured bar (a 0 in the band's series used to leave a
    brown strip there, and a measured stall at 0 looked like the band); a measured 0 is a
    stub in the data's colour."""
    require_browser(os.environ)
    values = [None, None, 50.0, 80.0, 90.0, 0.0, None, 70.0, 75.0, None]
    chart = mermaid.steps_chart("net: rate", "s", values, "Mbit/s", 100.0)
    assert chart is not None
    (body,) = mermaid.blocks(chart)
    picture = screenshot(body, theme, tmp_path)
    data = _columns(picture, mermaid.DATA_COLOURS[0])
    band = _columns(picture, mermaid.GAP_COLOUR)
    assert band and data  # both drawn
    assert data & band == set()  # no column holds both: no band under a measured bar
    # every measured second a bar (the stall at 0 too), every unmeasured one a band: 6 and 4
    # runs of adjacent columns
    assert (_runs(data), _runs(band)) == (6, 4)


def _runs(columns: set[int]) -> int:
    """How many runs of adjacent x a set of columns makes (one bar or band each)."""
    return sum(1 for x in columns if x - 1 not in columns)
