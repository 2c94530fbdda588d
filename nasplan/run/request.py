"""What one ``nasplan apply`` is asked to do, as a value (``RunRequest``), built by one function
(``request``) that the command line, ``--check`` and the bench all call.

It reads the plan (the run's own plan and inventory for ``--resume RUN_DIR``, checked against
what that run ran), cuts it to ``--limit`` / ``--tests``, and gathers the passwords the run will
need, refusing before anything connects what would make the run fail later (a password variable
that is not set). What the console should say first comes with it (``notes``).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nasplan.errors import InputError
from nasplan.input.extra_vars import extra_vars as parse_extra_vars
from nasplan.input.inventory import InventoryChoice, Login, login_of
from nasplan.input.plan import Plan, lab_inventory, load_plan
from nasplan.run.planned import plan_hosts, unset_variables
from nasplan.run.resume import Previous


@dataclass(frozen=True)
class RunRequest:
    """One apply's input: the plan (after ``--limit`` / ``--tests``), the run it resumes,
    the sudo passwords (host -> password), whether network changes stay (``keep``), where
    the run directory goes (``out``), and what to say before it starts (``notes``)."""

    plan: Plan
    previous: Previous | None = None
    become_passwords: Mapping[str, str] = field(default_factory=dict)
    keep: bool = False
    out: Path | None = None
    notes: tuple[str, ...] = ()

    @property
    def nothing_to_do(self) -> bool:
        """A resumed run whose every repetition ended ok."""
        return self.previous is not None and self.previous.nothing_to_do(self.plan)


def request(
    plan_file: Path | None,
    inventory: InventoryChoice | Path | None = None,
    extra_vars: Sequence[str] = (),
    *,
    resume: Path | None = None,
    out: Path | None = None,
    limit: Sequence[str] = (),
    tests: Sequence[str] = (),
    keep: bool = False,
    check: bool = False,
    ask_password: Callable[[], str] | None = None,
    environ: Mapping[str, str] = os.environ,
) -> RunRequest:
    """The request of ``apply PLAN_FILE`` with these options; InputError (exit 2, nothing
    touched) for anything the run would refuse. ``ask_password``: ``-K``, asked once (not for
    ``--check``, which runs nothing as root). ``inventory``: every ``-i`` and the reader (one
    path: that inventory; None: the plan's)."""
    if not isinstance(inventory, InventoryChoice):
        inventory = InventoryChoice((inventory,) if inventory is not None else ())
    if resume is not None:
        plan_file, inventory = _resumed_files(resume, plan_file, inventory, out, check)
    elif plan_file is None:
        raise InputError("apply needs PLAN_FILE (or --resume RUN_DIR)")
    _refuse_without_lab(plan_file, inventory)
    plan = load_plan(
        plan_file, inventory.paths, parse_extra_vars(extra_vars), inventory.reader, inventory.login
    )
    previous = None
    if resume is not None:
        from nasplan.run.resume import previous_run

        previous = previous_run(resume, plan)
    notes = [f"warning: {warning}" for warning in plan.inventory.warnings]
    if limit or tests:
        from nasplan.input.subset import choose

        plan, subset = choose(plan, limit, tests)
        notes += [f"warning: {note}" for note in subset.notes]
    passwords: dict[str, str] = {}
    if not check:
        from nasplan.remote import become

        # what --check calls problems: refused before any connection, not after the tests
        missing = unset_variables(plan, environ, sudo_asked=ask_password is not None)
        if missing:
            raise InputError(missing)
        asked = ask_password() if ask_password is not None else None
        passwords = become.passwords_for(plan_hosts(plan), environ, asked)
    return RunRequest(plan, previous, passwords, keep, out, tuple(notes))


def _resumed_files(
    run_dir: Path, plan_file: Path | None, inventory: InventoryChoice, out: Path | None, check: bool
) -> tuple[Path, InventoryChoice]:
    """The plan and inventory of ``--resume RUN_DIR``: those given, else the run's own (its
    every ``-i`` and reader)."""
    from nasplan.results import load_run

    if out is not None or check:
        raise InputError(f"--resume goes without {'--out' if out is not None else '--check'}")
    if not (run_dir / "run.json").is_file():
        raise InputError(f"{run_dir}: not a run directory (no run.json in it)")
    if plan_file is not None:
        return plan_file, inventory
    run = load_run(run_dir)
    if inventory.login == Login():  # the run's -u / --private-key, unless given again
        inventory = dataclasses.replace(inventory, login=login_of(run))
    if inventory.paths:
        return Path(run["plan_file"]), inventory
    files = run.get("inventory_files") or [run["inventory_file"]]
    reader = inventory.reader or run.get("inventory_reader")
    choice = InventoryChoice(tuple(Path(f) for f in files), reader, inventory.login)
    return Path(run["plan_file"]), choice


def _refuse_without_lab(plan_file: Path, inventory: InventoryChoice) -> None:
    """InputError with the ``lab up`` to run when the plan's inventory is one ``nasplan lab up``
    writes and the lab is not up (as ``validate`` says)."""
    from nasplan.input.lab_files import lab_file_for

    planned = lab_inventory(plan_file, inventory)
    if planned is None:
        return
    lab_file = lab_file_for(planned)
    up = f"sudo nasplan lab up {lab_file}" if lab_file else "sudo nasplan lab up LAB.yaml"
    raise InputError(f"{planned} is not there yet: the lab is not up (bring it up: {up})")
