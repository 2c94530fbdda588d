"""How long nasplan waits for a host at each step, and how long what it leaves there may live.

Defaults suit real hosts; every value can be shortened through an environment variable
(``NASPLAN_<FIELD>`` in upper case, e.g. ``NASPLAN_CHANNEL_S=2``), which the fault tests use.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Timeouts:
    """Step timeouts in seconds; a hung host is named after at most one of them."""

    # TCP connect + SSH handshake + authentication
    connect_s: float = 10.0
    # opening a channel for one command on a connection that is already up
    channel_s: float = 10.0
    # a command that does not give its own timeout
    command_s: float = 3600.0
    # a host lost during the run: how long restore keeps trying to reconnect
    reconnect_grace_s: float = 30.0
    # what nasplan leaves running on a host (lock, sampler, server watchdog, network guard)
    # lives this long after the last renewal: nasplan killed -> gone within lease_s
    lease_s: float = 30.0
    # nasplan renews every host's lease this often
    renew_s: float = 5.0


def from_environ(environ: Mapping[str, str] | None = None) -> Timeouts:
    """Timeouts with ``NASPLAN_<FIELD>`` overrides; a bad value is an error naming the variable."""
    env = os.environ if environ is None else environ
    values: dict[str, float] = {}
    for spec in dataclasses.fields(Timeouts):
        name = f"NASPLAN_{spec.name.upper()}"
        text = env.get(name)
        if text is None:
            continue
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not value > 0:
            from nasplan.errors import InputError

            raise InputError(f"{name}={text!r}: expected a number of seconds above 0")
        values[spec.name] = value
    return Timeouts(**values)
