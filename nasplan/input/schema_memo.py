"""Documents already found valid: a plan run again is not validated again.

Validating against a JSON Schema means importing jsonschema (the largest import nasplan has,
half of it its dependencies) and walking the document, on every start of every command. A
before/after check runs the same plan and inventory again and again, so a document that
validated is remembered by a hash of its content and of the schema's text (and nasplan's
version): an empty file named by that hash under ``$XDG_CACHE_HOME/nasplan/valid`` (default
``~/.cache``). Only a success is remembered: a document with a problem is validated every time,
and its errors say where. A cache that cannot be read or written is the same as an empty one;
deleting it is always safe.
"""

from __future__ import annotations

import hashlib
import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from nasplan import __version__


def cache_dir() -> Path:
    """Where the hashes of valid documents are kept."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(root) / "nasplan" / "valid"


def key(schema_name: str, data: Any) -> str | None:
    """The hash that names ``data`` valid against ``schema_name``; None when ``data`` is not
    plain JSON (validated each time then)."""
    try:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError):
        return None
    schema = resources.files("nasplan").joinpath("schemas").joinpath(f"{schema_name}.schema.json")
    digest = hashlib.sha256(f"{__version__}\0{schema_name}\0".encode())
    digest.update(schema.read_bytes())
    digest.update(b"\0")
    digest.update(text.encode())
    return digest.hexdigest()


def known_valid(memo_key: str | None) -> bool:
    """True when a document with this hash was found valid before (False when the cache
    cannot be read: e.g. another user's)."""
    if memo_key is None:
        return False
    try:
        return (cache_dir() / memo_key).is_file()
    except OSError:
        return False


def remember(memo_key: str | None) -> None:
    """Note the document with this hash as valid (best effort: a cache is never an error)."""
    if memo_key is None:
        return
    directory = cache_dir()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        (directory / memo_key).touch()
    except OSError:
        pass
