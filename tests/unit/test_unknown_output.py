"""Output a parser does not understand fails in words: one line naming the command and what was
expected, and how to report it (``nasplan probe``), never a traceback, never a silent default.

Each parser is fed its real fixtures (tests/fixtures/), then empty, truncated and reordered
variants of them: an empty answer always fails in words; a truncated one fails in words or
gives part of what the whole gave (never a NIC, an address or a value the whole did not have);
a reordered one (blocks, records, JSON entries, Format-List fields) gives what the whole gave.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from os_facts import framed, real

from nasplan.errors import PROBE_ADVICE, UnknownOutput
from nasplan.facts.gather import parse_checked
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.network import bsd, ifconfig, iptext, state, tools

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(path: str) -> str:
    return (FIXTURES / path).read_text(encoding="utf-8")


def lines_blocks(text: str, starts: Callable[[str], bool]) -> str:
    """``text`` with its blocks (each from a line where ``starts``) in reverse order."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if starts(line) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    head, rest = (blocks[:1], blocks[1:]) if not starts(text.splitlines()[0]) else ([], blocks)
    return "\n".join(line for block in [*head, *reversed(rest)] for line in block) + "\n"


def json_reversed(text: str) -> str:
    return json.dumps(list(reversed(json.loads(text))))


def facts_reordered(text: str) -> str:
    """Sections reversed, ``end`` kept last (the script's own last word)."""
    parts = re.split(r"(?m)^(?=@@nasplan:)", text)
    body = [p for p in parts[1:] if not p.startswith("@@nasplan:end@@")]
    end = [p for p in parts[1:] if p.startswith("@@nasplan:end@@")]
    return parts[0] + "".join(reversed(body)) + "".join(end)


def format_list_reordered(text: str) -> str:
    """Every Format-List record's field lines reversed (PowerShell prints objects' properties
    in their type's order, which another version may change)."""
    out = []
    for section in re.split(r"(?m)^(?=@@nasplan:)", text):
        if not section.startswith("@@nasplan:win-"):
            out.append(section)
            continue
        header, _, body = section.partition("\n")
        records = [r.splitlines() for r in re.split(r"\n\s*\n", body)]
        out.append(header + "\n" + "\n\n".join("\n".join(reversed(r)) for r in records) + "\n\n")
    return "".join(out)


def windows_output() -> str:
    return framed(
        {
            "uname-s": "Windows",
            "hostname": "DESKTOP-WIN01",
            "win-os": real("windows/win32-operatingsystem-build-psdocs.txt"),
            "win-netadapter": real("windows/get-netadapter-fl-salt-56275.txt"),
            "win-ipaddress": real("windows/find-netroute-ipaddress-salt-test.txt"),
            "tools": "iperf3=C:\\iperf3\\iperf3.exe",
            "end": "",
        }
    )


@dataclass(frozen=True)
class Case:
    """One parser on one real output; ``parse(text)`` -> a comparable value."""

    name: str
    parse: Callable[[str], Any]
    text: str
    reorder: Callable[[str], str] | None
    # True: a cut-off output is always told apart (sections up to an end, JSON)
    truncation_always_fails: bool = False


def _nics(states: dict[str, state.NicState]) -> dict[str, Any]:
    return {name: s.to_dict() for name, s in states.items()}


def _facts(text: str) -> dict[str, Any]:
    return parse_checked(text).to_dict()


def _ip_header(line: str) -> bool:
    return bool(re.match(r"^\d+:", line))


def _ifconfig_header(line: str) -> bool:
    return bool(line) and not line[0].isspace()


