"""Plans: YAML -> Jinja resolved over the inventory -> JSON Schema -> references -> ``Plan``."""

from __future__ import annotations

import copy
import dataclasses
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input import cells, volumes
from nasplan.input.inventory import (
    READERS,
    Inventory,
    InventoryChoice,
    Login,
    load_inventory,
    ssh_file_errors,
)
from nasplan.input.jump_check import jump_errors
from nasplan.input.lab_files import generated_by_lab
from nasplan.input.loader import (
    Document,
    JsonPath,
    load_schema,
    located,
    parse_yaml,
    read_yaml,
    scalar_value,
    schema_errors,
)
from nasplan.input.localfile import MAX_YAML_BYTES, read_text_bounded
from nasplan.input.matrix import dir_name, to_json_cell
from nasplan.input.network import NetworkSpec, parse_link_target, parse_network
from nasplan.input.table import tables_errors
from nasplan.input.vars_files import ExtraVars, read_vars_files, unused_extra_vars
from nasplan.units import format_size, parse_size

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
class Adaptive:
    """``repetitions: {min: 3, max: 15, until: {ci_halfwidth: 2%}}``: at least ``min_n``
    repetitions, then more until the median's confidence interval lies within
    ``ci_halfwidth`` (0.02: ±2 %) of the median, at most ``max_n``."""

    min_n: int
    max_n: int
    ci_halfwidth: float


