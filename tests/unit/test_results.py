"""Run directory, run.json save/load/validation, redaction."""

from __future__ import annotations

import copy
import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from nasplan.errors import InputError, NasplanError, RunDirBusy
from nasplan.output import HeldRunDir, redactor_of
from nasplan.results import (
    SCHEMA_VERSION,
    counts_text,
    load_run,
    new_run_dir,
    run_errors,
    save_raw,
    save_run,
)

SAMPLE = Path(__file__).parent.parent / "fixtures" / "runs" / "sample"
STARTED = datetime(2026, 11, 30, 17, 30, 0, tzinfo=timezone.utc)


def sample_run() -> dict[str, Any]:
    run: dict[str, Any] = json.loads((SAMPLE / "run.json").read_text())
    return run


def write_run(tmp_path: Path, run: Any) -> Path:
    run_dir = tmp_path / "run"
    run_dir.mkdir(exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(run, indent=2))
    return run_dir


def test_sample_run_validates_against_the_schema() -> None:
    run = load_run(SAMPLE)
    assert run["schema_version"] == SCHEMA_VERSION
    assert [t["id"] for t in run["tests"]] == ["lan-single", "p2p-parallel", "p2p-reverse"]
    assert run_errors(run) == []


def test_sample_raw_files_exist_where_run_json_says() -> None:
    run = load_run(SAMPLE)
    raw_files = [r["raw_file"] for t in run["tests"] for r in t["repetitions"]]
    assert len(raw_files) == 9
    for raw_file in raw_files:
        json.loads((SAMPLE / raw_file).read_text())


def test_new_run_dir_is_named_by_utc_time_and_plan(tmp_path: Path) -> None:
    started = datetime(2026, 11, 30, 18, 30, 0, tzinfo=timezone(timedelta(hours=1)))
    run_dir = new_run_dir(tmp_path, "nas-upgrade", started, None)
    assert run_dir == tmp_path / "runs" / "20261130T173000Z-nas-upgrade"
    assert (run_dir / "raw").is_dir()
    again = new_run_dir(tmp_path, "nas-upgrade", started, None)
    assert again.name == "20261130T173000Z-nas-upgrade-2"


def test_new_run_dir_uses_out_when_empty_or_missing(tmp_path: Path) -> None:
    assert new_run_dir(tmp_path, "p", STARTED, tmp_path / "mine") == tmp_path / "mine"
    assert (tmp_path / "mine" / "raw").is_dir()
    (tmp_path / "empty").mkdir()
    assert new_run_dir(tmp_path, "p", STARTED, tmp_path / "empty") == tmp_path / "empty"
    assert not (tmp_path / "runs").exists()


def test_new_run_dir_refuses_a_non_empty_out(tmp_path: Path) -> None:
    out = tmp_path / "old-run"
    out.mkdir()
    (out / "run.json").write_text("{}")
    with pytest.raises(NasplanError, match="not empty"):
        new_run_dir(tmp_path, "p", STARTED, out)
    assert (out / "run.json").read_text() == "{}"


def test_save_run_then_load_run_round_trips(tmp_path: Path) -> None:
    run = sample_run()
    path = save_run(tmp_path, run)
    assert path == tmp_path / "run.json"
    text = path.read_text()
    assert text.endswith("}\n")
    assert text.startswith('{\n  "schema_version": 1,\n')
    assert load_run(tmp_path) == run
    assert load_run(path) == run
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]  # no temp file left behind


def test_save_run_is_stable(tmp_path: Path) -> None:
    save_run(tmp_path, sample_run())
    first = (tmp_path / "run.json").read_bytes()
    save_run(tmp_path, load_run(tmp_path))
    assert (tmp_path / "run.json").read_bytes() == first


def test_load_run_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_run(tmp_path)
    assert (
        str(info.value) == f"{tmp_path / 'run.json'}: file not found (not a nasplan run directory?)"
    )


def test_load_run_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "run.json").write_text('{\n  "schema_version": 1,\n  oops\n}\n')
    with pytest.raises(InputError) as info:
        load_run(tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'run.json'}:3:3: invalid JSON: ")


def test_load_run_missing_key_is_one_clear_line(tmp_path: Path) -> None:
    run = sample_run()
    del run["tests"][0]["summary"]
    run_dir = write_run(tmp_path, run)
    with pytest.raises(InputError) as info:
        load_run(run_dir)
    (message,) = info.value.messages
    where = re.escape(str(run_dir / "run.json"))
    assert re.fullmatch(rf"{where}:\d+:\d+: tests\[0\]: 'summary' is required", message)


def test_load_run_wrong_type_names_the_json_path_and_line(tmp_path: Path) -> None:
    run = sample_run()
    run["tests"][1]["repetitions"][2]["retransmits"] = "many"
    run_dir = write_run(tmp_path, run)
    line = next(
        number
        for number, text in enumerate((run_dir / "run.json").read_text().splitlines(), 1)
        if '"many"' in text
    )
    with pytest.raises(InputError) as info:
        load_run(run_dir)
    (message,) = info.value.messages
    assert message.startswith(f"{run_dir / 'run.json'}:{line}:")
    assert "tests[1].repetitions[2].retransmits: 'many' is not of type 'integer', 'null'" in message


