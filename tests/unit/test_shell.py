"""The command-building layer: hostile values through POSIX sh, PowerShell and cmd.exe quoting.

POSIX quoting is checked by running the real ``sh``. No PowerShell or cmd.exe exists here: their
quoting is checked against the documented tokenizer rules (PowerShell verbatim strings,
MSVCRT/CommandLineToArgvW argument splitting), implemented below as small reference parsers.
"""

from __future__ import annotations

import base64
import subprocess

import pytest

from nasplan.remote import shell

HOSTILE = [
    "plain",
    "with space",
    "two  spaces\tand tab",
    "single'quote",
    'double"quote',
    "semi;colon && rm -rf /tmp/x",
    "$(touch /tmp/nasplan-pwned)",
    "`touch /tmp/nasplan-pwned`",
    "$HOME ${PATH} $env:USERPROFILE",
    "%PATH% %USERPROFILE%",
    "!delayed!",
    "new\nline",
    "back\\slash\\",
    "pipe | amp & lt < gt > caret ^ paren ( )",
    "unicode ’smart‘ quotes ‚‛",
    "",
    "-starts-with-dash",
    "*glob?[x]",
    "#comment",
    "~tilde",
]


def _sh_argv(line: str) -> list[str]:
    """What the real /bin/sh hands to a program for ``line`` (NUL-separated via printf)."""
    out = subprocess.run(
        ["sh", "-c", line], capture_output=True, check=True, env={"PATH": "/usr/bin:/bin"}
    ).stdout
    return out.decode().split("\0")[:-1]


@pytest.mark.parametrize("value", HOSTILE)
def test_posix_join_delivers_each_hostile_value_unchanged_through_real_sh(value: str) -> None:
    line = shell.PosixSh().join(["printf", "%s\\0", value, "after"])
    assert _sh_argv(line) == [value, "after"]


def test_posix_exec_line_runs_the_script_through_a_second_sh_unchanged() -> None:
    values = [v for v in HOSTILE if v]
    script = shell.PosixSh().join(["printf", "%s\\0", *values])
    # The SSH server's login shell parses the exec line; it must run exactly ``script``.
    assert _sh_argv(shell.POSIX.exec_line(script)) == values


def _powershell_verbatim(token: str) -> str:
    """PowerShell's reading of one single-quoted string token (about_Quoting_Rules)."""
    quotes = "'\u2018\u2019\u201a\u201b"
    assert token[0] in quotes and token[-1] in quotes, token
    body, out, i = token[1:-1], [], 0
    while i < len(body):
        if body[i] in quotes:
            assert i + 1 < len(body) and body[i + 1] in quotes, f"lone quote in {token!r}"
            out.append(body[i])
            i += 2
        else:
            out.append(body[i])
            i += 1
    return "".join(out)


@pytest.mark.parametrize("value", [v for v in HOSTILE if '"' not in v])
def test_powershell_quote_is_one_verbatim_string_with_the_value(value: str) -> None:
    quoted = shell.PowerShell().quote(value)
    assert _powershell_verbatim(quoted) == value
    # nothing outside the quotes, so $x, $(...), backticks and %VAR% stay text
    assert quoted.startswith("'") and quoted.endswith("'")


def test_powershell_join_calls_the_program_with_the_call_operator() -> None:
    line = shell.PowerShell().join([r"C:\iperf 3\iperf3.exe", "-c", "198.19.16.2"])
    assert line == r"& 'C:\iperf 3\iperf3.exe' '-c' '198.19.16.2'"


@pytest.mark.parametrize("value", ['say "hi"', "C:\\my dir\\"])
def test_powershell_refuses_what_windows_powershell_passes_to_programs_wrongly(value: str) -> None:
    with pytest.raises(shell.ShellQuoteError):
        shell.PowerShell().join(["iperf3.exe", value])


def test_windows_exec_line_is_base64_of_the_utf16_script_and_has_no_shell_metacharacters() -> None:
    script = "Write-Output 'a;b' $(Get-Date) `n %PATH% !x!"
    for login in (None, r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe"):
        line = shell.windows(login).exec_line(script)
        encoded = line.replace("'", "").split()[-1]
        assert base64.b64decode(encoded).decode("utf-16-le") == script
        # PowerShell's call operator ``& `` leads; nothing else any login shell would act on
        assert not set(line.removeprefix("& ")) & set('%!"$`;&|<>^()\n'), line
    assert shell.windows(None).exec_line(script).startswith("powershell.exe -NoLogo -NoProfile")


def test_windows_exec_line_over_the_cmd_limit_is_refused_not_truncated() -> None:
    with pytest.raises(shell.ShellQuoteError, match="8191"):
        shell.windows(None).exec_line("Write-Output 'x'\n" * 400)


def test_windows_argv_script_keeps_the_programs_exit_status() -> None:
    script = shell.windows(None).argv_script(["iperf3.exe", "--version"])
    assert script == "& 'iperf3.exe' '--version'\nexit $LASTEXITCODE"


def _msvcrt_argv(line: str) -> list[str]:
    """CommandLineToArgvW's splitting (2008+ rules) of a line without % ! or quotes inside."""
    args, current, i, quoted, started = [], [], 0, False, False
    while i < len(line):
        c = line[i]
        if c == "\\":
            run = len(line[i:]) - len(line[i:].lstrip("\\"))
            if i + run < len(line) and line[i + run] == '"':
                current.append("\\" * (run // 2))
                i += run
                if run % 2:
                    current.append('"')
                    i += 1
                continue
            current.append("\\" * run)
            i += run
            started = True
            continue
        if c == '"':
            quoted, started = not quoted, True
        elif c in " \t" and not quoted:
            if started or current:
                args.append("".join(current))
            current, started = [], False
        else:
            current.append(c)
            started = True
        i += 1
    if started or current:
        args.append("".join(current))
    return args


CMD_SAFE = [v for v in HOSTILE if not set(v) & set('%!"\n')]


@pytest.mark.parametrize("value", CMD_SAFE)
def test_cmd_quote_gives_the_program_the_value_unchanged(value: str) -> None:
    line = shell.Cmd().join(["iperf3.exe", value, "after"])
    assert _msvcrt_argv(line) == ["iperf3.exe", value, "after"]
    # cmd.exe metacharacters only ever stand inside double quotes
    outside = "".join(part for n, part in enumerate(line.split('"')) if n % 2 == 0)
    assert not set(outside) & set("&|<>^()"), line


@pytest.mark.parametrize("value", ["%PATH%", "!x!", 'a"b', "new\nline"])
def test_cmd_refuses_what_it_would_expand_or_split(value: str) -> None:
    with pytest.raises(shell.ShellQuoteError, match=r"cmd\.exe cannot carry"):
        shell.Cmd().quote(value)


@pytest.mark.parametrize(
    ("default_shell", "login"),
    [
        (None, "cmd"),
        ("", "cmd"),
        (r"C:\Windows\System32\cmd.exe", "cmd"),
        (r"C:\Windows\System32\WindowsPowerShell\v1.0\powershell.exe", "powershell"),
        (r"C:\Program Files\PowerShell\7\pwsh.exe", "powershell"),
        (r"C:\Program Files\Git\bin\bash.exe", "sh"),
    ],
)
def test_default_shell_value_names_the_login_shell(default_shell: str | None, login: str) -> None:
    host_shell = shell.windows(default_shell)
    assert host_shell.login.name == login
    assert host_shell.scripts.name == "powershell"
