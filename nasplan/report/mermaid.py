"""Mermaid blocks GitHub and GitLab render: ``xychart-beta`` bar charts (per second too, where
a step without a measurement is a band of its own colour, never a bar at 0), a topology
``flowchart``.

Mermaid's xychart draws every bar from the plot's edge, not from the axis' zero, so a value
of 0 is a visible stub; bar series at one category stand at the same place (the later drawn
over the earlier); a title longer than the chart is cut. So each chart here has one data bar
series (a value a bar, nothing drawn for a value never measured), a short title, and its
legend as a Markdown line under the block (``block``'s ``caption``), which no width cuts.

Also a validator for exactly the subset emitted here (tests use it; no mermaid CLI needed).
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.quantities import BITS, QUANTITIES
from nasplan.units import decimals

FENCE = "```"
# Words mermaid's flowchart grammar reserves; a node id must not be one of them.
_RESERVED_IDS = frozenset({"end", "graph", "flowchart", "subgraph", "style", "class", "click"})
_LABEL = r'"[^"\n]*"'
_NUMBER = r"-?\d+(?:\.\d+)?"
# Series colours set in each chart (mermaid's default first series, #ECECFF, vanishes on white).
# One palette serves GitHub's light and dark themes, so each colour is a mid-tone with at least
# 3:1 contrast (WCAG's for graphics) against both the light theme's white and the dark theme's
# #333 chart background; tests/unit/report/test_mermaid_render.py checks it in a browser.
# The longest title a chart shows whole at mermaid's default 700 px (its title font takes about
# 11 px a character: 66 characters were cut in Chromium, 64 were not).
TITLE_CHARS = 60
DATA_COLOURS = ("#3b82f6", "#ea580c", "#a855f7", "#0d9488", "#65a30d")
DATA_NAMES = ("blue", "orange", "purple", "teal", "green")
LIMIT_COLOUR, LIMIT_NAME = "#888888", "grey"
# A step where nothing was measured: a full-height band of its own colour, drawn over the data
# series (whose bar there is mermaid's stub of 0), so it never reads as a stall at 0.
GAP_COLOUR, GAP_NAME = "#9b8579", "brown"
_HEX = r"#[0-9a-f]{6}"
_INIT = re.compile(
    rf'^%%\{{init: \{{"themeVariables": \{{"xyChart": \{{"plotColorPalette": '
    rf'"(?P<colours>{_HEX}(?:, {_HEX})*)"\}}\}}\}}\}}%%$'
)


def _text(value: Any) -> str:
    """Text safe inside a quoted mermaid label: double quotes become mermaid's ``#quot;``."""
    return " ".join(str(value).split()).replace('"', "#quot;")


def _category(value: Any) -> str:
    """An x-axis category: xychart has no escape for quotes, so they become apostrophes."""
    return " ".join(str(value).split()).replace('"', "'")


def _number(value: float) -> str:
    return decimals(value, 2).rstrip("0").rstrip(".") if value else "0"


def _axis_max(highest: float) -> float:
    """A round top for the y-axis above ``highest``: 9.56 -> 10, 956 -> 1000, 0 -> 1."""
    if highest <= 0:
        return 1.0
    step = 10 ** math.floor(math.log10(highest))
    for factor in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10):
        if step * factor >= highest * 1.0001:
            return float(step * factor)
    return float(step * 10)


def rate_unit(values: Sequence[float | None]) -> tuple[str, float]:
    """The unit a chart of these bit rates uses: ``("Gbit/s", 1e9)`` or ``("Mbit/s", 1e6)``."""
    return BITS.unit(values)


def palette(colours: Sequence[str]) -> str:
    """The init directive that colours a chart's series in order: ``%%{init: ...}%%``."""
    shown = ", ".join(colours)
    return f'%%{{init: {{"themeVariables": {{"xyChart": {{"plotColorPalette": "{shown}"}}}}}}}}%%'


