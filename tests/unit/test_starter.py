"""``nasplan init`` (nasplan/starter): a starter inventory, plan and lab a user can run."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.plan import load_plan
from nasplan.lab import preview
from nasplan.lab.model import load_lab


def test_init_writes_a_plan_that_loads_against_its_inventory_and_its_lab(
    tmp_path: Path,
) -> None:
    result = CliRunner().invoke(main, ["init", str(tmp_path / "first")])
    assert result.exit_code == 0, result.output
    first = tmp_path / "first"
    assert sorted(p.name for p in first.iterdir()) == ["inventory.yaml", "lab.yaml", "plan.yaml"]
    plan = load_plan(first / "plan.yaml")
    assert [t.id for t in plan.tests] == ["net[link=lan]", "net-back[link=lan]", "smb[link=lan]",
                                          "disk"]  # fmt: skip
    assert {t.kind for t in plan.tests} == {"iperf3", "transfer", "disk"}
    lab = load_lab(first / "lab.yaml")
    assert lab.name == "starter-lab"
    inventory = preview.write_preview(
        first / ".lab" / "starter-lab" / "inventory.yaml", tmp_path / "lab-inventory.yaml"
    )
    assert inventory is not None
    on_lab = load_plan(first / "plan.yaml", tmp_path / "lab-inventory.yaml")
    assert [t.id for t in on_lab.tests] == [t.id for t in plan.tests]
    # the lab's SMB share and user are the plan's own
    smb = on_lab.inventory.hosts["nas"].template_view()["smb"]
    assert (smb["share"], smb["user"]) == (plan.resolved["vars"]["share"],
                                           plan.resolved["vars"]["smb_user"])  # fmt: skip
    said = result.output.splitlines()
    assert said[:3] == [f"wrote {first / name}" for name in ("inventory.yaml", "plan.yaml",
                                                              "lab.yaml")]  # fmt: skip
    assert f"  sudo nasplan lab up {first}/lab.yaml" in said


def test_init_never_overwrites_without_force(tmp_path: Path) -> None:
    (tmp_path / "plan.yaml").write_text("mine\n")
    result = CliRunner().invoke(main, ["init", str(tmp_path)])
    assert result.exit_code == 2
    assert result.output == (
        f"nasplan: {tmp_path / 'plan.yaml'}: already there, nothing written (another "
        "directory, or --force to overwrite)\n"
    )
    assert (tmp_path / "plan.yaml").read_text() == "mine\n"
    assert not (tmp_path / "inventory.yaml").exists()
    assert CliRunner().invoke(main, ["init", str(tmp_path), "--force"]).exit_code == 0
    assert (tmp_path / "plan.yaml").read_text().startswith("# A first look at a NAS")


@pytest.mark.parametrize("name", ["inventory.yaml", "plan.yaml", "lab.yaml"])
def test_the_starter_files_name_no_address_outside_the_benchmark_range(name: str) -> None:
    import re

    text = (Path(__file__).resolve().parents[2] / "nasplan" / "starter" / name).read_text()
    for address in re.findall(r"\b\d+\.\d+\.\d+\.\d+\b", text):
        assert address.startswith(("198.18.", "198.19.")), address