def test_load_run_unknown_key_is_caught(tmp_path: Path) -> None:
    run = sample_run()
    run["tests"][0]["summary"]["median_bits"] = 1
    with pytest.raises(InputError, match=r"tests\[0\]\.summary\.median_bits: unknown key"):
        load_run(write_run(tmp_path, run))


def test_load_run_refuses_a_newer_schema_version(tmp_path: Path) -> None:
    run = sample_run()
    run["schema_version"] = 2
    run["something_new"] = {"only": "in version 2"}
    run_dir = write_run(tmp_path, run)
    with pytest.raises(InputError) as info:
        load_run(run_dir)
    assert str(info.value) == (
        f"{run_dir / 'run.json'}: run.json schema_version 2 is newer than this nasplan "
        "supports (1); upgrade nasplan"
    )


def test_facts_and_params_stay_open_for_new_keys(tmp_path: Path) -> None:
    run = sample_run()
    run["hosts"]["nas"]["facts"]["disks"] = [{"name": "sda"}]
    run["tests"][0]["params"]["congestion"] = "bbr"
    run["plan"]["vars"] = {"duration": 2}
    assert load_run(write_run(tmp_path, run)) == run


def test_unreachable_host_and_interrupted_run_validate() -> None:
    run = sample_run()
    run["status"] = "interrupted"
    run["finished_at"] = None
    run["hosts"]["nas"].update(
        platform=None, reachable=False, error="ssh: connection refused", facts=None, tools={}
    )
    run["tests"][2]["path"] = None
    run["tests"][2]["summary"] = None
    assert run_errors(run) == []


def test_an_interrupted_run_counts_what_ran_what_was_cut_short_and_what_never_began() -> None:
    run = sample_run()
    tests = run["tests"]
    run["plan"]["tests"] = [{"id": f"t{i}", "kind": "iperf3"} for i in range(5)]
    run["tests"] = [
        {**tests[0], "status": "ok"},
        {**tests[1], "status": "interrupted", "error": "interrupted: ..."},
    ]
    run["status"] = "interrupted"
    assert run_errors(run) == []
    assert counts_text(run) == "5 tests (1 ok, 1 interrupted, 3 not run)"
    # a part of the plan (--tests): only the tests it chose are counted
    run["subset"] = {"limit": [], "tests": ["t0", "t1"], "selected": 2, "of": 5}
    assert counts_text(run) == "2 tests (1 ok, 1 interrupted)"


def test_redact_masks_every_secret_longest_first() -> None:
    text = "sudo -S <<< hunter2; pass=hunter2abc; nothing else"
    assert redactor_of(["hunter2", "hunter2abc", ""]).text(text) == (
        "sudo -S <<< ********; pass=********; nothing else"
    )
    assert redactor_of([]).text("unchanged") == "unchanged"


def test_save_run_and_save_raw_never_write_a_secret(tmp_path: Path) -> None:
    secret = 's3cr"et\\pw'
    run = sample_run()
    run["hosts"]["nas"]["actions"].append(f"sudo with password {secret}")
    run["warnings"].append(f"{secret} leaked into a warning")
    before = copy.deepcopy(run)
    save_run(tmp_path, run, secrets=[secret])
    relative = save_raw(tmp_path, "raw/lan-single/rep-1.txt", f"stderr: {secret}\n", [secret])
    assert run == before  # the caller's dict is not modified
    assert relative == "raw/lan-single/rep-1.txt"
    for path in (tmp_path / "run.json", tmp_path / relative):
        text = path.read_text()
        assert "s3cr" not in text
        assert "********" in text
    assert load_run(tmp_path)["warnings"][-1] == "******** leaked into a warning"


def test_save_raw_refuses_paths_outside_raw(tmp_path: Path) -> None:
    for bad in ("/etc/passwd", "raw/../run.json", "other/x.json"):
        with pytest.raises(ValueError, match="under raw/"):
            save_raw(tmp_path, bad, "x", [])
    assert list(tmp_path.iterdir()) == []


def test_save_run_keeps_the_data_when_values_are_not_json(tmp_path: Path) -> None:
    run = sample_run()
    run["tests"][0]["efficiency"] = float("nan")
    run["plan_file"] = Path("plans/nas.yaml")
    run["warnings"].append(float("inf"))
    save_run(tmp_path, run)
    saved = json.loads((tmp_path / "run.json").read_text())
    assert saved["tests"][0]["efficiency"] is None
    assert saved["plan_file"] == "plans/nas.yaml"
    (problem,) = run_errors(saved)
    assert re.fullmatch(r"run\.json:\d+:\d+: warnings\[1\]: None is not of type 'string'", problem)


def test_a_run_directory_is_held_by_one_nasplan_at_a_time(tmp_path: Path) -> None:
    """A second hold (another process, or another run in this one) is refused, exit 3, and
    leaves nothing in the directory; once let go of, it can be held again."""
    held = HeldRunDir(tmp_path)
    with pytest.raises(RunDirBusy) as refused:
        HeldRunDir(tmp_path)
    assert refused.value.exit_code == 3
    assert "in use by another nasplan process" in str(refused.value)
    assert list(tmp_path.iterdir()) == []  # the directory itself is locked: no file for it
    held.release()
    HeldRunDir(tmp_path).release()