def block(body: list[str], colours: Sequence[str] = (), caption: str | None = None) -> str:
    """A fenced ```` ```mermaid ```` block around ``body`` lines (indented by four spaces),
    led by the palette directive when ``colours`` are given (one per series, in order), and
    followed by ``caption`` (what the colours mean) as an italic line of its own."""
    head = [palette(colours)] if colours else []
    lines = [*head, body[0], *(f"    {line}" for line in body[1:])]
    fenced = "\n".join([f"{FENCE}mermaid", *lines, FENCE])
    return f"{fenced}\n\n*{caption}*" if caption else fenced


def _fit(title: str, caption: str | None) -> tuple[str, str | None]:
    """The title a chart shows, and its caption: a title longer than TITLE_CHARS is cut at its
    last ", " that leaves it short enough (else at the limit, with an ellipsis) and said whole
    at the start of the caption, which no width cuts."""
    if len(title) <= TITLE_CHARS:
        return title, caption
    cut = title.rfind(", ", 0, TITLE_CHARS + 1)
    shown = title[:cut] if cut > 0 else title[: TITLE_CHARS - 1] + "…"
    return shown, f"{title}. {caption}" if caption else f"{title}."


def quantity_chart(
    title: str,
    quantity: str,
    categories: Sequence[str],
    values: Sequence[float | None],
    limits: Sequence[float | None] | None = None,
    *,
    horizontal: bool = False,
    caption: str | None = None,
) -> str | None:
    """An ``xychart-beta`` of one quantity (``bits``, ``bytes``, ``ms``) in its unit.

    ``limits`` (a per-category ceiling such as the TCP maximum) are bars drawn first, so each
    shows behind its own category's bar (mermaid draws bar series at the same place), in grey,
    the values in blue (``caption`` should say so: ``legend``); a missing limit is 0.
    ``horizontal`` puts the categories on the vertical axis, where long labels read at any count.
    A category without a value is left out (mermaid would draw its 0 as a stub). None when
    there is nothing to draw.
    """
    kept = [i for i, v in enumerate(values) if v is not None]
    categories = [categories[i] for i in kept]
    values = [values[i] for i in kept]
    limits = [limits[i] for i in kept] if limits else None
    if not categories:
        return None
    ceiling = list(limits or [])
    if all(v is None for v in ceiling):
        ceiling = []
    unit, factor = QUANTITIES[quantity].unit([*values, *ceiling])
    bars = [(v or 0.0) / factor for v in values]
    behind = [float(v or 0.0) / factor for v in ceiling]
    top = _axis_max(max([*bars, *behind]))
    title, caption = _fit(title, caption)
    body = [
        "xychart-beta horizontal" if horizontal else "xychart-beta",
        f'title "{_category(title)}"',
        "x-axis [" + ", ".join(f'"{_category(c)}"' for c in categories) + "]",
        f'y-axis "{unit}" 0 --> {_number(top)}',
    ]
    if behind:
        body.append("bar [" + ", ".join(_number(v) for v in behind) + "]")
    body.append("bar [" + ", ".join(_number(v) for v in bars) + "]")
    colours = [LIMIT_COLOUR, DATA_COLOURS[0]] if behind else [DATA_COLOURS[0]]
    return block(body, colours, caption)


def legend(limit: str) -> str:
    """What a chart's colours mean, its caption: ``Blue: median; grey, behind: TCP maximum.``"""
    return f"{DATA_NAMES[0].capitalize()}: median; {LIMIT_NAME}, behind: {limit}."