@dataclass(frozen=True)
class Order:
    """The plan's ``order``: ``interleaved`` (round r runs repetition r of every test, in the
    plan's order), ``shuffled`` (the same rounds, each in an order drawn with ``seed``) or
    ``sequential`` (each test's repetitions back to back); ``seed`` None: drawn by the run."""

    name: str = "sequential"
    seed: int | None = None

    @property
    def interleaved(self) -> bool:
        return self.name != "sequential"


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
    # the cell's own network settings when the plan's links/interfaces use ``{{ matrix.X }}``
    # of a plan-level matrix; None: the plan's (``Plan.network``)
    network: NetworkSpec | None = None
    # ``repetitions: {min, max, until}``: repeat until the median is clear (``repetitions`` is
    # then ``max``); None for a fixed number
    adaptive: Adaptive | None = None
    # the index of the first repetition this test runs: a part of a test (a run's slice, a
    # resumed run) runs repetitions first_repetition .. first_repetition + repetitions - 1
    first_repetition: int = 1
    # (repetition, direction) of this part a resumed run kept, measured ok before: the kind
    # measures none of them again (its other directions, yes)
    kept: frozenset[tuple[int, str | None]] = frozenset()

    def given(self, *keys: str) -> dict[str, Any]:
        """Those of its kind's ``keys`` the plan gives it: a kind's settings default the rest."""
        return {key: self.settings[key] for key in keys if key in self.settings}

    @property
    def indices(self) -> range:
        """The repetition numbers this test (or this part of it) runs."""
        return range(self.first_repetition, self.first_repetition + self.repetitions)

    def wants(self, index: int, direction: str | None = None) -> bool:
        """Whether this part measures ``direction`` of repetition ``index`` (not kept)."""
        return (index, direction) not in self.kept

    @property
    def repetitions_text(self) -> str:
        """``5``, or ``3–15`` for a test that repeats until its answer is clear."""
        rule = self.adaptive
        return f"{rule.min_n}–{rule.max_n}" if rule is not None else str(self.repetitions)

    @property
    def dir_name(self) -> str:
        """The directory of its raw files under ``raw/``: its id, made safe for a path and a URL
        where a matrix value is not (``nasplan.input.matrix.dir_name``)."""
        return dir_name(self.id)

    @property
    def clients(self) -> tuple[str, ...]:
        """The clients that run the test at once (``clients:``), else its one client."""
        named = self.settings.get("clients")
        return tuple(str(c) for c in named) if named else (self.client,)

    @property
    def hosts(self) -> tuple[str, ...]:
        """The hosts the test runs on: ``host:`` of a one-host kind (disk), else the clients
        and the server."""
        if self.settings.get("host"):
            through = self.settings.get("through") or {}
            # (with through: the client that mounts the host's share and runs there)
            return (str(self.settings["host"]), *([str(through["client"])] if through else []))
        return (*self.clients, self.server)


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
    order: Order = field(default_factory=Order)
    # a part of the plan chosen with --limit / --tests (``nasplan.input.subset``): run.json's
    # ``subset``; None: the whole plan
    subset: Mapping[str, Any] | None = None

    @property
    def host_names(self) -> tuple[str, ...]:
        """Every host a test uses or the network section changes, sorted."""
        cell_hosts = {h for test in self.tests if test.network for h in test.network.hosts}
        return tuple(
            sorted(
                {h for test in self.tests for h in test.hosts}
                | set(self.network.hosts)
                | cell_hosts
            )
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

    from nasplan.input.templating import TemplateRefused, looked_up

    if _SINGLE_EXPRESSION.match(value):
        # "{{ vars.sizes }}" naming a list or mapping is that list (a matrix's values), not
        # its Python text
        found = looked_up(value, context)
        if isinstance(found, (list, dict)):
            return copy.deepcopy(found)

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


def _warn_unused(
    path: Path, document: Document, inventory: Inventory, extra_vars: Mapping[str, Any]
) -> Inventory:
    """The inventory with a warning for each ``-e`` var no template of the plan (or of its
    vars_files) names (said where the inventory's warnings are: validate, apply, run.json)."""
    texts = [read_text_bounded(path, MAX_YAML_BYTES, "plan"), repr(read_vars_files(document))]
    typed = extra_vars.typed if isinstance(extra_vars, ExtraVars) else frozenset(extra_vars)
    unused = unused_extra_vars(texts, {k: v for k, v in extra_vars.items() if k in typed})
    return dataclasses.replace(inventory, warnings=(*inventory.warnings, *unused))


def _resolve(
    document: Document, inventory: Inventory, extra_vars: Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], cells.Expansion | None]:
    """Every Jinja expression of the plan rendered over ``hosts``, ``groups`` and ``vars``, with
    the expansion of the plan's tests into their cells (None when ``tests`` is not a list, which
    the schema then tells).

    Precedence of vars, lowest first: inventory vars, plan vars, ``extra_vars`` (``-e``).
    A test with a matrix (its own or the plan's) is there once per cell (``nasplan.input.cells``).
    """
    env = _Templates()
    data: dict[str, Any] = dict(document.data)
    context: dict[str, Any] = {
        "hosts": {name: host.template_view() for name, host in inventory.hosts.items()},
        "groups": {name: list(members) for name, members in inventory.groups.items()},
        "vars": dict(inventory.vars),
    }
    plan_vars = data.get("vars")
    from_files = read_vars_files(document)  # over the plan's vars:, as a play's vars_files
    if from_files:
        plan_vars = {**(plan_vars if isinstance(plan_vars, dict) else {}), **from_files}
    if isinstance(plan_vars, dict):
        plan_vars = _render_value(env, plan_vars, context, document, ("vars",))
        context["vars"] = {**context["vars"], **plan_vars}
    if extra_vars:
        context["vars"] = {**context["vars"], **extra_vars}
        data["vars"] = {**(plan_vars if isinstance(plan_vars, dict) else {}), **extra_vars}
    elif isinstance(plan_vars, dict):
        data["vars"] = plan_vars

    def render(value: Any, ctx: Mapping[str, Any], doc: Document, path: JsonPath) -> Any:
        return _render_value(env, value, ctx, doc, path)

    if not isinstance(data.get("tests"), list):
        return {
            key: value if key == "vars" else render(value, context, document, (key,))
            for key, value in data.items()
        }, None
    expansion = cells.expand(document, data, context, render)
    expansion.variants = cells.network_variants(document, data, expansion, context, render) or {}
    first = next(iter(expansion.variants.values()), None)
    resolved: dict[str, Any] = {}
    for key, value in data.items():
        if key == "vars":
            resolved[key] = value
        elif key == "tests":
            resolved[key] = [one.body for one in expansion.tests]
        elif key == "matrix" and expansion.matrix is not None:
            resolved[key] = render(value, context, document, (key,))
        elif first is not None and key in cells.NETWORK_KEYS:
            resolved[key] = first[key]
        else:
            resolved[key] = render(value, context, document, (key,))
    return resolved, expansion


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
    """The test's ``target:``, or its ``through:``'s: the NAS's address a client mounts its
    ``share`` or ``export`` from (a LUN's ``target``, with neither, is the LUN's name)."""
    where: JsonPath = ("tests", index, "target")
    server, text = raw.get("server"), raw.get("target")
    via = raw.get("through")
    if isinstance(via, dict) and "target" in via and ("share" in via or "export" in via):
        where, server, text = ("tests", index, "through", "target"), raw.get("host"), via["target"]
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
                f"host {server!r} has no interface {iface!r} in {inventory.named} (has: {known})",
            )
        )
    return Target(server, iface, None)


