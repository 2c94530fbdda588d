"""In the lab: NFS tests give their space back. Two 400 MiB copies over NFS to a 1 GiB volume,
the first one's file deleted before the second: nfs-ganesha lets go of the deleted file, so the
second copy finds the space and the volume is as empty afterwards as before. (Each test asks for
room for two copies, 800 MiB of the volume's 906 MiB: with the first file's space still held,
the second test would not start.)"""

from __future__ import annotations

import io
import time
from pathlib import Path

import yaml
from conftest import LabContext

from nasplan.input.plan import load_plan
from nasplan.lab import netns
from nasplan.progress import make_progress
from nasplan.results import load_run
from nasplan.run.apply import apply
from nasplan.run.planned import EXIT_OK
from nasplan.run.request import RunRequest

LAB = {
    "name": "l45-nfsfree",
    "lan": {"prefix": "198.18.105.0/24", "rate": "10G"},
    "hosts": {
        "nas": {"services": ["nfs"],
                "volumes": {"small": {"rate": "1GiB/s", "size": "1GiB"}}},
        "ws": {},
    },
}  # fmt: skip


def used_bytes(sshd_pid: int | None) -> int:
    """What the volume holds, as df sees it inside the NAS."""
    out = netns.run(
        ["nsenter", f"--target={sshd_pid}", "--mount", "--", "df", "-B1",
         "--output=used", "/srv/small"]
    )  # fmt: skip
    return int(out.split()[-1])


def test_two_400mib_copies_fit_a_1gib_volume_one_after_the_other(
    running_lab: LabContext, tmp_path: Path
) -> None:
    copy = {"kind": "transfer", "server": "nas", "client": "ws", "method": "nfs",
            "volume": "small", "size": "400MiB", "direction": "write",
            "repetitions": 1}  # fmt: skip
    plan = {"name": "nfs-space", "tests": [{**copy, "id": "first"}, {**copy, "id": "second"}]}
    with running_lab(LAB) as state:
        sshd = state.hosts["nas"].sshd_pid
        before = used_bytes(sshd)
        plan["inventory"] = str(state.inventory_path)
        path = tmp_path / "plan.yaml"
        path.write_text(yaml.safe_dump(plan, sort_keys=False))
        request = RunRequest(load_plan(path), out=tmp_path / "run")
        outcome = apply(request, make_progress(io.StringIO()))
        # the server lets go of the last copy within its reaper's second or two
        deadline = time.monotonic() + 5
        while (after := used_bytes(sshd)) - before > 16 * 2**20 and time.monotonic() < deadline:
            time.sleep(0.2)
    run = load_run(tmp_path / "run")
    tests = {t["id"]: t for t in run["tests"]}
    assert outcome.exit_code == EXIT_OK, [(t["id"], t["error"]) for t in run["tests"]]
    assert tests["second"]["status"] == "ok", tests["second"]["error"]
    assert tests["second"]["directions"]["write"]["median"] > 0
    # both copies deleted and their space given back, not held by the NFS server
    assert after - before < 16 * 2**20, (before, after)
