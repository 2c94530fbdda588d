"""The repetitions of one transfer test: each client's side set up (its source file or set of
files), each direction's repetitions timed (a read's file put on the NAS first, untimed; a cold
read after the NAS dropped its cache; a set's copy beside the same bytes as one file), several
clients at the same instant (``nasplan.measure.together``), and what the test left removed.

A client's repetition is one timed command on it (``tools/transfer.timed_script``, or the
script of its method's own copy for its platform: ``TransferMethod.own_copy``); its raw output is
saved, its record appended, a checkpoint taken.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nasplan import platforms
from nasplan.hosts.session import HostSession
from nasplan.input.plan import PlanTest
from nasplan.measure import methods, space, timeline, together
from nasplan.measure.commands import command
from nasplan.measure.kind import RunContext
from nasplan.measure.kinds.transfer import nas_cache
from nasplan.measure.methods.base import (
    SETUP_TIMEOUT_S,
    SLOWEST_BYTES_PER_SECOND,
    ClientCopy,
    Transfer,
)
from nasplan.measure.record import warn
from nasplan.measure.series import COLD_READ, data_direction
from nasplan.measure.tools import transfer, transfer_sets
from nasplan.measure.under_load import UnderLoad
from nasplan.remote.runner import Runner


@dataclass
class Side:
    """One client's end of a transfer test: its session, the Transfer made concrete for it, the
    address it sends to, its path, its temp dir, and what its last write left on the NAS."""

    client: HostSession
    xfer: Transfer
    address: str
    path: dict[str, Any]
    local_dir: str = ""
    on_nas: Transfer | None = None
    one_on_nas: Transfer | None = None

    @property
    def name(self) -> str:
        return self.client.host.name

    @property
    def runner(self) -> Runner:
        assert self.client.runner is not None
        return self.client.runner


@dataclass
class Job:
    """One transfer test's repetitions: the test, its context, the NAS, each client's side,
    the record they go into, whether a set is measured beside one file of the same bytes."""

    test: PlanTest
    ctx: RunContext
    server: HostSession
    sides: list[Side]
    record: dict[str, Any]
    one_file: bool
    errors: list[str] = field(default_factory=list)
    # the test's clock, started with its samplers (run_directions' caller): the samplers'
    # seconds count from their first sample
    clock: timeline.Clock = field(default_factory=timeline.Clock)

    @property
    def xfer(self) -> Transfer:
        return self.sides[0].xfer

    def raw_name(self, side: Side, name: str) -> str:
        """``raw/{test}/{name}.txt``; a client's own directory there when several run."""
        where = f"{side.name}/" if len(self.sides) > 1 else ""
        return f"raw/{self.test.dir_name}/{where}{name}.txt"


def repetition(
    client: Runner,
    xfer: Transfer,
    direction: str,
    local_dir: str,
    address: str,
    under_load: UnderLoad | None = None,
) -> tuple[dict[str, Any], str]:
    """Run one timed transfer; return (repetition fields, raw output). Never raises.
    ``under_load``: the client's pings around it (a POSIX client's), read into its ``found``."""
    way = data_direction(direction)
    rep: dict[str, Any] = {"direction": direction, "status": "failed", "error": None}
    own = xfer.method.own_copy(platforms.of(client))
    if own is not None:
        name, script, stdin = own.timed(xfer, way, local_dir, address)
        argv = [name]
        result = client.run_script(script, stdin=stdin, timeout_s=xfer.timeout_s)
    else:
        argv, before = xfer.command(way, local_dir, address)
        rep["commands"] = [
            *(command(client.name, untimed, timed=False) for untimed in before),
            command(client.name, argv),
        ]
        script = transfer.timed_script(argv, before)
        if under_load is not None:
            script = under_load.around(script)
        result = client.run_script(script, timeout_s=xfer.timeout_s)
        if under_load is not None:
            under_load.read(result.stdout)
    raw = result.stdout + result.stderr
    try:
        timed = transfer.parse_timing(result.stdout.replace("\r\n", "\n"))
    except transfer.TransferParseError as exc:  # the script itself did not end (killed?)
        detail = (result.stdout.strip().splitlines() or [""])[-1]
        rep["error"] = f"{exc} (exit {result.exited})" + (f": {detail}" if detail else "")
        return rep, raw
    exited, output = timed.exited, timed.output
    try:
        # an own copy is timed by its script itself: no tool rate to read
        tool = {"tool_bytes_per_second": None} if own else xfer.method.parse(xfer, output)
    except transfer.TransferParseError as exc:  # what the tool said, not the script's markers
        rep["error"] = str(exc) + (f" ({argv[0]} exited {exited})" if exited else "")
        return rep, raw
    if exited != 0:
        said = (output.strip().splitlines() or [""])[-1]
        rep["error"] = f"{argv[0]} exited {exited}" + (f": {said}" if said else "")
        return rep, raw
    if timed.step_s is not None:  # said by the caller, who knows the host and the repetition
        rep["clock_step_s"] = timed.step_s
    if timed.duration_s <= 0:
        rep["error"] = f"{argv[0]} took no measurable time on {client.name}'s clock"
        return rep, raw
    return _timed(rep, xfer, timed.duration_s, tool), raw


