"""The next iperf3 test's server started while this one's last client measures
(``nasplan.measure.ahead``): what the next client would otherwise wait for, ~15-20 ms a test
on the lab, begun ``LEAD_S`` before this measurement ends.

Only where nothing of it runs on a host that measures: the next test is an iperf3 test of one
client whose server is neither end of this one; the client's host is not touched ahead. The
next test's server host starts its sampler with it (it rides in the server's start, as
always): ``LEAD_S`` more of it, under one sample (``SAMPLE_INTERVAL_S``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nasplan.measure.kinds.iperf3.repetition import Started

if TYPE_CHECKING:
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import RunContext
    from nasplan.measure.sampling import Sampling

# how long before the current client's end the next server starts: its start takes 10-50 ms
# on the lab's loaded cores, one SSH round trip on a host of its own
LEAD_S = 0.2


@dataclass(frozen=True)
class Opening:
    """The next test's start made ahead: its run token, first repetition, samplers (the
    server host's started in the server's script) and that server."""

    test_id: str
    token: str
    index: int
    sampled: Sampling
    started: Started

    def abandon(self) -> None:
        """No test took it: the server stopped, the samplers too."""
        try:
            self.started.stop()
        finally:
            self.sampled.close()


def offer_next(
    ctx: RunContext,
    test: PlanTest,
    seconds: float,
    make: Callable[[PlanTest], Opening | None],
) -> None:
    """While ``test``'s last client measures for about ``seconds``: the next test's opening
    (``make``) scheduled ``LEAD_S`` before it ends, when that test is known and of this kind,
    one client, its server none of ``test``'s hosts."""
    upcoming = ctx.hooks.ahead.next_test()
    if upcoming is None or upcoming.kind != test.kind or len(upcoming.clients) > 1:
        return
    if upcoming.server in test.hosts:
        return
    ctx.settle((upcoming.server,))  # an earlier test's teardown still on its host: over first
    delay_s = max(seconds - LEAD_S, 0.0)
    ctx.hooks.ahead.schedule(upcoming.id, ctx.tasks, delay_s, lambda: make(upcoming))


def taken(ctx: RunContext, test: PlanTest) -> Opening | None:
    """``test``'s opening made ahead, when one was and fits its first repetition."""
    opening = ctx.hooks.ahead.take(test.id)
    if not isinstance(opening, Opening):
        return None
    if opening.index != test.indices[0]:
        opening.abandon()
        return None
    return opening
