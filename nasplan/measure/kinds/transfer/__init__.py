"""The ``transfer`` test kind: copy a generated incompressible file (or a set of many files) to
and from the NAS, timed, from one client or several at once.

One source per client (``head -c SIZE /dev/urandom``; a set: ``head | split`` per group); each
write repetition sends it to the NAS, each read repetition fetches the NAS's copy back (a cold
read after the NAS dropped its cache), the way its method copies (``nasplan.measure.methods``);
the repetitions themselves are ``nasplan.measure.kinds.transfer.runs``. The NAS's copies and the
clients' temp dirs are removed in ``finally``, also after a failure.
"""

from __future__ import annotations

import dataclasses
import secrets
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from nasplan import platforms
from nasplan.errors import CannotStart
from nasplan.hosts.lock import record_script
from nasplan.hosts.session import HostSession
from nasplan.input.matrix import file_stem
from nasplan.input.plan import Plan, PlanTest
from nasplan.measure import methods, sampling, space, timeline, together
from nasplan.measure.capacity import Evidence, judged_together
from nasplan.measure.estimate import Estimate, copy_rate, parts
from nasplan.measure.kind import DASH, Kind, Needs, Probe, Record, RunContext
from nasplan.measure.kinds.transfer import view
from nasplan.measure.kinds.transfer.runs import (
    Job,
    Side,
    check_client,
    cleanup,
    prepare_client,
    run_directions,
)
from nasplan.measure.kinds.transfer.settings import TransferSettings
from nasplan.measure.methods.base import Transfer
from nasplan.measure.pair import nas_path, open_pair, server_names, target_address, target_label
from nasplan.measure.record import finish, finish_directions, new_record, path_params, warn
from nasplan.measure.series import COLD_READ, Series
from nasplan.measure.tools import loaded_ping, transfer_sets
from nasplan.quantities import BYTES
from nasplan.remote.runner import Runner
from nasplan.units import counted, format_size, significant

# a repetition's own start and end besides its data: a connection, a login, the file opened
STEP_S = 0.05
# a part's own start and end besides its repetitions: the tool checked, the copies removed
PART_S = 0.1
# how fast the client makes its source file (``head -c`` from /dev/urandom)
SOURCE_BYTES_PER_SECOND = 300 * 2**20
# what a file of a set costs besides its bytes: a create or an open, a close
PER_FILE_S = 0.002
# a cold read's extra step: the NAS drops its cache
DROP_S = 0.5


def transfer_for(
    s: TransferSettings, test: PlanTest, server: HostSession, token: str, client: str = ""
) -> Transfer:
    """The settings made concrete for one run (``client``: one of several, whose copies get a
    name of their own); CannotStart naming what the method misses."""
    suffix = f"-{client}" if client else ""
    stem = f"nasplan-{file_stem(test.id)}-{token}{suffix}"
    name = f"{stem}.set" if s.groups else f"{stem}.bin"
    way = methods.method(s.method)
    if s.groups and not way.many_files:
        raise CannotStart(f"method {s.method} copies one file at a time: no files: set")
    base = Transfer(way, s.directions, s.size_bytes, name, test.indices, groups=s.groups)
    made = way.concrete(s, base, server)
    # where the copies land as the NAS sees them (a cold read drops its cache there)
    return made if made.server_path else dataclasses.replace(made, server_path=s.server_path)


def _side(test: PlanTest, s: TransferSettings, ctx: RunContext, token: str, client: str) -> Side:
    """One client's side, its commands checked; CannotStart or ValueError."""
    pair = open_pair(dataclasses.replace(test, client=client), ctx, FileTransfer().needs(test, s))
    several = client if len(test.clients) > 1 else ""
    xfer = transfer_for(s, test, pair.server, token, several)
    assert pair.server.runner is not None
    names = server_names(test, ctx, pair.address)
    xfer = dataclasses.replace(xfer, nas_key=pair.server.runner.host_key(), nas_names=names)
    assert pair.client.runner is not None
    check_client(xfer, pair.client.runner, pair.address)
    return Side(pair.client, xfer, pair.address, pair.path)


def _runners(job: Job) -> dict[str, Runner]:
    """Each POSIX host of the test by name (a Windows client's space is not read)."""
    found: dict[str, Runner] = {}
    for session in (job.server, *(side.client for side in job.sides)):
        runner = session.runner
        if runner is not None and platforms.of(runner).posix_shell:
            found[session.host.name] = runner
    return found


