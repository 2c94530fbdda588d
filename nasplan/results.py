"""The run directory: ``run.json`` (with ``schema_version``) and raw tool outputs under ``raw/``."""

from __future__ import annotations

import contextlib
import copy
import json
import math
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from nasplan.errors import InputError
from nasplan.input.loader import Document, JsonPath, is_valid, parse_yaml, schema_errors
from nasplan.input.localfile import MAX_RUN_JSON_BYTES, parse_json, read_text_bounded
from nasplan.output import REDACTED as REDACTED
from nasplan.output import Redactor, redactor_of, write_text

SCHEMA_VERSION = 1
# schema_version N -> N + 1, one entry per bump of SCHEMA_VERSION, so that runs kept in git
# still load: load_run chains them. A version with no way forward gets a clear message.
Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[int, Migration] = {}
RUN_FILE = "run.json"
RAW_DIR = "raw"
REPORT_FILE = "report.md"

_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


def run_id(plan_name: str, started_at: datetime) -> str:
    """``20261130T173000Z-nas-upgrade``: UTC start time, then the plan name (naive = UTC)."""
    moment = started_at if started_at.tzinfo else started_at.replace(tzinfo=timezone.utc)
    stamp = moment.astimezone(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    name = _UNSAFE_NAME.sub("-", plan_name).strip("-.") or "plan"
    return f"{stamp}-{name}"


def new_run_dir(base: Path, plan_name: str, started_at: datetime, out: Path | None) -> Path:
    """Create the run directory with its ``raw/``; return its path.

    Default ``<base>/runs/<run_id>/`` (``-2``, ``-3`` appended if that exists already);
    ``out`` is used as given but must not exist or be empty.
    """
    if out is not None:
        if out.exists() and not out.is_dir():
            raise InputError(f"{out}: --out exists and is not a directory")
        if out.is_dir() and any(out.iterdir()):
            raise InputError(
                f"{out}: --out directory is not empty; choose a new one so no run is overwritten"
            )
        run_dir = out
        run_dir.mkdir(parents=True, exist_ok=True)
    else:
        runs = base / "runs"
        runs.mkdir(parents=True, exist_ok=True)
        name = run_id(plan_name, started_at)
        run_dir = runs / name
        suffix = 1
        while True:
            try:
                run_dir.mkdir()
                break
            except FileExistsError:
                suffix += 1
                run_dir = runs / f"{name}-{suffix}"
    (run_dir / RAW_DIR).mkdir(exist_ok=True)
    return run_dir


def _clean(value: Any, redactor: Redactor) -> Any:
    """A JSON-ready copy: secrets masked, NaN/infinity (not JSON) turned into null."""
    if isinstance(value, str):
        return redactor.text(value) if redactor.secrets else value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {_clean(k, redactor): _clean(v, redactor) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v, redactor) for v in value]
    return value


def pretty(value: Any, redactor: Redactor) -> str:
    """One value as run.json writes it (at the top level): cleaned, indent 2, no newline after."""
    return json.dumps(
        _clean(value, redactor),
        indent=2,
        ensure_ascii=False,
        allow_nan=False,
        default=lambda odd: redactor.text(str(odd)),
    )


def dump_run(run: dict[str, Any], secrets: Iterable[str] = ()) -> str:
    """run.json text: redacted, keys in insertion order, indent 2, UTF-8, trailing newline.

    Never fails on odd values (a long run's data must reach the disk): NaN becomes null and
    anything not JSON (a Path, a datetime) its ``str()``; ``run_errors`` reports such drift.
    """
    return pretty(run, redactor_of(s for s in secrets if s)) + "\n"


def save_run(run_dir: Path, run: dict[str, Any], secrets: Iterable[str] = ()) -> Path:
    """Write ``run_dir/run.json`` atomically (secrets masked); return its path.

    It is written even when it does not match the schema (a run's data is never thrown away);
    call ``run_errors`` first to check it.
    """
    path = run_dir / RUN_FILE
    return write_text(path, dump_run(run, secrets), redactor_of(secrets))


def save_raw(
    run_dir: Path,
    relative_path: str,
    text: str,
    secrets: Iterable[str],
    *,
    durable: bool = True,
) -> str:
    """Write a raw tool output (secrets masked); return its path relative to the run directory.

    ``relative_path`` is relative to the run directory and must lie under ``raw/``,
    e.g. ``"raw/lan-single/rep-1.json"``; the same string is returned for run.json.
    ``durable``: as for ``write_text`` (apply's are synced at the run's end).
    """
    posix = PurePosixPath(relative_path)
    if posix.is_absolute() or ".." in posix.parts or posix.parts[:1] != (RAW_DIR,):
        raise ValueError(f"raw file path must be relative and under {RAW_DIR}/: {relative_path!r}")
    write_text(run_dir.joinpath(*posix.parts), text, redactor_of(secrets), durable=durable)
    return posix.as_posix()


