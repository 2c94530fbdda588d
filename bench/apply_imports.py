"""What ``nasplan apply`` costs before its first connection: the interpreter's start and the
imports, in fresh processes (no lab, no root: the plan's two hosts refuse the connection).

Each round runs ``python -X importtime`` on the CLI as the console script does, against a plan of
one iperf3 test whose hosts (127.0.0.1, a port nothing listens on) refuse SSH at once. The child
notes the moment its first socket connect begins and the modules loaded by then; the parent notes
when it started the child (the same monotonic clock). Printed, medians over the rounds: the wall
from the process's start to its first connection, the import time of the modules loaded by then
(the sum of their own times, ``-X importtime``'s ``self``), the import time of those loaded after
(the report, written once the hosts answered), and the packages that weigh most before it.

Usage: .venv/bin/python bench/apply_imports.py [--rounds 10] [--json FILE]
"""

from __future__ import annotations

import argparse
import collections
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

# The CLI as the console script runs it, the moment of its first connection and the modules
# loaded by then noted (printed as the last line).
CHILD = """
import json, socket, sys, time
first = []
connect = socket.socket.connect
def first_connect(self, *args, **kwargs):
    if not first:
        first.append((time.monotonic(), sorted(sys.modules)))
    return connect(self, *args, **kwargs)
socket.socket.connect = first_connect
from nasplan.cli import main
try:
    main(sys.argv[1:], prog_name="nasplan")
except SystemExit:
    pass
at, modules = first[0] if first else (None, [])
print(json.dumps({"first_s": at, "first": modules}))
"""


def refused_port() -> int:
    """A local TCP port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def write_plan(directory: Path) -> Path:
    """One iperf3 test between two hosts that refuse SSH."""
    known_hosts = directory / "known_hosts"
    known_hosts.write_text("")
    known_hosts.chmod(0o600)
    host = {"address": "127.0.0.1", "port": refused_port(), "known_hosts": str(known_hosts)}
    inventory = {"hosts": {"nas": dict(host), "ws": dict(host)}}
    (directory / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    test = {"id": "tcp", "kind": "iperf3", "server": "nas", "client": "ws", "duration_s": 5}
    plan = {"name": "imports", "inventory": "inventory.yaml", "tests": [test]}
    path = directory / "plan.yaml"
    path.write_text(yaml.safe_dump(plan, sort_keys=False))
    return path


def import_times(stderr: str) -> dict[str, int]:
    """``-X importtime``'s lines -> module -> its own import time in microseconds."""
    found: dict[str, int] = {}
    for line in stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _cumulative, name = line.removeprefix("import time:").split("|")
        found[name.strip()] = int(own)
    return found


def one_round(plan: Path, out: Path) -> dict[str, Any]:
    """One fresh ``nasplan apply``: seconds to its first connection, the imports before and
    after it (seconds), and the import time of each top-level package before it."""
    argv = [sys.executable, "-X", "importtime", "-c", CHILD, "apply", str(plan), "--out", str(out)]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    report = json.loads(done.stdout.strip().splitlines()[-1])
    if report["first_s"] is None:
        raise SystemExit(f"apply never connected: {done.stderr.strip().splitlines()[-1:]}")
    times = import_times(done.stderr)
    before = set(report["first"])
    packages: collections.Counter[str] = collections.Counter()
    for name, own in times.items():
        if name in before:
            packages[name.split(".")[0]] += own
    return {
        "to_first_connection_s": report["first_s"] - started,
        "imports_before_s": sum(t for n, t in times.items() if n in before) / 1e6,
        "imports_after_s": sum(t for n, t in times.items() if n not in before) / 1e6,
        "packages_before_s": {name: us / 1e6 for name, us in packages.items()},
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--json", type=Path, help="also write every round's figures here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nasplan-imports-") as scratch:
        directory = Path(scratch)
        plan = write_plan(directory)
        # the first run validates the plan and remembers it (schema_memo): what a run of a plan
        # run before costs is measured, as a user's second run of it
        one_round(plan, directory / "run-warm")
        rounds = [one_round(plan, directory / f"run-{n}") for n in range(args.rounds)]
    median = {
        key: statistics.median(r[key] for r in rounds)
        for key in ("to_first_connection_s", "imports_before_s", "imports_after_s")
    }
    names = {name for r in rounds for name in r["packages_before_s"]}
    heaviest = sorted(
        ((statistics.median(r["packages_before_s"].get(n, 0.0) for r in rounds), n) for n in names),
        reverse=True,
    )[:8]
    print(f"nasplan apply, {args.rounds} fresh processes (medians):")
    print(f"  start to first connection   {median['to_first_connection_s'] * 1000:7.1f} ms")
    print(f"  imports before it           {median['imports_before_s'] * 1000:7.1f} ms")
    print(f"  imports after it (report)   {median['imports_after_s'] * 1000:7.1f} ms")
    print("  heaviest before it: " + ", ".join(f"{n} {s * 1000:.1f} ms" for s, n in heaviest))
    if args.json:
        args.json.write_text(json.dumps({"median": median, "rounds": rounds}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
