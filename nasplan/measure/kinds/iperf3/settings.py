"""`kind: iperf3`'s settings as the plan gives them, each default stated here once: how one iperf3
client run is made, checked as it is built."""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Iperf3Params:
    """How one iperf3 client run is made (server side: a one-off ``iperf3 -s -1``)."""

    duration_s: int
    omit_s: int = 0
    parallel: int = 1
    reverse: bool = False
    bidir: bool = False
    protocol: str = "tcp"
    udp_bitrate_bits_per_second: int | None = None
    zerocopy: bool = False
    window_bytes: int | None = None
    mss_bytes: int | None = None
    port: int = 5201
    bind_address: str | None = None
    # -C: the sender's TCP congestion control (Linux, FreeBSD), e.g. reno, cubic, bbr
    congestion: str | None = None
    # -l: bytes per write (TCP) or per datagram (UDP: its payload, what a packet-rate test sets)
    length_bytes: int | None = None
    # -4 / -6: only that address family
    ip_version: int | None = None
    # -n: bytes a repetition sends instead of a time (-t); duration_s is then its time bound
    bytes_total: int | None = None
    # -S (dscp << 2): the DSCP code point its packets carry (-S exists in every iperf3 3.x)
    dscp: int | None = None
    # the client pings the server idle and through the run (nasplan.measure.under_load)
    latency_under_load: bool = False

    def __post_init__(self) -> None:
        if self.protocol not in ("tcp", "udp"):
            raise ValueError(f"iperf3 protocol must be tcp or udp, not {self.protocol!r}")
        if self.duration_s < 1 or self.parallel < 1 or self.omit_s < 0:
            raise ValueError("iperf3 needs duration_s >= 1, parallel >= 1 and omit_s >= 0")
        if self.ip_version not in (None, 4, 6):
            raise ValueError(f"iperf3 ip_version must be 4 or 6, not {self.ip_version!r}")
        if self.dscp is not None and not 0 <= self.dscp <= 63:
            raise ValueError(f"a DSCP code point is 0 to 63, not {self.dscp}")
        if self.congestion is not None and not re.fullmatch(r"[a-z0-9_-]{1,15}", self.congestion):
            raise ValueError(f"not a congestion control name: {self.congestion!r}")
