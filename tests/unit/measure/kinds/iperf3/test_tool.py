"""iperf3: argv, server scripts, the parser on real 3.12 output, real runs in namespaces."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from nasplan.measure.kinds.iperf3 import server as iperf3_server
from nasplan.measure.kinds.iperf3.server import (
    READY_MARKER,
    port_check_script,
    server_launch_script,
)
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.kinds.iperf3.tool import (
    CONTRACT_KEYS,
    Iperf3Error,
    client_argv,
    is_server_busy,
    parse,
    parse_client,
    repetition_fields,
    server_start_script,
    server_stop_script,
    temp_paths,
)

FIXTURES = Path(__file__).resolve().parents[4] / "fixtures" / "iperf3" / "3.12"
RUN_SCHEMA = Path(__file__).resolve().parents[5] / "nasplan" / "schemas" / "run.schema.json"
SUCCESS_FIXTURES = sorted(
    p.name
    for p in FIXTURES.glob("*.json")
    if not p.name.startswith("error-") and "server" not in p.name
)


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def end_of(name: str) -> dict[str, Any]:
    """The ``end`` section of a fixture, decoded independently of the parser under test."""
    text = fixture(name)
    # the result is the last object opened at the start of a line
    doc: dict[str, Any] = json.loads(text if text[0] == "{" else text[text.rindex("\n{\n") + 1 :])
    return dict(doc["end"])


# --- client argv ---------------------------------------------------------------------------


def test_client_argv_default_is_json_tcp_with_connect_timeout() -> None:
    argv = client_argv("/usr/bin/iperf3", "198.18.0.10", Iperf3Params(duration_s=10))
    assert argv == [
        "/usr/bin/iperf3", "-J", "-c", "198.18.0.10", "-p", "5201", "-t", "10",
        "--connect-timeout", "3000",
    ]  # fmt: skip


def test_client_argv_carries_every_option() -> None:
    params = Iperf3Params(
        duration_s=5, omit_s=1, parallel=4, reverse=True, bidir=True, protocol="udp",
        udp_bitrate_bits_per_second=100_000_000, zerocopy=True, window_bytes=262144,
        mss_bytes=1400, port=5301, bind_address="198.18.0.20",
    )  # fmt: skip
    argv = client_argv("iperf3", "198.18.0.10", params)
    assert argv == [
        "iperf3", "-J", "-c", "198.18.0.10", "-p", "5301", "-t", "5", "--connect-timeout", "3000",
        "-O", "1", "-P", "4", "-R", "--bidir", "-u", "-b", "100000000", "-Z", "-w", "262144",
        "-M", "1400", "-B", "198.18.0.20",
    ]  # fmt: skip


def test_client_argv_omits_connect_timeout_for_iperf3_older_than_3_2() -> None:
    params = Iperf3Params(duration_s=2)
    assert "--connect-timeout" not in client_argv("iperf3", "h", params, iperf3_version="3.1.3")
    assert "--connect-timeout" in client_argv("iperf3", "h", params, iperf3_version="iperf 3.12")


# --- parser on real output -----------------------------------------------------------------


def test_parse_tcp_single_stream() -> None:
    rep = parse(fixture("tcp-single.json"))
    assert rep["bits_per_second"] == pytest.approx(956948139.91649473)
    assert rep["received_bits_per_second"] == rep["bits_per_second"]
    assert rep["sent_bits_per_second"] == pytest.approx(966286555.675161)
    assert rep["bytes"] == 239393496
    assert rep["duration_s"] == pytest.approx(2.001308)
    assert rep["retransmits"] == 0
    assert rep["cpu_client_percent"] == pytest.approx(1.4452708608507008)
    assert rep["cpu_server_percent"] == pytest.approx(4.7651264596057281)
    assert rep["protocol"] == "tcp"
    assert rep["iperf3_version"] == "3.12"
    assert rep["streams"] == 1
    assert rep["tcp_mss_bytes"] == 1448
    assert rep["jitter_ms"] is None and rep["lost_packets"] is None
    assert [(i["start_s"], i["end_s"]) for i in rep["intervals"]] == [
        (0, 1.000104),
        (1.000104, 2.000093),
    ]
    assert rep["intervals"][0]["bits_per_second"] == pytest.approx(982788654.62747729)
    assert rep["intervals"][1]["retransmits"] == 0


@pytest.mark.parametrize("name", SUCCESS_FIXTURES)
def test_parse_rate_is_what_the_receiver_got(name: str) -> None:
    end = end_of(name)
    rep = parse(fixture(name))
    assert rep["bits_per_second"] == end["sum_received"]["bits_per_second"]
    assert rep["sent_bits_per_second"] == end["sum_sent"]["bits_per_second"]
    assert rep["bytes"] == end["sum_received"]["bytes"]


def test_parse_counts_retransmits_in_total_and_per_interval() -> None:
    rep = parse(fixture("tcp-retransmits.json"))
    assert rep["retransmits"] == 584
    assert [i["retransmits"] for i in rep["intervals"]] == [268, 316]
    assert rep["bits_per_second"] == pytest.approx(191264426.2726036)


def test_parse_parallel_streams() -> None:
    rep = parse(fixture("tcp-parallel-2.json"))
    assert rep["streams"] == 2
    assert rep["bits_per_second"] == pytest.approx(957099760.6575325)


def test_parse_reverse_reports_the_client_as_receiver() -> None:
    rep = parse(fixture("tcp-reverse.json"))
    assert rep["bits_per_second"] == pytest.approx(957364594.640133)
    assert rep["sent_bits_per_second"] == pytest.approx(963342196.126036)
    assert rep["retransmits"] == 0  # the server sent; iperf3 hands its count to the client
    # the client only received, so its intervals carry no retransmit counts
    assert [i["retransmits"] for i in rep["intervals"]] == [None, None]


def test_parse_bidir_reports_both_directions() -> None:
    rep = parse(fixture("tcp-bidir.json"))
    assert rep["bits_per_second"] == pytest.approx(951588331.1709415)
    assert rep["reverse_bits_per_second"] == pytest.approx(952993678.560571)
    assert rep["reverse_sent_bits_per_second"] == pytest.approx(962508343.940956)
    assert rep["reverse_bytes"] == 238627592
    assert rep["reverse_retransmits"] == 0
    assert rep["intervals"][0]["reverse_bits_per_second"] == pytest.approx(953554764.937819)
    assert "reverse_bits_per_second" not in parse(fixture("tcp-single.json"))


def test_parse_udp_reports_loss_and_jitter_not_retransmits() -> None:
    rep = parse(fixture("udp-100m.json"))
    assert rep["protocol"] == "udp"
    assert rep["bits_per_second"] == pytest.approx(99947141.92010497)
    assert rep["sent_bits_per_second"] == pytest.approx(99953338.33308333)
    assert rep["retransmits"] is None
    assert rep["jitter_ms"] == pytest.approx(0.002096205248629066)
    assert rep["lost_packets"] == 0
    assert rep["packets"] == 17258
    assert rep["lost_percent"] == 0
    assert rep["tcp_mss_bytes"] is None


def test_parse_drops_omitted_intervals() -> None:
    rep = parse(fixture("tcp-omit-1.json"))
    assert rep["omit_s"] == 1
    assert len(rep["intervals"]) == 2  # the raw output holds 3, the first one omitted
    assert rep["bits_per_second"] == pytest.approx(956233720.988934)


def test_parse_zerocopy_and_mss() -> None:
    assert parse(fixture("tcp-zerocopy.json"))["bits_per_second"] == pytest.approx(957094818.98149)
    assert parse(fixture("tcp-mss-window.json"))["tcp_mss_bytes"] == 1000


def test_parse_skips_text_before_the_json() -> None:
    banner = parse(fixture("text-before-json-banner.json"))
    assert banner["bits_per_second"] == pytest.approx(957811139.5819285)
    # -d prints debug JSON objects before the result: those are not the result
    debug = parse(fixture("text-before-json-debug.json"))
    assert debug["bits_per_second"] == pytest.approx(610524599.708879)
    assert debug["bytes"] == 262144


def test_parse_raises_iperf3s_own_message_on_connection_refused() -> None:
    with pytest.raises(Iperf3Error) as info:
        parse(fixture("error-connection-refused.json"))
    assert str(info.value) == "unable to connect to server: Connection refused"
    assert not is_server_busy(info.value)


def test_parse_error_keeps_the_raw_output_for_the_run_directory() -> None:
    raw = fixture("error-connection-refused.json")
    with pytest.raises(Iperf3Error) as info:
        parse(raw)
    assert info.value.raw == raw
    with pytest.raises(Iperf3Error) as empty:
        parse("")
    assert empty.value.raw is None


@pytest.mark.parametrize(
    "bad",
    [
        {"duration_s": 2, "protocol": "sctp"},
        {"duration_s": 0},
        {"duration_s": 2, "parallel": 0},
        {"duration_s": 2, "omit_s": -1},
    ],
)
def test_params_reject_what_iperf3_would_refuse(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Iperf3Params(**bad)


def test_parse_recognises_a_busy_server() -> None:
    with pytest.raises(Iperf3Error) as info:
        parse(fixture("error-server-busy.json"))
    assert str(info.value) == "the server is busy running a test. try again later"
    assert is_server_busy(info.value)


@pytest.mark.parametrize("raw", ["", "iperf3: command not found\n", '{"start": {"version": "x"'])
def test_parse_without_a_result_says_what_came_instead(raw: str) -> None:
    with pytest.raises(Iperf3Error, match="no iperf3 JSON result"):
        parse(raw)


def test_a_client_that_printed_no_json_is_failed_with_what_it_said_on_stderr() -> None:
    # iperf3 3.12 exits 0 even on errors; its reason is then on stderr only
    with pytest.raises(Iperf3Error, match=r"^ws: iperf3: error - unable to connect") as info:
        parse_client("", "iperf3: error - unable to connect to server\n", "ws")
    assert info.value.raw is None
    with pytest.raises(Iperf3Error, match="Connection refused"):  # its JSON says it all
        parse_client(fixture("error-connection-refused.json"), "noise", "ws")
    assert parse_client(fixture("tcp-single.json"), "", "ws")["streams"] == 1


@pytest.mark.parametrize("name", SUCCESS_FIXTURES)
def test_repetition_fields_fit_the_run_json_contract(name: str) -> None:
    schema = json.loads(RUN_SCHEMA.read_text())
    repetition = {"index": 1, "status": "ok", "error": None, "raw_file": "raw/t/rep-1.json"}
    repetition.update(repetition_fields(parse(fixture(name))))
    jsonschema.validate(repetition, {"$ref": "#/$defs/repetition", "$defs": schema["$defs"]})
    assert set(repetition_fields({})) == set(CONTRACT_KEYS)


# --- the server scripts, run by real shells -----------------------------------------------------


def shells(tmp_path: Path) -> list[tuple[str, dict[str, str]]]:
    """(shell, environment) pairs: dash; busybox ash with busybox applets first on PATH; and
    busybox alone, as on a QTS or DSM shell (no iproute2 `ss`: readiness from /proc/net/tcp)."""
    busybox, iperf3 = shutil.which("busybox"), shutil.which("iperf3")
    assert busybox and iperf3, "make test installs busybox and iperf3"
    applets = tmp_path / "busybox-bin"
    applets.mkdir()
    for applet in ("sh", "sleep", "grep", "cat", "rm", "hostname", "kill"):
        (applets / applet).symlink_to(busybox)
    alone = tmp_path / "busybox-only"
    alone.mkdir()
    listed = subprocess.run([busybox, "--list"], capture_output=True, text=True, check=True)
    for applet in listed.stdout.split():
        (alone / applet).symlink_to(busybox)
    (alone / "iperf3").symlink_to(iperf3)
    assert not (alone / "ss").exists()
    return [
        ("sh", dict(os.environ)),
        (str(applets / "sh"), {**os.environ, "PATH": f"{applets}:{os.environ['PATH']}"}),
        (str(alone / "sh"), {**os.environ, "PATH": str(alone)}),
    ]


def run_sh(shell: str, env: dict[str, str], script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [shell, "-c", script], env=env, capture_output=True, text=True, timeout=30
    )


def test_start_script_refuses_a_port_already_listening(tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        pidfile, logfile = tmp_path / "s.pid", tmp_path / "s.log"
        # again and again: the listener of someone else's must never pass for the server
        # (the server's subshell, before it has execed iperf3, is no iperf3 yet)
        for shell, env in shells(tmp_path) * 10:
            done = run_sh(
                shell, env, server_start_script("iperf3", port, str(pidfile), str(logfile))
            )
            assert done.returncode == 3, done.stderr
            assert f"iperf3 port {port} is already in use" in done.stderr
            assert is_server_busy(done.stderr)
            assert not pidfile.exists()


def test_port_check_tells_a_taken_port_from_a_free_one(tmp_path: Path) -> None:
    environments = shells(tmp_path)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        for shell, env in environments:
            done = run_sh(shell, env, port_check_script(port))
            assert done.returncode == 3, (shell, done.stderr)
            assert f"iperf3 port {port} is already in use" in done.stderr
            assert is_server_busy(done.stderr)
    for shell, env in environments:  # closed now: free
        done = run_sh(shell, env, port_check_script(port))
        assert (done.returncode, done.stderr) == (0, ""), shell


def test_launch_script_names_an_iperf3_that_is_not_there(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-iperf3")
    for shell, env in shells(tmp_path):
        done = run_sh(shell, env, server_launch_script(missing, 1, "/tmp/x.pid", "/tmp/x.log"))
        assert (done.returncode, done.stderr.strip()) == (1, f"nasplan: {missing}: not found")
        assert READY_MARKER not in done.stdout


def _silent_server(tmp_path: Path) -> Path:
    """An "iperf3" that starts, stays up and never listens (it sleeps; its PIDs are appended to
    ``pids`` beside it); nasplan must stop it."""
    fake = tmp_path / "never listens"
    fake.write_text(f"#!/bin/sh\necho $$ >> '{tmp_path / 'pids'}'\nexec sleep 30\n")
    fake.chmod(0o755)
    return fake


def _still_running(tmp_path: Path) -> list[int]:
    pids = [int(line) for line in (tmp_path / "pids").read_text().split()]
    return [pid for pid in pids if Path(f"/proc/{pid}").exists() and _not_zombie(pid)]


def _not_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_start_script_gives_up_on_a_server_that_never_listens(tmp_path: Path) -> None:
    pidfile, logfile = tmp_path / "p i'd.pid", tmp_path / "log"
    fake = _silent_server(tmp_path)
    for shell, env in shells(tmp_path):
        began = time.monotonic()
        script = server_start_script(str(fake), 1, str(pidfile), str(logfile), ready_timeout_s=1)
        done = run_sh(shell, env, script)
        assert done.returncode == 1
        assert "iperf3 server did not listen on port 1 within 1 s" in done.stderr
        # bounded: the limit counts its naps, which a loaded host stretches (seen: 4.7 s with
        # six test runs on two busy CPUs), far below the fake's 30 s all the same
        assert time.monotonic() - began < 15
    assert _still_running(tmp_path) == []  # each server that never listened was stopped


def test_start_script_fails_at_once_when_the_server_ends_before_it_listens(
    tmp_path: Path,
) -> None:
    # /bin/true starts and ends at once, as an iperf3 refusing its options or its port would
    pidfile, logfile = tmp_path / "p.pid", tmp_path / "log"
    for shell, env in shells(tmp_path):
        began = time.monotonic()
        script = server_start_script("true", 1, str(pidfile), str(logfile), ready_timeout_s=60)
        done = run_sh(shell, env, script)
        assert done.returncode == 1
        assert "nasplan: true -s ended before it listened on port 1" in done.stderr
        assert time.monotonic() - began < 15  # not the 60 s readiness wait (a loaded host)
        assert not pidfile.exists() and not logfile.exists()


def test_start_script_names_an_iperf3_that_is_not_there(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-iperf3")
    for shell, env in shells(tmp_path):
        done = run_sh(shell, env, server_start_script(missing, 1, "/tmp/x.pid", "/tmp/x.log"))
        assert (done.returncode, done.stderr.strip()) == (1, f"nasplan: {missing}: not found")


def test_start_script_stays_bounded_where_sleep_takes_whole_seconds(tmp_path: Path) -> None:
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sleep").write_text(
        '#!/bin/sh\ncase $1 in *.*) echo "sleep: invalid number" >&2; exit 1;; esac\n'
        'exec /bin/sleep "$@"\n'
    )
    (shim / "sleep").chmod(0o755)
    env = {**os.environ, "PATH": f"{shim}:{os.environ['PATH']}"}
    fake = _silent_server(tmp_path)
    began = time.monotonic()
    script = server_start_script(
        str(fake), 1, str(tmp_path / "p"), str(tmp_path / "l"), ready_timeout_s=2
    )
    done = run_sh("sh", env, script)
    assert done.returncode == 1
    assert 1.5 < time.monotonic() - began < 15  # two 1 s sleeps, not twenty (a loaded host)


def test_stop_script_with_nothing_running_prints_nothing_and_succeeds(tmp_path: Path) -> None:
    for shell, env in shells(tmp_path):
        done = run_sh(
            shell, env, server_stop_script(str(tmp_path / "none.pid"), str(tmp_path / "x"))
        )
        assert (done.returncode, done.stdout) == (0, "")


def test_stop_script_never_kills_a_process_that_is_not_iperf3(tmp_path: Path) -> None:
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        pidfile = tmp_path / "s.pid"
        pidfile.write_text(f"{sleeper.pid}\n")
        done = run_sh("sh", dict(os.environ), server_stop_script(str(pidfile), str(tmp_path / "l")))
        assert done.returncode == 0
        assert sleeper.poll() is None
        assert not pidfile.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_temp_paths_are_per_token_under_tmp() -> None:
    assert temp_paths("run 1/x", 5201) == (
        "/tmp/nasplan-iperf3-run_1_x-5201.pid",
        "/tmp/nasplan-iperf3-run_1_x-5201.log",
    )


def test_client_script_passes_the_clients_output_and_exit_status_through(tmp_path: Path) -> None:
    """The client runs under the lease's watchdog; its JSON (kept byte for byte) and its exit
    status must be its own, under dash and BusyBox alike."""
    fake = tmp_path / "iperf3"
    fake.write_text('#!/bin/sh\nprintf \'{"args": "%s"}\\n\' "$*"\nexit 7\n')
    fake.chmod(0o755)
    for shell, env in shells(tmp_path):
        done = run_sh(shell, env, iperf3_server.client_script([str(fake), "-J", "-c", "a b"]))
        assert (done.returncode, done.stdout) == (7, '{"args": "-J -c a b"}\n'), shell
