"""A stolen token dies with its rotation or revocation, at once.

Real referee (in-process, real gRPC on loopback, the session's real Redis). Its periodic
housekeeping is set to 10 minutes, so only the pushed token change can end the streams in
this test; the streams must end well within that.
"""

from __future__ import annotations

import asyncio
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis

from arena.v1 import bot_pb2
from referee import bots
from tests.gateway.helpers import RawBot, register, running_referee

NO_POLL = {"housekeeping_s": 600.0}
"""The relay's own revocation poll never runs during these tests."""


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_rotation_ends_the_owners_and_the_thiefs_streams(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "victim")
    register(redis_client, "bystander")

    async def scenario() -> None:
        async with running_referee(redis_url, **NO_POLL) as ref:
            owner = RawBot(ref.port, token)
            thief = RawBot(ref.port, token)  # the same token, copied
            other = RawBot(ref.port, bots.rotate_token(redis_client, "bystander"))
            for bot in (owner, thief, other):
                await bot.connect()
            await asyncio.sleep(0.3)  # the rotation of "bystander" above is old news now
            new_token = bots.rotate_token(redis_client, "victim")
            for bot in (owner, thief):
                assert await bot.status(timeout=20) == grpc.StatusCode.UNAUTHENTICATED
                assert "revoked or rotated" in await bot.call.details()
            # the owner is back with the new token; the thief's copy is refused
            fresh = RawBot(ref.port, new_token)
            await fresh.connect()
            again = RawBot(ref.port, token)
            assert await again.status() == grpc.StatusCode.UNAUTHENTICATED
            # another bot's stream was not touched
            await other.send(bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=7)))
            assert (await other.read_kind("pong")).nonce == 7
            for bot in (owner, thief, other, fresh, again):
                await bot.close()

    _run(scenario())


def test_revoke_then_rotate_within_a_second_ends_the_thief(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "victim2")

    async def scenario() -> None:
        async with running_referee(redis_url, **NO_POLL) as ref:
            thief = RawBot(ref.port, token)
            await thief.connect()
            bots.revoke(redis_client, "victim2")
            new_token = bots.rotate_token(redis_client, "victim2")
            assert await thief.status(timeout=20) == grpc.StatusCode.UNAUTHENTICATED
            owner = RawBot(ref.port, new_token)
            await owner.connect()
            await thief.close()
            await owner.close()

    _run(scenario())
