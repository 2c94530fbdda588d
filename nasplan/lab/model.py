"""The lab file -> validated, typed ``Lab`` (hosts, LAN, links) and the names derived from it."""

from __future__ import annotations

import dataclasses
import hashlib
import ipaddress
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, load_validated
from nasplan.units import format_rate_short, parse_rate, parse_size

LAB_RANGE = ipaddress.IPv4Network("198.18.0.0/15")
LAN_INTERFACE = "eth0"
FIRST_HOST_OFFSET = 10
DEFAULT_MTU_BYTES = 1500
NET_TOOLS_PERSONALITIES = ("qnap", "synology")


@dataclass(frozen=True)
class LinkEnd:
    """One end of a point-to-point link: host, interface name inside it, optional address/prefix."""

    host: str
    interface: str
    address: str | None
    # what the host's NIC says it negotiated (sysfs speed), below the link's rate; None: the rate
    negotiated_bits_per_second: int | None = None


@dataclass(frozen=True)
class Link:
    """A point-to-point veth link between two hosts, shaped to ``rate`` in each direction."""

    name: str
    rate: str
    bits_per_second: int
    mtu_bytes: int
    a: LinkEnd
    b: LinkEnd

    @property
    def shaped_bits_per_second(self) -> int:
        """What the link carries: its rate, or the slower end's negotiated speed."""
        negotiated = [e.negotiated_bits_per_second for e in (self.a, self.b)]
        return min([self.bits_per_second, *(n for n in negotiated if n)])


@dataclass(frozen=True)
class WriteCache:
    """A disk's write cache (an SSD's SLC cache): the first ``size_bytes`` written go at
    ``bytes_per_second``, then writes go at the disk's write rate (``nasplan.lab.disk_pacing``)."""

    size_bytes: int
    bytes_per_second: int


@dataclass(frozen=True)
class LabVolume:
    """A lab host's volume: a filesystem on ``disks`` disks, mounted at ``path`` in the host
    (``nasplan.lab.volumes``). Each disk reads at ``bytes_per_second`` and writes at
    ``write_bytes_per_second`` (None: the same), behind its ``write_cache`` if it has one."""

    name: str
    path: str
    bytes_per_second: int
    size_bytes: int
    filesystem: str = "ext4"
    disks: int = 1
    raid: str = "raid1"
    write_bytes_per_second: int | None = None
    write_cache: WriteCache | None = None

    @property
    def read_rate(self) -> int:
        return self.bytes_per_second

    @property
    def write_rate(self) -> int:
        return self.write_bytes_per_second or self.bytes_per_second

    @property
    def shaped(self) -> bool:
        """Whether its disks need more than one rate (``nasplan.lab.shaped_disk``)."""
        return self.write_rate != self.read_rate or self.write_cache is not None

    @property
    def rate_text(self) -> str:
        """``180 MiB/s``; ``reads 550 MiB/s, writes 200 MiB/s``; with a write cache, ``..., the
        first 4 GiB written at 1500 MiB/s``."""
        text = _mib(self.read_rate)
        if self.write_rate != self.read_rate:
            text = f"reads {text}, writes {_mib(self.write_rate)}"
        if self.write_cache is not None:
            cache = self.write_cache
            text += f", the first {cache.size_bytes / 2**30:g} GiB written at "
            text += _mib(cache.bytes_per_second)
        return text


def _mib(bytes_per_second: int) -> str:
    return f"{bytes_per_second / 2**20:g} MiB/s"


