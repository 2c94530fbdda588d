"""For every test: nasplan's user cache (schema_memo) in a directory of the test session's own,
so tests neither read what earlier runs remembered nor write to the user's home."""

from __future__ import annotations

import os
import shutil
import tempfile

import pytest

_SAVED: dict[str, str | None] = {}


def pytest_configure(config: pytest.Config) -> None:
    _SAVED["XDG_CACHE_HOME"] = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="nasplan-test-cache-")


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(os.environ["XDG_CACHE_HOME"], ignore_errors=True)
    if _SAVED.get("XDG_CACHE_HOME") is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = _SAVED["XDG_CACHE_HOME"]  # type: ignore[assignment]
