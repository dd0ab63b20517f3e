"""The referee's meter of hosted bots (freeze between turns, CPU per turn) on the real
cgroups, and the CPU clock's option and reply field (no platform needed)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest

from arena.v1 import internal_pb2
from referee.errors import ConfigError
from referee.hosting.cgroups import CgroupUnavailable, GroupLimits, Hierarchy, open_hierarchy
from referee.hosting.meter import CgroupMeter, group_name
from referee.match.spec import CPU_CLOCK_BACKSTOP, CPU_CLOCK_BACKSTOP_MIN_MS, TimeControl
from referee.seasons.model import time_control_from_dict
from workers.link import LocalReply, cpu_ms_of


@pytest.fixture(scope="module", params=["cgroup", "signals"])
def hierarchy(request: pytest.FixtureRequest) -> Iterator[Hierarchy]:
    """The host's cgroups, freezing by the cgroup freezer or (forced, as where the freezer
    is missing) by SIGSTOP/SIGCONT."""
    signals = request.param == "signals"
    try:
        h = open_hierarchy(
            parent=f"arena-meter-test-{request.param}-{os.getpid()}", signal_freeze=signals
        )
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    assert h.freezer is not signals
    yield h
    h.cleanup()


def burner(hierarchy: Hierarchy, bot: str) -> subprocess.Popen[bytes]:
    group = hierarchy.group(group_name(bot), GroupLimits(cpus=1.0))
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline()\nwhile True: pass"],
        stdin=subprocess.PIPE,
    )
    group.add(proc.pid)
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    return proc


def frozen_soon(frozen: Callable[[], bool], within_s: float = 2.0) -> bool:
    """Whether the group is frozen within ``within_s``: ``released`` does not wait for the
    freeze, which SIGSTOP completes asynchronously (long after 50 ms at load 15+)."""
    deadline = time.monotonic() + within_s
    while not frozen():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_bot_is_frozen_between_its_turns_and_charged_its_cpu_during_them(
    hierarchy: Hierarchy,
) -> None:
    proc = burner(hierarchy, "burn")
    meter = CgroupMeter(hierarchy)
    group = meter.group("burn")
    assert group is not None
    try:
        at = meter.held("burn")
        time.sleep(0.2)
        used = meter.released("burn", at)
        assert used is not None and used > 20  # it ran during its turn
        assert frozen_soon(group.frozen)
        before = group.cpu_ns()
        time.sleep(0.3)
        assert group.cpu_ns() - before < 5_000_000  # nothing between turns
        # two turns held at once: thawed for both, frozen only after the last
        first, second = meter.held("burn"), meter.held("burn")
        assert not group.frozen()
        meter.released("burn", first)
        assert not group.frozen()
        meter.released("burn", second)
        assert frozen_soon(group.frozen)
    finally:
        meter.thaw_all()
        group.remove()
        proc.wait(5)


def test_a_bot_without_a_group_is_not_metered_nor_frozen(hierarchy: Hierarchy) -> None:
    meter = CgroupMeter(hierarchy)
    assert meter.held("external") is None
    assert meter.released("external", None) is None


def test_breathing_thaws_a_frozen_bot_briefly_and_freezes_it_again(hierarchy: Hierarchy) -> None:
    import asyncio

    proc = burner(hierarchy, "breath")
    meter = CgroupMeter(hierarchy, breath_s=0.25)  # long enough to run at load 20+
    group = meter.group("breath")
    assert group is not None
    try:
        meter.released("breath", meter.held("breath"))
        assert frozen_soon(group.frozen)
        before = group.cpu_ns()
        asyncio.run(meter.breathe())
        assert frozen_soon(group.frozen)
        assert 10_000_000 < group.cpu_ns() - before < 300_000_000
    finally:
        meter.thaw_all()
        group.remove()
        proc.wait(5)


def test_a_bot_is_frozen_once_settled_after_it_connects_unless_a_turn_is_outstanding(
    hierarchy: Hierarchy,
) -> None:
    import asyncio

    idle, busy = burner(hierarchy, "idle"), burner(hierarchy, "busy")
    meter = CgroupMeter(hierarchy, settle_s=0.1)
    found = [meter.group("idle"), meter.group("busy")]
    groups = [g for g in found if g is not None]
    assert len(groups) == 2

    async def connect() -> None:
        meter.connected("idle")
        meter.connected("busy")
        meter.held("busy")  # its first turn came before it settled
        await asyncio.sleep(0.05)
        assert not groups[0].frozen() and not groups[1].frozen()
        await asyncio.sleep(0.2)

    try:
        asyncio.run(connect())
        time.sleep(0.05)  # the freeze completes on its own
        assert groups[0].frozen() and not groups[1].frozen()
        before = groups[0].cpu_ns()
        time.sleep(0.2)
        assert groups[0].cpu_ns() - before < 5_000_000
        off = CgroupMeter(hierarchy, freeze=False, settle_s=0.01)
        groups[0].thaw()

        async def connect_unfrozen() -> None:
            off.connected("idle")
            await asyncio.sleep(0.1)

        asyncio.run(connect_unfrozen())
        assert not groups[0].frozen()
    finally:
        meter.thaw_all()
        for group in groups:
            group.remove()
        idle.wait(5)
        busy.wait(5)


def test_freezing_costs_well_under_a_millisecond_per_decision(hierarchy: Hierarchy) -> None:
    """held + released (thaw, two CPU reads, freeze) per decision, against the same loop
    without freezing (both measured here, now): the cost docs/HOSTING.md quotes."""
    proc = burner(hierarchy, "cost")
    frozen, metered = CgroupMeter(hierarchy), CgroupMeter(hierarchy, freeze=False)
    try:

        def per_decision(meter: CgroupMeter, n: int = 100) -> float:
            """Median cost of one decision's held + released, turns 2 ms apart."""
            costs = []
            for _ in range(n):
                start = time.perf_counter()
                at = meter.held("cost")
                held = time.perf_counter() - start
                time.sleep(0.002)  # the bot thinks
                start = time.perf_counter()
                meter.released("cost", at)
                costs.append(held + time.perf_counter() - start)
                time.sleep(0.002)  # its opponents think
            return statistics.median(costs) * 1000

        with_freeze = per_decision(frozen)
        without = per_decision(metered)
        how = "cgroup freezer" if hierarchy.freezer else "SIGSTOP/SIGCONT"
        print(f"\nper decision: meter {without:.3f} ms, with freezing ({how}) {with_freeze:.3f} ms")
        assert with_freeze < 1.0
    finally:
        frozen.thaw_all()
        hierarchy.handle(group_name("cost")).remove()
        proc.wait(5)


