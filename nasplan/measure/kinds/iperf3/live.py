"""A running iperf3 server's interval lines (text output, ``-i 1``): the test's rate each second.

A pure parser of the lines iperf3 prints (iperf_locale.c's interval formats, the same for TCP,
UDP, the sender's and the receiver's side) and ``LiveRates``, which turns the server's output,
as it comes, into one rate per second of the whole test: the ``[SUM]`` line with several
streams, else the one stream's; with ``--bidir`` the direction the server receives.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "[  5]   1.00-2.00   sec   112 MBytes   941 Mbits/sec", "[SUM][RX-S]   0.00-1.00   sec ...",
# then what the side and protocol add (retransmits and cwnd, UDP jitter and loss), and at the
# end "(omitted)" for an interval of -O, "sender" / "receiver" for the end-of-test summary.
_INTERVAL = re.compile(
    r"^\[\s*(?P<stream>\d+|SUM)\](?:\[(?P<role>[RT]X)-[SC]\])?\s+"
    r"(?P<start>\d+(?:\.\d+)?)-\s*(?P<end>\d+(?:\.\d+)?)\s+sec\s+"
    r"[\d.]+\s+[KMGT]?Bytes\s+"
    r"(?P<rate>[\d.]+)\s+(?P<prefix>[KMGT]?)bits/sec(?P<rest>.*)$"
)
# iperf3 writes bit rates with decimal prefixes (units.c: 1000 for bits, 1024 for bytes)
_PREFIX = {"": 1, "K": 10**3, "M": 10**6, "G": 10**9, "T": 10**12}
# a server's last interval is a sliver ("3.00-3.00   sec  63.6 KBytes   730 Mbits/sec"): the
# last packets after its final whole second, a rate of a few milliseconds, not a second's
_SHORTEST_S = 0.5


@dataclass(frozen=True)
class Interval:
    """One interval line: ``stream`` (None: the ``[SUM]`` of all streams), ``role`` (``RX``
    or ``TX`` with ``--bidir``, else None), its seconds and rate."""

    stream: int | None
    role: str | None
    start_s: float
    end_s: float
    bits_per_second: float
    omitted: bool


def interval(line: str) -> Interval | None:
    """The interval ``line`` reports, or None (any other line, the end-of-test summary too)."""
    match = _INTERVAL.match(line.strip())
    if match is None:
        return None
    rest = match["rest"].split()
    if rest and rest[-1] in ("sender", "receiver"):
        return None
    stream = match["stream"]
    return Interval(
        stream=None if stream == "SUM" else int(stream),
        role=match["role"],
        start_s=float(match["start"]),
        end_s=float(match["end"]),
        bits_per_second=float(match["rate"]) * _PREFIX[match["prefix"]],
        omitted=bool(rest) and rest[-1] == "(omitted)",
    )


class LiveRates:
    """The whole test's rate each second from a server's output fed as it comes.

    ``parallel``: the test's streams (several: the ``[SUM]`` lines); ``bidir``: only what the
    server receives (``RX``, the client -> server direction). Intervals of ``-O`` are left out,
    and the sliver of an interval that ends a test.
    """

    def __init__(self, parallel: int, *, bidir: bool = False) -> None:
        self.summed = parallel > 1
        self.role = "RX" if bidir else None
        self._partial = ""
        self._last_end_s = -1.0

    def feed(self, text: str) -> list[tuple[float, float]]:
        """``(second, bits_per_second)`` of each whole second in ``text`` (a line may come in
        pieces: its start is kept for the next feed); ``second``: where the interval ends."""
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        rates = []
        for line in lines:
            found = interval(line)
            if found is None or found.omitted or found.role != self.role:
                continue
            if found.end_s - found.start_s < _SHORTEST_S:
                continue
            if (found.stream is None) != self.summed or found.end_s <= self._last_end_s:
                continue
            self._last_end_s = found.end_s
            rates.append((found.end_s, found.bits_per_second))
        return rates
