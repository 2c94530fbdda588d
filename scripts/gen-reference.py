#!/usr/bin/env python3
"""Write docs/plan-reference.md and docs/inventory-reference.md from nasplan's JSON Schemas.

    python scripts/gen-reference.py            # rewrite both pages
    python scripts/gen-reference.py --check    # exit 1 when a committed page differs

Every property with its type, whether it is required, its default, its description and its
allowed values; each test kind's settings; the string formats the schemas define.
tests/unit/test_docs_reference.py fails when the committed pages are not what this prints.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = ROOT / "nasplan" / "schemas"
DOCS = ROOT / "docs"

Schema = Mapping[str, Any]


class Page:
    """One schema, its ``$ref``s resolved against itself, rendered as Markdown tables."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.schema: Schema = json.loads((SCHEMAS / f"{name}.schema.json").read_text())
        self.formats: dict[str, Schema] = {}  # $defs named in a type column, listed at the end
        self.sections: dict[str, str] = {}  # an object $def -> the anchor of its own section

    def resolve(self, ref: str) -> Schema:
        node: Any = self.schema
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]
        return node  # type: ignore[no-any-return]

    def merged(self, node: Schema) -> Schema:
        """``node`` with a ``$ref`` followed, its own keys (a description) winning."""
        if "$ref" not in node:
            return node
        target = self.merged(self.resolve(node["$ref"]))
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}

    def type_of(self, node: Schema) -> str:
        """``integer 1–65535``, ``list of integer``, ``one of: string, integer``, a format name."""
        ref = node.get("$ref")
        if isinstance(ref, str):
            target = self.resolve(ref)
            name = ref.rsplit("/", 1)[-1]
            if name in self.sections:
                return f"[{name}](#{self.sections[name]})"
            if "$ref" in target and set(target) <= {"$ref", "description"}:
                return self.type_of(target)  # connection/user -> user: name the format
            if "pattern" in target or "oneOf" in target:
                self.formats[name] = target
                return f"[`{name}`](#value-formats)"
            return self.type_of(self.merged(node))
        if "const" in node:
            return f"`{json.dumps(node['const'])}`"
        if "enum" in node:
            return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in node["enum"])
        for combinator in ("oneOf", "anyOf"):
            if combinator in node:
                return " or ".join(self.type_of(option) for option in node[combinator])
        kind = node.get("type", "any")
        text = " or ".join(kind) if isinstance(kind, list) else str(kind)
        if text == "array" and "items" in node:
            text = f"list of {self.type_of(node['items'])}"
        if text == "object" and isinstance(node.get("additionalProperties"), dict):
            text = f"mapping of name to {self.type_of(node['additionalProperties'])}"
        return text + _bounds(node)

    def rows(self, properties: Mapping[str, Schema], required: Iterable[str]) -> list[str]:
        """A Markdown table of ``properties``: key, type, required, default, description."""
        needed = set(required)
        lines = ["| key | type | required | default | description |", "|---|---|---|---|---|"]
        for key, raw in properties.items():
            node = self.merged(raw)
            default = f"`{json.dumps(node['default'])}`" if "default" in node else ""
            description = _cell(node.get("description", ""))
            if "pattern" in raw or ("pattern" in node and "$ref" not in raw):
                pattern = f"matches <code>{_escape_code(node['pattern'])}</code>"
                description = f"{description} ({pattern})" if description else pattern
            lines.append(
                f"| `{key}` | {self.type_of(raw)} | {'yes' if key in needed else ''} "
                f"| {default} | {description} |"
            )
        return lines

    def object_section(self, title: str, node: Schema, intro: str | None = None) -> list[str]:
        """``## title``, ``intro`` (default: the schema's description), the table, conditions."""
        node = self.merged(node)
        lines = [f"## {title}", ""]
        text = node.get("description", "") if intro is None else intro
        if text:
            lines += [_sentence(text), ""]
        lines += self.rows(node.get("properties", {}), node.get("required", ()))
        conditions = list(_conditions(node))
        if conditions:
            lines += ["", *conditions]
        return [*lines, ""]

    def formats_section(self) -> list[str]:
        if not self.formats:
            return []
        lines = [
            "## Value formats",
            "",
            "Strings that reach a host or a tool are checked against these patterns before "
            "anything connects (a value that does not match is exit 2 at its line).",
            "",
            "| format | type | pattern | description |",
            "|---|---|---|---|",
        ]
        for name in sorted(self.formats):
            node = self.formats[name]
            if "oneOf" in node:
                kinds = " or ".join(str(o.get("type", "")) for o in node["oneOf"])
                patterns = [o["pattern"] for o in node["oneOf"] if "pattern" in o]
            else:
                kinds, patterns = str(node.get("type", "")) + _bounds(node), [node["pattern"]]
            shown = " ".join(f"<code>{_escape_code(p)}</code>" for p in patterns)
            lines.append(f"| `{name}` | {kinds} | {shown} | {_cell(node.get('description', ''))} |")
        return [*lines, ""]


