"""The gateway's answer checks (``BotSession._on_action`` in referee/gateway/relay.py,
docs/gateway.md): what a bot's ``Action`` that answers no open request of its stream is
told, and which actions end the stream. A real referee in-process, raw bot streams, real
Redis; behaviour seen by the bot only (found by ``make mutate``, area gateway-answers)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis

from arena.v1 import bot_pb2
from referee import keys
from tests.gateway.helpers import RawBot, action, register, running_referee

MAX_ACTION_CHARS = 200  # docs/PROTOCOL.md, status codes: an action of more ends the stream


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_stray_answer_in_a_match_the_bot_plays_is_told_stale(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """An answer to no open request, in a match whose spec seats this bot (an answer that
    came too late, or for an older attempt), is told ``STALE`` and the stream lives on; so
    is one for a match whose spec cannot be read. Only a match that does not seat the bot
    is acting for another bot (tests/gateway/test_relay.py)."""
    token = register(redis_client, "alice")
    redis_client.set(
        keys.match_spec("m7"), json.dumps({"match_id": "m7", "seats": ["bob", "alice"]})
    )
    redis_client.set(keys.match_spec("m8"), "[not a spec]")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()
            for match_id, seq in (("m7", 3), ("m8", 4), ("m7", 5)):
                await bot.send(action(match_id, seq, "7C"))
                result = await bot.read_kind("result")
                assert result.status == bot_pb2.ActionResult.STALE
                assert (result.match_id, result.seq, result.reason) == (match_id, seq, "stale")
            await bot.close()

    _run(scenario())


def test_an_action_of_the_longest_length_is_read_and_a_longer_one_ends_the_stream(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Pins the action length limit (docs/PROTOCOL.md): 200 characters is still an action
    (here a stray one, told ``STALE``), 201 ends the stream with INVALID_ARGUMENT and a
    message that says the length and the limit; an empty ``match_id`` ends it too, saying
    to echo the TurnRequest's."""
    token = register(redis_client, "alice")
    redis_client.set(keys.match_spec("m7"), json.dumps({"match_id": "m7", "seats": ["alice"]}))

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()
            await bot.send(action("m7", 1, "x" * MAX_ACTION_CHARS))
            assert (await bot.read_kind("result")).status == bot_pb2.ActionResult.STALE
            await bot.send(action("m7", 2, "x" * (MAX_ACTION_CHARS + 1)))
            assert await bot.status() == grpc.StatusCode.INVALID_ARGUMENT
            assert await bot.call.details() == (
                "Action.action has 201 characters; an action is at most 200 "
                "(a card '7D', a run '8D+9D', 'pass')"
            )
            empty = RawBot(ref.port, token)
            await empty.connect()
            await empty.send(action("", 1, "7C"))
            assert await empty.status() == grpc.StatusCode.INVALID_ARGUMENT
            assert await empty.call.details() == (
                "Action.match_id is empty: echo the TurnRequest's match_id"
            )
            await bot.close()
            await empty.close()

    _run(scenario())
