"""Jinja in plans: a sandbox that sees only the plan's data and cannot grow without bound.

``ImmutableSandboxedEnvironment`` already refuses Python internals (``__class__``, ``mro``) and
mutation; on top of that every operation that can build a large value (``*``, ``**``, ``+``,
``%``, ``~``, filters, method calls) is checked before it runs, each rendered value is limited to
``MAX_VALUE_CHARS``, and one value may take at most ``MAX_RENDER_S`` seconds.
"""

from __future__ import annotations

import functools
import re
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import jinja2
from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.nodes import Concat
from jinja2.sandbox import ImmutableSandboxedEnvironment

MAX_VALUE_CHARS = 65_536  # one rendered plan value
MAX_WORK_CHARS = 1_000_000  # every string or list item built while rendering one value
MAX_INT_BITS = 4096
MAX_RENDER_S = 2.0  # one value
MAX_PLAN_RENDER_S = 10.0  # every value of one plan together
# Filters a plan may use; the rest (random, urlize, xmlattr, pprint, ...) have no use in a plan.
_FILTERS = (
    "abs", "capitalize", "center", "count", "d", "default", "dictsort", "first", "float",
    "format", "indent", "int", "items", "join", "last", "length", "list", "lower", "map", "max",
    "min", "reject", "rejectattr", "replace", "reverse", "round", "select", "selectattr", "sort",
    "string", "sum", "title", "tojson", "trim", "truncate", "unique", "upper", "wordcount",
)  # fmt: skip
_PRINTF_FIELD = re.compile(r"%[-#0 +]*(\*|[0-9]+)?(?:\.(\*|[0-9]+))?")
_FORMAT_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")
_NESTED_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")
_SIMPLE_LOOKUP = re.compile(
    r"^\{\{\s*([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*\}\}$"
)


class TemplateRefused(SecurityError):
    """A template would build a value beyond the limits, or ran too long."""


def _size(value: Any) -> int:
    return len(value) if isinstance(value, (str, bytes, list, tuple)) else 0


def _check_format(fmt: str, printf: bool) -> None:
    """Refuse a format string whose widths or precisions exceed MAX_VALUE_CHARS."""
    if printf:
        numbers = [n for m in _PRINTF_FIELD.finditer(fmt) for n in m.groups() if n]
    else:
        if _NESTED_SPEC.search(fmt):
            raise TemplateRefused("nested format specs ({0:{1}}) are not allowed")
        numbers = re.findall(r"[0-9]+", " ".join(_FORMAT_SPEC.findall(fmt)))
    for number in numbers:
        if number == "*" or int(number) > MAX_VALUE_CHARS:
            raise TemplateRefused(f"format width {number} is over {MAX_VALUE_CHARS} characters")


