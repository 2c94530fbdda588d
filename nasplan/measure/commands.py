"""The commands a repetition ran, as run.json keeps them: ``{"host", "argv"}`` each, so that a
reader can run one again by hand (the report shows them whole, shell-quoted)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import Any


def command(
    host: str, argv: Sequence[object], *, timed: bool = True, server: bool = False
) -> dict[str, Any]:
    """One command of a repetition: the host it ran on and its exact argv (``timed``: False
    for one run just before the timed one, such as a transfer's mount; ``server``: True for a
    server started before the timed command and serving it, such as iperf3's ``-s -1`` on the
    other host). No secret is ever in it: passwords reach the tools on stdin or in a file made
    from it, never in argv."""
    found: dict[str, Any] = {"host": host, "argv": [str(a) for a in argv]}
    if not timed:
        found["timed"] = False
    if server:
        found["server"] = True
    return found


def shown(record: Mapping[str, Any]) -> str:
    """``pc: iperf3 -J -c 198.18.6.5 -p 5201 -t 1``: a kept command, shell-quoted (``(untimed,
    before)`` after one run just before the timed one, ``(server, started first)`` after a
    server)."""
    text = f"{record['host']}: {shlex.join(record['argv'])}"
    if record.get("server"):
        return f"{text} (server, started first)"
    return text if record.get("timed", True) else f"{text} (untimed, before)"
