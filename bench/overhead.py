"""Platform overhead per decision, end-to-end throughput and clock accuracy.

Starts an embedded Redis, a referee (``arena referee``) and a worker pool (``arena worker``)
as processes, runs instant SDK bots in this process, and measures in one run:

* raw Redis round trip (PING) and raw gRPC round trip (unary health Check on loopback);
* platform overhead per decision = the worker's wall time of a decision minus the bot's
  think time as the referee stamped it (so it is the Redis mailbox path: worker → inbox →
  referee → … → reply list → worker), p50 and p99, with 1 and with 16 concurrent matches;
* decisions per second end to end (enqueue of the matches to the last commit);
* clock accuracy: bots that answer 20 ms inside and 20 ms over their limit; how many of
  their decisions were judged wrongly.

    .venv/bin/python bench/overhead.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

from referee import bots, keys
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.registry import get_game
from sample_bots.sdk import Bot, Turn
from workers import queue
from workers.spec import MatchSpec, TimeControl


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def _proc_cpu_s(pid: int, children: bool = False) -> float:
    """CPU seconds of process ``pid`` (with its reaped children's when ``children``)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])
    if children:
        ticks += int(fields[13]) + int(fields[14])
    return ticks * _TICK_S


def _child_pids(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
    return out


def cpu_snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by the referee, the worker pool (its worker processes and
    their finished work horses), Redis, and this process (the bots)."""
    pool = pids["workers"]
    return {
        "referee": _proc_cpu_s(pids["referee"]),
        "workers": _proc_cpu_s(pool)
        + sum(_proc_cpu_s(child, children=True) for child in _child_pids(pool)),
        "redis": _proc_cpu_s(pids["redis"]),
        "bots+bench": _proc_cpu_s(os.getpid()),
    }


def redis_rtt_ms(url: str, n: int = 3000) -> list[float]:
    conn = redis.Redis.from_url(url)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        conn.ping()
        out.append((time.perf_counter() - t) * 1000)
    conn.close()
    return out


def grpc_rtt_ms(n: int = 3000) -> list[float]:
    async def main() -> list[float]:
        server = grpc.aio.server()
        health_pb2_grpc.add_HealthServicer_to_server(health.aio.HealthServicer(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        out = []
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = health_pb2_grpc.HealthStub(channel)
            for _ in range(n):
                t = time.perf_counter()
                await stub.Check(health_pb2.HealthCheckRequest())
                out.append((time.perf_counter() - t) * 1000)
        await server.stop(0)
        return out

    return asyncio.run(main())


class TimedBot(Bot):
    """Plays the first legal action after ``delay_s``; with ``alternate`` only requests
    with an odd ``seq`` are delayed (so a late bot never collects strikes in a row: at a
    3-seat table a seat's seqs alternate in parity)."""

    max_concurrent_matches = 32

    def __init__(self, delay_s: float = 0.0, alternate: bool = False, inline: bool = False):
        self.delay_s = delay_s
        self.alternate = alternate
        self.choose_inline = inline and not delay_s  # instant bots may skip the thread pool

    def choose(self, turn: Turn) -> str:
        if self.delay_s and not (self.alternate and turn.seq % 2 == 0):
            time.sleep(self.delay_s)
        return turn.legal_actions[0]

    def on_result(self, result: Any) -> None:
        pass


@contextlib.contextmanager
def platform(url: str, workers: int) -> Iterator[tuple[str, dict[str, int]]]:
    cli = [sys.executable, "-m", "referee.cli.main"]
    referee = subprocess.Popen(
        [*cli, "referee", "--redis-url", url, "--port", "0", "--http-port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    pool = subprocess.Popen(
        [*cli, "worker", "-n", str(workers), "--redis-url", url, "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert referee.stdout is not None
        port = None
        for raw in iter(referee.stdout.readline, b""):
            found = re.search(rb"listening on 127\.0\.0\.1:(\d+)", raw)
            if found:
                port = int(found.group(1))
                break
        threading.Thread(target=referee.stdout.read, daemon=True).start()
        yield f"127.0.0.1:{port}", {"referee": referee.pid, "workers": pool.pid}
    finally:
        for proc in (pool, referee):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


@contextlib.contextmanager
def running_bots(conn: redis.Redis, server: str, named: dict[str, Bot]) -> Iterator[None]:
    stops = []
    for name, bot in named.items():
        token = bots.register(conn, name)
        bot.name = name
        stop = threading.Event()
        stops.append(stop)
        threading.Thread(
            target=bot.run, args=(server, token), kwargs={"stop": stop}, daemon=True
        ).start()
    time.sleep(1.0)  # let them connect
    try:
        yield
    finally:
        for stop in stops:
            stop.set()


def run_matches(
    conn: redis.Redis, prefix: str, seats: list[str], count: int, deals: int, tc: TimeControl
) -> tuple[float, list[dict[str, Any]]]:
    """Enqueue ``count`` fan-tan matches at once; wall seconds until all committed, records."""
    rules = get_game("sevens").preset("fan-tan").to_dict()
    ids = [f"{prefix}-{i}" for i in range(count)]
    start_ms = time.time() * 1000.0
    for i, match_id in enumerate(ids):
        spec = MatchSpec(
            match_id=match_id,
            game="sevens",
            rules=rules,
            seats=tuple(seats),
            seed=i,
            deals=tuple(DealSpec(seed=1000 * i + d, rotation=d % len(seats)) for d in range(deals)),
            time_control=tc,
            strikes=0,
        )
        assert queue.enqueue_match(conn, spec)
    # One pipelined poll every 50 ms: the bench process also runs the bots, so polling
    # each match every 10 ms (as earlier versions did) took CPU from them and from Redis.
    # The end is the last commit's own stamp, so the poll interval does not add to it.
    pending = list(ids)
    while pending:
        pipe = conn.pipeline(transaction=False)
        for match_id in pending:
            pipe.hget(keys.match_state(match_id), "state")
        states = pipe.execute()
        for match_id, state in zip(list(pending), states, strict=True):
            if state == "failed":
                raise RuntimeError(queue.match_status(conn, match_id))
            if state == "done":
                pending.remove(match_id)
        time.sleep(0.05)
    results = [queue.get_result(conn, m) for m in ids]
    end_ms = max(r["finished_ms"] for r in results if r is not None)
    wall = (end_ms - start_ms) / 1000.0
    print(f"{prefix}: {count} match(es) done in {wall:.1f} s", file=sys.stderr, flush=True)
    records = [queue.get_record(conn, m) for m in ids]
    return wall, [r for r in records if r is not None]


def asked_steps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for r in records for s in r["steps"] if "request" in s]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer deals and samples")
    parser.add_argument(
        "--inline-choose",
        action="store_true",
        help="the instant bots set choose_inline (no thread pool hop in the SDK)",
    )
    args = parser.parse_args()
    deals = 2 if args.quick else 4
    rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        r_rtt = redis_rtt_ms(server.url)
        g_rtt = grpc_rtt_ms()
        rows.append(
            (
                "raw Redis round trip (PING) p50 / p99",
                f"{pct(r_rtt, 0.5):.3f} / {pct(r_rtt, 0.99):.3f} ms",
            )
        )
        rows.append(
            (
                "raw gRPC round trip (unary, loopback) p50 / p99",
                f"{pct(g_rtt, 0.5):.3f} / {pct(g_rtt, 0.99):.3f} ms",
            )
        )
        fast = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50, queue_ms=30_000)
        with platform(server.url, workers=16) as (addr, pids):
            assert server.pid is not None
            pids["redis"] = server.pid
            named: dict[str, Bot] = {
                f"inst{i}": TimedBot(inline=args.inline_choose) for i in range(4)
            }
            with running_bots(conn, addr, named):
                for count in (1, 16):
                    before = cpu_snapshot(pids)
                    wall, records = run_matches(conn, f"b{count}", list(named), count, deals, fast)
                    time.sleep(0.3)  # let the work horses be reaped (their CPU then counts)
                    after = cpu_snapshot(pids)
                    steps = asked_steps(records)
                    overhead = [s["wall_ms"] - s["think_ms"] for s in steps]
                    think = [s["think_ms"] for s in steps]
                    inbox = [s["inbox_ms"] for s in steps]
                    rows.append(
                        (
                            f"overhead per decision, {count} concurrent match(es), p50 / p99",
                            f"{pct(overhead, 0.5):.3f} / {pct(overhead, 0.99):.3f} ms "
                            f"(of which request to the referee's send stamp p50 "
                            f"{statistics.median(inbox):.3f} ms; bot think incl. gRPC p50 "
                            f"{statistics.median(think):.3f} ms; {len(steps)} decisions)",
                        )
                    )
                    rows.append(
                        (
                            f"decisions/s end to end, {count} concurrent match(es)",
                            f"{len(steps) / wall:,.0f}/s ({len(steps)} in {wall:.2f} s)",
                        )
                    )
                    used = {k: (after[k] - before[k]) * 1000 / len(steps) for k in after}
                    rows.append(
                        (
                            f"CPU ms per decision, {count} concurrent match(es)",
                            f"{sum(used.values()):.2f} = "
                            + " + ".join(f"{k} {v:.2f}" for k, v in used.items()),
                        )
                    )
            # clock accuracy: limit = move 100 + bank 0 + grace 50 = 150 ms
            tc = TimeControl(move_ms=100, bank_ms=0, grace_ms=50, queue_ms=30_000)
            limit_s = (tc.move_ms + tc.grace_ms) / 1000
            named = {
                "inside": TimedBot(limit_s - 0.020),
                "over": TimedBot(limit_s + 0.020, alternate=True),
                "inst-a": TimedBot(),
            }
            with running_bots(conn, addr, named):
                _wall, records = run_matches(conn, "clock", list(named), 3, 1, tc)
            steps = asked_steps(records)
            inside = [s for s in steps if s["seat"] == 0]
            over = [s for s in steps if s["seat"] == 1 and s["seq"] % 2 == 1]
            wrong_in = sum(1 for s in inside if s["timeout"])
            wrong_over = sum(1 for s in over if not s["timeout"])
            for s in inside + over:
                if s["timeout"] == (s["seat"] == 0):
                    print(
                        f"wrong judgement: seat {s['seat']} think {s['think_ms']:.1f} ms "
                        f"(wall {s['wall_ms']:.1f} ms)",
                        file=sys.stderr,
                    )
            in_p50 = statistics.median(s["think_ms"] for s in inside)
            over_p50 = statistics.median(s["think_ms"] for s in over)
            rows.append(
                (
                    "clock: answers 20 ms inside the limit judged timed out",
                    f"{wrong_in} of {len(inside)} (think p50 {in_p50:.1f} ms, limit 150 ms)",
                )
            )
            rows.append(
                (
                    "clock: answers 20 ms over the limit judged in time",
                    f"{wrong_over} of {len(over)} (think p50 {over_p50:.1f} ms, limit 150 ms)",
                )
            )
        conn.close()
    width = max(len(k) for k, _ in rows)
    print(f"| {'measure':<{width}} | value |\n|{'-' * (width + 2)}|-------|")
    for key, value in rows:
        print(f"| {key:<{width}} | {value} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
