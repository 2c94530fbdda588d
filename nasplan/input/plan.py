"""Plans: YAML -> Jinja resolved over the inventory -> JSON Schema -> references -> ``Plan``."""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.inventory import Inventory, load_inventory, ssh_file_errors
from nasplan.input.loader import (
    Document,
    JsonPath,
    parse_yaml,
    read_yaml,
    scalar_value,
    schema_errors,
)
from nasplan.network.model import NetworkSpec, parse_link_target, parse_network
from nasplan.units import parse_size

_SINGLE_EXPRESSION = re.compile(r"^\s*\{\{[^{}]*\}\}\s*$")


@dataclass(frozen=True)
class Target:
    """Where a client sends traffic: an interface of the server host, or a bare address."""

    host: str | None
    interface: str | None
    address: str | None
    link: str | None = None  # a plan link's end (``link:p2p@nas``); ``address`` is that end's

    def label(self) -> str:
        """``nas.p2p``, ``link:p2p@nas``, the address, or the server's name (its SSH address)."""
        if self.link and self.host:
            return f"link:{self.link}@{self.host}"
        if self.host and self.interface:
            return f"{self.host}.{self.interface}"
        return self.address or self.host or "?"


@dataclass(frozen=True)
class PlanTest:
    """One test of a plan, resolved: common fields, its kind's own ``settings``, its ``index``."""

    id: str
    name: str
    kind: str
    server: str
    client: str
    target: Target
    repetitions: int
    settings: Mapping[str, Any] = field(default_factory=dict)
    index: int = 0
    # a matrix test's cell: dimension -> value, in the matrix's order ({} outside a matrix);
    # ``id`` is then ``base_id[dim=value,...]``, ``base_id`` the test's id in the plan
    cell: Mapping[str, Any] = field(default_factory=dict)
    base_id: str = ""

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts the test runs on: ``host:`` of a one-host kind (disk), else client, server."""
        if self.settings.get("host"):
            return (str(self.settings["host"]),)
        return (self.client, self.server)


@dataclass(frozen=True)
class Plan:
    """A validated plan with its inventory; ``resolved`` is the plan data after Jinja."""

    path: Path
    name: str
    description: str
    inventory: Inventory
    known_hosts: Path | None
    setup_packages: tuple[str, ...]
    tests: tuple[PlanTest, ...]
    resolved: Mapping[str, Any]
    network: NetworkSpec = field(default_factory=NetworkSpec)

    @property
    def host_names(self) -> tuple[str, ...]:
        """Every host a test uses or the network section changes, sorted."""
        return tuple(
            sorted({h for test in self.tests for h in test.hosts} | set(self.network.hosts))
        )


def _short(template: str) -> str:
    """A template as shown in an error: repr, cut to 80 characters."""
    return repr(template if len(template) <= 80 else template[:77] + "...")


def parse_extra_var(text: str) -> tuple[str, Any]:
    """``"duration_s=1"`` -> ``("duration_s", 1)``; the value is read as a YAML scalar."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise InputError(f"-e {text!r}: expected KEY=VALUE")
    try:
        # the plan's own bounded loader: an alias bomb on the command line is refused too
        parsed = parse_yaml(Path("-e"), value).data if value else ""
    except InputError as exc:
        if "alias" in str(exc) or "nesting" in str(exc):
            raise InputError(f"-e {key.strip()}: {exc}") from None
        parsed = value
    return key.strip(), parsed


def _whole_numbers(value: Any) -> Any:
    """Floats without a fraction as ints (``parallel: 2.0`` -> 2): tools want ``-P 2``."""
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


class _Templates:
    """The plan's Jinja sandbox, made at the first template the plan holds (a plan without
    any does not pay for importing Jinja)."""

    def __init__(self) -> None:
        self._env: Any = None

    def render(self, template: str, context: Mapping[str, Any]) -> str:
        """``template`` rendered over ``context`` (raises as PlanSandbox.render does)."""
        if self._env is None:
            from nasplan.input.templating import PlanSandbox

            self._env = PlanSandbox()
        rendered: str = self._env.render(template, context)
        return rendered


