"""The reconnect advice of docs/PROTOCOL.md section 8 in the SDK.

A message over the 64 KiB limit ends the stream RESOURCE_EXHAUSTED and would fail again
after every reconnect: the SDK classifies that status as fatal (``BotRefused``), and never
sends such a message itself (an over-long action from ``choose`` is replaced by the first
legal action, so the same turn is not re-sent and re-failed in a loop)."""

from __future__ import annotations

import asyncio
import threading

import grpc  # type: ignore[import-untyped]
import redis

from arena.v1 import internal_pb2
from sample_bots.sdk import Bot, Turn, is_fatal
from tests.gateway.helpers import (
    FakeHost,
    action,
    hello,
    register,
    running_referee,
    turn_message,
)
from tests.gateway.test_protocol import _status_of


class HugeAnswerBot(Bot):
    name = "huge"

    def __init__(self) -> None:
        self.calls = 0

    def choose(self, turn: Turn) -> str:
        self.calls += 1
        return "7D" * 50_000  # 100 KB: over the message limit


def test_an_over_long_action_is_replaced_not_sent_again_and_again(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    token = register(client, "huge")
    bot = HugeAnswerBot()

    async def scenario() -> list[internal_pb2.Reply]:
        async with running_referee(redis_url) as referee:
            stop = threading.Event()
            thread = threading.Thread(
                target=bot.run, args=(f"127.0.0.1:{referee.port}", token), kwargs={"stop": stop}
            )
            thread.start()
            host = FakeHost(redis_url)
            turn = turn_message("huge", "m-huge", 1)
            replies = [await host.ask(turn, timeout=20, route_s=20)]
            await asyncio.sleep(0.3)  # a second answer would be told DUPLICATE, not sent
            stop.set()
            thread.join(10)
            await host.close()
            return replies

    try:
        replies = asyncio.run(scenario())
    finally:
        client.close()
    answers = [r for r in replies if r.kind == internal_pb2.Reply.ANSWER]
    assert len(answers) == 1 and bot.calls == 1, replies
    assert answers[0].action == turn_message("huge", "m-huge", 1)["legal_actions"][0]


def test_the_referees_too_large_status_is_fatal_and_too_many_streams_is_not(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> tuple[grpc.StatusCode, str]:
        async with running_referee(redis_url) as ref:
            huge = action("m", 1, "7D" * 50_000)
            return await _status_of(ref.port, token, hello(), huge, options=[])

    code, details = asyncio.run(scenario())
    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert is_fatal(code, details), details
    exhausted = grpc.StatusCode.RESOURCE_EXHAUSTED
    assert not is_fatal(exhausted, "bot 'a' already has 4 open stream(s)")  # clears by itself
    assert is_fatal(grpc.StatusCode.UNAUTHENTICATED, "")
    assert not is_fatal(grpc.StatusCode.UNAVAILABLE, "the referee is shutting down")
