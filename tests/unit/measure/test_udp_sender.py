"""UDP loss is put on the path only when the sender reached the rate it could: asked 4 Gbit/s on
a 2.5G link, a sender that managed 701 Mbit/s (its CPU) is named, not the path. The record is the
sample run's iperf3 test made UDP on a 2.5G link, with the figures a lab run of that plan gave."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nasplan.measure import kinds
from nasplan.report.render import render_report
from nasplan.results import load_run

RUNS = Path(__file__).resolve().parents[2] / "fixtures" / "runs"


def udp_run(sent: float, arrived: float, lost: int) -> dict[str, Any]:
    """UDP asked at 4 Gbit/s on a 2.5G link: each repetition's sent and arrived rates, and
    ``lost`` of 100000 datagrams."""
    run = load_run(RUNS / "sample")
    test = run["tests"][0]
    test["params"].update(protocol="udp", udp_bitrate_bits_per_second=4 * 10**9)
    test["path"].update(speed_bits_per_second=2_500_000_000)
    for rep in test["repetitions"]:
        rep.update(retransmits=None, sent_bits_per_second=sent, bits_per_second=arrived)
        rep.update(packets=100_000, lost_packets=lost, lost_percent=lost / 1000, jitter_ms=0.05)
    run["tests"] = [test]
    return run


def test_a_sender_under_the_path_s_maximum_is_named_not_the_path() -> None:
    run = udp_run(sent=701e6, arrived=228e6, lost=67_500)
    (test,) = run["tests"]
    caveats = kinds.readout(test).caveats(test)
    marks = [c.mark for c in caveats]
    assert marks == ["⚠ asked over the UDP maximum", "⚠ loss 67.5 %", "⚠ sent under the rate asked"]
    loss = caveats[1].text
    assert loss.startswith("UDP loss 67.5 % (202500 of 300000 datagrams) at 4.00 Gbit/s")
    assert "the sender reached only 701.0 Mbit/s, so its host (CPU) limited it, not the path" in (
        loss
    )
    assert "more than the path carries" not in loss
    assert caveats[2].text.startswith(
        "the UDP sender sent 701.0 Mbit/s (median), 18 % of the 4.00 Gbit/s asked and 29 % of "
        "the path's UDP maximum (2.43 Gbit/s): the client could not send faster"
    )
    # the results table's row carries both marks
    row = next(line for line in render_report(run).splitlines() if line.startswith("| lan-single"))
    assert row.rstrip(" |").endswith("⚠ loss 67.5 % ⚠ sent under the rate asked"), row


def test_a_sender_that_filled_the_path_puts_the_loss_on_the_path() -> None:
    run = udp_run(sent=2.40e9, arrived=2.35e9, lost=40_000)
    (test,) = run["tests"]
    caveats = kinds.readout(test).caveats(test)
    assert [c.mark for c in caveats] == ["⚠ asked over the UDP maximum", "⚠ loss 40.0 %"]
    assert caveats[1].text.endswith("tolerates: more than the path carries")
