"""The benchmark scripts (``make bench``) still fit the package: not a timed test, a check that
what they load and patch exists, so a layout change cannot break ``make bench`` unseen."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from nasplan.facts.gather import FACTS_SCRIPT, TOOL_NAMES

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_floor_runs_nasplans_own_facts_script() -> None:
    floor = _load("floor")
    assert floor.facts_script(list(TOOL_NAMES)) == FACTS_SCRIPT


def test_the_profile_patches_what_the_run_has_and_names_its_phases() -> None:
    profile = _load("profile_apply")
    timings = profile.Timings()
    with profile.instrumented(timings):  # every (owner, name) it wraps must exist
        pass
    from nasplan.run import apply

    # the phases it names are the ones a run times (``Outcome.spans``)
    source = Path(apply.__file__).read_text(encoding="utf-8")
    assert all(f'run.span("{phase}")' in source for phase in profile.PHASES)


def test_the_matrix_bench_plan_has_24_cells_and_names_one_of_them(tmp_path: Path) -> None:
    """bench/matrix_dead_time.py's plan loads as nasplan reads it, expands to its 24 cells, and
    the one cell it runs alone (``--tests``) is one of them."""
    from types import SimpleNamespace

    import yaml

    from nasplan.input.plan import load_plan

    bench = _load("matrix_dead_time")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "vars": {"user": "root"},
                "hosts": {"srv": {"address": "198.18.90.2"}, "cli": {"address": "198.18.90.3"}},
            }
        )
    )
    state = SimpleNamespace(inventory_path=inventory)
    for order, repetitions in (("sequential", 1), ("interleaved", 2)):
        path = tmp_path / f"{order}.yaml"
        path.write_text(yaml.safe_dump(bench.plan(state, order, repetitions), sort_keys=False))
        plan = load_plan(path)
        assert len(plan.tests) == len(bench.cells()) == 24
        assert plan.order.name == order
        assert bench.ONE_CELL in {test.id for test in plan.tests}


def test_the_adaptive_bench_runs_the_8_cell_matrix_fixed_and_until_clear(tmp_path: Path) -> None:
    """bench/adaptive_matrix.py's two plans load as nasplan reads them: the same 8 cells (1G LAN
    and 10G cable x 1/2 streams x both directions), five repetitions against the rule; and its
    table reads a result with the rule's statistics in it."""
    from types import SimpleNamespace

    import yaml

    from nasplan.input.plan import load_plan

    bench = _load("adaptive_matrix")
    ends = {
        "srv": ("198.18.67.10/24", "198.18.68.1/30"),
        "cli": ("198.18.67.11/24", "198.18.68.2/30"),
    }
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        yaml.safe_dump(
            {
                "vars": {"user": "root"},
                "hosts": {
                    name: {
                        "address": lan.split("/")[0],
                        "interfaces": {
                            "lan": {"name": "eth0", "speed": "1G", "address": lan},
                            "cable": {"name": "eth1", "speed": "10G", "address": cable},
                        },
                    }
                    for name, (lan, cable) in ends.items()
                },
            }
        )
    )
    state = SimpleNamespace(inventory_path=inventory)
    plans = bench.write_plans(state, tmp_path)
    fixed, adaptive = (load_plan(plans[name]) for name in ("fixed", "adaptive"))
    assert [t.id for t in fixed.tests] == [t.id for t in adaptive.tests]
    assert len(fixed.tests) == 8 and fixed.order.name == adaptive.order.name == "interleaved"
    assert {t.repetitions for t in fixed.tests} == {5} and fixed.tests[0].adaptive is None
    rule = adaptive.tests[0].adaptive
    assert rule is not None and (rule.min_n, rule.ci_halfwidth) == (3, 0.02)
    targets = {
        (t.target.label(), t.settings["parallel"], t.settings["reverse"]) for t in fixed.tests
    }
    assert len(targets) == 8 and {label for label, _, _ in targets} == {"srv.lan", "srv.cable"}

    cell = fixed.tests[0].id
    said = bench.table(
        {
            "walls_s": {"fixed": [90.0, 92.0], "adaptive": [70.0, 72.0]},
            "rule": bench.ADAPTIVE,
            "failures": [],
            "cells": {
                cell: [
                    {
                        "run": "fixed",
                        "pair": 1,
                        "n": 5,
                        **bench.fixed_interval([950e6, 951e6, 949e6, 952e6, 950e6]),
                    },
                    {
                        "run": "adaptive",
                        "pair": 1,
                        "n": 3,
                        "reached": True,
                        "statistic": "t",
                        "ci_halfwidth": 0.0051,
                    },
                ]
            },
        }
    )
    assert "adaptive / fixed: 0.78 (meets the <= 0.8 goal)" in said
    assert f"| {cell} | 3, clear, t, ±0.51 % | t, ±0.19 % |" in said


def test_the_import_bench_reads_importtime_and_the_plan_it_runs_loads(tmp_path: Path) -> None:
    """bench/apply_imports.py's plan loads as nasplan reads it, and its parser of
    ``-X importtime`` reads the interpreter's real output."""
    import subprocess

    from nasplan.input.plan import load_plan

    bench = _load("apply_imports")
    plan = load_plan(bench.write_plan(tmp_path))
    assert [t.kind for t in plan.tests] == ["iperf3"]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import json"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    times = bench.import_times(done.stderr)
    assert "json" in times and "json.decoder" in times and all(t >= 0 for t in times.values())