def _render_value(
    env: _Templates,
    value: Any,
    context: Mapping[str, Any],
    document: Document,
    path: JsonPath,
) -> Any:
    if isinstance(value, dict):
        return {k: _render_value(env, v, context, document, (*path, k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_render_value(env, v, context, document, (*path, i)) for i, v in enumerate(value)]
    if not isinstance(value, str) or ("{{" not in value and "{%" not in value):
        return value
    # Only a plan that holds a template imports Jinja (every apply starts by loading the plan).
    import jinja2

    from nasplan.input.templating import TemplateRefused

    try:
        rendered = env.render(value, context)
    except TemplateRefused as exc:
        raise InputError(
            document.error(path, f"template {_short(value)}: refused: {exc}")
        ) from None
    except jinja2.TemplateError as exc:
        message = exc.message or str(exc)
        raise InputError(document.error(path, f"template {_short(value)}: {message}")) from None
    except (ArithmeticError, ValueError, TypeError, LookupError, RecursionError) as exc:
        # Python errors the template itself caused ({{ 1 / 0 }}, {{ 'x' | int(base=99) }})
        message = f"{type(exc).__name__}: {exc}"
        raise InputError(document.error(path, f"template {_short(value)}: {message}")) from None
    if _SINGLE_EXPRESSION.match(value):
        # A value that is one expression keeps its type: "{{ vars.repetitions }}" -> 5, not "5".
        return scalar_value(rendered)
    return rendered


def resolve_templates(
    document: Document, inventory: Inventory, extra_vars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Render every Jinja expression of the plan over ``hosts``, ``groups`` and ``vars``.

    Precedence of vars, lowest first: inventory vars, plan vars, ``extra_vars`` (``-e``).
    """
    env = _Templates()
    data: dict[str, Any] = dict(document.data)
    context: dict[str, Any] = {
        "hosts": {name: host.template_view() for name, host in inventory.hosts.items()},
        "groups": {name: list(members) for name, members in inventory.groups.items()},
        "vars": dict(inventory.vars),
    }
    plan_vars = data.get("vars")
    if isinstance(plan_vars, dict):
        plan_vars = _render_value(env, plan_vars, context, document, ("vars",))
        context["vars"] = {**context["vars"], **plan_vars}
    if extra_vars:
        context["vars"] = {**context["vars"], **extra_vars}
        data["vars"] = {**(plan_vars if isinstance(plan_vars, dict) else {}), **extra_vars}
    elif isinstance(plan_vars, dict):
        data["vars"] = plan_vars
    return {
        key: value if key == "vars" else _render_value(env, value, context, document, (key,))
        for key, value in data.items()
    }


def _interface_at(inventory: Inventory, server: str | None) -> str | None:
    """The server's inventory interface whose address is the one nasplan connects to (the
    default target), so a test without ``target:`` is labelled ``nas.lan``; None when none is."""
    host = inventory.hosts.get(server) if server else None
    if host is None:
        return None
    for key, iface in sorted(host.interfaces.items()):
        if iface.address and iface.address.split("/")[0] == host.address:
            return key
    return None


def _parse_target(
    document: Document,
    raw: dict[str, Any],
    index: int,
    inventory: Inventory,
    network: NetworkSpec | None = None,
) -> Target:
    where: JsonPath = ("tests", index, "target")
    server = raw.get("server")
    text = raw.get("target")
    if text is None:
        return Target(server, _interface_at(inventory, server), None)
    link_end = parse_link_target(network or NetworkSpec(), str(text))
    if isinstance(link_end, str):
        raise InputError(document.error(where, link_end))
    if link_end is not None:
        link, end = link_end
        if end.host != server:
            raise InputError(
                document.error(where, f"target {text!r} is not on the server host {server!r}")
            )
        return Target(server, end.interface_key, end.ip, link.name)
    try:
        return Target(None, None, str(ipaddress.ip_address(text)))
    except ValueError:
        pass
    host, _, iface = str(text).partition(".")
    if not iface:
        raise InputError(
            document.error(
                where, f"expected HOST.INTERFACE (e.g. {server}.lan) or an IP address, got {text!r}"
            )
        )
    if host != server:
        raise InputError(
            document.error(
                where, f"target {text!r} is not an interface of the server host {server!r}"
            )
        )
    interfaces = inventory.hosts[server].interfaces
    if iface not in interfaces:
        known = ", ".join(sorted(interfaces)) or "none"
        raise InputError(
            document.error(
                where,
                f"host {server!r} has no interface {iface!r} in {inventory.path} (has: {known})",
            )
        )
    return Target(server, iface, None)


def _check_hosts(
    document: Document, raw: dict[str, Any], index: int, inventory: Inventory
) -> list[str]:
    errors = []
    # a one-host kind (disk) names ``host`` instead of server and client
    for role in [r for r in ("server", "client", "host") if r in raw]:
        name = raw[role]
        if name not in inventory.hosts:
            known = ", ".join(sorted(inventory.hosts))
            errors.append(
                document.error(
                    ("tests", index, role),
                    f"unknown host {name!r} (inventory {inventory.path} has: {known})",
                )
            )
    if not errors and "server" in raw and raw.get("server") == raw.get("client"):
        errors.append(
            document.error(("tests", index, "client"), "client and server are the same host")
        )
    return errors


# An iSCSI LUN reads and writes whole blocks; 512 bytes is the smallest block a LUN has.
LUN_BLOCK_BYTES = 512


def _check_blocks(document: Document, raw: Mapping[str, Any], index: int) -> list[str]:
    """An iscsi test's sizes in whole 512-byte blocks, told at validation, not at run time."""
    if raw.get("kind") != "iscsi":
        return []
    errors = []
    for key in ("size", "request_size"):
        if key not in raw:
            continue
        try:
            size_bytes = parse_size(raw[key])
        except ValueError:
            continue  # the schema's pattern says what a size looks like
        if size_bytes % LUN_BLOCK_BYTES:
            whole = size_bytes // LUN_BLOCK_BYTES * LUN_BLOCK_BYTES
            errors.append(
                document.error(
                    ("tests", index, key),
                    f"{raw[key]} = {size_bytes} bytes is not a whole number of "
                    f"{LUN_BLOCK_BYTES}-byte blocks, which an iSCSI LUN reads and writes: "
                    f"give it in MiB (MB is 10^6 bytes) or as {whole} bytes",
                )
            )
    return errors


def _build_tests(
    document: Document,
    resolved: dict[str, Any],
    inventory: Inventory,
    network: NetworkSpec | None = None,
) -> tuple[PlanTest, ...]:
    errors: list[str] = []
    tests: list[PlanTest] = []
    seen: dict[str, int] = {}
    for index, raw in enumerate(resolved["tests"]):
        host_errors = _check_hosts(document, raw, index, inventory)
        host_errors += _check_blocks(document, raw, index)
        if host_errors:
            errors.extend(host_errors)
            continue
        test_id = raw.get("id") or f"{raw['kind']}-{index + 1}"
        if test_id in seen:
            errors.append(
                document.error(
                    ("tests", index, "id"),
                    f"duplicate test id {test_id!r} (also tests[{seen[test_id]}])",
                )
            )
            continue
        seen[test_id] = index
        try:
            target = _parse_target(document, raw, index, inventory, network)
        except InputError as exc:
            errors.extend(exc.messages)
            continue
        settings = {
            k: v
            for k, v in raw.items()
            if k not in ("id", "name", "kind", "server", "client", "target", "repetitions")
        }
        tests.append(
            PlanTest(
                id=test_id,
                name=str(raw.get("name") or test_id),
                kind=str(raw["kind"]),
                server=raw.get("server", ""),
                client=raw.get("client", ""),
                target=target,
                repetitions=int(raw.get("repetitions", 3)),
                settings=settings,
                index=index,
            )
        )
    if errors:
        raise InputError(errors)
    return tuple(tests)


def planned_inventory(path: Path) -> Path | None:
    """The inventory file a plan names (relative to the plan), without loading either; None
    when the plan is unreadable or names none (load_plan then says why)."""
    try:
        data = read_yaml(path).data
    except InputError:
        return None
    value = data.get("inventory") if isinstance(data, dict) else None
    return path.parent / value if isinstance(value, str) and value else None


def load_plan(
    path: Path,
    inventory_override: Path | None = None,
    extra_vars: Mapping[str, Any] | None = None,
) -> Plan:
    """Load and validate a plan and its inventory; raise InputError listing every problem."""
    document = read_yaml(path)
    if not isinstance(document.data, dict):
        raise InputError(
            document.error((), "a plan must be a mapping with name, inventory and tests")
        )
    inventory_value = document.data.get("inventory")
    if inventory_override is not None:
        inventory_path = inventory_override
    elif isinstance(inventory_value, str) and inventory_value:
        inventory_path = path.parent / inventory_value
    else:
        errors = schema_errors(document, "plan")
        raise InputError(errors or [document.error(("inventory",), "inventory is required")])
    try:
        inventory = load_inventory(inventory_path)
    except InputError as exc:
        if inventory_override is None and exc.messages[0].endswith(": file not found"):
            raise InputError(
                document.error(("inventory",), f"inventory file not found: {inventory_path}")
            ) from None
        raise exc from None
    resolved = resolve_templates(document, inventory, extra_vars)
    resolved = {k: v if k == "vars" else _whole_numbers(v) for k, v in resolved.items()}
    errors = schema_errors(Document(document.path, resolved, document.positions), "plan")
    if errors:
        raise InputError(errors)
    network = parse_network(document, resolved, inventory)
    tests = _build_tests(document, resolved, inventory, network)
    known_hosts = resolved.get("known_hosts")
    plan = Plan(
        path=path,
        name=resolved["name"],
        description=str(resolved.get("description", "")).strip(),
        inventory=inventory,
        known_hosts=(path.parent / known_hosts) if known_hosts else None,
        setup_packages=tuple((resolved.get("setup") or {}).get("packages") or ()),
        tests=tests,
        resolved=resolved,
        network=network,
    )
    file_errors = [
        line
        for name in plan.host_names
        for line in ssh_file_errors(
            dataclasses.replace(inventory.hosts[name], known_hosts=plan.known_hosts)
            if plan.known_hosts
            else inventory.hosts[name]
        )
    ]
    if file_errors:
        raise InputError(file_errors)
    return plan
