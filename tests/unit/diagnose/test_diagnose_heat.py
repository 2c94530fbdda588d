"""NIC heat: the sampler's NIC temperatures and a rate that falls as the NIC heats."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nasplan.diagnose import bus
from nasplan.diagnose.heat import heat_findings
from nasplan.measure import sampler

SAMPLER = Path(__file__).resolve().parents[2] / "fixtures" / "sampler"


def _heated(start_millidegrees: int, step: int) -> str:
    """The real capture's lines, each with a sensor of eth0 (and a cooler second one)."""
    lines = (SAMPLER / "no-hwmon-dash.txt").read_text(encoding="utf-8").splitlines()
    out = []
    for index, line in enumerate(lines):
        value = start_millidegrees + index * step
        out.append(line.replace(" T E", f" T eth0:{value} eth0:{value - 9000} E"))
    return "\n".join(out) + "\n"


def test_the_sampler_reads_no_temperature_where_there_is_no_sensor() -> None:
    points = sampler.series((SAMPLER / "no-hwmon-dash.txt").read_text(encoding="utf-8"))
    assert points is not None and "nic_temperature_c" not in points


def test_the_sampler_keeps_each_nics_hottest_sensor_in_degrees() -> None:
    points = sampler.series(_heated(60000, 5000))
    assert points is not None
    # one point a second (every other line), the hotter of the two sensors
    (temps,) = points["nic_temperature_c"].values()
    assert list(points["nic_temperature_c"]) == ["eth0"]
    assert temps == [70.0 + 10 * i for i in range(len(points["t_s"]))]


def _run(temps: list[float], rates: list[float]) -> dict[str, Any]:
    return {
        "hosts": {},
        "tests": [
            {
                "id": "hot",
                "params": {"client": "mac", "server": "nas"},
                "path": {"client_interface": "en0", "server_interface": "eth1"},
                "timeline": {"throughput": [{"bits_per_second": rates}]},
                "resources": {"mac": {"series": {"nic_temperature_c": {"en0": temps}}}},
            }
        ],
    }


def test_a_rate_that_falls_as_the_nic_heats_is_named_with_both() -> None:
    temps = [55.0, 58.0, 62.0, 70.0, 76.0, 80.0]
    rates = [9.4e9, 9.4e9, 8.0e9, 7.0e9, 6.2e9, 6.2e9]
    (found,) = heat_findings(_run(temps, rates))
    assert (found["cause"], found["test"], found["host"]) == ("nic-heat", "hot", "mac")
    assert found["text"] == (
        "mac en0 heated from 56 °C to 78 °C during hot while its rate fell from 9.40 Gbit/s to "
        "6.20 Gbit/s (-34 %): a NIC that throttles as it heats (airflow, a heatsink)."
    )
    assert [f["cause"] for f in bus.findings(_run(temps, rates))] == ["nic-heat"]


def test_a_nic_that_heats_while_the_rate_holds_or_a_rate_that_falls_cool_says_nothing() -> None:
    assert heat_findings(_run([55.0, 60.0, 70.0, 80.0], [9.4e9] * 4)) == []
    assert heat_findings(_run([55.0, 55.0, 56.0, 56.0], [9.4e9, 9e9, 6e9, 6e9])) == []
    assert heat_findings(_run([], [9.4e9, 9e9, 6e9, 6e9])) == []
