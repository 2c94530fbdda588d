"""NIC heat: a test's rate falling while the NIC on its path heats (a hwmon sensor).

Read from each test's ``resources.<host>.series.nic_temperature_c`` (the sampler, where the NIC
has a sensor) and its ``timeline.throughput`` (iperf3's seconds, or a transfer's NIC bytes):
the first and the last third of each, in the order the repetitions ran. Without a sensor, or
without a rate over time, nothing is said.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nasplan.diagnose.common import finding

# a rise smaller than this is a NIC's ordinary warming under load
HEAT_RISE_C = 10.0
# the rate of the last third this much below the first third's counts as a fall
RATE_FALL_RATIO = 0.10


def _thirds(values: Sequence[float | None]) -> tuple[float, float] | None:
    """The mean of the first and of the last third of the known values; None with fewer than 3."""
    known = [float(v) for v in values if v is not None]
    if len(known) < 3:
        return None
    third = len(known) // 3
    return sum(known[:third]) / third, sum(known[-third:]) / third


def _rate_text(bits_per_second: float) -> str:
    if bits_per_second >= 1e9:
        return f"{bits_per_second / 1e9:.2f} Gbit/s"
    return f"{bits_per_second / 1e6:.1f} Mbit/s"


def heat_findings(run: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``nic-heat``: per test and path NIC, a rise of ``HEAT_RISE_C`` or more while the rate
    fell by ``RATE_FALL_RATIO`` or more."""
    found: list[dict[str, Any]] = []
    for test in run.get("tests") or []:
        throughput = (test.get("timeline") or {}).get("throughput") or []
        rates = _thirds([v for s in throughput for v in s.get("bits_per_second") or []])
        if rates is None or rates[1] > rates[0] * (1 - RATE_FALL_RATIO):
            continue
        params, path = test.get("params") or {}, test.get("path") or {}
        for role in ("client", "server"):
            host, nic = params.get(role), path.get(f"{role}_interface")
            resources = ((test.get("resources") or {}).get(str(host)) or {}).get("series") or {}
            temps = _thirds((resources.get("nic_temperature_c") or {}).get(str(nic)) or [])
            if temps is None or temps[1] - temps[0] < HEAT_RISE_C:
                continue
            text = (
                f"{host} {nic} heated from {temps[0]:.0f} °C to {temps[1]:.0f} °C during "
                f"{test.get('id')} while its rate fell from {_rate_text(rates[0])} to "
                f"{_rate_text(rates[1])} ({(rates[1] / rates[0] - 1) * 100:.0f} %): "
                "a NIC that throttles as it heats (airflow, a heatsink)."
            )
            evidence = {
                "interface": nic,
                "temperature_first_third_c": temps[0],
                "temperature_last_third_c": temps[1],
                "rate_first_third_bits_per_second": rates[0],
                "rate_last_third_bits_per_second": rates[1],
            }
            found.append(finding("nic-heat", test.get("id"), host, text, evidence))
    return found
