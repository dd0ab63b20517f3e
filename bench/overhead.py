"""Platform overhead per decision, throughput, CPU, Redis commands, scale and clock accuracy.

Starts an embedded Redis and a referee that runs the matches itself (``arena referee
--matches M``: co-hosted, docs/workers.md "Co-hosted matches"; the main rows), and for one
row a referee with a separate match host (``arena worker -n 1 --matches M``), as
processes; runs the SDK bots in processes of their own (one per bot, so that bots do not
share one interpreter lock with each other or with the bench), and measures in one run,
each figure printed beside its target and a baseline measured in the same run:

* baselines: raw Redis round trip (PING) and raw gRPC round trip (unary health Check);
* platform overhead per decision = the host's wall time of a decision minus the bot's think
  time as the referee stamped it (host → internal stream → referee → bot → referee → host),
  p50 and p99: 1 match of instant bots, 16 matches of instant bots, 16 matches of bots
  thinking 10 ms;
* decisions per second end to end (enqueue of the matches to the last commit);
* platform CPU per decision (referee + hosts + Redis, from /proc; the bots' processes
  apart; co-hosted, the hosts' CPU is the referee's);
* Redis commands per decision (``INFO commandstats`` deltas over the run, the bench's own
  polling taken out), and per command for the 16-match run;
* scale (``SCALE_CASES``, one deal per match): 256 matches in one co-hosting referee, 16
  bots of concurrency 64 thinking 200 ms; and more matches than slots, 160 matches queued
  on a referee of 64 slots (``arena up``'s default on this machine), 8 bots thinking
  100 ms. Decisions/s against two ideals: the naive one (every slot deciding once per think
  time, 256 x 5/s) and the reachable one: a match's decisions are in sequence, so with no
  overhead at all the longest match bounds the wall time (256 matches of 1 deal: about
  1,000/s, not 1,280/s), and with more matches than slots the schedule does (each slot
  taking the next queued match when its last ends). Also the delay per decision (wall less
  think) p50 / p99, how late the last match started, CPU per decision (referee and bots),
  the referee's peak RSS, timeouts. ``--scale-only`` runs just these, ``--tree`` for
  another checkout, ``--ab TREE --rounds N`` alternated with TREE's;
* clock accuracy: bots that answer 20 ms inside and 20 ms over their limit; how many of
  their decisions were judged wrongly.

    .venv/bin/python bench/overhead.py [--quick] [--skip-scale]
    .venv/bin/python bench/overhead.py --scale-only [--tree TREE | --ab TREE [--rounds N]]
    .venv/bin/python bench/overhead.py --serve-bots    # (internal) one bot process
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextlib
import dataclasses
import functools
import heapq
import json
import os
import re
import secrets
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

# this checkout, or the one a comparison run (``--ab``) gave a bot process
sys.path.insert(0, os.environ.get("ARENA_BENCH_TREE") or str(Path(__file__).resolve().parents[1]))

from referee import bots, keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl
from sample_bots.sdk import Bot, Turn

sys.path.append(str(Path(__file__).resolve().parent))

from machine import baseline_line, context_switches

ROOT = str(Path(__file__).resolve().parent.parent)


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


def _host_pids(pool: int) -> list[int]:
    return _child_pids(pool)


BOT_PIDS: set[int] = set()
"""The bot processes running now (``running_bots``)."""


def cpu_snapshot(pids: dict[str, int]) -> dict[str, float]:
    """CPU seconds used so far by the referee, the match hosts (the pool and its host
    processes; none when co-hosted: pid 0), Redis, the bots' processes and this process
    (the bench's polling)."""
    pool = pids["workers"]
    return {
        "referee": _proc_cpu_s(pids["referee"]),
        "hosts": _proc_cpu_s(pool)
        + sum(_proc_cpu_s(child, children=True) for child in _host_pids(pool))
        if pool
        else 0.0,
        "redis": _proc_cpu_s(pids["redis"]),
        "bots": sum(_proc_cpu_s(pid) for pid in BOT_PIDS),
        "bench": _proc_cpu_s(os.getpid()),
    }


def switch_snapshot(pids: dict[str, int]) -> dict[str, int]:
    """Context switches so far of the referee's threads and of the bots' (their wake-ups;
    bench/machine.py measures what one costs)."""
    return {
        "referee": context_switches(pids["referee"]),
        "bots": sum(context_switches(pid) for pid in BOT_PIDS),
    }


def rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


class PeakRss:
    """Samples the RSS of the referee and of the host processes every 0.2 s; keeps peaks."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.peak = {"referee": 0.0, "host": 0.0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            self.peak["referee"] = max(self.peak["referee"], rss_mb(self.pids["referee"]))
            hosts = _host_pids(self.pids["workers"]) if self.pids["workers"] else []
            for host in hosts:
                self.peak["host"] = max(self.peak["host"], rss_mb(host))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(2)


def command_counts(conn: redis.Redis) -> dict[str, int]:
    """Calls per command Redis has executed so far (``INFO commandstats``)."""
    stats: dict[str, Any] = conn.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(entry["calls"]) for name, entry in stats.items()}


def commands(conn: redis.Redis) -> int:
    """Commands Redis has executed so far (``INFO commandstats``)."""
    return sum(command_counts(conn).values())


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

    def __init__(
        self,
        delay_s: float = 0.0,
        alternate: bool = False,
        inline: bool | None = None,
        concurrency: int = 32,
    ):
        self.max_concurrent_matches = concurrency
        self.delay_s = delay_s
        self.alternate = alternate
        # None: the SDK's default (choose inline once timed fast; a thinking bot stays in
        # the pool); True (--inline-choose): instant bots on the stream's thread from the start
        self.choose_inline = inline if not delay_s else None

    def choose(self, turn: Turn) -> str:
        if self.delay_s and not (self.alternate and turn.seq % 2 == 0):
            time.sleep(self.delay_s)
        return turn.legal_actions[0]

    accepted_results = False  # no ActionResult for accepted answers (one message fewer)

    def on_result(self, result: Any) -> None:
        pass


@contextlib.contextmanager
def platform(
    url: str,
    processes: int,
    matches: int,
    cohost: bool = True,
    extra_hosts: int = 0,
    tree: str | None = None,
) -> Iterator[tuple[str, dict[str, int]]]:
    """A referee running ``matches`` matches itself (``cohost``), or a referee and
    ``arena worker -n processes --matches matches``; co-hosted with ``extra_hosts``, also
    ``arena worker -n extra_hosts --matches matches`` beside it (``arena up``'s shape).
    With ``tree``, the platform's code is imported from that checkout."""
    cli = [sys.executable, "-m", "referee.cli.main"]
    env = {**os.environ, **_tree_env(tree)}
    env.setdefault("ARENA_CLUSTER_SECRET", secrets.token_urlsafe(32))
    referee = subprocess.Popen(
        [
            *cli,
            *("referee", "--redis-url", url, "--port", "0", "--http-port", "0"),
            *("--matches", str(matches if cohost else 0)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tree or ROOT,
    )
    procs = [referee]
    hosts = extra_hosts if cohost else processes
    if hosts:
        pool = subprocess.Popen(
            [
                *cli,
                "worker",
                *("-n", str(hosts), "--matches", str(matches)),
                *("--redis-url", url, "--log-level", "WARNING"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=tree or ROOT,
        )
        procs.insert(0, pool)
    try:
        assert referee.stdout is not None
        port = None
        for raw in iter(referee.stdout.readline, b""):
            found = re.search(rb"listening on 127\.0\.0\.1:(\d+)", raw)
            if found:
                port = int(found.group(1))
                break
        threading.Thread(target=referee.stdout.read, daemon=True).start()
        yield (
            f"127.0.0.1:{port}",
            {
                "referee": referee.pid,
                "workers": procs[0].pid if hosts else 0,
            },
        )
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _tree_env(tree: str | None) -> dict[str, str]:
    """Environment that makes a child process import the project from ``tree``."""
    if not tree:
        return {}
    return {
        "ARENA_BENCH_TREE": tree,
        "PYTHONPATH": os.pathsep.join(filter(None, [tree, os.environ.get("PYTHONPATH")])),
    }


@contextlib.contextmanager
def running_bots(
    conn: redis.Redis, server: str, named: dict[str, TimedBot], tree: str | None = None
) -> Iterator[None]:
    """Each bot in a process of its own (``--serve-bots``); its token goes on stdin. With
    ``tree``, the bots' SDK is imported from that checkout."""
    procs = []
    for name, bot in named.items():
        spec = {
            "server": server,
            "name": name,
            "token": bots.register(conn, name),
            "delay_s": bot.delay_s,
            "alternate": bot.alternate,
            "inline": bot.choose_inline,
            "concurrency": bot.max_concurrent_matches,
        }
        proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), "--serve-bots"],
            stdin=subprocess.PIPE,
            text=True,
            env={**os.environ, **_tree_env(tree)},
        )
        assert proc.stdin is not None
        proc.stdin.write(json.dumps(spec) + "\n")
        proc.stdin.flush()
        procs.append(proc)
        BOT_PIDS.add(proc.pid)
    try:
        deadline = time.monotonic() + 30
        for name in named:
            while not conn.hlen(keys.bot_streams(name)) and time.monotonic() < deadline:
                time.sleep(0.05)  # let them connect
        yield
    finally:
        for proc in procs:
            BOT_PIDS.discard(proc.pid)
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.close()  # the bot process stops when its stdin closes
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def serve_bots() -> int:
    """(``--serve-bots``) Play one TimedBot, described by a JSON line on stdin, until stdin
    closes."""
    spec = json.loads(sys.stdin.readline())
    bot = TimedBot(spec["delay_s"], spec["alternate"], spec["inline"], spec["concurrency"])
    bot.name = spec["name"]
    stop = threading.Event()
    thread = threading.Thread(
        target=bot.run, args=(spec["server"], spec["token"]), kwargs={"stop": stop}, daemon=True
    )
    thread.start()
    sys.stdin.read()
    stop.set()
    thread.join(5)
    return 0


@dataclass
class Run:
    wall_s: float
    records: list[dict[str, Any]]
    commands: int  # Redis commands of the platform during the run
    cpu: dict[str, float]  # CPU seconds per process group during the run
    per_command: dict[str, int]  # the same, per command (the bench's polling HGETs and INFOs out)
    switches: dict[str, int]  # context switches of the referee's and the bots' threads


def run_matches(
    conn: redis.Redis,
    pids: dict[str, int],
    prefix: str,
    seats: list[str],
    count: int,
    deals: int,
    tc: TimeControl,
    table: int = 0,
) -> Run:
    """Enqueue ``count`` fan-tan matches at once (tables of ``table`` seats rotating over
    ``seats``, default all of them); wall seconds until all committed, records, commands."""
    rules = get_game("sevens").preset("fan-tan").to_dict()
    size = table or len(seats)
    ids = [f"{prefix}-{i}" for i in range(count)]
    before_counts = command_counts(conn)
    before_cpu = cpu_snapshot(pids)
    before_switches = switch_snapshot(pids)
    start_ms = time.time() * 1000.0
    for i, match_id in enumerate(ids):
        first = (i * size) % len(seats)
        at_table = [seats[(first + k) % len(seats)] for k in range(size)]
        spec = MatchSpec(
            match_id=match_id,
            game="sevens",
            rules=rules,
            seats=tuple(at_table),
            seed=i,
            deals=tuple(DealSpec(seed=1000 * i + d, rotation=d % size) for d in range(deals)),
            time_control=tc,
            strikes=0,
        )
        assert queue.enqueue_match(conn, spec)
    enqueued_s = time.time() - start_ms / 1000.0
    # One pipelined poll every 50 ms (its commands are counted and taken out below). The
    # end is the last commit's own stamp, so the poll interval does not add to it.
    pending = list(ids)
    mine = 0
    while pending:
        pipe = conn.pipeline(transaction=False)
        for match_id in pending:
            pipe.hget(keys.match_state(match_id), "state")
        mine += len(pending)
        states = pipe.execute()
        for match_id, state in zip(list(pending), states, strict=True):
            if state == "failed":
                raise RuntimeError(queue.match_status(conn, match_id))
            if state == "done":
                pending.remove(match_id)
        time.sleep(0.05)
    time.sleep(0.3)
    after_cpu = cpu_snapshot(pids)
    after_switches = switch_snapshot(pids)
    after_counts = command_counts(conn)
    per_command = {
        name: calls - before_counts.get(name, 0)
        for name, calls in after_counts.items()
        if calls - before_counts.get(name, 0)
    }
    per_command["hget"] = per_command.get("hget", 0) - mine
    per_command["info"] = per_command.get("info", 0) - 2  # the two INFO calls
    per_command = {name: calls for name, calls in per_command.items() if calls > 0}
    used = sum(per_command.values())
    results = [queue.get_result(conn, m) for m in ids]
    end_ms = max(r["finished_ms"] for r in results if r is not None)
    wall = (end_ms - start_ms) / 1000.0
    print(
        f"{prefix}: {count} match(es) done in {wall:.1f} s (enqueued in {enqueued_s:.2f} s)",
        file=sys.stderr,
        flush=True,
    )
    records = [queue.get_record(conn, m) for m in ids]
    cpu = {k: after_cpu[k] - before_cpu[k] for k in after_cpu}
    switches = {k: after_switches[k] - before_switches[k] for k in after_switches}
    return Run(wall, [r for r in records if r is not None], used, cpu, per_command, switches)


def asked_steps(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for r in records for s in r["steps"] if "request" in s]


def row_of_run(
    rows: list[tuple[str, str, str]], label: str, run: Run, per_commands: bool = False
) -> None:
    """Overhead, decisions/s, CPU and Redis commands of one run, each beside its target."""
    steps = asked_steps(run.records)
    n = len(steps)
    overhead = [s["wall_ms"] - s["think_ms"] for s in steps]
    think = [s["think_ms"] for s in steps]
    wait = [s["wait_ms"] for s in steps]
    rows.append(
        (
            f"overhead per decision, {label}, p50 / p99",
            f"{pct(overhead, 0.5):.3f} / {pct(overhead, 0.99):.3f} ms (to the send stamp p50 "
            f"{statistics.median(wait):.3f} ms; think incl. gRPC to the bot p50 "
            f"{statistics.median(think):.3f} ms; {n} decisions)",
            TARGETS.get(f"overhead {label}", ""),
        )
    )
    rows.append(
        (
            f"decisions/s end to end, {label}",
            f"{n / run.wall_s:,.0f}/s ({n} in {run.wall_s:.2f} s)",
            TARGETS.get(f"rate {label}", ""),
        )
    )
    used = {k: v * 1000 / n for k, v in run.cpu.items()}
    platform_ms = used["referee"] + used["hosts"] + used["redis"]
    parts = (
        f"referee {used['referee']:.3f} + hosts {used['hosts']:.3f}"
        if used["hosts"]
        else f"referee with its matches {used['referee']:.3f}"
    )
    rows.append(
        (
            f"platform CPU ms per decision, {label}",
            f"{platform_ms:.3f} = {parts} + Redis {used['redis']:.3f} (bots' processes "
            f"{used['bots']:.3f}, the bench's polling {used['bench']:.3f})",
            TARGETS.get(f"cpu {label}", ""),
        )
    )
    rows.append(
        (
            f"context switches per decision (wake-ups), {label}",
            f"referee {run.switches['referee'] / n:.1f} (bots' processes "
            f"{run.switches['bots'] / n:.1f})",
            "",
        )
    )
    rows.append(
        (
            f"Redis commands per decision, {label}",
            f"{run.commands / n:.3f} ({run.commands} commands, "
            f"{run.commands / max(1, len(run.records)):.0f} per match)",
            TARGETS.get(f"commands {label}", ""),
        )
    )
    if per_commands:
        top = sorted(run.per_command.items(), key=lambda kv: -kv[1])
        rows.append(
            (
                f"Redis commands per decision by command, {label}",
                ", ".join(f"{name} {calls / n:.3f}" for name, calls in top[:12])
                + (f", {len(top) - 12} others" if len(top) > 12 else ""),
                "",
            )
        )


TARGETS = {
    "overhead 1 match, instant bots": "p50 <= 0.5 ms",
    "overhead 16 matches, bots thinking 10 ms": "p50 <= 1 ms, p99 <= 5 ms",
    "rate 16 matches, instant bots": ">= 2,000/s",
    "cpu 16 matches, instant bots": "<= 0.5 ms",
    "commands 16 matches, instant bots": "<= 0.2",
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer deals and samples")
    parser.add_argument("--skip-scale", action="store_true", help="no 256-match scenario")
    parser.add_argument(
        "--inline-choose",
        action="store_true",
        help="the instant bots set choose_inline = True (on the stream's thread from the "
        "first decision; by default the SDK moves a fast choose there after a few)",
    )
    parser.add_argument(
        "--ab",
        metavar="TREE",
        help="only the 16-match instant-bot run, alternating this checkout's platform with "
        "TREE's (another checkout, e.g. main) --rounds times; prints each with the ratio",
    )
    parser.add_argument("--rounds", type=int, help="rounds of --ab (3)")
    parser.add_argument(
        "--scale-only",
        action="store_true",
        help="only the scale rows (256 matches; more matches than slots); with --ab TREE "
        "alternated with TREE's platform and bots for --rounds",
    )
    parser.add_argument(
        "--tree", metavar="TREE", help="with --scale-only, run TREE's platform and bots"
    )
    parser.add_argument(
        "--load-sweep",
        action="store_true",
        help="with --scale-only, each scale case at 1, 1/2 and 1/4 of its decision rate "
        "(--rounds of each): what the machine's load costs of the reachable ideal",
    )
    parser.add_argument(
        "--ab-bots",
        action="store_true",
        help="with --ab, each side's bots also import the SDK from that side's tree",
    )
    parser.add_argument(
        "--think-ms",
        type=float,
        default=0.0,
        help="with --ab, the bots think this long (the default: instant bots)",
    )
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="with --ab, record the referee of this checkout with py-spy into DIR",
    )
    parser.add_argument("--serve-bots", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_bots:
        return serve_bots()
    if args.scale_only:
        if args.load_sweep:
            return scale_sweep(args.rounds or 1)
        if args.ab:
            return scale_compare({"base": args.ab, "this": args.tree}, args.rounds or 3)
        return scale_compare({"tree" if args.tree else "this": args.tree}, args.rounds or 1)
    if args.ab:
        return compare(
            args.ab, args.rounds or 3, args.ab_bots, args.profile, args.inline_choose, args.think_ms
        )
    deals = 2 if args.quick else 4
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        rows.append(("baseline: the machine, before the runs", baseline_line(), ""))
        r_rtt = redis_rtt_ms(server.url)
        g_rtt = grpc_rtt_ms()
        rows.append(
            (
                "baseline: raw Redis round trip (PING) p50 / p99",
                f"{pct(r_rtt, 0.5):.3f} / {pct(r_rtt, 0.99):.3f} ms",
                "",
            )
        )
        rows.append(
            (
                "baseline: raw gRPC round trip (unary, loopback) p50 / p99",
                f"{pct(g_rtt, 0.5):.3f} / {pct(g_rtt, 0.99):.3f} ms",
                "",
            )
        )
        fast = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50, queue_ms=30_000)
        with platform(server.url, processes=1, matches=64) as (addr, pids):
            assert server.pid is not None
            pids["redis"] = server.pid
            inline = True if args.inline_choose else None
            named = {f"inst{i}": TimedBot(inline=inline) for i in range(4)}
            with running_bots(conn, addr, named):
                for count in (1, 16):
                    label = f"{count} match{'es' if count > 1 else ''}, instant bots"
                    run = run_matches(conn, pids, f"b{count}", list(named), count, deals, fast)
                    row_of_run(rows, label, run, per_commands=count > 1)
                # Most Redis commands are per match (RQ's job lifecycle, the start, the
                # commit), so commands per decision depend on the match length: the same
                # 16 matches at 8 deals each (a season's usual length).
                run = run_matches(conn, pids, "d8", list(named), 16, 8, fast)
                asked = len(asked_steps(run.records))
                rows.append(
                    (
                        "Redis commands per decision, 16 matches of 8 deals, instant bots",
                        f"{run.commands / asked:.3f} ({run.commands} commands, "
                        f"{run.commands / 16:.0f} per match, {asked} decisions)",
                        "(<= 0.2 is the target at the 2-deal run above)",
                    )
                )
            named = {f"ten{i}": TimedBot(delay_s=0.010) for i in range(4)}
            with running_bots(conn, addr, named):
                label = "16 matches, bots thinking 10 ms"
                run = run_matches(conn, pids, "t16", list(named), 16, max(1, deals // 2), fast)
                row_of_run(rows, label, run)
            # clock accuracy: limit = move 100 + bank 0 + grace 50 = 150 ms
            tc = TimeControl(move_ms=100, bank_ms=0, grace_ms=50, queue_ms=30_000)
            limit_s = (tc.move_ms + tc.grace_ms) / 1000
            named = {
                "inside": TimedBot(limit_s - 0.020),
                "over": TimedBot(limit_s + 0.020, alternate=True),
                "inst-a": TimedBot(),
            }
            with running_bots(conn, addr, named):
                run = run_matches(conn, pids, "clock", list(named), 3, 1, tc)
            steps = asked_steps(run.records)
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
                    "0",
                )
            )
            rows.append(
                (
                    "clock: answers 20 ms over the limit judged in time",
                    f"{wrong_over} of {len(over)} (think p50 {over_p50:.1f} ms, limit 150 ms)",
                    "0",
                )
            )
        # The same 16 matches with a separate match host (``arena worker``): every decision
        # crosses the internal stream.
        with platform(server.url, processes=1, matches=64, cohost=False) as (addr, pids):
            assert server.pid is not None
            pids["redis"] = server.pid
            named = {f"sep{i}": TimedBot(inline=inline) for i in range(4)}
            with running_bots(conn, addr, named):
                label = "16 matches, instant bots, separate host"
                run = run_matches(conn, pids, "sep16", list(named), 16, deals, fast)
                row_of_run(rows, label, run)
        if not args.skip_scale:
            for case_no, case in enumerate(SCALE_CASES):
                scale_rows(rows, scale_run(conn, server, case, f"s{case_no}"))
        conn.close()
    rows.append(("baseline: the machine, after the runs", baseline_line(), ""))
    width = max(len(k) for k, _, _ in rows)
    print(f"| {'measure':<{width}} | measured | target |\n|{'-' * (width + 2)}|---|---|")
    for key, value, target in rows:
        print(f"| {key:<{width}} | {value} | {target} |")
    return 0


def compare(
    base: str,
    rounds: int,
    both_bots: bool,
    profile: str | None,
    inline: bool,
    think_ms: float = 0.0,
) -> int:
    """The 16-match run (2 deals; bots instant or thinking ``think_ms``) on this
    checkout's platform and on ``base``'s,
    alternated, a fresh platform each time: platform CPU per decision, decisions/s and the
    bots' CPU per decision, each side's median and the ratio this/base."""
    sides = {"base": os.path.abspath(base), "this": ROOT}
    fast = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50, queue_ms=30_000)
    got: dict[str, dict[str, list[float]]] = {
        side: {"platform": [], "rate": [], "bots": [], "p50": []} for side in sides
    }
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        assert server.pid is not None
        for round_no in range(rounds):
            order = list(sides) if round_no % 2 == 0 else list(reversed(sides))
            for side in order:
                tree = sides[side]
                loads.append(os.getloadavg()[0])
                with platform(server.url, processes=1, matches=64, tree=tree) as (addr, pids):
                    pids["redis"] = server.pid
                    named = {
                        f"ab{side}{round_no}b{i}": TimedBot(
                            delay_s=think_ms / 1000.0, inline=True if inline else None
                        )
                        for i in range(4)
                    }
                    spy = None
                    if profile and side == "this":
                        os.makedirs(profile, exist_ok=True)
                        spy = subprocess.Popen(
                            [
                                os.path.join(os.path.dirname(sys.executable), "py-spy"),
                                *("record", "--pid", str(pids["referee"]), "--nonblocking"),
                                *("--format", "raw", "--rate", "250"),
                                *("-o", os.path.join(profile, f"referee{round_no}.txt")),
                            ],
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL,
                        )
                    with running_bots(conn, addr, named, tree if both_bots else None):
                        run_matches(conn, pids, f"w{side}{round_no}", list(named), 2, 1, fast)
                        run = run_matches(conn, pids, f"{side}{round_no}", list(named), 16, 2, fast)
                    if spy is not None:
                        spy.send_signal(signal.SIGINT)
                        spy.wait(30)
                steps = asked_steps(run.records)
                n = len(steps)
                into = got[side]
                into["platform"].append(
                    (run.cpu["referee"] + run.cpu["hosts"] + run.cpu["redis"]) * 1000 / n
                )
                into["rate"].append(n / run.wall_s)
                into["bots"].append(run.cpu["bots"] * 1000 / n)
                into["p50"].append(statistics.median(s["wall_ms"] - s["think_ms"] for s in steps))
                print(
                    f"{side} round {round_no}: platform {into['platform'][-1]:.3f} ms/decision, "
                    f"{into['rate'][-1]:.0f}/s, bots {into['bots'][-1]:.3f} ms/decision",
                    file=sys.stderr,
                    flush=True,
                )
        conn.close()
    names = {
        "platform": "platform CPU ms per decision",
        "rate": "decisions/s end to end",
        "bots": "bots' CPU ms per decision",
        "p50": "overhead p50 ms",
    }
    bots = f"bots thinking {think_ms:g} ms" if think_ms else "instant bots"
    print(f"| 16 matches, {bots}, {rounds} rounds | base, median (all) | this | ratio |")
    print("|---|---|---|---|")
    for key, name in names.items():
        b, t = (statistics.median(got[side][key]) for side in sides)
        each = {side: ", ".join(f"{v:.3f}" for v in got[side][key]) for side in sides}
        print(f"| {name} | {b:.3f} ({each['base']}) | {t:.3f} ({each['this']}) | {t / b:.2f} |")
    print(
        f"(base {sides['base']}, bots from {'each side' if both_bots else 'this checkout'}; "
        f"load average {min(loads):.1f}-{max(loads):.1f}, {time.strftime('%H:%M:%S')} UTC)"
    )
    print(f"after the runs, {baseline_line()}")
    return 0


@dataclass(frozen=True)
class ScaleCase:
    """A scale scenario: ``count`` fan-tan matches of one deal at tables of 4 on one
    co-hosting referee of ``slots`` slots, ``bots`` SDK bots of concurrency 64 thinking
    ``think_s``."""

    label: str
    count: int
    slots: int
    think_s: float
    bots: int
    target: float  # the share of the reachable ideal to reach

    @property
    def naive_ideal(self) -> float:
        """Decisions/s if every slot made one decision per think time all run long."""
        return min(self.count, self.slots) / self.think_s


SCALE_CASES = (
    ScaleCase("256 matches in one process, bots thinking 200 ms", 256, 256, 0.200, 16, 0.85),
    # ``arena up``'s default slots (DEFAULT_MATCHES, one process on 2 cores), a season's
    # queue longer than them
    ScaleCase(
        "more matches than slots: 160 on 64 slots, bots thinking 100 ms", 160, 64, 0.100, 8, 0.95
    ),
)


def reachable_makespan_s(decisions: list[int], slots: int, think_s: float) -> float:
    """The shortest wall time a platform with no overhead could play these matches in, in
    queue order: a match's decisions are in sequence (``think_s`` each), so it lasts
    ``decisions x think_s``; each slot takes the next queued match when its last one ends
    (with no more matches than slots: the longest match)."""
    free = [0.0] * min(slots, max(1, len(decisions)))
    heapq.heapify(free)
    end = 0.0
    for n in decisions:
        start = heapq.heappop(free)
        finish = start + n * think_s
        end = max(end, finish)
        heapq.heappush(free, finish)
    return end


@dataclass
class ScaleResult:
    case: ScaleCase
    decisions: int
    wall_s: float
    reachable_s: float
    timeouts: int
    delay_p50: float
    delay_p99: float
    start_spread_s: float  # the last match's start after the first's (records' estimate)
    handoff_ms: tuple[float, float]  # a slot's gap between two matches, p50 and p90
    peak_rss_mb: float
    cpu_ms: dict[str, float]  # per decision
    commands: float  # Redis commands per decision
    switches: dict[str, float]  # context switches per decision: the referee's, the bots'

    @property
    def rate(self) -> float:
        return self.decisions / self.wall_s

    @property
    def reachable(self) -> float:
        return self.decisions / self.reachable_s


def handoffs_ms(starts: list[float], ends: list[float], slots: int) -> tuple[float, float]:
    """A slot's idle time between two matches, p50 and p90 (0, 0 with no more matches
    than slots): each match past the first ``slots`` to start is paired with the latest
    end before its start not yet paired (the slot that end freed); the gap covers the
    ended match's record, commit and job end, and the next one's dequeue and start.
    ``ends`` are the matches' last decisions (``finished_ms``), ``starts`` estimates that
    leave out the time between a match's decisions: the gaps are upper bounds."""
    order = sorted(starts)
    free = sorted(ends)
    gaps: list[float] = []
    for start in order[slots:]:
        at = bisect.bisect_right(free, start)
        if at:
            gaps.append(start - free.pop(at - 1))
    if not gaps:
        return 0.0, 0.0
    return pct(gaps, 0.5), pct(gaps, 0.9)


def scale_run(
    conn: redis.Redis, server: EmbeddedRedis, case: ScaleCase, tag: str, tree: str | None = None
) -> ScaleResult:
    """One scale scenario on a fresh co-hosting referee (its code and the bots' from
    ``tree`` when given)."""
    slow = TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50, queue_ms=60_000)
    with platform(server.url, processes=1, matches=case.slots, tree=tree) as (addr, pids):
        assert server.pid is not None
        pids["redis"] = server.pid
        named = {
            f"{tag}b{i}": TimedBot(delay_s=case.think_s, concurrency=64) for i in range(case.bots)
        }
        with running_bots(conn, addr, named, tree), PeakRss(pids) as peaks:
            run = run_matches(conn, pids, tag, list(named), case.count, 1, slow, table=4)
    by_id = {r["match_id"]: r for r in run.records}
    ordered = [by_id[f"{tag}-{i}"] for i in range(case.count) if f"{tag}-{i}" in by_id]
    per_match = [len(asked_steps([r])) for r in ordered]
    steps = asked_steps(ordered)
    delays = [s["wall_ms"] - s["think_ms"] for s in steps]
    # a match's start: its end less the wall time of its decisions (the time between
    # them, and its commit, are small beside 100-200 ms thinks)
    starts = [r["finished_ms"] - sum(s["wall_ms"] for s in asked_steps([r])) for r in ordered]
    n = len(steps)
    return ScaleResult(
        handoff_ms=handoffs_ms(starts, [r["finished_ms"] for r in ordered], case.slots),
        case=case,
        decisions=n,
        wall_s=run.wall_s,
        reachable_s=reachable_makespan_s(per_match, case.slots, case.think_s),
        timeouts=sum(1 for s in steps if s["timeout"]),
        delay_p50=pct(delays, 0.5),
        delay_p99=pct(delays, 0.99),
        start_spread_s=(max(starts) - min(starts)) / 1000.0 if case.count <= case.slots else 0.0,
        peak_rss_mb=peaks.peak["referee"],
        cpu_ms={k: v * 1000 / n for k, v in run.cpu.items()},
        commands=run.commands / n,
        switches={k: v / n for k, v in run.switches.items()},
    )


def scale_rows(rows: list[tuple[str, str, str]], got: ScaleResult) -> None:
    case = got.case
    rows.append(
        (
            f"scale: {case.label}: decisions/s",
            f"{got.rate:,.0f}/s = {got.rate / got.reachable:.0%} of the reachable ideal "
            f"{got.reachable:,.0f}/s ({got.rate / case.naive_ideal:.0%} of the naive "
            f"{case.naive_ideal:,.0f}/s; {got.decisions} decisions in {got.wall_s:.1f} s "
            f"against {got.reachable_s:.1f} s; timeouts {got.timeouts})",
            f">= {case.target:.0%} of the reachable ideal, no timeouts",
        )
    )
    spread = (
        f"; the last match started {got.start_spread_s:.1f} s after the first"
        if (case.count <= case.slots)
        else f"; a slot's gap between matches p50 {got.handoff_ms[0]:.0f} ms, p90 "
        f"{got.handoff_ms[1]:.0f} ms"
    )
    used = got.cpu_ms
    rows.append(
        (
            f"scale: {case.label}: delay per decision p50 / p99; CPU ms per decision",
            f"{got.delay_p50:.1f} / {got.delay_p99:.1f} ms{spread}; referee "
            f"{used['referee']:.3f} + Redis {used['redis']:.3f} (bots' processes "
            f"{used['bots']:.3f}); Redis commands per decision {got.commands:.3f}",
            "",
        )
    )
    rows.append(
        (
            f"scale: {case.label}: CPU cores used; needed at the target",
            f"{cores_used(got):.2f} of {os.cpu_count()}; {cores_needed(got, case.target):.2f} at "
            f"{case.target:.0%} of the reachable ideal and this CPU per decision; context "
            f"switches per decision: referee {got.switches['referee']:.1f}, bots "
            f"{got.switches['bots']:.1f}",
            "",
        )
    )
    rows.append(
        (
            f"scale: {case.label}: peak RSS of the referee",
            f"{got.peak_rss_mb:.0f} MB",
            "host <= 300 MB" if case.slots == 256 else "",
        )
    )


def scale_compare(trees: dict[str, str | None], rounds: int) -> int:
    """(``--scale-only``) The scale scenarios alone, for each of ``trees`` (name: checkout,
    None for this one), alternated round by round on one Redis; each round's rows, then the
    medians side by side."""
    got: dict[tuple[str, str], list[ScaleResult]] = {}
    loads: list[float] = []
    machine = baseline_line()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        for round_no in range(rounds):
            order = list(trees) if round_no % 2 == 0 else list(reversed(trees))
            for case_no, case in enumerate(SCALE_CASES):
                for side in order:
                    loads.append(os.getloadavg()[0])
                    result = scale_run(
                        conn, server, case, f"x{side}{round_no}c{case_no}", trees[side]
                    )
                    got.setdefault((side, case.label), []).append(result)
                    print(
                        f"{side} round {round_no}: {case.label}: {result.rate:,.0f}/s = "
                        f"{result.rate / result.reachable:.0%} of {result.reachable:,.0f}/s, "
                        f"delay p50/p99 {result.delay_p50:.1f}/{result.delay_p99:.1f} ms, "
                        f"referee {result.cpu_ms['referee']:.3f} bots "
                        f"{result.cpu_ms['bots']:.3f} ms/decision, timeouts {result.timeouts}, "
                        f"load {loads[-1]:.1f}",
                        file=sys.stderr,
                        flush=True,
                    )
        conn.close()
    names = list(trees)
    print(f"| scale, {rounds} round(s) | " + " | ".join(f"{n}: median (all)" for n in names) + " |")
    print("|---|" + "---|" * len(names))
    for case in SCALE_CASES:
        metrics: dict[str, Callable[[ScaleResult], float]] = {
            "% of the reachable ideal": lambda r: 100 * r.rate / r.reachable,
            "decisions/s": lambda r: r.rate,
            "delay p50 ms": lambda r: r.delay_p50,
            "delay p99 ms": lambda r: r.delay_p99,
            "referee CPU ms/decision": lambda r: r.cpu_ms["referee"],
            "bots' CPU ms/decision": lambda r: r.cpu_ms["bots"],
            "referee context switches/decision": lambda r: r.switches["referee"],
            "bots' context switches/decision": lambda r: r.switches["bots"],
            "CPU cores used": cores_used,
            f"CPU cores the target ({case.target:.0%}) needs at this CPU per decision": (
                functools.partial(cores_needed, target=case.target)
            ),
            "timeouts": lambda r: float(r.timeouts),
            "referee peak RSS MB": lambda r: r.peak_rss_mb,
        }
        if case.count <= case.slots:
            metrics["last start after first, s"] = lambda r: r.start_spread_s
        else:
            metrics["a slot's gap between matches p50 ms"] = lambda r: r.handoff_ms[0]
            metrics["a slot's gap between matches p90 ms"] = lambda r: r.handoff_ms[1]
        for metric, of in metrics.items():
            cells = []
            for side in names:
                values = [of(r) for r in got[(side, case.label)]]
                each = ", ".join(f"{v:.3g}" for v in values)
                cells.append(f"{statistics.median(values):.3g} ({each})")
            print(f"| {case.label}: {metric} | " + " | ".join(cells) + " |")
    print(
        f"({', '.join(f'{k} = {v or ROOT}' for k, v in trees.items())}; load average "
        f"{min(loads):.1f}-{max(loads):.1f}; {time.strftime('%H:%M:%S', time.gmtime())} UTC)"
    )
    print(f"before the runs, {machine}")
    print(f"after the runs, {baseline_line()}")
    return 0


LOAD_FACTORS = (1, 2, 4)
"""``--load-sweep``: each scale case at its own decision rate, and at a half and a quarter."""


def at_load(case: ScaleCase, factor: int) -> ScaleCase:
    """``case`` with its decisions per second divided by ``factor`` and nothing else that
    the reachable ideal measures changed: 256 matches in one process think ``factor``
    times longer (still 256 at once); more matches than slots keep their think time and
    their number of waves, on ``factor`` times fewer slots and matches (each match as
    long as before)."""
    if factor == 1:
        return case
    if case.count <= case.slots:
        return dataclasses.replace(case, think_s=case.think_s * factor)
    return dataclasses.replace(case, count=case.count // factor, slots=case.slots // factor)


def scale_sweep(rounds: int) -> int:
    """(``--scale-only --load-sweep``) Each scale case at 1, 1/2 and 1/4 of its decision
    rate (:func:`at_load`): how much of the reachable ideal is lost to the machine's
    load (the CPU cores the referee, Redis and the bots use) rather than to anything a
    match costs whatever the load."""
    got: dict[tuple[str, int], list[ScaleResult]] = {}
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(tmp) as server:
        conn = redis.Redis.from_url(server.url, decode_responses=True)
        for round_no in range(rounds):
            for case_no, case in enumerate(SCALE_CASES):
                for factor in LOAD_FACTORS:
                    load = os.getloadavg()[0]
                    result = scale_run(
                        conn, server, at_load(case, factor), f"s{round_no}c{case_no}f{factor}"
                    )
                    got.setdefault((case.label, factor), []).append(result)
                    print(
                        f"round {round_no}: {case.label} at 1/{factor} of its rate: "
                        f"{result.rate / result.reachable:.1%} of the reachable ideal, "
                        f"{cores_used(result):.2f} cores, load {load:.1f}",
                        file=sys.stderr,
                        flush=True,
                    )
        conn.close()
    print(
        "| case | rate | % of the reachable ideal | decisions/s | CPU cores used (referee, "
        "Redis, bots) | delay p50 / p99 ms | a slot's gap between matches p50 / p90 ms |"
    )
    print("|---|---|---|---|---|---|---|")
    for case in SCALE_CASES:
        for factor in LOAD_FACTORS:
            runs = got[(case.label, factor)]
            shape = at_load(case, factor)
            setup = f"{shape.count} on {shape.slots} slots, think {shape.think_s * 1000:.0f} ms"
            gaps = (
                "-"
                if shape.count <= shape.slots
                else f"{_median(runs, lambda r: r.handoff_ms[0]):.0f} / "
                f"{_median(runs, lambda r: r.handoff_ms[1]):.0f}"
            )
            print(
                f"| {case.label} | 1/{factor}: {setup} "
                f"| {_median(runs, lambda r: 100 * r.rate / r.reachable):.1f} "
                f"| {_median(runs, lambda r: r.rate):,.0f} "
                f"| {_median(runs, cores_used):.2f} "
                f"| {_median(runs, lambda r: r.delay_p50):.1f} / "
                f"{_median(runs, lambda r: r.delay_p99):.0f} | {gaps} |"
            )
    print(f"({rounds} round(s), medians; {time.strftime('%H:%M:%S', time.gmtime())} UTC)")
    return 0


def cores_used(result: ScaleResult) -> float:
    """The CPU cores the run kept busy: its CPU per decision (every process counted, the
    bench's own polling too) times its decisions per second."""
    return sum(result.cpu_ms.values()) * result.rate / 1000.0


def cores_needed(result: ScaleResult, target: float) -> float:
    """The CPU cores a run at ``target`` of its reachable ideal would keep busy at the CPU
    per decision this run measured (every process counted): above the machine's cores, the
    target is out of reach unless the CPU per decision falls."""
    return sum(result.cpu_ms.values()) * target * result.reachable / 1000.0


def _median(runs: list[ScaleResult], of: Callable[[ScaleResult], float]) -> float:
    return statistics.median(of(r) for r in runs)


if __name__ == "__main__":
    sys.exit(main())
