"""Inputs that are valid (or were, before the schema tightened) and used to crash nasplan."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from nasplan.input.plan import load_plan
from nasplan.measure import methods
from nasplan.measure.kinds.transfer.runs import check_commands
from nasplan.measure.kinds.transfer.runs import cleanup as _cleanup
from nasplan.measure.methods.base import Transfer
from nasplan.measure.record import skipped
from nasplan.measure.tools import fio, transfer
from nasplan.remote.runner import LocalRunner
from nasplan.report import render_report
from nasplan.results import load_run

SAMPLE_RUN = Path(__file__).parent.parent / "fixtures" / "runs" / "sample"
INVENTORY = """\
hosts:
  nas: {address: 198.19.80.2, interfaces: {lan: {name: eth0}}}
  ws: {address: 198.19.80.3}
"""
PLAN = """\
name: every-kind
inventory: inventory.yaml
tests:
  - {kind: iperf3, id: net, server: nas, client: ws}
  - {kind: latency, id: ping, server: nas, client: ws}
  - {kind: disk, id: fio, host: nas, path: /srv}
  - {kind: transfer, id: copy, server: nas, client: ws, method: copy, mounted_path: /mnt/nas}
"""


def _smb(share: str, remote_dir: str | None = None) -> Transfer:
    return Transfer(
        methods.method("smb"),
        ("write", "read"),
        1024,
        "nasplan-x.bin",
        share=share,
        smb_user="u",
        password_env="P",
        remote_dir=remote_dir,
    )


@pytest.mark.parametrize(("share", "remote_dir"), [("a;b", None), ("data", "a b"), ("d", "x;y")])
def test_smb_value_smbclient_would_split_is_refused_before_anything_is_made(
    share: str, remote_dir: str | None
) -> None:
    with pytest.raises(ValueError, match="smbclient commands cannot carry"):
        check_commands(_smb(share, remote_dir), "198.19.80.2")


def test_smb_password_file_is_removed_even_when_the_share_name_is_refused() -> None:
    """Cleanup after a refused share name used to raise before removing the client's temp dir."""
    client = LocalRunner()
    made = client.run_script(
        transfer.setup_script(1024, with_auth=True), stdin=transfer.smb_auth_file("u", "secret")
    )
    local_dir = made.stdout.strip().splitlines()[-1]
    assert (Path(local_dir) / transfer.AUTH_NAME).read_text().endswith("password = secret\n")
    problems = _cleanup(_smb("a;b"), client, client, local_dir, "198.19.80.2")
    assert not Path(local_dir).exists()  # the password file is gone
    assert problems and "smbclient commands cannot carry" in problems[0]


def test_report_renders_every_kind_skipped_after_a_failed_network_setup(tmp_path: Path) -> None:
    """A latency test skipped by a failed network setup crashed the renderer (mtu_probe)."""
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "plan.yaml").write_text(PLAN)
    plan = load_plan(tmp_path / "plan.yaml")
    run = copy.deepcopy(load_run(SAMPLE_RUN))
    run["tests"] = [skipped(t, "network setup failed: eth9 missing") for t in plan.tests]
    text = render_report(run)
    for test in plan.tests:
        assert f"{test.id}" in text
    assert text.count("network setup failed: eth9 missing") >= len(plan.tests)


@pytest.mark.parametrize(
    "path", ["/srv/a;b/fio.bin", "/srv/a:b/fio.bin", "/srv/$jobname/fio.bin", "srv/fio.bin"]
)
def test_fio_file_names_fio_would_misread_are_refused(path: str) -> None:
    with pytest.raises(ValueError, match="fio would not read"):
        fio.fio_argv("fio", path, fio.FioParams(rw="write", size_bytes=fio.DEFAULT_BLOCK_BYTES))


def test_fio_file_name_with_plain_characters_passes() -> None:
    argv = fio.fio_argv(
        "fio",
        "/share/Public Files/x/fio.bin",
        fio.FioParams(rw="read", size_bytes=fio.DEFAULT_BLOCK_BYTES),
    )
    assert "--filename=/share/Public Files/x/fio.bin" in argv


@pytest.mark.parametrize("path", ["a b", "$(id)", "-e", "x;y", "x:y", "*"])
def test_rsync_remote_path_the_nas_shell_would_split_is_refused(path: str) -> None:
    with pytest.raises(ValueError, match="rsync"):
        transfer.rsync_remote(transfer.SshOptions(user="u"), "198.19.80.2", path)


def test_whole_number_floats_reach_the_tools_as_integers(tmp_path: Path) -> None:
    """``parallel: 2.0`` is an integer to JSON Schema; iperf3 would get ``-P 2.0``."""
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "plan.yaml").write_text(
        PLAN.replace("id: net,", "id: net, parallel: 2.0, duration_s: 1.0,")
    )
    settings = load_plan(tmp_path / "plan.yaml").tests[0].settings
    assert settings["parallel"] == 2 and isinstance(settings["parallel"], int)
    assert isinstance(settings["duration_s"], int)
