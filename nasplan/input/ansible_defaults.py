"""What Ansible takes by itself when the inventory does not say.

The inventory it uses when none is named: ``ANSIBLE_INVENTORY``, else ``inventory``
in the ``[defaults]`` of the ``ansible.cfg`` Ansible finds (``ANSIBLE_CONFIG``, ``./ansible.cfg``
unless the directory is world-writable, ``~/.ansible.cfg``, ``/etc/ansible/ansible.cfg``: the
first that exists). Either is a comma-separated list of paths; a relative path in ansible.cfg is
relative to the file's directory, as Ansible resolves it. The login of a host whose inventory
sets none: ``ANSIBLE_REMOTE_USER`` / ``ANSIBLE_PRIVATE_KEY_FILE``, else ``remote_user`` /
``private_key_file`` in that ansible.cfg's ``[defaults]``.
"""

from __future__ import annotations

import configparser
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from nasplan.errors import InputError
from nasplan.input.localfile import read_text_bounded

MAX_CONFIG_BYTES = 1024 * 1024


def config_file(environ: Mapping[str, str], cwd: Path) -> Path | None:
    """The ansible.cfg Ansible reads, None when there is none."""
    candidates: list[Path] = []
    named = environ.get("ANSIBLE_CONFIG")
    if named is not None:
        path = Path(named).expanduser()
        candidates.append(path / "ansible.cfg" if path.is_dir() else path)
    try:
        if not os.stat(cwd).st_mode & stat.S_IWOTH:
            candidates.append(cwd / "ansible.cfg")
    except OSError:
        pass
    candidates += [Path("~/.ansible.cfg").expanduser(), Path("/etc/ansible/ansible.cfg")]
    return next((path for path in candidates if path.is_file()), None)


def _paths(text: str, base: Path | None) -> tuple[Path, ...]:
    found = []
    for item in (part.strip() for part in text.split(",")):
        if item:
            path = Path(item).expanduser()
            found.append(base / path if base is not None and not path.is_absolute() else path)
    return tuple(found)


def _defaults(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=(";",))
    try:
        parser.read_string(read_text_bounded(path, MAX_CONFIG_BYTES, "ansible.cfg"), str(path))
    except configparser.Error as exc:
        raise InputError(f"{path}: not an ansible.cfg nasplan can read: {exc}") from None
    return parser


def login_defaults(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> dict[str, tuple[str, str]]:
    """``user`` and ``identity_file`` Ansible logs in with where the inventory sets none, each
    as (value, where it was set: ``ANSIBLE_REMOTE_USER``, ``ansible.cfg: remote_user``)."""
    environ = os.environ if environ is None else environ
    found: dict[str, tuple[str, str]] = {}
    for field, variable in (
        ("user", "ANSIBLE_REMOTE_USER"),
        ("identity_file", "ANSIBLE_PRIVATE_KEY_FILE"),
    ):
        if environ.get(variable):
            found[field] = (environ[variable], variable)
    missing = {"user", "identity_file"} - set(found)
    path = config_file(environ, cwd or Path.cwd()) if missing else None
    if path is not None:
        parser = _defaults(path)
        for field, key in (("user", "remote_user"), ("identity_file", "private_key_file")):
            value = parser.get("defaults", key, fallback=None)
            if field in missing and value:
                found[field] = (value, f"{path}: [defaults] {key}")
    return found


def default_inventory(
    environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> tuple[Path, ...]:
    """The ``-i`` Ansible would take by itself (module doc); () when neither names one."""
    environ = os.environ if environ is None else environ
    if environ.get("ANSIBLE_INVENTORY", "").strip():
        return _paths(environ["ANSIBLE_INVENTORY"], None)
    path = config_file(environ, cwd or Path.cwd())
    if path is None:
        return ()
    parser = _defaults(path)
    value = parser.get("defaults", "inventory", fallback=None)
    if value is None:
        value = parser.get("defaults", "hostfile", fallback=None)  # its older name
    return _paths(value, path.parent) if value else ()