def _timed(
    rep: dict[str, Any], xfer: Transfer, duration_s: float, tool: dict[str, Any]
) -> dict[str, Any]:
    """The repetition's numbers; a set whose tool copied fewer files than it holds fails."""
    copied = tool.get("files")
    if xfer.groups and isinstance(copied, int) and copied < xfer.files:
        rep["error"] = f"copied {copied} of the set's {xfer.files} files"
        return rep
    rate = xfer.size_bytes / duration_s if duration_s > 0 else None
    rep.update(
        status="ok",
        bytes=xfer.size_bytes,
        duration_s=duration_s,
        bytes_per_second=rate,
        bits_per_second=rate * 8 if rate else None,
        tool_bytes_per_second=tool["tool_bytes_per_second"],
    )
    if xfer.groups:
        rep.update(files=xfer.files, files_per_second=xfer.files / duration_s if rate else None)
    return rep


def clock_step_text(host: str, step_s: float, during: str) -> str:
    """``ws's wall clock stepped -3600.0 s during write 2; the copy was timed by its monotonic
    clock``: the note a repetition timed across a clock step leaves in its test's warnings."""
    return (
        f"{host}'s wall clock stepped {step_s:+.1f} s during {during}; "
        "the copy was timed by its monotonic clock"
    )


def check_commands(xfer: Transfer, address: str) -> None:
    """Build every command the test will run; ValueError when a value breaks a tool's syntax.

    Called before anything is made on a host, so a refused value leaves nothing behind.
    """
    for direction in {data_direction(d) for d in xfer.directions}:
        xfer.command(direction, "/nasplan-check", address)
        xfer.method.write_target(xfer, 0).command(direction, "/nasplan-check", address)
        if xfer.groups:
            xfer.one_file().command(direction, "/nasplan-check", address)


def check_client(xfer: Transfer, client: Runner, address: str) -> None:
    """``check_commands``, or the client's own copy's check (its platform's: ``own_copy``);
    ValueError when a value breaks their syntax."""
    own = xfer.method.own_copy(platforms.of(client))
    if own is not None:
        own.check(xfer, address)
    elif platforms.of(client).posix_shell:  # else prepare_client refuses the method there
        check_commands(xfer, address)


def prepare_client(
    xfer: Transfer,
    client: HostSession,
    ctx: RunContext,
    one_file: bool = True,
    fits: Sequence[space.Need] = (),
    record: Sequence[str] = (),
) -> tuple[str | None, str | None]:
    """Check the tool and the free space for ``fits`` (what the test writes in the temp dir and
    through the client's mount), record ``record`` (the copies through the mount) with the temp
    dir in the host's lock, then make the temp dir and the source (a file, a set of files and,
    beside a set, ``one_file``: the same bytes as one file), in one round trip; return (local
    dir, error)."""
    assert client.runner is not None
    way, platform = xfer.method, platforms.of(client.runner)
    own = way.own_copy(platform)
    refused = _refused(xfer, client.host.name, platform, own)
    if refused is not None:
        return None, refused
    tool = way.tool(xfer)
    missing = f"{tool} is not installed on {client.host.name}"
    secret, error = way.credentials(xfer)
    if error is not None:  # a missing tool is said first, as when the setup looks for it
        there = own is not None or client.runner.run(["sh", "-c", 'command -v "$1"', "sh", tool]).ok
        return None, error if there else missing
    stdin = None
    if secret is not None:
        ctx.mask(secret)
        stdin = way.auth_stdin(xfer, secret)
    timeout_s = SETUP_TIMEOUT_S + xfer.size_bytes * 2 / SLOWEST_BYTES_PER_SECOND
    if own is not None:
        return own.prepare(xfer, client.runner, timeout_s)
    also = transfer_sets.make_set_lines(xfer.remote_name, xfer.groups) if xfer.groups else []
    script = transfer.setup_script(
        xfer.size_bytes,
        with_auth=stdin is not None,
        also=also,
        one_file=one_file or not xfer.groups,
        tool=tool,
        check=space.fit_lines(fits),
        record=record,
    )
    result = client.runner.run_script(script, stdin=stdin, timeout_s=timeout_s)
    if result.stdout.strip() == transfer.NO_TOOL:
        return None, missing
    short = space.said_short(fits, result.stdout)
    if short:
        return None, "; ".join(short)
    local_dir = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    if not result.ok or not local_dir.startswith("/"):
        return None, f"cannot create the source file on {client.host.name}: {result.stderr.strip()}"
    return local_dir, _write_files(xfer, client.runner, local_dir)