def _check_hosts(
    document: Document, raw: dict[str, Any], index: int, inventory: Inventory
) -> list[str]:
    errors = []
    # a one-host kind (disk) names ``host`` instead of server and client; ``clients`` run at once
    roles: list[tuple[JsonPath, Any]] = [
        (("tests", index, role), raw[role]) for role in ("server", "client", "host") if role in raw
    ]
    clients: list[tuple[JsonPath, Any]] = [
        (("tests", index, "clients", i), c) for i, c in enumerate(raw.get("clients") or [])
    ]
    if isinstance(raw.get("through"), dict) and "client" in raw["through"]:
        roles.append((("tests", index, "through", "client"), raw["through"]["client"]))
    for where, name in [*roles, *clients]:
        if name in inventory.unusable:
            errors += inventory.refusals_of([name])
        elif name not in inventory.hosts:
            known = ", ".join(sorted(inventory.hosts))
            message = f"unknown host {name!r} (inventory {inventory.named} has: {known})"
            errors.append(document.error(where, message))
    clients.insert(0, (("tests", index, "client"), raw.get("client")))
    same = [where for where, name in clients if "server" in raw and name == raw.get("server")]
    if not errors and same:
        errors.append(document.error(same[0], "client and server are the same host"))
    return errors


def _check_blocks(document: Document, raw: Mapping[str, Any], index: int) -> list[str]:
    """Every size of the test as its kind's schema bounds it, whatever its spelling (``"0MiB"``
    as 0): its minimum and maximum, a whole number of blocks where the kind moves blocks (the
    schema's ``x-whole-blocks-bytes``: an iSCSI LUN's 512-byte blocks), a set of files
    (``files``) each file's and, in all, the test's own size's; told at validation, not at run
    time."""
    keys = load_schema("plan")["$defs"].get(str(raw.get("kind")), {}).get("properties", {})
    errors = []
    for key, spec in keys.items():
        rule = _size_rule(spec)
        if rule is None or key not in raw:
            continue
        size_bytes, error = _bounded(document, ("tests", index, key), raw[key], rule)
        errors += [error] if error else []
        block = spec.get("x-whole-blocks-bytes")
        if error or size_bytes is None or not block or size_bytes % block == 0:
            continue
        whole = size_bytes // block * block
        errors.append(
            document.error(
                ("tests", index, key),
                f"{raw[key]} = {size_bytes} bytes is not a whole number of "
                f"{block}-byte blocks, which a {raw['kind']} test reads and writes: "
                f"give it in MiB (MB is 10^6 bytes) or as {whole} bytes",
            )
        )
    for spec in keys.values():
        if spec.get("x-total-of") in raw and (rule := _size_rule(spec)):
            errors += _check_set(document, raw, index, str(spec["x-total-of"]), rule)
    return errors


