"""``--limit`` and ``--tests``: a part of a plan, chosen as Ansible users choose hosts.

``--limit nas,ws`` (host or group names, ``nas*`` globs, ``!mac`` to leave one out) keeps the
tests whose every host is in it, and the network changes on those hosts only; ``--tests`` keeps
the tests whose id or base id a pattern matches (``smb*``, ``smb[link=p2p10*``). Both take
Ansible's pattern grammar: terms joined by ``,`` or ``:`` are a union, ``&X`` keeps only what X
also matches, ``!X`` leaves X out (only ``&`` / ``!`` terms: everything, then those). What was
left out is said once; a pattern that matches nothing is an InputError (exit 2).
"""

from __future__ import annotations

import dataclasses
import fnmatch
import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nasplan.errors import InputError
from nasplan.input.matrix import select, split_list
from nasplan.input.network import NetworkSpec
from nasplan.input.plan import Plan, PlanTest

SHOWN_IDS = 5  # ids named in an error or a note, then "and N more"


@dataclass(frozen=True)
class Subset:
    """What ``--limit`` and ``--tests`` chose: the patterns as given, how many of the plan's
    tests are left (``selected`` of ``total``), and what was left out (``notes``, said once)."""

    limit: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    selected: int = 0
    total: int = 0
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """run.json's ``subset``: ``{"limit": [...], "tests": [...], "selected": N, "of": M}``."""
        return {
            "limit": list(self.limit),
            "tests": list(self.tests),
            "selected": self.selected,
            "of": self.total,
        }


def _some(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:SHOWN_IDS])
    return shown + (f" and {len(ids) - SHOWN_IDS} more" if len(ids) > SHOWN_IDS else "")


def terms(patterns: Sequence[str]) -> list[str]:
    """Ansible's pattern terms: ``a:b,!c`` -> ``[a, b, !c]``; a colon inside brackets or of an
    IPv6 address stays (``smb[size=1:2]``, ``fe80::1``)."""
    out: list[str] = []
    for pattern in patterns:
        try:
            ipaddress.IPv6Address(pattern.lstrip("!&"))
        except ValueError:
            pass
        else:
            out.append(pattern)
            continue
        depth, start = 0, 0
        for index, char in enumerate(pattern):
            depth += (char == "[") - (char == "]" and depth > 0)
            if char == ":" and depth == 0:
                out.append(pattern[start:index])
                start = index + 1
        out.append(pattern[start:])
    return [term for term in out if term]


def evaluate(
    patterns: Sequence[str], everything: Sequence[str], match: Callable[[str], set[str]]
) -> set[str]:
    """Ansible's order: the union of the plain terms (none: ``everything``), then each ``&X``
    kept, each ``!X`` left out; ``match(X)`` is what X names."""
    plain = [t for t in patterns if not t.startswith(("!", "&"))]
    chosen = set().union(*(match(t) for t in plain)) if plain else set(everything)
    for term in patterns:
        if term.startswith("&"):
            chosen &= match(term[1:])
        elif term.startswith("!"):
            chosen -= match(term[1:])
    return chosen


def limit_hosts(plan: Plan, patterns: Sequence[str]) -> set[str]:
    """The inventory hosts ``--limit`` names: hosts and groups by name or glob, Ansible's
    ``a:b``, ``&X``, ``!X`` (module doc). InputError for a term naming none."""
    inventory = plan.inventory

    def match(name: str) -> set[str]:
        if name == "all":  # Ansible's name for every host, in any inventory
            return set(inventory.hosts)
        found = {h for h in inventory.hosts if fnmatch.fnmatchcase(h, name)}
        for group, members in inventory.groups.items():
            if fnmatch.fnmatchcase(group, name):
                found |= set(members) & set(inventory.hosts)
        if not found:
            unusable = [n for n in inventory.unusable if fnmatch.fnmatchcase(n, name)]
            if unusable:
                raise InputError(inventory.refusals_of(unusable))
            known = ", ".join(sorted(inventory.hosts))
            raise InputError(
                f"--limit {name}: no host or group of {inventory.named} matches it (hosts: {known})"
            )
        return found

    return evaluate(terms(patterns), list(inventory.hosts), match)


def _network_within(spec: NetworkSpec, hosts: set[str]) -> tuple[NetworkSpec, list[str]]:
    """``spec`` without the changes on hosts outside ``hosts``; what was left out, in words."""
    links = tuple(lk for lk in spec.links if lk.a.host in hosts and lk.b.host in hosts)
    mtus = tuple(m for m in spec.interfaces if m.host in hosts)
    out = [f"link {lk.name} ({lk.a.host}-{lk.b.host})" for lk in spec.links if lk not in links]
    out += [f"MTU {m.mtu_bytes} on {m.host} {m.nic}" for m in spec.interfaces if m not in mtus]
    return dataclasses.replace(spec, links=links, interfaces=mtus), out


def choose(plan: Plan, limit: Sequence[str] = (), tests: Sequence[str] = ()) -> tuple[Plan, Subset]:
    """The plan cut to ``--limit`` hosts and ``--tests`` patterns (each may hold several,
    comma-separated); InputError when a pattern matches nothing or no test is left."""
    limit, tests = split_list(limit), split_list(tests)
    kept: list[PlanTest] = list(plan.tests)
    notes: list[str] = []
    if tests:
        ids = [(t.id, t.base_id or t.id) for t in kept]

        def match(pattern: str) -> set[str]:
            chosen, unmatched = select(ids, [pattern])
            if unmatched:
                raise InputError(
                    f"--tests {pattern}: matches no test of the plan "
                    f"(its ids: {_some([t.id for t in plan.tests])})"
                )
            return set(chosen)

        wanted = evaluate(terms(tests), [t.id for t in kept], match)
        kept = [t for t in kept if t.id in wanted]
    network = plan.network
    if limit:
        hosts = limit_hosts(plan, limit)
        network, dropped = _network_within(plan.network, hosts)
        names = {lk.name for lk in network.links}
        outside = [
            t
            for t in kept
            if not set(t.hosts) <= hosts or (t.target.link and t.target.link not in names)
        ]
        if outside:
            needed = sorted({h for t in outside for h in t.hosts} - hosts)
            notes.append(
                f"--limit {','.join(limit)}: {len(outside)} tests left out, they need "
                f"{', '.join(needed) or 'a link outside the limit'}: "
                f"{_some([t.id for t in outside])}"
            )
        if dropped:
            notes.append(
                f"--limit {','.join(limit)}: network changes left out on hosts outside it: "
                + ", ".join(dropped)
            )
        left_out = {t.id for t in outside}
        kept = [t for t in kept if t.id not in left_out]
        kept = [_cell_network_within(t, hosts) for t in kept]
    if not kept:
        raise InputError("no test of the plan is left with --limit and --tests as given")
    subset = Subset(tuple(limit), tuple(tests), len(kept), len(plan.tests), tuple(notes))
    return (
        dataclasses.replace(plan, tests=tuple(kept), network=network, subset=subset.to_dict()),
        subset,
    )


def _cell_network_within(test: PlanTest, hosts: set[str]) -> PlanTest:
    if test.network is None:
        return test
    return dataclasses.replace(test, network=_network_within(test.network, hosts)[0])
