"""Inventories (native nasplan form or Ansible's: nasplan.input.ansible) -> typed ``Inventory``."""

from __future__ import annotations

import dataclasses
import ipaddress
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input import ansible
from nasplan.input.ansible import AnsibleInventory
from nasplan.input.ansible_graph import KEY, at
from nasplan.input.ansible_sources import Sources, read_sources
from nasplan.input.known_hosts import read_known_hosts
from nasplan.input.loader import (
    Document,
    describe_error,
    format_json_path,
    located,
    schema_errors,
    subschema_validator,
)
from nasplan.input.localfile import MAX_KEY_FILE_BYTES, private_file_problem, read_bytes_bounded
from nasplan.input.ssh_config import read_ssh_config
from nasplan.input.ssh_keys import identity_problem
from nasplan.units import parse_rate, parse_size

CONNECTION_KEYS = (
    "connection",
    "user",
    "port",
    "identity_file",
    "known_hosts",
    "ssh_config",
    "proxy_jump",
    "platform",
    "framing",
    "become_password_env",
    "tools",
)


@dataclass(frozen=True)
class Interface:
    """One named interface of a host: ``key`` is the inventory name (``p2p``), ``name`` the OS's."""

    key: str
    name: str
    role: str = "other"
    speed_bits_per_second: int | None = None
    address: str | None = None
    prefix_len: int | None = None
    framing: str = "ethernet"

    def to_dict(self) -> dict[str, Any]:
        """JSON form for run.json (address with its /prefix when known)."""
        address = self.address
        if address and self.prefix_len is not None:
            address = f"{address}/{self.prefix_len}"
        return {
            "name": self.name,
            "role": self.role,
            "speed_bits_per_second": self.speed_bits_per_second,
            "address": address,
            "framing": self.framing,
        }


@dataclass(frozen=True)
class Volume:
    """One named volume of a host (``hdd``): its directory there and, where it is shared, its
    SMB share and NFS export."""

    name: str
    path: str
    share: str | None = None
    export: str | None = None
    description: str = ""
    # its sequential rate (``rate: 180MiB/s``), None when the inventory does not say
    bytes_per_second: int | None = None
    # each direction's where they differ (``read_rate``, ``write_rate``); None: ``rate``
    read_bytes_per_second: int | None = None
    write_bytes_per_second: int | None = None

    def rate(self, direction: str) -> int | None:
        """Its sequential rate in bytes/s one way (``read``, ``write``); None when not stated."""
        own = self.read_bytes_per_second if direction == "read" else self.write_bytes_per_second
        return own or self.bytes_per_second

    def to_dict(self) -> dict[str, Any]:
        """JSON form (run.json's ``hosts.<name>.volumes``, the plan's Jinja); each way's rate
        only where the inventory states one."""
        found: dict[str, Any] = {
            "path": self.path,
            "share": self.share,
            "export": self.export,
            "description": self.description or None,
            "bytes_per_second": self.bytes_per_second,
        }
        if self.read_bytes_per_second or self.write_bytes_per_second:
            found["read_bytes_per_second"] = self.read_bytes_per_second
            found["write_bytes_per_second"] = self.write_bytes_per_second
        return found

    def holds(self, path: str) -> bool:
        """Whether ``path`` on the host lies on this volume (its directory or below)."""
        base = self.path.rstrip("/") or "/"
        return path == base or path.startswith(base.rstrip("/") + "/")


