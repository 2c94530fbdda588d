"""report.md from run.json alone: a pure function of the run, byte-identical for the same run."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence, Set
from datetime import datetime
from functools import cache
from importlib import resources
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any
from urllib.parse import quote

import jinja2

from nasplan.analysis import FRAME_OVERHEAD_BYTES, TCP_IPV4_HEADER_BYTES
from nasplan.diagnose import diagnose
from nasplan.errors import InputError
from nasplan.facts import storage, volumes
from nasplan.measure import kinds
from nasplan.measure.kind import Numbers, Section
from nasplan.output import redactor_of, secrets_from_environ, write_text
from nasplan.quantities import BITS, BYTES
from nasplan.report import commands as report_commands
from nasplan.report import headline, mermaid, pivot, timeline
from nasplan.report.in_force import network_rows, run_in_force
from nasplan.results import REPORT_FILE, counts_text, load_run
from nasplan.units import (
    counted,
    format_bits_per_second,
    format_bytes_per_second,
    format_size,
)

DASH = "–"
LOOPBACK_NICS = frozenset({"lo", "lo0"})
STATUS_MEANING = {
    "ok": "every test ran",
    "failed": "a test failed",
    "unreachable": "a host could not be used",
    "interrupted": "the run stopped before the end",
}


# --- filters: each name says the unit it prints ---------------------------------------------


def bits_per_second(value: float | None) -> str:
    """``941.5 Mbit/s`` / ``9.41 Gbit/s``; ``–`` when unknown."""
    return DASH if value is None else format_bits_per_second(value)


def nominal_speed(value: float | None) -> str:
    """A link speed as people say it, unit named: ``10 Gbit/s``, ``2.5 Gbit/s``, ``100 Mbit/s``."""
    if value is None:
        return DASH
    for factor, unit in ((10**9, "Gbit/s"), (10**6, "Mbit/s"), (10**3, "kbit/s")):
        if value >= factor:
            return f"{value / factor:g} {unit}"
    return f"{value:g} bit/s"


def speed_mbps(value: int | None) -> str:
    """A NIC's negotiated speed given in Mbit/s (ethtool's unit), e.g. 10000 -> ``10 Gbit/s``."""
    return DASH if value is None else nominal_speed(value * 10**6)


def percent(ratio: float | None, digits: int = 1) -> str:
    """A ratio as a percentage: 0.9844 -> ``98.4 %``."""
    return DASH if ratio is None else f"{ratio * 100:.{digits}f} %"


def cpu_percent(value: float | None) -> str:
    """A value that already is a percentage (iperf3 CPU use): 12.5 -> ``12.5 %``."""
    return DASH if value is None else f"{value:.1f} %"


def gibibytes(value: int | None) -> str:
    """Bytes in GiB (2^30 bytes): 8254390272 -> ``7.7 GiB``."""
    return DASH if value is None else f"{value / 2**30:.1f} GiB"


def megabytes_per_second(value: float | None) -> str:
    """A bit rate in MB/s (10^6 bytes/s): 941.5 Mbit/s -> ``117.7 MB/s``."""
    return DASH if value is None else f"{value / 8 / 10**6:.1f} MB/s"


def mebibytes_per_second(value: float | None) -> str:
    """A bit rate in MiB/s (2^20 bytes/s): 941.5 Mbit/s -> ``112.2 MiB/s``."""
    return DASH if value is None else f"{value / 8 / 2**20:.1f} MiB/s"


def bytes_rate(value: float | None) -> str:
    """A rate in bytes/s as MiB/s (2^20 bytes/s): ``131.0 MiB/s``."""
    return DASH if value is None else format_bytes_per_second(value)


def milliseconds(value: float | None) -> str:
    """``0.237 ms``."""
    return DASH if value is None else f"{value:.3f} ms"


def count(value: int | None) -> str:
    """An integer or ``–``."""
    return DASH if value is None else str(value)


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: pipes escaped, newlines folded."""
    text = DASH if value is None or value == "" else str(value)
    return " ".join(text.split()).replace("|", "\\|")