def steps_chart(
    title: str,
    x_label: str,
    values: Sequence[float | None],
    unit: str,
    top: float,
    colour: str = DATA_COLOURS[0],
    *,
    lines: Sequence[tuple[Sequence[float], str]] = (),
    x_start: int = 0,
    caption: str | None = None,
) -> str | None:
    """An ``xychart-beta`` over a numeric x-axis ``x_start --> x_start + len - 1``, one point
    per step: ``values`` a bar each in ``colour`` (already in ``unit``); a step where nothing
    was measured (None) a full-height band in GAP_COLOUR drawn over it (mermaid draws a 0 as a
    stub: the band covers it), and no band at a measured step (its value there lies below the
    axis: a rect of negative height, which no browser draws); then ``lines`` (whole series such
    as a flat limit, each with its colour). None when nothing was measured.
    """
    if not any(v is not None for v in values):
        return None
    length = max([len(values), *(len(line) for line, _ in lines)])
    drawn = [float(v or 0.0) for v in values] + [0.0] * (length - len(values))
    flat = [[float(v) for v in line] + [0.0] * (length - len(line)) for line, _ in lines]
    highest = max(v for series in [drawn, *flat] for v in series)
    y_top = axis_max(highest, top)
    gaps = [v is None for v in values] + [True] * (length - len(values))
    title, caption = _fit(title, caption)
    body = [
        "xychart-beta",
        f'title "{_category(title)}"',
        f'x-axis "{_category(x_label)}" {x_start} --> {x_start + max(length - 1, 1)}',
        f'y-axis "{unit}" 0 --> {_number(y_top)}',
        "bar [" + ", ".join(_number(v) for v in drawn) + "]",
    ]
    colours = [colour]
    if any(gaps):
        # a measured step's band value lies below the axis: its rect's height is negative,
        # so no browser draws it (a 0 would leave a stub in the band's colour under the bar)
        band = [_number(y_top if g else -y_top) for g in gaps]
        body.append("bar [" + ", ".join(band) + "]")
        colours.append(GAP_COLOUR)
    body += ["line [" + ", ".join(_number(v) for v in series) + "]" for series in flat]
    colours += [c for _, c in lines]
    return block(body, colours, caption)


def axis_max(highest: float, at_least: float = 0.0) -> float:
    """The y-axis top a chart of values up to ``highest`` (and ``at_least``) uses."""
    return _axis_max(max(highest, at_least))


# --- topology ------------------------------------------------------------------------------


def _speed(bits_per_second: Any) -> str | None:
    if not isinstance(bits_per_second, (int, float)) or not bits_per_second:
        return None
    for factor, unit in ((10**9, "Gbit/s"), (10**6, "Mbit/s")):
        if bits_per_second >= factor:
            return f"{bits_per_second / factor:g} {unit}"
    return f"{bits_per_second:g} bit/s"


def _ipv4(addresses: Sequence[str]) -> str | None:
    return next((a for a in addresses if ":" not in a), None)