@dataclass(frozen=True)
class LabHost:
    """A lab host: its namespace, LAN address (with prefix) and personality."""

    name: str
    index: int
    personality: str
    namespace: str
    lan_address: str
    services: tuple[str, ...] = ()
    personality_options: dict[str, Any] = field(default_factory=dict)
    iscsi: dict[str, Any] = field(default_factory=dict)
    # a router: forwards IPv4 between its links; routes: (prefix, via) in its namespace
    forward: bool = False
    routes: tuple[tuple[str, str], ...] = ()
    volumes: tuple[LabVolume, ...] = ()
    # a memory limit for its sshd and daemons (bytes; None: none)
    memory_bytes: int | None = None
    # reached only through this lab host: no LAN address; sshd answers on ``link_address``, its
    # address (with prefix) on a link it shares with the jump host
    jump: str | None = None
    link_address: str | None = None

    @property
    def address(self) -> str:
        """Where its sshd is reached, with prefix: the LAN's, or through ``jump`` its link's."""
        return self.link_address if self.jump and self.link_address else self.lan_address


@dataclass(frozen=True)
class Lab:
    """A validated lab file; ``names`` derive every namespace and interface name from ``name``."""

    path: Path
    name: str
    description: str
    lan_prefix: str
    lan_rate: str
    lan_bits_per_second: int
    lan_mtu_bytes: int
    control_address: str
    hosts: tuple[LabHost, ...]
    links: tuple[Link, ...]
    digest: str = ""

    @property
    def names(self) -> Names:
        return Names(self.name)

    def host(self, name: str) -> LabHost:
        """The host called ``name``; KeyError when there is none."""
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError(name)


@dataclass(frozen=True)
class Names:
    """Names of everything a lab creates; root-side interfaces all start with ``link_prefix``."""

    lab_name: str

    @property
    def namespace_prefix(self) -> str:
        return f"npl-{self.lab_name}-"

    @property
    def link_prefix(self) -> str:
        # Interface names are limited to 15 bytes, so root-side names carry a short hash of the
        # lab name instead of the name itself; it stays unique per lab and recognisable (npl).
        digest = hashlib.sha256(self.lab_name.encode()).hexdigest()[:5]
        return f"npl{digest}"

    def namespace(self, host: str) -> str:
        return f"{self.namespace_prefix}{host}"

    @property
    def bridge(self) -> str:
        return f"{self.link_prefix}br"

    def lan_root_side(self, host_index: int) -> str:
        return f"{self.link_prefix}h{host_index}"

    def lan_host_side(self, host_index: int) -> str:
        return f"{self.link_prefix}n{host_index}"

    def link_end(self, link_index: int, side: str) -> str:
        return f"{self.link_prefix}l{link_index}{side}"


def normalize_rate(value: str | int) -> str:
    """``"10G"``, ``10000000000`` -> ``"10G"``: the one spelling the inventory schema accepts."""
    return format_rate_short(parse_rate(value))


def load_lab(path: Path) -> Lab:
    """Read and validate a lab file; raise InputError with ``FILE:LINE:COL`` lines on problems."""
    document = load_validated(path, "lab")
    return build_lab(document)


