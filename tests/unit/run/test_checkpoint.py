"""run.json during a run: ``RunSaver``'s cached texts are ``save_run``'s bytes at every step,
and ``HostsPart`` is rebuilt exactly when a host changes in what run.json shows."""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_results import sample_run

from nasplan.errors import RunDirError
from nasplan.facts.gather import parse_facts
from nasplan.hosts.session import HostSession
from nasplan.input.inventory import Host
from nasplan.platforms.generic import GenericLinux
from nasplan.results import load_run, save_run
from nasplan.run.checkpoint import HostsPart, RunSaver

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "facts"


def test_run_saver_writes_save_runs_bytes_at_every_step_of_a_growing_run(tmp_path: Path) -> None:
    secret = 's3cr"et\\pw'
    finished = sample_run()
    tests = finished["tests"]
    run = {**finished, "tests": [], "status": "interrupted", "finished_at": None}
    saver, reference = RunSaver(tmp_path / "a"), tmp_path / "b"
    for path in (tmp_path / "a", reference):
        path.mkdir()
    steps: list[tuple[dict[str, Any], list[str]]] = [(copy.deepcopy(run), [])]
    for index, test in enumerate(tests):
        running = copy.deepcopy(test)
        running["repetitions"] = running["repetitions"][:1]
        steps.append(({**run, "tests": [*copy.deepcopy(tests[:index]), running]}, []))
        steps.append(({**run, "tests": copy.deepcopy(tests[: index + 1])}, []))
    # a secret learned mid-run (an SMB password) shows up in a host's actions: masked from then
    learned = copy.deepcopy(steps[-1][0])
    learned["hosts"]["nas"]["actions"].append(f"mounted with {secret}")
    learned["warnings"] = [float("nan"), Path("odd/value"), []]
    steps += [(learned, [secret]), (copy.deepcopy(finished), [secret])]
    for snapshot, secrets in steps:
        saver.save(snapshot, secrets)
        save_run(reference, snapshot, secrets)
        assert (tmp_path / "a" / "run.json").read_bytes() == (reference / "run.json").read_bytes()
    assert "s3cr" not in (tmp_path / "a" / "run.json").read_text()
    assert load_run(tmp_path / "a") == load_run(reference)


def test_run_saver_reuses_a_frozen_part_only_while_it_is_the_same_object(tmp_path: Path) -> None:
    saver, reference = RunSaver(tmp_path / "a", frozen=("hosts",)), tmp_path / "b"
    for path in (tmp_path / "a", reference):
        path.mkdir()
    run = sample_run()
    hosts = run["hosts"]
    changed = copy.deepcopy(hosts)
    changed["nas"]["error"] = "nas: host stopped answering"
    for snapshot in ({**run, "hosts": hosts}, {**run, "hosts": hosts}, {**run, "hosts": changed}):
        saver.save(snapshot)
        save_run(reference, snapshot)
        assert (tmp_path / "a" / "run.json").read_bytes() == (reference / "run.json").read_bytes()
    assert load_run(tmp_path / "a")["hosts"]["nas"]["error"] == "nas: host stopped answering"


def test_hosts_part_is_rebuilt_exactly_when_a_host_changes_in_what_run_json_shows(
    fake_runner: Callable[[str], Any],
) -> None:
    facts = parse_facts((FIXTURES / "debian12-root.txt").read_text())
    sessions = {
        name: HostSession(Host(name, f"198.18.0.{i}"), fake_runner(name), facts, GenericLinux())
        for i, name in enumerate(("nas", "ws"), start=10)
    }
    part = HostsPart(sessions)
    first = part.now()
    assert first == {name: s.to_dict() for name, s in sessions.items()}
    assert part.now() is first  # nothing changed: the same dict, its text reused
    sessions["ws"].warnings.append("not in hosts")  # warnings live elsewhere in run.json
    assert part.now() is first
    changes: list[Callable[[HostSession], None]] = [
        lambda s: s.mark_lost("ws: host stopped answering"),
        lambda s: s.actions.append("apt-get install -y iperf3"),
        lambda s: s.tools.update(iperf3="/usr/bin/iperf3"),
        lambda s: setattr(s, "facts", dataclasses.replace(facts, hostname="renamed")),
    ]
    before = first
    for change in changes:
        change(sessions["ws"])
        now = part.now()
        assert now is not before and now["ws"] == sessions["ws"].to_dict()
        assert part.now() is now
        before = now


def _full_while(held: Path) -> Callable[..., Path]:
    """``write_text`` on a disk that is full while ``held`` (the run's reserve) exists."""
    from nasplan import output

    def write(path: Path, *args: Any, **kwargs: Any) -> Path:
        if held.exists():
            raise RunDirError(f"{path}: cannot write: the disk is full")
        return output.write_text(path, *args, **kwargs)

    return write


def test_the_runs_last_save_goes_into_the_space_its_checkpoints_held(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = {**sample_run(), "status": "interrupted", "finished_at": None}
    saver = RunSaver(tmp_path)
    saver.save(run, durable=False)
    reserve = tmp_path / ".run.json.reserve"
    assert reserve.stat().st_size >= 1 << 20  # held from the first checkpoint on

    monkeypatch.setattr("nasplan.run.checkpoint.write_text", _full_while(reserve))
    final = {**run, "status": "failed", "finished_at": "2026-12-01T10:00:00Z"}
    saver.save(final)

    assert load_run(tmp_path)["finished_at"] == "2026-12-01T10:00:00Z"
    assert not reserve.exists()  # let go of, not left in the run directory


def test_a_last_save_that_does_not_fit_says_what_run_json_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = {**sample_run(), "status": "interrupted", "finished_at": None}
    run["network"] = {"hosts": {"nas": {"status": "changed"}, "ws": {"status": "changed"}}}
    saver = RunSaver(tmp_path)
    saver.save(run, durable=False)
    monkeypatch.setattr(
        "nasplan.run.checkpoint.write_text",
        _full_while(tmp_path),  # full, whatever is let go
    )
    final = copy.deepcopy(run)
    final.update(status="failed", finished_at="2026-12-01T10:00:00Z")
    final["network"]["hosts"] = {"nas": {"status": "restored"}, "ws": {"status": "restored"}}

    with pytest.raises(RunDirError):
        saver.save(final)

    assert saver.lacking(final) == (
        "finished_at 2026-12-01T10:00:00Z (it says None); status failed (it says interrupted); "
        "the network put back: nas restored, ws restored (it says changed)"
    )
    assert load_run(tmp_path, check=False)["status"] == "interrupted"