def _size_rule(spec: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A size's rule (a string like 64MiB or a number of bytes): its number's branch, whose
    minimum and maximum hold for the string too; None for a key that is no size."""
    branches = [b for b in spec.get("oneOf") or [] if isinstance(b, Mapping)]
    if not any(b.get("type") == "string" and "pattern" in b for b in branches):
        return None
    return next((b for b in branches if b.get("type") == "integer"), None)


def _bounded(
    document: Document, where: JsonPath, given: Any, rule: Mapping[str, Any]
) -> tuple[int | None, str | None]:
    """(bytes, the error of a size written as a string outside its rule's bounds)."""
    try:
        size_bytes = parse_size(given)
    except ValueError:
        return None, None  # the schema's pattern says what a size looks like
    if not isinstance(given, str):
        return size_bytes, None  # a number: the schema itself said it
    low, high = rule.get("minimum"), rule.get("maximum")
    if isinstance(low, int) and size_bytes < low:
        return size_bytes, document.error(
            where, f"{given!r} is {size_bytes} bytes: at least {_bytes(low)}"
        )
    if isinstance(high, int) and size_bytes > high:
        return size_bytes, document.error(
            where, f"{given!r} is {size_bytes} bytes: at most {_bytes(high)}"
        )
    return size_bytes, None


def _check_set(
    document: Document, raw: Mapping[str, Any], index: int, key: str, total: Mapping[str, Any]
) -> list[str]:
    """A set of files: each group's file size in its bounds, and all its bytes in ``total``'s."""
    given = raw[key]
    groups = given if isinstance(given, list) else [given]
    rule = _size_rule(load_schema("plan")["$defs"]["file_set"]["properties"]["size"]) or {}
    errors: list[str] = []
    in_all = files = 0
    for number, group in enumerate(groups):
        if not isinstance(group, Mapping) or "size" not in group:
            return errors
        where = ("tests", index, key, *((number,) if isinstance(given, list) else ()), "size")
        size_bytes, error = _bounded(document, where, group["size"], rule)
        errors += [error] if error else []
        count = group.get("count")
        if size_bytes is None or not isinstance(count, int) or isinstance(count, bool):
            return errors
        in_all, files = in_all + count * size_bytes, files + count
    high = total.get("maximum")
    if not errors and isinstance(high, int) and in_all > high:
        errors.append(
            document.error(
                ("tests", index, key),
                f"{files} files of {in_all} bytes in all: at most {_bytes(high)}",
            )
        )
    return errors


def _bytes(size_bytes: int) -> str:
    """``1 byte``, ``1 MiB``, ``16 TiB``: a bound as the message names it."""
    if size_bytes >= 2**40 and size_bytes % 2**40 == 0:
        return f"{size_bytes // 2**40} TiB"
    if size_bytes >= 2**20 and size_bytes % 2**20 == 0:
        return format_size(size_bytes)
    return f"{size_bytes} byte" + ("" if size_bytes == 1 else "s")


def _repetition_count(value: Any) -> int:
    """``repetitions: 5`` -> 5; ``{min: 3, max: 15, ...}`` -> 15 (the most it runs)."""
    return int(value["max"]) if isinstance(value, dict) else int(value)


def _adaptive(value: Any) -> Adaptive | None:
    """``repetitions: {min, max, until: {ci_halfwidth: 2%}}`` -> Adaptive (the schema checked
    it); None for a fixed number."""
    if not isinstance(value, dict):
        return None
    halfwidth = (value.get("until") or {}).get("ci_halfwidth", "2%")
    if isinstance(halfwidth, str):
        fraction = float(halfwidth.rstrip("%")) / 100
    else:
        fraction = float(halfwidth)
    return Adaptive(int(value["min"]), int(value["max"]), fraction)


def plan_order(resolved: Mapping[str, Any], tests: int) -> Order:
    """The plan's ``order`` (default: interleaved for more than one test) and its ``seed``
    (the plan's, else ``vars.seed``, which ``-e seed=N`` sets; None: the run draws one)."""
    name = resolved.get("order") or ("interleaved" if tests > 1 else "sequential")
    seed = resolved.get("seed")
    if seed is None:
        seed = (resolved.get("vars") or {}).get("seed")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise InputError(f"vars.seed: expected a whole number 0 or more, got {seed!r}")
    return Order(str(name), seed)


def _check_adaptive(document: Document, raw: Mapping[str, Any], index: int) -> list[str]:
    """``repetitions: {min, max}`` with min <= max, told at validation."""
    value = raw.get("repetitions")
    if isinstance(value, dict) and int(value["min"]) > int(value["max"]):
        return [
            document.error(
                ("tests", index, "repetitions"),
                f"min {value['min']} is more than max {value['max']}",
            )
        ]
    return []


def _build_tests(
    document: Document,
    resolved: dict[str, Any],
    inventory: Inventory,
    network: NetworkSpec | None = None,
    expansion: cells.Expansion | None = None,
    networks: Mapping[str, NetworkSpec] | None = None,
) -> tuple[PlanTest, ...]:
    """The plan's tests (``resolved["tests"]``: one per cell of a matrix test, ``expansion``
    saying which); errors on a cell name it, each told once per plan test."""
    errors: list[str] = []
    tests: list[PlanTest] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(resolved["tests"]):
        one = expansion.tests[number] if expansion else None
        index = one.index if one else number
        doc = one.document(document) if one else document
        test_network = (networks or {}).get(one.network_key or "") if one else None
        host_errors = _check_hosts(doc, raw, index, inventory)
        if not host_errors:
            raw, volume_errors = volumes.resolve(doc, raw, index, inventory)
            host_errors += volume_errors
        host_errors += _check_blocks(doc, raw, index)
        host_errors += _check_adaptive(doc, raw, index)
        if host_errors:
            errors.extend(host_errors)
            continue
        base_id = raw.get("id") or f"{raw['kind']}-{index + 1}"
        test_id = one.test_id if one and one.cell else base_id
        prior = seen.setdefault(base_id, index)
        if prior != index or (test_id != base_id and test_id in seen):
            also = seen.get(test_id, prior)
            message = f"duplicate test id {test_id!r} (also tests[{also}])"
            errors.append(doc.error(("tests", index, "id"), message))
            continue
        if test_id != base_id:
            seen[test_id] = index
        try:
            target = _parse_target(doc, raw, index, inventory, test_network or network)
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
                client=raw.get("client") or (raw.get("clients") or [""])[0],
                target=target,
                repetitions=_repetition_count(raw.get("repetitions", 3)),
                settings=settings,
                index=number,
                adaptive=_adaptive(raw.get("repetitions")),
                cell=to_json_cell(one.cell) if one else {},
                base_id=base_id,
                network=test_network,
            )
        )
    if errors:
        raise InputError(cells.once_per_test(errors))
    return tuple(tests)


