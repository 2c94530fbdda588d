"""Property: a plan fragment that ``validate`` accepts never fails at run time for its input.

Generated sizes (numbers and strings in every unit, 0 and absurd ones), sets of files and
iperf3's ``bidir``/``reverse``: each plan either validates, and then turns into its work (the
test's settings, the bytes it moves, the run's estimate) without an error, or is refused with
exit 2's one line naming file:line and the field, and short whatever the input."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nasplan.errors import InputError
from nasplan.input.plan import load_plan
from nasplan.measure import kinds
from nasplan.measure.methods.base import TransferSettings
from nasplan.run.listing import estimate

UNITS = ["", "B", "K", "KB", "KiB", "M", "MB", "MiB", "G", "GiB", "T", "TB", "TiB", "k", "mib"]
sizes = st.one_of(
    st.integers(min_value=-2, max_value=2**50),
    st.builds(
        lambda n, unit: f"{n}{unit}",
        st.one_of(st.integers(0, 10**22), st.sampled_from(["0.5", "1.25", "0.0"])),
        st.sampled_from(UNITS),
    ),
)
groups = st.fixed_dictionaries(
    {"count": st.integers(min_value=-1, max_value=200_000), "size": sizes}
)
files = st.one_of(groups, st.lists(groups, min_size=0, max_size=40))
transfer = st.fixed_dictionaries(
    {"kind": st.just("transfer"), "method": st.just("nfs"), "export": st.just("/x")},
    optional={"size": sizes, "files": files, "direction": st.sampled_from(["write", "both"])},
)
iperf3 = st.fixed_dictionaries(
    {"kind": st.just("iperf3")},
    optional={"bidir": st.booleans(), "reverse": st.booleans(), "duration_s": st.just(1)},
)
ERROR = re.compile(r"^\S+\.yaml:\d+:\d+: tests\[0\]\.\S+: .+$")


@settings(
    max_examples=250,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(fragment=st.one_of(transfer, iperf3))
def test_what_validates_runs_and_what_does_not_is_one_short_line(
    tmp_path: Path, fragment: dict[str, Any]
) -> None:
    (tmp_path / "inv.yaml").write_text(
        "hosts:\n  nas: {address: 198.18.44.10}\n  ws: {address: 198.18.44.20}\n"
    )
    test = {"id": "t", "server": "nas", "client": "ws", **fragment}
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump({"name": "prop", "inventory": "inv.yaml", "tests": [test]}))
    try:
        plan = load_plan(plan_path)
    except InputError as exc:
        for line in exc.messages:
            assert ERROR.match(line), line
            assert len(line) < 600, line[:200]
        return
    (planned,) = plan.tests
    bound = kinds.bind(planned)  # its needs and line, as the run makes them
    assert bound.description
    if planned.kind == "transfer":
        s = kinds.kind("transfer").settings(planned)  # the settings as the run reads them
        assert isinstance(s, TransferSettings)
        assert 1 <= s.size_bytes <= 16 * 2**40
        assert all(count >= 1 and size >= 1 for count, size in s.groups)
    else:
        assert not (planned.settings.get("bidir") and planned.settings.get("reverse"))
    seconds = estimate(plan).seconds
    assert math.isfinite(seconds) and 0 < seconds < 10**9


def test_a_list_of_5000_file_groups_is_one_short_line(tmp_path: Path) -> None:
    (tmp_path / "inv.yaml").write_text(
        "hosts:\n  nas: {address: 198.18.44.10}\n  ws: {address: 198.18.44.20}\n"
    )
    test = {"id": "t", "kind": "transfer", "server": "nas", "client": "ws", "method": "nfs"}
    test.update(export="/x", files=[{"count": 1, "size": "1KiB"}] * 5000)
    plan_path = tmp_path / "plan.yaml"
    plan_path.write_text(yaml.safe_dump({"name": "p", "inventory": "inv.yaml", "tests": [test]}))
    try:
        load_plan(plan_path)
    except InputError as exc:
        (line,) = exc.messages
        assert ERROR.match(line) and len(line) < 600, line[:300]
        assert "(5000 entries)" in line, line
    else:
        raise AssertionError("5000 groups validated")
