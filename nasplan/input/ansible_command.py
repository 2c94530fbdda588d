"""``--inventory-reader ansible``: the inventory as Ansible itself reads it.

``ansible-inventory -i A [-i B ...] --list`` is run on this machine (from the current directory,
with the environment and ``ansible.cfg`` Ansible would use there), so vault-encrypted files,
inventory plugins and scripts and every Ansible setting in force apply; its JSON (each host's
vars already merged by Ansible) is read into the same graph as nasplan's own reader fills. A
source Ansible cannot parse fails the read (``ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED``, unless
set otherwise) instead of leaving its hosts out with a warning. A problem in a var is located
in the file that set it where nasplan's own reader finds the same value there; else (a vault
file, a plugin's var) in that JSON: ``ansible-inventory -i A --list:LINE:COL`` is the line of
what the same command prints.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.ansible_graph import Graph, merged
from nasplan.input.ansible_sources import Sources, is_list_form, read_list, read_sources
from nasplan.input.loader import JsonPath, parse_yaml

TIMEOUT_S = 300  # an inventory plugin may ask a cloud API
MAX_OUTPUT_BYTES = 64 * 2**20
MAX_MESSAGE_CHARS = 400


def executable() -> str:
    """``ansible-inventory`` on PATH, else beside this Python (a virtualenv not activated)."""
    found = shutil.which("ansible-inventory")
    if found is None:
        beside = Path(sys.executable).parent / "ansible-inventory"
        found = str(beside) if os.access(beside, os.X_OK) else None
    if found is None:
        raise InputError(
            "--inventory-reader ansible: ansible-inventory is not installed here (pip install "
            "ansible-core), or read the inventory with nasplan's own reader "
            "(--inventory-reader nasplan)"
        )
    return found


def command(sources: Sequence[Path], playbook_dir: Path | None = None) -> list[str]:
    """The argv: ``ansible-inventory -i A -i B [--playbook-dir DIR] --list``."""
    argv = [executable()]
    for source in sources:
        argv += ["-i", str(source)]
    if playbook_dir is not None:
        argv += ["--playbook-dir", str(playbook_dir)]
    return [*argv, "--list"]


def _failure(argv: Sequence[str], why: str, stderr: str) -> InputError:
    """One line: the command, why it failed, Ansible's own first error line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    said = next((line for line in lines if "ERROR" in line), lines[-1] if lines else "")
    shown = " ".join(["ansible-inventory", *argv[1:]])
    message = f"{shown}: {why}" + (f": {said}" if said else "")
    return InputError(message[:MAX_MESSAGE_CHARS])


def list_json(sources: Sequence[Path], playbook_dir: Path | None = None) -> str:
    """What ``ansible-inventory ... --list`` prints; InputError when it fails or prints nothing."""
    argv = command(sources, playbook_dir)
    environment = dict(os.environ)
    environment.setdefault("ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED", "True")
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=TIMEOUT_S,
            env=environment,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise _failure(argv, f"no answer within {TIMEOUT_S} s", "") from None
    except OSError as exc:
        raise _failure(argv, f"cannot run it: {exc.strerror or exc}", "") from None
    stderr = done.stderr.decode("utf-8", errors="replace")
    if done.returncode != 0:
        raise _failure(argv, f"exit {done.returncode}", stderr)
    if not done.stdout.strip():
        raise _failure(argv, "printed no inventory", stderr)
    if len(done.stdout) > MAX_OUTPUT_BYTES:
        raise _failure(argv, f"printed more than {MAX_OUTPUT_BYTES} bytes", "")
    return done.stdout.decode("utf-8", errors="replace")


def _encrypted(value: Any, path: JsonPath) -> JsonPath | None:
    """The path of the first value ansible-inventory printed still encrypted (inline !vault)."""
    if isinstance(value, dict):
        if "__ansible_vault" in value:
            return path
        for key, item in value.items():
            found = _encrypted(item, (*path, key))
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _encrypted(item, (*path, index))
            if found is not None:
                return found
    return None


def read_through_ansible(sources: Sequence[Path], playbook_dir: Path | None = None) -> Sources:
    """The sources as ``ansible-inventory --list`` gives them, in nasplan's graph."""
    name = Path(" ".join(["ansible-inventory", *(f"-i {s}" for s in sources), "--list"]))
    document = parse_yaml(name, list_json(sources, playbook_dir))
    if not isinstance(document.data, dict) or not is_list_form(document.data):
        raise InputError(document.error((), "not what ansible-inventory --list prints"))
    encrypted = _encrypted(document.data, ())
    if encrypted is not None:
        raise InputError(
            document.error(
                encrypted,
                "an inline !vault value: ansible-inventory prints it still encrypted (encrypt "
                "the whole vars file with ansible-vault instead, which Ansible decrypts)",
            )
        )
    read = Sources(Graph((document, ())), tuple(sources), documents=[document])
    read_list(document, read.graph)
    read.graph.reconcile()
    first = sources[0]
    read.bases[document.path] = first if first.is_dir() else first.parent
    _locate_in_sources(read, sources, playbook_dir)
    return read


def _locate_in_sources(read: Sources, sources: Sequence[Path], playbook_dir: Path | None) -> None:
    """Where nasplan's own reader finds the same value in the sources (the inventory file or
    vars file that set it), a var's origin is that file's line, not the line of Ansible's
    output; a value only Ansible could read (vault, a plugin) keeps its place in the output."""
    try:
        own = read_sources(sources, playbook_dir)
    except InputError:
        return
    if own.native is not None:
        return
    for name, entry in read.graph.hosts.items():
        own_entry = own.graph.hosts.get(name)
        if own_entry is None:
            continue
        try:
            values, origins = merged(own.graph.layers(own_entry, own.vars_dirs))
        except InputError:  # a vars file only Ansible reads (vault): the output's lines stay
            continue
        for key, value in entry.vars.items():
            if key in values and values[key] == value:
                entry.origins[key] = origins[key]
    read.bases.update(own.bases)