def _bounds(node: Schema) -> str:
    if node.get("minLength") == 1 and "maxLength" not in node:
        return ", not empty"
    if node.get("minItems") == 1 and "maxItems" not in node:
        return ", not empty"
    low = node.get("minimum", node.get("minLength", node.get("minItems")))
    high = node.get("maximum", node.get("maxLength", node.get("maxItems")))
    what = ""
    if "minLength" in node or "maxLength" in node:
        what = " characters"
    elif "minItems" in node or "maxItems" in node:
        what = " items"
    if low is not None and high is not None:
        return f", {low}–{high}{what}"
    if low is not None:
        return f", at least {low}{what}"
    if high is not None:
        return f", at most {high}{what}"
    return ""


def _conditions(node: Schema) -> Iterable[str]:
    """The schema's if/then requirements in words (``method: smb`` needs ``share``...)."""
    for rule in node.get("allOf", ()):
        condition = rule.get("if", {}).get("properties", {})
        then = rule.get("then", {})
        if len(condition) != 1 or not then:
            continue
        ((key, test),) = condition.items()
        wants = then.get("required")
        if wants:
            needs = ", ".join(f"`{w}`" for w in wants)
            yield f"- with `{key}: {test.get('const')}`: {needs} required"
        if "anyOf" in then:
            choices = " or ".join(f"`{o['required'][0]}`" for o in then["anyOf"])
            yield f"- with `{key}: {test.get('const')}`: {choices} required"
    if "oneOf" in node and all("required" in o for o in node["oneOf"]):
        choices = " or ".join(f"`{o['required'][0]}`" for o in node["oneOf"])
        yield f"- exactly one of {choices}"
    if "if" in node and "else" in node:
        condition = node["if"].get("properties", {})
        ((key, test),) = condition.items()
        message = node["else"].get("x-message", "")
        wants = ", ".join(f"`{w}: true`" for w in node["else"].get("required", ()))
        yield f"- unless `{key}: {test.get('const')}`: {wants} required ({message})"


def anchor(title: str) -> str:
    """The id GitHub gives a heading: lower case, punctuation but - and _ dropped, blanks -."""
    kept = "".join(c for c in title.lower() if c.isalnum() or c in " -_")
    return kept.replace(" ", "-")


def _sentence(text: str) -> str:
    text = text.strip()
    if text.split(" ", 1)[0].isalpha():  # not a key or a path such as all/hosts/children
        text = text[0].upper() + text[1:]
    return text + ("" if text.endswith(".") else ".")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _escape_code(text: str) -> str:
    """A pattern inside <code> in a table cell: HTML-escaped, pipes escaped for the table."""
    return (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "&#124;")
    )


HEADER = (
    "<!-- Generated by scripts/gen-reference.py from {sources}: do not edit by hand.\n"
    "     Change the schema, then run `python scripts/gen-reference.py`;\n"
    "     tests/unit/test_docs_reference.py fails while this page and the schema differ. -->\n"
)


