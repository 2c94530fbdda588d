"""Property: whatever a plan, an inventory (nasplan's, Ansible's YAML, Ansible's INI) or a vars
file holds — generated YAML documents, text near those formats, raw bytes — ``nasplan
validate`` ends in exit 0 or exit 2 with one message per line, never a traceback, within a
bounded time and memory for each document.

Hypothesis, derandomized (the same documents on every run, in CI too) and with no example
database; the whole module stays within a fixed budget of examples.
"""

from __future__ import annotations

import os
import re
import time
import tracemalloc
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nasplan.cli import main

MAX_SECONDS = 3.0  # one document, validated
MAX_PEAK_BYTES = 64 * 2**20  # Python allocations while one document is validated
FUZZ = settings(
    max_examples=100,
    deadline=timedelta(seconds=MAX_SECONDS * 2),  # a slower machine's margin: bounded below too
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
INVENTORY = (
    "all:\n  hosts:\n    nas: {ansible_host: 198.18.123.10}\n"
    "    ws: {ansible_host: 198.18.123.11}\n"
)
PLAN = (
    "name: p\ninventory: {inventory}\ntests:\n"
    "  - {{id: t, kind: iperf3, server: nas, client: ws}}\n"
)
# every line: ``FILE:LINE:COL: ...``, ``nasplan: ...``, a warning, or ok
MESSAGE = re.compile(r"^(\S.*?:\d+:\d+: \S|nasplan: \S|warning: \S|ok$)")

# words the loaders look for, so that generated documents reach past the first check
KEYS = st.sampled_from(
    [
        "all", "hosts", "children", "vars", "ungrouped", "nas", "ws", "web", "name",
        "inventory", "tests", "id", "kind", "server", "client", "iperf3", "ansible_host",
        "ansible_port", "ansible_user", "ansible_connection", "ansible_group_priority",
        "interfaces", "address", "groups", "plugin", "_meta", "hostvars", "nas[01:03]",
        "nas:2222", "x[a:c]", "[::1]:22",
    ]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.text(max_size=20),
    KEYS,
    st.sampled_from(["198.18.123.10", "yes", "local", "ssh", "{{ x }}", "-oProxyCommand=id", "0"]),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(KEYS, st.text(max_size=8)), inner, max_size=4),
    ),
    max_leaves=25,
)
DOCUMENTS = st.dictionaries(KEYS, VALUES, max_size=5)
# text in YAML's and INI's punctuation, to reach their syntax errors
SYNTAX = st.lists(
    st.sampled_from(
        [
            *"[]{}:=,#;&*!|>'\"%@`-?\t ",
            "\n",
            "\n  ",
            "all",
            "hosts",
            "nas",
            "ws",
            "vars",
            "children",
        ]
    ),
    max_size=60,
).map("".join)
INI_LINES = st.lists(
    st.one_of(
        st.sampled_from(
            [
                "[nas]",
                "[ws]",
                "[web:children]",
                "[web:vars]",
                "[all:vars]",
                "[x:bogus]",
                "[ungrouped]",
            ]
        ),
        st.builds(
            lambda host, pairs: " ".join([host, *(f"{k}={v}" for k, v in pairs)]),
            st.sampled_from(
                ["nas", "ws", "nas:2222", "nas[01:03]", "h[a:c]", "[::1]:22", "'q", "---"]
            ),
            st.lists(
                st.tuples(KEYS, st.text(max_size=10).filter(lambda t: "\n" not in t)), max_size=3
            ),
        ),
        st.builds(
            lambda k, v: f"{k}={v}", KEYS, st.text(max_size=10).filter(lambda t: "\n" not in t)
        ),
        st.sampled_from(["web", "nas", "# comment", "; comment", ""]),
    ),
    max_size=12,
).map("\n".join)


def as_yaml(document: Any) -> bytes:
    return yaml.safe_dump(document, allow_unicode=True).encode()


