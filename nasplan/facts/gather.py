"""Host facts: one POSIX sh script (one SSH round trip) and a pure parser of its output."""

from __future__ import annotations

import ipaddress
import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from importlib import resources
from typing import Any

from nasplan.errors import NasplanError, UnknownOutput
from nasplan.facts import bsd as facts_bsd
from nasplan.facts import storage, volumes
from nasplan.facts import windows as facts_windows
from nasplan.remote import shell
from nasplan.remote.runner import Result, Runner
from nasplan.units import positive_int

# Looked up on PATH and in vendor directories; each is a key of HostFacts.tools (None: absent).
TOOL_NAMES = (
    "iperf3",
    "fio",
    "apt-get",
    "opkg",
    "synogear",
    "midclt",
    "sudo",
    "ip",
    "ifconfig",
    "route",
    "ethtool",
    "smbclient",
    "rsync",
    "ping",
    "getcfg",
    "nfs-cp",
    "netstat",
    "brew",
    "networksetup",
    "pkg",
)

# Written for dash, bash and busybox ash (QNAP QTS, Synology DSM): no bashisms, no `local`,
# every probe optional (stderr to /dev/null), and `exit 0` so a missing file never fails the run.
# Each header starts with a newline because files such as Debian's os-release lack a final one.
# POSIX sh, kept beside this module so it can be read and linted as shell (shellcheck).
_FACTS_TEXT = (
    resources.files("nasplan.facts")
    .joinpath("facts.sh")
    .read_text()
    .replace("@TOOLS@", " ".join(shlex.quote(t) for t in TOOL_NAMES))
)
FACTS_SCRIPT = _FACTS_TEXT.replace("@ALSO@", "")
_ALSO_START, _ALSO_EXIT = "\n@@nasplan:also@@\n", "\n@@nasplan:also-exit@@\n"


def facts_script_with(also: str) -> str:
    """FACTS_SCRIPT that then runs ``also`` (POSIX sh) in a subshell in the same round trip,
    its output after an ``also`` marker and its exit status after ``also-exit``; skipped in a
    Windows POSIX layer (Git Bash, MSYS2, Cygwin), where nasplan speaks PowerShell instead."""
    block = (
        "case $nasplan_os in MINGW*|MSYS*|CYGWIN*) ;; *)\n"
        "nasplan_section also\n"
        f"(\n{also}\n)\n"
        "printf '\\n@@nasplan:also-exit@@\\n%s\\n' \"$?\"\n"
        "esac"
    )
    return _FACTS_TEXT.replace("@ALSO@", block)


def split_also(result: Result) -> tuple[Result, Result | None]:
    """A facts_script_with() result -> (the facts' result, the ``also`` script's own result,
    None when it did not run: a Windows POSIX layer, or a host cut off before it ended)."""
    start = result.stdout.find(_ALSO_START)
    end = result.stdout.find(_ALSO_EXIT, start + 1) if start >= 0 else -1
    if start < 0 or end < 0:
        return result, None
    status_line = result.stdout[end + len(_ALSO_EXIT) :].split("\n", 1)
    rest = status_line[1] if len(status_line) > 1 else ""
    status = status_line[0].strip()
    facts = Result(
        result.command, result.stdout[:start] + "\n" + rest, result.stderr, result.exited
    )
    also = Result(
        "(with the facts)",
        result.stdout[start + len(_ALSO_START) : end],
        "",
        int(status) if status.isdigit() else 1,
    )
    return facts, also


_HEADER = re.compile(r"^@@nasplan:([a-z0-9-]+)(?::(.*))?@@$", re.MULTILINE)
_IPERF3_VERSION = re.compile(r"^iperf\s+(?:version\s+)?(\d+(?:\.\d+)+)")
_IP_ADDR_LINE = re.compile(r"^\d+:\s+(\S+)\s+(inet6?)\s+(\S+)")
_IFCONFIG_INET = re.compile(r"\binet (?:addr:)?(\S+)(?:.*?(?:Mask:|netmask )(\S+))?")
_IFCONFIG_INET6 = re.compile(
    r"\binet6 (?:addr:\s*)?([0-9a-fA-F:.]+)(?:/(\d+))?(?:.*?prefixlen (\d+))?"
)
_CPU_MODEL_KEYS = ("model name", "cpu model", "Hardware", "Processor")
_MAX_SPEED_MBPS = 10_000_000  # sysfs reports -1 or 4294967295 when a link's speed is unknown


