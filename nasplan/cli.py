"""Command line: parse arguments, call the library, map errors to exit codes and messages."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import click

from nasplan import __version__
from nasplan.errors import NasplanError

if TYPE_CHECKING:  # imported where a command runs: the CLI's start stays light
    from nasplan.input.inventory import InventoryChoice
    from nasplan.input.plan import Plan
    from nasplan.run.check import Checked
    from nasplan.run.planned import Outcome
    from nasplan.run.request import RunRequest
    from nasplan.run.signals import Stopped
    from nasplan.verbosity import Verbosity

EXIT_INTERRUPTED = 130
F = TypeVar("F", bound=Callable[..., Any])
# A path nasplan reads itself (and says, in one line, what is wrong with it), not click.
PATH = click.Path(path_type=Path, readable=False)


class NasplanGroup(click.Group):
    """Turns nasplan errors into ``nasplan: message`` lines (a located input error as
    ``FILE:LINE:COL: json.path: message``) and their exit codes, no traceback.

    Shell completion is click's: ``eval "$(_NASPLAN_COMPLETE=bash_source nasplan)"``.

    ``nasplan lab`` is imported only when asked for: the lab's modules are not what
    ``apply`` needs, and every command pays for what the CLI imports at start.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), "lab", "inventory"])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "lab":
            from nasplan.lab.cli import lab

            return lab
        if cmd_name == "inventory":
            from nasplan.inventory_cli import inventory

            return inventory
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NasplanError as exc:
            from nasplan.input.loader import user_lines

            for line in user_lines(exc):
                click.echo(line, err=True)
            sys.exit(exc.exit_code)
        except KeyboardInterrupt as exc:
            from nasplan.run.signals import Terminated, ignore_from_now_on

            ignore_from_now_on()  # exiting: a Ctrl-C pressed again must not cut it short

            # SIGTERM and SIGHUP end a run as Ctrl-C does: exit 128 + the signal's number
            if isinstance(exc, Terminated):
                click.echo(f"nasplan: terminated ({exc})", err=True)
                sys.exit(128 + exc.signum)
            click.echo("nasplan: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)


inventory_option = click.option(
    "-i",
    "--inventory",
    "inventories",
    multiple=True,
    type=PATH,
    help="Use this inventory instead of the plan's: a file, an Ansible inventory directory or a "
    "host list (nas,ws,); repeated, merged in order as Ansible merges several -i.",
)
reader_option = click.option(
    "--inventory-reader",
    "reader",
    type=click.Choice(["nasplan", "ansible"]),
    default=None,
    help="Who reads the inventory: nasplan's own reader (the default, or the plan's "
    "inventory_reader), or ansible: what `ansible-inventory --list` prints (vault, inventory "
    "plugins and scripts; needs ansible-core installed).",
)
user_option = click.option(
    "-u",
    "--user",
    "user",
    metavar="USER",
    help="Log in as USER where the inventory sets no user (as Ansible's -u: the inventory's "
    "ansible_user wins).",
)
private_key_option = click.option(
    "--private-key",
    "--key-file",
    "private_key",
    type=PATH,
    help="Log in with this private key where the inventory sets none (as Ansible's "
    "--private-key: the inventory's ansible_ssh_private_key_file wins).",
)
extra_vars_option = click.option(
    "-e",
    "--extra-vars",
    "extra_vars",
    multiple=True,
    metavar="KEY=VALUE|@FILE|{...}",
    help="Set plan vars over the plan's own: KEY=VALUE, @vars.yml (a YAML or JSON file), or a "
    "mapping ('{\"duration_s\": 1}'); repeatable, later ones win.",
)
verbose_option = click.option(
    "-v",
    "--verbose",
    count=True,
    help=(
        "-v: say each command run on a host, whole (redacted; a long script by its first"
        " lines); -vv: also its exit status and time; -vvv: every script whole."
    ),
)
quiet_option = click.option(
    "-q", "--quiet", is_flag=True, help="Say only what went wrong, and the report's path."
)


table_option = click.option(
    "--table",
    metavar="rows=DIM[/DIM],columns=DIM[/DIM][,baseline=DIM=VALUE][,metric=KEY]",
    help="Lay the results out in one table: matrix dimensions (and direction, test, run labels) "
    "along rows and columns, each cell against the baseline's (docs/matrix.md#the-table).",
)


EXIT_FAIL_ON = 1  # --fail-on warnings: a test of the run carries a warning
gate_option = click.option(
    "--fail-on",
    "gate",
    multiple=True,
    type=click.Choice(["warnings", "warning"]),
    help="Exit 1 when the run carries a warning (what Run status counts at the top of the "
    "report: a 67.5 % UDP loss, a cache-influenced read), even if every test ended ok.",
)


def _gated(run_dir: Path | None, gate: tuple[str, ...], code: int) -> int:
    """``code``, or EXIT_FAIL_ON when it is 0, ``gate`` asks for warnings and the run in
    ``run_dir`` carries one (said on stderr)."""
    if code != 0 or not gate or run_dir is None:
        return code
    from nasplan.report.render import run_warnings
    from nasplan.results import load_run
    from nasplan.units import counted

    warned = run_warnings(load_run(run_dir, check=False))
    if not warned:
        return code
    click.echo(
        f"nasplan: --fail-on warnings: the run has {counted(len(warned), 'warning')}", err=True
    )
    return EXIT_FAIL_ON


def _out_option(said: str) -> Callable[[F], F]:
    """``--out PATH``: where a command writes (``said``: its help)."""
    return click.option("--out", type=PATH, help=said)


def _format_option(what: str) -> Callable[[F], F]:
    return click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=f"json: {what} as one JSON document on standard output.",
    )