TESTS_TITLE = "tests[] (a test)"
PLAN_SECTIONS = {
    "link": "links[] (a point-to-point link)",
    "interface_mtu": "interfaces[] (an MTU for the run)",
    "host_interface": "links[].a, links[].b (a link's end)",
    "test": TESTS_TITLE,
    "through": "through (a disk profile from a client)",
}
INVENTORY_SECTIONS = {
    "host": "hosts.NAME (a host)",
    "interface": "hosts.NAME.interfaces.NAME (an interface)",
    "volume": "hosts.NAME.volumes.NAME (a volume)",
    "vars": "vars (top level, a group's, a host's)",
}


def plan_reference() -> str:
    page = Page("plan")
    page.sections = {name: anchor(title) for name, title in PLAN_SECTIONS.items()}
    schema = page.schema
    defs = schema["$defs"]
    lines = [
        HEADER.format(sources="nasplan/schemas/plan.schema.json"),
        "# Plan reference",
        "",
        _sentence(schema["description"]),
        "Unknown keys are errors, so a typo never passes silently; each error names "
        "`FILE:LINE:COL: json.path` and what was expected (exit 2, before anything connects).",
        "",
        "A guided tour with examples: [the README](../README.md), "
        "[measurements](measurements.md), [network changes](network-changes.md), "
        "[matrix](matrix.md) (one test, many combinations; `--list-tests`, `--limit`, "
        "`--tests`). The hosts a plan names come from its [inventory](inventory-reference.md).",
        "",
    ]
    top = schema["properties"]
    lines += page.object_section("Top-level keys", schema, "")
    lines += page.object_section("setup", top["setup"], "Tools nasplan makes sure of up front.")
    lines += page.object_section("network", top["network"])
    lines += page.object_section(
        PLAN_SECTIONS["link"],
        defs["link"],
        "Each item of `links`: a cable between two hosts that nasplan addresses for the run and "
        "puts back afterwards ([network changes](network-changes.md)).",
    )
    lines += page.object_section(
        PLAN_SECTIONS["interface_mtu"],
        defs["interface_mtu"],
        "Each item of `interfaces`: an MTU nasplan sets for the run and puts back afterwards.",
    )
    lines += page.object_section(
        PLAN_SECTIONS["host_interface"],
        defs["host_interface"],
        "`host` is an inventory host; `interface` its inventory interface (`p2p`) or the "
        "OS's name (`eth1`).",
    )
    kinds = defs["test"]["properties"]["kind"]["enum"]
    lines += [
        f"## {TESTS_TITLE}",
        "",
        "Every test has a `kind`; the other keys are the kind's own (below). Keys common to "
        "every kind: `id` (how `nasplan compare` matches the test across runs; default: its "
        "position), `name` (a title for the report) and `repetitions`.",
        "",
        "| kind | what it measures |",
        "|---|---|",
    ]
    for kind in kinds:
        description = defs[kind].get("description", "TCP or UDP throughput with iperf3")
        lines.append(f"| [`{kind}`](#kind-{kind}) | {_cell(description)} |")
    lines.append("")
    for kind in kinds:
        section = page.object_section(f"kind: {kind}", defs[kind])
        lines += ["#" + section[0], *section[1:]]
    lines += page.object_section(PLAN_SECTIONS["through"], defs["through"])
    lines += page.formats_section()
    return "\n".join(lines).rstrip("\n") + "\n"


