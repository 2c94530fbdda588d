"""The one contract of a test kind: everything nasplan knows of ``kind: NAME`` in one object.

``Kind`` is the plan side (typed settings, the tools it needs, its line for ``apply --check``
and what ``--check`` reads on its hosts, its estimate, how it runs) on top of ``Readout``, the
record side: how its run.json record reads to the console, the results table and the headline,
charts, the Diagnosis and ``compare``, and what its numbers warn of. The rest of nasplan asks a
kind (``nasplan.measure.kinds``) and never branches on its name; a record of a kind this
nasplan does not know reads through ``Readout``'s defaults.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from nasplan.analysis import MIN_TRUSTED_S, durations_under, size_text, size_to_use
from nasplan.measure import series as shapes
from nasplan.measure.capacity import Capacity, Evidence, judged
from nasplan.measure.estimate import Estimate
from nasplan.measure.series import TCP_MAXIMUM, Series
from nasplan.quantities import BITS, Quantity
from nasplan.units import format_metric

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import Plan, PlanTest
    from nasplan.measure.ahead import Ahead
    from nasplan.progress import Progress
    from nasplan.tasks import Tasks

S = TypeVar("S")
Needs = dict[str, tuple[str, ...]]
Record = Mapping[str, Any]
DASH = "–"
# what diagnose/ lends a kind's own causes: (run, test, host) -> "one core of nas at 100 % ..."
# when one core of the host was at its limit during the test while the machine was not, or None
OneCore = Callable[[Record, Record, str], "str | None"]


class RunHooks(Protocol):
    """What the run lends a kind while its test runs (``nasplan.run.kind_hooks.KindHooks``)."""

    # the next test's opening, made while this one measures (``nasplan.measure.ahead``)
    ahead: Ahead

    def save_raw(self, relative_path: str, text: str) -> str:
        """Write a raw tool output under ``raw/``, the run's secrets masked; its run-relative
        path."""
        ...

    def mask(self, secret: str) -> None:
        """Mask ``secret`` in everything the run writes from now on."""
        ...

    def checkpoint(self, record: Mapping[str, Any], *, last: bool = False) -> None:
        """The test so far (its finished repetitions): the run keeps a copy of it, and saves
        run.json unless ``last`` (its last repetition, saved with the finished record)."""
        ...

    def defer(
        self, work: Callable[[], Mapping[str, Any]], hosts: Collection[str] | None = None
    ) -> None:
        """A finished test's clean-up on its hosts, run beside the next test's start (never its
        measurement); what ``work`` returns completes the test's record (its ``resources``).
        ``hosts``: the hosts it works on (None: any of the test's); a host it leaves alone is
        released without waiting for it."""
        ...

    def settle(self, hosts: Collection[str] | None = None) -> None:
        """Wait for a deferred clean-up (before a measurement); ``hosts``: the measurement's,
        when a clean-up on other hosts may go on beside it."""
        ...


# host -> address -> how that host routes to it (``nasplan.measure.route.parse``)
Routes = Mapping[str, Mapping[str, Mapping[str, Any]]]


@dataclass
class RunContext:
    """Passed explicitly to every test kind: the plan, its hosts, the console, the run's
    ``tasks`` (background work: ``nasplan.tasks``) and ``hooks`` (files, checkpoints, deferred
    clean-up). A kind's warnings go into its record (``record["warnings"]``)."""

    plan: Plan
    sessions: Mapping[str, HostSession]
    progress: Progress
    tasks: Tasks
    hooks: RunHooks
    # how each host routes to the others (``Routes``), asked in the facts' round trip and after
    # the network phase (apply): a read-only value each phase returns and the next is given;
    # empty when nothing was asked
    routes: Routes = field(default_factory=lambda: MappingProxyType({}))

    def save_raw(self, relative_path: str, text: str) -> str:
        """A raw tool output saved with the secrets masked (``RunHooks.save_raw``)."""
        return self.hooks.save_raw(relative_path, text)

    def mask(self, secret: str) -> None:
        """Mask ``secret`` (a password read from the environment) from now on."""
        self.hooks.mask(secret)

    def checkpoint(self, record: Mapping[str, Any], *, last: bool = False) -> None:
        """The test so far, kept by the run (``RunHooks.checkpoint``)."""
        self.hooks.checkpoint(record, last=last)

    def defer(
        self, work: Callable[[], Mapping[str, Any]], hosts: Collection[str] | None = None
    ) -> None:
        """Clean-up after the measurement (``RunHooks.defer``)."""
        self.hooks.defer(work, hosts)

    def settle(self, hosts: Collection[str] | None = None) -> None:
        """Wait for the previous clean-up (``RunHooks.settle``); ``hosts``: only one working
        on these (the next measurement's)."""
        self.hooks.settle(hosts)


@dataclass(frozen=True)
class Caveat:
    """What a record's own numbers say a reader must be warned of (a UDP test's loss): a mark
    for its results row and the console (``⚠ loss 66.2 %``), and the sentence run.json's and the
    report's warnings give, with the numbers it judged."""

    mark: str
    text: str


@dataclass(frozen=True)
class Probe:
    """What ``apply --check`` reads on a host before a run, so that it fails where the run
    would: ``script`` (POSIX sh, as the login user) never writes anything; exit 0: found,
    exit PROBE_CANNOT_TELL: it could not look (a tool not installed yet), any other: ``missing``
    is the problem (the script's last line of output added). ``stdin``: a secret the look needs
    (an SMB password), never in its argv."""

    host: str
    what: str  # what it looks for: ``path /volume1/test (writable)``
    script: str
    missing: str  # ``no writable directory /volume1/test on nas``
    stdin: str | None = None


PROBE_CANNOT_TELL = 3


@dataclass(frozen=True)
class Numbers:
    """What a section adds to the report's *How the numbers were computed*: bullets before
    *Units* (what a rate of its tests is), words after the median's, bullets after the TCP
    maximum's, and the spreads its tests call wide."""

    rates: tuple[str, ...] = ()
    median: str = ""
    maxima: tuple[str, ...] = ()
    spread_thresholds: tuple[float, ...] = ()


def no_numbers(tests: Sequence[Record]) -> Numbers:
    """A section that adds nothing to *How the numbers were computed*."""
    return Numbers()


def as_run_json(tests: Sequence[Record]) -> dict[str, Any]:
    """A view that hands the template ``tests``, the section's tests as run.json has them."""
    return {"tests": list(tests)}


@dataclass(frozen=True)
class Section:
    """A section of report.md that details a kind's tests, asked of the kind (``Readout.section``):
    its template (``template`` in the package ``package``: the kind's folder) and its view, which
    turns the section's tests into what the template shows (by default, ``tests`` as they are:
    ``as_run_json``). The report hands the view each test
    as run.json has it, with its ``heading`` and its results rows (``results``) beside; kinds
    that share a section (iSCSI beside the file transfers) give the same one."""

    package: str
    view: Callable[[Sequence[Record]], Mapping[str, Any]] = as_run_json
    numbers: Callable[[Sequence[Record]], Numbers] = no_numbers
    template: str = "section.md.j2"

    @property
    def source(self) -> str:
        """Its template's name for the report's loader: ``PACKAGE:FILE``."""
        return f"{self.package}:{self.template}"


class Readout:
    """How a kind's run.json record reads, from the record alone (old runs included).

    The defaults fit a kind with one series (its summary's metric, no direction); a kind says
    what differs. ``name`` is the kind's plan name; a record of an unknown kind (a run.json of a
    later nasplan) reads as ``Readout(its name)``.
    """

    name: str = ""
    # what the run measured, in the report's opening sentence ("file transfers")
    phrase: str = ""
    # the headline's groups of its results in the order they are told ("File transfers")
    groups: tuple[str, ...] = ()
    # a lower value is the better one (round-trip times)
    lower_is_better: bool = False
    # the per-repetition value it reports in the results table, the console and the pivot
    metric: str = "bits_per_second"
    # the quantity its per-second timeline is drawn in (bit/s; byte rates in MiB/s)
    timeline_quantity: Quantity = BITS
    # its repetitions each carry a direction (``write``/``read``), its record ``directions``
    directed: bool = False
    # its rate crossed the network path: the path's TCP maximum is its limit
    path_rate: bool = False
    # what a repetition under analysis.MIN_TRUSTED_S mostly measures besides its data (None:
    # a kind whose repetitions are not timed that way, e.g. pings)
    short_start: str | None = None
    # a short repetition's time includes its set-up, so a ratio of two short ones compares
    # set-ups as much as rates (False: the tool times its data phase alone)
    short_skews_ratio: bool = True
    # workload parameters ``compare`` compares across as a dimension of their own
    across_params: frozenset[str] = frozenset()
    # the report's section that details its tests (its folder's ``section.md.j2`` and view),
    # None for none: the results table and the headline tell them all the same
    section: Section | None = None
    # said once in its section when a test of the kind is there
    section_note: str = ""

    def __init__(self, name: str | None = None) -> None:
        if name is not None:
            self.name = name

    # --- series and what they are ---------------------------------------------------------

    def series(self, record: Record) -> list[Series]:
        """Each direction of the record as a Series, in the order the test ran them."""
        if self.directed:
            return shapes.directed(record, network=self.path_rate)
        return [shapes.single(record)]

    def named(self, record: Record, found: Sequence[Series]) -> bool:
        """Whether its rows are named by their direction (``smb (write)``)."""
        return self.directed or len(found) > 1

    def group(self, record: Record) -> str:
        """The headline group of the record: ``File transfers``; its name when it has none."""
        return self.groups[0] if self.groups else self.name

    def phrase_of(self, record: Record) -> str:
        """What the record measured, for the report's opening sentence."""
        return self.phrase or self.name

    def measured(self, record: Record, series: Series | None) -> str:
        """The results table's *Measured* cell: ``SMB write``, ``iperf3 TCP, 1 stream``."""
        return self.name

    def flow(self, record: Record, direction: str | None) -> str:
        """Where the data went, in its direction: ``ws → nas.lan (198.18.0.10)``; a reverse
        iperf3 test or a read ``nas.lan (198.18.0.10) → ws``; clients at once ``pc + mac →
        nas.lan``."""
        params, path = record.get("params") or {}, record.get("path") or {}
        clients = params.get("clients")
        client = " + ".join(map(str, clients)) if clients else params.get("client")
        target = target_text(params, path)
        if not client:
            return target
        if direction == "reverse" or shapes.data_direction(str(direction)) == "read":
            return f"{target} → {client}"
        return f"{client} → {target}"

    def also(self, record: Record, series: Series) -> str:
        """What else a reader wants beside the median, in the kind's own terms."""
        verdict = ((record.get("bottleneck") or {}).get(series.direction) or {}).get("verdict")
        return str(verdict) if verdict else DASH

    def tells_also(self, record: Record) -> bool:
        """Whether the headline names its ``also`` beside the best and the worst."""
        return False

    def ok_repetitions(self, record: Record, direction: str | None) -> list[Mapping[str, Any]]:
        """The ok repetitions of ``direction`` (every ok one for a kind without directions)."""
        reps = [r for r in record.get("repetitions") or [] if r.get("status") == "ok"]
        if self.directed:
            reps = [r for r in reps if r.get("direction") == direction]
        return reps

    def directions_asked(self, record: Record) -> list[str | None]:
        """The directions a test was to run (a record with no results: its columns)."""
        asked = (record.get("params") or {}).get("direction")
        if not self.directed or not asked:
            return [None]
        return list(shapes.directions_asked(str(asked)))

    # --- the console ----------------------------------------------------------------------

    def repetition_text(self, rep: Mapping[str, Any]) -> str | None:
        """A repetition's value in the kind's unit (the console's ``last``), None without one."""
        value = rep.get(self.metric)
        if rep.get("status") != "ok" or not isinstance(value, (int, float)):
            return None
        return format_metric(value, self.metric)

    def result_text(self, record: Record) -> str:
        """A finished test's medians for the console, each direction in its unit:
        ``write median 281.2 MiB/s, read median 374.5 MiB/s``; ``median 9.41 Gbit/s``."""
        found = self.series(record)
        parts = []
        for one in found:
            median = one.summary.get("median")
            if median is None:
                continue
            value = format_metric(median, one.metric)
            named = self.named(record, found) and one.direction
            parts.append(f"{one.direction} median {value}" if named else f"median {value}")
        return ", ".join(parts)

    # --- short repetitions ----------------------------------------------------------------

    def short_durations(self, record: Record, direction: str | None = None) -> list[float]:
        """``duration_s`` of each ok repetition under MIN_TRUSTED_S (of ``direction`` when
        given), in order; [] for a kind whose repetitions are not timed that way."""
        if self.short_start is None:
            return []
        return durations_under(record.get("repetitions") or [], direction, MIN_TRUSTED_S)

    def short_advice(self, record: Record, direction: str | None) -> str:
        """What to change so a repetition takes MIN_TRUSTED_S or more: a ``size`` of at least
        MIN_TRUSTED_S at its median rate, or the size its cache warning asks for when more (the
        same size both say)."""
        summary = (record.get("directions") or {}).get(direction or "") or record.get("summary")
        median = (summary or {}).get("median")
        cached = (record.get("cache_warning") or {}).get("suggested_bytes") or 0
        if isinstance(median, (int, float)) and median > 0:
            needed = size_to_use(max(median * MIN_TRUSTED_S, cached))
            why = f"{MIN_TRUSTED_S:g} s at its median rate"
            if cached >= median * MIN_TRUSTED_S:
                why = f"twice the RAM that caches it, as its cache warning says; over {why}"
            return f"use a `size` of at least {size_text(needed)} ({why})"
        return f"use a `size` that takes {MIN_TRUSTED_S:g} s or more"

    # --- charts ---------------------------------------------------------------------------

    def timeline_limit(self, record: Record) -> tuple[float, str] | None:
        """The flat line its timeline chart draws and its name (its path's TCP maximum), None
        for none."""
        if not self.path_rate:
            return None
        value = (record.get("path") or {}).get("theoretical_bits_per_second")
        return (float(value), TCP_MAXIMUM) if isinstance(value, (int, float)) else None

    # --- warnings -------------------------------------------------------------------------

    def caveats(self, record: Record) -> list[Caveat]:
        """What the record's own numbers say a reader must be warned of, judged from the record
        alone (run.json's warnings, the results row, the console): none by default."""
        return []

    # --- the report's sections, compare and the Diagnosis -----------------------------------

    def detail_text(self, record: Record) -> str:
        """What its section's first line adds after the path (iSCSI: the LUN, the requests)."""
        return ""

    def storage_path(self, record: Record) -> tuple[str, str] | None:
        """``(host, path)`` of the storage it measured on a host of its own, else None."""
        return None

    def core_advice(self, record: Record, host: str, load: Mapping[str, Any]) -> str:
        """Why one core of ``host`` was at its limit during the test, for the Diagnosis."""
        return "a single-threaded daemon or client (smbd serves a connection with one process)"

    def streams_comparable(self, record: Record) -> bool:
        """Whether 1-vs-N-streams runs of the record's path compare (per-stream diagnosis)."""
        return False

    def causes(self, run: Record, one_core: OneCore) -> list[dict[str, Any]]:
        """What only this kind can tell of where the speed drops in ``run`` (run.json alone):
        findings (``nasplan.measure.findings``) that diagnose/ asks of every kind in the run,
        lending it ``one_core``; none by default."""
        return []

    # --- what limited a transfer (nasplan.measure.verdicts) ---------------------------------

    def capacities(self, record: Record) -> list[Capacity]:
        """What the record shows its hosts can carry, for other tests' verdicts."""
        return []

    def copy_label(self, record: Record) -> str | None:
        """What a copy of the record moved with (``SMB``, ``iSCSI``): its directions are judged
        against the run's capacities; None: the record is no copy between a client and the NAS."""
        return None

    def annotated(self, record: Record, evidence: Evidence) -> dict[str, Any]:
        """The record with what the run's capacities say of it (a copy's verdicts), else as
        it is."""
        label = self.copy_label(record)
        if label is None:
            return dict(record)
        return judged(record, label, evidence)


class Kind(Readout, abc.ABC, Generic[S]):
    """A plan kind (``kind: iperf3``): its typed settings, parsed once, and what it does; with
    ``Readout``, how its records read.

    ``settings(test)``: the plan test's own keys -> a frozen value with every default stated
    once; ``needs``: host name -> tools that host must have (installed by its platform);
    ``describe``: one line for ``apply --check``; ``probes``: what ``--check`` reads on its
    hosts; ``estimate``: how long the test takes (and what that assumed); ``run``: the run.json
    test record (never raises). ``settles_itself``: ``run`` calls ``RunContext.settle`` just
    before it measures (the previous test's teardown overlaps its start); apply settles before
    the other kinds' tests begin. ``summarize``: the record's summary, efficiency, status and
    error (and what else the kind derives from its repetitions) computed again, when a run
    merges the parts of a test it ran a few repetitions at a time (``nasplan.measure.merge``).
    """

    settles_itself: ClassVar[bool] = False

    @abc.abstractmethod
    def settings(self, test: PlanTest) -> S:
        """The plan test's keys as the kind's typed settings."""

    def needs(self, test: PlanTest, s: S) -> Needs:
        """Host -> the tools its platform must provide (none: every system has them)."""
        return {}

    @abc.abstractmethod
    def describe(self, test: PlanTest, s: S) -> str:
        """One line for ``apply --check``."""

    @abc.abstractmethod
    def estimate(self, test: PlanTest, s: S, plan: Plan) -> Estimate:
        """How long the whole test takes (every repetition), and what that assumed."""

    def probes(
        self, test: PlanTest, s: S, plan: Plan, sessions: Mapping[str, HostSession]
    ) -> list[Probe]:
        """What ``--check`` reads on the test's hosts (a directory, a share, an export), each
        host connected in ``sessions``: none by default."""
        return []

    @abc.abstractmethod
    def run(self, test: PlanTest, s: S, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of ``test`` (from ``first_repetition``): its run.json record."""

    @abc.abstractmethod
    def summarize(self, record: dict[str, Any], s: S) -> dict[str, Any]:
        """``record`` with its summary, status and error computed again from its
        repetitions."""

    def bind(self, test: PlanTest) -> BoundTest:
        """This kind with ``test``'s settings parsed: what apply and ``--check`` call."""
        settings = self.settings(test)
        return BoundTest(
            test=test,
            kind=self,
            needs=self.needs(test, settings),
            description=self.describe(test, settings),
            run_part=lambda part, ctx: self.run(part, settings, ctx),
            summarize=lambda record: self.summarize(record, settings),
            estimate=lambda plan: self.estimate(test, settings, plan),
            probes=lambda plan, sessions: self.probes(test, settings, plan, sessions),
            settles_itself=self.settles_itself,
        )


@dataclass(frozen=True)
class BoundTest:
    """One plan test with its kind's settings parsed: its needs, its line, how to run it (the
    whole test, or a part of it: ``part`` a copy of ``test`` with another ``first_repetition``
    and ``repetitions``), its summary again over merged parts, its estimate."""

    test: PlanTest
    kind: Readout
    needs: Needs
    description: str
    run_part: Callable[[PlanTest, RunContext], dict[str, Any]]
    summarize: Callable[[dict[str, Any]], dict[str, Any]]
    estimate: Callable[[Plan], Estimate]
    probes: Callable[[Plan, Mapping[str, HostSession]], list[Probe]] = lambda plan, sessions: []
    settles_itself: bool = False

    def run(self, ctx: RunContext) -> dict[str, Any]:
        """The whole test's record."""
        return self.run_part(self.test, ctx)


def target_text(params: Mapping[str, Any], path: Mapping[str, Any]) -> str:
    """``nas.lan (198.18.0.10)``: the target a record's client sent to, with its address."""
    target, address = params.get("target"), params.get("address")
    if not target or target == "?":
        nic, server = path.get("server_interface"), params.get("server")
        target = f"{server} {nic}" if server and nic else server
    text = str(target or address or DASH)
    return f"{text} ({address})" if address and address != target else text