CONTENTS = st.one_of(
    DOCUMENTS.map(as_yaml),
    VALUES.map(as_yaml),
    SYNTAX.map(str.encode),
    st.binary(max_size=300),
)
GROUP_NAMES = st.sampled_from(["all", "web", "db", "ungrouped", "nas", "ws"])
HOST_VARS = st.one_of(st.none(), st.dictionaries(KEYS, SCALARS, max_size=3))
GROUP: st.SearchStrategy[dict[str, Any]] = st.deferred(
    lambda: st.fixed_dictionaries(
        {"hosts": st.one_of(st.dictionaries(KEYS, HOST_VARS, max_size=3), KEYS)},
        optional={
            "children": st.one_of(
                st.dictionaries(GROUP_NAMES, st.one_of(GROUP, st.none()), max_size=3), GROUP_NAMES
            ),
            "vars": st.dictionaries(KEYS, SCALARS, max_size=3),
        },
    )
)
ANSIBLE_YAML = st.dictionaries(GROUP_NAMES, st.one_of(st.none(), GROUP), min_size=1, max_size=3)


def validate(directory: Path, *args: str) -> None:
    """``nasplan validate`` in ``directory``: exit 0 or 2, only message lines, no traceback,
    within MAX_SECONDS and MAX_PEAK_BYTES."""
    cwd = Path.cwd()
    os.chdir(directory)
    tracemalloc.start()  # around the command only: Hypothesis's own start-up is not traced
    started = time.monotonic()
    try:
        result = CliRunner().invoke(main, ["validate", *args])
    finally:
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        os.chdir(cwd)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert result.exit_code in (0, 2), result.output
    lines = result.output.strip().splitlines()
    assert lines and all(MESSAGE.match(line) for line in lines), result.output
    assert elapsed < MAX_SECONDS, f"{elapsed:.1f} s"
    assert peak < MAX_PEAK_BYTES, f"{peak / 2**20:.0f} MiB"


def write(directory: Path, name: str, content: bytes | str) -> Path:
    path = directory / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


@FUZZ
@given(content=st.one_of(DOCUMENTS.map(as_yaml), CONTENTS))
def test_any_plan(tmp_path_factory: pytest.TempPathFactory, content: bytes) -> None:
    directory = tmp_path_factory.mktemp("plan")
    write(directory, "inventory.yaml", INVENTORY)
    write(directory, "plan.yaml", content)
    validate(directory, "plan.yaml")


@FUZZ
@given(
    content=st.one_of(ANSIBLE_YAML.map(as_yaml), ANSIBLE_YAML.map(as_yaml), CONTENTS),
    name=st.sampled_from(["inventory.yml", "hosts", "inventory.json"]),
)
def test_any_yaml_inventory(
    tmp_path_factory: pytest.TempPathFactory, content: bytes, name: str
) -> None:
    directory = tmp_path_factory.mktemp("yaml")
    write(directory, name, content)
    write(directory, "plan.yaml", PLAN.format(inventory=name))
    validate(directory, "plan.yaml")


@FUZZ
@given(content=st.one_of(INI_LINES.map(str.encode), CONTENTS), other=st.one_of(INI_LINES, SYNTAX))
def test_any_ini_inventory_and_a_second_source(
    tmp_path_factory: pytest.TempPathFactory, content: bytes, other: str
) -> None:
    directory = tmp_path_factory.mktemp("ini")
    write(directory, "hosts", content)
    write(directory, "more.ini", other)
    write(directory, "plan.yaml", PLAN.format(inventory="[hosts, more.ini]"))
    validate(directory, "plan.yaml")


@FUZZ
@given(group_vars=CONTENTS, host_vars=CONTENTS, extra=CONTENTS)
def test_any_vars_file(
    tmp_path_factory: pytest.TempPathFactory,
    group_vars: bytes,
    host_vars: bytes,
    extra: bytes,
) -> None:
    directory = tmp_path_factory.mktemp("vars")
    write(directory, "inventory.yml", INVENTORY)
    (directory / "group_vars").mkdir()
    (directory / "host_vars" / "nas").mkdir(parents=True)
    write(directory / "group_vars", "all.yml", group_vars)
    write(directory / "host_vars" / "nas", "10.yml", host_vars)
    write(directory, "extra.yml", extra)
    write(directory, "plan.yaml", PLAN.format(inventory="inventory.yml"))
    validate(directory, "-e", "@extra.yml", "plan.yaml")