def space_needs(job: Job) -> list[space.Need]:
    """What the test writes where, each client's share (``needs_of``)."""
    server = job.server.host.name
    return [n for side in job.sides for n in needs_of(side.xfer, side.name, server, job.one_file)]


def needs_of(xfer: Transfer, client: str, server: str, one_file: bool) -> list[space.Need]:
    """What one client's copies write where: its source (a set and its one-file twin) and a
    read's copy in its temp dir; each copy on the NAS's volume (nfs-cp: one file per write) or
    through the client's mount."""
    twin = bool(xfer.groups and one_file)
    what = "its source files" if twin else "its source file"
    needs = [space.Need(client, space.CLIENT_TMP, xfer.size_bytes * (1 + twin), what)]
    if any(d != "write" for d in xfer.directions):
        needs.append(space.Need(client, space.CLIENT_TMP, xfer.size_bytes, "a read's copy"))
    copies = len(xfer.method.copies(xfer)) * xfer.size_bytes
    on_nas = space.directory_of(next(iter(xfer.method.nas_copies(xfer)), None))
    if on_nas:
        needs.append(space.Need(server, on_nas, copies, "the copies"))
    through = space.directory_of(next(iter(xfer.method.client_copies(xfer)), None))
    if through:
        needs.append(space.Need(client, through, copies, "the copies"))
    return needs


def full_disks(job: Job) -> list[str]:
    """After a failed write: each disk it filled, named (``nas: /srv/v1 is full (0 B free)``)
    before what the tool said of it (``write call failed with ""``, NT_STATUS_DISK_FULL)."""
    failed = any(
        r.get("status") == "failed" and r.get("direction") == "write"
        for r in job.record.get("repetitions") or []
    ) or any("could not place the file" in e for e in job.errors)
    if not failed:
        return []
    runners = _runners(job)
    said = []
    for need in space_needs(job):
        runner = runners.get(need.host)
        named = space.full_disk(runner, need.host, need.path) if runner is not None else None
        if named is not None and named not in said:
            said.append(named)
    return said


def wanted_copies(job: Job) -> dict[str, tuple[HostSession, list[str]]]:
    """Host name -> (its session, every copy the test may write there): on the NAS (its
    volume's path, as the NAS sees it) and through a client's mount."""
    wanted: dict[str, tuple[HostSession, list[str]]] = {}
    for side in job.sides:
        method = side.xfer.method
        for session, paths in (
            (job.server, method.nas_copies(side.xfer)),
            (side.client, method.client_copies(side.xfer)),
        ):
            if paths and "\n" not in "".join(paths):
                listed = wanted.setdefault(session.host.name, (session, []))[1]
                listed += [p for p in paths if p not in listed]
    return wanted


def record_copies(job: Job) -> bool:
    """Write-ahead: every copy the test may write (``wanted_copies``) in the record
    (``created``, checkpointed into run.json) and in that host's lock before the first is made,
    so that the run's end, ``nasplan restore``, ``--resume`` and the next run remove it. The
    same script compares that place's free space with what the test writes there first
    (``space.fit_lines``: no round trip of its own). A client's are recorded and checked by its
    set-up script (``_prepared``). False (the record's error) when the copies would not fit or
    a host's lock cannot hold them: nothing is made then."""
    wanted = wanted_copies(job)
    if not wanted:
        return True
    job.record["created"] = {name: paths for name, (_, paths) in sorted(wanted.items())}
    job.ctx.checkpoint(job.record)
    runners = _runners(job)
    clients = {side.name for side in job.sides}
    for name, (session, paths) in sorted(wanted.items()):
        fits = [n for n in space_needs(job) if n.host == name] if name in runners else []
        if name in clients or session.runner is None or not (session.locked or fits):
            continue
        check = space.fit_lines(fits)
        script = record_script(paths, before=check) if session.locked else check + "echo recorded\n"
        result = session.runner.run_script(script, timeout_s=30)
        short = space.said_short(fits, result.stdout)
        if short:
            job.record["error"] = "; ".join(short)
            return False
        if result.stdout.strip() != "recorded":
            said = (result.stderr.strip().splitlines() or [f"exit {result.exited}"])[-1]
            job.record["error"] = f"{name}: the test's copies not recorded, none made: {said}"
            return False
    return True


def _cache_facts(server: HostSession, xfer: Transfer) -> dict[str, Any]:
    """What the NAS's cache can hold beside what a repetition moves (``cache``)."""
    facts = server.facts
    return {
        "file_bytes": xfer.size_bytes,
        "server_memory_bytes": facts.memory_bytes if facts else None,
        "server_memory_limit_bytes": facts.memory_limit_bytes if facts else None,
        "server_cache_bytes": facts.cache_bytes if facts else None,
    }