def build_lab(document: Document) -> Lab:
    """Check references and addresses of a schema-valid lab document; return the ``Lab``."""
    data: dict[str, Any] = document.data
    errors: list[str] = []
    names = Names(data["name"])

    lan = data["lan"]
    lan_net = _network(document, ("lan", "prefix"), lan["prefix"], errors)
    host_items = list(data["hosts"].items())
    hosts: list[LabHost] = []
    control_address = ""
    if lan_net is not None:
        needed = FIRST_HOST_OFFSET + len(host_items) + 1
        if lan_net.num_addresses < needed:
            errors.append(
                document.error(
                    ("lan", "prefix"),
                    f"{lan_net} is too small for {len(host_items)} hosts (need {needed} addresses)",
                )
            )
        else:
            control_address = f"{lan_net.network_address + 1}/{lan_net.prefixlen}"
            for index, (host_name, spec) in enumerate(host_items):
                _check_net_tools(document, host_name, spec or {}, errors)
                _check_iscsi_volume(document, host_name, spec or {}, errors)
                address = lan_net.network_address + FIRST_HOST_OFFSET + index
                hosts.append(
                    LabHost(
                        name=host_name,
                        index=index,
                        personality=(spec or {}).get("personality", "debian"),
                        namespace=names.namespace(host_name),
                        lan_address=f"{address}/{lan_net.prefixlen}",
                        services=tuple((spec or {}).get("services") or ()),
                        personality_options=dict((spec or {}).get("personality_options") or {}),
                        iscsi=dict((spec or {}).get("iscsi") or {}),
                        forward=bool((spec or {}).get("forward", False)),
                        routes=_routes(document, host_name, spec or {}, errors),
                        volumes=_volumes(document, host_name, spec or {}, errors),
                        memory_bytes=_size(document, ("hosts", host_name, "memory"), spec, errors),
                        jump=(spec or {}).get("jump"),
                    )
                )

    links = [
        _build_link(document, index, raw, set(data["hosts"]), lan_net, errors)
        for index, raw in enumerate(data.get("links") or [])
    ]
    _check_unique_interfaces(document, data.get("links") or [], errors)
    seen_links: set[str] = set()
    for index, raw in enumerate(data.get("links") or []):
        if raw["name"] in seen_links:
            errors.append(document.error(("links", index, "name"), "duplicate link name"))
        seen_links.add(raw["name"])
    hosts = [_with_link_address(document, host, hosts, links, errors) for host in hosts]
    if errors:
        raise InputError(errors)
    return Lab(
        path=document.path,
        name=data["name"],
        description=data.get("description", ""),
        lan_prefix=str(lan_net),
        lan_rate=normalize_rate(lan["rate"]),
        lan_bits_per_second=parse_rate(lan["rate"]),
        lan_mtu_bytes=lan.get("mtu", DEFAULT_MTU_BYTES),
        control_address=control_address,
        hosts=tuple(hosts),
        links=tuple(link for link in links if link is not None),
        digest=hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest(),
    )


def _size(
    document: Document, where: tuple[str | int, ...], spec: Any, errors: list[str]
) -> int | None:
    """The size at ``where`` (its last key in ``spec``) in bytes; None when not given."""
    value = (spec or {}).get(where[-1])
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        errors.append(document.error(where, str(exc)))
        return None


def _volumes(
    document: Document, host: str, spec: dict[str, Any], errors: list[str]
) -> tuple[LabVolume, ...]:
    """A host's volumes; more than one disk only for Btrfs (which makes the RAID)."""
    found = []
    for name, raw in (spec.get("volumes") or {}).items():
        where: tuple[str | int, ...] = ("hosts", host, "volumes", name)
        read, write = _volume_rates(document, where, raw, errors)
        size = _size(document, (*where, "size"), {"size": raw.get("size", "1GiB")}, errors)
        cache = _write_cache(document, where, raw, errors)
        filesystem, disks = raw.get("filesystem", "ext4"), int(raw.get("disks", 1))
        if disks > 1 and filesystem != "btrfs":
            message = f"{disks} disks need filesystem btrfs (it makes the RAID), not {filesystem}"
            errors.append(document.error((*where, "disks"), message))
        if read is not None and write is not None and size is not None:
            found.append(
                LabVolume(
                    name=name,
                    path=str(raw.get("path") or f"/srv/{name}"),
                    bytes_per_second=read,
                    size_bytes=size,
                    filesystem=filesystem,
                    disks=disks,
                    raid=str(raw.get("raid", "raid1")),
                    write_bytes_per_second=write if write != read else None,
                    write_cache=cache,
                )
            )
    return tuple(found)


def _byte_rate(
    document: Document, where: tuple[str | int, ...], value: Any, errors: list[str]
) -> int | None:
    """``180MiB/s`` (the schema checked its form) at ``where`` in bytes per second."""
    return _size(document, where, {where[-1]: str(value)[:-2]}, errors)


