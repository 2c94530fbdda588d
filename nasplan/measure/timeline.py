"""Per-second throughput series of a test, on one clock with its hosts' resource samples.

A test's clock starts when its resource sampler has started on every host (``t_s`` 0); each
repetition records when it began and ended on that clock (``started_s``, ``ended_s``, taken on
the controller, so within the SSH round trip that starts the tool). Throughput comes from:

- ``iperf3``: the client's own 1 s intervals (``interval_bits_per_second``);
- ``fio``: fio's bandwidth log, one averaged value per second (``--log_avg_msec=1000``);
- ``nic``: a transfer's bytes on the client's NIC towards the NAS per second (transmitted for a
  write, received for a read), from the sampler's /proc/net/dev counters: the tools print no
  progress we could trust, and the NIC sees every byte the copy moves, protocol headers
  included (a few % above the file's own rate).

Each series of a transfer or disk test also says whether its rate fell after the first seconds
(``analysis.rate_fall``: a cache filling, then the disk's own speed).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.analysis import rate_fall
from nasplan.measure.series import data_direction

# A sampler point (the rate over the second before it) belongs to a repetition when that second
# lies inside the repetition, give or take this much clock skew between controller and host.
_SLACK_S = 0.25
_STEP_S = 1.0
# The client's NIC counter a transfer direction moves: a write sends, a read receives.
_NIC_COUNTER = {"write": "tx_bytes_per_second", "read": "rx_bytes_per_second"}
# the NAS's own NIC sees each direction the other way round
_NAS_COUNTER = {"write": "rx_bytes_per_second", "read": "tx_bytes_per_second"}


class Clock:
    """Seconds since a test's timeline began (the controller's monotonic clock)."""

    def __init__(self) -> None:
        self._start = time.monotonic()

    def now_s(self) -> float:
        """Seconds since the clock was made, rounded to milliseconds."""
        return round(time.monotonic() - self._start, 3)


# each series' ``source`` as the report says where its seconds came from
SOURCE_TEXT = {
    "iperf3": "iperf3's own 1 s intervals",
    "fio": "fio's bandwidth log (one average per second)",
    "nic": "bytes per second on the client's NIC towards the NAS (protocol headers included)",
}


def series(
    *,
    repetition: int,
    direction: str | None,
    source: str,
    t_s: Sequence[float],
    bits_per_second: Sequence[float | None],
    started_s: float,
    detect_fall: bool,
) -> dict[str, Any] | None:
    """One repetition's throughput series for run.json (``t_s`` on the test's clock).

    ``{"repetition", "direction", "source", "t_s", "bits_per_second", "fall"}``; ``fall`` is
    analysis.rate_fall() with ``fell_at_s`` counted from the repetition's start, None when the
    rate held (or ``detect_fall`` is off). None when there is no point.
    """
    if not t_s:
        return None
    fall = None
    if detect_fall:
        relative = [t - started_s for t in t_s]
        found = rate_fall(relative, bits_per_second)
        if found is not None:
            fall = {
                "after_s": round(found["fell_at_s"], 2),
                "before_bits_per_second": found["before"],
                "after_bits_per_second": found["after"],
            }
    return {
        "repetition": repetition,
        "direction": direction,
        "source": source,
        "t_s": [round(t, 2) for t in t_s],
        "bits_per_second": list(bits_per_second),
        "fall": fall,
    }


def iperf3_points(
    interval_bits_per_second: Sequence[float | None], started_s: float, omit_s: int = 0
) -> tuple[list[float], list[float | None]]:
    """iperf3's 1 s intervals (omitted ones already left out) placed on the test's clock."""
    offset = started_s + omit_s
    return [offset + index + 1 for index in range(len(interval_bits_per_second))], list(
        interval_bits_per_second
    )


def fio_points(
    bw_log: Sequence[tuple[float, float, str]], started_s: float, direction: str
) -> tuple[list[float], list[float | None]]:
    """fio's bandwidth log (fio.parse_bw_log) of ``direction``, in bit/s, on the test's clock."""
    rows = [(t, rate) for t, rate, rw in bw_log if rw == direction]
    return [started_s + t for t, _ in rows], [rate * 8 for _, rate in rows]


def nic_points(
    host_series: Mapping[str, Any] | None,
    nic: str | None,
    counter: str,
    started_s: float,
    ended_s: float,
) -> tuple[list[float], list[float | None]]:
    """A NIC's ``counter`` (``tx_bytes_per_second``, ``rx_bytes_per_second``) in bit/s, for
    the sampler points whose second lies inside [started_s, ended_s]; empty when unknown."""
    if not host_series or not nic:
        return [], []
    counters = (host_series.get("nics") or {}).get(nic) or {}
    values = counters.get(counter)
    if values is None:
        return [], []
    t_s, rates = [], []
    for t, rate in zip(host_series.get("t_s") or [], values, strict=False):
        if t - _STEP_S >= started_s - _SLACK_S and t <= ended_s + _SLACK_S:
            t_s.append(float(t))
            rates.append(None if rate is None else rate * 8)
    return t_s, rates


def transfer_series(
    record: Mapping[str, Any], resources: Mapping[str, Any] | None
) -> list[dict[str, Any]]:
    """The NIC series of each timed transfer repetition (write: the client's transmitted
    bytes; read: received), from the client's sampler series; [] when it was not sampled.
    Several clients at once: the NAS's NIC, the whole it carried."""
    params = record.get("params") or {}
    together = bool(params.get("clients"))
    host = params.get("server") if together else params.get("client")
    client = (resources or {}).get(str(host)) or {}
    nic = (record.get("path") or {}).get("server_interface" if together else "client_interface")
    counters = _NAS_COUNTER if together else _NIC_COUNTER
    found = []
    for rep in record.get("repetitions") or []:
        started_s, ended_s = rep.get("started_s"), rep.get("ended_s")
        if rep.get("status") != "ok" or started_s is None or ended_s is None:
            continue
        counter = counters[data_direction(str(rep.get("direction")))]
        t_s, rates = nic_points(client.get("series"), nic, counter, started_s, ended_s)
        made = series(
            repetition=rep["index"],
            direction=rep.get("direction"),
            source="nic",
            t_s=t_s,
            bits_per_second=rates,
            started_s=started_s,
            detect_fall=True,
        )
        if made is not None:
            made["host"], made["nic"] = host, nic
            found.append(made)
    return found


def timeline(throughput: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """run.json ``timeline`` of a test: ``{"throughput": [series, ...]}``, None when empty."""
    present = [s for s in throughput if s is not None]
    return {"throughput": present} if present else None
