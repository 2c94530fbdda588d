"""Units: parse rates and sizes from plan text, format them with their unit named."""

from __future__ import annotations

import math
import re
from decimal import Decimal

MIB_BYTES = 2**20  # a mebibyte; a megabyte (MB) is 10**6 bytes

# A rate in bit/s as plans, inventories and labs write it: a number, a decimal (SI) suffix, and
# optionally the unit: 500M, 2.5G, 500Mbps, 500Mbit/s. The schemas' ``rate`` is this pattern
# (tests/unit/test_units.py keeps them one grammar).
RATE_PATTERN = r"^([0-9]+(?:\.[0-9]+)?) ?([kKmMgGtT]?)(?:bit/s|bps|b)?$"
RATE_EXAMPLE = "a rate, e.g. 500M (500 Mbit/s; 2.5G, 500Mbps, 500Mbit/s too)"
_RATE_RE = re.compile(RATE_PATTERN)
_RATE_FACTORS = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)(i?)[bB]?\s*$")


def parse_rate(text: str | int | float) -> int:
    """Parse a rate such as ``"2.5G"``, ``"100M"`` or ``1000000000`` into bits per second.

    Suffixes are decimal (SI): ``1G`` is 10^9 bit/s. Raises ValueError on anything else.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a rate: {text!r}")
    if isinstance(text, (int, float)):
        return int(text)
    match = _RATE_RE.match(text.strip())
    if not match:
        raise ValueError(f"not a rate: {text!r} (expected {RATE_EXAMPLE})")
    number, suffix = match.groups()
    # Decimal, not float: float("2.01") * 10**9 truncates to 2_009_999_999
    return int(Decimal(number) * _RATE_FACTORS[suffix.lower()])


def parse_size(text: str | int) -> int:
    """Parse a size such as ``"1GiB"`` (2^30 bytes) or ``"10GB"`` (10^10 bytes) into bytes."""
    if isinstance(text, bool):
        raise ValueError(f"not a size: {text!r}")
    if isinstance(text, int):
        return text
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"not a size: {text!r} (expected e.g. 1GiB, 512MiB, 10GB)")
    number, prefix, binary = match.groups()
    power = "kmgt".find(prefix.lower()) + 1 if prefix else 0
    base = 1024 if binary else 1000
    return int(Decimal(number) * base**power)


def format_bits_per_second(bits_per_second: float) -> str:
    """Format a rate with Gbit/s or Mbit/s, e.g. ``"9.41 Gbit/s"``, ``"941.5 Mbit/s"``."""
    if bits_per_second >= 10**9:
        return f"{bits_per_second / 10**9:.2f} Gbit/s"
    if bits_per_second >= 10**6:
        return f"{bits_per_second / 10**6:.1f} Mbit/s"
    if bits_per_second >= 10**3:
        return f"{bits_per_second / 10**3:.1f} kbit/s"
    return f"{bits_per_second:.0f} bit/s"


def decimals(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals, or to two significant figures where those would show
    a value that is not 0 as 0 (a slow disk's 0.038, never 0.0)."""
    places = digits
    if value and round(value, digits) == 0:
        places = 1 - math.floor(math.log10(abs(value)))
    return f"{value:.{places}f}"


def format_bytes_per_second(bytes_per_second: float, digits: int = 1) -> str:
    """Format a rate in bytes/s as MiB/s (2^20 bytes/s), e.g. ``"131.0 MiB/s"``, ``"0.038
    MiB/s"``."""
    return f"{decimals(bytes_per_second / MIB_BYTES, digits)} MiB/s"


def format_rate_short(bits_per_second: float) -> str:
    """Format a nominal link speed the way people say it: ``"10G"``, ``"2.5G"``, ``"100M"``."""
    for factor, suffix in ((10**12, "T"), (10**9, "G"), (10**6, "M"), (10**3, "k")):
        if bits_per_second >= factor:
            return f"{bits_per_second / factor:g}{suffix}"
    return f"{bits_per_second:g}"


