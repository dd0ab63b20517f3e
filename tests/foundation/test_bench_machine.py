"""bench/machine.py: the same-run machine baselines the platform benchmarks print beside
their figures (the interpreter's speed, a thread wake-up's CPU, a process's wake-ups)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "bench"))

import machine


def test_context_switches_count_every_thread_of_a_process() -> None:
    before = machine.context_switches(os.getpid())
    # each hand-over blocks one thread until the other wakes it: a context switch at least
    machine.handoff_us(handoffs=50)
    assert machine.context_switches(os.getpid()) - before >= 50
    assert machine.context_switches(2**22 + 12345) == 0  # no such process: nothing counted


def test_the_baseline_line_reports_the_loop_rate_and_the_wake_up_costs() -> None:
    best, median = machine.loop_deals_per_s(slices=2)
    assert best >= median > 0
    assert machine.handoff_us(handoffs=50) > 0
    assert machine.sleep_wake_us(wakes=5, sleep_s=0.001) > 0
    line = machine.baseline_line()
    assert re.fullmatch(
        r"machine baseline: minimal Sevens loop [\d,]+ deals/s \(median of its 0\.1 s slices "
        r"[\d,]+\); a thread wake-up \d+ us CPU \(hand-over between two threads\), \d+ us "
        r"\(from a 10 ms sleep\); \d+ cores, load average [\d.]+",
        line,
    ), line