@dataclass(frozen=True)
class Host:
    """A host as nasplan connects to it, with every var already resolved by precedence."""

    name: str
    address: str
    # "ssh", or "local": the control node itself, reached without SSH (nasplan.remote.local)
    connection: str = "ssh"
    user: str | None = None
    port: int | None = None
    identity_file: Path | None = None
    known_hosts: Path | None = None
    ssh_config: Path | None = None
    # OpenSSH's ProxyJump ("admin@jump:2222,gw", "none"), as the inventory gives it; None: the
    # ssh_config's, if any (nasplan.input.proxy_jump reads it, nasplan.remote.ssh opens the hops)
    proxy_jump: str | None = None
    platform_hint: str = "auto"
    framing: str = "ethernet"
    become_password_env: str | None = None
    # Full paths of tools off PATH (Windows: {"iperf3": "C:\\iperf3\\iperf3.exe"}).
    tools: Mapping[str, str] = field(default_factory=dict)
    interfaces: Mapping[str, Interface] = field(default_factory=dict)
    # the host's volumes by name (``volumes:``): a disk or transfer test picks one
    volumes: Mapping[str, Volume] = field(default_factory=dict)
    groups: tuple[str, ...] = ()
    vars: Mapping[str, Any] = field(default_factory=dict)
    origin: str = ""  # FILE:LINE:COL: json.path of the host in its inventory, for errors

    @property
    def is_local(self) -> bool:
        """The machine nasplan runs on (``connection: local``): no SSH, no SSH files."""
        return self.connection == "local"

    def template_view(self) -> dict[str, Any]:
        """What plan Jinja expressions see as ``hosts.<name>``."""
        return {
            **dict(self.vars),
            "name": self.name,
            "address": self.address,
            "platform": self.platform_hint,
            "groups": list(self.groups),
            "interfaces": {
                key: {
                    "name": iface.name,
                    "role": iface.role,
                    "address": iface.address,
                    "prefix_len": iface.prefix_len,
                    "speed_bits_per_second": iface.speed_bits_per_second,
                }
                for key, iface in self.interfaces.items()
            },
            "volumes": {name: volume.to_dict() for name, volume in self.volumes.items()},
        }

    def volume_holding(self, path: str) -> Volume | None:
        """The volume whose directory holds ``path`` (the deepest), None when none does."""
        found = [v for v in self.volumes.values() if v.holds(path)]
        return max(found, key=lambda v: len(v.path)) if found else None


@dataclass(frozen=True)
class Inventory:
    """All hosts of an inventory file, by name; ``groups`` maps a group to its host names."""

    path: Path
    hosts: Mapping[str, Host]
    groups: Mapping[str, tuple[str, ...]]
    vars: Mapping[str, Any]
    # FILE:LINE:COL: path: what was ignored (an Ansible var nasplan does not use), for the user
    warnings: tuple[str, ...] = ()
    # every -i in its order (``path`` is the first); how they were read (nasplan or ansible)
    sources: tuple[Path, ...] = ()
    reader: str = "nasplan"
    # hosts of an Ansible inventory nasplan cannot reach as it says -> why (FILE:LINE:COL lines):
    # left out of ``hosts``, named once in ``warnings``, refused only where a plan names one
    unusable: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # ``-u`` / ``--private-key`` as given (Login.to_dict), kept in run.json for resume, restore
    login: Mapping[str, str] = field(default_factory=dict)

    def refusals_of(self, names: Sequence[str]) -> list[str]:
        """Why each of ``names`` (a plan's hosts) cannot be used, if any cannot."""
        return [line for name in names for line in self.unusable.get(name, ())]

    @property
    def named(self) -> str:
        """The sources as messages name them: ``hosts``, ``staging + production``."""
        return " + ".join(str(p) for p in self.sources) or str(self.path)


def ssh_file_errors(host: Host, *, content: bool = True) -> list[str]:
    """Problems of the SSH files ``host`` names (identity_file, known_hosts, ssh_config).

    Each must be a regular file you (or root) own, not writable by others; a private key also
    not readable by others. An identity_file must exist (a key that is not there would only
    fail the login later); a missing known_hosts or ssh_config is left to the connection.
    ``content``: each is also read as what it must be (a private key, known_hosts lines, an
    ssh_config), a damaged one named at its own line where it has lines.
    A local host uses none of them (they may come from vars meant for the other hosts).
    """
    if host.is_local:
        return []
    errors = []
    for name, path, secret in (
        ("identity_file", host.identity_file, True),
        ("known_hosts", host.known_hosts, False),
        ("ssh_config", host.ssh_config, False),
    ):
        if path is None:
            continue
        problem = private_file_problem(path, secret=secret, required=secret)
        if problem:
            errors.append(f"{host.origin}.{name}: {path}: {problem}")
        elif content and path.exists():
            errors += _content_errors(host, name, path)
    return errors