def utc(timestamp: str | None) -> str:
    """``2026-11-30T17:30:00Z`` -> ``2026-11-30 17:30:00 UTC``."""
    if not timestamp:
        return DASH
    return timestamp.replace("T", " ").removesuffix("Z") + " UTC"


def microseconds(value: float | None) -> str:
    """A latency in µs, in ms from a millisecond on: ``297 µs``, ``2.15 ms``; ``–`` for None."""
    if value is None:
        return "–"
    return f"{value / 1000:.2f} ms" if value >= 1000 else f"{value:.0f} µs"


FILTERS = {
    "value_range": lambda low, high, metric: headline.value_range(low, high, metric),
    "bits_per_second": bits_per_second,
    "nominal_speed": nominal_speed,
    "speed_mbps": speed_mbps,
    "percent": percent,
    "cpu_percent": cpu_percent,
    "gibibytes": gibibytes,
    "megabytes_per_second": megabytes_per_second,
    "mebibytes_per_second": mebibytes_per_second,
    "count": count,
    "bytes_rate": bytes_rate,
    "milliseconds": milliseconds,
    "microseconds": microseconds,
    "size": format_size,
    "cell": cell,
    "utc": utc,
    "error_of": lambda test: error_of(test),  # defined with the view, below
}


# --- the view: what the template shows, computed from the run alone --------------------------


def _duration(run: Mapping[str, Any]) -> str | None:
    """The run's time: its monotonic ``duration_s`` (a run before it: the stamps' difference)."""
    started_at, finished_at = run["started_at"], run.get("finished_at")
    if not finished_at:
        return None
    counted = run.get("duration_s")
    seconds = int(
        counted
        if isinstance(counted, (int, float))
        else (
            datetime.fromisoformat(finished_at) - datetime.fromisoformat(started_at)
        ).total_seconds()
    )
    minutes, seconds = divmod(max(seconds, 0), 60)
    return f"{minutes} min {seconds} s" if minutes else f"{seconds} s"


def _shown_file(path: str | None) -> str | None:
    """A path as given, or only its file name when absolute (this machine's layout stays out)."""
    if not path:
        return None
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute():
        return PurePosixPath(path.replace("\\", "/")).name
    return path


def _platform(host: Mapping[str, Any]) -> str:
    platform, hint = host.get("platform"), host.get("platform_hint")
    if platform is None:
        return f"unknown (inventory says {hint})" if hint and hint != "auto" else DASH
    if hint and hint not in ("auto", platform):
        return f"{platform} (inventory says {hint})"
    return str(platform)


def path_nics(run: Mapping[str, Any], host: str) -> set[str]:
    """The NICs of ``host`` a test's path went through (``path.server_interface`` when it was
    the server, ``client_interface`` when the client)."""
    used = set()
    for test in run.get("tests", []):
        params, path = test.get("params") or {}, test.get("path") or {}
        for role in ("server", "client"):
            nic = path.get(f"{role}_interface")
            if params.get(role) == host and nic:
                used.add(str(nic))
    return used


