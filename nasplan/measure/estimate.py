"""How long a test will take, from the plan alone: ``Estimate`` (seconds and what they assumed)
and what every kind's estimate reads of the plan (the nominal rate of the path a test targets).

Each kind estimates its own tests (``Kind.estimate``); ``nasplan.run.listing`` adds them up.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasplan.units import format_bits_per_second

if TYPE_CHECKING:
    from nasplan.facts.gather import HostFacts
    from nasplan.input.inventory import Interface
    from nasplan.input.plan import Plan, PlanTest

# when the inventory gives no speed for the interface a test targets
ASSUMED_PATH_BITS_PER_SECOND = 1_000_000_000
# what a run does besides its tests: interpreter, connections and facts, tool checks, the
# report at the end
RUN_S = 1.5


@dataclass(frozen=True)
class Estimate:
    """A duration (``seconds``) and what it assumed, in words (each said once)."""

    seconds: float
    assumptions: tuple[str, ...] = ()

    def __add__(self, other: Estimate) -> Estimate:
        said = tuple(dict.fromkeys((*self.assumptions, *other.assumptions)))
        return Estimate(self.seconds + other.seconds, said)

    def text(self) -> str:
        """``about 12 min 30 s (an estimate: ...)``."""
        said = "; ".join(self.assumptions)
        return f"about {duration_text(self.seconds)} (an estimate{': ' + said if said else ''})"

    def to_dict(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 1), "assumptions": list(self.assumptions)}


def duration_text(seconds: float) -> str:
    """``75`` -> ``1 min 15 s``; ``7300`` -> ``2 h 1 min``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def path_bits_per_second(plan: Plan, test: PlanTest) -> int | None:
    """The nominal rate of the interface the test targets (the inventory's speed, both ends of
    a plan link), None when the inventory does not say."""
    hosts = plan.inventory.hosts
    network = test.network or plan.network
    link = network.link(test.target.link) if test.target.link else None
    ends = [(e.host, e.interface_key) for e in (link.a, link.b)] if link else []
    if not ends and test.target.host and test.target.interface:
        ends = [(test.target.host, test.target.interface)]
    speeds = [
        iface.speed_bits_per_second
        for host, key in ends
        if host in hosts and key and (iface := hosts[host].interfaces.get(key)) is not None
        and iface.speed_bits_per_second
    ]  # fmt: skip
    return min(speeds) if speeds else None


def parts(plan: Plan, test: PlanTest) -> int:
    """How many parts a run splits ``test`` into, each with its own set-up and teardown: one a
    repetition when the plan interleaves its tests (or repeats it until its answer is clear),
    else one."""
    if plan.order.interleaved:
        return test.repetitions
    rule = test.adaptive
    return 1 if rule is None else 1 + test.repetitions - rule.min_n


def path_rate(plan: Plan, test: PlanTest) -> tuple[int, str]:
    """The path's nominal rate in bit/s (the inventory's speed: what the hosts negotiated where
    the plan's inventory was given their facts, ``with_negotiated``), and what was assumed."""
    bits = path_bits_per_second(plan, test)
    if bits is None:
        bits = ASSUMED_PATH_BITS_PER_SECOND
        return bits, f"paths of unknown speed at {format_bits_per_second(bits)}"
    return bits, "copies at the path's nominal rate"


def volume_rate(plan: Plan, host: str | None, volume: str | None) -> tuple[int, str] | None:
    """The sequential rate in bytes/s the inventory states for ``host``'s ``volume``
    (``rate``), and it in words; None when it states none."""
    found = plan.inventory.hosts.get(host or "")
    named = found.volumes.get(volume or "") if found else None
    if named is None or not named.bytes_per_second:
        return None
    rate = named.bytes_per_second
    return rate, f"volume {volume} at {rate / 2**20:g} MiB/s (the inventory's rate)"


# TCP's share of a link's line rate at MTU 1500 (what a copy can get of it at best)
TCP_SHARE = 0.94
# a NAS's file or block service rarely moves more than this (its disks, its CPU, one smbd): the
# estimate's ceiling on a path faster than that
ASSUMED_COPY_BYTES_PER_SECOND = 400 * 2**20


def copy_rate(
    plan: Plan, test: PlanTest, volume: str | None = None
) -> tuple[float, tuple[str, ...]]:
    """The rate in bytes/s a copy over the test's path is assumed to move at, and the
    assumptions said: the path's TCP share, at most ASSUMED_COPY_BYTES_PER_SECOND, and at most
    the rate the inventory states for the NAS's ``volume`` the copy lands on."""
    bits, said = path_rate(plan, test)
    rate = min(bits * TCP_SHARE / 8, ASSUMED_COPY_BYTES_PER_SECOND)
    said = f"{said}, at most {ASSUMED_COPY_BYTES_PER_SECOND // 2**20} MiB/s (link speeds: {SPEEDS})"
    disk = volume_rate(plan, test.server, volume)
    if disk is not None and disk[0] < rate:
        return float(disk[0]), (said, disk[1])
    return rate, (said,)


def with_negotiated(plan: Plan, speeds: Mapping[str, Mapping[str, int | None]]) -> Plan:
    """``plan`` with each inventory interface's speed lowered to what its host negotiated
    (host -> its interfaces' inventory keys -> bit/s, from the facts: ``apply --check``),
    for an estimate made once the hosts answered."""
    hosts = dict(plan.inventory.hosts)
    for name, found in speeds.items():
        host = hosts.get(name)
        if host is None:
            continue
        interfaces = {key: _slower(iface, found.get(key)) for key, iface in host.interfaces.items()}
        hosts[name] = dataclasses.replace(host, interfaces=interfaces)
    return dataclasses.replace(plan, inventory=dataclasses.replace(plan.inventory, hosts=hosts))


# where the link speeds of a copy's estimate come from: the plan's inventory (``--list-tests``),
# or lowered to what the hosts negotiated (``apply --check``, ``with_negotiated``)
SPEEDS = "the inventory's"
NEGOTIATED = "interface speeds lowered to what the hosts negotiated, where less (their facts)"


def negotiated_speeds(
    facts: Mapping[str, HostFacts | None], plan: Plan
) -> dict[str, dict[str, int]]:
    """Host -> its inventory interfaces' keys -> the speed its facts say each negotiated
    (bit/s; sysfs or ethtool) where that is below the inventory's, for ``with_negotiated``;
    empty when no link came up slower than the inventory says."""
    found: dict[str, dict[str, int]] = {}
    for name, host in plan.inventory.hosts.items():
        said = facts.get(name)
        if said is None:
            continue
        for key, iface in host.interfaces.items():
            nic = said.interface(iface.name)
            if nic is None or not nic.speed_mbps or nic.speed_mbps <= 0:
                continue
            bits = nic.speed_mbps * 1_000_000
            if iface.speed_bits_per_second is None or bits < iface.speed_bits_per_second:
                found.setdefault(name, {})[key] = bits
    return found


def _slower(iface: Interface, negotiated: int | None) -> Interface:
    stated = iface.speed_bits_per_second
    if not negotiated or (stated is not None and stated <= negotiated):
        return iface
    return dataclasses.replace(iface, speed_bits_per_second=negotiated)
