"""Measure the relay's overhead per decision (not a test; prints a table).

    .venv/bin/python -m tests.gateway.relay_latency [--decisions 2000] [--streams 1 16]

A worker-like loop RPUSHes a turn, BLPOPs the SentStamp and the answer; the bot (a raw
grpc.aio stream, answering at once) is charged ``think_ms``. Overhead = the worker's wall
time for the decision minus ``think_ms``: Redis, the referee and gRPC, everything but the
bot. A Ping/Pong on the same stream is the raw gRPC round trip it is compared with.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import redis.asyncio

from arena.v1 import bot_pb2
from referee import bots, keys, mailbox
from referee.embedded_redis import EmbeddedRedis
from tests.gateway.helpers import RawBot, action, turn_message


class _Ref:
    def __init__(self, port: int, pid: int) -> None:
        self.port = port
        self.pid = pid

    def rss_kib(self) -> int:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def cpu_s(self) -> float:
        """User + system CPU seconds the referee process used so far (Linux)."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.asynccontextmanager
async def _referee_process(url: str) -> AsyncIterator[_Ref]:
    """``arena referee`` in its own process (its own core, as in production)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "referee.cli.main", "referee", "--redis-url", url, "--port", "0",
         "--http-port", "0", "--log-level", "WARNING", "--drain-grace", "0"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        yield _Ref(int(line.rsplit(":", 1)[1]), proc.pid)
    finally:
        proc.terminate()
        proc.wait(20)
        if proc.stdout is not None:
            proc.stdout.close()


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def _measure(
    url: str, streams: int, decisions: int
) -> tuple[list[float], list[float], float]:
    import redis as sync_redis

    sync = sync_redis.Redis.from_url(url, decode_responses=True)
    sync.flushall()
    names = [f"bench{i}" for i in range(streams)]
    tokens = {n: bots.register(sync, n) for n in names}
    sync.close()
    overheads: list[float] = []
    pings: list[float] = []
    async with _referee_process(url) as ref:
        worker = redis.asyncio.Redis.from_url(
            url, decode_responses=True, max_connections=4 * streams
        )
        raw_bots = {n: RawBot(ref.port, tokens[n]) for n in names}
        for bot in raw_bots.values():
            await bot.connect(concurrency=1)

        async def serve(name: str) -> None:
            bot = raw_bots[name]
            while True:
                message = await bot.call.read()
                if message is None or message.WhichOneof("msg") != "turn":
                    return
                turn = message.turn
                await bot.send(action(turn.match_id, turn.seq, turn.legal_actions[0]))

        async def drive(name: str) -> None:
            per_stream = decisions // streams
            for seq in range(per_stream):
                turn = turn_message(name, f"bench-{name}", seq)
                start = mailbox.now_ms()
                await worker.rpush(keys.inbox(name), mailbox.encode(turn))
                await worker.blpop([turn["reply_key"]], timeout=10)
                item = await worker.blpop([turn["reply_key"]], timeout=10)
                end = mailbox.now_ms()
                assert item is not None, "no answer within 10 s"
                answer = mailbox.decode_reply(item[1])
                assert answer["type"] == "answer"
                overheads.append(end - start - answer["think_ms"])
                await worker.delete(turn["reply_key"])

        servers = [asyncio.ensure_future(serve(n)) for n in names]
        cpu0 = ref.cpu_s()
        await asyncio.gather(*(drive(n) for n in names))
        cpu_ms = (ref.cpu_s() - cpu0) * 1000.0 / len(overheads)
        for server in servers:
            server.cancel()
        probe = await _fresh_probe(ref.port, tokens[names[0]], raw_bots[names[0]])
        for nonce in range(300):
            t0 = time.perf_counter()
            await probe.send(bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=nonce)))
            await probe.read_kind("pong")
            pings.append((time.perf_counter() - t0) * 1000.0)
        for bot in raw_bots.values():
            await bot.close()
        await worker.aclose()
    return overheads, pings, cpu_ms


async def _fresh_probe(port: int, token: str, old: RawBot) -> RawBot:
    await old.close()
    probe = RawBot(port, token)
    await probe.connect(concurrency=1)
    return probe


async def _idle(url: str, count: int) -> tuple[float, float]:
    """Referee memory per connected idle bot (KiB) and its idle CPU (% of a core)."""
    import redis as sync_redis

    sync = sync_redis.Redis.from_url(url, decode_responses=True)
    sync.flushall()
    tokens = [bots.register(sync, f"idle{i}") for i in range(count)]
    sync.close()
    async with _referee_process(url) as ref:
        await asyncio.sleep(1.0)
        before = ref.rss_kib()
        streams = [RawBot(ref.port, token) for token in tokens]
        for start in range(0, count, 50):
            await asyncio.gather(*(s.connect() for s in streams[start : start + 50]))
        await asyncio.sleep(2.0)
        after = ref.rss_kib()
        cpu0, t0 = ref.cpu_s(), time.perf_counter()
        await asyncio.sleep(5.0)
        idle_cpu = (ref.cpu_s() - cpu0) / (time.perf_counter() - t0) * 100.0
        for stream in streams:
            await stream.close()
    return (after - before) / count, idle_cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--decisions", type=int, default=2000)
    parser.add_argument("--streams", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--idle", type=int, default=0, help="also measure N idle bot streams")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, EmbeddedRedis(Path(folder)) as server:
        print(
            "| streams | decisions | overhead p50 ms | p99 ms | gRPC ping p50 ms | p50 ratio "
            "| referee CPU ms/decision | decisions/s |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for streams in args.streams:
            t0 = time.perf_counter()
            overheads, pings, cpu_ms = asyncio.run(_measure(server.url, streams, args.decisions))
            wall = time.perf_counter() - t0
            ping = statistics.median(pings)
            p50 = statistics.median(overheads)
            print(
                f"| {streams} | {len(overheads)} | {p50:.3f} | {_pct(overheads, 0.99):.3f} | "
                f"{ping:.3f} | {p50 / ping:.1f}x | {cpu_ms:.2f} | {len(overheads) / wall:.0f} |"
            )
        if args.idle:
            per_bot, idle_cpu = asyncio.run(_idle(server.url, args.idle))
            print(
                f"\n{args.idle} idle bot streams: {per_bot:.0f} KiB of referee memory per bot, "
                f"referee idle CPU {idle_cpu:.1f}% of a core"
            )


if __name__ == "__main__":
    main()
