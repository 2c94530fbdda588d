"""Run ``ansible-inventory ... --list`` for many inventories, Ansible imported once.

The program ``ansible-inventory`` is ``ansible.cli.inventory.main`` with its argv; here each run
is that same call, with its own argv, working directory and output files, in a process of its
own forked from this one (two at a time), so that what one run leaves in Ansible's module state
cannot reach another, and no run pays Ansible's import again.

Standard input: a JSON list of ``{"argv": [...], "cwd": DIR, "out": FILE, "err": FILE}``;
standard output: the JSON list of the runs' exit codes, in the same order (``--stream``: one
job per line, one code per line).
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

PARALLEL = 2


def _child(job: dict[str, Any]) -> int:
    from ansible.cli.inventory import main

    os.chdir(job["cwd"])
    for fd, name in ((1, job["out"]), (2, job["err"])):
        opened = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(opened, fd)
        os.close(opened)
    sys.argv = list(job["argv"])
    try:
        main()
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
    return 0


def run(jobs: list[dict[str, Any]]) -> list[int]:
    import ansible.cli.inventory  # noqa: F401  # imported once, before the forks

    codes: list[int] = [-1] * len(jobs)
    running: dict[int, int] = {}

    def reap() -> None:
        pid, status = os.wait()
        codes[running.pop(pid)] = os.waitstatus_to_exitcode(status)

    for index, job in enumerate(jobs):
        while len(running) >= PARALLEL:
            reap()
        pid = os.fork()
        if pid == 0:
            code = 70
            try:
                code = _child(job)
            finally:
                os._exit(code)
        running[pid] = index
    while running:
        reap()
    return codes


def stream() -> None:
    """``--stream``: one job per line of standard input, its exit code on a line of standard
    output as soon as it ends (a property test asks one inventory at a time)."""
    import ansible.cli.inventory  # noqa: F401  # imported once, before the forks

    for line in sys.stdin:
        print(run([json.loads(line)])[0], flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--stream"]:
        stream()
    else:
        json.dump(run(json.load(sys.stdin)), sys.stdout)
