"""``nasplan inventory``: what nasplan read from an inventory, as ``ansible-inventory`` shows it.

Imported only when the command runs (nasplan.cli's group loads it by name), as ``nasplan lab``.
"""

from __future__ import annotations

import json
from pathlib import Path

import click


@click.command(name="inventory")
@click.option(
    "-i",
    "--inventory",
    "inventories",
    multiple=True,
    type=click.Path(path_type=Path, readable=False),
    help="The inventory: a file, an Ansible inventory directory or a host list (nas,ws,); "
    "repeated, merged in order as Ansible merges several -i. Default: ANSIBLE_INVENTORY, else "
    "ansible.cfg's [defaults] inventory, as Ansible finds them.",
)
@click.option(
    "--inventory-reader",
    "reader",
    type=click.Choice(["nasplan", "ansible"]),
    default="nasplan",
    show_default=True,
    help="Who reads the inventory: nasplan's own reader, or ansible (ansible-inventory --list).",
)
@click.option(
    "--playbook-dir",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Read the group_vars/ and host_vars/ of this directory as a playbook's (a plan's "
    "directory); default: the current directory, as ansible-inventory reads it.",
)
@click.option("-u", "--user", "user", metavar="USER", help="As apply's -u.")
@click.option(
    "--private-key",
    "--key-file",
    "private_key",
    type=click.Path(path_type=Path, readable=False),
    help="As apply's --private-key.",
)
@click.option("--list", "as_list", is_flag=True, help="All hosts and groups, as JSON.")
@click.option("--graph", is_flag=True, help="The groups as a tree (from GROUP, default all).")
@click.option(
    "--host",
    "host",
    metavar="NAME",
    help="One host's vars as JSON, with a nasplan key: what nasplan will connect to and use, "
    "and sources: the file and line that set each.",
)
@click.argument("group", required=False, default="all")
def inventory(
    inventories: tuple[Path, ...],
    reader: str,
    playbook_dir: Path | None,
    user: str | None,
    private_key: Path | None,
    as_list: bool,
    graph: bool,
    host: str | None,
    group: str,
) -> None:
    """Show the inventory as nasplan reads it: --list, --graph [GROUP] or --host NAME, as
    ansible-inventory shows it. Connects nowhere. Exit codes: 0 shown, 2 invalid input."""
    from nasplan.errors import InputError
    from nasplan.input.ansible_defaults import default_inventory
    from nasplan.input.inventory import Login, read_inventory
    from nasplan.input.inventory_view import graph_view, host_view, list_view

    if sum((as_list, graph, host is not None)) != 1:
        raise InputError("nasplan inventory: give one of --list, --graph [GROUP], --host NAME")
    sources = inventories or default_inventory()
    if not sources:
        raise InputError(
            "nasplan inventory: no inventory: give -i FILE (or set ANSIBLE_INVENTORY, or "
            "[defaults] inventory in ansible.cfg)"
        )
    login = Login(user, private_key)
    read = read_inventory(sources, reader, playbook_dir or Path.cwd(), login)
    for warning in read.inventory.warnings:
        click.echo(f"warning: {warning}", err=True)
    if graph:
        click.echo(graph_view(read, group))
    elif host is not None:
        click.echo(json.dumps(host_view(read, host), indent=4, sort_keys=True))
    else:
        click.echo(json.dumps(list_view(read), indent=4, sort_keys=True))
