"""Answers of a real network path for the FakeRunner: DF pings as a path of a given MTU."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nasplan.remote.runner import Result

PING = Path(__file__).resolve().parents[2] / "fixtures" / "ping"
Reply = Callable[[str], Result]


def df_path_reply(path_mtu_bytes: int) -> Reply:
    """Answer a DF ping (``-s N``) as a path whose MTU is ``path_mtu_bytes`` would: real iputils
    output captured between namespaces, a 1500-byte packet passing or a 9000-byte one dropped."""

    def reply(command: str) -> Result:
        argv = command.split()
        size_bytes = int(argv[argv.index("-s") + 1]) + 28
        passes = size_bytes <= path_mtu_bytes
        name = "iputils-df-1472-ok.txt" if passes else "iputils-df-8972-peer-drops.txt"
        return Result(command, (PING / name).read_text(encoding="utf-8"), "", 0)

    return reply


@pytest.fixture()
def df_path() -> Callable[[int], Reply]:
    """``df_path(1500)``: a FakeRunner reply for DF pings over a path of that MTU."""
    return df_path_reply
