"""A host script's output in named sections: ``@@nasplan:NAME@@`` lines, each opening one.

Read by the host lock, the leases and the network phase; kept apart from the NIC state models
so that an apply without network changes does not import them.
"""

from __future__ import annotations

import re

SECTION = re.compile(r"^@@nasplan:(?P<name>[^@]+)@@$")


def split_sections(text: str) -> dict[str, str]:
    """``@@nasplan:NAME@@`` delimited output -> ``{NAME: body}`` (body stripped)."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        match = SECTION.match(line.strip())
        if match:
            current = sections.setdefault(match["name"], [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines).strip() for name, lines in sections.items()}
