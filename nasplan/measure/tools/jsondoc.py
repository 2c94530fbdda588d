"""Reading the JSON a tool prints: its result object amid other text, numbers that may be absent."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any

_ANY_BRACE = re.compile(r"\{")
_LINE_BRACE = re.compile(r"^\{", re.MULTILINE)


def find_object(
    raw: str,
    is_result: Callable[[dict[str, Any]], bool],
    *,
    at_line_start: bool = False,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], dict[str, Any]] | None = None,
) -> dict[str, Any] | None:
    """The first JSON object in ``raw`` that ``is_result`` accepts, skipping text before it.

    ``at_line_start``: only objects whose ``{`` begins a line (faster on long text output).
    ``object_pairs_hook``: builds each object from its (key, value) pairs, repeated keys
    included (a tool whose JSON repeats a key). Returns None when there is none.
    """
    decoder = json.JSONDecoder(object_pairs_hook=object_pairs_hook)
    for match in (_LINE_BRACE if at_line_start else _ANY_BRACE).finditer(raw):
        try:
            obj, _ = decoder.raw_decode(raw, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and is_result(obj):
            return obj
    return None


def number(section: Mapping[str, Any] | None, key: str) -> float | None:
    """``section[key]`` as a float when it is a JSON number (not a bool), else None."""
    value = (section or {}).get(key)
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def count(section: Mapping[str, Any] | None, key: str) -> int | None:
    """``section[key]`` as an int when it is a JSON number, else None."""
    value = number(section, key)
    return int(value) if value is not None else None
