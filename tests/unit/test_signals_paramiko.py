"""A Ctrl-C that arrives while the main thread runs paramiko's code is raised once it is out of
it: raised inside, between one of paramiko's ``lock.acquire()`` and its ``try``, it left the
lock held and the run hung on its way out (the sampler's stop and a lease renewal waiting for
the lock, the run waiting for them)."""

from __future__ import annotations

import signal
import textwrap
import time
from collections.abc import Callable
from typing import Any

import pytest

from nasplan.run.signals import AGAIN_S, Terminated, as_interrupts, held_back

# a function "of paramiko": the signal arrives while it runs Python code (a lock taken)
_PARAMIKO = textwrap.dedent(
    """
    import signal, time

    def send(signum, busy_s):
        signal.raise_signal(signum)
        end = time.monotonic() + busy_s
        while time.monotonic() < end:  # bytecode after bytecode: the handler runs in here
            pass
        return "sent"
    """
)


def paramiko_send() -> Callable[[int, float], str]:
    namespace: dict[str, Any] = {"__name__": "paramiko.transport"}
    exec(_PARAMIKO, namespace)
    send: Callable[[int, float], str] = namespace["send"]
    return send


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_ctrl_c_inside_paramiko_is_raised_once_out_of_it() -> None:
    send = paramiko_send()
    finished = []
    before = signal.getsignal(signal.SIGALRM)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt), as_interrupts():
        finished.append(send(signal.SIGINT, 3 * AGAIN_S))  # deferred, twice
        spin(5.0)  # nasplan's code: raised here, within AGAIN_S
    assert finished == ["sent"]
    assert time.monotonic() - started < 1.0
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_sigterm_inside_paramiko_is_raised_as_terminated_once_out_of_it() -> None:
    send = paramiko_send()
    finished = []
    with pytest.raises(Terminated) as raised, as_interrupts():
        finished.append(send(signal.SIGTERM, 0.0))
        spin(5.0)
    assert finished == ["sent"] and raised.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_signal_deferred_just_before_the_end_is_not_lost() -> None:
    send = paramiko_send()
    finished = []
    with pytest.raises(KeyboardInterrupt), as_interrupts():
        finished.append(send(signal.SIGINT, 0.0))  # the run ends before SIGALRM comes
    assert finished == ["sent"]
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_deferred_signal_that_comes_again_while_held_back_waits_for_its_end() -> None:
    send = paramiko_send()
    done = []
    with pytest.raises(KeyboardInterrupt), as_interrupts():
        send(signal.SIGINT, 0.0)
        with held_back():  # putting the hosts back: the signal waits for this to end
            spin(3 * AGAIN_S)
            done.append("restored")
        spin(5.0)
    assert done == ["restored"]
