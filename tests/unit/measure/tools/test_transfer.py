"""File transfers: tool parsers on real captured output, the commands built, analysis, report."""

from __future__ import annotations

import copy
import os
import shlex
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError
from nasplan.input.plan import load_plan
from nasplan.measure import methods
from nasplan.measure.methods.base import Transfer
from nasplan.measure.tools import transfer
from nasplan.measure.verdicts import annotated
from nasplan.remote.runner import LocalRunner
from nasplan.report import render_report
from nasplan.results import load_run, run_errors

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "transfer"
SAMPLE_RUN = Path(__file__).resolve().parents[3] / "fixtures" / "runs" / "sample"
MIB16 = 16 * 2**20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- parsers on real output ------------------------------------------------------------------


def test_smbclient_put_rate_is_read_as_kibibytes_per_second() -> None:
    parsed = transfer.parse_smbclient(fixture("smbclient-4.17-put.txt"))
    assert parsed["tool_bytes_per_second"] == pytest.approx(22474.6 * 1024)
    assert parsed["bytes"] is None


def test_smbclient_get_gives_rate_and_size() -> None:
    parsed = transfer.parse_smbclient(fixture("smbclient-4.17-get.txt"))
    assert parsed["tool_bytes_per_second"] == pytest.approx(20924.6 * 1024)
    assert parsed["bytes"] == MIB16


@pytest.mark.parametrize(
    ("name", "status"),
    [
        ("smbclient-4.17-logon-failure.txt", "NT_STATUS_LOGON_FAILURE"),
        ("smbclient-4.17-get-missing.txt", "NT_STATUS_OBJECT_NAME_NOT_FOUND"),
    ],
)
def test_smbclient_failures_name_the_nt_status(name: str, status: str) -> None:
    with pytest.raises(transfer.TransferParseError, match=status):
        transfer.parse_smbclient(fixture(name))


def test_rsync_stats_with_and_without_thousands_separators() -> None:
    push = transfer.parse_rsync(fixture("rsync-3.5-push-human.txt"))
    pull = transfer.parse_rsync(fixture("rsync-3.5-pull.txt"))
    assert push == {"tool_bytes_per_second": pytest.approx(11_187_617.33), "bytes": MIB16}
    assert pull == {"tool_bytes_per_second": pytest.approx(11_187_625.33), "bytes": MIB16}


def test_rsync_missing_file_is_an_error_even_with_a_stats_block() -> None:
    with pytest.raises(transfer.TransferParseError, match="link_stat"):
        transfer.parse_rsync(fixture("rsync-3.5-pull-missing.txt"))


def test_dd_summary() -> None:
    parsed = transfer.parse_dd(fixture("dd-9.1-write-fsync.txt"))
    assert parsed["bytes"] == MIB16
    assert parsed["tool_bytes_per_second"] == pytest.approx(MIB16 / 0.0153527)
    with pytest.raises(transfer.TransferParseError, match="dd: failed to open"):
        transfer.parse_dd(fixture("dd-9.1-missing.txt"))


@pytest.mark.parametrize(
    ("name", "duration_s", "exited"),
    [
        ("timed-smbclient-get.txt", 0.746324953, 0),
        ("timed-rsync-push.txt", None, 0),
        ("timed-dd-write.txt", 0.017025099, 0),
        ("timed-smbclient-logon-failure.txt", 0.030974488, 1),
    ],
)
def test_timed_output_splits_tool_output_from_the_markers(
    name: str, duration_s: float | None, exited: int
) -> None:
    seconds, status, output = transfer.parse_timed(fixture(name))
    if duration_s is not None:
        assert seconds == pytest.approx(duration_s)
    assert 0 < seconds < 5
    assert status == exited
    assert transfer.ELAPSED_MARK not in output and output.strip()


def test_timed_output_without_markers_is_an_error() -> None:
    with pytest.raises(transfer.TransferParseError, match="no elapsed time"):
        transfer.parse_timed(fixture("smbclient-4.17-put.txt"))


# --- commands --------------------------------------------------------------------------------


def test_timed_script_runs_for_real_and_keeps_the_exit_status() -> None:
    script = transfer.timed_script(["sh", "-c", "echo out; echo err >&2; exit 3"], [["true"]])
    result = LocalRunner().run_script(script, timeout_s=10)
    seconds, exited, output = transfer.parse_timed(result.stdout)
    assert (result.exited, exited) == (3, 3)
    assert output.split() == ["out", "err"]
    assert 0 < seconds < 2


