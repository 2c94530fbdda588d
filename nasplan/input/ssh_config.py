"""OpenSSH client config files checked line by line before paramiko reads them: every line it
would refuse, or take wrongly, as ``FILE:LINE:COL: ssh_config: what is wrong``.

paramiko's parser raises on a keyword without a value and on a ``Host`` or ``Match`` it cannot
split, and Fabric later on a ``Port`` that is not a number, each as a traceback; a value OpenSSH
itself would refuse (a ProxyJump that is not one) is refused here too. ``Include`` is not
followed by paramiko: in a file the inventory names it is refused, so that settings the user
relies on are not left out in silence.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from nasplan.errors import InputError
from nasplan.input.localfile import MAX_KEY_FILE_BYTES, read_text_bounded
from nasplan.input.proxy_jump import parse_hops

# paramiko.config.SSHConfig.SETTINGS_REGEX: a keyword, then '=' or blanks, then its value
_SETTING = re.compile(r"(\w+)(?:\s*=\s*|\s+)(.+)")
_MATCH_WITHOUT_VALUE = ("all", "canonical", "final")
_NUMBERS = {"port": (1, 65535), "connecttimeout": (0, 86400), "connectionattempts": (1, 1000)}


# What OpenSSH and Fabric read when no ssh_config is named: the user's, then the system's.
DEFAULT_SSH_CONFIGS = (Path("~/.ssh/config"), Path("/etc/ssh/ssh_config"))


def read_ssh_config(path: Path, *, named: bool) -> str:
    """The text of the ssh_config ``path``; InputError (one located line each) for a file that
    is not one. ``named``: the inventory names the file (``Include`` refused), rather than it
    being ``~/.ssh/config`` or the system's, which paramiko reads without their Includes."""
    text = read_text_bounded(path, MAX_KEY_FILE_BYTES, "ssh_config file")
    errors = ssh_config_errors(path, text, named=named)
    if errors:
        raise InputError(errors)
    return text


def ssh_config_errors(path: Path, text: str, *, named: bool) -> list[str]:
    """``FILE:LINE:COL: ssh_config: message`` for each line of ``text`` that is wrong."""
    errors = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        column = len(raw) - len(raw.lstrip()) + 1
        problem = _line_problem(line, named)
        if problem:
            errors.append(f"{path}:{number}:{column}: ssh_config: {problem}")
    return errors


def _line_problem(line: str, named: bool) -> str | None:
    setting = _SETTING.match(line)
    if setting is None:
        word = line.split()[0][:40]
        return f"{word!r} has no value (a line cut short?)"
    keyword, value = setting.group(1).lower(), setting.group(2).strip()
    if value.startswith('"') and value.endswith('"') and len(value) > 1:
        value = value[1:-1]
    if keyword in ("host", "match"):
        try:
            words = shlex.split(value)
        except ValueError as exc:
            return f"{setting.group(1)} {value[:40]!r}: {exc}"
        return _match_problem(words) if keyword == "match" else None
    if keyword == "include" and named:
        return (
            "Include is not followed (nasplan reads this one file through paramiko): put the "
            "settings it would bring in here"
        )
    if keyword in _NUMBERS:
        low, high = _NUMBERS[keyword]
        if not value.isdigit() or not low <= int(value) <= high:
            return f"{setting.group(1)} {value[:40]!r} is not a number from {low} to {high}"
    if keyword == "proxyjump":
        try:
            parse_hops(value)
        except ValueError as exc:
            return str(exc)
    return None


def _match_problem(words: list[str]) -> str | None:
    """What paramiko refuses in a ``Match`` line: a criterion without its argument, ``all``
    mixed with anything but a leading ``canonical``."""
    criteria = []
    index = 0
    while index < len(words):
        criterion = words[index].lstrip("!")
        criteria.append(criterion)
        index += 1
        if criterion in _MATCH_WITHOUT_VALUE:
            continue
        if index == len(words):
            return f"Match {criterion} without its argument"
        index += 1
    if "all" in criteria:
        if any(c not in ("all", "canonical") for c in criteria):
            return "Match all mixed with criteria other than canonical"
        if criteria[-1] != "all":
            return "Match all before canonical"
    if not criteria:
        return "Match without criteria"
    return None
