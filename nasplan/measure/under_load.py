"""Latency under load around one measurement: the client pings the far end idle, then all
through the measurement (``tools.loaded_ping``), the pings riding in the client's own script
(an iperf3 client's beside its sampler, ``sampler.Ride``; a transfer's timed copy): no round
trip of their own."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from nasplan.measure.sampler import Ride
from nasplan.measure.tools import loaded_ping


@dataclass
class UnderLoad:
    """One repetition's pings: ``ride`` adds them to the client script's riding texts, ``read``
    takes their sections from its output, ``found`` then has the repetition's latency keys
    (loaded_ping.KEYS; empty until read)."""

    ping_path: str
    address: str
    token: str
    deadline_s: int
    found: dict[str, Any] = field(default_factory=dict)

    def ride(self, base: Ride) -> Ride:
        """``base`` (the sampler's texts) with the pings: idle ones before the client, loaded
        ones through it, stopped and printed after it whatever its exit status."""
        before, after = loaded_ping.ride_texts(
            self.ping_path, self.address, self.token, self.deadline_s
        )
        return Ride(base.before + before, base.said + after, base.stop)

    def around(self, script: str) -> str:
        """``script`` (POSIX sh ending in its own exit) in a subshell between the pings; its
        exit status kept."""
        before, after = loaded_ping.ride_texts(
            self.ping_path, self.address, self.token, self.deadline_s
        )
        return f'{before}(\n{script}\n)\nnasplan_rc=$?\n{after}exit "$nasplan_rc"\n'

    def read(self, stdout: str) -> None:
        """The client script's whole output."""
        self.found = loaded_ping.fields(stdout)