def _refused(
    xfer: Transfer, host: str, platform: platforms.Platform, own: ClientCopy | None
) -> str | None:
    """Why ``host`` does not copy this test (a method its platform has no copy for, a set its
    own copy does not copy); None: it does."""
    if own is None and not platform.posix_shell:
        copies = (m.own_copy(platform) for m in methods.METHODS.values())
        found = next((copy for copy in copies if copy is not None), None)
        if found is None:
            return f"{host} runs no POSIX sh, and no transfer method copies from it"
        return found.refusal(host, xfer.method.name)
    if own is not None and xfer.groups and not own.many_files:
        return f"{host}: many files (files:) are copied from Linux or macOS clients"
    return None


def _write_files(xfer: Transfer, client: Runner, local_dir: str) -> str | None:
    """The files the method's tool needs into the temp dir (a helper script, a known_hosts);
    why one could not be written, None when all were (or none is needed)."""
    for name, text in xfer.method.client_files(xfer):
        path = f"{local_dir}/{name}"
        argv = ["sh", "-c", 'cat > "$1"', "sh", path]
        made = client.run(argv, stdin=text, timeout_s=SETUP_TIMEOUT_S)
        if not made.ok:
            return f"cannot write {path}: {made.stderr.strip()}"
    return None


def cleanup(
    xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
) -> list[str]:
    """Remove the NAS's copy (a set's one-file twin too) and the client's temp dir; return what
    could not be removed. The client's temp dir (with the SMB authentication file) is removed
    whatever happens."""
    own = xfer.method.own_copy(platforms.of(client))
    if own is not None:  # its own scripts remove both copies
        return own.cleanup(xfer, client, local_dir, address)
    problems: list[str] = []
    try:
        for copy in (xfer, xfer.one_file()) if xfer.groups else (xfer,):
            try:
                problems += copy.method.remove_copy(copy, client, server, local_dir, address)
            except ValueError as exc:
                problems.append(f"the copy on the NAS: {exc}")
    finally:
        result = client.run(transfer.cleanup_argv(local_dir), timeout_s=SETUP_TIMEOUT_S)
    if not result.ok:
        problems.append(f"rm -rf {local_dir}: {result.stderr.strip()}")
    return problems


# --- the repetitions -----------------------------------------------------------------------


def run_directions(job: Job) -> None:
    """Every repetition of every direction into the record, a checkpoint after each; what a
    resumed run kept (``PlanTest.kept``) is not measured again."""
    test = job.test
    speed = (job.record.get("path") or {}).get("speed_bits_per_second")
    total = test.repetitions * len(job.xfer.directions)
    total_s = total * job.xfer.size_bytes * 8 / speed if speed else 0.0
    for direction in job.xfer.directions:
        indices = [index for index in test.indices if test.wants(index, direction)]
        if not indices:
            continue
        if direction != "write" and not _seeded(job):
            return
        if direction == COLD_READ and not _can_drop(job):
            continue
        for index in indices:
            job.ctx.progress.test(test.id, index, test.repetitions, total_s, direction)
            rep = _repetition(job, direction, index)
            job.record["repetitions"].append(rep)
            job.ctx.checkpoint(job.record)
            if rep["error"]:
                job.errors.append(f"{direction} {index}: {rep['error']}")


def _repetition(job: Job, direction: str, index: int) -> dict[str, Any]:
    """One repetition of every client: alone, or all at the same instant, combined. A cold read
    whose cache the NAS could not drop is no measurement: it fails, saying why."""
    said = _drop_cache(job) if direction == COLD_READ else None
    if said is not None and said.startswith("not dropped"):
        error = f"the NAS's cache was {said}"
        return {"index": index, "direction": direction, "status": "failed", "error": error}
    if len(job.sides) == 1:
        rep = {"index": index, **_measure(job, job.sides[0], direction, index)}
    else:
        parts: dict[str, dict[str, Any]] = {}

        def one(side: Side) -> None:
            parts[side.name] = _measure(job, side, direction, index)

        job.ctx.tasks.each(job.sides, one)
        ordered = {side.name: parts[side.name] for side in job.sides}
        rep = together.combined(index, ordered, "bytes_per_second", span=True)
        rate = rep.get("bytes_per_second")
        rep.update(direction=direction, bits_per_second=rate * 8 if rate else None)
    if said is not None:
        rep["cache"] = said
    return rep


