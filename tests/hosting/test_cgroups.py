"""The bot control groups on the host's real cgroups (v1 on these machines; v2 where the
host has it). Skipped, with the reason, where no writable hierarchy exists."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from referee.hosting.cgroups import (
    BotGroup,
    CgroupUnavailable,
    GroupLimits,
    Hierarchy,
    cpu_ns_of,
    open_hierarchy,
)
from referee.hosting.supervisor import terminate_bot

BURN = "import time\nwhile True: pass\n"


@pytest.fixture(scope="module")
def hierarchy() -> Iterator[Hierarchy]:
    try:
        h = open_hierarchy(parent=f"arena-test-{os.getpid()}")
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    yield h
    h.cleanup()


@pytest.fixture(scope="module")
def signal_hierarchy() -> Iterator[Hierarchy]:
    """Groups that freeze by SIGSTOP/SIGCONT, as where the cgroup freezer is missing."""
    try:
        h = open_hierarchy(parent=f"arena-test-sig-{os.getpid()}", signal_freeze=True)
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    assert not h.freezer
    yield h
    h.cleanup()


def start_in(group: BotGroup, code: str) -> subprocess.Popen[bytes]:
    """A Python child moved into ``group`` before it runs ``code`` (it waits on stdin)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.readline()\n" + code],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    group.add(proc.pid)
    assert proc.stdin is not None
    proc.stdin.write(b"go\n")
    proc.stdin.flush()
    return proc


def used_by(group: BotGroup, ns: int, within_s: float = 10.0) -> None:
    """Wait until the group's CPU counter reaches ``ns`` (slowly on a loaded machine)."""
    deadline = time.monotonic() + within_s
    while group.cpu_ns() < ns:
        assert time.monotonic() < deadline, (group.cpu_ns(), ns)
        time.sleep(0.02)


@pytest.mark.parametrize("freezer", ["cgroup", "signals"])
def test_a_frozen_group_uses_no_cpu_and_thaws(
    hierarchy: Hierarchy, signal_hierarchy: Hierarchy, freezer: str
) -> None:
    if freezer == "signals":
        hierarchy = signal_hierarchy
    group = hierarchy.group("burner", GroupLimits(cpus=1.0))
    proc = start_in(group, BURN)
    try:
        used_by(group, 50_000_000)  # it burns while thawed
        group.freeze()
        assert group.frozen()
        frozen_at = group.cpu_ns()
        time.sleep(0.3)
        assert group.cpu_ns() - frozen_at < 5_000_000
        group.thaw()
        used_by(group, frozen_at + 30_000_000)
        assert cpu_ns_of(hierarchy.path_of("burner")) == pytest.approx(group.cpu_ns(), rel=0.5)
    finally:
        group.remove()
        proc.wait(5)
    assert proc.returncode == -9
    assert not hierarchy.path_of("burner").exists()


def test_the_signal_fallback_stops_every_process_of_a_forking_group(
    signal_hierarchy: Hierarchy,
) -> None:
    """Children forked before and while it stops them are stopped too, and all continue."""
    group = signal_hierarchy.group("forker", GroupLimits(cpus=1.0, pids=32))
    forker = (
        "import os, time\n"
        "for _ in range(3):\n"
        "    if os.fork() == 0:\n"
        "        while True: pass\n"
        "while True:\n"  # and a child every 10 ms, each burning 50 ms
        "    if os.fork() == 0:\n"
        "        t = time.monotonic()\n"
        "        while time.monotonic() - t < 0.05: pass\n"
        "        os._exit(0)\n"
        "    time.sleep(0.01)\n"
        "    while os.waitpid(-1, os.WNOHANG)[0] > 0: pass\n"
    )
    proc = start_in(group, forker)
    try:
        deadline = time.monotonic() + 10
        while len(group.pids()) < 6:
            assert time.monotonic() < deadline, group.pids()
            time.sleep(0.01)
        group.freeze()
        assert group.frozen()
        frozen_at = group.cpu_ns()
        time.sleep(0.3)
        assert group.cpu_ns() - frozen_at < 5_000_000
        group.thaw()
        assert not group.frozen()
        used_by(group, frozen_at + 30_000_000)
    finally:
        group.remove()
        proc.wait(5)
    assert proc.returncode == -9