def run_errors(run: Any, path: Path = Path(RUN_FILE), text: str | None = None) -> list[str]:
    """Problems of a run dict against schemas/run.json, one ``FILE:LINE:COL: path: msg`` each."""
    if not isinstance(run, dict):
        return [f"{path}: expected a JSON object, got {type(run).__name__}"]
    version = run.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool) and version > SCHEMA_VERSION:
        return [
            f"{path}: run.json schema_version {version} is newer than this nasplan supports "
            f"({SCHEMA_VERSION}); upgrade nasplan"
        ]
    if is_valid("run", run):  # positions only for a run.json with problems
        return []
    positions: dict[JsonPath, tuple[int, int]] = {}
    with contextlib.suppress(InputError):
        # JSON is (nearly) YAML: the YAML composer gives each JSON path its line and column.
        positions = parse_yaml(path, text if text is not None else dump_run(run)).positions
    return schema_errors(Document(path, run, positions), "run")


def run_file(run_dir_or_file: Path) -> Path:
    """``run.json`` of a run directory, or the file itself."""
    return run_dir_or_file / RUN_FILE if run_dir_or_file.is_dir() else run_dir_or_file


def migrate_run(
    run: dict[str, Any], path: Path, migrations: Mapping[int, Migration] | None = None
) -> dict[str, Any]:
    """``run`` brought from an older ``schema_version`` up to SCHEMA_VERSION (a new dict).

    Runs at the current version (or with no usable version, left to the schema) come back
    unchanged; raise InputError when no migration leads from the run's version.
    """
    steps = MIGRATIONS if migrations is None else migrations
    version = run.get("schema_version")
    if not isinstance(version, int) or isinstance(version, bool) or version >= SCHEMA_VERSION:
        return run
    migrated = copy.deepcopy(run)
    while version < SCHEMA_VERSION:
        step = steps.get(version)
        if step is None:
            oldest = min((v for v in steps if v < SCHEMA_VERSION), default=SCHEMA_VERSION)
            readable = (
                f"versions {oldest} to {SCHEMA_VERSION}"
                if oldest < SCHEMA_VERSION
                else f"only version {SCHEMA_VERSION}"
            )
            raise InputError(
                f"{path}: run.json schema_version {version} is older than this nasplan reads "
                f"({readable}); it was written by nasplan "
                f"{run.get('nasplan_version', '(unknown)')}: render it with that version, "
                "or run the plan again"
            )
        migrated = step(migrated)
        version += 1
        migrated["schema_version"] = version
    return migrated


def load_run(run_dir_or_file: Path, *, check: bool = True) -> dict[str, Any]:
    """Read and validate run.json of a run directory (or the file); raise InputError if bad.

    ``check=False`` skips the schema's check, for a run.json this very process has just
    written (apply's report, on the critical path, where a check grows with the hosts and
    tests; the tests check that what apply writes is valid).
    """
    path = run_file(run_dir_or_file)
    if not path.exists() and not path.is_symlink():
        raise InputError(f"{path}: file not found (not a nasplan run directory?)")
    text = read_text_bounded(path, MAX_RUN_JSON_BYTES, "run.json")
    run = parse_json(path, text)
    source: str | None = text
    if isinstance(run, dict):
        migrated = migrate_run(run, path)
        # Line and column positions come from the file's text only while it is unchanged.
        source = text if migrated is run else None
        run = migrated
    errors = run_errors(run, path, source) if check else []
    if errors:
        raise InputError(errors)
    result: dict[str, Any] = run
    return result


# the order a run's tests are counted in: what ran, what was cut short, what never began
COUNTED = ("ok", "failed", "interrupted", "skipped", "not run")


def test_counts(run: Mapping[str, Any]) -> dict[str, int]:
    """How many of the tests the run was to run (the plan's, or ``--limit``/``--tests``'s
    part of it) ended each way, in COUNTED's order, those with none left out:
    ``{"ok": 1, "interrupted": 1, "not run": 3}``."""
    statuses = [str(test.get("status")) for test in run.get("tests") or []]
    subset = run.get("subset") or {}
    planned = subset.get("selected") or len((run.get("plan") or {}).get("tests") or [])
    found = {status: statuses.count(status) for status in dict.fromkeys([*COUNTED, *statuses])}
    found["not run"] = max(planned - len(statuses), 0)
    return {status: n for status, n in found.items() if n}


def counts_text(run: Mapping[str, Any]) -> str:
    """``5 tests (1 ok, 1 interrupted, 3 not run)``."""
    counts = test_counts(run)
    total = sum(counts.values())
    said = ", ".join(f"{n} {status}" for status, n in counts.items())
    return f"{total} test{'' if total == 1 else 's'}" + (f" ({said})" if said else "")