def _nics(host: Mapping[str, Any], used: Set[str] = frozenset()) -> list[dict[str, Any]]:
    """NIC rows sorted by OS name, with the inventory's name and role; declared-but-absent last.
    A loopback is left out unless the inventory declares it or a test's path ``used`` it.

    ``host`` carries the NIC facts in force during the tests (in_force.run_in_force); a NIC the
    plan changed says what it was before in ``before_text``.
    """
    declared = {i["name"]: (key, i) for key, i in sorted(host.get("interfaces", {}).items())}
    facts = host.get("facts") or {}
    rows = []
    for nic in sorted(facts.get("interfaces", []), key=lambda n: n["name"]):
        shown = nic["name"] in declared or nic["name"] in used
        if nic["name"] in LOOPBACK_NICS and not shown:
            continue
        key, iface = declared.pop(nic["name"], (None, {}))
        before = nic.get("before") if nic.get("changed_by_plan") else None
        rows.append(
            {
                "name": nic["name"],
                "role": f"{key} ({iface.get('role', 'other')})" if key else None,
                "mtu_bytes": nic.get("mtu_bytes"),
                "speed_mbps": nic.get("speed_mbps"),
                "driver": nic.get("driver"),
                "addresses": ", ".join(nic.get("addresses", [])),
                "missing": False,
                "mtu_changed": before is not None and before["mtu_bytes"] != nic.get("mtu_bytes"),
                "addresses_changed": before is not None
                and before["addresses"] != list(nic.get("addresses") or []),
            }
        )
    if facts:
        for name, (key, iface) in sorted(declared.items()):
            rows.append(
                {
                    "name": name,
                    "role": f"{key} ({iface.get('role', 'other')})",
                    "mtu_bytes": None,
                    "speed_mbps": None,
                    "driver": None,
                    "addresses": f"not found on the host (inventory: {iface.get('address')})",
                    "missing": True,
                    "mtu_changed": False,
                    "addresses_changed": False,
                }
            )
    return rows


def _host(name: str, host: Mapping[str, Any], used: Set[str] = frozenset()) -> dict[str, Any]:
    facts = host.get("facts") or {}
    os_text = (
        host.get("os")
        or facts.get("os_pretty")
        or " ".join(str(p) for p in (facts.get("os_id"), facts.get("os_version")) if p)
    )
    cpu_model, cores = facts.get("cpu_model"), facts.get("cpu_cores")
    cpu = ", ".join(p for p in (cpu_model, f"{cores} cores" if cores else None) if p)
    kernel = " ".join(str(p) for p in (facts.get("kernel"), facts.get("arch")) if p)
    return {
        "name": name,
        "address": host.get("address"),
        "platform": _platform(host),
        "reachable": bool(host.get("reachable")),
        "error": host.get("error"),
        "os": os_text or None,
        "kernel": kernel or None,
        "cpu": cpu or None,
        "memory_bytes": facts.get("memory_bytes"),
        "iperf3_version": facts.get("iperf3_version"),
        "nics": _nics(host, used),
        "storage": {**storage.aspects(facts.get("storage") or {}), **volumes.aspects(host)},
        "actions": list(host.get("actions", [])),
    }


def heading(test: Mapping[str, Any]) -> str:
    """``lan: LAN, one stream``; a test without a name of its own only by its id."""
    name = test.get("name")
    return f"{test['id']}: {name}" if name and name != test["id"] else str(test["id"])


def error_of(test: Mapping[str, Any]) -> str:
    """Why a test did not succeed, to follow its status: ``the run was stopped after 1 of 3
    repetitions`` (an error that begins with the status, ``interrupted: ...``, without it, so
    that the report says ``interrupted`` once)."""
    error = str(test.get("error") or "no error recorded")
    return error.removeprefix(f"{test.get('status')}: ")


def run_warnings(run: Mapping[str, Any]) -> list[str]:
    """Every warning of the run, each once: its own (its tests' among them, each after the
    test's id), then any its tests carry or their numbers say (a UDP test's loss, judged by its
    kind as apply judges it) that a run made before lacks."""
    found = [str(w) for w in run.get("warnings") or []]
    for test in run.get("tests") or []:
        found += [f"{test['id']}: {w}" for w in test.get("warnings") or []]
        found += [f"{test['id']}: {c.text}" for c in kinds.readout(test).caveats(test)]
    return list(dict.fromkeys(found))


def _failure(test: Mapping[str, Any]) -> dict[str, Any]:
    """A test that did not succeed, with a link to the raw output of its first failed
    repetition: the tool's own words, when nasplan's summary of them is not enough."""
    raw = next(
        (
            r["raw_file"]
            for r in test.get("repetitions") or []
            if r.get("status") != "ok" and r.get("raw_file")
        ),
        None,
    )
    return {**test, "heading": heading(test), "raw_link": quote(raw) if raw else None}


