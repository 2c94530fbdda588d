"""The SSH floor: the least a script must do to run a plan's work, with the same SSH library.

Given the hosts and the tests (JSON on stdin), it connects to every host at once with strict
host-key checking (paramiko, RejectPolicy, the lab's known_hosts), runs nasplan's own facts script
on each, then for each test in order starts a one-off iperf3 server, runs the client once the
server says it listens, and fetches the results (a one-host plan: fio in
a fresh directory).  No platform logic, no
run.json, no report: what is left is the cost of SSH, the facts script and iperf3 itself.

Prints one JSON object: wall_s, measured_s (the seconds iperf3 itself measured), per-test rates.
Usage: python bench/floor.py < spec.json   (spec: {"hosts": {...}, "tests": [...]})
"""

from __future__ import annotations

import json
import shlex
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from typing import Any

import paramiko

# nasplan's facts script with the same tool list nasplan asks for (read, not imported: the
# floor pays for paramiko only, not for nasplan's modules)
_TOOLS_LINE = "@TOOLS@"


def facts_script(tools: list[str]) -> str:
    """nasplan/facts/facts.sh with the tool list nasplan substitutes (given by the caller)."""
    text = resources.files("nasplan.facts").joinpath("facts.sh").read_text()
    text = text.replace(_TOOLS_LINE, " ".join(shlex.quote(t) for t in tools))
    return text.replace("@ALSO@", "")  # nasplan runs its host lock there: the floor takes none


def connect(host: dict[str, Any]) -> paramiko.SSHClient:
    client = paramiko.SSHClient()
    client.load_host_keys(host["known_hosts"])
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        host["address"],
        port=host.get("port", 22),
        username=host["user"],
        key_filename=host["identity_file"],
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
    )
    # TCP_NODELAY, as OpenSSH and nasplan set it: without it every exchange waits ~40 ms
    client.get_transport().sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # type: ignore[union-attr]
    return client


def run(client: paramiko.SSHClient, command: str) -> tuple[int, str, str]:
    _, stdout, stderr = client.exec_command(command)
    out = stdout.read().decode(errors="replace")
    err = stderr.read().decode(errors="replace")
    return stdout.channel.recv_exit_status(), out, err


def iperf3_test(clients: dict[str, paramiko.SSHClient], test: dict[str, Any]) -> dict[str, Any]:
    """One-off server on the server host (ready when it says it listens), then the client."""
    port = str(test["port"])
    server = clients[test["server"]].get_transport().open_session()  # type: ignore[union-attr]
    server.settimeout(10)
    server.exec_command(shlex.join(["iperf3", "-s", "-1", "--forceflush", "-p", port]))
    said = b""
    while b"Server listening" not in said:
        chunk = server.recv(4096)
        if not chunk:
            raise SystemExit(f"iperf3 server on {test['server']} ended: {said.decode()[-300:]}")
        said += chunk
    client_argv = ["iperf3", "-J", "-c", test["address"], "-p", port, "-t", str(test["duration_s"])]
    client_argv += test.get("extra", [])  # the cell's own flags (-P 2, -R, -w 256K)
    status, out, err = run(clients[test["client"]], shlex.join(client_argv))
    if status != 0:
        raise SystemExit(f"iperf3 client failed on {test['client']}: {(out + err)[-400:]}")
    while server.recv(65536):  # the server's own account, until it exits after its one test
        pass
    server.close()
    received = json.loads(out)["end"]["sum_received"]
    return {
        "id": test["id"],
        "bits_per_second": received["bits_per_second"],
        "seconds": received["seconds"],
    }


def fio_test(clients: dict[str, paramiko.SSHClient], test: dict[str, Any]) -> dict[str, Any]:
    """fio in a fresh directory on the host, removed after, in one round trip."""
    directory = shlex.quote(test["directory"])
    fio = shlex.join(test["argv"])
    script = f"mkdir -p {directory} && {fio}; rc=$?; rm -rf {directory}; exit $rc"
    status, out, err = run(clients[test["host"]], shlex.join(["sh", "-c", script]))
    if status != 0:
        raise SystemExit(f"fio failed: {err.strip()}")
    job = json.loads(out[out.index("{") :])["jobs"][0]["write"]
    return {"id": test["id"], "bytes_per_second": job["bw_bytes"], "seconds": job["runtime"] / 1000}


def main() -> None:
    spec = json.load(sys.stdin)
    script = facts_script(json.loads(sys.argv[1]) if len(sys.argv) > 1 else [])
    started = time.perf_counter()
    hosts: dict[str, dict[str, Any]] = spec["hosts"]
    with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
        clients = dict(zip(hosts, pool.map(connect, hosts.values()), strict=True))
        facts = list(pool.map(lambda c: run(c, shlex.join(["sh", "-c", script])), clients.values()))
    if any(status != 0 for status, _, _ in facts):
        raise SystemExit("facts failed")
    kinds = {"iperf3": iperf3_test, "fio": fio_test}
    results = [kinds[test["kind"]](clients, test) for test in spec["tests"]]
    for client in clients.values():
        client.close()
    wall_s = time.perf_counter() - started
    measured_s = sum(r["seconds"] for r in results)
    print(json.dumps({"wall_s": wall_s, "measured_s": measured_s, "tests": results}))


if __name__ == "__main__":
    main()