def _scalars(cls: type[NicFacts | HostFacts], data: Mapping[str, Any]) -> dict[str, Any]:
    """``from_dict``'s optional scalar fields (``str | None``, ``int | None``, ``bool | None``)
    read from ``data``: a value of another type is None."""
    return {f.name: _READ[f.type](data.get(f.name)) for f in fields(cls) if f.type in _READ}


def _fields(facts: NicFacts | HostFacts) -> dict[str, Any]:
    """A facts object's fields by name, values as they are (no deep copy: dataclasses.asdict
    copies every host's facts again, and run.json takes them after every test)."""
    return {f.name: getattr(facts, f.name) for f in fields(facts)}


@dataclass(frozen=True)
class NicFacts:
    """One network interface as the host sees it (sysfs + ip addr)."""

    name: str
    mtu_bytes: int | None = None
    state: str | None = None
    mac: str | None = None
    speed_mbps: int | None = None
    duplex: str | None = None
    driver: str | None = None
    addresses: tuple[str, ...] = ()
    # the bus under the link (``nic_bus``): PCIe link and maximum, a USB NIC's bus speed;
    # None when sysfs says nothing (a virtual NIC, a BSD host)
    bus: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"name": "eth0", "mtu_bytes": 1500, ..., "addresses": [...]}``
        (``bus`` only when known)."""
        found = {**_fields(self), "addresses": list(self.addresses)}
        if self.bus is None:
            del found["bus"]
        else:
            found["bus"] = dict(self.bus)
        return found

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NicFacts:
        """Inverse of ``to_dict``; missing keys become None / empty."""
        return cls(
            name=str(data.get("name", "")),
            **_scalars(cls, data),
            addresses=tuple(str(a) for a in data.get("addresses") or ()),
            bus=dict(data["bus"]) if isinstance(data.get("bus"), Mapping) else None,
        )


@dataclass(frozen=True)
class HostFacts:
    """What one host is: OS, CPU, memory, NICs, tool paths and platform marker files."""

    hostname: str | None = None
    kernel_name: str | None = None  # uname -s: Linux, Darwin, FreeBSD; "Windows"
    os_id: str | None = None
    os_like: str | None = None
    os_version: str | None = None
    os_pretty: str | None = None
    kernel: str | None = None
    arch: str | None = None
    cpu_model: str | None = None
    cpu_cores: int | None = None
    memory_bytes: int | None = None
    # a cgroup's memory limit on the login's processes below the RAM (a container, a lab
    # host): what a NAS's cache can hold is the lower of the two (``cache_bytes``)
    memory_limit_bytes: int | None = None
    is_root: bool | None = None
    interfaces: tuple[NicFacts, ...] = ()
    tools: Mapping[str, str | None] = field(default_factory=dict)
    iperf3_version: str | None = None
    markers: Mapping[str, str] = field(default_factory=dict)
    # True: `ip -j` prints JSON for addresses and routes; False: BusyBox or older iproute2
    # (text only); None: no `ip` found, or facts from before nasplan probed it.
    ip_json: bool | None = None
    # {"md_arrays": [...], "zfs_pools": [...], "zfs_sizes": {...}, "disks": [...],
    #  "mounts": [...], "df": {...}, "layers": {...}, "btrfs": [...]}: nasplan/facts/storage.py
    #  and nasplan/facts/volumes.py
    storage: Mapping[str, Any] = field(default_factory=dict)
    boot_id: str | None = None  # the kernel's: hosts sharing one share CPU figures

    @property
    def cache_bytes(self) -> int | None:
        """The memory the host's page cache may hold: its RAM, or a lower cgroup limit."""
        known = [m for m in (self.memory_bytes, self.memory_limit_bytes) if m]
        return min(known) if known else None

    def interface(self, name: str) -> NicFacts | None:
        """The NIC called ``name`` (e.g. ``eth0``), or None."""
        return next((nic for nic in self.interfaces if nic.name == name), None)

    def tool(self, name: str) -> str | None:
        """Full path of ``name`` (e.g. ``iperf3``) on the host, or None when it was not found."""
        return self.tools.get(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON form stored in run.json under ``hosts.<name>.facts`` (docs/architecture.md)."""
        return {
            **_fields(self),
            "interfaces": [nic.to_dict() for nic in self.interfaces],
            "tools": dict(self.tools),
            "markers": dict(self.markers),
            # a copy the caller may change (parsed from JSON-like text: plain lists and dicts)
            "storage": json.loads(json.dumps(self.storage)),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostFacts:
        """Inverse of ``to_dict``; missing keys become None / empty."""
        return cls(
            **_scalars(cls, data),
            interfaces=tuple(NicFacts.from_dict(n) for n in data.get("interfaces") or ()),
            tools={str(k): _str_or_none(v) for k, v in (data.get("tools") or {}).items()},
            markers={str(k): str(v) for k, v in (data.get("markers") or {}).items()},
            storage=dict(data.get("storage") or {}),
        )


def gather(
    runner: Runner,
    timeout_s: float = 20,
    *,
    windows: bool = False,
    tool_paths: Mapping[str, str] | None = None,
) -> HostFacts:
    """Run the facts script once on the host behind ``runner`` and parse what it printed.

    POSIX hosts run FACTS_SCRIPT. A host that refuses ``sh`` the way cmd.exe or PowerShell do
    (or ``windows=True``, from the inventory) gets the PowerShell facts script, and the runner
    speaks PowerShell from then on. ``tool_paths``: inventory ``tools:`` (Windows) tried first.
    """
    return gather_with(runner, None, timeout_s, windows=windows, tool_paths=tool_paths)[0]


def gather_with(
    runner: Runner,
    also: str | None,
    timeout_s: float = 20,
    *,
    windows: bool = False,
    tool_paths: Mapping[str, str] | None = None,
) -> tuple[HostFacts, Result | None]:
    """``gather``, and on a POSIX host ``also`` (POSIX sh) in the same round trip:
    ``(facts, also's result)``; None when ``also`` did not run (Windows, or None given)."""
    if not windows:
        script = FACTS_SCRIPT if also is None else facts_script_with(also)
        result, also_result = split_also(runner.run_script(script, timeout_s=timeout_s))
        refused = not _HEADER.search(result.stdout) and facts_windows.looks_like_windows(
            result.stderr + result.stdout
        )
        # Git for Windows / MSYS2 / Cygwin put an sh on PATH: it runs, but the host is Windows.
        windows = refused or facts_windows.posix_layer_on_windows(result.stdout)
        if not windows:
            _check_gathered(runner, result)
            return parse_checked(result.stdout, result.ok), also_result
    runner.use_shell(shell.windows(None))  # NasplanError when the runner speaks only POSIX sh
    result = runner.run_script(facts_windows.facts_script(tool_paths), timeout_s=timeout_s * 2)
    _check_gathered(runner, result)
    facts = parse_checked(result.stdout, result.ok)
    runner.use_shell(shell.windows(facts.markers.get(facts_windows.DEFAULT_SHELL_MARKER) or None))
    return facts, None


def _check_gathered(runner: Runner, result: Result) -> None:
    if not result.ok and not result.stdout.strip():
        detail = result.stderr.strip().splitlines()
        raise NasplanError(
            f"{runner.name}: gathering facts failed (exit {result.exited})"
            + (f": {detail[-1]}" if detail else "")
        )


FACTS_COMMAND = "the facts script (nasplan/facts/facts.sh, facts_windows.ps1)"
_GETCFG = "marker:getcfg System Version"
_FIRMWARE_VERSION = re.compile(r"^\d+(\.\d+)+$")


def parse_checked(stdout: str, ended: bool = True) -> HostFacts:
    """``parse_facts`` of a host's whole answer: UnknownOutput when it is not the facts script's
    output to its end (``ended``: the script exited, False when it was cut off: then the partial
    output is used as it is) or when a section holds what nasplan does not understand."""
    names = [name for name, _ in _sections(stdout)]
    if ended and (not names or names[-1] != "end"):
        last = stdout.strip().splitlines()[-1:] or [""]
        raise UnknownOutput(FACTS_COMMAND, "sections up to its last, @@nasplan:end@@", last[0])
    sections = dict(_sections(stdout))
    getcfg = _first(sections.get(_GETCFG))
    if getcfg is not None and not _FIRMWARE_VERSION.match(getcfg):
        raise UnknownOutput("getcfg System Version", "a firmware version such as 5.1.0", getcfg)
    return parse_facts(stdout)


def parse_facts(stdout: str) -> HostFacts:
    """HostFacts from FACTS_SCRIPT's output; missing or garbled sections give None / empty."""
    sections = list(_sections(stdout))
    single = {
        name: lines for name, lines in sections if name not in ("nic", "disk", "layer", "btrfs")
    }
    markers = {
        name[len("marker:") :]: "\n".join(lines)
        for name, lines in sections
        if name.startswith("marker:")
    }
    os_release = _key_values(
        (markers.get("/etc/os-release") or markers.get("/usr/lib/os-release") or "").splitlines(),
        "=",
    )
    uid = _int_or_none(_first(single.get("uid")))
    addresses = _addresses(single)
    interfaces = tuple(
        _nic(_key_values(lines, "="), addresses) for name, lines in sections if name == "nic"
    )
    tools: dict[str, str | None] = dict.fromkeys(TOOL_NAMES)
    for key, value in _key_values(single.get("tools", []), "=").items():
        tools[key] = value if value.startswith("/") else None
    kernel_name = _first(single.get("uname-s"))
    facts = HostFacts(
        hostname=_first(single.get("hostname")),
        kernel_name=kernel_name,
        os_id=_str_or_none(os_release.get("ID")),
        os_like=_str_or_none(os_release.get("ID_LIKE")),
        os_version=_str_or_none(os_release.get("VERSION_ID")),
        os_pretty=_str_or_none(os_release.get("PRETTY_NAME")),
        kernel=_first(single.get("kernel")),
        arch=_first(single.get("arch")),
        cpu_model=_cpu_model(single.get("cpu-model", [])),
        cpu_cores=positive_int(_first(single.get("cpu-processors")))
        or positive_int(_first(single.get("nproc"))),
        memory_bytes=_memory_bytes(single.get("meminfo", [])),
        memory_limit_bytes=volumes.parse_memory_limit(
            single.get("memory-limit", []), _memory_bytes(single.get("meminfo", []))
        ),
        is_root=None if uid is None else uid == 0,
        interfaces=interfaces,
        tools=tools,
        iperf3_version=parse_iperf3_version(_first(single.get("iperf3-version")) or ""),
        markers=markers,
        ip_json=_ip_json(single),
        storage=_storage(sections, single),
        boot_id=_first(single.get("boot-id")),
    )
    if kernel_name in facts_bsd.BSD_KERNELS:
        return _bsd_facts(facts, kernel_name, single)
    if kernel_name == "Windows":
        return _windows_facts(facts, single)
    return facts


def _windows_facts(facts: HostFacts, single: Mapping[str, list[str]]) -> HostFacts:
    """Windows: OS/CPU/RAM from CIM, NICs from Get-NetAdapter + Get-NetIPAddress, tool paths."""
    nics = facts_windows.adapters(
        facts_windows.parse_format_list(single.get("win-netadapter", [])),
        facts_windows.parse_format_list(single.get("win-ipaddress", [])),
    )
    default_shell = _first(single.get("default-shell")) or ""
    return replace(
        facts,
        **facts_windows.system_fields(single),
        interfaces=tuple(NicFacts(**nic) for nic in nics),
        tools=facts_windows.tools(single.get("tools", [])),
        markers={**facts.markers, facts_windows.DEFAULT_SHELL_MARKER: default_shell},
    )


def _bsd_facts(facts: HostFacts, kernel_name: str, single: Mapping[str, list[str]]) -> HostFacts:
    """FreeBSD / macOS: system from ``sysctl``, NICs (MTU, media speed, state) from ifconfig."""
    fields = facts_bsd.system_fields(kernel_name, facts_bsd.parse_sysctl(single.get("sysctl", [])))
    nics = facts_bsd.parse_ifconfig(single.get("ifconfig", []), kernel_name)
    return replace(
        facts,
        **fields,
        interfaces=tuple(NicFacts(**{**nic, "addresses": tuple(nic["addresses"])}) for nic in nics),
    )


def _storage(
    sections: list[tuple[str, list[str]]], single: Mapping[str, list[str]]
) -> dict[str, Any]:
    """The storage layout from the mdstat, zpool-*, disk and mounts sections."""

    def blocks(kind: str) -> list[dict[str, str]]:
        return [_key_values(lines, "=") for name, lines in sections if name == kind]

    found: dict[str, Any] = {
        "md_arrays": storage.parse_mdstat("\n".join(single.get("mdstat", []))),
        "zfs_pools": storage.parse_zpool_status("\n".join(single.get("zpool-status", []))),
        "zfs_sizes": storage.parse_zpool_list("\n".join(single.get("zpool-list", []))),
        "disks": storage.parse_disks(blocks("disk")),
        "mounts": storage.parse_mounts("\n".join(single.get("mounts", []))),
        "df": volumes.parse_df("\n".join(single.get("df", []))),
        "layers": volumes.parse_layers(blocks("layer")),
        "btrfs": volumes.parse_btrfs(blocks("btrfs")),
    }
    return {key: value for key, value in found.items() if value}


def parse_iperf3_version(line: str) -> str | None:
    """``"iperf 3.12 (cJSON 1.7.15)"`` -> ``"3.12"``, ``"iperf 3.1.3"`` -> ``"3.1.3"``; or None."""
    match = _IPERF3_VERSION.match(line.strip())
    return match.group(1) if match else None


def _ip_json(single: Mapping[str, list[str]]) -> bool | None:
    """The ``ip-json`` probe: ``[[`` when ``ip -j addr`` and ``ip -j route`` both print JSON."""
    if "ip-json" not in single:
        return None
    return (_first(single["ip-json"]) or "") == "[["


def _sections(stdout: str) -> Iterator[tuple[str, list[str]]]:
    """(name, lines) for each ``@@nasplan:name@@`` block, trailing blank lines dropped."""
    name: str | None = None
    lines: list[str] = []
    for raw in stdout.splitlines():
        match = _HEADER.match(raw.strip())
        if match is None:
            if name is not None:
                lines.append(raw.rstrip("\r"))
            continue
        if name is not None:
            yield name, _trim(lines)
        name = match.group(1) + (f":{match.group(2)}" if match.group(2) is not None else "")
        lines = []
    if name is not None:
        yield name, _trim(lines)


def _trim(lines: list[str]) -> list[str]:
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def _first(lines: list[str] | None) -> str | None:
    """First non-blank line, stripped."""
    return next((line.strip() for line in lines or () if line.strip()), None)


def _key_values(lines: list[str], sep: str) -> dict[str, str]:
    """``KEY=value`` lines as a dict; shell-style quotes around values removed."""
    out: dict[str, str] = {}
    for line in lines:
        key, found, value = line.partition(sep)
        if found and key.strip() and not key.lstrip().startswith("#"):
            value = value.strip()
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
                value = value[1:-1]
            out[key.strip()] = value
    return out


def _cpu_model(lines: list[str]) -> str | None:
    """The most telling CPU name: x86 ``model name``, MIPS ``cpu model``, else ARM's lines."""
    found = _key_values(lines, ":")
    for key in _CPU_MODEL_KEYS:
        value = found.get(key)
        if value and not value.isdigit():
            return value
    return None


def _memory_bytes(lines: list[str]) -> int | None:
    """``MemTotal:  8061000 kB`` -> bytes (the kernel's kB is KiB)."""
    match = re.match(r"MemTotal:\s*(\d+)\s*kB", _first(lines) or "")
    return int(match.group(1)) * 1024 if match else None


def _nic(values: Mapping[str, str], addresses: Mapping[str, list[str]]) -> NicFacts:
    name = values.get("name", "")
    speed = _int_or_none(values.get("speed"))
    return NicFacts(
        name=name,
        mtu_bytes=positive_int(values.get("mtu")),
        state=_str_or_none(values.get("operstate")),
        mac=_str_or_none(values.get("address")),
        speed_mbps=speed if speed is not None and 0 < speed < _MAX_SPEED_MBPS else None,
        duplex=_str_or_none(values.get("duplex")),
        driver=_str_or_none(values.get("driver")),
        addresses=tuple(addresses.get(name, ())),
        bus=nic_bus(values),
    )


_GT_PER_S = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*GT/s")


def _gt_per_s(text: str | None) -> float | None:
    """``8.0 GT/s PCIe`` (or ``8 GT/s``) -> 8.0; ``Unknown`` -> None."""
    match = _GT_PER_S.match(text or "")
    return float(match[1]) if match else None


def nic_bus(values: Mapping[str, str]) -> dict[str, Any] | None:
    """A NIC's sysfs bus lines -> ``{"pcie_gt_per_s", "pcie_width", "pcie_max_gt_per_s",
    "pcie_max_width"}`` and/or ``{"usb_speed_mbps"}``; None when there is neither."""
    bus: dict[str, Any] = {}
    if "pcie_current_link_speed" in values:
        bus.update(
            pcie_gt_per_s=_gt_per_s(values.get("pcie_current_link_speed")),
            pcie_width=positive_int(values.get("pcie_current_link_width")),
            pcie_max_gt_per_s=_gt_per_s(values.get("pcie_max_link_speed")),
            pcie_max_width=positive_int(values.get("pcie_max_link_width")),
        )
    if "usb_speed" in values:
        # sysfs says 1.5, 12, 480, 5000, 10000, 20000 (Mbit/s)
        usb = re.match(r"^\s*(\d+(?:\.\d+)?)", values.get("usb_speed") or "")
        bus["usb_speed_mbps"] = float(usb[1]) if usb else None
    return bus or None


def _addresses(single: Mapping[str, list[str]]) -> dict[str, list[str]]:
    """Interface name -> ``["198.18.0.10/24", ...]`` from ``ip -o addr`` or ``ifconfig -a``."""
    out: dict[str, list[str]] = {}
    for line in single.get("ip-addr", []):
        match = _IP_ADDR_LINE.match(line.strip())
        if match and _valid_interface(match.group(3)):
            out.setdefault(match.group(1).split("@")[0], []).append(match.group(3))
    current: str | None = None
    for line in single.get("ifconfig", []):
        if line and not line[0].isspace():
            current = line.split()[0].rstrip(":")
            continue
        if current is None:
            continue
        inet = _IFCONFIG_INET.search(line)
        inet6 = _IFCONFIG_INET6.search(line)
        if inet:
            cidr = f"{inet.group(1)}/{inet.group(2) or 32}"
        elif inet6:
            cidr = f"{inet6.group(1)}/{inet6.group(2) or inet6.group(3) or 128}"
        else:
            continue
        if _valid_interface(cidr):
            out.setdefault(current, []).append(str(ipaddress.ip_interface(cidr)))
    return out


def _valid_interface(cidr: str) -> bool:
    try:
        ipaddress.ip_interface(cidr)
    except ValueError:
        return False
    return True


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None


def _str_or_none(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


_READ: dict[object, Callable[[object], object]] = {
    "str | None": _str_or_none,
    "int | None": _int_or_none,
    "bool | None": lambda value: value if isinstance(value, bool) else None,
}