def _volume_rates(
    document: Document, where: tuple[str | int, ...], raw: dict[str, Any], errors: list[str]
) -> tuple[int | None, int | None]:
    """A volume's read and write rates: ``read`` and ``write``, each ``rate`` when not given."""
    rates: list[int | None] = []
    for key in ("read", "write"):
        if raw.get(key, raw.get("rate")) is None:
            errors.append(document.error(where, f"no {key} rate: give rate (reads and writes "
                                                f"alike) or read and write"))  # fmt: skip
            rates.append(None)
            continue
        field_name = key if key in raw else "rate"
        rates.append(_byte_rate(document, (*where, field_name), raw[field_name], errors))
    return rates[0], rates[1]


def _write_cache(
    document: Document, where: tuple[str | int, ...], raw: dict[str, Any], errors: list[str]
) -> WriteCache | None:
    """The volume's disks' write cache, None when they have none."""
    spec = raw.get("write_cache")
    if spec is None:
        return None
    size = _size(document, (*where, "write_cache", "size"), spec, errors)
    rate = _byte_rate(document, (*where, "write_cache", "rate"), spec["rate"], errors)
    return WriteCache(size, rate) if size is not None and rate is not None else None


def _with_link_address(
    document: Document,
    host: LabHost,
    hosts: list[LabHost],
    links: list[Link | None],
    errors: list[str],
) -> LabHost:
    """A host behind a jump host with its address on the first link they share; an error when
    the jump host is not a LAN host of the lab or no such link gives the host an address."""
    if host.jump is None:
        return host
    where = ("hosts", host.name, "jump")
    jump = next((h for h in hosts if h.name == host.jump), None)
    if jump is None or jump.jump is not None or jump.name == host.name:
        known = ", ".join(h.name for h in hosts if h.jump is None and h.name != host.name)
        errors.append(
            document.error(where, f"{host.jump!r} is not a lab host on the LAN (those: {known})")
        )
        return host
    for link in links:
        if link is None:
            continue
        ends = {link.a.host: link.a, link.b.host: link.b}
        if host.name in ends and jump.name in ends and ends[host.name].address:
            return dataclasses.replace(host, link_address=ends[host.name].address)
    message = f"no link joins {host.name} (with an address at its end) to its jump host {jump.name}"
    errors.append(document.error(where, message))
    return host


def _routes(
    document: Document, host: str, spec: dict[str, Any], errors: list[str]
) -> tuple[tuple[str, str], ...]:
    """A host's static routes, each prefix and router inside the lab range."""
    found = []
    for index, raw in enumerate(spec.get("routes") or []):
        where: tuple[str | int, ...] = ("hosts", host, "routes", index)
        network = _network(document, (*where, "to"), raw["to"], errors)
        via = _network(document, (*where, "via"), raw["via"], errors)
        if network is not None and via is not None:
            found.append((str(network), raw["via"]))
    return tuple(found)


def _check_net_tools(
    document: Document, host: str, spec: dict[str, Any], errors: list[str]
) -> None:
    """BusyBox network tools stand in for a NAS firmware's: only vendor NAS personalities."""
    net_tools = (spec.get("personality_options") or {}).get("net_tools", "iproute2")
    personality = spec.get("personality", "debian")
    if net_tools != "iproute2" and personality not in NET_TOOLS_PERSONALITIES:
        errors.append(
            document.error(
                ("hosts", host, "personality_options", "net_tools"),
                f"{net_tools} is for the {' and '.join(NET_TOOLS_PERSONALITIES)} personalities, "
                f"not {personality}",
            )
        )


def _check_iscsi_volume(
    document: Document, host: str, spec: dict[str, Any], errors: list[str]
) -> None:
    """An iSCSI LUN on a volume: one of the host's own."""
    volume = (spec.get("iscsi") or {}).get("volume")
    known = sorted(spec.get("volumes") or {})
    if volume is not None and volume not in known:
        have = f"its volumes: {', '.join(known)}" if known else "it has no volumes"
        errors.append(
            document.error(
                ("hosts", host, "iscsi", "volume"), f"{volume!r} is not a volume of {host} ({have})"
            )
        )


