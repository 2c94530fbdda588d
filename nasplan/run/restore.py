"""``nasplan restore RUN_DIR``: put a kept run's network back, record it in run.json and report.

A use case beside ``apply``: it reads the run's snapshot file and inventory, asks
``network.restore`` to put each host back, then rewrites run.json and re-renders report.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nasplan.errors import InputError, NasplanError
from nasplan.hosts import lock as hostlock
from nasplan.input.inventory import Host, Inventory, load_inventory, login_of
from nasplan.input.network import NicChange
from nasplan.network.backends import by_mechanism
from nasplan.network.restore import SNAPSHOT_FILE, Restored, load_snapshots, restore_host
from nasplan.network.state import NicState
from nasplan.network.tools import NetTools
from nasplan.output import HeldRunDir
from nasplan.progress import Progress
from nasplan.remote.runner import Runner
from nasplan.report.render import write_report
from nasplan.results import load_run, save_run
from nasplan.sections import split_sections


def _inventory_of(run: dict[str, Any], snapshots: dict[str, Any]) -> Inventory:
    """The run's inventory as it was read: every ``-i`` and the reader run.json names, else the
    one file of the snapshot (or of run.json)."""
    one = snapshots.get("inventory_file") or run["inventory_file"]
    files = run.get("inventory_files") or [one]
    plan_file = run.get("plan_file")
    return load_inventory(
        tuple(Path(f) for f in files),
        run.get("inventory_reader", "nasplan"),
        Path(plan_file).resolve().parent if plan_file else None,  # its group_vars, as the run's
        login_of(run),  # its -u / --private-key
    )


def restore(
    run_dir: Path, progress: Progress, connector: Callable[[Host], Runner]
) -> dict[str, Restored]:
    """``nasplan restore RUN_DIR``, the run directory held meanwhile (RunDirBusy while a run or
    its ``--resume`` writes into it): ``restore_run``, then ``record_restore``."""
    _check_run_dir(run_dir)
    held = HeldRunDir(run_dir)
    try:
        outcomes = restore_run(run_dir, progress, connector)
        record_restore(run_dir, outcomes)
    finally:
        held.release()
    return outcomes


def _check_run_dir(run_dir: Path) -> None:
    if not run_dir.is_dir():
        what = "not a directory" if run_dir.exists() else "no such directory"
        raise InputError(f"{run_dir}: {what} (expected a run directory: runs/<time>-<plan>)")
    if not (run_dir / "run.json").exists():
        raise InputError(f"{run_dir}: not a run directory (no run.json in it)")


def restore_run(
    run_dir: Path, progress: Progress, connector: Callable[[Host], Runner]
) -> dict[str, Restored]:
    """Put every host of the run's snapshot back and verify it: host -> how it came back; and
    on every host the run reached, remove what it left there if it was killed (its lock, what
    the lock lists), saying so, or that nothing was left.

    InputError when ``run_dir`` is not a run directory.
    """
    _check_run_dir(run_dir)
    run = load_run(run_dir)
    snapshot = run_dir / SNAPSHOT_FILE
    data = load_snapshots(run_dir) if snapshot.exists() or snapshot.is_symlink() else {}
    inventory = _inventory_of(run, data)
    outcomes = {
        name: _restore_host(name, saved, data, inventory, run, run_dir, connector, progress)
        for name, saved in (data.get("hosts") or {}).items()
    }
    reached = [n for n, h in sorted((run.get("hosts") or {}).items()) if (h or {}).get("facts")]
    for name in reached:
        if name not in outcomes and name in inventory.hosts:
            _leftovers_only(
                inventory.hosts[name],
                connector,
                run_dir.name,
                progress,
                _ending(run),
                _created(run, name),
            )
    return outcomes


def _restore_host(
    name: str,
    saved: Mapping[str, Any],
    data: Mapping[str, Any],
    inventory: Inventory,
    run: Mapping[str, Any],
    run_dir: Path,
    connector: Callable[[Host], Runner],
    progress: Progress,
) -> Restored:
    """Host ``name`` put back as its snapshot (``saved``) says, and verified; what the run
    left there removed."""
    host = inventory.hosts.get(name)
    if host is None:
        return Restored("failed", error=f"{name} is not in {inventory.path}")
    if data.get("known_hosts"):
        host = dataclasses.replace(host, known_hosts=Path(data["known_hosts"]))
    changes = [
        NicChange(c["nic"], c["mtu_bytes"], tuple(c["add_addresses"])) for c in saved["changes"]
    ]
    before = {n: NicState.from_dict(s) for n, s in saved["before"].items()}
    progress.host(name, "restoring the network snapshot")
    outcome = restore_host(
        None,
        lambda host=host: connector(host),  # type: ignore[misc]
        saved["revert_dir"],
        changes,
        before,
        deadline=time.monotonic() + 15,
        backend=by_mechanism(saved.get("mechanism"), NetTools.from_dict(saved.get("net_tools"))),
    )
    if outcome.runner is not None:
        _remove_stale_lock(outcome.runner, run_dir.name, name, progress, _ending(run))
        _remove_created(outcome.runner, _created(run, name), name, progress)
    if outcome.runner is not None:
        with contextlib.suppress(Exception):
            outcome.runner.close()
    outcome.runner = None
    progress.host(name, outcome.status + (f": {outcome.error}" if outcome.error else ""))
    return outcome


def _ending(run: Mapping[str, Any]) -> str:
    """How the run ended, as restore's lines name it: ``killed run`` (it never wrote its end),
    else ``run`` (it ended, a host's lock left behind: one lost meanwhile)."""
    return "killed run" if run.get("finished_at") is None else "run"


def _leftovers_only(
    host: Host,
    connector: Callable[[Host], Runner],
    run_name: str,
    progress: Progress,
    ending: str = "killed run",
    created: list[str] | None = None,
) -> None:
    """What a killed run left on ``host`` (no network setting of its own to put back)."""
    try:
        runner = connector(host)
    except NasplanError as exc:
        progress.host(host.name, f"not reached ({exc}): what the run left there, if anything, "
                      "is removed by the next run on it")  # fmt: skip
        return
    try:
        _remove_stale_lock(runner, run_name, host.name, progress, ending)
        _remove_created(runner, created or [], host.name, progress)
    finally:
        with contextlib.suppress(Exception):
            runner.close()


def _remove_stale_lock(
    runner: Runner, run_name: str, name: str, progress: Progress, ending: str = "killed run"
) -> None:
    """What the run left on the host: its lock and what it lists (best effort, said). restore
    holds the run directory, which the run holds while it lives (``HeldRunDir``): the run is
    gone, and any lock of its own is removed at once, its lease run out or not (one held by
    a process of this machine that is still alive is left to its lease)."""
    try:
        holder = hostlock.parse_holder(
            runner.run_script(hostlock.owner_script(), timeout_s=30).stdout
        )
        ours = holder.fields.get("run_id", "").startswith(f"{run_name}-")
        alive_here = holder.fields.get("control") == socket.gethostname() and not (
            holder.dead_here()
        )
        script = hostlock.release_stale_script(run_name, force=ours and not alive_here)
        result = runner.run_script(script, timeout_s=30)
    except Exception:  # the host went away again: the next run takes the lock over
        return
    removed = split_sections(result.stdout).get("removed")
    if removed is not None:
        listed = ", ".join(line for line in removed.splitlines() if line.strip())
        progress.host(name, f"removed the {ending}'s lock" + (f" and {listed}" if listed else ""))
    elif not ours:
        progress.host(name, "nothing left of this run")


def _created(run: Mapping[str, Any], name: str) -> list[str]:
    """What run.json says the run's tests made on host ``name`` (recorded before each was)."""
    found: list[str] = []
    for test in run.get("tests") or []:
        for path in ((test or {}).get("created") or {}).get(name) or []:
            if isinstance(path, str) and path not in found:
                found.append(path)
    return found


def _remove_created(runner: Runner, paths: list[str], name: str, progress: Progress) -> None:
    """What run.json lists and is still there (a lock lost with a rebooted host's /tmp)."""
    if not paths:
        return
    try:
        result = runner.run_script(hostlock.remove_listed_script(paths), timeout_s=60)
    except Exception:  # the host went away again
        return
    removed = split_sections(result.stdout).get("removed") or ""
    listed = ", ".join(line for line in removed.splitlines() if line.strip())
    if listed:
        progress.host(name, f"removed what run.json lists of the run there: {listed}")


def record_restore(run_dir: Path, outcomes: Mapping[str, Restored]) -> None:
    """Write what ``nasplan restore`` did into the run's run.json and re-render its report."""
    run = load_run(run_dir)
    network = run.get("network")
    if not network:
        return
    for name, outcome in outcomes.items():
        entry = network["hosts"].get(name)
        if entry is None:
            continue
        entry["status"] = outcome.status
        entry["restored"] = outcome.status == "restored"
        entry["error"] = outcome.error
        entry["after"] = {n: s.to_dict() for n, s in sorted(outcome.after.items())}
    network["kept"] = any(h["status"] == "kept" for h in network["hosts"].values())
    failed = [n for n, o in outcomes.items() if o.status == "failed"]
    network["warnings"].append(
        "nasplan restore: " + (f"failed on {', '.join(failed)}" if failed else "hosts restored")
    )
    save_run(run_dir, run)
    write_report(run_dir)
