"""Hostile inventories and vars files: exit 2 with one line naming the file, no traceback, in
time linear in the input (a NUL in a name, an integer Python refuses to read, a range past
2**63, a small file naming 10**5 hosts)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from nasplan.cli import main
from nasplan.input.ansible_graph import MAX_HOSTS
from nasplan.input.inventory import load_inventory

HUGE = "1" * 5000  # past Python's 4300-digit limit for reading an integer


def validate(tmp_path: Path, inventory: str, *extra: str, plan_vars: str = "") -> tuple[int, str]:
    (tmp_path / "hosts").write_text(inventory)
    plan = tmp_path / "plan.yaml"
    test = "{id: t, kind: iperf3, server: nas, client: ws}"
    plan.write_text(f"name: p\ninventory: hosts\n{plan_vars}tests:\n  - {test}\n")
    result = CliRunner().invoke(main, ["validate", str(plan), *extra])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def one_line(out: str, where: str, words: str) -> None:
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1, out
    assert where in lines[0] and words in lines[0], out
    assert "Traceback" not in out


@pytest.mark.parametrize(
    ("inventory", "where", "words"),
    [
        ("[nas]\nnas\x00x\nws\n", "hosts:2:1: ", "holds a NUL byte"),
        ("[na\x00s]\nnas\nws\n", "hosts:1:1: ", "holds a NUL byte"),
        ("[nas]\nnas\nws\nh[0:9223372036854775808]\n", "hosts:4:1: ", "more than 10000 hosts"),
        ("[nas]\nnas\nws\nh[0:99999999999999999999999:7]\n", "hosts:4:1: ", "more than 10000"),
        (f"all:\n  hosts:\n    nas: {{x: {HUGE}}}\n    ws:\n", "hosts:3:14: ", "4300 digits"),
        (f'{{"all": {{"hosts": {{"nas": {{"x": {HUGE}}}, "ws": null}}}}}}', "hosts:1:", "4300"),
    ],
)
def test_an_inventory_that_would_crash_is_one_line(
    tmp_path: Path, inventory: str, where: str, words: str
) -> None:
    code, out = validate(tmp_path, inventory)
    assert code == 2
    one_line(out, where, words)


def test_a_huge_integer_in_group_vars_plan_vars_and_extra_vars_files(tmp_path: Path) -> None:
    (tmp_path / "group_vars").mkdir()
    (tmp_path / "group_vars" / "all.yml").write_text(f"x: {HUGE}\n")
    code, out = validate(tmp_path, "[nas]\nnas\nws\n")
    assert code == 2
    one_line(out, "group_vars/all.yml:1:4: ", "4300 digits")
    (tmp_path / "group_vars" / "all.yml").unlink()
    code, out = validate(tmp_path, "[nas]\nnas\nws\n", plan_vars=f"vars: {{n: {HUGE}}}\n")
    assert code == 2
    one_line(out, "plan.yaml:3:", "4300 digits")
    (tmp_path / "extra.json").write_text(f'{{"n": {HUGE}}}')
    code, out = validate(tmp_path, "[nas]\nnas\nws\n", "-e", f"@{tmp_path / 'extra.json'}")
    assert code == 2
    one_line(out, "extra.json:1:7: ", "4300 digits")


def test_an_integer_too_long_for_python_on_the_command_line_is_text(tmp_path: Path) -> None:
    code, out = validate(tmp_path, "[nas]\nnas\nws\n", "-e", f"x={HUGE}")
    assert code == 0, out


def test_a_small_file_naming_a_hundred_thousand_hosts_is_refused_at_once(tmp_path: Path) -> None:
    # 10 ranges of 10**4 hosts each: under 2 KB of text
    text = "[nas]\nnas\nws\n" + "".join(f"[g{i}]\nhost{i}-[00000:09999]\n" for i in range(10))
    assert len(text) < 2000
    started = time.monotonic()
    code, out = validate(tmp_path, text)
    assert code == 2
    one_line(out, "hosts:", f"more than {MAX_HOSTS} hosts in the inventory")
    assert time.monotonic() - started < 10


def test_reading_hosts_is_linear(tmp_path: Path) -> None:
    """Twice the hosts, about twice the time (a quadratic reader takes four times)."""

    def seconds(count: int) -> float:
        path = tmp_path / f"hosts{count}"
        path.write_text("[big]\n" + "".join(f"h{i}\n" for i in range(count)))
        started = time.perf_counter()
        assert len(load_inventory(path).hosts) == count
        return time.perf_counter() - started

    seconds(500)  # warm the imports and schema caches
    small, large = min(seconds(1000) for _ in range(2)), min(seconds(4000) for _ in range(2))
    assert large < small * 4 * 2, (small, large)  # 4x the hosts; quadratic would be 16x


def test_the_host_cap_is_no_limit_on_a_real_inventory(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text("[big]\nh[0001:1000]\n")
    assert len(load_inventory(path).hosts) == 1000