def _json(value: object) -> None:
    import json

    click.echo(json.dumps(value, indent=2, sort_keys=False))


@click.group(cls=NasplanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nasplan")
def main() -> None:
    """Declarative, reproducible network and NAS performance test plans over SSH."""


@main.command()
@click.argument("directory", type=click.Path(path_type=Path), default=".")
@click.option("--force", is_flag=True, help="Overwrite the files when they are there.")
@click.option(
    "--example",
    metavar="NAME",
    help="Write the shipped example plan NAME instead, with its inventory or lab file "
    "(--example list: their names).",
)
@click.option("--docs", is_flag=True, help="Write the manual (docs/*.md) instead.")
def init(directory: Path, force: bool, example: str | None, docs: bool) -> None:
    """Write a starter inventory.yaml, plan.yaml and lab.yaml into DIRECTORY (default: here):
    your NAS and PC, iperf3 each way, an SMB copy each way, the NAS's disk, and a simulated lab
    to try the plan on first. --example NAME writes a shipped example, --docs the manual.

    Exit codes: 0 written, 2 a file is there already (nothing written; --force overwrites).
    """
    from nasplan import starter

    if example == "list":
        for name in starter.example_names():
            click.echo(name)
        return
    if example is not None or docs:
        files = starter.example_files(example) if example is not None else starter.docs_files()
        for path in starter.write_files(directory, files, force=force):
            click.echo(f"wrote {path}")
        return
    for path in starter.write(directory, force=force):
        click.echo(f"wrote {path}")
    for line in starter.next_steps(directory):
        click.echo(line)


@main.command()
@click.argument("plan_file", type=PATH)
@inventory_option
@reader_option
@user_option
@private_key_option
@extra_vars_option
@_format_option('{"ok": ..., "errors": [{"file", "line", "column", "path", "message"}]}')
def validate(
    plan_file: Path,
    inventories: tuple[Path, ...],
    reader: str | None,
    user: str | None,
    private_key: Path | None,
    extra_vars: tuple[str, ...],
    output_format: str,
) -> None:
    """Validate PLAN_FILE and its inventory; print ok, or each problem as FILE:LINE:COL.

    A plan whose inventory "nasplan lab up" writes is checked before the lab is up, against
    the inventory its lab file will give (a warning says so). Exit codes: 0 valid, 2 not.
    """
    from nasplan.errors import InputError
    from nasplan.input.inventory import InventoryChoice, Login

    warnings: list[str] = []
    choice = InventoryChoice(inventories, reader, Login(user, private_key))
    try:
        said = _validate(plan_file, choice, extra_vars, warnings)
    except InputError as exc:
        if output_format != "json":
            raise
        from nasplan.input.loader import located

        errors = []
        for line in exc.messages:
            found = located(line)
            errors.append(found.to_dict() if found else _unlocated(line))
        _json({"ok": False, "errors": errors, "warnings": warnings})
        sys.exit(exc.exit_code)
    if output_format == "json":
        _json({"ok": True, "errors": [], "warnings": warnings})
        return
    for warning in warnings:
        click.echo(f"warning: {warning}", err=True)
    click.echo(said)


def _unlocated(message: str) -> dict[str, Any]:
    return {"file": None, "line": None, "column": None, "path": None, "message": message}


def _validate(
    plan_file: Path, inventory: InventoryChoice, extra_vars: tuple[str, ...], warnings: list[str]
) -> str:
    """Validate as ``nasplan validate`` does; what to say when valid (warnings: appended)."""
    from nasplan.input.extra_vars import extra_vars as parse_extra_vars
    from nasplan.input.lab_files import is_lab_file

    variables = parse_extra_vars(extra_vars)
    if is_lab_file(plan_file):
        from nasplan.lab.model import load_lab

        load_lab(plan_file)
        return f"ok (a lab file: sudo nasplan lab up {plan_file})"
    plan, previewed = _plan_or_preview(plan_file, inventory, variables, "nasplan-validate-")
    if previewed is None:
        warnings += plan.inventory.warnings
        return "ok"
    planned, lab_file = previewed
    warnings.append(
        f"{planned} is not there yet (the lab is not up): checked against the "
        f"inventory `nasplan lab up {lab_file}` writes"
    )
    return "ok"


def _plan_or_preview(
    plan_file: Path, inventory: InventoryChoice, variables: Mapping[str, Any], prefix: str
) -> tuple[Plan, tuple[Path, Path] | None]:
    """The plan loaded; for one whose inventory a lab writes and that lab is not up, loaded
    against the inventory it would write, with that inventory's path and the lab file."""
    from nasplan.input.plan import lab_inventory, load_plan

    planned = lab_inventory(plan_file, inventory)
    if planned is None:
        plan = load_plan(plan_file, inventory.paths, variables, inventory.reader, inventory.login)
        return plan, None
    # The lab's code only for a plan whose inventory the lab writes.
    import tempfile

    from nasplan.lab import preview

    with tempfile.TemporaryDirectory(prefix=prefix) as directory:
        previewed = Path(directory) / planned.name
        lab_file = preview.write_preview(planned, previewed)
        plan = load_plan(plan_file, previewed, variables, inventory.reader, inventory.login)
    return plan, (planned, lab_file)


@main.command()
@click.argument("plan_file", type=PATH, required=False)
@inventory_option
@reader_option
@user_option
@private_key_option
@extra_vars_option
@_out_option("Run directory (default runs/<UTC time>-<plan>).")
@click.option(
    "--resume",
    type=PATH,
    metavar="RUN_DIR",
    help="Continue an interrupted or partly failed run in its directory: its ok repetitions "
    "kept, the others run again (the same plan, inventory and -e; PLAN_FILE: the run's).",
)
@click.option(
    "--check",
    is_flag=True,
    help="Connect and gather facts, show what would be done, change nothing.",
)
@click.option(
    "--list-tests",
    "list_tests",
    is_flag=True,
    help="List the tests the run would run (matrix cells expanded), with an estimate of its "
    "duration; connect nowhere.",
)
@click.option(
    "--list-hosts",
    "list_hosts",
    is_flag=True,
    help="List the hosts the run would connect to, each with the address, port and user nasplan "
    "would use; connect nowhere.",
)
@click.option(
    "-l",
    "--limit",
    "limit",
    multiple=True,
    metavar="HOST[,HOST]",
    help="Only these hosts (names, groups, globs like 'nas*'; as in Ansible, 'a:b' both, "
    "'a:&b' only hosts in both, '!mac' to leave one out): tests that need another host, and "
    "network changes on other hosts, are left out. Repeatable.",
)
@click.option(
    "--tests",
    "test_patterns",
    multiple=True,
    metavar="PATTERN[,PATTERN]",
    help="Only the tests whose id or base id matches: an id or a glob ('smb*', "
    "'smb[link=p2p10*'; only * and ? are wild), joined as --limit's ('smb:lat', "
    "'tcp:&*mac*', '!slow'). Repeatable.",
)
@click.option(
    "--keep",
    is_flag=True,
    help="Leave the plan's network changes (MTU, link addresses) in place after the run.",
)
@click.option(
    "-K",
    "--ask-become-pass",
    "ask_become_pass",
    is_flag=True,
    help="Ask for the sudo password (hosts whose become_password_env is set use that instead).",
)
@gate_option
@verbose_option
@quiet_option
@_format_option(
    "with --check, what it found (hosts, installs, changes, tests, estimate, problems); with "
    "--list-tests, the tests and the estimate"
)
def apply(
    plan_file: Path,
    inventories: tuple[Path, ...],
    reader: str | None,
    user: str | None,
    private_key: Path | None,
    extra_vars: tuple[str, ...],
    out: Path | None,
    resume: Path | None,
    check: bool,
    list_tests: bool,
    list_hosts: bool,
    limit: tuple[str, ...],
    test_patterns: tuple[str, ...],
    keep: bool,
    ask_become_pass: bool,
    gate: tuple[str, ...],
    verbose: int,
    quiet: bool,
    output_format: str,
) -> None:
    """Run PLAN_FILE: facts, tools, tests; write run.json, raw outputs and report.md
    (--resume RUN_DIR: finish an interrupted run there).

    --list-tests prints the tests (a matrix's cells each one) and an estimate of the run's
    duration, and exits 0 without connecting; --limit and --tests run a part of the plan.

    Exit codes: 0 all ok, 1 a test failed, the run directory is full, or (--fail-on warnings)
    the run carries a warning, 2 invalid input, 3 a host was unreachable or could not be used
    (sudo refused, tools missing and not installable, in use by another run, lost during the
    run), 130 interrupted (Ctrl-C), 143 / 129 ended by SIGTERM / SIGHUP (the hosts put back and
    the report written first, as after Ctrl-C).
    """
    from nasplan.input.inventory import InventoryChoice, Login
    from nasplan.run.request import request
    from nasplan.run.signals import Stopped
    from nasplan.verbosity import Verbosity

    verbosity = Verbosity.from_flags(verbose, quiet)
    inventory = InventoryChoice(inventories, reader, Login(user, private_key))
    if list_tests or list_hosts:
        _list(plan_file, list_tests, output_format, inventory, extra_vars, limit, test_patterns)
        return
    _json_only_with_check(output_format, check)
    wanted = request(
        plan_file,
        inventory,
        extra_vars,
        resume=resume,
        out=out,
        limit=limit,
        tests=test_patterns,
        keep=keep,
        check=check,
        ask_password=_ask_become_pass if ask_become_pass else None,
    )
    outcome = _carry_out(wanted, resume, check, output_format, verbosity)
    if isinstance(outcome, Stopped):  # its report and how to finish it, then exit as it says
        _stopped(outcome, extra_vars, limit, test_patterns, keep, ask_become_pass)
    _exit(outcome, check, output_format, gate)


def _say_notes(wanted: RunRequest, resume: Path | None, quiet: bool) -> None:
    """What the run's request says before it starts; exit 0 when a resumed run has nothing
    left to do."""
    if wanted.nothing_to_do:
        click.echo(f"nothing to do: every repetition of every test in {resume} ended ok")
        sys.exit(0)
    for note in wanted.notes if not quiet else ():  # run.json keeps them
        click.echo(note, err=True)


def _exit(
    outcome: Outcome | Checked, check: bool, output_format: str, gate: tuple[str, ...]
) -> None:
    """Say where the report is (``--check --format json``: what it found) and exit with the
    run's code (``--fail-on``'s gates applied)."""
    if check and output_format == "json":
        _json(cast("Checked", outcome).to_dict())
    if outcome.run_dir is not None:
        click.echo(f"report: {outcome.run_dir / 'report.md'}")
    # the process ends here: its last garbage collection need not walk what the run built
    gc.freeze()
    sys.exit(outcome.exit_code if check else _gated(outcome.run_dir, gate, outcome.exit_code))


def _json_only_with_check(output_format: str, check: bool) -> None:
    from nasplan.errors import InputError

    if output_format == "json" and not check:
        raise InputError(
            "--format json goes with --check, --list-tests or --list-hosts (a run writes run.json)"
        )


def _carry_out(
    wanted: RunRequest, resume: Path | None, check: bool, output_format: str, verbosity: Verbosity
) -> Outcome | Checked | Stopped:
    """``apply``'s run, or its ``--check``, under a progress display: what it came to, or the
    signal that stopped it (a Ctrl-C: the hosts put back and the report written first)."""
    from nasplan.progress import make_progress
    from nasplan.run.signals import Stopped, as_interrupts

    _say_notes(wanted, resume, verbosity.quiet)
    progress = make_progress(quiet=verbosity.quiet)
    try:
        with as_interrupts():
            if check:  # each imports only what its own way needs
                from nasplan.run.check import check as check_hosts

                say = output_format != "json"
                return check_hosts(wanted.plan, progress, verbosity=verbosity, say=say)
            from nasplan.run.apply import apply as run_plan

            return run_plan(wanted, progress, verbosity=verbosity)
    except Stopped as exc:
        return exc
    finally:
        progress.close()


def _stopped(
    stopped: Stopped,
    extra_vars: tuple[str, ...],
    limit: tuple[str, ...],
    test_patterns: tuple[str, ...],
    keep: bool,
    ask_become_pass: bool,
) -> NoReturn:
    """A stopped run: its report, what it counted, and the command that finishes it; then the
    exit its signal asks for."""
    from nasplan.results import counts_text, load_run
    from nasplan.run.resume import resume_command

    run_dir = stopped.run_dir
    report = run_dir / "report.md"
    counted = ""
    if (run_dir / "run.json").is_file():
        try:
            counted = f" ({counts_text(load_run(run_dir, check=False))})"
        except NasplanError:  # a run.json cut short: the report path still helps
            counted = ""
    if report.is_file():
        click.echo(f"report: {report}{counted}")
    command = resume_command(
        run_dir, extra_vars, limit, test_patterns, keep=keep, ask_become_pass=ask_become_pass
    )
    click.echo(f"to finish this run, keeping what it measured: {command}", err=True)
    raise stopped.cause from None


def _ask_become_pass() -> str:
    """``-K``: the sudo password, asked once on the terminal."""
    from nasplan.remote import become

    return become.prompt_password(lambda text: click.prompt(text, hide_input=True))


def _list(
    plan_file: Path | None,
    tests: bool,
    output_format: str,
    inventory: InventoryChoice,
    extra_vars: tuple[str, ...],
    limit: tuple[str, ...],
    test_patterns: tuple[str, ...],
) -> None:
    """``apply --list-tests`` (``tests``) or ``--list-hosts``: the plan (against the inventory
    its lab will write when the lab is not up, as ``validate`` does), cut to --limit / --tests.
    """
    from nasplan.errors import InputError
    from nasplan.input.extra_vars import extra_vars as parse_extra_vars
    from nasplan.input.subset import choose

    if plan_file is None:
        raise InputError(f"apply --list-{'tests' if tests else 'hosts'} needs PLAN_FILE")
    plan, _ = _plan_or_preview(plan_file, inventory, parse_extra_vars(extra_vars), "nasplan-list-")
    for warning in plan.inventory.warnings:
        click.echo(f"warning: {warning}", err=True)
    if limit or test_patterns:
        plan, subset = choose(plan, limit, test_patterns)
        for note in subset.notes:
            click.echo(f"warning: {note}", err=True)
    if tests:
        _list_tests(plan, output_format)
    else:
        _list_hosts(plan, output_format)


def _list_tests(plan: Plan, output_format: str) -> None:
    """``apply --list-tests``: the tests, listed with the run's estimate."""
    from nasplan.run import listing

    if output_format == "json":
        _json(listing.listing(plan))
        return
    for line in listing.lines(plan):
        click.echo(line)


def _list_hosts(plan: Plan, output_format: str) -> None:
    """``apply --list-hosts``: as ``ansible-playbook --list-hosts``, each host with where
    nasplan would connect (``user@address:port``, or local)."""
    hosts = [plan.inventory.hosts[name] for name in plan.host_names]
    if output_format == "json":
        _json({h.name: {"address": h.address, "port": h.port, "user": h.user} for h in hosts})
        return
    click.echo(f"  plan {plan.name}: hosts ({len(hosts)}):")
    for host in hosts:
        where = "local" if host.is_local else host.address
        if not host.is_local:
            where = f"{host.user + '@' if host.user else ''}{where}"
            where += f":{host.port}" if host.port else ""
        click.echo(f"    {host.name}  {where}")


@main.command()
@click.argument("host")
@click.option(
    "-i",
    "--inventory",
    "inventories",
    required=True,
    multiple=True,
    type=PATH,
    help="The inventory that names HOST (its address, user, key, known_hosts); repeated, "
    "merged in order as Ansible merges several -i.",
)
@reader_option
@_out_option("An empty or new directory for the outputs (default: nasplan-probe-HOST).")
@click.option(
    "--mask-addresses",
    is_flag=True,
    help="Replace IPv4, IPv6 and MAC addresses by placeholders, the same one for the same address.",
)
def probe(
    host: str,
    inventories: tuple[Path, ...],
    reader: str | None,
    out: Path | None,
    mask_addresses: bool,
) -> None:
    """Run every read-only command nasplan relies on for HOST; write their raw outputs, redacted,
    into a directory to attach to a report (docs/probe.md). Changes nothing on HOST.

    Exit codes: 0 written, 2 invalid input (no such host, --out not empty), 3 HOST unreachable.
    """
    from os import environ

    from nasplan.probe import run_probe

    written = run_probe(
        inventories,
        host,
        out or Path(f"nasplan-probe-{host}"),
        mask_addresses=mask_addresses,
        environ=environ,
        reader=reader or "nasplan",
    )
    click.echo(f"{host}: {written.platform}; {len(written.files)} files in {written.directory}")
    click.echo("attach this directory to a report (check it first: docs/probe.md)")


@main.command()
@click.argument("run_dir", type=PATH)
@click.option(
    "--charts",
    type=click.Choice(["png", "svg"]),
    help="Also draw charts with matplotlib into RUN_DIR/charts/ and show them in the report.",
)
@table_option
@click.option(
    "--out",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write the report to this file (relative to RUN_DIR) instead of report.md: with "
    "--table, a second layout beside report.md, whose tables stay the plan's.",
)
@gate_option
def report(
    run_dir: Path, charts: str | None, table: str | None, out: Path | None, gate: tuple[str, ...]
) -> None:
    """Render RUN_DIR/report.md again from RUN_DIR/run.json alone.

    Exit codes: 0 written, 1 written and (--fail-on warnings) the run carries a warning, 2 bad
    input (no run.json, a --table naming a dimension the run lacks, an --out that is report.md
    itself with --table).
    """
    from nasplan.report.pivot import parse_table_option
    from nasplan.report.render import write_report

    spec = parse_table_option(table) if table else None
    click.echo(str(write_report(run_dir, charts=charts, table=spec, out=out)))
    sys.exit(_gated(run_dir, gate, 0))


@main.command()
@click.argument("runs", nargs=-1, required=True, type=PATH)
@_out_option("Write here instead of stdout.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["markdown", "json", "csv"]),
    default="markdown",
    show_default=True,
)
@click.option(
    "--label",
    "labels",
    multiple=True,
    metavar="KEY=VALUE[,KEY=VALUE]",
    help="Name a run, once per run in order (link=10G,disk=ssd); the keys are dimensions of "
    "the comparison's tables (--table).",
)
@click.option(
    "--charts",
    type=click.Choice(["png", "svg"]),
    default=None,
    help="Also draw matplotlib charts into OUT's directory (<OUT name>-charts/); needs --out.",
)
@click.option(
    "--fail-on",
    "fail_on",
    multiple=True,
    type=click.Choice(["worse", "better", "not significant", "too few repetitions to tell"]),
    help="Exit 1 when a test's verdict against the first run is this (repeatable): "
    "--fail-on worse gates a change on a before/after check.",
)
@table_option
def compare(
    runs: tuple[Path, ...],
    out: Path | None,
    output_format: str,
    labels: tuple[str, ...],
    charts: str | None,
    fail_on: tuple[str, ...],
    table: str | None,
) -> None:
    """Compare RUN_A RUN_B [RUN_C ...] against the first: ratios, verdicts, what changed.

    Exit status: 0 compared; 1 a verdict --fail-on names; 2 bad input; 4 no test could be
    compared.
    """
    from os import environ

    from nasplan.compare import compare_runs, render
    from nasplan.errors import InputError
    from nasplan.output import redactor_of, secrets_from_environ, write_text
    from nasplan.report.pivot import parse_table_option
    from nasplan.results import load_run

    if len(runs) < 2:
        raise InputError("compare needs at least two run directories")
    spec = parse_table_option(table) if table else None
    if charts and (out is None or output_format != "markdown"):
        raise InputError("--charts needs --out FILE.md (the Markdown links the charts)")
    loaded = [load_run(r) for r in runs]
    # The same redaction as every file nasplan writes: secrets the runs' plans name by variable.
    redactor = redactor_of(secrets_from_environ([run.get("plan") for run in loaded], environ))
    comparison = compare_runs(loaded, labels, spec)
    chart_files: list[str] = []
    if charts and out is not None:
        from nasplan.report.charts import write_compare_charts

        chart_dir = out.parent / f"{out.stem}-charts"
        chart_files = write_compare_charts(comparison, chart_dir, charts, out.parent)
    text = redactor.text(render(comparison, output_format, chart_files))
    if out is None:
        click.echo(text, nl=False)
    else:
        write_text(out, text, redactor)
        click.echo(str(out))
    from nasplan.compare.model import exit_code

    sys.exit(exit_code(comparison, fail_on))


@main.command()
@click.argument("run_dir", type=PATH)
@verbose_option
@quiet_option
def restore(run_dir: Path, verbose: int, quiet: bool) -> None:
    """Put the network of RUN_DIR's hosts back as it was before that run (after --keep, or a
    killed run), and remove what a killed run left on its hosts."""
    from nasplan.progress import PlainProgress, QuietProgress
    from nasplan.remote.ssh import connect
    from nasplan.run.restore import restore as restore_run
    from nasplan.verbosity import Verbosity

    verbosity = Verbosity.from_flags(verbose, quiet)
    progress = QuietProgress() if verbosity.quiet else PlainProgress()
    outcomes = restore_run(run_dir, progress, verbosity.traced(connect, progress.message))
    sys.exit(0 if all(o.status != "failed" for o in outcomes.values()) else 1)