def _content_errors(host: Host, name: str, path: Path) -> list[str]:
    """What is wrong inside the SSH file ``path`` (``name`` in the inventory): located at its
    line where it has one, else where the inventory names the file."""
    try:
        if name == "known_hosts":
            read_known_hosts(path)
        elif name == "ssh_config":
            read_ssh_config(path, named=True)
        else:
            problem = identity_problem(read_bytes_bounded(path, MAX_KEY_FILE_BYTES), os.environ)
            # located at the file itself: hosts sharing one key share its one line
            return [f"{path}:1:1: {name}: {problem}"] if problem else []
    except InputError as exc:
        return [m if located(m) else f"{host.origin}.{name}: {m}" for m in exc.messages]
    return []


def host_validator() -> Any:
    """A validator of one host of the native form (``$defs/host``), for Ansible hosts too."""
    return subschema_validator("inventory", "host")


READERS = ("nasplan", "ansible")


@dataclass(frozen=True)
class Login:
    """``-u USER`` and ``--private-key FILE``: the login of every host whose inventory sets
    none (as Ansible's: the inventory's ``ansible_user`` wins over ``-u``)."""

    user: str | None = None
    identity_file: Path | None = None

    def to_dict(self) -> dict[str, str]:
        """run.json's ``login``: what was given, for ``--resume`` and ``restore``."""
        found = {"user": self.user, "identity_file": self.identity_file}
        return {k: str(v) for k, v in found.items() if v is not None}


def login_of(run: Mapping[str, Any]) -> Login:
    """The ``-u`` / ``--private-key`` a run was given (run.json's ``login``)."""
    given = run.get("login") or {}
    key = given.get("identity_file")
    return Login(given.get("user"), Path(key) if key else None)


@dataclass(frozen=True)
class InventoryChoice:
    """What the command line chose: every ``-i`` in order (none: the plan's ``inventory:``),
    ``--inventory-reader`` (None: the plan's ``inventory_reader``, else nasplan's) and the
    login ``-u`` / ``--private-key`` give."""

    paths: tuple[Path, ...] = ()
    reader: str | None = None
    login: Login = field(default_factory=Login)


def load_inventory(
    sources: Path | Sequence[Path],
    reader: str = "nasplan",
    playbook_dir: Path | None = None,
    login: Login | None = None,
) -> Inventory:
    """Read an inventory; raise InputError with FILE:LINE:COL lines.

    ``sources``: one path (a native nasplan inventory, or an Ansible one), or several ``-i``
    merged in Ansible's order (nasplan.input.ansible_sources: files, directories, host lists).
    ``reader``: ``nasplan`` (its own reader), or ``ansible``: what ``ansible-inventory --list``
    prints for the same sources (nasplan.input.ansible_command). ``playbook_dir``: where
    Ansible's playbook would be (a plan's directory): its ``group_vars/`` and ``host_vars/``
    count after the inventory's, as Ansible counts them. ``login``: ``-u`` / ``--private-key``,
    for the hosts whose inventory sets no user or key.
    """
    return read_inventory(sources, reader, playbook_dir, login).inventory


@dataclass(frozen=True)
class ReadInventory:
    """An inventory and how it was read: for an Ansible one, the sources' graph (each host's
    vars as Ansible holds them) and the vars mapped to nasplan's fields with their origins."""

    inventory: Inventory
    sources: Sources | None = None
    parsed: AnsibleInventory | None = None
    login: dict[str, str] = field(default_factory=dict)  # a login default -> where it was set


def read_inventory(
    sources: Path | Sequence[Path],
    reader: str = "nasplan",
    playbook_dir: Path | None = None,
    login: Login | None = None,
) -> ReadInventory:
    """``load_inventory``, keeping what was read on the way (``nasplan inventory`` shows it)."""
    read = _read_inventory(sources, reader, playbook_dir)
    return _with_login(read, login or Login())


