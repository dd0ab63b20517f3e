"""Sizing to the machine (workers/sizing.py, docs/workers.md "Sizing to the machine"): the
rule, what it reads of the machine, and how ``arena up`` / ``arena worker`` apply it."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from referee.cli import workers_cmd
from referee.defaults import DEFAULT_MATCHES
from referee.errors import ConfigError
from workers import sizing


@pytest.mark.parametrize(
    ("cores", "reserve", "reserved", "processes"),
    [
        (1, None, 0, 1),
        (2, None, 1, 1),
        (3, None, 1, 2),
        (4, None, 1, 3),
        (8, None, 2, 6),
        (16, None, 4, 12),
        (64, None, 16, 48),
        (2, 1, 1, 1),
        (2, 5, 1, 1),  # never below one process
        (16, 0, 0, 16),
    ],
)
def test_processes_leave_a_quarter_of_the_cores_for_bots_rounded_up(
    cores: int, reserve: int | None, reserved: int, processes: int
) -> None:
    plan = sizing.size(cores, None, reserve)
    assert (plan.reserved, plan.processes) == (reserved, processes)
    assert plan.matches == DEFAULT_MATCHES  # memory unknown: the default


def test_matches_per_process_follow_memory_within_bounds() -> None:
    assert sizing.size(2, 100).matches == DEFAULT_MATCHES  # little memory: never fewer
    assert sizing.size(3, 800).matches == 100  # 800 MB x 1/4 / 2 processes / 1 MB
    assert sizing.size(2, 1_000_000).matches == sizing.MAX_MATCHES
    assert sizing.size(16, 2_000).matches == DEFAULT_MATCHES  # shared by 12 processes


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        sizing.size(0, None)
    with pytest.raises(ValueError, match="--reserve-cores -1"):
        sizing.size(4, None, -1)


def test_the_machine_is_read_from_affinity_quota_and_memory(tmp_path: Path) -> None:
    assert sizing.usable_cores(tmp_path) >= 1  # no cgroup files: the affinity mask
    (tmp_path / "cpu.max").write_text("max 100000\n")
    unlimited = sizing.usable_cores(tmp_path)
    (tmp_path / "cpu.max").write_text("100000 100000\n")
    assert sizing.usable_cores(tmp_path) == 1 <= unlimited
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 8000000 kB\nMemAvailable: 4096000 kB\n")
    assert sizing.available_memory_mb(meminfo, tmp_path) == 4000
    (tmp_path / "memory.max").write_text(f"{1024 * 1024 * 1024}\n")
    (tmp_path / "memory.current").write_text(f"{512 * 1024 * 1024}\n")
    assert sizing.available_memory_mb(meminfo, tmp_path) == 512
    assert sizing.available_memory_mb(tmp_path / "none", tmp_path / "none") is None


def _args(argv: list[str], referee_runs_matches: bool) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    workers_cmd.add_host_options(parser, referee_runs_matches=referee_runs_matches)
    return parser.parse_args(argv)


def test_arena_up_and_worker_fill_what_the_operator_left_out() -> None:
    plan = sizing.this_machine()
    up = _args([], referee_runs_matches=True)
    workers_cmd.resolve_sizing(up, referee_runs_matches=True)
    assert (up.num_workers, up.matches) == (plan.processes - 1, plan.matches)
    worker = _args([], referee_runs_matches=False)
    workers_cmd.resolve_sizing(worker, referee_runs_matches=False)
    assert (worker.num_workers, worker.matches) == (plan.processes, plan.matches)
    given = _args(["-n", "3", "--matches", "7"], referee_runs_matches=True)
    workers_cmd.resolve_sizing(given, referee_runs_matches=True)
    assert (given.num_workers, given.matches) == (3, 7)
    bad = _args(["--reserve-cores", "-2"], referee_runs_matches=False)
    with pytest.raises(ConfigError, match="--reserve-cores -2: use 0"):
        workers_cmd.resolve_sizing(bad, referee_runs_matches=False)
