"""Command line: parse arguments, call the library, map errors to exit codes and messages."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from nasplan import __version__
from nasplan.errors import NasplanError

EXIT_INTERRUPTED = 130


class NasplanGroup(click.Group):
    """Turns nasplan errors into ``nasplan: message`` lines and their exit codes, no traceback.

    ``nasplan lab`` is imported only when asked for: the lab's modules are not what
    ``apply`` needs, and every command pays for what the CLI imports at start.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), "lab"])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "lab":
            from nasplan.lab.cli import lab

            return lab
        return super().get_command(ctx, cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except NasplanError as exc:
            for line in str(exc).splitlines() or [type(exc).__name__]:
                click.echo(f"nasplan: {line}", err=True)
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
    type=click.Path(path_type=Path),
    help="Use this inventory instead of the plan's.",
)
extra_vars_option = click.option(
    "-e",
    "--extra-vars",
    "extra_vars",
    multiple=True,
    metavar="KEY=VALUE",
    help="Set a plan var, over the plan's own (repeatable).",
)


@click.group(cls=NasplanGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="nasplan")
def main() -> None:
    """Declarative, reproducible network and NAS performance test plans over SSH."""


@main.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@inventory_option
@extra_vars_option
def validate(plan_file: Path, inventory: Path | None, extra_vars: tuple[str, ...]) -> None:
    """Validate PLAN_FILE and its inventory; print ok, or each problem as FILE:LINE:COL.

    A plan whose inventory ``nasplan lab up`` writes is checked before the lab is up, against
    the inventory its lab file will give (a warning says so).
    """
    from nasplan.input.lab_files import generated_by_lab, is_lab_file
    from nasplan.input.plan import load_plan, parse_extra_var, planned_inventory

    variables = dict(parse_extra_var(e) for e in extra_vars)
    if is_lab_file(plan_file):
        from nasplan.lab.model import load_lab

        load_lab(plan_file)
        click.echo(f"ok (a lab file: sudo nasplan lab up {plan_file})")
        return
    planned = inventory or planned_inventory(plan_file)
    if planned is None or planned.exists() or not generated_by_lab(planned):
        load_plan(plan_file, inventory, variables)
        click.echo("ok")
        return
    # The lab's code only for a plan whose inventory the lab writes.
    import tempfile

    from nasplan.lab import preview

    with tempfile.TemporaryDirectory(prefix="nasplan-validate-") as directory:
        previewed = Path(directory) / planned.name
        lab_file = preview.write_preview(planned, previewed)
        load_plan(plan_file, previewed, variables)
    click.echo(
        f"warning: {planned} is not there yet (the lab is not up): checked against the "
        f"inventory `nasplan lab up {lab_file}` writes",
        err=True,
    )
    click.echo("ok")


@main.command()
@click.argument("plan_file", type=click.Path(path_type=Path))
@inventory_option
@extra_vars_option
@click.option(
    "--out", type=click.Path(path_type=Path), help="Run directory (default runs/<UTC time>-<plan>)."
)
@click.option(
    "--check",
    is_flag=True,
    help="Connect and gather facts, show what would be done, change nothing.",
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
def apply(
    plan_file: Path,
    inventory: Path | None,
    extra_vars: tuple[str, ...],
    out: Path | None,
    check: bool,
    keep: bool,
    ask_become_pass: bool,
) -> None:
    """Run PLAN_FILE: facts, tools, tests; write run.json, raw outputs and report.md.

    Exit codes: 0 all ok, 1 a test failed or the run directory is full, 2 invalid input, 3 a host
    was unreachable or could not be used (sudo refused, tools missing and not installable, in use
    by another run, lost during the run), 130 interrupted (Ctrl-C), 143 / 129 ended by SIGTERM /
    SIGHUP (the hosts put back and the report written first, as after Ctrl-C).
    """
    from nasplan.input.plan import load_plan, parse_extra_var
    from nasplan.progress import make_progress
    from nasplan.run import apply as apply_module
    from nasplan.run import check as check_module
    from nasplan.run import planned

    plan = load_plan(plan_file, inventory, dict(parse_extra_var(e) for e in extra_vars))
    passwords: dict[str, str] = {}
    if not check:
        from os import environ

        from nasplan.hosts import become

        asked = None
        if ask_become_pass:
            asked = become.prompt_password(lambda text: click.prompt(text, hide_input=True))
        passwords = become.passwords_for(planned.plan_hosts(plan), environ, asked)
    from nasplan.run.signals import as_interrupts

    progress = make_progress()
    try:
        with as_interrupts():
            if check:
                outcome = check_module.check(plan, progress)
            else:
                outcome = apply_module.apply(
                    plan, progress, out=out, keep=keep, become_passwords=passwords
                )
    finally:
        progress.close()
    if outcome.run_dir is not None:
        click.echo(f"report: {outcome.run_dir / 'report.md'}")
    sys.exit(outcome.exit_code)


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option(
    "--charts",
    type=click.Choice(["png", "svg"]),
    help="Also draw charts with matplotlib into RUN_DIR/charts/ and show them in the report.",
)
def report(run_dir: Path, charts: str | None) -> None:
    """Render RUN_DIR/report.md again from RUN_DIR/run.json alone."""
    from nasplan.report.render import write_report

    click.echo(str(write_report(run_dir, charts=charts)))


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--out", type=click.Path(path_type=Path), help="Write here instead of stdout.")
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
    help="Name a run, once per run in order (link=10G,disk=ssd); two varying keys make a matrix.",
)
@click.option(
    "--charts",
    type=click.Choice(["png", "svg"]),
    default=None,
    help="Also draw matplotlib charts into OUT's directory (<OUT name>-charts/); needs --out.",
)
def compare(
    runs: tuple[Path, ...],
    out: Path | None,
    output_format: str,
    labels: tuple[str, ...],
    charts: str | None,
) -> None:
    """Compare RUN_A RUN_B [RUN_C ...] against the first: ratios, verdicts, what changed."""
    from os import environ

    from nasplan.compare import compare_runs, render
    from nasplan.errors import InputError
    from nasplan.output import redactor_of, secrets_from_environ, write_text
    from nasplan.results import load_run

    if len(runs) < 2:
        raise InputError("compare needs at least two run directories")
    if charts and (out is None or output_format != "markdown"):
        raise InputError("--charts needs --out FILE.md (the Markdown links the charts)")
    loaded = [load_run(r) for r in runs]
    # The same redaction as every file nasplan writes: secrets the runs' plans name by variable.
    redactor = redactor_of(secrets_from_environ([run.get("plan") for run in loaded], environ))
    comparison = compare_runs(loaded, labels)
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


@main.command()
@click.argument("run_dir", type=click.Path(path_type=Path))
def restore(run_dir: Path) -> None:
    """Put the network of RUN_DIR's hosts back as it was before that run (after --keep)."""
    from nasplan.progress import PlainProgress
    from nasplan.run.restore import record_restore, restore_run
    from nasplan.ssh import connect

    outcomes = restore_run(run_dir, PlainProgress(), connect)
    record_restore(run_dir, outcomes)
    sys.exit(0 if all(o.status != "failed" for o in outcomes.values()) else 1)