def _with_login(read: ReadInventory, login: Login) -> ReadInventory:
    """Every SSH host whose inventory sets no user or key logs in with ``login``'s (``-u``,
    ``--private-key``), else, for an Ansible inventory, with Ansible's own defaults
    (nasplan.input.ansible_defaults); each checked as an inventory's value."""
    from nasplan.input.ansible_defaults import login_defaults

    given = {
        k: (str(v), "-u" if k == "user" else "--private-key")
        for k, v in (("user", login.user), ("identity_file", login.identity_file))
        if v is not None
    }
    defaults = {**(login_defaults() if read.sources is not None else {}), **given}
    if not defaults:
        return read
    errors = [
        f"{where}: {describe_error(error)[1]}"
        for key, (value, where) in defaults.items()
        for error in host_validator().iter_errors({key: value})
    ]
    if errors:
        raise InputError(errors)
    hosts = dict(read.inventory.hosts)
    for name, host in hosts.items():
        if host.is_local:
            continue
        changes: dict[str, Any] = {}
        if host.user is None and "user" in defaults:
            changes["user"] = defaults["user"][0]
        if host.identity_file is None and "identity_file" in defaults:
            changes["identity_file"] = Path(defaults["identity_file"][0]).expanduser().absolute()
        if changes:
            hosts[name] = dataclasses.replace(host, **changes)
    inventory = dataclasses.replace(read.inventory, hosts=hosts, login=login.to_dict())
    return dataclasses.replace(
        read, inventory=inventory, login={k: w for k, (_, w) in defaults.items()}
    )


def _read_inventory(
    sources: Path | Sequence[Path], reader: str, playbook_dir: Path | None
) -> ReadInventory:
    paths = (sources,) if isinstance(sources, Path) else tuple(sources)
    if not paths:
        raise InputError("no inventory given")
    if reader not in READERS:
        raise InputError(f"inventory reader {reader!r}: expected one of {', '.join(READERS)}")
    if reader == "ansible":
        from nasplan.input import ansible_command

        read = ansible_command.read_through_ansible(paths, playbook_dir)
    else:
        read = read_sources(paths, playbook_dir)
        if read.native is not None:
            errors = schema_errors(read.native, "inventory")
            if errors:
                raise InputError(errors)
            return ReadInventory(_from_native(read.native))
    parsed = ansible.resolve(read)
    return ReadInventory(_from_ansible(paths, reader, read, parsed), read, parsed)


def _resolve_path(base: Path, value: Any) -> Path | None:
    if value is None:
        return None
    candidate = Path(str(value)).expanduser()
    return candidate if candidate.is_absolute() else (base / candidate)


def _parse_interfaces(
    document: Document, raw: Mapping[str, Any], framing: str, where: tuple[Any, ...]
) -> dict[str, Interface]:
    interfaces: dict[str, Interface] = {}
    for key, spec in raw.items():
        if not isinstance(spec, dict) or "name" not in spec:
            raise InputError(document.error((*where, key), "an interface needs at least 'name'"))
        address = prefix_len = None
        if spec.get("address"):
            try:
                iface = ipaddress.ip_interface(str(spec["address"]))
            except ValueError:
                message = f"not an IP address: {spec['address']!r}"
                raise InputError(document.error((*where, key, "address"), message)) from None
            address = str(iface.ip)
            if "/" in str(spec["address"]):
                prefix_len = iface.network.prefixlen
        speed = None
        if spec.get("speed") is not None:
            try:
                speed = parse_rate(spec["speed"])
            except ValueError as exc:
                raise InputError(document.error((*where, key, "speed"), str(exc))) from None
        interfaces[key] = Interface(
            key=key,
            name=str(spec["name"]),
            role=str(spec.get("role", "other")),
            speed_bits_per_second=speed,
            address=address,
            prefix_len=prefix_len,
            framing=str(spec.get("framing", framing)),
        )
    return interfaces


