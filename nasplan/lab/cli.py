"""``nasplan lab up|down|status|reshape``: click commands over nasplan.lab.lifecycle."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from nasplan.errors import InputError, NasplanError
from nasplan.lab import lifecycle
from nasplan.units import format_bits_per_second

DEFAULT_LAB_FILE = Path("plans/examples/lab.yaml")

lab_file_argument = click.argument(
    "lab_file",
    metavar="[LAB.yaml]",
    type=click.Path(path_type=Path, dir_okay=False),
    required=False,
)
state_dir_option = click.option(
    "--state-dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the lab's state and generated files live (default <lab dir>/.lab/<name>).",
)


def _lab_file(lab_file: Path | None, state_dir: Path | None) -> Path | None:
    """The lab file given; else, without --state-dir, the example lab when run from a checkout
    of nasplan. With --state-dir none is needed: state.json records what down/status need."""
    if lab_file is not None or state_dir is not None:
        return lab_file
    if DEFAULT_LAB_FILE.is_file():
        return DEFAULT_LAB_FILE
    raise InputError("which lab? give its file (nasplan lab status LAB.yaml) or --state-dir DIR")


@click.group()
def lab() -> None:
    """The simulated lab: hosts as network namespaces with sshd, joined by tc-shaped links."""


@lab.command()
@lab_file_argument
@state_dir_option
def up(lab_file: Path | None, state_dir: Path | None) -> None:
    """Bring LAB.yaml up (root only); print its inventory and ssh_config."""
    chosen = _lab_file(lab_file, None)
    assert chosen is not None
    state = lifecycle.up(chosen, state_dir, report=click.echo)
    click.echo(f"inventory:  {state.inventory_path}")
    click.echo(f"ssh config: {state.ssh_config_path}   (ssh -F {state.ssh_config_path} HOST)")


@lab.command()
@lab_file_argument
@state_dir_option
def down(lab_file: Path | None, state_dir: Path | None) -> None:
    """Tear LAB.yaml's lab down (daemons, namespaces, links, files)."""
    lifecycle.down(_lab_file(lab_file, state_dir), state_dir, report=click.echo)


@lab.command()
@lab_file_argument
@state_dir_option
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help='json: {"up": ..., "hosts": [...], "links": [...], "problems": [...]} on stdout.',
)
def status(lab_file: Path | None, state_dir: Path | None, output_format: str) -> None:
    """Show each host, its namespace and sshd, and each link's rate."""
    found = lifecycle.status(_lab_file(lab_file, state_dir), state_dir)
    if output_format == "json":
        import json

        click.echo(json.dumps(status_dict(found), indent=2))
        return
    if found is None:
        click.echo("lab is not up")
        return
    click.echo(f"lab {found.state.lab_name} ({found.state.state_dir})")
    for host in found.hosts:
        ns = host.host.namespace + ("" if host.namespace_exists else " (missing)")
        alive = "running" if host.sshd_alive else "NOT running"
        click.echo(
            f"  host {host.host.name:<10} {host.host.address:<18} netns {ns}  "
            f"sshd PID {host.host.sshd_pid} {alive}"
        )
        for name, volume in host.host.volumes.items():
            click.echo(f"    volume {name} at {volume['path']}: {volume['description']}")
        if host.host.cgroup:
            click.echo(f"    memory limited by {host.host.cgroup}")
    for link in found.links:
        shaped = ", ".join(
            format_bits_per_second(bps) if bps is not None else "?"
            for bps in link.shaped_bits_per_second
        )
        ends = " ".join(f"{ns or 'root'}:{dev}" for ns, dev in link.link.ends)
        click.echo(f"  link {link.link.name:<10} {link.link.rate:<6} shaped [{shaped}]  {ends}")
    for problem in found.problems:
        click.echo(f"  problem: {problem}")


def status_dict(found: lifecycle.LabStatus | None) -> dict[str, Any]:
    """``lab status --format json``: ``{"up": false}``, or the lab, its hosts (``state``:
    ``running``, ``sshd not running``, ``namespace missing``), its links and problems."""
    if found is None:
        return {"up": False, "hosts": [], "links": [], "problems": []}
    hosts = []
    for one in found.hosts:
        state = "running" if one.sshd_alive else "sshd not running"
        hosts.append(
            {
                "name": one.host.name,
                "address": one.host.address,
                "namespace": one.host.namespace,
                "namespace_exists": one.namespace_exists,
                "sshd_pid": one.host.sshd_pid,
                "sshd_running": one.sshd_alive,
                "volumes": dict(one.host.volumes),
                "cgroup": one.host.cgroup,
                "state": state if one.namespace_exists else "namespace missing",
            }
        )
    links = [
        {
            "name": link.link.name,
            "rate": link.link.rate,
            "mtu_bytes": link.link.mtu_bytes,
            "shaped_bits_per_second": list(link.shaped_bits_per_second),
            "ends": [{"namespace": ns, "device": dev} for ns, dev in link.link.ends],
        }
        for link in found.links
    ]
    return {
        "up": True,
        "lab": found.state.lab_name,
        "state_dir": str(found.state.state_dir),
        "hosts": hosts,
        "links": links,
        "problems": list(found.problems),
    }


@lab.command()
@click.argument("link")
@click.argument("rate")
@lab_file_argument
@state_dir_option
def reshape(link: str, rate: str, lab_file: Path | None, state_dir: Path | None) -> None:
    """Shape LINK (a link name, or lan) of the running lab to RATE."""
    _, resolved = lifecycle.resolve_state_dir(_lab_file(lab_file, state_dir), state_dir)
    changed = lifecycle.reshape(resolved, link, rate)
    click.echo(f"link {changed.name} shaped to {changed.rate}")


@lab.command()
@click.argument("host")
@click.argument("size")
@lab_file_argument
@state_dir_option
def memory(host: str, size: str, lab_file: Path | None, state_dir: Path | None) -> None:
    """Give HOST of the running lab a memory limit of SIZE (256MiB, 1GiB): the NAS's cache."""
    _, resolved = lifecycle.resolve_state_dir(_lab_file(lab_file, state_dir), state_dir)
    limit = lifecycle.set_memory(resolved, host, size)
    click.echo(f"host {host}: memory limited to {limit}")


def main() -> None:
    """Run the lab group alone, with nasplan errors as one-line messages and exit codes."""
    try:
        lab.main(standalone_mode=False)
    except NasplanError as exc:
        from nasplan.input.loader import user_lines

        for line in user_lines(exc):
            click.echo(line, err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
