"""The kind contract: raw files always masked, the record's life."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from nasplan.measure.kind import RunContext
from nasplan.measure.record import finish
from nasplan.run.kind_hooks import KindHooks
from nasplan.run.overlap import Overlap


def test_save_raw_masks_the_runs_secrets(tmp_path: Path) -> None:
    tasks = Overlap.serial()
    hooks = KindHooks(tmp_path, tasks, {}, None)  # type: ignore[arg-type]
    ctx = RunContext(None, {}, None, tasks, hooks)  # type: ignore[arg-type]
    ctx.mask("hunter2")
    relative = ctx.save_raw("raw/t/rep-1.txt", "smbclient: password hunter2 refused\n")
    assert relative == "raw/t/rep-1.txt"
    assert (tmp_path / relative).read_text() == "smbclient: password ******** refused\n"


def test_finish_sets_status_and_error_from_what_went_wrong() -> None:
    record: dict[str, Any] = {"status": "failed", "error": None}
    assert finish(record, []) == {"status": "ok", "error": None}
    assert finish(record, ["rep 1: a", "rep 2: b"]) == {
        "status": "failed",
        "error": "rep 1: a; rep 2: b",
    }
