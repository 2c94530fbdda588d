"""``kind: disk`` on a Windows host through run(): diskspd where Linux runs fio."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from nasplan import shell
from nasplan.measure import kinds

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "diskspd"


def test_a_disk_test_on_a_windows_host_through_run(kind_context: Callable[..., Any]) -> None:
    ctx, nas, _ = kind_context(
        "  - {id: pcdisk, kind: disk, host: nas, path: 'D:\\bench', direction: write,\n"
        "     size: 1GiB, duration_s: 5, repetitions: 1}\n",
        {"fio": "C:\\Tools\\diskspd.exe"},
    )
    nas.use_shell(shell.windows(None))
    result = (FIXTURES / "DiskSpdExample-ReadWrite.txt").read_text()
    nas.expect("New-Item").expect("C:\\Tools\\diskspd.exe -c1024M -b1M -d5", result)
    nas.expect("Remove-Item")

    record = kinds.bind(ctx.plan.tests[0]).run(ctx)

    assert (record["status"], record["error"]) == ("ok", None)
    assert record["params"]["tool"] == "diskspd"
    assert record["directions"]["write"]["median"] == 43524096 / 30.01
    assert (ctx.run_dir / record["repetitions"][0]["raw_file"]).read_text() == result
