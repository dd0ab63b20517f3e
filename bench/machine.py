"""Baselines of the machine a benchmark runs on, measured in the same run as its figures.

Two properties of the machine move the platform's CPU per decision the most:

* the interpreter's speed: the minimal 4-player Sevens loop of ``engine.py``, in deals/s
  (14,847 on the machine of 2026-11-29, 9,700-9,800 on the slower one of 2026-12-06);
* the CPU one thread wake-up costs: work handed to a thread that waits for it (an
  ``Event`` set and waited for, both ways), and a thread woken from a 10 ms sleep. A
  decision crosses threads and processes about a dozen times on each end (gRPC's threads,
  the event loop, the SDK's thread pool), so where a wake-up costs tens of microseconds, as
  on a virtual machine whose idle cores halt, wake-ups are most of a thinking bot's CPU
  per decision, whatever its Python does.

:func:`context_switches` counts a process's wake-ups (every thread's context switches, from
``/proc``), so a benchmark can print them per decision beside the wake-up's cost.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import threading
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent))

from engine import minimal_sevens_deal, rates_in_slice


def handoff_us(handoffs: int = 2000) -> float:
    """CPU microseconds per hand-over of work between two threads (one wake-up each)."""
    ping, pong = threading.Event(), threading.Event()

    def other() -> None:
        for _ in range(handoffs):
            ping.wait()
            ping.clear()
            pong.set()

    thread = threading.Thread(target=other, daemon=True)
    start = time.process_time()
    thread.start()
    for _ in range(handoffs):
        ping.set()
        pong.wait()
        pong.clear()
    thread.join()
    return (time.process_time() - start) * 1e6 / (2 * handoffs)


def sleep_wake_us(wakes: int = 100, sleep_s: float = 0.01) -> float:
    """CPU microseconds per wake-up of a thread from a ``sleep_s`` sleep (an idle core's
    wake-up: what a bot that waits for its next turn pays)."""
    start = time.process_time()
    for _ in range(wakes):
        time.sleep(sleep_s)
    return (time.process_time() - start) * 1e6 / wakes


def loop_deals_per_s(slices: int = 10, seed: int = 1) -> tuple[float, float]:
    """Deals/s of ``engine.py``'s minimal 4-player Sevens loop on one core, over ``slices``
    0.1 s slices: the best (what ``engine.py`` reports) and the median (a shared machine's
    slices spread widely: 5,800-9,700 deals/s in one second of 2026-12-06)."""
    rng = random.Random(seed)
    for _ in range(20):  # warm the caches
        minimal_sevens_deal(rng)
    rates = [rates_in_slice(minimal_sevens_deal, rng, 0.1)[0] for _ in range(slices)]
    return max(rates), statistics.median(rates)


def context_switches(pid: int) -> int:
    """Context switches (voluntary and not) of every thread of ``pid`` so far; threads that
    ended are in the process's own total only while it lives, so count across one run."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return 0
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except FileNotFoundError:
            continue
    return total


def baseline_line() -> str:
    """The machine's baselines in one line, measured now."""
    best, median = loop_deals_per_s()
    handoff = handoff_us()
    wake = sleep_wake_us()
    return (
        f"machine baseline: minimal Sevens loop {best:,.0f} deals/s (median of its 0.1 s "
        f"slices {median:,.0f}); a thread wake-up "
        f"{handoff:.0f} us CPU (hand-over between two threads), {wake:.0f} us (from a 10 ms "
        f"sleep); {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}"
    )


if __name__ == "__main__":
    print(baseline_line())
