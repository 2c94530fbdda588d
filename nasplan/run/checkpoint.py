"""A run's run.json while it runs: the record (``RunRecord``), its saves (``RunSaver``), the
hosts' part (``HostsPart``), and the garbage collector's policy for what lives the whole run.

run.json is saved from the start and after every repetition, so a run killed, cut off or out of
disk keeps what it measured; the saves during the run are atomic but not synced (the raw outputs
and run.json are put on disk at the end: ``output.sync_files``).
"""

from __future__ import annotations

import contextlib
import gc
import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nasplan.errors import RunDirError
from nasplan.hosts.session import HostSession, RecordedHost
from nasplan.output import HeldRunDir, Redactor, hold_space, let_go, redactor_of, write_text
from nasplan.results import RUN_FILE, pretty

# where a run holds disk space for its last save of run.json (``RunSaver.save``), and how much
# at least
RESERVE_FILE = ".run.json.reserve"
RESERVE_MIN_BYTES = 1 << 20


def _nested(text: str) -> str:
    """A value's indent-2 text one level deeper (JSON strings never hold a raw newline)."""
    return text.replace("\n", "\n  ")


def _joined(opening: str, items: list[str], closing: str) -> str:
    """``{...}`` or ``[...]`` around already nested items, as json.dumps(indent=2) writes it."""
    if not items:
        return opening + closing
    return f"{opening}\n  " + ",\n  ".join(items) + f"\n{closing}"


class RunSaver:
    """Saves one run's run.json again and again as the run goes on (``save_run``'s bytes).

    The text of a part that did not change since the previous save (the hosts with their facts,
    each finished test) is reused, not rebuilt: a run saves after every repetition, and most of
    run.json (the hosts' facts) never changes during it. A part counts as unchanged when its
    compact JSON is; ``tests/unit/run/test_checkpoint.py`` holds the text to ``dump_run``'s at
    every step of a run.
    """

    def __init__(self, run_dir: Path, *, frozen: Iterable[str] = ()) -> None:
        self.path = run_dir / RUN_FILE
        # disk space held for the run's last save (see ``save``), and how much
        self.reserve = run_dir / RESERVE_FILE
        self._reserved_bytes = 0
        # what the last save that reached the disk held (``lacking``)
        self.saved: dict[str, Any] | None = None
        # the run directory's own lock, taken before the first save (``close`` lets it go)
        self._held: HeldRunDir | None = None
        self._secrets: tuple[str, ...] = ()
        # compact JSON of a part -> its text in run.json (cleaned, indent 2, at the top level)
        self._texts: dict[str, str] = {}
        # top-level keys whose value, when the very same object comes again, has not changed
        # (the caller never changes it once given: apply's HostsPart): name -> (value, text)
        self._frozen = frozenset(frozen)
        self._frozen_texts: dict[str, tuple[Any, str]] = {}

    def save(
        self, run: dict[str, Any], secrets: Iterable[str] = (), *, durable: bool = True
    ) -> Path:
        """Write ``run`` to run.json atomically (secrets masked, as ``save_run``); its path.
        ``durable``: as for ``write_text``; a durable save is the run's last (a checkpoint
        during the run is not).

        Each checkpoint holds disk space in a file of its own beside run.json (twice its size,
        1 MiB at least): a disk that fills up during the run stops it, and its last save, which
        says how the hosts were put back and when the run ended, is then written into the
        space let go of. Raises RunDirError when even that does not fit (``lacking`` says
        what run.json then misses). The first save takes the run directory's own lock
        (RunDirBusy when another nasplan holds it: nothing written)."""
        if self._held is None:  # nothing is written into a directory another nasplan holds
            self._held = HeldRunDir(self.path.parent)
        masked = tuple(s for s in secrets if s)
        if masked != self._secrets:  # a secret learned during the run: every text again
            self._secrets, self._texts, self._frozen_texts = masked, {}, {}
        redactor = redactor_of(masked)
        text = self.text_of(run, redactor)
        if not durable:
            wanted = max(RESERVE_MIN_BYTES, 2 * len(text))
            if wanted > self._reserved_bytes and hold_space(self.reserve, wanted):
                self._reserved_bytes = wanted
            path = write_text(self.path, text, redactor, durable=False)
            self.saved = run
            return path
        try:
            path = write_text(self.path, text, redactor, in_place_when_full=True)
        except RunDirError:
            if not self.reserve.exists():
                raise
            let_go(self.reserve)  # the space held for this very save
            path = write_text(self.path, text, redactor, in_place_when_full=True)
        let_go(self.reserve)
        self.saved = run
        return path

    def close(self) -> None:
        """Let go of the run directory's lock (the run's files are written)."""
        if self._held is not None:
            self._held.release()
            self._held = None

    def lacking(self, run: dict[str, Any]) -> str:
        """What run.json on disk lacks of ``run`` (the save that did not fit), in a user's
        words: ``finished_at, status failed (it says interrupted), ...``."""
        saved = self.saved
        if saved is None:
            return "everything: it was never written"
        missing = []
        for key in ("finished_at", "status"):
            if run.get(key) != saved.get(key):
                missing.append(f"{key} {run.get(key)} (it says {saved.get(key)})")
        now, then = _network_states(run), _network_states(saved)
        if now != then:
            said = ", ".join(f"{host} {state}" for host, state in now.items())
            before = ", ".join(sorted(set(then.values()))) or "nothing"
            missing.append(f"the network put back: {said} (it says {before})")
        reps, reps_then = _repetitions(run), _repetitions(saved)
        if reps != reps_then:
            missing.append(f"{reps - reps_then} repetitions of the {reps} the run ended with")
        return "; ".join(missing) or "nothing"

    def text_of(self, run: dict[str, Any], redactor: Redactor) -> str:
        """``dump_run(run)``, from the texts of unchanged parts where it can."""
        if not all(isinstance(key, str) for key in run):
            return pretty(run, redactor) + "\n"
        kept: dict[str, str] = {}

        def text(value: Any) -> str:
            try:
                key = json.dumps(value, ensure_ascii=False, default=str)
            except (TypeError, ValueError):  # not JSON at all: _pretty says why, as save_run
                return pretty(value, redactor)
            found = kept.get(key) or self._texts.get(key) or pretty(value, redactor)
            kept[key] = found
            return found

        fields = []
        for name, value in run.items():
            seen = self._frozen_texts.get(name)
            if seen is not None and seen[0] is value:
                body = seen[1]
            elif isinstance(value, (list, tuple)):  # tests: each finished one stays as it was
                body = _joined("[", [_nested(text(item)) for item in value], "]")
            else:
                body = text(value)
            if name in self._frozen:
                self._frozen_texts[name] = (value, body)
            key = json.dumps(redactor.text(name) if redactor.secrets else name, ensure_ascii=False)
            fields.append(f"{key}: {_nested(body)}")
        self._texts = kept
        return _joined("{", fields, "}") + "\n"


