"""Throughput with one platform process against two (``arena up``'s shape on more cores).

The same season-like load, more matches than one process's slots, played by the platform
in ``arena up``'s shape: a referee co-hosting matches, plus ``P - 1`` separate match hosts
(``arena worker``). A shape ``PxS`` is P processes of S slots each; the default compares
one process of 8 slots, one of 16 (as many slots as two processes: what more concurrency
alone gives) and two of 8. Bots are SDK processes
(``bench/overhead.py``'s), thinking ``--think-ms``. Each shape runs ``--rounds`` times,
interleaved, on a fresh platform; printed: decisions per second (median and all), the
ratio against one process in the same run, the platform's CPU per decision, and the
machine's load average, since the bots and the other users of the machine share its
cores.

    .venv/bin/python bench/cores.py [--shapes 1x8,1x16,2x8] [--matches 24]
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from overhead import (
    TimedBot,
    asked_steps,
    platform,
    run_matches,
    running_bots,
    serve_bots,
)

from referee.embedded_redis import EmbeddedRedis
from referee.match.spec import TimeControl


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--shapes", default="1x8,1x16,2x8", help="PxS: P processes of S slots (first: the base)"
    )
    parser.add_argument("--matches", type=int, default=24, help="matches queued per run")
    parser.add_argument("--deals", type=int, default=2)
    parser.add_argument("--think-ms", type=float, default=0.0, help="bots' think time")
    parser.add_argument("--bots", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--serve-bots", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bots:
        return serve_bots()
    shapes = args.shapes.split(",")
    try:
        sizes = {shape: tuple(int(n) for n in shape.split("x")) for shape in shapes}
        assert all(len(v) == 2 and min(v) >= 1 for v in sizes.values())
    except (ValueError, AssertionError):
        parser.error(f"--shapes {args.shapes}: give PxS pairs like 1x8,2x8 (P, S >= 1)")
    tc = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50, queue_ms=60_000)
    rates: dict[str, list[float]] = {p: [] for p in shapes}
    cpus: dict[str, list[float]] = {p: [] for p in shapes}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        assert server.pid is not None
        for round_no in range(args.rounds):
            for shape in random.sample(shapes, len(shapes)):
                procs, slots = sizes[shape]
                loads.append(os.getloadavg()[0])
                with platform(server.url, processes=1, matches=slots, extra_hosts=procs - 1) as (
                    addr,
                    pids,
                ):
                    pids["redis"] = server.pid
                    time.sleep(1.0)  # the hosts register with RQ
                    named = {
                        f"p{procs}s{slots}r{round_no}b{i}": TimedBot(
                            delay_s=args.think_ms / 1000.0, concurrency=64
                        )
                        for i in range(args.bots)
                    }
                    with running_bots(conn, addr, named):
                        run = run_matches(
                            conn,
                            pids,
                            f"c{procs}s{slots}r{round_no}",
                            list(named),
                            args.matches,
                            args.deals,
                            tc,
                        )
                steps = len(asked_steps(run.records))
                rates[shape].append(steps / run.wall_s)
                platform_s = run.cpu["referee"] + run.cpu["hosts"] + run.cpu["redis"]
                cpus[shape].append(platform_s * 1000.0 / steps)
                print(
                    f"{shape}: {rates[shape][-1]:.0f} decisions/s, platform "
                    f"{cpus[shape][-1]:.3f} ms CPU per decision",
                    file=sys.stderr,
                    flush=True,
                )
        conn.close()
    base = statistics.median(rates[shapes[0]])
    print(
        f"| processes x slots | decisions/s, median (all) | vs {shapes[0]} | platform CPU ms "
        "per decision, median |"
    )
    print("|---|---|---|---|")
    for shape in shapes:
        mid = statistics.median(rates[shape])
        each = ", ".join(f"{r:.0f}" for r in rates[shape])
        print(
            f"| {shape} | {mid:.0f} ({each}) | {mid / base:.2f} | "
            f"{statistics.median(cpus[shape]):.3f} |"
        )
    print(
        f"({args.matches} matches of {args.deals} deals per run, "
        f"{args.bots} bots thinking {args.think_ms:g} ms, {os.cpu_count()} cores, "
        f"load average {min(loads):.1f}-{max(loads):.1f}, {time.strftime('%H:%M:%S')})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