def test_the_ansible_bench_s_playbook_passes_ansible_s_syntax_check_and_its_plan_loads(
    tmp_path: Path,
) -> None:
    """bench/ansible_playbook.py's playbook and inventory as ansible-playbook reads them
    (``--syntax-check``), and its nasplan plan (one iperf3 test) as nasplan does."""
    import subprocess
    from types import SimpleNamespace

    import yaml

    from nasplan.input.plan import load_plan

    bench = _load("ansible_playbook")
    hosts = {
        name: SimpleNamespace(ip=f"198.19.138.{n}") for n, name in enumerate(("h01", "h02"), 2)
    }
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        yaml.safe_dump({"hosts": {n: {"address": h.ip} for n, h in hosts.items()}})
    )
    state = SimpleNamespace(
        hosts=hosts,
        inventory_path=inventory,
        known_hosts_path=tmp_path / "known_hosts",
        identity_path=tmp_path / "id_ed25519",
    )
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump(bench.nasplan_plan(state, 5), sort_keys=False))
    plan = load_plan(plan_path)
    assert [(t.kind, t.server, t.client) for t in plan.tests] == [("iperf3", "h01", "h02")]
    ansible_inventory = tmp_path / "ansible.yaml"
    ansible_inventory.write_text(yaml.safe_dump(bench.ansible_inventory(state)))
    book = tmp_path / "playbook.yaml"
    book.write_text(yaml.safe_dump(bench.playbook(5, str(tmp_path / "fetched"))))
    done = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-playbook")), "--syntax-check",
         "-i", str(ansible_inventory), str(book)],
        capture_output=True, text=True, check=False,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path)},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_check_bench_s_two_plans_load_over_the_same_hosts(tmp_path: Path) -> None:
    """bench/check_hosts.py's plans as nasplan reads them: a disk test on each host, or an
    iperf3 test per pair, over the same hosts."""
    from types import SimpleNamespace

    import yaml

    from nasplan.input.plan import load_plan

    bench = _load("check_hosts")
    names = [f"h{i:02d}" for i in range(1, 5)]
    inventory = tmp_path / "inventory.yaml"
    hosts = {name: {"address": f"198.19.142.{n}"} for n, name in enumerate(names, 2)}
    inventory.write_text(yaml.safe_dump({"hosts": hosts}))
    loaded = {}
    for name, plan in bench.plans(SimpleNamespace(inventory_path=inventory), 4).items():
        path = tmp_path / f"{name}.yaml"
        path.write_text(yaml.safe_dump(plan, sort_keys=False))
        loaded[name] = load_plan(path)
    assert [t.kind for t in loaded["disk"].tests] == ["disk"] * 4
    assert [t.kind for t in loaded["iperf3"].tests] == ["iperf3"] * 2
    used = {name: {h for t in p.tests for h in t.hosts} for name, p in loaded.items()}
    assert used["disk"] == used["iperf3"] == set(names)


def test_the_per_host_bench_fits_a_line_and_its_plan_loads_at_60_hosts(tmp_path: Path) -> None:
    """bench/control_per_host.py: its 60-host plan as nasplan reads it (one iperf3 test per
    pair), and the line it fits with each size's residual."""
    import pytest
    import yaml

    from nasplan.input.plan import load_plan

    bench = _load("control_per_host")
    names = [f"h{i:02d}" for i in range(1, 61)]
    inventory = tmp_path / "inventory.yaml"
    hosts = {name: {"address": f"198.19.160.{n}"} for n, name in enumerate(names, 2)}
    inventory.write_text(yaml.safe_dump({"hosts": hosts}))
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(bench.plan(60, inventory), sort_keys=False))
    assert [t.kind for t in load_plan(path).tests] == ["iperf3"] * 30
    a, b, r2 = bench.fit([(2, 1.1), (10, 2.7), (30, 6.7)])
    assert (a, b, r2) == (pytest.approx(0.7), pytest.approx(0.2), pytest.approx(1.0))
    runs = {2: [{"cpu_s": 1.2, "rss_mib": 60.0, "wall_s": 2.0}],
            10: [{"cpu_s": 2.6, "rss_mib": 61.0, "wall_s": 6.0}],
            30: [{"cpu_s": 6.7, "rss_mib": 62.0, "wall_s": 16.0}]}  # fmt: skip
    shown = bench.lines(runs)
    assert "CPU (user + system): " in shown and "peak RSS: " in shown
    assert shown.count("| 30 | 1 |") == 2  # each size's median, line and residual, for both


def test_the_profile_s_steps_between_two_clients() -> None:
    """bench/profile_apply.py's steps between one client's end and the next one's start."""
    import pytest

    profile = _load("profile_apply")
    events = [
        (profile.CLIENT, 0.0, 1.0),
        (profile.STOP, 1.0, 1.03),
        (profile.START, 1.005, 1.02),
        (profile.CLIENT, 1.021, 2.0),
    ]
    steps = profile.steps_ms(events)
    assert steps["gap: client end to the next client's start"] == [pytest.approx(21.0)]
    assert steps["... the server's start and readiness"] == [pytest.approx(15.0)]
    assert steps["a server's stop (beside the next test's start)"] == [pytest.approx(30.0)]
