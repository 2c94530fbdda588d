"""Every PowerShell script nasplan generates, parsed by a grammar someone else maintains.

The grammar is tree-sitter-powershell (PyPI ``tree-sitter-powershell``, from the
``airbus-cert/tree-sitter-powershell`` grammar). Each script is built with hostile values
(quotes of every kind PowerShell knows, ``$()``, backticks, spaces, non-ASCII); the parse
must hold no error except the grammar's known gaps below, and each hostile value must stand in
the script as exactly one string literal whose content, read with PowerShell's rules, is the
value. The ``-EncodedCommand`` nasplan sends is decoded again, by Python and by ``base64`` +
``iconv``, and compared with the script.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
import tree_sitter
import tree_sitter_powershell

from nasplan.facts import windows as facts_windows
from nasplan.measure import diskspd_workdir
from nasplan.measure.kinds.disk_profile import profiles
from nasplan.measure.kinds.disk_profile import windows as profile_windows
from nasplan.measure.kinds.iperf3 import server_windows as iperf3_server_windows
from nasplan.measure.kinds.iperf3 import tool as iperf3
from nasplan.measure.kinds.iperf3.settings import Iperf3Params
from nasplan.measure.tools import diskspd, transfer_windows
from nasplan.platforms.windows import refusal_commands
from nasplan.remote import shell

PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_powershell.language()))
# PowerShell's tokenizer takes all of these as a single quote (nasplan.remote.shell).
QUOTE_CLASS = "'\u2018\u2019\u201a\u201b"

# Hostile values: each one alone in a script must come back as exactly one literal.
HOSTILE = [
    "it's",
    "$(Remove-Item -Recurse C:\\)",
    "`n`$env:PATH`0",
    "two  spaces and a tab\t!",
    'double "quoted" $x',
    "Ethernet \u2019 2 \u2018\u201a\u201b'' end",
    "Netzwerkverbindung \u00e4\u00f6\u00fc \u4e2d\u6587 \U0001f600",
    "a; & | < > ( ) { } @ # , %PATH% !x!",
    "trailing backslash\\",
]
# What Windows PowerShell 5.1 cannot pass to a native program, and what cmd.exe's quoting (the
# iperf3 server's Win32_Process command line) cannot carry: refused instead.
NATIVE_REFUSED = re.compile(r'"|(?s:\s.*\\$)')
CMD_REFUSED = re.compile(r'[%!"\r\n]')


@dataclass(frozen=True)
class Gap:
    """One construct the grammar does not know, though PowerShell does (an exception as narrow
    as that construct): ``matches(node, source)`` says whether an ERROR node is it."""

    name: str
    reason: str
    matches: Callable[[tree_sitter.Node, bytes], bool]


def _multiplier_suffix(node: tree_sitter.Node, source: bytes) -> bool:
    # the ERROR holds the suffix alone, right after the digits of a number
    return (
        node.text in (b"KB", b"MB", b"GB", b"TB", b"PB")
        and source[node.start_byte - 1 : node.start_byte].isdigit()
    )


KNOWN_GAPS = [
    Gap(
        "upper-case numeric multiplier",
        "PowerShell's multipliers (1KB, 1MB, ...) are case-insensitive; the grammar's regex "
        "knows only lower case kb/mb/gb/tb/pb, so `1MB` in an argument list is an ERROR "
        "(transfer_windows uses [IO.FileStream]'s 1MB buffer size)",
        _multiplier_suffix,
    ),
]
# Not an ERROR, so no Gap entry, but checked below by hand: the grammar ends a verbatim string
# at an ASCII ' only, PowerShell at any of QUOTE_CLASS. Every such character inside a literal
# must therefore come in pairs (what nasplan.remote.shell.PowerShell.quote makes).


def errors(tree: tree_sitter.Tree) -> Iterator[tree_sitter.Node]:
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            yield node
            continue
        stack.extend(node.children)


def literals(tree: tree_sitter.Tree) -> list[str]:
    """The content of every verbatim ('...') string literal, as PowerShell reads it, in order."""
    found: list[str] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "verbatim_string_characters":
            inner = (node.text or b"").decode("utf-8")[1:-1]
            for run in re.findall(f"[{QUOTE_CLASS}]+", inner):
                assert len(run) % 2 == 0, f"an undoubled quote ends PowerShell's string: {inner!r}"
            found.append(re.sub(f"([{QUOTE_CLASS}])[{QUOTE_CLASS}]", r"\1", inner))
        stack.extend(reversed(node.children))  # in source order
    return found


def parse_checked(script: str, gaps_seen: set[str] | None = None) -> tree_sitter.Tree:
    """The script's tree; fails on any ERROR that is not a known gap."""
    source = script.encode("utf-8")
    tree = PARSER.parse(source)
    for node in errors(tree):
        gap = next((g for g in KNOWN_GAPS if g.matches(node, source)), None)
        line = source.splitlines()[node.start_point.row].decode("utf-8", "replace")
        assert gap is not None, f"PowerShell syntax error at {node.start_point}: {line!r}"
        if gaps_seen is not None:
            gaps_seen.add(gap.name)
    return tree