def _named_inventories(value: Any) -> list[tuple[str, JsonPath]] | None:
    """The inventories a plan's ``inventory:`` names, each with its JSON path; None when it
    names none the way the schema allows."""
    if isinstance(value, str) and value:
        return [(value, ("inventory",))]
    if isinstance(value, list) and value and all(isinstance(v, str) and v for v in value):
        return [(v, ("inventory", i)) for i, v in enumerate(value)]
    return None


def planned_inventory(path: Path) -> Path | None:
    """The one inventory a plan names (relative to the plan), without loading either; None
    when the plan is unreadable, names none or several (load_plan then says why)."""
    try:
        data = read_yaml(path).data
    except InputError:
        return None
    named = _named_inventories(data.get("inventory") if isinstance(data, dict) else None)
    return path.parent / named[0][0] if named and len(named) == 1 else None


def lab_inventory(plan_file: Path, choice: InventoryChoice) -> Path | None:
    """The one inventory the plan reads when ``nasplan lab up`` writes it and the lab is not up
    (it is not there yet); None otherwise (several ``-i``, an inventory that is there)."""
    if len(choice.paths) > 1:
        return None
    planned = choice.paths[0] if choice.paths else planned_inventory(plan_file)
    if planned is None or planned.exists() or not generated_by_lab(planned):
        return None
    return planned


