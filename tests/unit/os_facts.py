"""Facts of non-Linux hosts for the unit tests, built from real recorded output.

The ``@@nasplan:...@@`` headers and the ``tools`` lines are the facts scripts' own framing; the
content under each header is real output (tests/fixtures/facts/README.md names every source).
"""

from __future__ import annotations

from pathlib import Path

from nasplan.facts.gather import HostFacts, parse_facts
from nasplan.hosts.session import HostSession
from nasplan.input.inventory import Host
from nasplan.platforms import detect

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "facts"


def real(name: str) -> str:
    return (FIXTURES / name).read_text()


def framed(sections: dict[str, str]) -> str:
    return "".join(f"\n@@nasplan:{name}@@\n{body}" for name, body in sections.items())


def macos_facts(ifconfig: str = "bsd/osx-10.14.6_ifconfig.out", tools: str = "") -> HostFacts:
    uname = real("bsd/osx-10.14.6_uname-a.out").split()
    return parse_facts(
        framed(
            {
                "hostname": uname[1],
                "uname-s": uname[0],
                "sysctl": real("bsd/osx-10.14.6_sysctl-names.out"),
                "tools": tools,
                "ifconfig": real(ifconfig),
            }
        )
    )


def freebsd_facts(tools: str = "") -> HostFacts:
    uname = real("bsd/freebsd12_uname-a.out").split()
    ifconfig = real("bsd/freebsd12_ifconfig-extra-fields2.out") + real(
        "bsd/freebsd12_ifconfig-extra-fields4.out"
    )
    return parse_facts(
        framed(
            {
                "hostname": uname[1],
                "uname-s": uname[0],
                "sysctl": real("bsd/freebsd12_sysctl-names.out"),
                "tools": tools,
                "ifconfig": ifconfig,
            }
        )
    )


def windows_output(default_shell: str = "", tools: str = "") -> str:
    return framed(
        {
            "uname-s": "Windows",
            "hostname": "DESKTOP-WIN01",
            "default-shell": default_shell,
            "win-os": real("windows/win32-operatingsystem-build-psdocs.txt"),
            "win-netadapter": real("windows/get-netadapter-fl-salt-56275.txt"),
            "win-ipaddress": real("windows/find-netroute-ipaddress-salt-test.txt"),
            "tools": tools,
            "end": "",
        }
    )


def session_of(name: str, facts: HostFacts) -> HostSession:
    return HostSession(Host(name=name, address=name), facts=facts, platform=detect(facts))
