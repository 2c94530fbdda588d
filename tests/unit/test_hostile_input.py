"""Hostile input: every file nasplan reads is bounded, every plan value checked where it enters.

Each case runs the real command line and asserts what a user sees: exit 2, one
``FILE:LINE:COL: ...`` line naming the problem, no traceback, and an answer within seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from keyfiles import write_private_key

from nasplan.cli import main
from nasplan.input.inventory import load_inventory
from nasplan.input.localfile import MAX_YAML_BYTES

INVENTORY = """\
vars: {user: root}
hosts:
  nas:
    address: 198.19.80.2
    interfaces:
      lan: {name: eth0, role: lan, speed: 1G, address: 198.19.80.2/24}
  ws:
    address: 198.19.80.3
"""
PLAN = """\
name: hostile
inventory: inventory.yaml
vars: {secs: 2}
tests:
  - id: lan
    kind: iperf3
    server: nas
    client: ws
    duration_s: "{{ vars.secs }}"
"""
BILLION_LAUGHS = """\
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""


def write(tmp_path: Path, plan: str = PLAN, inventory: str = INVENTORY) -> Path:
    (tmp_path / "inventory.yaml").write_text(inventory)
    path = tmp_path / "plan.yaml"
    path.write_text(plan)
    return path


def validate(*args: str) -> tuple[int, str]:
    """``nasplan validate ARGS`` -> (exit code, stderr+stdout); a traceback fails the test."""
    result = CliRunner().invoke(main, ["validate", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise AssertionError(f"traceback instead of a message: {result.exception!r}")
    return result.exit_code, result.output


def validate_process(path: Path, timeout_s: float = 20) -> tuple[int, str, float]:
    """The real executable, in its own process (a hang or an OOM cannot take pytest with it)."""
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "nasplan", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, proc.stderr, time.monotonic() - started


# --- bounded reads ---------------------------------------------------------------------------


def test_dev_zero_as_plan_is_refused_at_once() -> None:
    code, _, elapsed = validate_process(Path("/dev/zero"))
    code2, out = validate("/dev/zero")
    assert (code, code2) == (2, 2)
    assert "/dev/zero: is a device, expected a YAML file" in out
    assert elapsed < 10


def test_fifo_as_plan_does_not_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.yaml"
    os.mkfifo(fifo)
    code, err, _ = validate_process(fifo, timeout_s=10)  # no writer: a blocking open would hang
    assert code == 2
    assert f"{fifo}: is a FIFO" in err


def test_directory_as_plan(tmp_path: Path) -> None:
    code, out = validate(str(tmp_path))
    assert code == 2
    assert "is a directory" in out


def test_inventory_that_is_not_a_regular_file(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN.replace("inventory.yaml", "/dev/zero"))
    code, out = validate(str(path))
    assert code == 2
    assert "/dev/zero: is a device" in out


def test_list_tests_without_a_plan_is_exit_2() -> None:
    result = CliRunner().invoke(main, ["apply", "--list-tests"])
    assert (result.exit_code, result.output) == (2, "nasplan: apply --list-tests needs PLAN_FILE\n")


def test_a_directory_as_inventory_is_read_as_ansible_reads_one(tmp_path: Path) -> None:
    """A directory is an Ansible inventory directory: each file an inventory; a nasplan
    inventory among them is refused where it stands (it is read alone)."""
    path = write(tmp_path, PLAN.replace("inventory.yaml", "."))
    code, out = validate(str(path))
    assert code == 2
    assert "inventory.yaml:" in out
    assert "a nasplan inventory (top-level hosts:) is read alone" in out


def test_plan_over_the_size_limit_is_refused_without_parsing(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN + "# padding\n" * (MAX_YAML_BYTES // 10 + 1))
    code, out = validate(str(path))
    assert code == 2
    assert f"is larger than the {MAX_YAML_BYTES} bytes" in out


def test_billion_laughs_is_refused_quickly_with_its_position(tmp_path: Path) -> None:
    path = write(tmp_path, BILLION_LAUGHS)
    code, err, elapsed = validate_process(path)
    assert code == 2
    assert elapsed < 10
    # refused at the alias where the expansion passes the limit, before anything is built
    assert f"{path}:5:" in err and "aliases expand to more than" in err


def test_alias_bomb_in_the_inventory(tmp_path: Path) -> None:
    bomb = (
        INVENTORY
        + "  x:\n    vars:\n"
        + "".join(f"      {line}\n" for line in BILLION_LAUGHS.splitlines())
    )
    code, out = validate(str(write(tmp_path, inventory=bomb)))
    assert code == 2
    assert "inventory.yaml:" in out and "an alias bomb" in out


def test_deep_nesting_and_alias_cycles(tmp_path: Path) -> None:
    deep = tmp_path / "deep.yaml"
    deep.write_text("a: " + "[" * 100 + "]" * 100 + "\n")
    code, out = validate(str(deep))
    assert code == 2 and "deep.yaml:1:" in out and "nesting deeper than 64 levels" in out
    cycle = tmp_path / "cycle.yaml"
    cycle.write_text("a: &a [1, *a]\n")
    code, out = validate(str(cycle))
    assert code == 2 and "cycle.yaml:1:11: alias *a refers to a node that contains it" in out


def test_anchors_and_merge_keys_within_the_limits_still_work(tmp_path: Path) -> None:
    plan = """\
name: anchors
inventory: inventory.yaml
vars: {defaults: &defaults {kind: iperf3, server: nas, client: ws}}
tests:
  - {<<: *defaults, id: first}
  - {<<: *defaults, id: second, duration_s: 1}
"""
    code, out = validate(str(write(tmp_path, plan)))
    assert (code, out.strip()) == (0, "ok")


def test_a_plan_just_under_the_limit_validates_quickly(tmp_path: Path) -> None:
    line = "  - {kind: iperf3, id: t%d, server: nas, client: ws, duration_s: '{{ vars.secs }}'}\n"
    body, index = [PLAN], 0
    while sum(map(len, body)) + len(line) + 8 < MAX_YAML_BYTES:
        body.append(line % index)
        index += 1
    path = write(tmp_path, "".join(body))
    started = time.monotonic()
    code, out = validate(str(path))
    elapsed = time.monotonic() - started
    assert (code, out.strip()) == (0, "ok")
    assert index > 5000
    assert elapsed < 10, f"{index} tests took {elapsed:.1f} s"


def test_yaml_values_json_cannot_carry_are_refused_or_kept_as_text(tmp_path: Path) -> None:
    code, out = validate(str(write(tmp_path, PLAN.replace("secs: 2", "secs: !!binary aGVsbG8="))))
    assert code == 2 and "YAML tag 'binary' is not supported" in out
    code, out = validate(str(write(tmp_path, PLAN.replace("vars:", "1: x\nvars:"))))
    assert code == 2 and "plan.yaml:3:1:" in out and "mapping key '1' is not a string" in out
    # a date stays the text the user wrote (run.json has no date type)
    code, out = validate(str(write(tmp_path, PLAN.replace("secs: 2", "secs: 2, d: 2026-12-01"))))
    assert (code, out.strip()) == (0, "ok")


def test_run_json_that_is_a_device_or_nested_too_deep(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "run.json").symlink_to("/dev/zero")
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 2 and "run.json: is a device" in result.output
    (run_dir / "run.json").unlink()
    (run_dir / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    result = CliRunner().invoke(main, ["report", str(run_dir)])
    assert result.exit_code == 2, result.output
    assert "run.json:1:1: invalid JSON: nested too deeply" in result.output


# --- identity, known_hosts, ssh_config --------------------------------------------------------


def _with_host_file(tmp_path: Path, key: str, target: str) -> Path:
    inventory = INVENTORY.replace("vars: {user: root}", f"vars: {{user: root, {key}: {target}}}")
    return write(tmp_path, inventory=inventory)


@pytest.mark.parametrize("key", ["identity_file", "known_hosts", "ssh_config"])
def test_ssh_files_must_be_regular_files(tmp_path: Path, key: str) -> None:
    code, out = validate(str(_with_host_file(tmp_path, key, "/dev/zero")))
    assert code == 2
    assert f"inventory.yaml:4:5: hosts.nas.{key}: /dev/zero: is a device" in out


def test_private_key_readable_by_others_is_refused(tmp_path: Path) -> None:
    key = write_private_key(tmp_path / "id_test")
    key.chmod(0o644)
    code, out = validate(str(_with_host_file(tmp_path, "identity_file", str(key))))
    assert code == 2 and "permissions 0644 are too open for a private key" in out
    key.chmod(0o600)
    assert validate(str(_with_host_file(tmp_path, "identity_file", str(key))))[0] == 0


def test_a_missing_identity_file_is_an_error_at_validation(tmp_path: Path) -> None:
    missing = tmp_path / "keys" / "id_nas"
    code, out = validate(str(_with_host_file(tmp_path, "identity_file", "keys/id_nas")))
    assert code == 2
    assert f"inventory.yaml:4:5: hosts.nas.identity_file: {missing}: file not found" in out
    assert "ssh-keygen" in out
    missing.parent.mkdir()
    write_private_key(missing)
    assert validate(str(_with_host_file(tmp_path, "identity_file", "keys/id_nas")))[0] == 0


def test_a_missing_known_hosts_or_ssh_config_is_left_to_the_connection(tmp_path: Path) -> None:
    for key in ("known_hosts", "ssh_config"):
        assert validate(str(_with_host_file(tmp_path, key, "not-there")))[0] == 0


def test_known_hosts_writable_by_others_or_owned_by_someone_else(tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    known.chmod(0o666)
    code, out = validate(str(_with_host_file(tmp_path, "known_hosts", str(known))))
    assert code == 2 and "is writable by others (mode 0666)" in out
    known.chmod(0o644)
    if os.getuid() == 0:  # only root can give a file away
        os.chown(known, 65534, 65534)
        code, out = validate(str(_with_host_file(tmp_path, "known_hosts", str(known))))
        assert code == 2 and "is owned by uid 65534, not by you" in out


def test_plan_known_hosts_is_checked_too(tmp_path: Path) -> None:
    path = write(tmp_path, PLAN.replace("vars:", "known_hosts: /dev/null\nvars:"))
    code, out = validate(str(path))
    assert code == 2 and "hosts.nas.known_hosts: /dev/null: is a device" in out


# --- Jinja -----------------------------------------------------------------------------------

HOSTILE_TEMPLATES = [
    ("{{ 'x' * 2 ** 33 }}", "builds more than"),
    ("{{ ''.__class__.__mro__ }}", "unsafe"),
    ("{{ lipsum.__globals__ }}", "is undefined"),
    ("{{ range.__self__ }}", "unsafe"),
    ("{{ 'x' | center(2 ** 33) }}", "is over the limit"),
    ("{{ '%0999999999d' % 1 }}", "format width 999999999"),
    ("{{ '{:>999999999}'.format(1) }}", "format width 999999999"),
    ("{{ '{0:{0}}'.format('999999999') }}", "nested format specs"),
    ("{{ range(60000) | map('center', 60000) | join }}", "builds more than"),
    ("{{ ('x' * 60000) ~ ('x' * 60000) }}", "renders more than"),
    ("{{ 'ab'.replace('', 'x' * 60000) }}", "replace would build"),
    ("{{ 7 ** 99999 }}", "power is over"),
    ("{% for i in range(60000) %}{% for j in range(60000) %}{% endfor %}{% endfor %}", "builds"),
    (
        "{% set s = 'x' * 60000 %}{% for c in s %}{% for d in s %}{% endfor %}{% endfor %}",
        "took longer than 2 s",
    ),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{ [1, 2] | random }}", "No filter named 'random'"),
]


@pytest.mark.parametrize(("template", "expected"), HOSTILE_TEMPLATES)
def test_hostile_template_is_refused_naming_the_field(
    tmp_path: Path, template: str, expected: str
) -> None:
    plan = PLAN + f"    name: {template!r}\n".replace("'", '"', 1)
    plan = PLAN + "    name: |-\n      " + template + "\n"
    started = time.monotonic()
    code, out = validate(str(write(tmp_path, plan)))
    assert time.monotonic() - started < 5
    assert code == 2, out
    assert "plan.yaml:10:11: tests[0].name: template" in out
    assert expected in out


def test_plain_templates_still_render(tmp_path: Path) -> None:
    plan = PLAN + (
        "    name: \"{{ hosts.nas.interfaces.lan.address | replace('.', '-') }}"
        " {{ '%02d' % 3 }} {{ range(3) | join(',') }} {{ 'x' * 3 }}\"\n"
    )
    code, out = validate(str(write(tmp_path, plan)))
    assert (code, out.strip()) == (0, "ok")


# --- values that reach a remote shell or a tool's own syntax ---------------------------------


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("name: eth0", 'name: "eth0;touch /tmp/x"', "hosts.nas.interfaces.lan.name"),
        ("address: 198.19.80.3", 'address: "-oProxyCommand=id"', "hosts.ws.address"),
        ("user: root", 'user: "root;id"', "vars.user"),
        ("address: 198.19.80.2/24", 'address: "$(id)"', "hosts.nas.interfaces.lan.address"),
    ],
)
def test_native_inventory_values_are_checked(
    tmp_path: Path, old: str, new: str, field: str
) -> None:
    code, out = validate(str(write(tmp_path, inventory=INVENTORY.replace(old, new))))
    assert code == 2
    assert f": {field}: " in out and "is not valid: expected" in out


ANSIBLE = """\
all:
  vars:
    ansible_user: admin
  children:
    nas:
      hosts:
        nas:
          ansible_host: 198.19.80.2
          interfaces:
            lan: {name: eth0, role: lan}
        ws:
          ansible_host: 198.19.80.3
"""


@pytest.mark.parametrize(
    ("old", "new", "where"),
    [
        ("name: eth0", 'name: "eth0;touch /tmp/x"', "inventory.yaml:10:25: all.children.nas"),
        (
            "ansible_user: admin",
            'ansible_user: "a b"',
            "inventory.yaml:3:19: all.vars.ansible_user",
        ),
        ("ansible_host: 198.19.80.3", "ansible_host: -oX", "inventory.yaml:12:25: all.children"),
    ],
)
def test_ansible_inventory_values_are_checked(
    tmp_path: Path, old: str, new: str, where: str
) -> None:
    ansible = ANSIBLE.replace(old, new)
    code, out = validate(str(write(tmp_path, PLAN, ansible)))
    assert code == 2
    assert where in out and "is not valid: expected" in out


def test_an_ansible_host_named_as_an_option_is_left_out(tmp_path: Path) -> None:
    ansible = ANSIBLE.replace(
        "        ws:\n          ansible_host: 198.19.80.3\n", '        "-oX=y": {}\n'
    )
    inventory = load_inventory(write(tmp_path, PLAN, ansible).with_name("inventory.yaml"))
    assert set(inventory.hosts) == {"nas"}
    (line,) = inventory.unusable["-oX=y"]
    assert ":11:9:" in line and "is not valid: expected" in line


@pytest.mark.parametrize(
    ("test", "field"),
    [
        ("{kind: disk, host: nas, path: '/srv/a;b'}", "tests[0].path"),
        ("{kind: disk, host: nas, path: '/srv/a:b'}", "tests[0].path"),
        ("{kind: disk, host: nas, path: 'srv'}", "tests[0].path"),
        (
            "{kind: transfer, server: nas, client: ws, method: smb, share: 'a;b', password_env: P}",
            "tests[0].share",
        ),
        (
            "{kind: transfer, server: nas, client: ws, method: rsync, path: 'evil:/etc'}",
            "tests[0].path",
        ),
        (
            "{kind: transfer, server: nas, client: ws, method: nfs, export: '/x?y=1'}",
            "tests[0].export",
        ),
        (
            "{kind: transfer, server: nas, client: ws, method: rsync, path: d, "
            "ssh_identity: '-oProxyCommand=id'}",
            "tests[0].ssh_identity",
        ),
    ],
)
def test_plan_values_for_tools_with_their_own_syntax(tmp_path: Path, test: str, field: str) -> None:
    plan = PLAN.split("tests:")[0] + f"tests:\n  - {test}\n"
    code, out = validate(str(write(tmp_path, plan)))
    assert code == 2, out
    assert f": {field}: " in out


def test_alias_bomb_in_an_extra_var(tmp_path: Path) -> None:
    bomb = "x=" + "".join(f"{line}\n" for line in BILLION_LAUGHS.splitlines())
    code, out = validate(str(write(tmp_path)), "-e", bomb)
    assert code == 2 and "-e x: -e:5:" in out and "an alias bomb" in out


def test_identity_file_named_by_ssh_config_is_checked_before_connecting(tmp_path: Path) -> None:
    from nasplan.errors import HostError
    from nasplan.input.inventory import Host
    from nasplan.remote.ssh import connect

    config = tmp_path / "ssh_config"
    config.write_text("Host nas\n  HostName 198.19.80.2\n  IdentityFile /dev/zero\n")
    host = Host(name="nas", address="nas", ssh_config=config)
    started = time.monotonic()
    with pytest.raises(HostError, match=r"IdentityFile /dev/zero \(ssh_config\): is a device"):
        connect(host, timeout_s=1)
    assert time.monotonic() - started < 1  # refused before any connection attempt


def test_a_template_rendering_an_alias_bomb_stays_text_and_builds_nothing() -> None:
    """A one-expression value keeps its YAML scalar type; what it renders is never built as a
    collection, so a rendered "billion laughs" is only text."""
    from nasplan.input.loader import scalar_value

    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(9)
    )
    started = time.monotonic()
    assert scalar_value(bomb) == bomb
    assert time.monotonic() - started < 1
    assert [scalar_value(t) for t in ("5", "2.5", "true", "~", "5 s", "[1]")] == [
        5,
        2.5,
        True,
        None,
        "5 s",
        "[1]",
    ]


def test_a_matrix_of_a_billion_cells_or_of_many_tests_is_refused_at_once(tmp_path: Path) -> None:
    values = "[" + ", ".join(str(n) for n in range(100)) + "]"
    dimensions = "".join(f"      d{n}: {values}\n" for n in range(5))
    plan = PLAN + "    matrix:\n" + dimensions
    code, out, elapsed = validate_process(write(tmp_path, plan))
    assert code == 2 and elapsed < 10
    assert out.strip().endswith(
        "tests[0].matrix: the matrix has more than 1000 cells; split the plan"
    )
    # 1000 cells a test, six tests: more than the 5000 tests an expanded plan may hold
    big = "    matrix: {a: " + "[" + ", ".join(str(n) for n in range(1000)) + "]}\n"
    test = PLAN.split("tests:\n", 1)[1].replace("id: lan", "id: t%d") + big
    many = PLAN.split("tests:\n", 1)[0] + "tests:\n" + "".join(test % n for n in range(6))
    code, out, elapsed = validate_process(write(tmp_path, many))
    assert code == 2 and elapsed < 10 and "the plan expands to more than 5000 tests" in out