def _relocated(
    document: Document, named: list[tuple[str, JsonPath]], sources: Sequence[Path], line: str
) -> str:
    """A problem of an inventory the plan names that has no line of its own (not found, a
    directory, a FIFO, unreadable), located at the plan's ``inventory:``."""
    if located(line) is not None:
        return line
    for (_, json_path), source in zip(named, sources, strict=True):
        if line == f"{source}: file not found":
            return document.error(json_path, f"inventory file not found: {source}")
        if line.startswith(f"{source}"):
            return document.error(json_path, line)
    return line


def load_plan(
    path: Path,
    inventory_override: Path | Sequence[Path] | None = None,
    extra_vars: Mapping[str, Any] | None = None,
    inventory_reader: str | None = None,
    login: Login | None = None,
) -> Plan:
    """Load and validate a plan and its inventory; raise InputError listing every problem.

    ``inventory_override``: the ``-i`` given (one or several, merged in order), else the plan's
    ``inventory:``; ``inventory_reader``: ``--inventory-reader``, else the plan's, else nasplan.
    """
    document = read_yaml(path)
    if not isinstance(document.data, dict):
        raise InputError(
            document.error((), "a plan must be a mapping with name, inventory and tests")
        )
    named = _named_inventories(document.data.get("inventory"))
    if isinstance(inventory_override, Path):
        inventory_override = (inventory_override,)
    reader = inventory_reader or document.data.get("inventory_reader") or "nasplan"
    if inventory_override:
        sources = tuple(inventory_override)
    elif named is not None:
        sources = tuple(path.parent / value for value, _ in named)
    else:
        from nasplan.input.ansible_defaults import default_inventory

        # none named: the one Ansible would take (ANSIBLE_INVENTORY, ansible.cfg's inventory)
        sources = default_inventory()
        if not sources:
            message = (
                "inventory is required (or -i FILE, ANSIBLE_INVENTORY, or [defaults] inventory "
                "in ansible.cfg)"
            )
            raise InputError(document.error(("inventory",), message))
    if reader not in READERS:
        raise InputError(schema_errors(document, "plan") or f"inventory reader {reader!r}")
    try:
        inventory = load_inventory(sources, reader, path.parent, login)
    except InputError as exc:
        if inventory_override or named is None:
            raise exc from None
        raise InputError([_relocated(document, named, sources, m) for m in exc.messages]) from None
    if extra_vars:
        inventory = _warn_unused(path, document, inventory, extra_vars)
    resolved, expansion = _resolve(document, inventory, extra_vars)
    resolved = {k: v if k == "vars" else _whole_numbers(v) for k, v in resolved.items()}
    if expansion is not None:
        errors = cells.cell_schema_errors(document, resolved, expansion)
    else:
        errors = schema_errors(Document(document.path, resolved, document.positions), "plan")
    if errors:
        raise InputError(errors)
    network = parse_network(document, resolved, inventory)
    networks = cells.cell_networks(document, resolved, expansion, inventory)
    tests = _build_tests(document, resolved, inventory, network, expansion, networks)
    used = sorted({name for test in tests for name in test.hosts if name in inventory.hosts})
    unread: list[str] = []
    jump_problems = jump_errors((inventory.hosts[name] for name in used), unread)
    if jump_problems:
        raise InputError(jump_problems)
    if unread:  # (said where the inventory's warnings are: validate, apply, run.json)
        inventory = dataclasses.replace(inventory, warnings=(*inventory.warnings, *unread))
    table_problems = tables_errors(document, resolved, [(t.base_id, t.cell) for t in tests])
    if table_problems:
        raise InputError(table_problems)
    if any(test.cell for test in tests):
        # run.json's plan: each cell's test under its own id
        resolved["tests"] = [
            {**raw, "id": t.id} for raw, t in zip(resolved["tests"], tests, strict=True)
        ]
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
        order=plan_order(resolved, len(tests)),
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
        # hosts sharing one file (vars for all of them) share its lines' errors: said once
        raise InputError(list(dict.fromkeys(file_errors)))
    return plan
