"""One way of copying a file between a client and the NAS: the ``method`` of a transfer test.

``TransferMethod`` is the contract each method (``smb.py``, ``nfs.py``, ``rsync.py``,
``copy.py``) fills in: the tools it needs, its settings made concrete for one run, the timed
command of a repetition, the parser of that command's output, and how the NAS's copy is
removed. The transfer kind (``nasplan.measure.kinds.transfer``) asks its method and never
branches on a method's name.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from nasplan.errors import CannotStart
from nasplan.measure.series import COLD_READ, directions_asked
from nasplan.measure.tools import transfer, transfer_sets
from nasplan.remote.runner import Runner
from nasplan.units import parse_size

if TYPE_CHECKING:
    from nasplan.hosts.session import HostSession
    from nasplan.input.plan import PlanTest
    from nasplan.measure.kind import Needs, Probe
    from nasplan.platforms import Platform

# Reads go to /dev/null where the tool allows it, so the client's own disk is not measured;
# rsync needs a real file and writes into the client's temp dir.
DISCARD = "/dev/null"
SETUP_TIMEOUT_S = 60.0
# Slowest rate a repetition may take before it is killed: 0.5 MB/s (10^6 bytes/s).
SLOWEST_BYTES_PER_SECOND = 500_000
# ... and the slowest a file of a set may take besides its bytes (a create, a close)
SLOWEST_PER_FILE_S = 0.5
Command = tuple[list[str], list[list[str]]]
Parsed = dict[str, float | int | None]


@dataclass(frozen=True)
class TransferSettings:
    """A transfer test's settings as the plan gives them, each default stated here once."""

    method: str = "smb"
    direction: str = "both"
    size: str | int = "1GiB"
    share: str | None = None
    user: str | None = None
    password_env: str | None = None
    path: str | None = None
    mounted_path: str | None = None
    export: str | None = None
    nfs_version: int | None = None
    server_path: str | None = None
    ssh_user: str | None = None
    ssh_port: int | None = None
    ssh_identity: str | None = None
    ssh_known_hosts: str | None = None
    # the inventory's volume it copies to (``volume:``, or found from its share, path, export)
    volume: str | None = None
    # many files instead of one: {count, size}, or a list of them (a mixed set)
    files: dict[str, Any] | list[dict[str, Any]] | None = None
    # with files: the same bytes as one file too, each repetition (the small-file penalty)
    one_file: bool = True
    # warm: reads right after the write; cold: the NAS's cache dropped first; both
    read_cache: str = "warm"
    # several clients at once (the test's ``clients``: nasplan.measure.together)
    clients: list[str] | None = None
    # the client pings the NAS idle and through each copy (nasplan.measure.under_load)
    latency_under_load: bool = False

    @property
    def groups(self) -> tuple[tuple[int, int], ...]:
        """``files`` as (count, bytes each) groups; () for one file."""
        given = self.files
        if not given:
            return ()
        sets = given if isinstance(given, list) else [given]
        return tuple((int(g["count"]), parse_size(g["size"])) for g in sets)

    @property
    def size_bytes(self) -> int:
        """The bytes a repetition moves: the set's, or the one file's."""
        return transfer_sets.total_bytes(self.groups) if self.groups else parse_size(self.size)

    @property
    def directions(self) -> tuple[str, ...]:
        """What the test measures, in order: write, read (right after the write), cold-read."""
        asked = directions_asked(self.direction)
        if "read" not in asked or self.read_cache == "warm":
            return asked
        reads = (COLD_READ,) if self.read_cache == "cold" else ("read", COLD_READ)
        return (*(d for d in asked if d != "read"), *reads)