# ``date`` as a host whose wall clock someone sets while a copy runs: once FLAG exists, the
# clock it shows is STEP seconds off (GNU date does the formatting)
DATE_SHIM = """#!/bin/sh
now=$(/bin/date +%s.%N)
[ -e "$NASPLAN_UNIT_FLAG" ] &&
  now=$(echo "$now" | awk -v d="$NASPLAN_UNIT_STEP" '{printf "%.9f", $1 + d}')
exec /bin/date -d "@$now" "$@"
"""


@pytest.mark.parametrize("step_s", [-3600, -5, 5])
def test_a_wall_clock_step_mid_copy_changes_no_duration(tmp_path: Path, step_s: int) -> None:
    shim = tmp_path / "bin" / "date"
    shim.parent.mkdir()
    shim.write_text(DATE_SHIM)
    shim.chmod(0o755)
    flag = tmp_path / "stepped"
    env = (
        f"PATH={shlex.quote(str(shim.parent))}:$PATH NASPLAN_UNIT_FLAG={shlex.quote(str(flag))}"
        f" NASPLAN_UNIT_STEP={step_s}; export PATH NASPLAN_UNIT_FLAG NASPLAN_UNIT_STEP\n"
    )
    copy = ["sh", "-c", 'sleep 0.3; touch "$0"; sleep 0.3', str(flag)]
    result = LocalRunner().run_script(env + transfer.timed_script(copy), timeout_s=10)
    timed = transfer.parse_timing(result.stdout)
    assert 0.55 < timed.duration_s < 1.5  # the monotonic clock's, not the wall clock's
    assert timed.step_s is not None and timed.step_s == pytest.approx(step_s, abs=0.2)
    assert timed.wall_s is not None and timed.wall_s == pytest.approx(step_s + 0.6, abs=0.5)


@pytest.mark.skipif(shutil.which("busybox") is None, reason="needs busybox")
def test_a_date_without_nanoseconds_is_no_clock_step(tmp_path: Path) -> None:
    """BusyBox's ``date`` (QTS, DSM) prints ``%N`` as it is: its whole seconds are no step."""
    (tmp_path / "date").symlink_to(str(shutil.which("busybox")))
    env = f"PATH={shlex.quote(str(tmp_path))}:$PATH; export PATH\n"
    script = env + transfer.timed_script(["sleep", "0.3"])
    result = LocalRunner().run_script(f"exec busybox sh -c {shlex.quote(script)}", timeout_s=10)
    timed = transfer.parse_timing(result.stdout)
    assert timed.wall_resolution_s == 1.0 and timed.step_s is None
    assert timed.duration_s == timed.monotonic_s and 0.25 < timed.duration_s < 1.5


def test_without_a_step_the_duration_is_the_wall_clocks_nanoseconds() -> None:
    both = "x\nNASPLAN_ELAPSED_NS=3010000000\nNASPLAN_WALL_NS=3004567891\nNASPLAN_EXIT=0\n"
    timed = transfer.parse_timing(both)
    assert (timed.duration_s, timed.step_s, timed.output) == (3.004567891, None, "x\n")
    stepped = both.replace("3004567891", "-3596990000000")
    assert transfer.parse_timed(stepped)[0] == 3.01
    assert transfer.parse_timing(stepped).step_s == -3600.0
    # a host with no monotonic clock: the wall clock alone, no step said
    wall_only = "NASPLAN_WALL_NS=2000000000\nNASPLAN_EXIT=0\n"
    assert (
        transfer.parse_timing(wall_only).duration_s,
        transfer.parse_timing(wall_only).step_s,
    ) == (2.0, None)


def test_timed_script_stops_when_a_step_before_fails() -> None:
    script = transfer.timed_script(["echo", "never"], [["false"]])
    result = LocalRunner().run_script(script, timeout_s=10)
    assert result.exited == 1 and "never" not in result.stdout


