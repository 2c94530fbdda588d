"""Install as a user does: sdist -> wheel -> a fresh venv, then nasplan run from outside the tree.

The sdist and the wheel are built with setuptools' own PEP 517 hooks (no network, no build
isolation), the wheel from the unpacked sdist as ``python -m build`` does, so a file the sdist
leaves out fails here. The fresh venv borrows the test venv's dependencies through a ``.pth``
line (its own site-packages, holding the installed wheel, comes first on sys.path).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest
from keyfiles import write_private_key

from nasplan import __version__

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.name for p in (ROOT / "plans" / "examples").glob("*.yaml"))


def run(argv: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        [str(a) for a in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, f"{argv}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout + proc.stderr


def build(hook: str, source: Path, out: Path) -> Path:
    """``setuptools.build_meta.<hook>(out)`` run in ``source``; the built file's path."""
    code = (
        "import sys; from setuptools import build_meta"
        f"; print('built:', build_meta.{hook}(sys.argv[1]))"
    )
    output = run([sys.executable, "-c", code, out], cwd=source)
    built = [
        line.removeprefix("built: ") for line in output.splitlines() if line.startswith("built:")
    ]
    assert "deprecat" not in output.lower(), output  # the licence table was, four times
    return out / built[-1]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """(the sdist, its unpacked tree, the fresh venv with nasplan's wheel installed)."""
    tmp = tmp_path_factory.mktemp("install")
    sdist = build("build_sdist", ROOT, tmp / "dist")
    with tarfile.open(sdist) as archive:
        archive.extractall(tmp / "unpacked", filter="data")
    unpacked = tmp / "unpacked" / f"nasplan-{__version__}"
    wheel = build("build_wheel", unpacked, tmp / "dist")
    venv = tmp / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp)
    python = venv / "bin" / "python"
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp)
    deps = sysconfig.get_paths()["purelib"]
    Path(site.strip(), "test-venv-deps.pth").write_text(deps + "\n")
    pip = [sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-index"]
    run([*pip, "--no-deps", wheel], cwd=tmp)
    return sdist, unpacked, venv


def user_env(tmp: Path) -> dict[str, str]:
    """A user's environment: no PYTHONPATH into the tree, a HOME (and cache) of its own, with
    the key the example inventories name (validate refuses an identity_file that is missing)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["HOME"] = str(tmp)
    (tmp / ".ssh").mkdir(mode=0o700, exist_ok=True)
    write_private_key(tmp / ".ssh" / "id_ed25519")
    env.pop("XDG_CACHE_HOME", None)
    return env


def test_the_sdist_carries_examples_docs_schemas_and_licence(
    installed: tuple[Path, Path, Path],
) -> None:
    sdist, _, _ = installed
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
        pkg_info = archive.extractfile(f"nasplan-{__version__}/PKG-INFO")
        assert pkg_info is not None
        metadata = pkg_info.read().decode()
    for example in EXAMPLES:
        assert f"plans/examples/{example}" in names
    for inventory in (ROOT / "inventory").glob("*.yaml"):
        assert f"inventory/{inventory.name}" in names
    assert {"docs/architecture.md", "docs/probe.md", "LICENSE", "README.md"} <= names
    for schema in ("inventory", "inventory-ansible", "plan", "lab", "run"):
        assert f"nasplan/schemas/{schema}.schema.json" in names
    assert f"\nVersion: {__version__}\n" in metadata
    assert "\nLicense-Expression: MIT\n" in metadata
    assert "\nProject-URL: Homepage, https://example.com/nasplan\n" in metadata
    assert "\nProject-URL: Issues, https://example.com/nasplan/issues\n" in metadata
    assert "Copyright (c) 2026 the nasplan authors" in (ROOT / "LICENSE").read_text()


def test_the_installed_command_runs_outside_the_tree(
    installed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    _, _, venv = installed
    env = user_env(tmp_path)
    out = run([venv / "bin" / "nasplan", "--version"], cwd=tmp_path, env=env)
    assert out.strip() == f"nasplan, version {__version__}"
    where = run(
        [venv / "bin" / "python", "-c", "import nasplan; print(nasplan.__file__)"], tmp_path
    )
    assert Path(where.strip()).is_relative_to(venv), where  # the wheel's copy, not the tree's


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_shipped_example_validates_with_the_installed_command(
    installed: tuple[Path, Path, Path], tmp_path: Path, example: str
) -> None:
    _, unpacked, venv = installed
    plan = unpacked / "plans" / "examples" / example
    out = run([venv / "bin" / "nasplan", "validate", plan], cwd=tmp_path, env=user_env(tmp_path))
    # a lab file says so; a plan whose lab is not up is checked against the inventory it will get
    assert any(line.startswith("ok") for line in out.splitlines()), out


def test_a_pip_user_starts_from_nasplan_init(
    installed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Without the source tree: ``nasplan init`` writes a plan, an inventory and a lab that the
    installed command validates (the plan against both inventories)."""
    _, _, venv = installed
    nasplan, env = venv / "bin" / "nasplan", user_env(tmp_path)
    out = run([nasplan, "init", "first"], cwd=tmp_path, env=env)
    assert "wrote first/plan.yaml" in out and "sudo nasplan lab up first/lab.yaml" in out
    assert run([nasplan, "validate", "first/plan.yaml"], tmp_path, env).strip() == "ok"
    assert run([nasplan, "validate", "first/lab.yaml"], tmp_path, env).startswith("ok")
    lab_inventory = "first/.lab/starter-lab/inventory.yaml"
    out = run([nasplan, "validate", "first/plan.yaml", "-i", lab_inventory], tmp_path, env)
    assert "ok" in out.splitlines()  # with a warning: the lab is not up, its preview is used


def test_a_pip_user_gets_the_examples_and_the_manual(
    installed: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """``nasplan init --example NAME`` writes a shipped example with its inventory (or lab
    file) that the installed command validates; ``--docs`` the manual."""
    _, _, venv = installed
    nasplan, env = venv / "bin" / "nasplan", user_env(tmp_path)
    names = run([nasplan, "init", "--example", "list"], tmp_path, env).split()
    assert names == sorted(
        p.stem for p in (ROOT / "plans" / "examples").glob("*.yaml") if "\ntests:" in p.read_text()
    )
    for name in ("qnap-windows-mac", "ts253d-links"):
        out = run([nasplan, "init", "ex", "--example", name], tmp_path, env)
        assert f"wrote ex/{name}.yaml" in out
        out = run([nasplan, "validate", f"ex/{name}.yaml"], tmp_path, env)
        assert any(line.startswith("ok") for line in out.splitlines()), out
    out = run([nasplan, "init", "ex", "--docs"], tmp_path, env)
    assert (tmp_path / "ex" / "docs" / "inventory-reference.md").read_text() == (
        ROOT / "docs" / "inventory-reference.md"
    ).read_text()


def test_the_package_says_where_it_lives_and_the_readme_agrees() -> None:
    table = (ROOT / "pyproject.toml").read_text().split("[project.urls]\n", 1)[1].split("\n\n")[0]
    urls = dict(re.findall(r'^(\w+) = "([^"]+)"$', table, re.MULTILINE))
    assert set(urls) == {"Homepage", "Documentation", "Issues"}
    readme = (ROOT / "README.md").read_text()
    assert "OWNER" not in readme
    assert f"git clone {urls['Homepage']}.git" in readme
    assert f"pipx install git+{urls['Homepage']}.git" in readme
