"""A document found valid is not validated again; one with a problem always is."""

from __future__ import annotations

from pathlib import Path

import pytest

from nasplan.errors import InputError
from nasplan.input import loader, schema_memo
from nasplan.input.inventory import load_inventory

INVENTORY = "hosts:\n  nas: {address: 198.18.0.10}\n"


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "nasplan" / "valid"


def no_validator(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(_name: str) -> None:
        raise AssertionError("validated again")

    monkeypatch.setattr(loader, "_validator", refuse)


def test_a_valid_document_is_remembered_and_not_validated_again(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    first = load_inventory(path)
    assert len(list(own_cache.iterdir())) == 1
    no_validator(monkeypatch)
    assert load_inventory(path) == first


def test_a_changed_document_is_validated_again(
    tmp_path: Path, own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    load_inventory(path)
    path.write_text(INVENTORY.replace("198.18.0.10", "198.18.0.11"))
    no_validator(monkeypatch)
    with pytest.raises(AssertionError, match="validated again"):
        load_inventory(path)


def test_a_document_with_a_problem_is_never_remembered(tmp_path: Path, own_cache: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY.replace("address", "adress"))
    for _ in range(2):
        with pytest.raises(InputError, match=r"inventory.yaml:2:\d+: hosts.nas"):
            load_inventory(path)
    assert not own_cache.exists() or not list(own_cache.iterdir())


def test_the_key_names_the_schema_and_refuses_what_is_not_json() -> None:
    data = {"hosts": {}}
    assert schema_memo.key("plan", data) != schema_memo.key("inventory", data)
    assert schema_memo.key("plan", {"x": float("nan")}) is None
    assert schema_memo.key("plan", {"x": {1, 2}}) is None


def test_a_cache_in_a_file_s_place_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = tmp_path / "inventory.yaml"
    path.write_text(INVENTORY)
    assert "nas" in load_inventory(path).hosts


def test_a_cache_that_cannot_be_read_is_no_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another user's cache directory (mode 0700): is_file() raises PermissionError there
    def refused(_path: Path) -> bool:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Path, "is_file", refused)
    assert schema_memo.known_valid("0" * 64) is False
