"""A worker-like push reaches an SDK bot and its answer lands on the reply list."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import redis

from referee import mailbox
from referee.procs import arena_command, start_referee, stop_process
from sample_bots.first_legal import FirstLegalBot
from sample_bots.sdk import Turn
from tests.gateway.helpers import push, register, running_referee, turn_message, wait_replies

ROOT = Path(__file__).resolve().parents[2]


class ThreadRecordingBot(FirstLegalBot):
    """First legal action; remembers which thread ``choose`` ran on."""

    def __init__(self, inline: bool) -> None:
        self.choose_inline = inline
        self.threads: list[threading.Thread] = []

    def choose(self, turn: Turn) -> str:
        self.threads.append(threading.current_thread())
        return super().choose(turn)


@pytest.mark.parametrize("inline", [False, True], ids=["thread-pool", "choose-inline"])
def test_sdk_bot_answers_a_pushed_turn(
    redis_url: str, redis_client: redis.Redis, inline: bool
) -> None:
    token = register(redis_client, "alice")
    bot = ThreadRecordingBot(inline)

    async def scenario() -> None:
        async with running_referee(redis_url) as referee:
            stop = asyncio.Event()
            task = asyncio.ensure_future(
                bot.run_async(f"127.0.0.1:{referee.port}", token, stop=stop)
            )
            try:
                turn = turn_message("alice", "m1", 1)
                push(redis_client, turn)
                replies = await wait_replies(referee.redis, turn["reply_key"], 2)
            finally:
                stop.set()
                await asyncio.wait_for(task, 10)
        assert [r["type"] for r in replies] == ["sent", "answer"]
        sent, answer = replies
        assert answer["type"] == "answer" and sent["type"] == "sent"
        assert answer["action"] == turn["legal_actions"][0]
        assert answer["sent_ms"] == sent["sent_ms"]
        assert answer["received_ms"] >= answer["sent_ms"]
        assert answer["think_ms"] == answer["received_ms"] - answer["sent_ms"]

    asyncio.run(scenario())
    # choose_inline runs choose on the stream's own thread; otherwise a pool thread does.
    assert len(bot.threads) == 1
    assert (bot.threads[0] is threading.main_thread()) == inline


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
        push(redis_client, turn)
        reply = redis_client.blpop([turn["reply_key"]], timeout=20)
        assert reply is not None and mailbox.decode_reply(reply[1])["type"] == "sent"
        reply = redis_client.blpop([turn["reply_key"]], timeout=20)
        assert reply is not None
        answer = mailbox.decode_reply(reply[1])
        assert answer["type"] == "answer" and answer["action"] in turn["legal_actions"]
    finally:
        if bot is not None:
            stop_process(bot, 10)
        assert stop_process(referee, 20) == 0
