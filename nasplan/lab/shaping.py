"""tc shaping of lab interfaces: one token bucket (tbf) per egress, sized for veth."""

from __future__ import annotations

import json

from nasplan.lab import netns

# One millisecond of traffic per bucket: on veth with TSO, tbf then delivers the tc-framing TCP
# maximum at 1G and at 10G even in a short iperf3 run (bench/README.md); smaller buckets lose
# throughput at 10G, much larger ones let short runs overshoot the rate.
_BURST_S = 0.001
# A bucket must hold at least one TSO/GSO super-packet, or tbf falls back to segmenting each.
_MIN_BURST_BYTES = 64 * 1024
_LATENCY = "10ms"


def burst_bytes(bits_per_second: int) -> int:
    """Token bucket size for ``bits_per_second``: 1 ms of traffic, at least 64 KiB."""
    return max(int(bits_per_second * _BURST_S / 8), _MIN_BURST_BYTES)


def tbf_argv(device: str, bits_per_second: int) -> list[str]:
    """``tc qdisc replace`` argv that shapes ``device``'s egress to ``bits_per_second``."""
    return [
        "tc",
        "qdisc",
        "replace",
        "dev",
        device,
        "root",
        "tbf",
        "rate",
        f"{bits_per_second}bit",
        "burst",
        str(burst_bytes(bits_per_second)),
        "latency",
        _LATENCY,
    ]


def shape(device: str, bits_per_second: int, namespace: str | None = None) -> None:
    """Shape ``device``'s egress (in ``namespace``, else the root one) to ``bits_per_second``."""
    netns.run(tbf_argv(device, bits_per_second), netns=namespace)


def shaped_rate(device: str, namespace: str | None = None) -> int | None:
    """The tbf rate in bit/s on ``device`` as tc reports it, or None when it is not shaped."""
    out = netns.run(["tc", "-j", "qdisc", "show", "dev", device], netns=namespace, check=False)
    for qdisc in json.loads(out or "[]"):
        if qdisc.get("kind") == "tbf":
            rate_bytes_per_second = qdisc.get("options", {}).get("rate")
            if isinstance(rate_bytes_per_second, int):
                return rate_bytes_per_second * 8
    return None
