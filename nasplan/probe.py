"""``nasplan probe``: every read-only command nasplan relies on for a host, its raw answers
written (redacted) into a directory laid out like ``tests/fixtures/``, for a report.

Nothing here changes the host: the commands are the facts round trip, the network readers of
every kind the host has tools for (``network/tools.py``'s own state scripts), tool versions,
TrueNAS's ``interface.query`` and ``sudo -n -l``; no sudo that writes, no install, no lock.

The directory::

    README.md            platform, version, date, nasplan version, host key fingerprint
    commands.json        each file: the command, its exit status and standard error
    derived.json         what nasplan derived live (facts, platform, NIC states per reader)
    facts/facts.txt      the facts script's output (as tests/fixtures/facts/*.txt)
    nettools/state-KIND.txt   a network reader's output (ip-json, ip-text, ifconfig, bsd-ifconfig)
    tools/TOOL-version.txt    ``TOOL --version``
    sudo/sudo-n-l.txt    ``sudo -n -l`` (a user that is not root)
    truenas/interface-query.json   ``midclt call interface.query`` (TrueNAS)

``rederive(directory)`` parses the files again: what a test expects to equal ``derived.json``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nasplan import __version__, platforms
from nasplan.errors import NasplanError, UnknownOutput
from nasplan.facts.bsd import BSD_KERNELS
from nasplan.facts.gather import HostFacts, gather, parse_checked
from nasplan.network import tools as nettools
from nasplan.network.truenas import query_argv
from nasplan.output import AddressMask, Redactor, redact_secret_lines, write_text
from nasplan.platforms import detect
from nasplan.remote import shell
from nasplan.remote.runner import Result, Runner, RunnerBase

PROBE_FORMAT = 1
_TIMEOUT_S = 60.0
# Tools whose version says which output layout a host prints; each asked with its own flag.
_VERSION_FLAGS = {
    "iperf3": "--version",
    "fio": "--version",
    "ip": "-V",
    "busybox": "--help",
    "ethtool": "--version",
    "smbclient": "--version",
    "rsync": "--version",
    "sudo": "-V",
    "zpool": "version",
}


@dataclass(frozen=True)
class Answer:
    """One read-only command and what it printed."""

    file: str
    command: str
    stdout: str
    stderr: str
    exited: int


def net_tools_kinds(facts: HostFacts) -> list[nettools.NetTools]:
    """Every network reader this host has tools for, the one nasplan uses first."""
    chosen = nettools.from_facts(facts)
    found = [chosen] if chosen else []
    ip, ifconfig = facts.tool("ip"), facts.tool("ifconfig")
    route = facts.tool("route") or "route"
    linux = facts.kernel_name not in BSD_KERNELS
    if ip and linux:
        found.append(nettools.NetTools(nettools.IP_TEXT, ip, ifconfig or "ifconfig", route))
    if ifconfig and linux:
        found.append(nettools.NetTools(nettools.IFCONFIG, ip or "ip", ifconfig, route))
    unique: dict[str, nettools.NetTools] = {}
    for one in found:
        unique.setdefault(one.kind, one)
    return list(unique.values())


def _posix_commands(facts: HostFacts) -> list[tuple[str, str]]:
    """(file, POSIX sh script) of every read-only command after the facts."""
    nics = [nic.name for nic in facts.interfaces]
    commands = [
        (f"nettools/state-{kind.kind}.txt", nettools.state_script(nics, kind))
        for kind in net_tools_kinds(facts)
    ]
    for tool, flag in _VERSION_FLAGS.items():
        path = facts.tool(tool)
        if path:
            line = f"{shlex.join([path, flag])} </dev/null 2>&1 | head -n 5"
            commands.append((f"tools/{tool}-version.txt", line))
    if facts.tool("sudo") and not facts.is_root:
        commands.append(("sudo/sudo-n-l.txt", "sudo -n -l </dev/null 2>&1"))
    if facts.tool("midclt"):
        argv = [facts.tool("midclt") or "midclt", *query_argv(nics)[1:]]
        commands.append(("truenas/interface-query.json", shlex.join(argv)))
    return commands


def _windows_commands() -> list[tuple[str, str]]:
    return [("tools/powershell-version.txt", "$PSVersionTable | Format-List")]


class _Recording(RunnerBase):
    """``runner`` itself, keeping the last script's result: the facts' raw output is the very
    text ``gather`` parsed (one round trip, nothing run twice)."""

    def __init__(self, inner: Runner) -> None:
        self.inner, self.name = inner, inner.name
        self.last: Result | None = None

    @property
    def host_shell(self) -> shell.HostShell:
        return self.inner.host_shell

    @host_shell.setter
    def host_shell(self, value: shell.HostShell) -> None:
        self.inner.use_shell(value)

    def use_shell(self, host_shell: shell.HostShell) -> None:
        self.inner.use_shell(host_shell)

    def run(self, argv: Sequence[str], **kwargs: Any) -> Result:
        return self.inner.run(argv, **kwargs)

    def run_script(self, script: str, **kwargs: Any) -> Result:
        self.last = self.inner.run_script(script, **kwargs)
        return self.last


def probe(runner: Runner, *, tool_paths: Mapping[str, str] | None = None) -> list[Answer]:
    """Gather the facts, then ask every read-only command; the answers in order, facts first.

    Raises what ``gather`` raises (HostError: unreachable), except UnknownOutput: then only the
    facts' raw output is kept (``derive`` names what it could not read).
    """
    recording = _Recording(runner)
    try:
        facts: HostFacts | None = gather(recording, tool_paths=tool_paths)
    except UnknownOutput:  # the raw facts are what a report needs
        facts = None
    raw = recording.last or Result("facts script", "", "", 1)
    answers = [Answer("facts/facts.txt", "facts script", raw.stdout, raw.stderr, raw.exited)]
    if facts is None:
        return answers
    posix = platforms.of(runner).posix_shell
    commands = _posix_commands(facts) if posix else _windows_commands()
    for file, text in commands:
        result = runner.run_script(text, timeout_s=_TIMEOUT_S)
        answers.append(Answer(file, text, result.stdout, result.stderr, result.exited))
    return answers


def derive(answers: list[Answer]) -> dict[str, Any]:
    """What nasplan makes of the answers: facts, platform, OS name, each reader's NIC states.

    An output it does not understand is recorded as that reader's ``error`` (one line).
    """
    by_file = {a.file: a.stdout for a in answers}
    derived: dict[str, Any] = {"probe_format": PROBE_FORMAT}
    try:
        facts = parse_checked(by_file["facts/facts.txt"])
    except NasplanError as exc:
        return {**derived, "error": str(exc)}
    platform = detect(facts)
    derived.update(
        facts=facts.to_dict(),
        platform=platform.name,
        os_name=_or_error(lambda: platform.os_name(facts)),
        net_tools=(nettools.from_facts(facts) or nettools.NetTools("none")).kind,
        states={},
    )
    for file, text in sorted(by_file.items()):
        if file.startswith("nettools/state-"):
            kind = file.removeprefix("nettools/state-").removesuffix(".txt")
            derived["states"][kind] = _or_error(
                lambda t=text: {n: s.to_dict() for n, s in nettools.parse_state_output(t).items()}
            )
    return derived


def _or_error(compute: Any) -> Any:
    try:
        return compute()
    except NasplanError as exc:
        return {"error": str(exc)}


def rederive(directory: Path) -> dict[str, Any]:
    """``derive`` of a probe directory's files (what its ``derived.json`` should say)."""
    index = json.loads((directory / "commands.json").read_text(encoding="utf-8"))
    answers = [
        Answer(
            e["file"],
            e["command"],
            (directory / e["file"]).read_text(encoding="utf-8"),
            e["stderr"],
            e["exited"],
        )
        for e in index["commands"]
    ]
    return derive(answers)