NETTOOLS, BSD = "nettools/", "nettools/bsd/"
CASES = [
    Case(
        "ip -j addr (iproute2)",
        lambda t: _nics(state.parse_state(t, fixture(NETTOOLS + "iproute2-route.json"))),
        fixture(NETTOOLS + "iproute2-addr.json"),
        json_reversed,
        truncation_always_fails=True,
    ),
    Case(
        "ip -j route (iproute2)",
        lambda t: _nics(state.parse_state(fixture(NETTOOLS + "iproute2-addr.json"), t)),
        fixture(NETTOOLS + "iproute2-route.json"),
        json_reversed,
        truncation_always_fails=True,
    ),
    Case(
        "ip -j addr (p2p, MTU 9000)",
        lambda t: _nics(state.parse_state(t, fixture("ip/p2p-mtu9000-route.json"))),
        fixture("ip/p2p-mtu9000-addr.json"),
        json_reversed,
        truncation_always_fails=True,
    ),
    *(
        Case(
            f"ip addr text ({name})",
            lambda t, route=route: _nics(iptext.parse_state(t, fixture(NETTOOLS + route))),
            fixture(NETTOOLS + name),
            lambda t: lines_blocks(t, _ip_header),
        )
        for name, route in [
            ("iproute2-addr.txt", "iproute2-route.txt"),
            ("busybox-ip-addr.txt", "busybox-ip-route.txt"),
            ("public-centos7-ip-addr.txt", "public-centos7-ip-route.txt"),
        ]
    ),
    *(
        Case(
            f"ifconfig -a ({name})",
            lambda t: _nics(ifconfig.parse_state(t, fixture(NETTOOLS + "proc-net-route.txt"))),
            fixture(NETTOOLS + name),
            lambda t: lines_blocks(t, _ifconfig_header),
        )
        for name in ("busybox-ifconfig-a.txt", "net-tools-ifconfig-a.txt")
    ),
    Case(
        "/proc/net/route",
        lambda t: state_output(
            {"ifconfig": fixture(NETTOOLS + "busybox-ifconfig-a.txt"), "proc-net-route": t}
        ),
        fixture(NETTOOLS + "proc-net-route.txt"),
        None,
    ),
    *(
        Case(
            f"BSD ifconfig -a ({name})",
            lambda t: _nics(bsd.parse_state(t, fixture(BSD + "jc_freebsd12_netstat-r.out"))),
            fixture(path),
            lambda t: lines_blocks(t, _ifconfig_header),
        )
        for name, path in [
            ("FreeBSD", BSD + "ohai_freebsd-ifconfig-a.txt"),
            ("macOS", "facts/bsd/osx-10.14.6_ifconfig.out"),
        ]
    ),
    *(
        Case(
            f"netstat -rn ({name})",
            lambda t: state_output(
                {"bsd-ifconfig": fixture(BSD + "ohai_freebsd-ifconfig-a.txt"), "bsd-netstat": t}
            ),
            fixture(BSD + name),
            None,
        )
        for name in ("jc_freebsd12_netstat-r.out", "jc_osx-10.14.6_netstat-rnl.out")
    ),
    *(
        Case(
            f"facts ({path.name})",
            _facts,
            path.read_text(encoding="utf-8"),
            facts_reordered,
            truncation_always_fails=True,
        )
        for path in sorted((FIXTURES / "facts").glob("*.txt"))
    ),
    Case(
        "facts (Windows)",
        _facts,
        windows_output(),
        format_list_reordered,
        truncation_always_fails=True,
    ),
    *(
        Case(
            f"iperf3 -J ({path.parent.name}/{path.name})",
            iperf3.parse,
            path.read_text(encoding="utf-8"),
            None,
            truncation_always_fails=True,
        )
        for path in sorted((FIXTURES / "iperf3").glob("*/tcp-*.json"))
        + sorted((FIXTURES / "iperf3").glob("*/udp-*.json"))
    ),
]


def outcome(case: Case, text: str) -> Any:
    """The parse, or the UnknownOutput (or iperf3's own error) it raised: nothing else."""
    try:
        return case.parse(text)
    except UnknownOutput as exc:
        assert_in_words(str(exc))
        return exc
    except iperf3.Iperf3Error as exc:  # iperf3's own words, or an UnknownOutput's
        assert "\n" not in str(exc)
        return exc


def assert_in_words(message: str) -> None:
    assert "\n" not in message and "Traceback" not in message
    assert message.startswith("`") and "expected" in message and PROBE_ADVICE in message


