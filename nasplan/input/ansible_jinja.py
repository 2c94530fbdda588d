"""Jinja in an Ansible inventory's connection vars, rendered as Ansible renders them.

Ansible renders ``ansible_host: "{{ base }}.example"`` over the host's vars when it connects
(a var that refers to another templated var is rendered in turn); nasplan renders the vars that
set its connection the same way, in its bounded sandbox (nasplan.input.templating), with the
magic vars an inventory may use: ``inventory_hostname``, ``inventory_hostname_short``,
``group_names``. Any other var stays as written (a plan's own templates see it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Jinja is imported only when an inventory holds a template
    from nasplan.input.templating import PlanSandbox

MAX_DEPTH = 16  # vars referring to templated vars, in a chain


class Unrenderable(ValueError):
    """A connection var whose template cannot be rendered: what is wrong, for the user."""


def is_template(value: Any) -> bool:
    """Whether Ansible would render ``value`` (a string holding ``{{`` or ``{%``)."""
    return isinstance(value, str) and ("{{" in value or "{%" in value)


class HostTemplates:
    """One host's vars, each templated one rendered at most once (a loop is refused)."""

    def __init__(
        self,
        sandbox: Callable[[], PlanSandbox],
        name: str,
        groups: Sequence[str],
        values: Mapping[str, Any],
    ) -> None:
        self.sandbox = sandbox
        self.values = values
        self.magic: dict[str, Any] = {
            "inventory_hostname": name,
            "inventory_hostname_short": name.split(".")[0],
            "group_names": sorted(g for g in groups if g != "ungrouped"),
        }
        self.rendered: dict[str, Any] = {}

    def render(self, value: Any, depth: int = 0, chain: tuple[str, ...] = ()) -> Any:
        """``value`` rendered over the host's vars; Unrenderable saying why not."""
        if not is_template(value):
            return value
        import jinja2
        from jinja2 import meta

        if depth > MAX_DEPTH:
            raise Unrenderable(f"vars refer to templated vars more than {MAX_DEPTH} deep")
        try:
            names = meta.find_undeclared_variables(self.sandbox().parse(value))
        except jinja2.TemplateSyntaxError as exc:
            raise Unrenderable(f"cannot render {value!r}: {exc.message}") from None
        context = dict(self.magic)
        for name in sorted(names):
            if name in self.magic:
                continue
            if name in chain:
                raise Unrenderable(f"{name!r} refers to itself through {' -> '.join(chain)}")
            if name not in self.values:
                raise Unrenderable(f"cannot render {value!r}: {name!r} is not defined")
            if name not in self.rendered:
                self.rendered[name] = self.render(self.values[name], depth + 1, (*chain, name))
            context[name] = self.rendered[name]
        try:
            return self.sandbox().render(value, context)
        except Exception as exc:  # any error of the user's template, said in one line
            raise Unrenderable(f"cannot render {value!r}: {exc}") from None
