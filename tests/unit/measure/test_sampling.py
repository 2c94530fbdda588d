"""A test's samplers through the runner seam: own round trips handed to the run's tasks, one
host's riding in the test's own scripts, and what each saw once closed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from nasplan.measure import sampler
from nasplan.measure.sampling import Sampling
from nasplan.remote.runner import Result
from nasplan.run.overlap import Overlap

SAMPLES = (
    Path(__file__).resolve().parents[2] / "fixtures" / "sampler" / "idle-dash.txt"
).read_text()


def host(runner: Any, ready: bool = True) -> Any:
    """A HostSession as Sampling sees one: ready or not, and its runner."""
    return SimpleNamespace(ready=ready, runner=runner)


def own_round_trips(runner: Any) -> Any:
    """``runner`` answering a sampler's start (PID 4242) and stop (a real capture) of its own."""
    stop = Result("stop", SAMPLES, "", 0)
    return runner.expect("nasplan-sampler", "4242\n").expect('rm -f "$flag"', reply=stop)


def test_a_riding_sampler_goes_in_the_tests_scripts_and_the_others_in_their_own(
    fake_runner: Callable[[str], Any],
) -> None:
    nas, ws = fake_runner("nas"), own_round_trips(fake_runner("ws"))
    sessions = {"nas": host(nas), "ws": host(ws), "down": host(None, ready=False)}
    sampled = Sampling(sessions, ["nas", "ws", "down"], "tok", Overlap.serial(), riding="nas")

    sampled.start()
    sampled.wait_started()
    assert len(ws.texts("nasplan-sampler")) == 1 and nas.calls == []
    assert sampled.working() == {"ws"}  # the riding one not asked yet
    start = sampled.start_text()
    assert "nasplan-sample-tok-nas" in start and sampled.start_text() == ""  # once
    sampled.started("@@nasplan:sampler-started@@\n77\n")
    assert sampled.stop_text() == ""  # not before the last measurement ended
    sampled.stop()
    assert "pid=77" in sampled.stop_text()
    sampled.stopped(f"server log\n@@nasplan:sampler@@\n{SAMPLES}")
    assert sampled.working() == set()  # both stopped: a teardown's close leaves them alone

    resources = sampled.close()
    assert set(resources) == {"nas", "ws"}  # a host that is not ready has no sampler
    assert resources["nas"] == resources["ws"] and resources["ws"]["samples"] > 1
    assert nas.calls == []  # the riding sampler never had a round trip of its own


def test_a_riding_sampler_its_test_never_stopped_is_stopped_on_its_own_at_close(
    fake_runner: Callable[[str], Any],
) -> None:
    nas = fake_runner("nas").expect('rm -f "$flag"', SAMPLES)
    sampled = Sampling({"nas": host(nas)}, ["nas"], "tok", Overlap.serial(), riding="nas")
    sampled.start()
    sampled.start_text()
    sampled.started("@@nasplan:sampler-started@@\n77\n")  # then the test failed: no stop came
    assert sampled.working() == {"nas"}  # close still stops it there

    assert sampled.close()["nas"]["samples"] > 1
    assert "pid=77" in nas.texts()[0]


def test_a_sampler_that_did_not_start_is_none(fake_runner: Callable[[str], Any]) -> None:
    nas, ws = fake_runner("nas"), fake_runner("ws").expect("nasplan-sampler", exited=1)
    sampled = Sampling({"nas": host(nas), "ws": host(ws)}, ["nas", "ws"], "t", Overlap.serial(),
                       riding="nas")  # fmt: skip
    sampled.start()
    sampled.start_text()
    sampled.started("sh: cannot create /tmp/x: Read-only file system\n")

    assert sampled.close() == {"nas": None, "ws": None}
    assert nas.calls == [] and len(ws.calls) == 1  # nothing to stop on either


def test_the_clients_sampler_rides_in_its_scripts_from_the_first_to_the_last(
    fake_runner: Callable[[str], Any],
) -> None:
    nas, ws = fake_runner("nas"), fake_runner("ws")
    sessions = {"nas": host(nas), "ws": host(ws)}
    sampled = Sampling(sessions, ["nas", "ws"], "tok", Overlap.serial(), riding="nas", client="ws")
    sampled.start()
    sampled.wait_started()

    first = sampled.client_ride(last=False)
    assert "nasplan-sample-tok-ws" in first.before and first.stop == ""
    sampled.client_rode("{}\n@@nasplan:sampler-started@@\n88\n")
    middle = sampled.client_ride(last=False)
    assert middle == sampler.NO_RIDE
    last = sampled.client_ride(last=True)
    assert last.before == "" and "pid=88" in last.stop
    sampled.client_rode(f"{{}}\n@@nasplan:sampler@@\n{SAMPLES}")

    resources = sampled.close()
    assert resources["ws"] is not None and resources["ws"]["samples"] > 1
    assert ws.calls == [] and nas.calls == []  # neither had a round trip of its own


def test_one_host_at_both_ends_rides_in_the_servers_scripts(
    fake_runner: Callable[[str], Any],
) -> None:
    nas = fake_runner("nas")
    sessions = {"nas": host(nas)}
    sampled = Sampling(sessions, ["nas"], "t", Overlap.serial(), riding="nas", client="nas")
    assert sampled.client_ride(last=True) == sampler.NO_RIDE
    assert "nasplan-sample-t-nas" in sampled.start_text()