class _BoundedCodeGenerator(CodeGenerator):
    """Compiles ``a ~ b`` to a call the environment can check (it is not an intercepted binop)."""

    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class PlanSandbox(ImmutableSandboxedEnvironment):
    """The environment plan values render in: ``range`` and safe filters only, sizes checked."""

    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _BoundedCodeGenerator

    def __init__(self) -> None:
        super().__init__(undefined=jinja2.StrictUndefined, autoescape=False)
        self.globals = {"range": self._range}
        self.filters = {name: self._bounded_filter(name, self.filters[name]) for name in _FILTERS}
        self.work_chars = 0
        self.render_s_left = MAX_PLAN_RENDER_S
        self._compiled: dict[str, jinja2.Template] = {}

    def spend(self, chars: int) -> None:
        """Count ``chars`` (about to be built) against this render's budget."""
        self.work_chars += max(chars, 0)
        if self.work_chars > MAX_WORK_CHARS:
            raise TemplateRefused(f"builds more than {MAX_WORK_CHARS} characters")

    def charge(self, value: Any) -> Any:
        """Count ``value``'s size against this render's budget; return it unchanged."""
        self.spend(_size(value))
        return value

    def _range(self, *args: int) -> range:
        numbers = range(*args)
        if len(numbers) > MAX_VALUE_CHARS:
            raise TemplateRefused(f"range of {len(numbers)} items is over {MAX_VALUE_CHARS}")
        self.spend(len(numbers))
        return numbers

    def _bounded_filter(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def bounded(*args: Any, **kwargs: Any) -> Any:
            self._check_arguments(args, kwargs)
            if name == "format" and args and isinstance(args[0], str):
                _check_format(args[0], printf=True)
            if name == "replace" and len(args) >= 3:
                self._check_replace(str(args[0]), str(args[1]), str(args[2]))
            return self.charge(func(*args, **kwargs))

        return bounded

    def _check_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        for value in (*args, *kwargs.values()):
            if isinstance(value, int) and abs(value) > MAX_VALUE_CHARS:
                raise TemplateRefused(f"argument {value} is over the limit of {MAX_VALUE_CHARS}")

    def _check_replace(self, text: str, old: str, new: str) -> None:
        grown = len(text) + (text.count(old) if old else len(text) + 1) * len(new)
        if grown > MAX_VALUE_CHARS:
            raise TemplateRefused(f"replace would build {grown} characters")

    def call(self, context: Any, obj: Any, /, *args: Any, **kwargs: Any) -> Any:
        """A method call from the template: int arguments and ``str.replace`` checked."""
        self._check_arguments(args, kwargs)
        owner = getattr(obj, "__self__", None)
        if isinstance(owner, str) and getattr(obj, "__name__", "") == "replace" and len(args) >= 2:
            self._check_replace(owner, str(args[0]), str(args[1]))
        return self.charge(super().call(context, obj, *args, **kwargs))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``'{:>9}'.format(x)``: the format string's widths are checked when it is looked up."""
        owner = getattr(value, "__self__", None)
        if isinstance(owner, str) and getattr(value, "__name__", "") in ("format", "format_map"):
            _check_format(owner, printf=False)
        return super().wrap_str_format(value)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """``*``, ``**``, ``+`` and ``%`` with their result's size checked before it is built."""
        if operator == "*":
            if isinstance(left, int) and _size(right):
                left, right = right, left
            if _size(left) and isinstance(right, int):
                self.spend(_size(left) * right)
            elif (
                isinstance(left, int)
                and isinstance(right, int)
                and left.bit_length() + right.bit_length() > MAX_INT_BITS
            ):
                raise TemplateRefused(f"product is over {MAX_INT_BITS} bits")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int):
            if abs(left) > 1 and right * left.bit_length() > MAX_INT_BITS:
                raise TemplateRefused(f"power is over {MAX_INT_BITS} bits")
        elif operator == "+" and _size(left) and _size(right):
            self.spend(_size(left) + _size(right))
        elif operator == "%" and isinstance(left, str):
            _check_format(left, printf=True)
        return self.charge(super().call_binop(context, operator, left, right))

    def bounded_concat(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b ~ c``: the parts' total length is checked before they are joined."""
        texts = [str(part) for part in parts]
        self.spend(sum(len(t) for t in texts))
        return "".join(texts)

    def render(self, source: str, context: Mapping[str, Any]) -> str:
        """Render ``source`` over ``context``; TemplateRefused or a Jinja/Python error if not."""
        simple = _SIMPLE_LOOKUP.match(source.strip())
        if simple:
            found = _lookup(context, simple.group(1).split("."))
            if isinstance(found, (str, int, float)):
                return str(found)
        template = self._compiled.get(source)
        if template is None:
            template = self._compiled[source] = self.from_string(source)
        self.work_chars = 0
        out: list[str] = []
        length = 0
        started = time.monotonic()
        if self.render_s_left <= 0:
            raise TemplateRefused(f"the plan's templates took longer than {MAX_PLAN_RENDER_S:g} s")
        try:
            with _deadline(min(MAX_RENDER_S, self.render_s_left)):
                for chunk in template.generate(context):
                    length += len(chunk)
                    if length > MAX_VALUE_CHARS:
                        raise TemplateRefused(f"renders more than {MAX_VALUE_CHARS} characters")
                    out.append(chunk)
        finally:
            self.render_s_left -= time.monotonic() - started
        return "".join(out)


def looked_up(source: str, context: Mapping[str, Any]) -> Any:
    """What a plain lookup ``{{ vars.sizes }}`` names in ``context``, as it is (a list stays a
    list: a matrix's values may come from a variable); None when ``source`` is no plain lookup
    or names nothing."""
    simple = _SIMPLE_LOOKUP.match(source.strip())
    return _lookup(context, simple.group(1).split(".")) if simple else None


def _lookup(context: Mapping[str, Any], names: list[str]) -> Any:
    """``hosts.nas.address`` looked up without Jinja; None when any step is missing."""
    value: Any = context
    for name in names:
        if not isinstance(value, Mapping) or name not in value:
            return None
        value = value[name]
    return value


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Raise TemplateRefused in the main thread after ``seconds`` (elsewhere: no limit)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expired(signum: int, frame: object) -> None:
        raise TemplateRefused(f"took longer than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expired)
    started = time.monotonic()
    outer_s, outer_interval_s = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_s > 0:  # someone else's timer was running: put back what is left of it
            left_s = max(outer_s - (time.monotonic() - started), 0.001)
            signal.setitimer(signal.ITIMER_REAL, left_s, outer_interval_s)