def join_and(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def _framings(tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each framing the run used, with a worked example per (speed, MTU)."""
    examples: dict[str, dict[tuple[int, int], float | None]] = {}
    for test in tests:
        path = test["path"]
        if path.get("framing") in FRAME_OVERHEAD_BYTES:
            found = examples.setdefault(path["framing"], {})
            speed, mtu = path.get("speed_bits_per_second"), path.get("mtu_bytes")
            if speed and mtu:
                found[(speed, mtu)] = path.get("theoretical_bits_per_second")
    return [
        {
            "name": name,
            "examples": [
                {
                    "speed_bits_per_second": speed,
                    "mtu_bytes": mtu,
                    "payload_bytes": mtu - TCP_IPV4_HEADER_BYTES,
                    "wire_bytes": mtu + FRAME_OVERHEAD_BYTES[name],
                    "theoretical_bits_per_second": theoretical,
                }
                for (speed, mtu), theoretical in sorted(found.items())
            ],
        }
        for name, found in sorted(examples.items())
    ]


def _paths_text(tests: list[dict[str, Any]]) -> str | None:
    """``1 Gbit/s at MTU 1500 (lan-single), 10 Gbit/s at MTU 9000 (p2p-a, p2p-b)``."""
    groups: dict[tuple[int, int], list[str]] = {}
    for test in tests:
        speed, mtu = test["path"].get("speed_bits_per_second"), test["path"].get("mtu_bytes")
        if speed and mtu:
            groups.setdefault((speed, mtu), []).append(test["id"])
    return (
        ", ".join(
            f"{nominal_speed(speed)} at MTU {mtu} ({', '.join(ids)})"
            for (speed, mtu), ids in sorted(groups.items())
        )
        or None
    )


def _charts(run: Mapping[str, Any]) -> list[str]:
    """Mermaid bar charts, one per quantity: iperf3 medians in bit/s with each path's TCP
    maximum as a bar behind its own test; transfers and disks per direction in MiB/s."""
    bits: list[tuple[str, float | None, float | None]] = []
    limits: list[str] = []  # what the grey bars are: the TCP maximum, a UDP test's rate asked
    byte_rates: list[tuple[str, float | None]] = []
    for test in run["tests"]:
        kind = kinds.readout(test)
        found = kind.series(test)
        for series in found:
            if series.summary.get("median") is None:
                continue
            named = kind.named(test, found)
            name = f"{test['id']} {series.direction}" if named and series.direction else test["id"]
            if series.metric.endswith("bits_per_second"):
                bits.append((name, series.summary["median"], series.theoretical_bits_per_second))
                if series.theoretical_bits_per_second and series.limit_name not in limits:
                    limits.append(series.limit_name)
            elif series.metric.endswith("bytes_per_second"):
                byte_rates.append((name, series.summary["median"]))
    charts = [
        mermaid.quantity_chart(
            "Median throughput per test",
            BITS.name,
            [b[0] for b in bits],
            [b[1] for b in bits],
            [b[2] for b in bits],
            caption=mermaid.legend(" or ".join(limits)) if limits else None,
        ),
        mermaid.quantity_chart(
            "Median file transfer and disk rate per test and direction",
            BYTES.name,
            [b[0] for b in byte_rates],
            [b[1] for b in byte_rates],
            horizontal=len(byte_rates) > 6,
        ),
    ]
    return [c for c in charts if c]


def _sections(
    tests: Sequence[Mapping[str, Any]], rows: Sequence[list[dict[str, Any]]]
) -> list[tuple[Section, list[dict[str, Any]]]]:
    """Each section the run's kinds detail their tests in (``Readout.section``) with its tests in
    run order, the sections in the order of their first kind (``kinds.position``). A section's
    view is handed each test as run.json has it, with its heading and its ``rows`` of the
    results table beside."""
    found: dict[Section, list[dict[str, Any]]] = {}
    first: dict[Section, int] = {}
    for test, its_rows in zip(tests, rows, strict=True):
        section = kinds.readout(test).section
        if section is not None:
            shown = {**test, "heading": heading(test), "results": its_rows}
            found.setdefault(section, []).append(shown)
            position = kinds.position(str(test.get("kind")))
            first[section] = min(first.get(section, position), position)
    return [(section, found[section]) for section in sorted(found, key=first.__getitem__)]


def _numbers(sections: Sequence[tuple[Section, Sequence[Mapping[str, Any]]]]) -> Numbers:
    """What the sections add to *How the numbers were computed*, in their order."""
    added = [section.numbers(shown) for section, shown in sections]
    return Numbers(
        rates=tuple(line for one in added for line in one.rates),
        median="".join(one.median for one in added),
        maxima=tuple(line for one in added for line in one.maxima),
        spread_thresholds=tuple(sorted({t for one in added for t in one.spread_thresholds})),
    )


def build_view(
    run: Mapping[str, Any], chart_files: Sequence[str] = (), table: pivot.TableSpec | None = None
) -> dict[str, Any]:
    """Everything the template shows, derived from the run dict only (no clock, no machine);
    ``table``: the layout of the run's table (``report --table``), else the plan's or default."""
    in_force = run_in_force(run)
    hosts = [
        _host(name, host, path_nics(run, name)) for name, host in sorted(in_force["hosts"].items())
    ]
    return {
        **_tables_view(run, table),
        **_run_view(run),
        **_tests_view(run["tests"]),
        **_hosts_view(hosts),
        "tests_text": counts_text(run),
        "charts": _charts(run),
        "topology": mermaid.topology(in_force),
        "network_rows": network_rows(run),
        "chart_files": [f for f in chart_files if not timeline.is_timeline_file(f)],
        "timelines": timeline.views(run, chart_files),
        "commands": report_commands.views(run),
        # run.json's own diagnosis; a run written before it had one is diagnosed here
        "diagnosis": run["diagnosis"] if "diagnosis" in run else diagnose(run),
        "order_text": _order_text(run),
    }


def _tables_view(run: Mapping[str, Any], table: pivot.TableSpec | None) -> dict[str, Any]:
    """The run's tables; ``table`` and ``table_error``: the first, as compare's template has it
    (report.md shows them all: ``tables``)."""
    laid_out = pivot.run_tables(run, table)
    return {
        "table": laid_out[0][0],
        "table_error": laid_out[0][1],
        "tables": [{"table": one, "table_error": error} for one, error in laid_out],
    }


def _run_view(run: Mapping[str, Any]) -> dict[str, Any]:
    """The run itself: its plan and files, how long it took, its status and warnings."""
    warned = run_warnings(run)
    return {
        "run": run,
        "plan": run["plan"],
        "description": str(run["plan"].get("description") or "").strip(),
        "plan_file": _shown_file(run.get("plan_file")),
        "inventory_file": _shown_file(run.get("inventory_file")),
        "duration": _duration(run),
        "status_meaning": STATUS_MEANING.get(run["status"], run["status"]),
        "warnings": warned,
        "status_text": str(run["status"])
        + (f", {counted(len(warned), 'warning')}" if warned else ""),
    }


def _tests_view(everything: list[dict[str, Any]]) -> dict[str, Any]:
    """The tests' results: every kind has its rows in the results table (headline.rows), in its
    own units; a kind that details its tests has a section of its own (Readout.section), asked
    of the kind."""
    rows = [headline.rows(test) for test in everything]
    sections = _sections(everything, rows)
    results = [row for its_rows in rows for row in its_rows]
    with_path = [t for t in everything if t.get("path") and kinds.readout(t).path_rate]
    return {
        "sections": [
            render_template(section.source, section.view(shown)) for section, shown in sections
        ],
        "numbers": _numbers(sections),
        "kinds_text": join_and(headline.kinds_text(everything)) or "nothing",
        "results": results,
        "headline": headline.headline(everything)
        if any(r["median"] is not None for r in results)
        else [],
        "over_maximum": [r for r in results if r["over_maximum"]],
        "failed": [_failure(t) for t in everything if t["status"] != "ok"],
        "framings": _framings(with_path),
        "paths_text": _paths_text(with_path),
        "adaptive": [line for t in everything if (line := _adaptive_line(t))],
    }


def _hosts_view(hosts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The hosts, those that could not be reached, and what was done on them."""
    names = [h["name"] for h in hosts]
    return {
        "hosts": hosts,
        "unreachable": [h for h in hosts if not h["reachable"]],
        "between_hosts": f" between {join_and(names)}" if names else "",
        "any_actions": any(h["actions"] for h in hosts),
    }


_ORDERS = {
    "interleaved": "interleaved: round r ran repetition r of every test, in the plan's order",
    "shuffled": "shuffled: round r ran repetition r of every test, in an order drawn from seed",
    "sequential": "sequential: each test's repetitions back to back",
}


def _order_text(run: Mapping[str, Any]) -> str | None:
    """How the repetitions were ordered (a run from before order was recorded: None)."""
    order = run.get("order")
    if order is None:
        return None
    seed = f" {run['seed']}" if order == "shuffled" and run.get("seed") is not None else ""
    resumed = len(run.get("resumed_at") or [])
    again = f"; resumed {resumed} time{'s' if resumed != 1 else ''}" if resumed else ""
    return f"{_ORDERS.get(str(order), str(order))}{seed}{again}"


def _percent(fraction: float) -> str:
    """``0.0015`` -> ``0.15``, ``0.013`` -> ``1.3``, ``0.27`` -> ``27``: two digits, at most."""
    percent = fraction * 100
    return f"{percent:.0f}" if percent >= 10 else f"{percent:.2g}"


_STATISTICS = {
    "t": "Student's t (two-stage)",
    "order statistics": "order statistics",
    "t and range": "Student's t (two-stage) stretched to every value",
}


def _adaptive_line(test: Mapping[str, Any]) -> str | None:
    """``lan: 3 repetitions (3–15): Student's t (two-stage), 953.1–955.9 Mbit/s, ±0.15 % of
    the median, within ±2 %: clear``: where a test that repeats until its answer is clear
    stopped, and which statistic gave its interval."""
    rule = test.get("adaptive")
    if not rule:
        return None
    wanted = f"±{rule['until']['ci_halfwidth'] * 100:g} %"
    width = rule.get("ci_halfwidth")
    head = f"**{test['id']}**: {counted(rule['n'], 'repetition')} ({rule['min']}–{rule['max']}): "
    if "statistic" not in rule:  # a run before the two-stage rule: order statistics alone
        if width is None:
            found = "too few ok repetitions for the median's 95 % interval (6 at least): unclear"
        else:
            within = "within" if rule["reached"] else "not within"
            clear = "clear" if rule["reached"] else "unclear"
            found = f"the median's 95 % interval ±{width * 100:.1f} %, {within} {wanted}: {clear}"
        return head + found
    interval = rule.get("interval")
    if width is None or interval is None:
        least = max(int(rule["min"]), 3)
        return head + f"too few ok repetitions for the interval ({least} at least): unclear"
    ends = headline.value_range(interval["low"], interval["high"], interval["metric"])
    direction = f" ({interval['direction']})" if interval.get("direction") else ""
    said = f"{_STATISTICS.get(rule['statistic'], rule['statistic'])}, {ends}{direction}, "
    said += f"±{_percent(width)} % of the median, "
    if rule["reached"]:
        return head + said + f"within {wanted}: clear"
    needed = rule.get("needed")
    asked = f" (its first repetitions asked for {needed})" if needed else ""
    return head + said + f"not within {wanted}{asked}: unclear"


def _packaged(name: str) -> str | None:
    """The template ``PACKAGE:FILE`` names (a kind's ``Section.source``), None for no such."""
    package, colon, file = name.partition(":")
    if not colon:
        return None
    try:
        return resources.files(package).joinpath(file).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        return None


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        # report.md.j2 and its parts here; a kind's section from its own folder (PACKAGE:FILE)
        loader=jinja2.ChoiceLoader(
            [jinja2.PackageLoader("nasplan.report", "templates"), jinja2.FunctionLoader(_packaged)]
        ),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,  # Markdown, not HTML; table cells go through the `cell` filter
        # Compiled once per user, not at every apply: jinja keeps the compiled code in a
        # per-user temporary directory it creates 0700 and checks the owner of.
        bytecode_cache=jinja2.FileSystemBytecodeCache(),
    )
    env.filters.update(FILTERS)
    return env


def render_report(
    run: Mapping[str, Any], chart_files: Sequence[str] = (), table: pivot.TableSpec | None = None
) -> str:
    """report.md text for a (validated) run dict; the same run always gives the same bytes.

    ``chart_files`` (relative to the run directory) are shown as images under Results;
    ``table``: the run's table laid out so (else as the plan's ``table:`` says, or the default).
    """
    return render_template("report.md.j2", build_view(run, chart_files, table))


def render_template(template: str, view: Mapping[str, Any]) -> str:
    """Render one of nasplan's Markdown templates: trailing spaces dropped, one blank line
    between blocks whatever the template's conditionals left behind, a final newline."""
    text = _environment().get_template(template).render(**view)
    lines: list[str] = []
    for line in text.rstrip().splitlines():
        line = line.rstrip()
        if line or (lines and lines[-1]):
            lines.append(line)
    return "\n".join(lines) + "\n"


def write_report(
    run_dir: Path,
    charts: str | None = None,
    secrets: Iterable[str] | None = None,
    *,
    check: bool = True,
    table: pivot.TableSpec | None = None,
    out: Path | None = None,
) -> Path:
    """Render ``run_dir/run.json`` into ``run_dir/report.md`` (or ``out``, relative to
    ``run_dir``, so that its links to raw files and charts hold); return the report's path.
    ``out`` never names report.md itself when a ``table`` is asked: that would replace the
    plan's tables (InputError).

    ``charts="png"`` or ``"svg"`` also draws charts with matplotlib into ``run_dir/charts/``.
    ``secrets``: masked in the report; by default those the run's plan names by environment
    variable (``*_env``) and that are set now. ``check=False``: run.json was just written by
    this process, its schema check is skipped (``load_run``). ``table``: see render_report.
    """
    from nasplan.report.charts import write_charts  # matplotlib only when asked for
    from nasplan.report.timeline_charts import write_timeline_charts

    run = load_run(run_dir, check=check)
    path = report_path(run_dir, out, table) or run_dir / REPORT_FILE
    if table is not None:
        pivot.run_table(run, table)  # a --table the run cannot lay out: refused before any chart
    if secrets is None:
        secrets = secrets_from_environ([run.get("plan")], os.environ)
    chart_files = write_charts(run, run_dir, charts) if charts else []
    if charts:
        chart_files += write_timeline_charts(run, run_dir, charts)
    return write_text(path, render_report(run, chart_files, table), redactor_of(secrets))


def report_path(run_dir: Path, out: Path | None, table: pivot.TableSpec | None) -> Path | None:
    """Where ``report --out`` writes (relative to ``run_dir``), None for report.md; InputError
    when it would replace report.md with a ``--table`` laid out instead of the plan's tables,
    or is a directory."""
    if out is None:
        return None
    path = run_dir / out
    if path.is_dir():
        raise InputError(f"--out {out}: a directory; name the file to write, e.g. table.md")
    if table is not None and path.resolve() == (run_dir / REPORT_FILE).resolve():
        raise InputError(
            f"--out {out}: that is the run's {REPORT_FILE}, whose tables are the plan's; "
            "name another file (e.g. files-table.md) to have this table beside them"
        )
    return path