def inventory_reference() -> str:
    from nasplan.input.ansible import HONOURED, IGNORED_BECAUSE

    page = Page("inventory")
    page.sections = {name: anchor(title) for name, title in INVENTORY_SECTIONS.items()}
    schema = page.schema
    defs = schema["$defs"]
    ansible = json.loads((SCHEMAS / "inventory-ansible.schema.json").read_text())
    lines = [
        HEADER.format(
            sources="nasplan/schemas/inventory.schema.json, inventory-ansible.schema.json and "
            "the Ansible variable names in nasplan/input/ansible.py"
        ),
        "# Inventory reference",
        "",
        _sentence(schema["description"]),
        "Vars follow Ansible's precedence: a host's own keys over its `vars`, over its groups' "
        "`vars`, over the top-level `vars`. Relative paths are relative to the inventory file "
        "(an Ansible inventory's: to its source's directory). "
        "Unknown keys are errors (exit 2, `FILE:LINE:COL: json.path: problem`).",
        "",
        "How to fill one in for a real NAS (SSH, keys, sudo, interface names): "
        "[platforms](platforms.md). The plan that uses it: [plan reference](plan-reference.md).",
        "",
    ]
    top = schema["properties"]
    lines += page.object_section("Top-level keys", schema, "")
    lines += page.object_section(
        INVENTORY_SECTIONS["host"],
        defs["host"],
        "Each host under `hosts`, by name (the name is also its address when `address` is "
        "not given). Every connection key may also stand in a `vars` block.",
    )
    lines += page.object_section(
        INVENTORY_SECTIONS["interface"],
        defs["interface"],
        "A plan names it as `HOST.INTERFACE` (`nas.ten`); `name` is what the OS calls it "
        "([how to find it](platforms.md#finding-the-interface-names)).",
    )
    lines += page.object_section(
        INVENTORY_SECTIONS["volume"],
        defs["volume"],
        "A disk or transfer test names it as `volume: NAME` "
        "([measurements](measurements.md#what-limited-a-transfer-verdicts) for its `rate`).",
    )
    lines += page.object_section(
        INVENTORY_SECTIONS["vars"],
        defs["vars"],
        "Connection keys, and any other key as a var for the plan's Jinja "
        "(`{{ hosts.nas.smb.share }}`).",
    )
    group = top["groups"]["additionalProperties"]
    lines += page.object_section(
        "groups.NAME (a group)",
        group,
        "A group lists its hosts and gives them vars; a host may also name its `groups`.",
    )
    lines += [
        "## Ansible inventories",
        "",
        _sentence(ansible["description"]),
        "",
        "Each group (`all` and every group under `children`):",
        "",
        *page_of(ansible).rows(ansible["$defs"]["group"]["properties"], ()),
        "",
        "Ansible variables nasplan honours, and the nasplan key each becomes (where both an "
        "`ansible_ssh_` name and its newer name are set, the `ansible_ssh_` one, as Ansible's "
        "ssh connection takes it; a `nasplan_` name over both; Jinja in them, `{{ var }}`, "
        "rendered over the host's vars as Ansible renders it):",
        "",
        "| Ansible variable | nasplan key |",
        "|---|---|",
        *(f"| `{name}` | `{key}` |" for name, key in HONOURED.items()),
        "| `ansible_connection` | `connection`: `local` is `local`; `ssh`, `paramiko`, `smart` "
        "are `ssh` |",
        "",
        "Ansible variables nasplan ignores, with a warning naming where they are set:",
        "",
        "| Ansible variable | why |",
        "|---|---|",
        *(f"| `{name}` | {_cell(why)} |" for name, why in IGNORED_BECAUSE.items()),
        "",
        "Any other `ansible_*` variable is ignored with a warning, or refused by name (exit 2) "
        "where ignoring it would change how a host is reached or leak a secret: passwords in "
        "the inventory, `ansible_ssh_*_args` (but for a jump host: `-J HOPS` or "
        "`-o ProxyJump=HOPS` in `ansible_ssh_common_args` or `ansible_ssh_extra_args` is "
        "`proxy_jump`; `-o StrictHostKeyChecking=`, `-o UserKnownHostsFile=`, `-o CheckHostIP=` "
        "are ignored with a warning: nasplan keeps strict host-key checking, and an unknown key "
        "is refused when it connects, saying how to add it; any other option there is refused, "
        "naming it), a connection other than SSH or local, a become method other than sudo. "
        "Such a host is left out of the inventory, with one warning naming the first reason; "
        "only a plan that names it is refused (exit 2), with every reason. A var without the "
        "`ansible_` prefix is a nasplan key or a user var (`nasplan_ssh_config` is "
        "`ssh_config`), but the connection is set only by `ansible_*` vars and their "
        "`nasplan_` names (`nasplan_port`, `nasplan_user`, `nasplan_address`, "
        "`nasplan_identity_file`, `nasplan_proxy_jump`, `nasplan_connection`): a plain "
        "`port=8080`, `user=` or `address=` is an application's var, which a plan sees as "
        "`{{ hosts.web.port }}`.",
        "",
        *ANSIBLE_READING,
    ]
    lines += page.formats_section()
    return "\n".join(lines).rstrip("\n") + "\n"


