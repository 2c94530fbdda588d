"""CPU findings from run.json alone: one saturated core beside a machine that looks idle."""

from __future__ import annotations

from typing import Any

from nasplan.diagnose import cpu


def iperf3_run(
    *,
    parallel: int = 1,
    mode: str = "streams",
    version: str = "3.12",
    core: float | None = 100.0,
    average: float = 27.0,
    process: float | None = None,
    boot_ids: tuple[str, str] = ("a", "b"),
) -> dict[str, Any]:
    rep = {"index": 1, "status": "ok", "cpu_client_percent": 40.0, "cpu_server_percent": process}
    return {
        "hosts": {
            "nas": {"facts": {"iperf3_version": version, "cpu_cores": 4, "boot_id": boot_ids[0]}},
            "pc": {"facts": {"iperf3_version": version, "cpu_cores": 8, "boot_id": boot_ids[1]}},
        },
        "tests": [
            {
                "id": "p2p",
                "kind": "iperf3",
                "status": "ok",
                "params": {"server": "nas", "client": "pc", "parallel": parallel,
                           "parallel_mode": mode},
                "repetitions": [rep],
                "resources": {
                    "nas": {"cpu_busy_percent_median": average, "cpu_cores": 4,
                            "cpu_busiest_core_percent_median": core},
                    "pc": {"cpu_busy_percent_median": 20.0, "cpu_cores": 8,
                           "cpu_busiest_core_percent_median": 45.0},
                },
            }
        ],
    }  # fmt: skip


def test_single_threaded_iperf3_streams_on_one_core_like_the_issue() -> None:
    (found,) = cpu.findings(iperf3_run(parallel=4))
    assert found["cause"] == "cpu-core" and (found["test"], found["host"]) == ("p2p", "nas")
    assert found["text"] == (
        "one core of nas at 100 % (average 27 % of 4) — single-threaded iperf3 3.12: its 4 "
        "streams share one thread; use 3.16+ or `parallel` as processes (one iperf3 a stream)."
    )
    assert found["evidence"]["busiest_core_percent"] == 100.0


def test_one_stream_is_one_thread_in_any_version() -> None:
    (found,) = cpu.findings(iperf3_run(version="3.17"))
    assert found["text"].endswith(
        "one stream of iperf3 3.17 is one thread: `parallel: 2` or more spreads the streams over "
        "cores (one process each before 3.16)."
    )


def test_iperf3_s_own_figure_counts_where_the_sampler_had_none() -> None:
    (found,) = cpu.findings(iperf3_run(core=None, process=99.0))
    assert found["text"].startswith("iperf3 on nas at 99 % of one core — ")


def test_a_busy_core_that_iperf3_did_not_fill_is_another_program_s() -> None:
    (found,) = cpu.findings(iperf3_run(process=6.0))
    assert found["text"] == (
        "one core of nas at 100 % (average 27 % of 4) — not iperf3 (its process at 6 % of one "
        "core): another program or the NIC's interrupts on nas held that core."
    )


def test_no_finding_when_no_core_is_at_its_limit_or_the_whole_machine_is() -> None:
    assert cpu.findings(iperf3_run(core=70.0)) == []
    assert cpu.findings(iperf3_run(average=95.0)) == []  # the transfer verdicts' cpu-bound


def test_hosts_on_one_kernel_are_named_once_as_the_machine() -> None:
    run = iperf3_run(core=100.0, boot_ids=("same", "same"))
    run["tests"][0]["resources"]["pc"]["cpu_busiest_core_percent_median"] = 100.0
    run["tests"][0]["repetitions"][0]["cpu_server_percent"] = 98.0  # nas's iperf3 was busiest
    (found,) = cpu.findings(run)
    assert found["host"] == "nas"
    assert "(the whole machine's core: nas shares one kernel with pc)" in found["text"]


def test_a_transfer_s_saturated_core_is_a_single_threaded_daemon() -> None:
    run = iperf3_run()
    run["tests"][0].update(kind="transfer", params={"server": "nas", "client": "pc"})
    (found,) = cpu.findings(run)
    assert found["text"] == (
        "one core of nas at 100 % (average 27 % of 4) — a single-threaded daemon or client "
        "(smbd serves a connection with one process)."
    )
