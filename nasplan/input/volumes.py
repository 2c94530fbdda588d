"""A test's ``volume:`` resolved against its host's volumes in the inventory.

A disk test measures ``volume: ssd`` at the volume's path; a transfer copies to it through the
volume's share (SMB), export (NFS) or path (rsync). What the test gives itself wins; what it
leaves out comes from the volume, and a test that names no volume but a path, share or export
of one is on that volume all the same (``volume_of``), so its results are judged against that
volume's disk rate. Which keys a volume fills is the plan schema's word (each kind's
``x-volume``), so nothing here knows a kind or a method. Errors name the test's ``volume`` at
its FILE:LINE:COL.

``x-volume``: ``{"host": the test key naming the host, "fill": {test key: volume attribute},
"by": a test key whose value picks one of "per"'s entries, "per": {value: {"fill": {...},
"need": [keys the test must end up with, one of them at least]}}}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nasplan.input.inventory import Host, Inventory, Volume
from nasplan.input.loader import Document, load_schema


def _rule(raw: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The ``x-volume`` of the test's kind in the plan schema, None for a kind without one."""
    found = load_schema("plan")["$defs"].get(str(raw.get("kind")), {}).get("x-volume")
    return found if isinstance(found, Mapping) else None


def _fills(rule: Mapping[str, Any], raw: Mapping[str, Any]) -> tuple[dict[str, str], list[str]]:
    """(test key -> volume attribute, the keys one of which the test needs) for ``raw``."""
    chosen = (rule.get("per") or {}).get(str(raw.get(str(rule.get("by")))), {})
    return {**(rule.get("fill") or {}), **(chosen.get("fill") or {})}, list(
        chosen.get("need") or []
    )


def resolve(
    document: Document, raw: Mapping[str, Any], index: int, inventory: Inventory
) -> tuple[dict[str, Any], list[str]]:
    """``raw``'s keys with what its volume gives filled in, and ``volume`` set when the test
    lies on one; the errors (an unknown volume, one that lacks what the test needs)."""
    rule = _rule(raw)
    name = raw.get(str(rule.get("host"))) if rule else None
    host = inventory.hosts.get(str(name)) if name else None
    if rule is None or host is None:
        return dict(raw), []
    fills, need = _fills(rule, raw)
    named = raw.get("volume")
    if named is None:
        found = volume_of(host, raw, fills)
        return ({**raw, "volume": found.name} if found else dict(raw)), []
    volume = host.volumes.get(str(named))
    where = ("tests", index, "volume")
    if volume is None:
        known = ", ".join(sorted(host.volumes)) or "none"
        message = f"host {host.name!r} has no volume {named!r} in {inventory.named} (has: {known})"
        return dict(raw), [document.error(where, message)]
    out = dict(raw)
    for key, attribute in fills.items():
        value = getattr(volume, attribute, None)
        if value is not None:
            out.setdefault(key, value)
    if need and not any(key in out for key in need):
        wanted = " or ".join(k for k in need if k in fills) or need[0]
        how = f"{rule.get('by')} {raw.get(str(rule.get('by')))}" if rule.get("by") else "it"
        message = f"volume {volume.name!r} of {host.name} has no {wanted} for {how}"
        return out, [document.error(where, message)]
    return out, []


def volume_of(host: Host, raw: Mapping[str, Any], fills: Mapping[str, str]) -> Volume | None:
    """The volume a test without ``volume:`` works on: one whose directory holds a path the
    test gives (``path``, ``server_path``), or whose share or export it names; None."""
    for key, attribute in fills.items():
        value = raw.get(key)
        if not isinstance(value, str):
            continue
        if attribute == "path":
            found = host.volume_holding(value)
        else:
            found = next((v for v in host.volumes.values() if getattr(v, attribute) == value), None)
        if found is not None:
            return found
    return None
