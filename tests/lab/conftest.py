"""Lab tests: root only (skipped elsewhere, never in CI); the example lab and custom labs."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

from nasplan import lab
from nasplan.lab import LabState

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_LAB = ROOT / "plans/examples/lab.yaml"
HERE = Path(__file__).resolve().parent


def require_root() -> None:
    """Skip without root; in CI (``CI`` set) fail instead: lab tests must never be skipped there."""
    if os.geteuid() == 0:
        return
    if os.environ.get("CI"):
        pytest.fail("lab tests need root (network namespaces) and CI must run them", pytrace=False)
    pytest.skip("lab tests need root (network namespaces)")


# Files whose tests mostly wait for a host's timer (a lease running out, an outage, a host's own
# revert) rather than measure: marked ``lab_timers``, so that `make test` (scripts/test-lab.sh)
# runs them in a second pytest beside the others. Each file's lab has a name and an address
# block of its own, so the two runs' labs never meet.
TIMER_BOUND = {
    "test_faults.py",
    "test_fault_recovery.py",
    "test_truenas_network.py",
    "test_detached_timer.py",
}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark each lab test ``lab``, and ``lab_timers`` those of TIMER_BOUND."""
    path = Path(str(item.fspath)).resolve()
    if HERE in path.parents:
        item.add_marker(pytest.mark.lab)
        if path.name in TIMER_BOUND:
            item.add_marker(pytest.mark.lab_timers)


@pytest.fixture(autouse=True)
def _root_only() -> None:
    require_root()


@pytest.fixture(scope="session")
def example_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabState]:
    """plans/examples/lab.yaml (renamed, readdressed) brought up in a temporary state dir."""
    require_root()
    # The example lab under its own name and addresses, so that a lab a user left up with
    # `make demo` (plans/examples/lab.yaml itself) does not collide with the tests.
    spec = yaml.safe_load(EXAMPLE_LAB.read_text())
    spec["name"] = "nas-lab-test"
    spec["lan"]["prefix"] = "198.18.10.0/24"
    for end, address in zip(("a", "b"), ("198.18.11.1/30", "198.18.11.2/30"), strict=True):
        spec["links"][0][end]["address"] = address
    workdir = tmp_path_factory.mktemp("example-lab")
    lab_file = workdir / "lab.yaml"
    lab_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    state_dir = workdir / "state"
    try:
        yield lab.up(lab_file, state_dir)
    finally:
        lab.down(lab_file, state_dir)


@pytest.fixture
def make_lab(tmp_path: Path) -> Iterator[Callable[[dict[str, Any]], LabState]]:
    """Bring up a lab described by a dict (give it its own name and LAN prefix, e.g.
    198.18.20.0/24, so it does not collide with ``example_lab``); all are torn down after the test.
    """
    made: list[tuple[Path, Path]] = []

    def make(spec: dict[str, Any]) -> LabState:
        lab_file = tmp_path / f"{spec['name']}.yaml"
        lab_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        state_dir = tmp_path / "state" / spec["name"]
        made.append((lab_file, state_dir))
        return lab.up(lab_file, state_dir)

    try:
        yield make
    finally:
        for lab_file, state_dir in reversed(made):
            lab.down(lab_file, state_dir)


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """A fresh directory on the machine's disk that every lab host sees at the same path (under
    /var/tmp: a lab host's /tmp is its own), removed after the test."""
    with tempfile.TemporaryDirectory(prefix="lab-shared-", dir="/var/tmp") as path:
        yield Path(path)


LabContext = Callable[[dict[str, Any]], AbstractContextManager[LabState]]


@pytest.fixture(scope="session")
def running_lab(tmp_path_factory: pytest.TempPathFactory) -> LabContext:
    """``with running_lab(spec) as state:`` a lab from a dict, always torn down; for a module-
    scoped fixture shared by a file's tests (give it its own name and address block)."""

    @contextmanager
    def run(spec: dict[str, Any]) -> Iterator[LabState]:
        require_root()
        workdir = tmp_path_factory.mktemp(spec["name"])
        lab_file = workdir / "lab.yaml"
        lab_file.write_text(yaml.safe_dump(spec, sort_keys=False))
        try:
            yield lab.up(lab_file, workdir / "state")
        finally:
            lab.down(lab_file, workdir / "state")

    return run
