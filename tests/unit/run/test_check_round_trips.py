"""``apply --check`` asks each host once, however many tests look at it: the looks a plan
names (a disk test's directory) ride in the facts' round trip; those that need another host's
facts (a transfer's target) go in one script per host after them."""

from __future__ import annotations

import io
import subprocess
from collections.abc import Callable
from pathlib import Path

from nasplan.facts.gather import split_also
from nasplan.input.inventory import Host
from nasplan.input.plan import load_plan
from nasplan.progress import PlainProgress
from nasplan.remote.runner import Result
from nasplan.run.check import check
from nasplan.run.overlap import Overlap
from tests.unit.conftest import FakeRunner

ROOT = Path(__file__).resolve().parents[3]
FACTS = (ROOT / "tests" / "fixtures" / "facts" / "debian12-root.txt").read_text()
INVENTORY = """
vars: {user: root, framing: tc}
hosts:
  nas: {address: 198.18.0.10}
  ws: {address: 198.18.0.11}
"""


def as_the_host(text: str) -> Result:
    """``text`` run by this machine's sh as the host would run it; a facts script's own part
    answered with captured Debian facts (its ``also`` part, the looks, as it ran here)."""
    done = subprocess.run(["sh", "-c", text], capture_output=True, text=True, check=False)
    ran = Result("sh", done.stdout, done.stderr, done.returncode)
    if "nasplan_section" not in text:
        return ran
    _, also = split_also(ran)
    if also is None:  # nothing more than the facts
        return Result("facts", FACTS, "", 0)
    stdout = f"{FACTS}\n@@nasplan:also@@\n{also.stdout}\n@@nasplan:also-exit@@\n{also.exited}\n"
    return Result("facts", stdout, "", 0)


def checked(tmp_path: Path, tests: str, runners: dict[str, FakeRunner]) -> tuple[str, int]:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(f"name: demo\ninventory: inventory.yaml\ntests:\n{tests}")
    plan = load_plan(plan_path)

    def connector(host: Host) -> FakeRunner:
        return runners[host.name]

    stream = io.StringIO()
    outcome = check(plan, PlainProgress(stream), connector, {}, Overlap.serial())
    return stream.getvalue(), outcome.exit_code


def test_check_sends_one_command_per_host_for_many_disk_tests(
    tmp_path: Path, fake_runner: Callable[[str], FakeRunner]
) -> None:
    paths = [tmp_path / f"volume{n}" for n in range(4)]
    for path in paths[:3]:
        path.mkdir()
    tests = "".join(
        f'  - {{id: {host}-d{n}, kind: disk, host: {host}, path: "{path}", repetitions: 1}}\n'
        for n, path in enumerate(paths)
        for host in ("nas", "ws")
    )
    runners = {name: fake_runner(name) for name in ("nas", "ws")}
    for runner in runners.values():  # the facts, and nothing else: any other command fails
        runner.expect("nasplan_section", reply=as_the_host)
    said, code = checked(tmp_path, tests, runners)
    for name, runner in runners.items():
        assert len(runner.calls) == 1, (name, [c.text[:80] for c in runner.calls])
        assert runner.calls[0].text.count("@@nasplan:probe-") == 3 * len(paths)
    # the same lines as a look of its own said
    assert (
        f"nas: the disk test's path {paths[0]} (a writable directory): there (for nas-d0)" in said
    )
    assert f"problem: the disk test's path on ws: {paths[3]} does not exist" in said
    assert code == 1


def test_check_sends_two_commands_per_host_for_transfers_to_another_host(
    tmp_path: Path, fake_runner: Callable[[str], FakeRunner]
) -> None:
    there = tmp_path / "share"
    there.mkdir()
    tests = "".join(
        f"  - {{id: r{n}, kind: transfer, method: rsync, server: nas, client: ws, "
        f'path: "{there}/{n}", repetitions: 1}}\n'
        f'  - {{id: d{n}, kind: disk, host: nas, path: "{there}", repetitions: 1}}\n'
        for n in range(3)
    )
    runners = {name: fake_runner(name) for name in ("nas", "ws")}
    runners["nas"].expect("nasplan_section", reply=as_the_host)
    # the rsync directories need the NAS's facts: one script after them, for all three
    runners["nas"].expect("@@nasplan:probe-2@@", reply=as_the_host)
    runners["ws"].expect("nasplan_section", reply=as_the_host)
    # the client's free space for the copies is read with the NAS's facts in (what the test
    # writes depends on the method the NAS's facts settle): one script after them, for all three
    runners["ws"].expect("@@nasplan:probe-0@@", reply=as_the_host)
    said, code = checked(tmp_path, tests, runners)
    assert [len(r.calls) for r in runners.values()] == [2, 2]
    assert f"problem: the rsync directory on nas: {there}/2 does not exist" in said
    assert f"nas: the disk test's path {there} (a writable directory): there" in said
    assert code == 1
