"""Ansible's host patterns: ``www[01:03].lan:2222`` -> the host names and the port they share.

The same rules in INI host lines, YAML ``hosts:`` keys and comma-separated ``-i`` host lists
(ansible-core's ``parse_address`` and ``expand_hostname_range``): a port is ``:NN`` after an
IPv4 address or a host name, or after a bracketed ``[host]``; a text that is no address or
host name is a host name as it stands, with no port; each ``[begin:end]`` or
``[begin:end:step]`` range (numbers, zero-padded numbers, letters) multiplies the names.
"""

from __future__ import annotations

import re
import string

MAX_RANGE_HOSTS = 10_000  # what one pattern may expand to

_BRACKETED_PORT = re.compile(r"^\[(.+)\]:([0-9]+)$")
# everything up to the last ``:NN``, a bracketed part (a range) keeping its colons
_HOST_PORT = re.compile(r"^((?:[^:\[\]]|\[[^\]]*\])*):([0-9]+)$")
_NUMERIC_RANGE = r"\[[0-9]+:[0-9]+(?::[0-9]+)?\]"
_HEX_RANGE = r"\[[0-9a-f]+:[0-9a-f]+(?::[0-9]+)?\]"
_NAME_RANGE = r"\[(?:[a-z]:[a-z]|[0-9]+:[0-9]+)(?::[0-9]+)?\]"
_IPV4_PART = rf"(?:25[0-5]|2[0-4][0-9]|[01]?[0-9]{{1,2}}|{_NUMERIC_RANGE})"
_IPV4 = re.compile(rf"^(?:{_IPV4_PART}\.){{3}}{_IPV4_PART}$", re.I)
_IPV6_PART = rf"(?:[0-9a-f]{{1,4}}|{_HEX_RANGE})"
_LABEL = rf"(?:\w|{_NAME_RANGE})(?:[\w-]|{_NAME_RANGE})*(?<![_-])"
_HOSTNAME = re.compile(rf"^{_LABEL}(?:\.{_LABEL})*$", re.I | re.UNICODE)


def _is_ipv6(text: str) -> bool:
    """An IPv6 address (ranges allowed in place of a group): 8 groups, or fewer around one
    ``::``; a dotted IPv4 tail stands for two groups."""
    if ":" not in text or text.count("::") > 1:
        return False
    groups = 0
    head, _, tail = text.rpartition(":")
    if "." in tail:
        if not _IPV4.match(tail):
            return False
        groups, text = 2, head + ":" if head.endswith(":") else head
    for part in text.split("::"):
        for group in part.split(":") if part else ():
            if not re.fullmatch(_IPV6_PART, group, re.I):
                return False
            groups += 1
    return groups <= 7 if "::" in text else groups == 8


def parse_address(pattern: str) -> tuple[str, int | None]:
    """(host, port) of ``pattern`` as Ansible splits it; ValueError when the rest is no IPv4 or
    IPv6 address and no host name (ranges allowed in each)."""
    address, port = pattern, None
    bracketed = _BRACKETED_PORT.match(address)
    if bracketed:
        address, port = bracketed.group(1), int(bracketed.group(2))
    host_port = _HOST_PORT.match(address)
    if host_port:
        address, port = host_port.group(1), int(host_port.group(2))
    if _IPV4.match(address) or _is_ipv6(address) or _HOSTNAME.match(address):
        return address, port
    raise ValueError(f"not a valid network host name: {address}")


def split_port(pattern: str) -> tuple[str, int | None]:
    """``nas:2222`` -> (``nas``, 2222); ``[fe80::1]:22`` -> (``fe80::1``, 22); a pattern that
    is no address keeps its colons and has no port, as in Ansible."""
    try:
        return parse_address(pattern)
    except ValueError:
        return pattern, None


def _count(numbers: range) -> int:
    """How many numbers ``numbers`` holds, however many."""
    try:
        return len(numbers)
    except OverflowError:
        return MAX_RANGE_HOSTS + 1


def expand_range(pattern: str) -> list[str]:
    """``www[01:03].lan`` -> ``www01.lan www02.lan www03.lan`` (Ansible's host ranges).

    Raises ValueError with what is wrong (bounds, unequal widths, over MAX_RANGE_HOSTS hosts).
    """
    pending, out = [pattern], []
    while pending:
        name = pending.pop(0)
        if "[" not in name:
            out.append(name)
            continue
        head, _, rest = name.partition("[")
        bounds_text, closed, tail = rest.partition("]")
        if not closed:
            raise ValueError(f"host range not closed with ']': {pattern}")
        bounds = bounds_text.split(":")
        if len(bounds) not in (2, 3):
            raise ValueError(f"host range must be begin:end or begin:end:step: [{bounds_text}]")
        begin, end = bounds[0] or "0", bounds[1]
        if not end:
            raise ValueError(f"host range must specify end value: [{bounds_text}]")
        try:
            step = int(bounds[2]) if len(bounds) == 3 else 1
            width = len(begin) if begin[0] == "0" and len(begin) > 1 else 0
            if width and width != len(end):
                raise ValueError("host range must specify equal-length begin and end formats")
            # ``in``, as Ansible's str.index: a run of letters names where it starts
            if begin in string.ascii_letters and end in string.ascii_letters:
                first, last = string.ascii_letters.index(begin), string.ascii_letters.index(end)
                if first > last:
                    raise ValueError("host range must have begin <= end")
                parts = list(string.ascii_letters[first : last + 1 : step])
            else:
                numbers = range(int(begin), int(end) + 1, step)
                # len() of a range past 2**63 items is an OverflowError: count it instead
                if _count(numbers) > MAX_RANGE_HOSTS:
                    raise ValueError(f"more than {MAX_RANGE_HOSTS} hosts")
                parts = [str(n).zfill(width) for n in numbers]
        except ValueError as exc:
            raise ValueError(f"host range [{bounds_text}] in {pattern}: {exc}") from None
        pending = [f"{head}{part}{tail}" for part in parts] + pending
        if len(out) + len(pending) > MAX_RANGE_HOSTS:
            raise ValueError(f"host range {pattern} expands to more than {MAX_RANGE_HOSTS} hosts")
    return out


def expand_pattern(pattern: str) -> tuple[list[str], int | None]:
    """The host names and the port of one INI or YAML host pattern; ValueError as
    ``expand_range``."""
    name, port = split_port(pattern)
    return expand_range(name), port
