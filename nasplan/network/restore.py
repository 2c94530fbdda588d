"""Put a host's NICs back to their snapshot and prove it; the snapshot file of a run."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nasplan.errors import InputError
from nasplan.input.localfile import MAX_RUN_JSON_BYTES, read_json_bounded
from nasplan.input.network import NicChange
from nasplan.network.backends import NetworkBackend, SetsidTimer
from nasplan.network.state import NicState, all_differences
from nasplan.network.tools import NetTools, parse_state_output
from nasplan.output import redactor_of, write_text
from nasplan.sections import split_sections

if TYPE_CHECKING:
    from nasplan.remote.runner import Runner

SNAPSHOT_FILE = "network/snapshots.json"
SNAPSHOT_VERSION = 1
RETRY_PAUSE_S = 1.0


@dataclass
class Restored:
    """How a host came back: ``restored``, ``reverted-by-host`` or ``failed`` (with ``error``)."""

    status: str
    after: dict[str, NicState] = field(default_factory=dict)
    error: str | None = None
    runner: Runner | None = None
    # False when the host could not be reached at all (nothing is known of its state now)
    reached: bool = True


def _run_restore(
    runner: Runner,
    directory: str,
    changes: Sequence[NicChange],
    before: Mapping[str, NicState],
    force: bool,
    backend: NetworkBackend,
) -> tuple[str, dict[str, NicState], list[str]]:
    nics = [c.nic for c in changes]
    script = backend.restore_script(directory, changes, before, force=force)
    result = runner.run_script(script, sudo=True, timeout_s=60)
    outcome = split_sections(result.stdout).get("outcome", "")
    after = parse_state_output(result.stdout)
    if not outcome:
        return "failed", after, [f"restore script failed (exit {result.exited}): {result.stderr}"]
    return outcome, after, all_differences(before, after, nics)


def restore_host(
    runner: Runner | None,
    reconnect: Callable[[], Runner],
    directory: str,
    changes: Sequence[NicChange],
    before: Mapping[str, NicState],
    *,
    deadline: float,
    backend: NetworkBackend | None = None,
) -> Restored:
    """Disarm and restore (or find the host's own revert done), read back, compare to ``before``.

    Retries with fresh connections until ``deadline`` (``time.monotonic()``) when the host
    cannot be reached; ``runner`` of the result is the connection that worked.
    """
    last_error = "no connection"
    backend = backend or SetsidTimer()
    while True:
        try:
            if runner is None:
                runner = reconnect()
            outcome, after, diffs = _run_restore(runner, directory, changes, before, False, backend)
            if outcome == "reverted-by-host" and diffs:
                outcome, after, diffs = _run_restore(
                    runner, directory, changes, before, True, backend
                )
            if outcome == "failed" or diffs:
                return Restored("failed", after, "; ".join(diffs) or outcome, runner)
            return Restored(outcome, after, None, runner)
        except Exception as exc:  # SSH loss: paramiko, OS or nasplan errors
            last_error = str(exc) or type(exc).__name__
            runner = None
        if time.monotonic() >= deadline:
            return Restored(
                "failed", {}, f"host unreachable, not restored: {last_error}", reached=False
            )
        time.sleep(RETRY_PAUSE_S)


def save_snapshots(
    run_dir: Path,
    inventory_file: str,
    known_hosts: str | None,
    hosts: Mapping[str, tuple[str, Sequence[NicChange], Mapping[str, NicState]]],
    mechanisms: Mapping[str, str] | None = None,
    net_tools: Mapping[str, NetTools] | None = None,
) -> Path:
    """Write ``network/snapshots.json`` (host -> revert dir, mechanism, tools, changes, before)."""
    path = run_dir / SNAPSHOT_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {
        "schema_version": SNAPSHOT_VERSION,
        "inventory_file": inventory_file,
        "known_hosts": known_hosts,
        "hosts": {
            name: {
                "revert_dir": directory,
                "mechanism": (mechanisms or {}).get(name),
                "net_tools": (net_tools or {}).get(name, NetTools()).to_dict(),
                "changes": [dataclasses.asdict(c) for c in changes],
                "before": {n: s.to_dict() for n, s in before.items()},
            }
            for name, (directory, changes, before) in sorted(hosts.items())
        },
    }
    return write_text(path, json.dumps(data, indent=2) + "\n", redactor_of(()))


def load_snapshots(run_dir: Path) -> dict[str, Any]:
    """Read ``network/snapshots.json`` of a run directory; InputError when missing or unreadable."""
    path = run_dir / SNAPSHOT_FILE
    if not path.exists() and not path.is_symlink():
        raise InputError(f"{path}: not found (the run changed no network settings)")
    data = read_json_bounded(path, MAX_RUN_JSON_BYTES, "network snapshot file")
    if not isinstance(data, dict):
        raise InputError(f"{path}: expected a JSON object")
    if data.get("schema_version") != SNAPSHOT_VERSION:
        raise InputError(f"{path}: unknown snapshot version {data.get('schema_version')!r}")
    return data