def _under_load(reps: Sequence[Mapping[str, Any]], directions: Sequence[str]) -> Any:
    """Latency under load over the ok repetitions (loaded_ping.summary), each direction's in
    ``directions`` (a NAS that queues on the way in, not out, shows in one); None without any."""
    ok = [r for r in reps if r.get("status") == "ok"]
    whole = loaded_ping.summary(ok)
    if whole is None:
        return None
    each = {d: loaded_ping.summary([r for r in ok if r.get("direction") == d]) for d in directions}
    return {**whole, "directions": {d: found for d, found in each.items() if found}}


class FileTransfer(Kind[TransferSettings]):
    """``kind: transfer``: file copies between a client (or several at once) and the NAS, in
    MiB/s (and files per second for a set), each direction judged against the run's network
    and disk measurements."""

    name = "transfer"
    phrase = "file transfers"
    groups = ("File transfers",)
    metric = "bytes_per_second"
    timeline_quantity = BYTES
    directed = True
    path_rate = True
    short_start = "start-up (the connection, a login, TCP slow start)"
    section = view.SECTION

    def settings(self, test: PlanTest) -> TransferSettings:
        """The keys the plan schema allows for a transfer."""
        known = TransferSettings.__dataclass_fields__
        return TransferSettings(**{k: v for k, v in test.settings.items() if k in known})

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        """The client's tool for the method (rsync on both ends); a copy needs only the shell;
        ping on the clients for latency under load."""
        found = dict(methods.method(s.method).needs(test, s))
        if s.latency_under_load:
            found.update({c: (*found.get(c, ()), "ping") for c in test.clients})
        return found

    def describe(self, test: PlanTest, s: TransferSettings) -> str:
        what = _set_text(s.groups) if s.groups else str(s.size)
        clients = " + ".join(test.clients) + " at once" if len(test.clients) > 1 else test.client
        volume = f" (volume {s.volume})" if s.volume else ""
        cache = {"warm": "", "cold": ", reads cold", "both": ", reads warm and cold"}
        return (
            f"transfer {s.method} {clients} <-> {target_label(test)}{volume}, "
            f"{s.direction}{cache.get(s.read_cache, '')}, {what} x {test.repetitions_text}"
            + (", pinged idle and under load" if s.latency_under_load else "")
        )

    def estimate(self, test: PlanTest, s: TransferSettings, plan: Plan) -> Estimate:
        """Each part makes its source (and puts a copy on the NAS first when it only reads);
        each repetition copies it each way at the path's rate, shared by the clients at once,
        a set's files each with a cost of their own and one file of the same bytes beside it,
        a cold read after the NAS dropped its cache."""
        rate, said = copy_rate(plan, test, s.volume)
        clients = len(test.clients)  # at once, sharing the NAS's link
        copy_s = s.size_bytes * clients / rate + STEP_S
        each_s = copy_s
        if s.groups:
            each_s += transfer_sets.file_count(s.groups) * PER_FILE_S
            each_s += copy_s if s.one_file else 0
        seed_s = each_s if s.direction == "read" else 0.0
        source_bytes = s.size_bytes * (2 if s.groups and s.one_file else 1)
        part_s = PART_S + source_bytes / SOURCE_BYTES_PER_SECOND + seed_s
        cold_s = DROP_S * s.directions.count(COLD_READ) * test.repetitions
        copies_s = each_s * len(s.directions) * test.repetitions
        return Estimate(parts(plan, test) * part_s + copies_s + cold_s, said)

    def probes(
        self,
        test: PlanTest,
        s: TransferSettings,
        plan: Plan,
        sessions: Mapping[str, HostSession],
    ) -> list[Probe]:
        """What its method reads (the share, the export, the NAS's or the mount's directory);
        CannotStart (or ValueError) for what the run could not start with."""
        server = sessions.get(test.server)
        if server is None or server.facts is None:
            return []
        xfer = transfer_for(s, test, server, "check")
        found = xfer.method.probes(xfer, test, target_address(test, plan, server))
        needs = [n for c in test.clients for n in needs_of(xfer, c, test.server, s.one_file)]
        return found + space.probes(needs)

    def run(self, test: PlanTest, s: TransferSettings, ctx: RunContext) -> dict[str, Any]:
        """Every repetition of one transfer test; failures are recorded, never raised."""
        record = new_record(
            test, {**path_params(test, target_label(test)), **test.settings}, "bits_per_second"
        )
        record["directions"] = {}
        token = secrets.token_hex(4)
        try:
            sides = [_side(test, s, ctx, token, client) for client in test.clients]
        except (CannotStart, ValueError) as exc:
            record["error"] = str(exc)
            return record
        server = ctx.sessions[test.server]
        self._describe_run(record, s, sides, server, ctx)
        job = Job(test, ctx, server, sides, record, s.one_file)
        try:
            if not record_copies(job) or not self._prepared(job):
                return record
            with sampling.sampling(ctx.sessions, test.hosts, token, ctx.tasks) as resources:
                job.clock = timeline.Clock()  # on the samplers' clock, not the preparation's
                run_directions(job)
            record["resources"] = resources
            record["timeline"] = timeline.timeline(timeline.transfer_series(record, resources))
            job.errors[:0] = full_disks(job)
        finally:
            self._clean(job)
        # the repetitions' errors, and a read's file that could not be placed, a copy left behind
        return finish(self.summarize(record, s), job.errors)

    def _describe_run(
        self,
        record: dict[str, Any],
        s: TransferSettings,
        sides: Sequence[Side],
        server: HostSession,
        ctx: RunContext,
    ) -> None:
        """What the record says of the run besides its repetitions: the address, the size, the
        set, the path (several clients: the NAS's own link, each client's), the NAS's cache."""
        first = sides[0]
        params = record["params"]
        params.update(address=first.address, size_bytes=first.xfer.size_bytes, method=s.method)
        params.update(direction=s.direction, read_cache=s.read_cache)
        if s.groups:
            params["files_count"] = first.xfer.files
        record["path"] = first.path
        if len(sides) > 1:
            record["path"] = nas_path(server, first.address)
            record["paths"] = {side.name: side.path for side in sides}
        record["cache"] = _cache_facts(server, first.xfer)

    def _prepared(self, job: Job) -> bool:
        """Each client's temp dir and source, what it writes checked against its free space and
        its copies through a mount recorded first, in one round trip (``prepare_client``); False
        with the record's error when one cannot."""
        needs, wanted, posix = space_needs(job), wanted_copies(job), _runners(job)
        for side in job.sides:
            fits = [n for n in needs if n.host == side.name] if side.name in posix else []
            record = wanted.get(side.name, (side.client, []))[1]
            local_dir, error = prepare_client(
                side.xfer, side.client, job.ctx, job.one_file, fits, record
            )
            side.local_dir = local_dir or ""
            if error is not None:
                job.record["error"] = error
                return False
        return True

    def _clean(self, job: Job) -> None:
        """Every client's copies on the NAS and temp dir; what stays fails the test."""
        assert job.server.runner is not None
        for side in job.sides:
            if not side.local_dir:
                continue
            problems = cleanup(
                side.xfer, side.runner, job.server.runner, side.local_dir, side.address
            )
            for problem in problems:
                warn(job.record, f"cleanup: {problem}")
            # A file the run made and could not remove fails the test, its paths in the error.
            job.errors += [f"cleanup: {p}" for p in problems]

    def summarize(self, record: dict[str, Any], s: TransferSettings) -> dict[str, Any]:
        """Summaries per direction (several clients: each client's share too) and the status,
        from its repetitions."""
        if s.clients:
            record["together"] = {
                d: together.summary(record["repetitions"], "bytes_per_second", d)
                for d in s.directions
                if any(r.get("direction") == d for r in record["repetitions"])
            }
        if s.latency_under_load:
            record["latency_under_load"] = _under_load(record["repetitions"], s.directions)
        return finish_directions(record, s.directions)

    # --- how its records read ---------------------------------------------------------------

    def directions_asked(self, record: Record) -> list[str | None]:
        params = record.get("params") or {}
        direction, cache = params.get("direction") or "both", params.get("read_cache") or "warm"
        return list(TransferSettings(direction=str(direction), read_cache=str(cache)).directions)

    def measured(self, record: Record, series: Series | None) -> str:
        params = record.get("params") or {}
        method = str(params.get("method") or "?")
        text = f"{methods.label(method)} {series.direction if series else ''}".strip()
        if params.get("files"):
            text += f", {_set_text(TransferSettings(files=params['files']).groups)}"
        if params.get("clients"):
            text += f", {len(params['clients'])} clients at once"
        return text

    def also(self, record: Record, series: Series) -> str:
        """The verdict, and what a set, several clients or a cold read add to it."""
        parts = [super().also(record, series)]
        reps = self.ok_repetitions(record, series.direction)
        parts += [_files_text(reps)] if any("files_per_second" in r for r in reps) else []
        found = ((record.get("together") or {}).get(series.direction or "")) or {}
        whole = ((record.get("together_verdict") or {}).get(series.direction or "")) or {}
        parts += [f"together: {whole['verdict']}"] if whole.get("verdict") else []
        parts += [together.fairness_text(found, "bytes_per_second")] if found else []
        parts += [_cache_text(record, series.direction)]
        by_direction = (record.get("latency_under_load") or {}).get("directions") or {}
        found = by_direction.get(series.direction or "") or {}
        if found.get("increase_ms") is not None:
            parts.append(f"RTT {found['increase_ms']:+.1f} ms under load")
        return "; ".join(p for p in parts if p and p != DASH) or DASH

    def detail_text(self, record: Record) -> str:
        params = record.get("params") or {}
        if params.get("files"):
            text = f", {_set_text(TransferSettings(files=params['files']).groups)}"
        else:
            text = f", file {format_size(params.get('size_bytes'))}"
        by_direction = (record.get("latency_under_load") or {}).get("directions") or {}
        said = [f"{d} {loaded_ping.text(found)}" for d, found in by_direction.items()]
        return text + (f"; round-trip time {'; '.join(said)}" if said else "")

    def copy_label(self, record: Record) -> str | None:
        return methods.label(str((record.get("params") or {}).get("method") or "transfer"))

    def annotated(self, record: Record, evidence: Evidence) -> dict[str, Any]:
        """Each direction judged (``Readout.annotated``); several clients at once: the whole."""
        out = super().annotated(record, evidence)
        label = self.copy_label(record)
        if (record.get("params") or {}).get("clients") and label:
            out["together_verdict"] = judged_together(record, evidence.capacities, label)
        return out