def _network_states(run: dict[str, Any]) -> dict[str, str]:
    hosts = (run.get("network") or {}).get("hosts") or {}
    return {name: str(host.get("status")) for name, host in sorted(hosts.items())}


def _repetitions(run: dict[str, Any]) -> int:
    return sum(len(test.get("repetitions") or []) for test in run.get("tests") or [])


class HostsPart:
    """run.json's ``hosts`` as it is now: built again only when a session changed in what it
    records (``HostSession.recorded_state``), else the very same dict, never changed once
    handed out, whose text ``RunSaver(frozen=("hosts",))`` then reuses."""

    def __init__(self, sessions: Mapping[str, HostSession]) -> None:
        self._sessions = sessions
        self._states: dict[str, RecordedHost] = {}
        self._part: dict[str, Any] = {}

    def now(self) -> dict[str, Any]:
        """The part, rebuilt if anything it shows changed since the last call."""
        states = {name: s.recorded_state() for name, s in sorted(self._sessions.items())}
        same = list(states) == list(self._states) and all(
            state.same_as(self._states.get(name)) for name, state in states.items()
        )
        if not same:
            self._part = {name: state.to_dict() for name, state in states.items()}
            self._states = states
        return self._part


@dataclass(frozen=True, eq=False)
class RunRecord:
    """One run's run.json as it grows, from its parts: the fixed header (``run``: what the run
    sets as it goes, its status and end), the hosts, the tests (``tests()``), the warnings of
    every source (``warnings()``), the network part (``network()``: None for a plan
    without network changes) and the ``[test id, repetition]`` order the parts ran in
    (``sequence()``: the tests phase's value; None: the header's); ``checkpoint`` saves it."""

    run: dict[str, Any]
    hosts: HostsPart
    secrets: Callable[[], list[str]]
    tests: Callable[[], list[dict[str, Any]]]
    warnings: Callable[[list[dict[str, Any]]], list[str]]
    network: Callable[[], dict[str, Any] | None]
    saver: RunSaver
    sequence: Callable[[], Sequence[Sequence[Any]]] | None = None

    def snapshot(self) -> dict[str, Any]:
        """run.json now."""
        current = dict(self.run)
        if self.sequence is not None:
            current["sequence"] = [list(pair) for pair in self.sequence()]
        current["tests"] = tests = self.tests()
        current["hosts"] = self.hosts.now()
        current["warnings"] = self.warnings(tests)
        network = self.network()
        if network is not None:
            current["network"] = network
        return current

    def checkpoint(self) -> None:
        """Save run.json now (atomic; on disk by the run's end)."""
        self.saver.save(self.snapshot(), self.secrets(), durable=False)


@contextlib.contextmanager
def long_lived_objects_frozen() -> Iterator[None]:
    """Leave what exists now (modules, plan, sessions, facts: all alive until the run ends) out
    of the cyclic garbage collector's passes while the run measures, so a full pass does not
    land between two measurements; collectable again afterwards (apply used as a library)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