@dataclass(frozen=True)
class Written:
    """A probe directory and what it holds (for the CLI's last lines)."""

    directory: Path
    platform: str
    files: tuple[str, ...]


def write(
    directory: Path,
    host_name: str,
    answers: list[Answer],
    redactor: Redactor,
    *,
    host_key: str | None,
    mask: AddressMask | None,
    now: datetime | None = None,
) -> Written:
    """Write the answers, ``derived.json``, ``commands.json`` and the README stub."""

    def clean(text: str) -> str:
        text = redact_secret_lines(redactor.text(text))
        return mask.text(text) if mask else text

    derived = derive(answers)
    index = []
    for answer in answers:
        write_text(directory / answer.file, clean(answer.stdout), redactor)
        index.append(
            {
                "file": answer.file,
                "command": clean(answer.command),
                "exited": answer.exited,
                "stderr": clean(answer.stderr),
            }
        )
    listing = {"probe_format": PROBE_FORMAT, "nasplan_version": __version__, "commands": index}
    write_text(directory / "commands.json", json.dumps(listing, indent=2) + "\n", redactor)
    derived_text = clean(json.dumps(derived, indent=2, sort_keys=True, ensure_ascii=False))
    write_text(directory / "derived.json", derived_text + "\n", redactor)
    stamp = (now or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    readme = readme_stub(host_name, derived, host_key, stamp, masked=mask is not None)
    write_text(directory / "README.md", clean(readme), redactor)
    files = ("README.md", "commands.json", "derived.json", *(a.file for a in answers))
    return Written(directory, str(derived.get("platform", "unknown")), files)


def readme_stub(
    host_name: str, derived: Mapping[str, Any], host_key: str | None, stamp: str, *, masked: bool
) -> str:
    """The directory's README: what was probed, when, and what nasplan made of it."""
    facts = derived.get("facts") or {}
    os_name = derived.get("os_name")
    version = os_name if isinstance(os_name, str) else facts.get("os_pretty") or "unknown"
    lines = [
        f"# nasplan probe of {host_name}",
        "",
        f"- platform (as nasplan detected it): {derived.get('platform', 'unknown')}",
        f"- version: {version}; kernel {facts.get('kernel_name')} {facts.get('kernel')}",
        f"- probed: {stamp}, nasplan {__version__}, probe format {PROBE_FORMAT}",
        f"- host key: {host_key or 'not recorded'} (its fingerprint only)",
        "- addresses and identifiers: "
        + (
            "masked (10.x.y.z, 2001:db8::, 02:00:00:...; boot id, UUIDs, host key fingerprint, "
            "disk ids and serials)"
            if masked
            else "as seen"
        ),
        "",
        "Raw outputs of read-only commands, laid out as `tests/fixtures/`; `commands.json` names "
        "each file's command, exit status and standard error; `derived.json` is what nasplan "
        "made of them on the spot. Secrets nasplan knew of, and the values of keys named like "
        "a password, token or private key, are masked. What the machine is (model, firmware) "
        "and anything odd you noticed:",
        "",
        "- (please fill in)",
    ]
    if "error" in derived:
        lines[2:2] = [f"- nasplan could not read the facts: {derived['error']}"]
    return "\n".join(lines) + "\n"


def run_probe(
    inventory: Path | Sequence[Path],
    host_name: str,
    out: Path,
    *,
    mask_addresses: bool,
    environ: Mapping[str, str],
    reader: str = "nasplan",
) -> Written:
    """``nasplan probe``: connect to ``host_name`` of ``inventory`` (strict host keys), probe it,
    write ``out``. InputError (exit 2): no such host, ``out`` not empty; HostError (3)."""
    from nasplan.errors import InputError
    from nasplan.input.inventory import load_inventory
    from nasplan.output import redactor_of, secrets_from_environ
    from nasplan.remote import ssh

    loaded = load_inventory(inventory, reader, Path.cwd())  # group_vars here, as `ansible`'s
    hosts = loaded.hosts
    if host_name not in hosts:
        known = ", ".join(sorted(hosts)) or "none"
        raise InputError(f"{loaded.named}: no host {host_name!r} (hosts: {known})")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out}: exists and is not an empty directory; choose another --out")
    host = hosts[host_name]
    secret_names = {"become_password_env": host.become_password_env, **dict(host.vars)}
    redactor = redactor_of(secrets_from_environ([secret_names], environ))
    runner = ssh.connect(host)
    try:
        answers = probe(runner, tool_paths=host.tools)
        host_key = ssh.server_key_fingerprint(runner)
    finally:
        runner.close()
    mask = AddressMask() if mask_addresses else None
    return write(out, host_name, answers, redactor, host_key=host_key, mask=mask)