def format_metric(value: float, metric: str) -> str:
    """``value`` in its metric's unit: ``*_ms`` -> ``0.250 ms``, ``*_s`` -> ``1.500 s``,
    ``*_bytes`` -> ``9000 bytes``, ...

    ``bytes_per_second`` is shown in MiB/s, ``*bits_per_second`` in Mbit/s or Gbit/s, any other
    metric as ``format_other`` says.
    """
    if metric.endswith("_ms"):
        return f"{value:.3f} ms"
    if metric.endswith("_s"):
        return f"{value:.3f} s"
    if metric == "bytes_per_second":
        return format_bytes_per_second(value)
    if metric.endswith("_bytes"):
        return f"{value:.0f} bytes"
    if "bits_per_second" in metric:
        return format_bits_per_second(value)
    return format_other(value, metric)


def format_other(value: float, metric: str) -> str:
    """A metric of no unit above, in the one its name says: ``files_per_second`` -> ``4.58
    files/s``, ``*_percent`` -> ``67.5 %``, ``retransmits`` -> ``113 retransmits``; never a bare
    number in a table cell."""
    if metric.endswith("_percent"):
        return f"{value:.1f} %"
    if metric.endswith("_per_second"):
        return f"{significant(value)} {metric.removesuffix('_per_second').replace('_', ' ')}/s"
    return f"{significant(value)} {metric.replace('_', ' ')}"


def format_size(size_bytes: int | None) -> str:
    """A size as people ask for it: ``1 GiB``, ``64 MiB``; ``1.50 GiB (1610612736 bytes)`` when
    not whole; ``–`` for None."""
    if size_bytes is None:
        return "–"
    gib, mib = 2**30, MIB_BYTES
    if size_bytes >= gib and size_bytes % gib == 0:
        return f"{size_bytes // gib} GiB"
    if size_bytes >= mib and size_bytes % mib == 0:
        return f"{size_bytes // mib} MiB"
    if size_bytes >= gib:
        return f"{size_bytes / gib:.2f} GiB ({size_bytes} bytes)"
    return f"{size_bytes / mib:.1f} MiB ({size_bytes} bytes)"


def counted(count: int, noun: str) -> str:
    """``1 file``, ``2 files``, ``0 warnings``: a count with its noun, plural but for one."""
    return f"{count} {noun}" + ("" if count == 1 else "s")


def significant(value: float, digits: int = 3) -> str:
    """A count per unit to ``digits`` significant figures, never in exponent form and never
    rounded past its units: ``4.58``, ``45.8``, ``1203``; nor to 0 (``0.0038``)."""
    whole = len(str(int(abs(value)))) if abs(value) >= 1 else 1
    return decimals(value, max(digits - whole, 0))


def format_free(size_bytes: int | None) -> str:
    """Free space as a person says it: ``0 B``, ``512 KiB``, ``96.4 MiB``, ``1.2 GiB``; ``?``."""
    if size_bytes is None:
        return "?"
    for power, unit in ((4, "TiB"), (3, "GiB"), (2, "MiB")):
        if size_bytes >= 1024**power:
            return f"{size_bytes / 1024**power:.1f} {unit}"
    return f"{size_bytes // 1024} KiB" if size_bytes >= 1024 else f"{size_bytes} B"


def format_seconds(seconds: float | None) -> str:
    """Seconds as a person writes them: ``25 s`` (24.975...), ``2.5 s``, ``0.3 s``; ``? s``."""
    if seconds is None:
        return "? s"
    if seconds >= 10:
        return f"{seconds:.0f} s"
    text = f"{seconds:.1f}".rstrip("0").rstrip(".")
    return f"{text or '0'} s"


def positive_int(value: object) -> int | None:
    """A whole number above 0 from a tool's text (``" 9000\\n"``) or a JSON number; None for
    anything else (0, -1, ``unknown``, a boolean, nothing)."""
    if isinstance(value, bool):
        return None
    try:
        number = int(str(value).strip())
    except (TypeError, ValueError):
        return None
    return number if number > 0 else None