def truncations(text: str) -> list[str]:
    lines = text.splitlines(keepends=True)
    cuts = {len(lines) // 4, len(lines) // 2, len(lines) - 1}
    by_line = ["".join(lines[:cut]) for cut in sorted(cuts) if 0 < cut < len(lines)]
    by_char = [text[: len(text) // 3], text[: len(text) * 2 // 3 + 1]]
    return [t for t in [*by_line, *by_char] if t.strip() and t != text]


def contained(part: Any, whole: Any) -> bool:
    """Every NIC / address / value of ``part`` is in ``whole`` (what a cut may leave)."""
    if isinstance(part, dict) and isinstance(whole, dict):
        return all(k in whole and contained(v, whole[k]) for k, v in part.items())
    if isinstance(part, (list, tuple)) and isinstance(whole, (list, tuple)):
        return all(any(contained(p, w) for w in whole) for p in part)
    return part is None or part == whole or (isinstance(part, int) and isinstance(whole, int))


def links(nics: Any) -> Any:
    if not isinstance(nics, dict):
        return nics
    return {n: {k: v for k, v in s.items() if k != "routes"} for n, s in nics.items()}


def state_output(sections: dict[str, str]) -> Any:
    """``parse_state_output`` of a state script's sections (what a host's answer goes through)."""
    return _nics(tools.parse_state_output(framed(sections)))


IDS = [case.name for case in CASES]


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_the_real_output_parses(case: Case) -> None:
    parsed = case.parse(case.text)
    assert parsed


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_empty_output_fails_in_words(case: Case) -> None:
    for empty in ("", "\n", "   \n\n"):
        result = outcome(case, empty)
        assert isinstance(result, (UnknownOutput, iperf3.Iperf3Error)), (case.name, result)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_truncated_output_fails_in_words_or_gives_part_of_the_whole(case: Case) -> None:
    whole = case.parse(case.text)
    for cut in truncations(case.text):
        result = outcome(case, cut)
        if case.truncation_always_fails:
            assert isinstance(result, Exception), (case.name, cut[-60:])
        elif not isinstance(result, Exception):
            # routes are left out: which ones the kernel derived depends on the addresses seen
            assert contained(links(result), links(whole)), (case.name, cut[-60:])


@pytest.mark.parametrize("case", [c for c in CASES if c.reorder], ids=lambda c: c.name)
def test_reordered_output_gives_the_same(case: Case) -> None:
    assert case.reorder is not None
    reordered = case.reorder(case.text)
    assert reordered != case.text or case.text.count("\n") < 3
    # the order of lists (NICs, a NIC's addresses, routes) follows the output's: compare as sets
    assert normal(case.parse(reordered)) == normal(case.parse(case.text))


def normal(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return sorted((normal(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


OTHER_LAYOUTS = [
    # an ifconfig layout nobody recorded: no MTU anywhere
    (
        "ifconfig -a",
        lambda: ifconfig.parse_state("eth0 Link encap:Ethernet\n  inet 10.0.0.1\n", ""),
    ),
    # BSD ifconfig whose header nasplan does not know
    ("ifconfig -a", lambda: bsd.parse_state("em0 <UP,BROADCAST> mtu 1500\n", "")),
    (
        "netstat -rn -f inet",
        lambda: bsd.parse_state(fixture(BSD + "ohai_freebsd-ifconfig-a.txt"), "Routes:\n"),
    ),
    ("ip addr show", lambda: iptext.parse_state("eth0 UP 10.0.0.1/24\n", "")),
    ("ip -j addr show", lambda: state.parse_state('[{"name": "eth0"}]', "[]")),
    (
        "ip -j route show table main",
        lambda: state.parse_state(fixture(NETTOOLS + "iproute2-addr.json"), "{}"),
    ),
    (
        "cat /proc/net/route",
        lambda: ifconfig.parse_state(fixture(NETTOOLS + "busybox-ifconfig-a.txt"), "eth0 0 0\n"),
    ),
    (
        "getcfg System Version",
        lambda: parse_checked(
            fixture("facts/qnap-lab-busybox-ifconfig.txt").replace(
                "@@nasplan:marker:getcfg System Version@@\n5.1.0",
                "@@nasplan:marker:getcfg System Version@@\nQTS hero h5.1.0",
            )
        ),
    ),
    (
        "Get-NetAdapter | Format-List",
        lambda: parse_checked(windows_output().replace("Status ", "Zustand ")),
    ),
    (
        "Get-NetIPAddress | Format-List",
        lambda: parse_checked(windows_output().replace("PrefixLength", "Praefix")),
    ),
    (
        "Get-CimInstance Win32_OperatingSystem",
        lambda: parse_checked(windows_output().replace("BuildNumber", "Build")),
    ),
    (
        "ip -j addr show",
        lambda: tools.parse_state_output("\n@@nasplan:addr@@\n\n@@nasplan:route@@\n[]\n"),
    ),
    (
        "netstat -rn -f inet",
        lambda: tools.parse_state_output(
            "\n@@nasplan:bsd-ifconfig@@\n"
            + fixture(BSD + "ohai_freebsd-ifconfig-a.txt")
            + "\n@@nasplan:bsd-netstat@@\n\n"
        ),
    ),
]


@pytest.mark.parametrize(("command", "parse"), OTHER_LAYOUTS, ids=[c for c, _ in OTHER_LAYOUTS])
def test_an_unknown_layout_names_its_command_and_what_was_expected(
    command: str, parse: Callable[[], Any]
) -> None:
    with pytest.raises(UnknownOutput) as raised:
        parse()
    assert raised.value.command == command
    assert_in_words(str(raised.value))


def test_an_iperf3_json_of_an_unknown_version_fails_in_words() -> None:
    doc = json.loads(fixture("iperf3/3.12/tcp-single.json"))
    doc["start"]["version"] = "iperf 4.0"
    doc["end"] = {"summary": {"received": {"bps": 1e9}}}
    with pytest.raises(iperf3.Iperf3Error) as raised:
        iperf3.parse(json.dumps(doc))
    assert str(raised.value).startswith("`iperf3 -J (iperf3 4.0)`")
    assert_in_words(str(raised.value))
    with pytest.raises(iperf3.Iperf3Error, match="iperf3 -J"):
        iperf3.parse(json.dumps({"report": {"bits_per_second": 1}}))
