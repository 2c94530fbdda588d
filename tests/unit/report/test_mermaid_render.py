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