# How an Ansible inventory is read: what ansible-core does, where nasplan's reader stops.
ANSIBLE_READING = [
    "### How an Ansible inventory is read",
    "",
    "nasplan's own reader follows ansible-core's inventory code; "
    "`tests/unit/test_ansible_differential.py` runs the real `ansible-inventory --list` on a "
    "corpus from Ansible's guide, its plugins' examples and its own tests "
    "(`tests/fixtures/ansible/`) and checks that nasplan gives the same hosts, groups and vars, "
    "or refuses the input in one line saying why. Last run against ansible-core 2.19.14.",
    "",
    "**Sources.** `-i` names a file, an inventory directory, or a host list (`-i 'nas,ws:2222,'`, "
    "a path that does not exist and holds a comma). `-i` may be repeated, and a plan's "
    "`inventory:` may be a list: the sources are read in their order into one inventory, a "
    "later source's value over an earlier one's (`-i staging -i production`: production's "
    "`[all:vars]` win). A directory is read as Ansible reads one: its entries in sorted order, "
    "subdirectories the same way, leaving out hidden names, `group_vars`, `host_vars`, "
    "`vars_plugins` and names ending in `~`, `.orig`, `.cfg`, `.retry`, `.bak`, `.swp`, `.md`, "
    "`.txt`, `.rst`, `.rpm`, `.pyc`, `.pyo` (`.ini` and `.yml` files are read).",
    "",
    "**Each file**, tried as Ansible's inventory plugins try it: an executable starting with "
    "`#!` is an inventory script, a YAML mapping with `plugin:` an inventory plugin's "
    "configuration, a `.toml` file a TOML inventory (nasplan's reader runs and reads none of "
    "the three: `--inventory-reader ansible` does); a file with no extension or `.yml`, "
    "`.yaml`, `.json` whose YAML is a mapping is a YAML inventory (or `ansible-inventory "
    "--list` JSON, which nasplan also reads); anything else is INI. A nasplan inventory "
    "(top-level `hosts:` or `groups:`) is read alone, never merged with other sources.",
    "",
    "**YAML**: groups at the top level, each with `hosts`, `children`, `vars` (`hosts:` or "
    "`children:` may name a single one as a string); a host only under `all: hosts:` is in "
    "`ungrouped`. **INI**: `[group]`, `[group:vars]`, `[group:children]`; hosts before any "
    "section are in `ungrouped`; a group named in `:vars` or `:children` must be declared in "
    "the file (or by an earlier source). **Host patterns**, in both and in host lists: "
    "`nas:2222` (a port, set only where the host first appears), `[2001:db8::1]:22`, ranges "
    "`nas[01:03]`, `db-[a:f]`, `www[01:50:2]`.",
    "",
    "**Types.** INI values, on host lines and in `:vars` sections alike, are Python literals "
    'where they are one, else text: `1` is 1, `True` is true, `"quoted"` is `quoted`, but '
    "`yes`, `true`, `no` stay text. YAML values are YAML 1.1: `yes`, `on`, `true` are true, "
    "`017` is 15, `\"1\"` is text; `!unsafe 'text'` is the text.",
    "",
    "**group_vars/ and host_vars/** beside each source (in an inventory directory, or beside "
    "an inventory file): for a group or host NAME the first of `NAME`, `NAME.yml`, "
    "`NAME.yaml`, `NAME.json` that exists; a directory is read whole (files with no extension "
    "or one of those three, sorted, subdirectories without an extension too, hidden and `~` "
    "names left out). An empty file sets nothing. The `group_vars/` and `host_vars/` beside the "
    "plan (Ansible's playbook directory) are read too, after each level's inventory ones, as "
    "`ansible-playbook` reads them; `nasplan inventory` and `nasplan probe` read those beside "
    "the current directory (or `--playbook-dir DIR`), as `ansible-inventory` and `ansible` do.",
    "",
    "**Precedence**, lowest first (ansible-core's defaults): the `all` group's vars in the "
    "inventory files; the host's other groups' vars there, parents before children, then by "
    "`ansible_group_priority` (set in an inventory file, not in `group_vars/`), then by name; "
    "`group_vars/all` beside each source, sources in order; `group_vars/GROUP` beside each "
    "source, sources in order, groups as before; the host's own vars in the inventory files; "
    "`host_vars/HOST` beside each source; at each `group_vars/` level and for `host_vars/`, "
    "the playbook directory's after the sources'. A later value replaces a whole var, dictionaries "
    "included (`hash_behaviour: replace`). A relative path in a var "
    "(`ansible_ssh_private_key_file`) is relative to the directory of the source it was set "
    "in (through `--inventory-reader ansible`: of the first source), where Ansible hands it "
    "to ssh as it stands, relative to the current directory.",
    "",
    "**Where nasplan refuses what Ansible lets pass** (exit 2, the file, line and reason): a "
    "source Ansible cannot parse (Ansible warns and goes on without its hosts); an inventory "
    "with no host, or more than 10000; a host or group name with a NUL byte; an integer of "
    "more than 4300 digits (in any YAML or JSON nasplan reads); a duplicate key or a key that "
    "is not a string; a group key other than "
    "`hosts`, `children`, `vars` (Ansible warns and skips it); a vault-encrypted file (named "
    "as such) or "
    "`!vault` value, a script, a plugin configuration, TOML (`--inventory-reader ansible`); a "
    "FIFO, device or dangling link where a vars file is looked for.",
    "",
    "**`--inventory-reader ansible`** (or `inventory_reader: ansible` in the plan) runs "
    "`ansible-inventory -i ... --list` here, from the current directory and with the "
    "environment and `ansible.cfg` Ansible would use there, and reads what it prints: vault "
    "(the password as Ansible finds it, e.g. `ANSIBLE_VAULT_PASSWORD_FILE`), inventory "
    "plugins and scripts work. A source Ansible cannot parse fails the read "
    "(`ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED`, unless set otherwise); an inline `!vault` "
    "value, which it prints still encrypted, is refused at its line in that output; a "
    "problem in a var is named at the file and line that set it where nasplan's own reader "
    "finds the same value there (else at the line of that output); "
    "without ansible-core installed, exit 2 says so. Ansible's `--list` gives each host's "
    "vars merged, so the `all` group's vars reach a plan through each host "
    "(`{{ hosts.nas.x }}`), not as `{{ vars.x }}`. nasplan's own reader is the default.",
    "",
]


def page_of(schema: Schema) -> Page:
    page = Page.__new__(Page)
    page.name, page.schema, page.formats = "", schema, {}
    return page


PAGES = {
    DOCS / "plan-reference.md": plan_reference,
    DOCS / "inventory-reference.md": inventory_reference,
}


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(ROOT))
    stale = []
    for path, render in PAGES.items():
        text = render()
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
        else:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path.relative_to(ROOT)} differs from the schemas: run scripts/gen-reference.py")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
