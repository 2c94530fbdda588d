"""The commands a repetition ran, as run.json keeps them: ``{"host", "argv"}`` each, so that a
reader can run one again by hand (the report shows them whole, shell-quoted)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any


def command(host: str, argv: Sequence[object], *, timed: bool = True) -> dict[str, Any]:
    """One command of a repetition: the host it ran on and its exact argv (``timed``: False
    for one run just before the timed one, such as a transfer's mount). No secret is ever in
    it: passwords reach the tools on stdin or in a file made from it, never in argv."""
    found: dict[str, Any] = {"host": host, "argv": [str(a) for a in argv]}
    if not timed:
        found["timed"] = False
    return found


def shown(record: Mapping[str, Any]) -> str:
    """``pc: iperf3 -J -c 198.18.6.5 -p 5201 -t 1``: a kept command, shell-quoted (``(untimed,
    before)`` after one run just before the timed one)."""
    text = f"{record['host']}: {shlex.join(record['argv'])}"
    return text if record.get("timed", True) else f"{text} (untimed, before)"