def _pathlike(value: str) -> str:
    return f"C:\\Program Files\\{value}"


def _native_ok(value: str) -> bool:
    return not NATIVE_REFUSED.search(value)


def _cmd_ok(value: str) -> bool:
    return not CMD_REFUSED.search(value)


# name -> (script builder of one hostile value, is the value refused there?)
Builder = Callable[[str], tuple[str, list[str]]]


def _facts(value: str) -> tuple[str, list[str]]:
    return facts_windows.facts_script({"iperf3": value}), [value]


def _server_start(value: str) -> tuple[str, list[str]]:
    path = _pathlike(value)
    pidfile, logfile = iperf3_server_windows.temp_paths(value, 5201)
    script = iperf3_server_windows.server_start_script(path, 5201, pidfile, logfile)
    argv = [path, "-s", "-1", "-p", "5201", "-J", "--logfile", logfile]
    return script, [path, pidfile, logfile, shell.Cmd().join(argv)]


def _server_stop(value: str) -> tuple[str, list[str]]:
    return iperf3_server_windows.server_stop_script(f"p{value}", f"l{value}"), [
        f"p{value}",
        f"l{value}",
    ]


def _timed_copy(value: str) -> tuple[str, list[str]]:
    share, remote = f"\\\\nas\\s{value}", f"\\\\nas\\s\\r{value}"
    script = transfer_windows.timed_copy_script(share, remote, f"C:\\t{value}", "write", value)
    return script, [share, remote, f"C:\\t{value.rstrip(chr(92))}\\source.bin", value]


def _cleanup(value: str) -> tuple[str, list[str]]:
    share, remote, local = f"\\\\nas\\s{value}", f"\\\\nas\\s\\r{value}", f"C:\\t{value}"
    return transfer_windows.cleanup_script(share, remote, local, value), [share, remote, local]


def _make_dir(value: str) -> tuple[str, list[str]]:
    return diskspd_workdir.make_dir_script(_pathlike(value)), [_pathlike(value)]


def _remove_dir(value: str) -> tuple[str, list[str]]:
    return diskspd_workdir.remove_dir_script(_pathlike(value)), [_pathlike(value)]


def _iperf3_client(value: str) -> tuple[str, list[str]]:
    argv = iperf3.client_argv(_pathlike(value), "198.18.0.10", Iperf3Params(duration_s=2))
    return shell.windows(None).argv_script(argv), [_pathlike(value)]


def _diskspd(value: str) -> tuple[str, list[str]]:
    target = f"D:\\bench {value}\\diskspd.dat"
    argv = diskspd.diskspd_argv("C:\\diskspd.exe", target, diskspd.DiskspdParams("write", 2**20))
    return shell.windows("powershell.exe").argv_script(argv), [target]


def _profile_layout(value: str) -> tuple[str, list[str]]:
    return profile_windows.layout_script(_pathlike(value), 2**30), [_pathlike(value)]


def _profile_through_share(value: str) -> tuple[str, list[str]]:
    """A disk-profile run from a Windows client: diskspd in ``\\\\nas\\s<value>``, the
    share opened as the user ``value`` around it."""
    share, target = f"\\\\nas\\s{value}", f"\\\\nas\\s{value}\\diskspd.dat"
    argv = profile_windows.job_argv(
        "C:\\diskspd.exe", target, profiles.GRID[2], "mix", duration_s=5
    )
    body = shell.PowerShell().join(argv) + "\n$rc = $LASTEXITCODE"
    return diskspd_workdir.mapped_script(share, value, body), [share, value, target]


def _refusal(value: str) -> tuple[str, list[str]]:
    return "\n".join(refusal_commands(value)), [value] * 4


