"""A turn sent on a match host's internal stream reaches an SDK bot; its answer comes back
with the referee's send and receive stamps."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from arena.v1 import internal_pb2
from arena_sdk import sdk
from referee import keys
from referee.procs import arena_command, start_referee, stop_process
from sample_bots.first_legal import FirstLegalBot
from sample_bots.sdk import Turn
from tests.gateway.helpers import FakeHost, register, running_referee, turn_message

ROOT = Path(__file__).resolve().parents[2]


class ThreadRecordingBot(FirstLegalBot):
    """First legal action (after ``delay_s``); remembers which thread ``choose`` ran on."""

    def __init__(self, inline: bool | None, delay_s: float = 0.0) -> None:
        self.choose_inline = inline
        self.delay_s = delay_s
        # a fast choose is never slow, even preempted on a loaded machine; a slow one sleeps
        self.inline_limit_ms = 10_000.0 if not delay_s else delay_s * 1000.0 / 2
        self.threads: list[threading.Thread] = []

    def choose(self, turn: Turn) -> str:
        self.threads.append(threading.current_thread())
        if self.delay_s:
            time.sleep(self.delay_s)
        return super().choose(turn)


PLACEMENTS = {
    # name: (choose_inline, choose's delay, inline decision by decision, of five)
    "thread-pool": (False, 0.0, [False] * 5),
    "choose-inline": (True, 0.0, [True] * 5),
    "auto-fast": (None, 0.0, [False] * sdk.PROBE_DECISIONS + [True] * (5 - sdk.PROBE_DECISIONS)),
    "auto-slow": (None, 0.02, [False] * 5),
}


@pytest.mark.parametrize("placement", sorted(PLACEMENTS))
def test_sdk_bot_answers_pushed_turns(
    redis_url: str, redis_client: redis.Redis, placement: str
) -> None:
    """Where ``choose`` runs: the pool, the stream's own thread, or (the default) the pool
    for the first decisions, timed, then the stream's thread while ``choose`` stays fast."""
    inline, delay_s, expected = PLACEMENTS[placement]
    token = register(redis_client, "alice")
    bot = ThreadRecordingBot(inline, delay_s)

    async def scenario() -> None:
        async with running_referee(redis_url) as referee:
            stop = asyncio.Event()
            task = asyncio.ensure_future(
                bot.run_async(f"127.0.0.1:{referee.port}", token, stop=stop)
            )
            host = FakeHost(redis_url)
            try:
                for seq in range(1, len(expected) + 1):
                    turn = turn_message("alice", "m1", seq)
                    answer = await host.ask(turn, route_s=10)
                    assert answer.kind == internal_pb2.Reply.ANSWER
                    assert answer.action == turn["legal_actions"][0]
                    assert answer.received_ms >= answer.sent_ms > 0
            finally:
                stop.set()
                await asyncio.wait_for(task, 10)
                await host.close()

    asyncio.run(scenario())
    assert [t is threading.main_thread() for t in bot.threads] == expected


def test_cli_referee_and_sample_bot_subprocesses(redis_url: str, redis_client: redis.Redis) -> None:
    """The way the workers and seasons tests start them: `arena referee`, `python -m ...`."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        arena_command("bot", "register", "bob", "--redis-url", redis_url),
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=ROOT,
    )
    token = out.stdout.strip()
    referee_env = {**env, "ARENA_ADMIN_TOKEN": "adm"}
    referee, address = start_referee(redis_url, env=referee_env, cwd=ROOT)
    bot = None
    try:
        bot = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "sample_bots.random_bot",
                "--server",
                address,
                "--seed",
                "3",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env={**env, "ARENA_TOKEN": token},
            cwd=ROOT,
        )
        turn = turn_message("bob", "m2", 7)

        async def ask() -> internal_pb2.Reply:
            host = FakeHost(redis_url)
            try:
                reply: internal_pb2.Reply = await host.ask(turn, timeout=20, route_s=20)
                return reply
            finally:
                await host.close()

        answer = asyncio.run(ask())
        assert answer.kind == internal_pb2.Reply.ANSWER and answer.action in turn["legal_actions"]
    finally:
        if bot is not None:
            stop_process(bot, 10)
        assert stop_process(referee, 20) == 0


@pytest.mark.parametrize("batches", [True, False])
def test_sdk_bot_answers_turns_pushed_together(
    redis_url: str, redis_client: redis.Redis, batches: bool
) -> None:
    """``Bot.batches`` (the default) asks for batches in Hello (the referee's stream record
    shows it): four turns pushed together reach ``choose`` one by one and each answer
    comes back, in the pool and inline; with ``batches = False`` one message each."""
    token = register(redis_client, "alice")
    bot = ThreadRecordingBot(True)
    bot.batches = batches

    async def scenario() -> None:
        async with running_referee(redis_url) as referee:
            stop = asyncio.Event()
            task = asyncio.ensure_future(
                bot.run_async(f"127.0.0.1:{referee.port}", token, stop=stop)
            )
            host = FakeHost(redis_url)
            try:
                await host.ask(turn_message("alice", "m0", 1), route_s=10)  # connected
                records = redis_client.hvals(keys.bot_streams("alice"))
                assert [json.loads(r)["batches"] for r in records] == [batches]
                for inline in (True, False):
                    bot.choose_inline = inline
                    turns = [turn_message("alice", f"m{seq}", seq) for seq in range(1, 5)]
                    pending = await asyncio.gather(*(host.send(t) for t in turns))
                    for turn, future in zip(turns, pending, strict=True):
                        answer = await asyncio.wait_for(future, 10)
                        assert answer.kind == internal_pb2.Reply.ANSWER
                        assert answer.action == turn["legal_actions"][0]
            finally:
                stop.set()
                await asyncio.wait_for(task, 10)
                await host.close()

    asyncio.run(scenario())
    assert len(bot.threads) == 9
