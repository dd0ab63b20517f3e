"""Status codes of the bot stream (docs/PROTOCOL.md section 5): auth, order, version, size,
limits."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis

from arena.v1 import bot_pb2
from referee import bots, keys
from tests.gateway.helpers import RawBot, action, hello, register, running_referee


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


async def _status_of(
    port: int, token: str | None, *messages: Any, options: Any = None
) -> tuple[Any, str]:
    # Auth is refused before any message is read: send nothing then, since a write that
    # races the refusal makes the client report its own INTERNAL error instead.
    bot = RawBot(port, token, options=options)
    try:
        for message in messages:
            try:
                await bot.send(message)
            except grpc.aio.AioRpcError:
                break  # the referee already ended the stream: its status is what counts
        code = await bot.status()
        details: str = await bot.call.details()
        return code, details
    finally:
        await bot.close()


def test_missing_wrong_and_revoked_tokens(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    other = register(redis_client, "carol")
    bots.revoke(redis_client, "carol")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            code, details = await _status_of(ref.port, None)
            assert code == grpc.StatusCode.UNAUTHENTICATED
            assert "authorization" in details
            code, details = await _status_of(ref.port, "arena_not-a-token")
            assert code == grpc.StatusCode.UNAUTHENTICATED
            assert "unknown or revoked" in details
            code, _ = await _status_of(ref.port, other)
            assert code == grpc.StatusCode.UNAUTHENTICATED
            bot = RawBot(ref.port, token)
            welcome = await bot.connect()
            assert welcome.bot == "alice" and welcome.protocol_version == 1
            await bot.close()

    _run(scenario())


def test_rotated_token_replaces_the_old_one(redis_url: str, redis_client: redis.Redis) -> None:
    old = register(redis_client, "alice")
    new = bots.rotate_token(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            code, _ = await _status_of(ref.port, old)
            assert code == grpc.StatusCode.UNAUTHENTICATED
            bot = RawBot(ref.port, new)
            assert (await bot.connect()).bot == "alice"
            await bot.close()

    _run(scenario())


def test_wrong_protocol_version_and_order(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            code, details = await _status_of(ref.port, token, hello(version=2))
            assert code == grpc.StatusCode.FAILED_PRECONDITION
            assert "protocol_version 2" in details and "speaks protocol_version 1" in details
            code, details = await _status_of(ref.port, token, action("m", 1, "7D"))
            assert code == grpc.StatusCode.FAILED_PRECONDITION
            assert "first message must be Hello" in details
            code, details = await _status_of(ref.port, token, hello(), hello())
            assert code == grpc.StatusCode.FAILED_PRECONDITION
            assert "once" in details

    _run(scenario())


def test_malformed_messages(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            code, details = await _status_of(ref.port, token, hello(), bot_pb2.BotMessage())
            assert code == grpc.StatusCode.INVALID_ARGUMENT and "empty BotMessage" in details
            code, details = await _status_of(ref.port, token, hello(), action("", 1, "7D"))
            assert code == grpc.StatusCode.INVALID_ARGUMENT and "match_id" in details
            # Bytes that are not a BotMessage at all.
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{ref.port}")
            call = channel.stream_stream(
                "/arena.v1.BotGateway/Play",
                request_serializer=lambda b: b,
                response_deserializer=bot_pb2.RefereeMessage.FromString,
            )(metadata=(("authorization", f"Bearer {token}"),))
            await call.write(b"\xff\xff\xff\xff")
            await call.done_writing()
            try:
                async for _ in call:
                    pass
            except grpc.aio.AioRpcError as exc:
                assert exc.code() == grpc.StatusCode.INVALID_ARGUMENT
                assert "not an arena.v1.BotMessage" in (exc.details() or "")
            else:
                raise AssertionError("a garbage message was accepted")
            finally:
                await channel.close()

    _run(scenario())


def test_oversized_message_is_refused(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            huge = action("m", 1, "7D" * 50_000)  # 100 KB > the 64 KiB limit
            code, _ = await _status_of(ref.port, token, hello(), huge, options=[])
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
            long_action = action("m", 1, "7D+" * 100)  # fits the limit but no action is this long
            code, details = await _status_of(ref.port, token, hello(), long_action)
            assert code == grpc.StatusCode.INVALID_ARGUMENT and "at most" in details

    _run(scenario())


def test_stream_limits_per_bot(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url, max_streams_per_bot=2) as ref:
            first, second = RawBot(ref.port, token), RawBot(ref.port, token)
            await first.connect()
            await second.connect()
            assert redis_client.hlen(keys.bot_streams("alice")) == 2
            code, details = await _status_of(ref.port, token, hello())
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED and "2 open stream" in details
            await first.close()
            await second.close()
            await ref.hub.wait_closed(5.0)
            assert redis_client.hlen(keys.bot_streams("alice")) == 0
        async with running_referee(redis_url, max_streams_per_bot=1) as ref:
            only = RawBot(ref.port, token)
            await only.connect()
            code, _ = await _status_of(ref.port, token, hello())
            assert code == grpc.StatusCode.ALREADY_EXISTS
            await only.close()

    _run(scenario())


def test_concurrency_is_capped_and_ping_answered(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url, max_concurrency=8) as ref:
            bot = RawBot(ref.port, token)
            welcome = await bot.connect(concurrency=1000)
            assert welcome.max_concurrent_matches == 8
            assert welcome.keepalive_time_ms == 5_000  # what clients should use
            await bot.send(bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=42)))
            pong = await bot.read_kind("pong")
            assert pong.nonce == 42
            await bot.close()

    _run(scenario())


def test_revoking_a_connected_bot_ends_its_stream(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url, housekeeping_s=0.1) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()
            bots.revoke(redis_client, "alice")
            assert await bot.status() == grpc.StatusCode.UNAUTHENTICATED
            assert "revoked" in await bot.call.details()
            await bot.close()

    _run(scenario())


def test_every_error_maps_to_its_status() -> None:
    from redis.exceptions import ConnectionError as RedisConnectionError

    from referee.errors import AuthError, ConfigError, ConflictError, NotFoundError
    from referee.gateway import errors, status

    expected = {
        errors.ActingForAnotherBot("x"): grpc.StatusCode.PERMISSION_DENIED,
        AuthError("x"): grpc.StatusCode.UNAUTHENTICATED,
        errors.MalformedMessage("x"): grpc.StatusCode.INVALID_ARGUMENT,
        ConfigError("x"): grpc.StatusCode.INVALID_ARGUMENT,
        errors.ProtocolError("x"): grpc.StatusCode.FAILED_PRECONDITION,
        errors.TooManyStreams("x", limit=4): grpc.StatusCode.RESOURCE_EXHAUSTED,
        errors.TooManyStreams("x", limit=1): grpc.StatusCode.ALREADY_EXISTS,
        errors.Draining("x"): grpc.StatusCode.UNAVAILABLE,
        RedisConnectionError("x"): grpc.StatusCode.UNAVAILABLE,
        NotFoundError("x"): grpc.StatusCode.NOT_FOUND,
        ConflictError("x"): grpc.StatusCode.ALREADY_EXISTS,
        RuntimeError("x"): grpc.StatusCode.INTERNAL,
    }
    for exc, code in expected.items():
        assert status.status_of(exc) == code, exc


def test_a_silent_stream_is_closed_after_the_hello_deadline(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url, hello_timeout_s=0.3) as ref:
            code, details = await _status_of(ref.port, token)  # connects, says nothing
            assert code == grpc.StatusCode.FAILED_PRECONDITION
            assert "no Hello within 0.3 s" in details

    _run(scenario())


def test_records_of_dead_referees_are_swept(redis_url: str, redis_client: redis.Redis) -> None:
    """A referee killed without cleanup leaves stream records; they stop counting and go."""
    import json

    token = register(redis_client, "alice")
    register(redis_client, "bob")
    stale = json.dumps({"referee": "dead", "seen_ms": 1.0, "games": []})
    redis_client.hset(keys.bot_streams("alice"), mapping={"dead:1": stale, "dead:2": stale})
    redis_client.hset(keys.bot_streams("bob"), "dead:3", "not json")

    async def scenario() -> None:
        async with running_referee(redis_url, max_streams_per_bot=1) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()  # the dead records do not count against the limit
            assert await ref.hub.sweep() == 1  # bob's; alice's went when she registered
            alice_streams = [str(k) for k in redis_client.hkeys(keys.bot_streams("alice"))]
            assert len(alice_streams) == 1 and not alice_streams[0].startswith("dead:")
            assert redis_client.hlen(keys.bot_streams("bob")) == 0
            await bot.close()

    _run(scenario())