BUILDERS: dict[str, tuple[Builder, Callable[[str], bool]]] = {
    "facts": (_facts, lambda v: True),
    "iperf3-server-start": (_server_start, lambda v: _cmd_ok(_pathlike(v))),
    "iperf3-server-stop": (_server_stop, lambda v: True),
    "smb-timed-copy": (_timed_copy, lambda v: True),
    "smb-cleanup": (_cleanup, lambda v: True),
    "diskspd-make-dir": (_make_dir, lambda v: True),
    "diskspd-remove-dir": (_remove_dir, lambda v: True),
    # the program itself is a PowerShell literal after `&`, not an argument of a native program
    "iperf3-client": (_iperf3_client, lambda v: True),
    "diskspd-run": (_diskspd, lambda v: _native_ok(f"D:\\bench {v}\\diskspd.dat")),
    "diskspd-profile-layout": (_profile_layout, lambda v: True),
    "diskspd-profile-through-share": (
        _profile_through_share,
        lambda v: _native_ok(f"\\\\nas\\s{v}\\diskspd.dat"),
    ),
    "network-refusal": (_refusal, lambda v: True),
}


@pytest.mark.parametrize("value", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_each_script_parses_and_holds_each_value_as_one_literal(name: str, value: str) -> None:
    build, accepted = BUILDERS[name]
    if not accepted(value):
        with pytest.raises(shell.ShellQuoteError):
            build(value)
        return
    script, values = build(value)
    found = literals(parse_checked(script))
    for wanted in set(values):
        assert found.count(wanted) == values.count(wanted), (name, wanted, found)


def test_scripts_without_values_parse_too() -> None:
    for script in (transfer_windows.setup_script(10**9), facts_windows.facts_script()):
        parse_checked(script)


def test_every_known_gap_is_still_met_and_nothing_else_is_excused() -> None:
    seen: set[str] = set()
    for build, accepted in BUILDERS.values():
        if accepted("plain"):
            parse_checked(build("plain")[0], seen)
    assert seen == {gap.name for gap in KNOWN_GAPS}, "a gap no script meets: remove it"
    # the exception is as narrow as its construct: a lower-case suffix parses, others fail
    assert not list(errors(PARSER.parse(b"$s.CopyTo($t, 1mb)")))
    with pytest.raises(AssertionError, match="syntax error"):
        parse_checked("$s.CopyTo($t, 1MB")
    with pytest.raises(AssertionError, match="syntax error"):
        parse_checked("$s.CopyTo($t, 1 MB)")


def test_the_checker_sees_an_injected_value() -> None:
    # an unquoted $() is a sub-expression, not a literal: the literal count catches it
    tree = parse_checked("$x = 'a' + $(Remove-Item C:\\)")
    assert literals(tree) == ["a"]
    with pytest.raises(AssertionError, match="undoubled quote"):
        literals(parse_checked("$x = 'it\u2019s'"))


ENCODED = [
    "Write-Output 'plain'",
    "'\u00e4\u00f6\u00fc \u4e2d\u6587 \U0001f600 \u2019'",
    transfer_windows.setup_script(2**20),
]


def _encoded_of(line: str, login: shell.Shell) -> str:
    """The -EncodedCommand value of an exec line: a PowerShell command line (parsed by the
    grammar too) or a cmd.exe one (plain words: Cmd leaves base64 bare)."""
    words = literals(parse_checked(line)) if login.name == "powershell" else line.split()
    assert words.count("-EncodedCommand") == 1, line
    return words[words.index("-EncodedCommand") + 1]


@pytest.mark.parametrize(
    "login", [None, "powershell.exe", "C:\\Program Files\\PowerShell\\7\\pwsh.exe"]
)
@pytest.mark.parametrize("script", ENCODED, ids=range(len(ENCODED)))
def test_encoded_command_decodes_to_the_script(script: str, login: str | None) -> None:
    host_shell = shell.windows(login)
    encoded = _encoded_of(host_shell.exec_line(script), host_shell.login)
    assert re.fullmatch(r"[A-Za-z0-9+/=]+", encoded)
    assert base64.b64decode(encoded, validate=True).decode("utf-16-le") == script
    if shutil.which("base64") and shutil.which("iconv"):  # coreutils and glibc: a second decoder
        raw = subprocess.run(
            ["base64", "-d"], input=encoded.encode(), capture_output=True, check=True
        ).stdout
        text = subprocess.run(
            ["iconv", "-f", "UTF-16LE", "-t", "UTF-8"], input=raw, capture_output=True, check=True
        ).stdout
        assert text.decode("utf-8") == script


def test_the_decoder_tools_are_there_on_the_test_machine() -> None:
    # the second decoder above must not be skipped silently where the suite is run
    assert shutil.which("base64") and shutil.which("iconv")
