"""Interleaved A/B of the two shapes of match hosting (docs/workers.md "Co-hosted matches"):
a referee running the matches itself (``arena referee --matches 64``) against a referee
with a separate host (``arena worker -n 1 --matches 64``), alternating (ABBA...) so that a
shared, noisy machine loads both alike.

Per round and shape: a fresh platform and fresh SDK bot processes (``overhead.py``'s), two
warm-up matches, then 16 fan-tan matches of 2 deals with instant bots: platform CPU per
decision (referee + host + Redis, from /proc), the bots' CPU, decisions/s; with
``--clock``, the bench's clock scenario instead (answers 20 ms inside and 20 ms over a
150 ms limit: how many were judged wrongly, and the inside answers' think times).

    .venv/bin/python bench/cohost_ab.py [--rounds 4] [--clock]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))
import overhead as bench

from referee.embedded_redis import EmbeddedRedis
from referee.match.spec import TimeControl

FAST = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50, queue_ms=30_000)
CLOCK = TimeControl(move_ms=100, bank_ms=0, grace_ms=50, queue_ms=30_000)
SHAPES = {True: "co-hosted", False: "separate "}


def throughput(
    conn: redis.Redis, server: EmbeddedRedis, tag: str, cohost: bool
) -> tuple[float, float, float]:
    """(platform CPU ms per decision, bots' CPU ms per decision, decisions/s)."""
    assert server.pid is not None
    with bench.platform(server.url, processes=1, matches=64, cohost=cohost) as (addr, pids):
        pids["redis"] = server.pid
        named = {f"{tag}-{i}": bench.TimedBot() for i in range(4)}
        with bench.running_bots(conn, addr, named):
            bench.run_matches(conn, pids, f"{tag}-w", list(named), 2, 1, FAST)
            run = bench.run_matches(conn, pids, f"{tag}-m", list(named), 16, 2, FAST)
    n = len(bench.asked_steps(run.records))
    cpu = {k: v * 1000 / n for k, v in run.cpu.items()}
    platform = cpu["referee"] + cpu["hosts"] + cpu["redis"]
    print(
        f"{SHAPES[cohost]}: platform {platform:.3f} ms (referee {cpu['referee']:.3f} + hosts "
        f"{cpu['hosts']:.3f} + Redis {cpu['redis']:.3f}), bots {cpu['bots']:.3f} ms, "
        f"{n / run.wall_s:.0f}/s, load {_load()}",
        flush=True,
    )
    return platform, cpu["bots"], n / run.wall_s


def clock(conn: redis.Redis, server: EmbeddedRedis, tag: str, cohost: bool) -> tuple[int, int]:
    """(answers judged wrongly, answers)."""
    limit_s = (CLOCK.move_ms + CLOCK.grace_ms) / 1000
    assert server.pid is not None
    with bench.platform(server.url, processes=1, matches=64, cohost=cohost) as (addr, pids):
        pids["redis"] = server.pid
        named = {
            f"{tag}-in": bench.TimedBot(limit_s - 0.020),
            f"{tag}-over": bench.TimedBot(limit_s + 0.020, alternate=True),
            f"{tag}-inst": bench.TimedBot(),
        }
        with bench.running_bots(conn, addr, named):
            run = bench.run_matches(conn, pids, f"{tag}-c", list(named), 3, 1, CLOCK)
    steps = bench.asked_steps(run.records)
    inside = [s for s in steps if s["seat"] == 0]
    over = [s for s in steps if s["seat"] == 1 and s["seq"] % 2 == 1]
    late = sum(1 for s in inside if s["timeout"])
    early = sum(1 for s in over if not s["timeout"])
    think = sorted(s["think_ms"] for s in inside)
    print(
        f"{SHAPES[cohost]}: inside judged late {late} of {len(inside)}, over judged in time "
        f"{early} of {len(over)}; inside think p50 {bench.pct(think, 0.5):.1f} p90 "
        f"{bench.pct(think, 0.9):.1f} max {think[-1]:.1f} ms; load {_load()}",
        flush=True,
    )
    return late + early, len(inside) + len(over)


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of both shapes (4)")
    parser.add_argument("--clock", action="store_true", help="the clock scenario instead")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        rows: dict[bool, list[tuple[float, ...]]] = {True: [], False: []}
        for r in range(args.rounds):
            for cohost in (True, False) if r % 2 == 0 else (False, True):
                tag = f"r{r}{'c' if cohost else 's'}"
                if args.clock:
                    rows[cohost].append(clock(conn, server, tag, cohost))
                else:
                    rows[cohost].append(throughput(conn, server, tag, cohost))
        conn.close()
    for cohost in (True, False):
        got = rows[cohost]
        if args.clock:
            print(
                f"{SHAPES[cohost]}: judged wrongly {sum(g[0] for g in got)} of "
                f"{sum(g[1] for g in got)} answers over {len(got)} rounds"
            )
        else:
            print(
                f"{SHAPES[cohost]}: platform CPU ms per decision median "
                f"{statistics.median(g[0] for g in got):.3f} (range {min(g[0] for g in got):.3f}"
                f"-{max(g[0] for g in got):.3f}), bots {statistics.median(g[1] for g in got):.3f}"
                f", decisions/s median {statistics.median(g[2] for g in got):.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
