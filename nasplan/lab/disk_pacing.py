"""How long a shaped lab disk takes for each read and write (``nasplan.lab.shaped_disk``).

A disk reads at one rate and writes at another, each direction a clock of its own: a request
of N bytes moves that direction's clock on by N / rate, and the disk answers when the clock
says so (after idling, a burst of ``BURSTINESS_S`` passes at once, as nbdkit's rate filter
lets through). A write cache (an SSD's SLC cache) takes the first ``cache_bytes`` written at
``cache_rate``; once full, writes go at the disk's write rate; while no writes come the cache
empties at the write rate (the drive folds it into its slower cells).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

# a burst of this many seconds' worth passes at once after idling (as the rate filter's
# burstiness of the plain lab disks): short, so a small file is measured at the rate too
BURSTINESS_S = 0.05


@dataclass(frozen=True)
class DiskShape:
    """Rates in bytes per second; a write cache of ``cache_bytes`` (0: none) at ``cache_rate``."""

    read_rate: int
    write_rate: int
    cache_bytes: int = 0
    cache_rate: int = 0


class Pacer:
    """The clocks of one disk: ``read(n)`` and ``write(n)`` return when the disk would have
    moved ``n`` bytes; ``clock``/``sleep`` are the time's source (a test's own)."""

    def __init__(
        self,
        shape: DiskShape,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.shape = shape
        self._clock, self._sleep = clock, sleep
        self._read_at = self._write_at = clock()
        self.cache_used = 0.0

    def read(self, length: int) -> None:
        self._read_at = self._wait(self._read_at, length / self.shape.read_rate)

    def write(self, length: int) -> None:
        self._write_at = self._wait(self._write_at, self.write_seconds(length))

    def write_seconds(self, length: int) -> float:
        """How long ``length`` bytes take to write now: what the cache still takes at its rate,
        the rest at the write rate; the cache first emptied for the time the disk idled."""
        shape = self.shape
        if not shape.cache_bytes:
            return length / shape.write_rate
        # idle: longer than a burst without writes (not the moments between one write's end
        # and the next one's arrival)
        idle = max(0.0, self._clock() - self._write_at - BURSTINESS_S)
        self.cache_used = max(0.0, self.cache_used - idle * shape.write_rate)
        fast = min(float(length), shape.cache_bytes - self.cache_used)
        self.cache_used += fast
        return fast / shape.cache_rate + (length - fast) / shape.write_rate

    def _wait(self, ready_at: float, seconds: float) -> float:
        """Move a direction's clock on by ``seconds`` (from no earlier than a burst ago) and
        wait until then; the clock's new time."""
        now = self._clock()
        ready_at = max(ready_at, now - BURSTINESS_S) + seconds
        if ready_at > now:
            self._sleep(ready_at - now)
        return ready_at