def _set_text(groups: Sequence[tuple[int, int]]) -> str:
    """``1000 files of 1 MiB``, ``1 file of 4 MiB``; a mixed set ``10 x 64 MiB + 1000 x 64 KiB``."""
    if len(groups) == 1:
        count, size = groups[0]
        return f"{counted(count, 'file')} of {_file_size(size)}"
    return " + ".join(f"{count} x {_file_size(size)}" for count, size in groups)


def _file_size(size_bytes: int) -> str:
    """A file's size as a set names it: ``64 KiB``, ``4 MiB``, ``1500 bytes``."""
    if size_bytes >= 2**20:
        return format_size(size_bytes)
    return f"{size_bytes // 1024} KiB" if size_bytes % 1024 == 0 else f"{size_bytes} bytes"


def _files_text(reps: Sequence[Mapping[str, Any]]) -> str:
    """``1203 files/s; 41 % slower than one file of the same bytes (182.3 MiB/s)``; a set
    faster than one file ``48 % faster than ...``; a slow one ``4.58 files/s``."""
    per_s = [r["files_per_second"] for r in reps if isinstance(r.get("files_per_second"), float)]
    text = f"{significant(statistics.median(per_s))} files/s" if per_s else ""
    one = [r["one_file_bytes_per_second"] for r in reps if r.get("one_file_bytes_per_second")]
    mine = [r["bytes_per_second"] for r in reps if r.get("bytes_per_second")]
    if one and mine:
        ratio = statistics.median(mine) / statistics.median(one)
        rate = statistics.median(one) / 2**20
        change = round(abs(1 - ratio) * 100)
        than = "slower" if ratio < 1 else "faster"
        told = f"{change} % {than} than" if change else "as fast as"
        text += f"; {told} one file of the same bytes ({rate:.1f} MiB/s)"
    return text


def _cache_text(record: Record, direction: str | None) -> str:
    """A read's cache: cold (what the NAS dropped), else the NAS's RAM beside the file."""
    reps = [r for r in record.get("repetitions") or [] if r.get("direction") == direction]
    said = next((r["cache"] for r in reps if r.get("cache")), None)
    if said:
        return f"cold: {said}"
    cache = record.get("cache") or {}
    memory, size = cache.get("server_cache_bytes"), cache.get("file_bytes")
    if direction != "read" or not memory or not size:
        return ""
    limited = " (its memory limit)" if cache.get("server_memory_limit_bytes") else ""
    moved = format_size(size)
    return f"right after the write: NAS RAM {format_size(memory)}{limited} vs {moved} moved"


KIND = FileTransfer()
