"""Error types that the CLI maps to exit codes and one-line messages."""

from __future__ import annotations


class NasplanError(Exception):
    """Base class of every error nasplan reports to the user without a traceback."""

    exit_code = 1


def _one_line(message: str) -> str:
    """Control characters shown escaped, so a message stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)


class InputError(NasplanError):
    """Invalid user input (plan, inventory, lab file): exit code 2, nothing touched."""

    exit_code = 2

    def __init__(self, messages: str | list[str]) -> None:
        listed = [messages] if isinstance(messages, str) else list(messages)
        # One line per problem, whatever a file name or value holds (a newline, a tab).
        self.messages = [_one_line(m) for m in listed]
        super().__init__("\n".join(self.messages))


class ShellQuoteError(InputError):
    """A value a host's shell cannot carry safely (the message names it and why): refused, never
    passed through half-quoted (``nasplan.remote.shell``)."""


class HostError(NasplanError):
    """A host could not be reached or authenticated: exit code 3."""

    exit_code = 3


class LabError(NasplanError):
    """The simulated lab could not be built or torn down."""

    exit_code = 1


class HostLostError(HostError):
    """A host stopped answering during the run (connection lost, channel or step timed out)."""

    def __init__(self, host: str, message: str) -> None:
        self.host = host
        super().__init__(message)


class RunDirError(NasplanError):
    """The run directory cannot take the run's files (full, read-only): exit code 1."""

    exit_code = 1


class RunDirBusy(NasplanError):
    """Another nasplan process (a run, its ``--resume``, a ``restore``) holds the run directory:
    exit code 3, nothing written into it."""

    exit_code = 3


class CannotStart(NasplanError):
    """A test cannot start (a host not ready, a tool missing, no address to send to).

    Its kind records the message as the test's error; the run goes on with the next test.
    """


class ToolError(NasplanError):
    """A measurement tool failed or printed no result nasplan can read (the message says what
    came instead); its kind records it as the repetition's error."""


# What a user meeting output nasplan does not know should do (docs/probe.md).
PROBE_ADVICE = (
    "run `nasplan probe HOST -i INVENTORY --out DIR` and attach DIR to a report (docs/probe.md)"
)
_GOT_CHARS = 80


class UnknownOutput(ToolError):
    """A host's command printed output nasplan does not understand (a layout, a field, a tool
    version it has no record of): one line naming the command and what was expected, and how to
    report it, never a traceback or a silent default."""

    def __init__(self, command: str, expected: str, got: str | None = None) -> None:
        self.command, self.expected = command, expected
        shown = " ".join((got or "").split())
        seen = "" if got is None else f"; got {shown[:_GOT_CHARS]!r}" if shown else "; got nothing"
        super().__init__(
            _one_line(
                f"`{command}` printed output nasplan does not understand (expected {expected}"
                f"{seen}); {PROBE_ADVICE}"
            )
        )