def _network(
    document: Document, where: tuple[str | int, ...], text: str, errors: list[str]
) -> ipaddress.IPv4Network | None:
    try:
        network = ipaddress.IPv4Network(text, strict=False)
    except ValueError as exc:
        errors.append(document.error(where, f"not an IPv4 prefix: {exc}"))
        return None
    if not network.subnet_of(LAB_RANGE):
        errors.append(document.error(where, f"{text} is outside the lab range {LAB_RANGE}"))
        return None
    return network


def _build_link(
    document: Document,
    index: int,
    raw: dict[str, Any],
    host_names: set[str],
    lan_net: ipaddress.IPv4Network | None,
    errors: list[str],
) -> Link | None:
    ends: list[LinkEnd] = []
    networks: list[ipaddress.IPv4Network] = []
    for side in ("a", "b"):
        end = raw[side]
        where: tuple[str | int, ...] = ("links", index, side)
        if end["host"] not in host_names:
            known = ", ".join(sorted(host_names))
            errors.append(
                document.error((*where, "host"), f"unknown host {end['host']!r} (hosts: {known})")
            )
        if end["interface"] == LAN_INTERFACE:
            errors.append(
                document.error((*where, "interface"), f"{LAN_INTERFACE} is reserved for the LAN")
            )
        address = end.get("address")
        if address is not None:
            network = _network(document, (*where, "address"), address, errors)
            if network is not None:
                networks.append(network)
                ip = ipaddress.IPv4Interface(address).ip
                if network.prefixlen < 31 and ip in (network.network_address, network[-1]):
                    errors.append(
                        document.error(
                            (*where, "address"), f"{ip} is not a host address of {network}"
                        )
                    )
                if lan_net is not None and network.overlaps(lan_net):
                    errors.append(
                        document.error((*where, "address"), f"overlaps the LAN prefix {lan_net}")
                    )
        negotiated = None
        if "negotiated" in end:
            try:
                negotiated = parse_rate(end["negotiated"])
            except ValueError as exc:
                errors.append(document.error((*where, "negotiated"), str(exc)))
        ends.append(LinkEnd(end["host"], end["interface"], address, negotiated))
    if raw["a"]["host"] == raw["b"]["host"]:
        errors.append(document.error(("links", index, "b", "host"), "a link joins two hosts"))
    addresses = [raw[side].get("address") for side in ("a", "b")]
    if None not in addresses and len(networks) == 2 and addresses[0] == addresses[1]:
        errors.append(
            document.error(("links", index, "b", "address"), "both ends have one address")
        )
    if len(networks) == 2 and networks[0] != networks[1]:
        errors.append(
            document.error(
                ("links", index, "b", "address"), "the two ends are in different subnets"
            )
        )
    try:
        bits_per_second = parse_rate(raw["rate"])
    except ValueError as exc:
        errors.append(document.error(("links", index, "rate"), str(exc)))
        return None
    return Link(
        name=raw["name"],
        rate=normalize_rate(raw["rate"]),
        bits_per_second=bits_per_second,
        mtu_bytes=raw.get("mtu", DEFAULT_MTU_BYTES),
        a=ends[0],
        b=ends[1],
    )


def _check_unique_interfaces(
    document: Document, links: list[dict[str, Any]], errors: list[str]
) -> None:
    seen: set[tuple[str, str]] = set()
    for index, raw in enumerate(links):
        for side in ("a", "b"):
            key = (raw[side]["host"], raw[side]["interface"])
            if key in seen:
                errors.append(
                    document.error(
                        ("links", index, side, "interface"),
                        f"host {key[0]} already has an interface {key[1]}",
                    )
                )
            seen.add(key)