def _members(run: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Interfaces with an address, grouped by network (``198.18.0.0/24``): the inventory's
    address, else the one the NIC had (a cable the plan addressed), plus undeclared NICs the
    plan addressed."""
    networks: dict[str, list[dict[str, Any]]] = {}
    for host_name, host in sorted((run.get("hosts") or {}).items()):
        nics = {n.get("name"): n for n in (host.get("facts") or {}).get("interfaces") or []}
        entries = [
            (key, iface, nics.pop(iface.get("name"), None) or {})
            for key, iface in sorted((host.get("interfaces") or {}).items())
        ]
        entries += [
            (None, {"name": name, "role": "test"}, nic)
            for name, nic in sorted(nics.items(), key=lambda item: str(item[0]))
            if nic.get("changed_by_plan")
        ]
        for key, iface, nic in entries:
            text = iface.get("address") or _ipv4(nic.get("addresses") or [])
            try:
                address = ipaddress.ip_interface(str(text))
            except ValueError:
                continue
            networks.setdefault(str(address.network), []).append(
                {
                    "host": host_name,
                    "key": key or iface.get("name"),
                    "name": iface.get("name"),
                    "role": iface.get("role"),
                    "address": str(address.ip),
                    "speed": _speed(iface.get("speed_bits_per_second")),
                    "mtu_bytes": nic.get("mtu_bytes"),
                }
            )
    return networks


def _mtu(members: Sequence[Mapping[str, Any]]) -> str | None:
    values = sorted({m["mtu_bytes"] for m in members if m.get("mtu_bytes")})
    return f"MTU {'/'.join(str(v) for v in values)}" if values else None


def topology(run: Mapping[str, Any]) -> str | None:
    """A ``flowchart LR``: hosts, point-to-point links and LANs with speed, MTU and addresses.

    Two hosts alone on a non-LAN network are joined directly; any other network is a node
    the hosts connect to. None when the run knows no host.
    """
    hosts = sorted((run.get("hosts") or {}).items())
    if not hosts:
        return None
    ids = {name: f"h{index}" for index, (name, _) in enumerate(hosts)}
    body = ["flowchart LR"]
    for name, host in hosts:
        details = " · ".join(str(p) for p in (host.get("platform"), host.get("address")) if p)
        label = f"{_text(name)}<br/>{_text(details)}" if details else _text(name)
        body.append(f'{ids[name]}["{label}"]')
    edges = []
    for index, (network, members) in enumerate(sorted(_members(run).items())):
        speed = next((m["speed"] for m in members if m["speed"]), None)
        hosts_on = {m["host"] for m in members}
        if len(members) == 2 and len(hosts_on) == 2 and all(m["role"] != "lan" for m in members):
            a, b = members
            head = ": ".join(p for p in (a["key"] if a["key"] == b["key"] else None, speed) if p)
            facts = " · ".join(p for p in (head, _mtu(members)) if p)
            label = f"{facts}<br/>{a['address']} ↔ {b['address']}"
            edges.append(f'{ids[a["host"]]} ---|"{_text(label)}"| {ids[b["host"]]}')
            continue
        node = f"n{index}"
        keys = sorted({m["key"] for m in members})
        title = " · ".join(p for p in ("/".join(keys), network, speed) if p)
        body.append(f'{node}(["{_text(title)}"])')
        for m in members:
            label = " · ".join(p for p in (m["name"], m["address"], _mtu([m])) if p)
            edges.append(f'{ids[m["host"]]} ---|"{_text(label)}"| {node}')
    return block(body + edges)


# --- validation of the emitted subset ------------------------------------------------------

_XY_PATTERNS = {
    "title": re.compile(rf"^title {_LABEL}$"),
    "x-axis": re.compile(
        rf"^x-axis (?:\[(?P<categories>{_LABEL}(?:, {_LABEL})*)\]"
        rf"|{_LABEL} (?P<low>{_NUMBER}) --> (?P<high>{_NUMBER}))$"
    ),
    "y-axis": re.compile(rf"^y-axis {_LABEL} ({_NUMBER}) --> ({_NUMBER})$"),
    "bar": re.compile(rf"^bar \[({_NUMBER}(?:, {_NUMBER})*)\]$"),
    "line": re.compile(rf"^line \[({_NUMBER}(?:, {_NUMBER})*)\]$"),
}
_NODE = re.compile(rf"^([A-Za-z][A-Za-z0-9_]*)(?:\[({_LABEL})\]|\(\[({_LABEL})\]\))$")
_EDGE = re.compile(rf"^([A-Za-z][A-Za-z0-9_]*) ---(?:\|({_LABEL})\|)? ([A-Za-z][A-Za-z0-9_]*)$")


def blocks(markdown: str) -> list[str]:
    """The bodies of every ```` ```mermaid ```` block in ``markdown``, in order."""
    return re.findall(r"^```mermaid\n(.*?)\n```$", markdown, flags=re.DOTALL | re.MULTILINE)


def diagram(body: str) -> str:
    """A block's body without its palette directive: ``xychart-beta ...``."""
    first, _, rest = body.partition("\n")
    return rest if first.startswith("%%{") else body


def colours(body: str) -> list[str]:
    """The series colours a block's palette directive sets, in order; [] without one."""
    found = _INIT.match(body.partition("\n")[0].strip())
    return found.group("colours").split(", ") if found else []


def _validate_xychart(lines: list[str]) -> list[str]:
    errors: list[str] = []
    seen: dict[str, list[re.Match[str]]] = {}
    for number, line in enumerate(lines[1:], start=2):
        keyword = line.split(" ", 1)[0]
        pattern = _XY_PATTERNS.get(keyword)
        match = pattern.match(line) if pattern else None
        if match is None:
            errors.append(f"line {number}: not in the emitted xychart subset: {line!r}")
            continue
        seen.setdefault(keyword, []).append(match)
    for keyword in ("title", "x-axis", "y-axis"):
        if len(seen.get(keyword, [])) != 1:
            errors.append(f"expected exactly one {keyword} line")
    if not seen.get("bar") and not seen.get("line"):
        errors.append("no bar or line series")
    if errors:
        return errors
    x_axis = seen["x-axis"][0]
    categories = re.findall(_LABEL, x_axis["categories"]) if x_axis["categories"] else None
    if categories is None and not float(x_axis["low"]) < float(x_axis["high"]):
        errors.append(f"x-axis range {x_axis['low']} --> {x_axis['high']} is empty")
    low, high = float(seen["y-axis"][0].group(1)), float(seen["y-axis"][0].group(2))
    if not low < high:
        errors.append(f"y-axis range {low} --> {high} is empty")
    lengths = set()
    for keyword in ("bar", "line"):
        for match in seen.get(keyword, []):
            values = [float(v) for v in match.group(1).split(", ")]
            lengths.add(len(values))
            if categories is not None and len(values) != len(categories):
                errors.append(f"{keyword}: {len(values)} values for {len(categories)} categories")
            errors.extend(
                f"{keyword}: {v} outside the y-axis {low}..{high}"
                for v in values
                # a bar at minus the axis' top is no bar (steps_chart's band where measured)
                if not low <= v <= high and not (keyword == "bar" and v == -high)
            )
    if categories is None and len(lengths) > 1:
        errors.append(f"series of different lengths on a numeric x-axis: {sorted(lengths)}")
    return errors


def _validate_flowchart(lines: list[str]) -> list[str]:
    errors: list[str] = []
    nodes: set[str] = set()
    for number, line in enumerate(lines[1:], start=2):
        node, edge = _NODE.match(line), _EDGE.match(line)
        if node:
            name = node.group(1)
            if name in nodes:
                errors.append(f"line {number}: node {name} defined twice")
            if name.lower() in _RESERVED_IDS:
                errors.append(f"line {number}: node id {name!r} is a mermaid keyword")
            nodes.add(name)
        elif edge:
            errors.extend(
                f"line {number}: edge to undefined node {end}"
                for end in (edge.group(1), edge.group(3))
                if end not in nodes
            )
        else:
            errors.append(f"line {number}: not in the emitted flowchart subset: {line!r}")
    return errors


def validate(body: str) -> list[str]:
    """Problems of one mermaid block body against the subset this module emits; [] when fine."""
    lines = [line.strip() for line in body.splitlines() if line.strip()]
    if lines and lines[0].startswith("%%{"):
        init = _INIT.match(lines[0])
        if init is None:
            return [f"line 1: not the emitted palette directive: {lines[0]!r}"]
        lines = lines[1:]
        colours = init.group("colours").split(", ")
        series = [line for line in lines if line.startswith(("bar ", "line "))]
        if len(colours) != len(series):
            return [f"line 1: {len(colours)} colours for {len(series)} series"]
    if not lines:
        return ["empty block"]
    if lines[0] in ("xychart-beta", "xychart-beta horizontal"):
        return _validate_xychart(lines)
    if re.fullmatch(r"flowchart (LR|TB|TD|RL|BT)", lines[0]):
        return _validate_flowchart(lines)
    return [f"line 1: unknown diagram type {lines[0]!r}"]