@dataclass(frozen=True)
class Transfer:
    """One test's settings made concrete for one run: its method, directions, size, where the
    NAS's copy goes."""

    method: TransferMethod
    directions: tuple[str, ...]
    size_bytes: int
    # the file's name on the NAS; a set's directory there (and in the client's temp dir)
    remote_name: str
    # the repetitions' numbers (nfs-cp writes a file of its own for each)
    indices: range = range(1, 2)
    share: str | None = None
    smb_user: str | None = None
    password_env: str | None = None
    remote_dir: str | None = None
    mounted_path: str | None = None
    export: str | None = None
    nfs_version: int | None = None
    server_path: str | None = None
    ssh: transfer.SshOptions = dataclasses.field(default_factory=transfer.SshOptions)
    # a set of many files: (count, bytes each) groups; () for one file
    groups: tuple[tuple[int, int], ...] = ()
    # the NAS's host key nasplan's own connection verified (``ssh-ed25519 AAAA...``), and the
    # addresses the plan and inventory give the NAS: a tool that checks host keys (rsync's ssh)
    # gets a known_hosts of them when the plan names none
    nas_key: str | None = None
    nas_names: tuple[str, ...] = ()

    @property
    def files(self) -> int:
        """How many files a repetition copies."""
        return transfer_sets.file_count(self.groups) if self.groups else 1

    @property
    def timeout_s(self) -> float:
        return 60.0 + self.size_bytes / SLOWEST_BYTES_PER_SECOND + self.files * SLOWEST_PER_FILE_S

    def one_file(self) -> Transfer:
        """The same bytes as one file, beside a set (its name on the NAS the set's and ``.bin``)."""
        return dataclasses.replace(self, groups=(), remote_name=f"{self.remote_name}.bin")

    def command(self, direction: str, local_dir: str, address: str) -> Command:
        """(timed argv, untimed argv run just before) of one repetition (``TransferMethod``)."""
        return self.method.command(self, direction, local_dir, address)


class ClientCopy(abc.ABC):
    """A client's own copy tool for a method (``TransferMethod.own_copy``): its scripts make the
    source, time each copy (the ``transfer.parse_timing`` lines: the copy's own stopwatch, no
    tool rate to read) and remove both copies, in the client's script language."""

    # copies a set of many files (``files:``); else such a test is refused on the client
    many_files: bool = False

    @abc.abstractmethod
    def check(self, xfer: Transfer, address: str) -> None:
        """ValueError for a value its scripts cannot carry (before anything is made)."""

    @abc.abstractmethod
    def refusal(self, host: str, method: str) -> str:
        """Why a test of another ``method`` is not measured from ``host``."""

    @abc.abstractmethod
    def prepare(
        self, xfer: Transfer, client: Runner, timeout_s: float
    ) -> tuple[str | None, str | None]:
        """Make the client's temp dir and the source: ``(temp dir, None)`` or ``(None, why)``."""

    @abc.abstractmethod
    def timed(
        self, xfer: Transfer, way: str, local_dir: str, address: str
    ) -> tuple[str, str, str | None]:
        """(what it runs, as a message names it; its timed script; the script's stdin)."""

    @abc.abstractmethod
    def cleanup(self, xfer: Transfer, client: Runner, local_dir: str, address: str) -> list[str]:
        """Remove the NAS's copy and the temp dir; what could not be removed."""