def test_the_cpu_clock_is_a_season_option_with_a_wall_backstop() -> None:
    tc = time_control_from_dict({"move_ms": 100, "clock": "cpu"})
    assert tc.clock == "cpu" and tc.wall_limit_ms(150) == 150 + CPU_CLOCK_BACKSTOP_MIN_MS
    assert tc.wall_limit_ms(5000) == 5000 * CPU_CLOCK_BACKSTOP
    assert TimeControl.from_dict(tc.to_dict()) == tc
    wall = TimeControl()
    assert "clock" not in wall.to_dict()  # stored wall-clock specs keep their form
    assert wall.wall_limit_ms(150) == 150
    with pytest.raises(ConfigError, match='use "wall"'):
        time_control_from_dict({"clock": "fast"})


def test_a_reply_carries_cpu_time_only_for_a_metered_bot() -> None:
    assert cpu_ms_of(internal_pb2.Reply(kind=internal_pb2.Reply.ANSWER)) is None
    assert cpu_ms_of(internal_pb2.Reply(kind=internal_pb2.Reply.ANSWER, cpu_ms=0.0)) == 0.0
    assert cpu_ms_of(LocalReply(1, "7D", 1.0, 2.0)) is None
    assert cpu_ms_of(LocalReply(1, "7D", 1.0, 2.0, "", 12.5)) == 12.5
