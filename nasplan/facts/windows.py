"""Windows facts: one PowerShell script (one SSH round trip) and pure parsers of its output.

The script prints ``@@nasplan:name@@`` sections like the POSIX one; each holds a cmdlet's
``Format-List`` output (``Key : Value`` lines, records separated by blank lines).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from nasplan.errors import UnknownOutput
from nasplan.remote.shell import PowerShell
from nasplan.units import positive_int

# Looked up where the inventory says, then on PATH (each without ".exe").
TOOL_NAMES = ("iperf3", "robocopy", "diskspd", "winget", "choco")
DEFAULT_SHELL_MARKER = r"HKLM:\SOFTWARE\OpenSSH\DefaultShell"
_LINK_SPEED = re.compile(r"^([\d.]+)\s*([KMG]?)bps$", re.IGNORECASE)
_SPEED_FACTOR_MBPS = {"": 1e-6, "K": 1e-3, "M": 1.0, "G": 1000.0}
_POSIX_LAYERS = ("MINGW", "MSYS", "CYGWIN")
_NOT_WINDOWS_SHELL = (
    "is not recognized as an internal or external command",  # cmd.exe
    "is not recognized as the name of a cmdlet",  # PowerShell
)


def facts_script(tool_paths: Mapping[str, str] | None = None) -> str:
    """The PowerShell facts script; ``tool_paths``: inventory ``tools:`` paths tried first."""
    quote = PowerShell().quote
    entries = "; ".join(
        f"{quote(tool)} = @({quote((tool_paths or {}).get(tool, ''))})" for tool in TOOL_NAMES
    )
    template = resources.files("nasplan.facts").joinpath("facts_windows.ps1").read_text()
    # An ordered dictionary keeps the tools section in TOOL_NAMES order.
    return template.replace("@CANDIDATES@", f"[ordered]@{{ {entries} }}")


def looks_like_windows(stderr: str) -> bool:
    """True when a POSIX ``sh -c`` was refused the way cmd.exe or PowerShell refuse it."""
    return any(marker in stderr for marker in _NOT_WINDOWS_SHELL)


def posix_layer_on_windows(stdout: str) -> bool:
    """True when the POSIX facts ran in a Windows POSIX layer (``uname -s`` MINGW64_NT-...)."""
    match = re.search(r"@@nasplan:uname-s@@\r?\n([^\r\n]*)", stdout)
    return match is not None and match.group(1).strip().upper().startswith(_POSIX_LAYERS)


def parse_format_list(lines: Sequence[str]) -> list[dict[str, str]]:
    """``Format-List`` output -> one dict per record (``Key : Value``; blank lines split records).

    A line starting with spaces continues the previous value (PowerShell wraps long ones).
    """
    records: list[dict[str, str]] = []
    current: dict[str, str] = {}
    last: str | None = None
    for raw in lines:
        line = raw.rstrip()
        if not line.strip():
            if current:
                records.append(current)
            current, last = {}, None
            continue
        key, sep, value = line.partition(" : ")
        if not sep and line.rstrip().endswith(" :"):
            key, sep, value = line.rstrip()[:-2], " :", ""
        if sep and key.strip() and not raw[:1].isspace():
            last = key.strip()
            current[last] = value.strip()
        elif last is not None:
            current[last] = f"{current[last]} {line.strip()}".strip()
    if current:
        records.append(current)
    return records


def link_speed_mbps(record: Mapping[str, str]) -> int | None:
    """``ReceiveLinkSpeed`` (bit/s) or ``LinkSpeed`` (``"2.5 Gbps"``) -> Mbit/s; None when down."""
    raw = record.get("ReceiveLinkSpeed", "")
    if raw.isdigit() and 0 < int(raw) < 10**13:
        return round(int(raw) / 1_000_000)
    match = _LINK_SPEED.match(record.get("LinkSpeed", "").strip())
    if not match:
        return None
    mbps = round(float(match.group(1)) * _SPEED_FACTOR_MBPS[match.group(2).upper()])
    return mbps or None


def adapters(
    netadapter: Sequence[Mapping[str, str]], ipaddresses: Sequence[Mapping[str, str]]
) -> list[dict[str, Any]]:
    """Get-NetAdapter + Get-NetIPAddress records -> NicFacts keyword arguments per adapter.

    UnknownOutput when a record lacks the fields nasplan reads (another Windows, another
    PowerShell, a localized property name) or no adapter came at all.
    """
    _require(netadapter, "Get-NetAdapter | Format-List", _ADAPTER_FIELDS, at_least_one=True)
    _require(ipaddresses, "Get-NetIPAddress | Format-List", _ADDRESS_FIELDS)
    by_alias: dict[str, list[str]] = {}
    for record in ipaddresses:
        address = record.get("IPAddress", "").split("%")[0]
        try:
            cidr = str(ipaddress.ip_interface(f"{address}/{record.get('PrefixLength', '')}"))
        except ValueError:
            continue
        by_alias.setdefault(record.get("InterfaceAlias", ""), []).append(cidr)
    nics = []
    for record in netadapter:
        name = record.get("Name") or record.get("InterfaceAlias") or record.get("ifAlias") or ""
        duplex = record.get("FullDuplex", "")
        nics.append(
            {
                "name": name,
                "mtu_bytes": positive_int(record.get("MtuSize")),
                "state": "up" if record.get("Status", "").lower() == "up" else "down",
                "mac": record.get("MacAddress", "").replace("-", ":").lower() or None,
                "speed_mbps": link_speed_mbps(record),
                "duplex": {"True": "full", "False": "half"}.get(duplex),
                "driver": record.get("DriverFileName") or None,
                "addresses": tuple(by_alias.get(name, ())),
            }
        )
    return nics


def system_fields(single: Mapping[str, list[str]]) -> dict[str, Any]:
    """HostFacts keyword arguments (OS, CPU, memory, admin, shell marker) from the sections."""
    os_records = parse_format_list(single.get("win-os", []))
    _require(os_records, "Get-CimInstance Win32_OperatingSystem", _OS_FIELDS, at_least_one=True)
    os_record = os_records[0]
    cpus = parse_format_list(single.get("win-cpu", []))
    cores = sum(positive_int(c.get("NumberOfLogicalProcessors")) or 0 for c in cpus) or None
    memory_kib = positive_int(os_record.get("TotalVisibleMemorySize"))  # Win32 reports KiB
    admin = _first(single.get("win-admin"))
    return {
        "os_id": "windows",
        "os_version": os_record.get("Version") or os_record.get("BuildNumber") or None,
        "os_pretty": os_record.get("Caption") or None,
        "kernel": os_record.get("BuildNumber") or None,
        "arch": os_record.get("OSArchitecture") or None,
        "cpu_model": next((c["Name"] for c in cpus if c.get("Name")), None),
        "cpu_cores": cores,
        "memory_bytes": memory_kib * 1024 if memory_kib else None,
        "is_root": {"True": True, "False": False}.get(admin or ""),
    }


def tools(lines: Sequence[str]) -> dict[str, str | None]:
    """``iperf3=C:\\iperf3\\iperf3.exe`` lines -> tool -> path (None: not found)."""
    found: dict[str, str | None] = dict.fromkeys(TOOL_NAMES)
    for line in lines:
        key, sep, value = line.partition("=")
        if sep and key.strip() in found:
            found[key.strip()] = value.strip() or None
    return found


# Each tuple: one of these names must be there (Windows versions name a few differently).
_ADAPTER_FIELDS = (("Name", "InterfaceAlias", "ifAlias"), ("Status",), ("MacAddress",))
_ADDRESS_FIELDS = (("IPAddress",), ("InterfaceAlias",), ("PrefixLength",))
_OS_FIELDS = (("BuildNumber",),)


def _require(
    records: Sequence[Mapping[str, str]],
    command: str,
    fields: Sequence[Sequence[str]],
    *,
    at_least_one: bool = False,
) -> None:
    expected = "Format-List records with " + ", ".join("/".join(names) for names in fields)
    if at_least_one and not records:
        raise UnknownOutput(command, expected, "")
    for record in records:
        if not all(any(name in record for name in names) for names in fields):
            raise UnknownOutput(command, expected, " ".join(f"{k}: {v}" for k, v in record.items()))


def _first(lines: list[str] | None) -> str | None:
    return next((line.strip() for line in lines or () if line.strip()), None)