class TransferMethod(abc.ABC):
    """A ``method:`` of a transfer test; ``name`` is the plan's, ``label`` how people say it."""

    name: str = ""
    label: str = ""
    # copies a set of many files (``files:``) in one command
    many_files: bool = False

    def needs(self, test: PlanTest, s: TransferSettings) -> Needs:
        """Host -> the tools its platform must provide for this method."""
        return {}

    def own_copy(self, platform: Platform) -> ClientCopy | None:
        """How a client of ``platform`` copies this way with a copy tool of its own (Windows:
        its built-in SMB client); None: with this method's ``tool``, timed by a POSIX sh
        script, which a platform without POSIX sh cannot run (the method is refused there)."""
        return None

    @abc.abstractmethod
    def concrete(self, s: TransferSettings, base: Transfer, server: HostSession) -> Transfer:
        """``base`` with what this method needs of the settings; CannotStart naming a gap."""

    @abc.abstractmethod
    def tool(self, xfer: Transfer) -> str:
        """The client's command this method runs (checked before the source file is made)."""

    @abc.abstractmethod
    def command(self, xfer: Transfer, direction: str, local_dir: str, address: str) -> Command:
        """(timed argv, untimed argv run just before) of one repetition; ValueError for a
        value the tool's syntax cannot carry."""

    @abc.abstractmethod
    def parse(self, xfer: Transfer, output: str) -> Parsed:
        """The tool's output -> ``{"tool_bytes_per_second", "bytes"}``; TransferParseError."""

    @abc.abstractmethod
    def remove_copy(
        self, xfer: Transfer, client: Runner, server: Runner, local_dir: str, address: str
    ) -> list[str]:
        """Remove what the test put on the NAS; what could not be removed."""

    def write_target(self, xfer: Transfer, index: int) -> Transfer:
        """The Transfer of write ``index`` (0: the untimed seed of the reads)."""
        return xfer

    def nas_path(self, xfer: Transfer) -> str | None:
        """The copy's path as the NAS sees it (a cold read drops its cache), None when the
        plan does not say (``server_path``, a volume)."""
        return join(xfer.server_path, xfer.remote_name) if xfer.server_path else None

    def copies(self, xfer: Transfer) -> list[Transfer]:
        """Every copy a run of the test may write: each write's target when it writes, the
        untimed seed's when it reads, a set's one-file twin's too."""
        made = [xfer, xfer.one_file()] if xfer.groups else [xfer]
        seed = (0,) if any(d != "write" for d in xfer.directions) else ()
        writes = "write" in xfer.directions
        targets = [
            self.write_target(copy, index)
            for copy in made
            for index in (*seed, *(copy.indices if writes else ()))
        ]
        return list({t.remote_name: t for t in targets}.values())

    def nas_copies(self, xfer: Transfer) -> list[str]:
        """The copies' paths as the NAS sees them (recorded in its lock before the first is
        written); none when the plan does not say where they land there."""
        copies = self.copies(xfer)
        paths = [self.nas_path(copy) for copy in copies]
        paths += [scratch for copy in copies for scratch in self.nas_scratch(copy)]
        return [p for p in dict.fromkeys(paths) if p and p.startswith("/")]

    def nas_scratch(self, xfer: Transfer) -> list[str]:
        """Directories of the NAS the tool writes in besides the copy (rsync's temp dir),
        recorded with the copies; none by default."""
        return []

    def client_copies(self, xfer: Transfer) -> list[str]:
        """The copies' paths as the client sees them, when it writes them through a path of its
        own (a mount): recorded in the client's lock before the first is written."""
        return []

    def client_files(self, xfer: Transfer) -> list[tuple[str, str]]:
        """(name, text) of each file the client's tool needs for this copy (a script, a
        known_hosts), written into its temp dir before the first copy."""
        return []

    def probes(self, xfer: Transfer, test: PlanTest, address: str) -> list[Probe]:
        """What ``apply --check`` reads for this method (``nasplan.measure.probes``): none by
        default."""
        return []

    def credentials(self, xfer: Transfer) -> tuple[str | None, str | None]:
        """``(secret, why not)``: the password the client's tool needs (None: none)."""
        return None, None

    def auth_stdin(self, xfer: Transfer, secret: str) -> str | None:
        """What the client's set-up script keeps in its private directory for the tool."""
        return None


def join(directory: str | None, name: str) -> str:
    """``directory/name``, or ``name`` without a directory."""
    return f"{directory.rstrip('/')}/{name}" if directory else name


def remove_on_nas(server: Runner, paths: list[str], *, recursive: bool = False) -> list[str]:
    """``rm -f`` (``-rf``: a set's directory) the NAS's copies as the login user, then as root
    when that is refused (files an NFS server wrote belong to root or its anonymous user, not to
    a DSM admin); [] when gone, else one problem naming every path."""
    argv = ["rm", "-rf" if recursive else "-f", "--", *paths]
    result = server.run(argv, timeout_s=SETUP_TIMEOUT_S)
    if not result.ok:
        result = server.run(argv, timeout_s=SETUP_TIMEOUT_S, sudo=True)
    if result.ok:
        return []
    cause = result.stderr.strip().splitlines()[-1:] or [f"exit {result.exited}"]
    return [f"files left on the NAS: {' '.join(paths)} (rm, also with sudo: {cause[0]})"]


def needs_setting(method: str, what: str) -> CannotStart:
    """The error of a transfer whose method misses a setting."""
    return CannotStart(f"method {method} needs {what}")
