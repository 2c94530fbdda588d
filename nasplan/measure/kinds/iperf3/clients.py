"""An iperf3 test from several clients at once (``clients:``): one one-off server a client on the
NAS (one script starts them all), every client started at the same instant (the run's tasks,
one SSH channel each), the servers stopped, the parts combined (``nasplan.measure.together``).

Client ``i`` talks to port ``port + PORT_STEP * i``, far from the ports the plan's other tests
take by default (5201 plus their position), so no test's server is another's. ``--bidir`` gives
each client both directions, the aggregate of each apart.
"""

from __future__ import annotations

import dataclasses
import secrets
from typing import Any

from nasplan.errors import CannotStart
from nasplan.input.plan import PlanTest
from nasplan.measure import timeline, together
from nasplan.measure.commands import command
from nasplan.measure.kind import Needs, RunContext
from nasplan.measure.kinds.iperf3 import multi as iperf3_multi
from nasplan.measure.kinds.iperf3 import server as iperf3_server
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.pair import Pair, nas_path, open_pair
from nasplan.measure.sampling import Sampling

PORT_STEP = 1000
CLIENT_MARGIN_S = 30
STOP_GRACE_S = 2.0


def ports(params: Iperf3Params, count: int) -> list[int]:
    """Each client's server port, in the order of the clients."""
    found = [params.port + PORT_STEP * i for i in range(count)]
    return found if found[-1] <= 65535 else [params.port - PORT_STEP * i for i in range(count)]


def run(
    test: PlanTest,
    params: Iperf3Params,
    ctx: RunContext,
    record: dict[str, Any],
    needs: Needs,
) -> None:
    """Every repetition of every client at once into ``record``; CannotStart when a pair
    cannot start."""
    pairs = {c: open_pair(dataclasses.replace(test, client=c), ctx, needs) for c in test.clients}
    first = pairs[test.clients[0]]
    record["params"].update(address=first.address, clients=list(test.clients))
    record["path"] = nas_path(first.server, first.address)
    record["paths"] = {c: pair.path for c, pair in pairs.items()}
    token = secrets.token_hex(4)
    sampled = Sampling(ctx.sessions, test.hosts, token, ctx.tasks)
    sampled.start()
    clock = timeline.Clock()
    try:
        for index in test.indices:
            ctx.settle(test.hosts)
            sampled.wait_started()
            ctx.progress.test(test.id, index, test.repetitions, float(params.duration_s))
            rep = _repetition(test, params, ctx, pairs, index, (token, clock))
            record["repetitions"].append({"index": index, **rep})
            ctx.checkpoint(record, last=index == test.indices[-1])
    finally:
        record["resources"] = sampled.close()


def _repetition(
    test: PlanTest,
    params: Iperf3Params,
    ctx: RunContext,
    pairs: dict[str, Pair],
    index: int,
    run: tuple[str, timeline.Clock],
) -> dict[str, Any]:
    """The servers started, every client at once, the servers stopped; the parts combined.
    ``run``: the test's token and clock."""
    token, clock = f"{run[0]}-{index}", run[1]
    server = next(iter(pairs.values())).server
    assert server.runner is not None
    each = dict(zip(pairs, ports(params, len(pairs)), strict=True))
    start = iperf3_multi.servers_start_script(server.tools["iperf3"], list(each.values()), token)
    started = server.runner.run_script(start, timeout_s=10 * len(each) + 10)
    parts: dict[str, dict[str, Any]] = {}
    try:
        if not started.ok:
            reason = " ".join((started.stderr + started.stdout).split())[:200]
            raise CannotStart(f"could not start the iperf3 servers on {server.host.name}: {reason}")

        def one(client: str) -> None:
            port = dataclasses.replace(params, port=each[client])
            raw = f"raw/{test.dir_name}/{client}/rep-{index}.json"
            parts[client] = _client(port, ctx, pairs[client], clock, raw)

        ctx.tasks.each(list(pairs), one)
    except CannotStart as exc:
        return {"status": "failed", "error": str(exc), "bits_per_second": None}
    finally:
        stop = iperf3_multi.servers_stop_script(list(each.values()), token, grace_s=STOP_GRACE_S)
        server.runner.run_script(stop, timeout_s=30)
    # each client's command is kept once, with the servers', on the repetition (not its part)
    clients = [c for name in pairs for c in parts[name].pop("commands", [])]
    rep = _combined({c: parts[c] for c in pairs}, params.bidir)
    files = iperf3_multi.temp_paths(token, list(each.values()))
    servers = [
        command(server.host.name, iperf3_server.server_argv(server.tools["iperf3"], port, *f),
                server=True)
        for port, f in zip(each.values(), files, strict=True)
    ]  # fmt: skip
    rep["commands"] = servers + clients
    return rep


def _client(
    params: Iperf3Params,
    ctx: RunContext,
    pair: Pair,
    clock: timeline.Clock,
    raw_name: str,
) -> dict[str, Any]:
    """One client's part of a repetition: its iperf3 against its own server. Never raises."""
    client = pair.client
    assert client.runner is not None
    version = client.facts.iperf3_version if client.facts else None
    argv = iperf3.client_argv(client.tools["iperf3"], pair.address, params, iperf3_version=version)
    started_s = clock.now_s()
    kept = [command(client.host.name, argv)]
    result = client.runner.run_script(
        iperf3_server.client_script(argv),
        timeout_s=params.duration_s + params.omit_s + CLIENT_MARGIN_S,
    )
    part: dict[str, Any] = {
        "status": "failed",
        "error": None,
        "started_s": started_s,
        "commands": kept,
    }
    part["ended_s"] = clock.now_s()
    part["raw_file"] = ctx.save_raw(raw_name, result.stdout + result.stderr)
    try:
        parsed = iperf3.parse_client(result.stdout, result.stderr, client.host.name)
    except iperf3.Iperf3Error as exc:
        part["error"] = str(exc)
        return part
    part.update(iperf3.repetition_fields(parsed))
    part["interval_bits_per_second"] = [row["bits_per_second"] for row in parsed["intervals"]]
    if params.bidir:
        part["reverse_bits_per_second"] = parsed.get("reverse_bits_per_second")
    part["status"] = "ok"
    return part


def _combined(parts: dict[str, dict[str, Any]], bidir: bool) -> dict[str, Any]:
    """The repetition: the clients' rates summed (they run for the same time), their intervals
    summed second by second; with ``--bidir`` the reverse direction's too."""
    rep = together.combined(0, parts, "bits_per_second", span=False)
    rep.pop("index")
    rows = [p.get("interval_bits_per_second") or [] for p in parts.values()]
    rep["interval_bits_per_second"] = [
        sum(v for v in second if isinstance(v, (int, float))) for second in zip(*rows, strict=False)
    ]
    if bidir and rep["status"] == "ok":
        back = [p.get("reverse_bits_per_second") for p in parts.values()]
        rep["reverse_bits_per_second"] = (
            sum(back) if all(isinstance(v, float) for v in back) else None
        )
    return rep
