"""The inventory ``nasplan validate`` checks a plan against before its lab is up: the same host
vars ``lab up`` will write (here the iSCSI target's), so an example plan validates as it is."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.lab import iscsi
from nasplan.lab.preview import preview_inventory

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "plans" / "examples"


def test_validate_checks_the_iscsi_example_before_its_lab_is_up(tmp_path: Path) -> None:
    for name in ("lab-freenas.yaml", "freenas-smb-iscsi.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    result = CliRunner().invoke(main, ["validate", str(tmp_path / "freenas-smb-iscsi.yaml")])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "ok"
    assert "is not there yet (the lab is not up)" in result.stderr


def test_the_preview_has_the_iscsi_vars_lab_up_writes(tmp_path: Path) -> None:
    state_dir = tmp_path / ".lab" / "is-freenas"
    previewed = preview_inventory(EXAMPLES / "lab-freenas.yaml", state_dir)
    # what `lab up` writes: the target's files made from the same lab file, then read back
    iscsi.setup_iscsi(state_dir / "hosts" / "nas", "nas", {"lun_size": "1GiB", "chap": True})
    written = iscsi.inventory_vars(state_dir / "hosts" / "nas")
    assert previewed["hosts"]["nas"]["vars"]["iscsi"] == written["iscsi"]
    assert written["iscsi"]["lun_size_bytes"] == 2**30
    assert written["iscsi"]["chap_user"] == iscsi.CHAP_USER


@pytest.mark.parametrize(
    "options", [{}, {"chap": False}, {"lun_size": "16MiB", "chap": True}], ids=str
)
def test_target_settings_are_what_setup_writes(tmp_path: Path, options: dict[str, object]) -> None:
    files = iscsi.setup_iscsi(tmp_path, "Nas", options)
    assert iscsi.inventory_vars(tmp_path) == iscsi.vars_of(
        iscsi.target_settings("Nas", options), files
    )
    assert files.secret_path.exists() == bool(options.get("chap", True))