def _parse_volumes(document: Document, raw: Any, where: tuple[Any, ...]) -> dict[str, Volume]:
    """``volumes: {hdd: {path, share, export}}`` (the schema checked each) -> Volumes."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(document.error(where, "volumes must be a mapping"))
    return {
        str(name): Volume(
            name=str(name),
            path=str(spec["path"]),
            share=spec.get("share"),
            export=spec.get("export"),
            description=str(spec.get("description") or ""),
            bytes_per_second=_byte_rate(spec.get("rate")),
            read_bytes_per_second=_byte_rate(spec.get("read_rate")),
            write_bytes_per_second=_byte_rate(spec.get("write_rate")),
        )
        for name, spec in raw.items()
    }


def _byte_rate(value: Any) -> int | None:
    """``180MiB/s`` (the schema checked its form) in bytes per second; None when not given."""
    return parse_size(str(value)[:-2]) if value else None


def _build_host(
    document: Document,
    name: str,
    merged: dict[str, Any],
    raw_interfaces: Any,
    groups: tuple[str, ...],
    where: tuple[Any, ...],
    *,
    bases: Mapping[str, Path] | None = None,
    plain: Mapping[str, Any] | None = None,
) -> Host:
    """A Host from merged vars; ``where`` (in ``document``) is where the host is defined;
    a relative path is relative to ``bases[field]`` (an Ansible source's directory), else to
    ``document``'s file."""
    base = document.path.parent
    framing = str(merged.get("framing", "ethernet"))
    if raw_interfaces is not None and not isinstance(raw_interfaces, dict):
        raise InputError(document.error((*where, "interfaces"), "interfaces must be a mapping"))
    interfaces = _parse_interfaces(document, raw_interfaces or {}, framing, (*where, "interfaces"))
    volumes = _parse_volumes(document, merged.pop("volumes", None), (*where, "volumes"))
    port = merged.get("port")
    if port is not None and not isinstance(port, int):
        try:
            port = int(port)
        except ValueError:
            raise InputError(document.error((*where, "port"), f"not a port: {port!r}")) from None

    def local(key: str) -> Path | None:
        return _resolve_path((bases or {}).get(key, base), merged.get(key))

    user_vars = {k: v for k, v in merged.items() if k not in CONNECTION_KEYS and k != "address"}
    user_vars.update(plain or {})
    return Host(
        name=name,
        address=str(merged.get("address") or name),
        connection=str(merged.get("connection", "ssh")),
        user=merged.get("user"),
        port=port,
        identity_file=local("identity_file"),
        known_hosts=local("known_hosts"),
        ssh_config=local("ssh_config"),
        proxy_jump=None if merged.get("proxy_jump") is None else str(merged["proxy_jump"]),
        platform_hint=str(merged.get("platform", "auto")),
        framing=framing,
        become_password_env=merged.get("become_password_env"),
        tools={str(k): str(v) for k, v in (merged.get("tools") or {}).items()},
        interfaces=interfaces,
        volumes=volumes,
        groups=groups,
        vars=user_vars,
        origin=f"{document.where(where)}: {format_json_path(where)}",
    )


def _from_native(document: Document) -> Inventory:
    data: dict[str, Any] = document.data
    hosts_raw: dict[str, Any] = data["hosts"]
    all_vars: dict[str, Any] = dict(data.get("vars") or {})
    groups: dict[str, list[str]] = {}
    for group, spec in (data.get("groups") or {}).items():
        for index, member in enumerate(spec.get("hosts") or []):
            if member not in hosts_raw:
                raise InputError(
                    document.error(("groups", group, "hosts", index), f"unknown host {member!r}")
                )
        groups[group] = list(spec.get("hosts") or [])
    for host, spec in hosts_raw.items():
        for group in (spec or {}).get("groups") or []:
            members = groups.setdefault(group, [])
            if host not in members:
                members.append(host)
    hosts: dict[str, Host] = {}
    for host, spec in hosts_raw.items():
        spec = spec or {}
        member_of = tuple(g for g in groups if host in groups[g])
        merged = dict(all_vars)
        for group in member_of:
            merged.update(((data.get("groups") or {}).get(group) or {}).get("vars") or {})
        merged.update(spec.get("vars") or {})
        merged.update({k: v for k, v in spec.items() if k not in ("vars", "interfaces", "groups")})
        hosts[host] = _build_host(
            document, host, merged, spec.get("interfaces"), member_of, ("hosts", host)
        )
    _one_local_host(
        hosts, {name: _where_connection(document, name, hosts[name].groups) for name in hosts}
    )
    return Inventory(
        path=document.path,
        hosts=hosts,
        groups={g: tuple(m) for g, m in groups.items()},
        vars=all_vars,
        sources=(document.path,),
    )


def _where_connection(document: Document, host: str, groups: tuple[str, ...]) -> str:
    """``FILE:LINE:COL: json.path`` of where a native host's ``connection`` was set (the host
    itself, its vars, its last group's vars, the inventory's vars), else of the host."""
    data: dict[str, Any] = document.data
    spec = data["hosts"][host] or {}
    candidates: list[tuple[Any, tuple[Any, ...]]] = [
        (spec, ("hosts", host)),
        (spec.get("vars"), ("hosts", host, "vars")),
        *(
            (((data.get("groups") or {}).get(g) or {}).get("vars"), ("groups", g, "vars"))
            for g in reversed(groups)
        ),
        (data.get("vars"), ("vars",)),
    ]
    for values, path in candidates:
        if isinstance(values, dict) and "connection" in values:
            where = (*path, "connection")
            return f"{document.where(where)}: {format_json_path(where)}"
    return f"{document.where(('hosts', host))}: {format_json_path(('hosts', host))}"


def _one_local_host(hosts: Mapping[str, Host], where: Mapping[str, str]) -> None:
    """InputError at a second ``connection: local`` host (``where``: host -> where it was set):
    there is one control node, nasplan's machine."""
    local = [name for name, host in hosts.items() if host.is_local]
    if len(local) > 1:
        second = local[1]
        raise InputError(
            f"{where[second]}: {second} is a second host with connection: local ({local[0]} is "
            f"one already): local means the machine nasplan runs on; reach {second} over SSH"
        )


def _from_ansible(
    paths: tuple[Path, ...], reader: str, read: Sources, parsed: AnsibleInventory
) -> Inventory:
    """Hosts of an Ansible inventory, their connection vars and interfaces checked as the
    native form's ``host``; each error points where the offending var was set."""
    hosts: dict[str, Host] = {}
    unusable = dict(parsed.unusable)
    for name, found in parsed.hosts.items():
        merged = dict(found.fields)
        if isinstance(merged.get("port"), str) and merged["port"].isdigit():
            merged["port"] = int(merged["port"])  # Ansible reads ansible_port: "2222" as a port
        origins = dict(found.origins)
        checked = {
            k: v
            for k, v in merged.items()
            if k in (*CONNECTION_KEYS, "address", "interfaces", "volumes")
        }
        if "address" not in checked:
            # the host's name is its address: check it as one ("-oProxyCommand=..." is refused)
            checked["address"] = name
            origins["address"] = found.where
        host_errors = []
        for error in host_validator().iter_errors(checked):
            json_path, message, _ = describe_error(error)
            key = str(json_path[0]) if json_path else None
            origin_document, origin_path = origins.get(key, found.where) if key else found.where
            where = (*origin_path, *json_path[1:])
            host_errors.append(f"{at((origin_document, where))}: {message}")
        if host_errors:
            unusable[name] = tuple(sorted(set(host_errors)))
            continue
        interfaces = merged.pop("interfaces", None)
        where_document, where_path = found.where
        where_path = where_path[:-1] if where_path and where_path[-1] == KEY else where_path
        bases = {k: read.base_of(origin[0]) for k, origin in origins.items()}
        hosts[name] = _build_host(
            where_document,
            name,
            merged,
            interfaces,
            found.groups,
            where_path,
            bases=bases,
            plain=found.plain,
        )
    _one_local_host(
        hosts,
        {
            name: at(found.origins.get("connection", found.where))
            for name, found in parsed.hosts.items()
        },
    )
    left_out = tuple(
        f"{lines[0]} (nasplan leaves host {name!r} out; a plan that names it is refused)"
        for name, lines in unusable.items()
    )
    return Inventory(
        path=paths[0],
        hosts=hosts,
        groups={g: tuple(h for h in members if h in hosts) for g, members in parsed.groups.items()},
        vars=parsed.vars,
        warnings=(*parsed.warnings, *left_out),
        sources=paths,
        reader=reader,
        unusable=unusable,
    )