def test_setup_makes_a_private_dir_with_source_and_0600_auth_file(tmp_path: Path) -> None:
    auth = transfer.smb_auth_file("nasplan", "s3cret pass")
    env_script = f"TMPDIR={shlex.quote(str(tmp_path))}; export TMPDIR\n"
    script = env_script + transfer.setup_script(MIB16 // 16, with_auth=True)
    result = LocalRunner().run_script(script, stdin=auth, timeout_s=10)
    assert result.ok, result.stderr
    local_dir = Path(result.stdout.strip())
    assert local_dir.parent == tmp_path
    assert stat.S_IMODE(local_dir.stat().st_mode) == 0o700
    auth_file = local_dir / transfer.AUTH_NAME
    assert stat.S_IMODE(auth_file.stat().st_mode) == 0o600
    assert auth_file.read_text() == "username = nasplan\npassword = s3cret pass\n"
    source = (local_dir / transfer.SOURCE_NAME).read_bytes()
    assert len(source) == MIB16 // 16 and len(set(source)) > 200  # random, not zeros
    assert LocalRunner().run(transfer.cleanup_argv(str(local_dir))).ok
    assert not local_dir.exists()


def test_smbclient_argv_takes_credentials_from_the_file_only() -> None:
    argv = transfer.smbclient_argv(
        "198.18.38.10", "data", "/tmp/d/smb-auth", transfer.smb_put("/tmp/d/source.bin", "f.bin")
    )
    assert argv == [
        "smbclient",
        "//198.18.38.10/data",
        "-A",
        "/tmp/d/smb-auth",
        "-c",
        "put /tmp/d/source.bin f.bin",
    ]
    assert "-U" not in argv


@pytest.mark.parametrize("name", ['a"b', "a b", "a;del x", "a\\b"])
def test_smbclient_command_refuses_names_it_would_split(name: str) -> None:
    with pytest.raises(ValueError, match="smbclient commands"):
        transfer.smb_put("/tmp/x", name)


def test_rsync_uses_strict_host_keys_and_the_plans_identity() -> None:
    options = transfer.SshOptions(
        user="root", port=2222, identity_file="/k/id", known_hosts="/k/known hosts"
    )
    remote = transfer.rsync_remote(options, "198.18.38.10", "/srv/x.bin")
    argv = transfer.rsync_argv(options, "/tmp/d/source.bin", remote)
    assert argv[-2:] == ["/tmp/d/source.bin", "root@198.18.38.10:/srv/x.bin"]
    assert "--ignore-times" in argv and "--whole-file" in argv
    ssh = shlex.split(argv[argv.index("-e") + 1])
    assert ssh[:5] == ["ssh", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"]
    assert "UserKnownHostsFile=/k/known hosts" in ssh
    assert ssh[ssh.index("-i") + 1] == "/k/id" and ssh[ssh.index("-p") + 1] == "2222"


def test_dd_write_flushes_inside_the_timed_command() -> None:
    assert "conv=fsync" in transfer.dd_write_argv("/a", "/mnt/nas/b")
    assert "iflag=nocache" in transfer.drop_file_cache_argv("/mnt/nas/b")


# --- a transfer record, annotated by nasplan.measure.verdicts.annotated after the run ------

TCP_MAX_1G_TC = 956_406_869.2  # bit/s: 1G shaped by tc, MTU 1500
ADDRESS = "198.18.38.10"


def record(
    write_bytes_per_second: float, read_bytes_per_second: float | None, size_bytes: int = 2**30
) -> dict[str, Any]:
    """A transfer record as transfer_test.run leaves it (params, path, directions, resources)."""
    directions = {"write": {"median": write_bytes_per_second}}
    if read_bytes_per_second is not None:
        directions["read"] = {"median": read_bytes_per_second}
    return {
        "id": "smb",
        "kind": "transfer",
        "params": {"server": "nas", "client": "ws", "address": ADDRESS, "method": "smb",
                   "size_bytes": size_bytes, "direction": "both"},
        "path": {"theoretical_bits_per_second": TCP_MAX_1G_TC, "speed_bits_per_second": 10**9},
        "directions": directions,
        "resources": {"nas": {"cpu_busy_percent_median": 20.0}, "ws": None},
    }  # fmt: skip


def iperf3_record(bits_per_second: float, *, reverse: bool) -> dict[str, Any]:
    return {
        "kind": "iperf3",
        "params": {"server": "nas", "client": "ws", "address": ADDRESS, "reverse": reverse,
                   "bidir": False},
        "summary": {"median": bits_per_second},
    }  # fmt: skip


def test_a_transfer_near_the_tcp_maximum_is_network_bound_per_direction() -> None:
    rec = record(115e6, 60e6)
    (rec,) = annotated([rec], {})
    write, read = rec["bottleneck"]["write"], rec["bottleneck"]["read"]
    assert write["verdict"] == "network-bound" and write["text"].startswith("SMB write")
    assert read["verdict"] != "network-bound"
    assert write["evidence"]["network_source"] == "theoretical"
    assert write["evidence"]["cpu_busy_percent"] == {"nas": 20.0}


def test_the_runs_own_iperf3_of_the_same_path_is_the_network_reference() -> None:
    # iperf3 measured 800 Mbit/s = 100 MB/s each way: 95 MB/s is network-bound against that,
    # though only 79 % of the TCP maximum.
    rec = record(95e6, 95e6)
    tests = [iperf3_record(800e6, reverse=False), rec, iperf3_record(800e6, reverse=True)]
    rec = annotated(tests, {})[1]
    for direction in ("write", "read"):
        verdict = rec["bottleneck"][direction]
        assert verdict["verdict"] == "network-bound", verdict["text"]
        assert verdict["evidence"]["network_source"] == "iperf3"
        assert "iperf3 800 Mbit/s" in verdict["text"]


def test_a_direction_without_result_gets_no_verdict() -> None:
    rec = record(115e6, None)
    rec["directions"]["read"] = {"median": None}
    (rec,) = annotated([rec], {})
    assert list(rec["bottleneck"]) == ["write"]


def test_cache_warning_only_when_the_file_fits_the_nas_cache() -> None:
    small, large = record(1e8, None), record(1e8, None, size_bytes=64 * 2**30)
    small, large = annotated([small, large], {"nas": 8 * 2**30, "ws": 2**40})
    assert small["cache_warning"] is not None and "1024 MiB" in small["cache_warning"]["text"]
    assert large["cache_warning"] is None


# --- plan and report -------------------------------------------------------------------------

INVENTORY = """\
hosts:
  nas: {address: 198.18.38.10, vars: {smb: {share: data, user: nasplan, password_env: SMB_PW}}}
  ws: {address: 198.18.38.11}
"""


def write_plan(tmp_path: Path, test: str) -> Path:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    path = tmp_path / "plan.yaml"
    path.write_text(f"name: t\ninventory: inventory.yaml\ntests:\n{test}")
    return path


def test_transfer_plan_resolves_smb_settings_from_inventory_vars(tmp_path: Path) -> None:
    path = write_plan(
        tmp_path,
        "  - {kind: transfer, method: smb, server: nas, client: ws, size: 64MiB,\n"
        "     share: '{{ hosts.nas.smb.share }}',\n"
        "     password_env: '{{ hosts.nas.smb.password_env }}'}\n",
    )
    (test,) = load_plan(path).tests
    assert test.kind == "transfer"
    assert (test.settings["share"], test.settings["password_env"]) == ("data", "SMB_PW")


@pytest.mark.parametrize(
    ("test", "missing"),
    [
        ("{kind: transfer, method: smb, server: nas, client: ws, share: data}", "password_env"),
        ("{kind: transfer, method: rsync, server: nas, client: ws}", "path"),
        ("{kind: transfer, method: copy, server: nas, client: ws}", "mounted_path"),
    ],
)
def test_transfer_plan_requires_what_the_method_needs(
    tmp_path: Path, test: str, missing: str
) -> None:
    with pytest.raises(InputError, match=missing):
        load_plan(write_plan(tmp_path, f"  - {test}\n"))


def transfer_record() -> dict[str, Any]:
    def rep(direction: str, index: int, seconds: float) -> dict[str, Any]:
        rate = 2**30 / seconds
        return {
            "index": index,
            "direction": direction,
            "status": "ok",
            "error": None,
            "raw_file": f"raw/smb-1g/{direction}-{index}.txt",
            "bytes": 2**30,
            "duration_s": seconds,
            "bytes_per_second": rate,
            "bits_per_second": rate * 8,
            "tool_bytes_per_second": rate * 1.01,
        }

    def summary(values: list[float]) -> dict[str, Any]:
        ordered = sorted(values)
        return {
            "metric": "bytes_per_second",
            "n": len(values),
            "min": ordered[0],
            "median": ordered[1],
            "mean": sum(values) / len(values),
            "max": ordered[-1],
            "stddev": 0.0,
            "spread_ratio": 0.01,
            "wide_spread": False,
        }

    write = [rep("write", i, s) for i, s in enumerate((9.6, 9.5, 9.7), start=1)]
    read = [rep("read", i, s) for i, s in enumerate((9.2, 9.1, 9.3), start=1)]
    return {
        "id": "smb-1g",
        "kind": "transfer",
        "name": "SMB, 1 GiB",
        "status": "ok",
        "error": None,
        "params": {"server": "nas", "client": "ws", "target": "nas", "method": "smb",
                   "size_bytes": 2**30, "repetitions": 3, "address": "198.18.0.10"},
        "path": None,
        "repetitions": write + read,
        "summary": {**summary([r["bits_per_second"] for r in write]), "metric": "bits_per_second"},
        "efficiency": None,
        "directions": {
            "write": summary([r["bytes_per_second"] for r in write]),
            "read": summary([r["bytes_per_second"] for r in read]),
        },
        "bottleneck": {"write": {"verdict": "network-bound", "text": "SMB write X",
                                 "evidence": {}}},
        "cache_warning": {"reasons": ["small_file"], "file_bytes": 2**30, "ram_bytes": 2**30,
                          "suggested_bytes": 2**31, "text": "cache-influenced: Y"},
    }  # fmt: skip


def test_report_shows_each_direction_in_mb_and_mib_per_second() -> None:
    run = copy.deepcopy(load_run(SAMPLE_RUN))
    run["tests"].append(transfer_record())
    assert run_errors(run) == []
    text = render_report(run)
    section = text[text.index("## File transfers") :]
    # 2^30 bytes in 9.6 s (the median): 111.8 MB/s (10^6 bytes/s) and 106.7 MiB/s (2^20 bytes/s).
    assert "| smb | write | 1 GiB | 9.60 s | 111.8 MB/s | 106.7 MiB/s |" in section
    assert "| smb | read | 1 GiB | 9.20 s | 116.7 MB/s | 111.3 MiB/s |" in section
    assert "| 3 | network-bound | ok |" in section
    assert "| 3 | – | ok |" in section  # read: no verdict
    assert "⚠ Cache-influenced" in section
    # The full texts are listed once, in the analysis sections.
    assert text.count("SMB write X") == 1 and text.count("cache-influenced: Y") == 1
    assert "[raw](raw/smb-1g/read-3.txt)" in section
    assert render_report(run) == text


def test_report_without_transfers_has_no_transfer_section() -> None:
    assert "## File transfers" not in render_report(load_run(SAMPLE_RUN))


def test_password_never_in_argv_of_the_built_commands() -> None:
    password = "pw-" + os.urandom(4).hex()
    auth = transfer.smb_auth_file("u", password)
    argv = transfer.smbclient_argv(
        "198.18.38.10", "data", "/d/smb-auth", transfer.smb_get("f", "/d/r")
    )
    assert password in auth
    assert password not in transfer.timed_script(argv) + transfer.setup_script(1, with_auth=True)


def test_a_file_s_rsync_write_keeps_its_temp_file_in_a_recorded_directory_beside_the_copy() -> None:
    """rsync's .NAME.XXXXXX goes into DIR (made by the NAS's rsync's own shell first): a
    nasplan-* path the run records with the copy, so the lock's clean-up can remove it."""
    rsync = methods.method("rsync")
    xfer = Transfer(rsync, ("write", "read"), 2**20, "nasplan-t-ab12.bin", remote_dir="/srv/v1")
    assert rsync.nas_copies(xfer) == [
        "/srv/v1/nasplan-t-ab12.bin",
        "/srv/v1/nasplan-t-ab12.bin.tmp",
    ]
    argv, _ = rsync.command(xfer, "write", "/tmp/d", "198.18.44.10")
    assert "--temp-dir=/srv/v1/nasplan-t-ab12.bin.tmp" in argv
    assert "--rsync-path=mkdir -p -- /srv/v1/nasplan-t-ab12.bin.tmp && rsync" in argv
    read, _ = rsync.command(xfer, "read", "/tmp/d", "198.18.44.10")  # into the client's temp dir
    assert not [a for a in read if a.startswith(("--temp-dir", "--rsync-path"))]
    with pytest.raises(ValueError, match="rsync temp dir"):
        transfer.rsync_argv(transfer.SshOptions(), "/a", "h:/b", temp_dir="/srv/x y")