@pytest.mark.parametrize("freezer", ["cgroup", "signals"])
def test_a_frozen_bot_is_stopped_by_sigterm_at_once(
    hierarchy: Hierarchy, signal_hierarchy: Hierarchy, freezer: str
) -> None:
    """The supervisor stops a bot the referee froze between its turns: thawed first, it
    ends on SIGTERM, not on the SIGKILL 5 s later."""
    if freezer == "signals":
        hierarchy = signal_hierarchy
    group = hierarchy.group("frozen-stop", GroupLimits())
    proc = start_in(group, BURN)
    try:
        used_by(group, 10_000_000)
        group.freeze()
        terminate_bot(proc, group)
        assert proc.returncode == -signal.SIGTERM
    finally:
        group.remove()


def test_memory_past_the_limit_is_an_oom_kill_counted(hierarchy: Hierarchy) -> None:
    group = hierarchy.group("hog", GroupLimits(memory_mb=64))
    proc = start_in(group, "b = []\nwhile True: b.append(bytearray(8 << 20))\n")
    try:
        proc.wait(20)
        assert proc.returncode == -9
        assert group.events().oom_kills >= 1
    finally:
        group.remove()


def test_forks_past_pids_max_are_refused_and_counted(hierarchy: Hierarchy) -> None:
    group = hierarchy.group("forker", GroupLimits(pids=8))
    code = (
        "import os, sys, time\nn = 0\n"
        "try:\n"
        "    for _ in range(50):\n"
        "        if os.fork() == 0: time.sleep(30); os._exit(0)\n"
        "        n += 1\n"
        "except OSError: pass\n"
        "sys.stderr.write(str(n)); sys.stderr.flush(); time.sleep(30)\n"
    )
    proc = start_in(group, code)
    try:
        deadline = time.monotonic() + 10
        while group.events().pids_refused == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert group.events().pids_refused >= 1
        assert len(group.pids()) <= 8
        assert proc.stderr is not None
        forked = os.read(proc.stderr.fileno(), 16)  # written once its fork was refused
    finally:
        group.remove()
        proc.wait(5)
    assert int(forked or b"99") < 8


def test_the_cpu_quota_holds_a_burner_to_its_share(hierarchy: Hierarchy) -> None:
    """A burner capped at 5 % of a core, beside one with a whole core measured in the same
    second (on a busy machine the uncapped one shows what a burner gets at all)."""
    capped = hierarchy.group("quota", GroupLimits(cpus=0.05))
    free = hierarchy.group("free", GroupLimits(cpus=1.0))
    procs = [start_in(capped, BURN), start_in(free, BURN)]
    try:
        start, start_free = capped.cpu_ns(), free.cpu_ns()
        t0 = time.monotonic()
        time.sleep(1.0)
        used = (capped.cpu_ns() - start) / 1e9
        used_free = (free.cpu_ns() - start_free) / 1e9
        wall = time.monotonic() - t0
        assert used < 0.05 * wall * 2  # 5 % of a core, with room for the period edges
        if used_free > 0.2 * wall:  # a burner could have had more: the cap held it back
            assert capped.events().cpu_throttled > 0
            assert used < used_free / 2
    finally:
        capped.remove()
        free.remove()
        for proc in procs:
            proc.wait(5)


def test_a_bad_group_name_is_refused_with_what_would_work(hierarchy: Hierarchy) -> None:
    with pytest.raises(ValueError, match="use letters, digits"):
        hierarchy.group("../escape", GroupLimits())


def test_cleanup_kills_and_removes_groups_left_behind(hierarchy: Hierarchy) -> None:
    group = hierarchy.group("orphan", GroupLimits())
    proc = start_in(group, "import time\ntime.sleep(60)\n")
    assert hierarchy.cleanup() >= 1
    proc.wait(5)
    assert proc.returncode == -9
    assert not hierarchy.path_of("orphan").exists()