def _measure(job: Job, side: Side, direction: str, index: int) -> dict[str, Any]:
    """One client's timed copy (and, beside a set, the same bytes as one file)."""
    xfer = side.xfer
    write = direction == "write"
    target = xfer.method.write_target(xfer, index) if write else side.on_nas or xfer
    started_s = job.clock.now_s()
    pings = _under_load(job, side, xfer, f"{direction}-{index}")
    rep, raw = repetition(side.runner, target, direction, side.local_dir, side.address, pings)
    rep.update(started_s=started_s, ended_s=job.clock.now_s())
    if pings is not None and rep["status"] == "ok":
        rep.update(pings.found)
    rep["raw_file"] = job.ctx.save_raw(job.raw_name(side, f"{direction}-{index}"), raw)
    if rep.get("clock_step_s") is not None:
        warn(job.record, clock_step_text(side.name, rep["clock_step_s"], f"{direction} {index}"))
    if write and rep["status"] == "ok":
        side.on_nas = target
    if xfer.groups and job.one_file and rep["status"] == "ok":
        rep.update(_one_file(job, side, direction, index))
    return rep


def _under_load(job: Job, side: Side, xfer: Transfer, name: str) -> UnderLoad | None:
    """The pings of a ``latency_under_load`` copy: None when not asked, on a Windows client,
    or without ping there."""
    ping = side.client.tools.get("ping")
    if not job.test.settings.get("latency_under_load") or not ping:
        return None
    if not platforms.of(side.runner).posix_shell:
        return None
    token = f"{job.test.dir_name}-{side.name}-{name}"
    return UnderLoad(ping, side.address, token, int(xfer.timeout_s) + 10)


def _one_file(job: Job, side: Side, direction: str, index: int) -> dict[str, Any]:
    """The same bytes as one file, right after the set: what its small-file penalty is
    measured against."""
    one = side.xfer.one_file()
    target = one.method.write_target(one, index) if direction == "write" else side.one_on_nas
    if target is None:
        return {"one_file_error": "the one file to read is not on the NAS"}
    if direction == COLD_READ:
        _drop_cache(job, target)
    rep, raw = repetition(side.runner, target, direction, side.local_dir, side.address)
    raw_file = job.ctx.save_raw(job.raw_name(side, f"{direction}-{index}-one-file"), raw)
    if rep["status"] != "ok":
        return {"one_file_error": rep["error"], "one_file_raw_file": raw_file}
    if direction == "write":
        side.one_on_nas = target
    return {
        "one_file_bytes_per_second": rep["bytes_per_second"],
        "one_file_duration_s": rep["duration_s"],
        "one_file_raw_file": raw_file,
    }


def _seeded(job: Job) -> bool:
    """Before the first read: each client's copy (and one-file twin) on the NAS, untimed,
    unless a write put it there; False, said in the errors, when one could not be."""
    first = job.test.first_repetition  # a later part of the test seeds a file of its own
    for side in job.sides:
        wanted: list[tuple[str, Transfer, Callable[[Transfer], None]]] = []
        if side.on_nas is None:
            wanted.append(("seed", side.xfer.method.write_target(side.xfer, 0), _set_main(side)))
        if side.xfer.groups and job.one_file and side.one_on_nas is None:
            one = side.xfer.one_file()
            wanted.append(("seed-one-file", one.method.write_target(one, 0), _set_one(side)))
        for name, target, keep in wanted:
            seed, raw = repetition(side.runner, target, "write", side.local_dir, side.address)
            suffix = "" if first == 1 else f"-{first}"
            job.ctx.save_raw(job.raw_name(side, f"{name}{suffix}"), raw)
            if seed["status"] != "ok":
                job.errors.append(
                    f"could not place the file on the NAS for reading: {seed['error']}"
                )
                return False
            keep(target)
    return True


def _set_main(side: Side) -> Callable[[Transfer], None]:
    def keep(target: Transfer) -> None:
        side.on_nas = target

    return keep


def _set_one(side: Side) -> Callable[[Transfer], None]:
    def keep(target: Transfer) -> None:
        side.one_on_nas = target

    return keep


def _can_drop(job: Job) -> bool:
    """Whether the NAS can drop its cache for cold reads; said once in the record when not."""
    how = nas_cache.how(job.server, None)
    if isinstance(how, str):
        warn(job.record, f"cold reads not measured: {how}")
        return False
    return True


def _drop_cache(job: Job, target: Transfer | None = None) -> str:
    """The NAS drops its cache of what the cold read reads (every client's copy); what it said."""
    said = []
    for side in job.sides:
        copy = target or side.on_nas or side.xfer
        said.append(nas_cache.drop(job.server, copy.method.nas_path(copy)))
    return "; ".join(dict.fromkeys(said))
