"""The authorization metadata a bot or admin sends: only ``Bearer <token>`` is read."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from dataclasses import dataclass
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from referee import bots
from referee.errors import AuthError
from referee.gateway.auth import (
    BOT_SERVICE_PREFIX,
    CURRENT_BOT,
    BotAuthInterceptor,
    TokenWatch,
    bearer_token,
)


def test_only_the_bearer_scheme_is_accepted() -> None:
    """Pins the scheme check: ``Basic <valid token>`` (or any other scheme, or none) is
    refused with the form that works, not read as a token (a mutation that skipped the
    scheme let ``Basic`` through)."""
    token = "arena_0123456789abcdef"
    assert bearer_token([("authorization", f"Bearer {token}")]) == token
    assert bearer_token([("Authorization", f"bearer  {token} ")]) == token
    assert bearer_token([("authorization", f"Bearer {token}".encode())]) == token
    malformed = "malformed authorization metadata: send 'authorization: Bearer <token>'"
    missing = (
        "missing authorization metadata: send 'authorization: Bearer <token>' with the "
        "token `arena bot register NAME` printed"
    )
    for value in (f"Basic {token}", f"Token {token}", f"{token}", f"Bearer{token}", "Bearer "):
        with pytest.raises(AuthError) as refused:
            bearer_token([("authorization", value)])
        assert str(refused.value) == malformed  # says exactly what to send
    for metadata in ([("x-token", token)], None):
        with pytest.raises(AuthError) as absent:
            bearer_token(metadata)
        assert str(absent.value) == missing


def test_token_watch_ends_exactly_the_streams_whose_token_stopped_working(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """TokenWatch.recheck against a real registry: after a rotation only the streams opened
    with the old token of that bot end; a revoked bot's streams end on a full recheck;
    a stream already ended is not counted twice; a discarded stream is no longer watched."""
    old_a = bots.register(redis_client, "alpha")
    token_b = bots.register(redis_client, "beta")
    token_c = bots.register(redis_client, "gamma")

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        try:
            watch = TokenWatch(client)
            a_old = watch.add("alpha", bots.hash_token(old_a))
            a_old_2 = watch.add("alpha", bots.hash_token(old_a))
            b = watch.add("beta", bots.hash_token(token_b))
            c = watch.add("gamma", bots.hash_token(token_c))
            gone = watch.add("gamma", bots.hash_token(token_c))
            watch.discard(gone)
            assert await watch.recheck() == 0
            new_a = bots.rotate_token(redis_client, "alpha")
            a_new = watch.add("alpha", bots.hash_token(new_a))
            assert await watch.recheck("beta") == 0 and not a_old.ended.is_set()
            assert await watch.recheck("alpha") == 2
            assert a_old.ended.is_set() and a_old_2.ended.is_set()
            assert not a_new.ended.is_set() and not b.ended.is_set()
            assert await watch.recheck("alpha") == 0  # already ended: not counted again
            bots.revoke(redis_client, "gamma")
            assert await watch.recheck() == 1
            assert c.ended.is_set() and not gone.ended.is_set() and not b.ended.is_set()
            assert await watch.recheck("nobody") == 0
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_token_watch_rechecks_on_its_timer_when_no_message_comes(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Pins ``TokenWatch.run``'s periodic recheck, the fallback for a pub/sub message that
    was lost: the token is taken out of the registry with no message published, and the
    stream still ends (a mutation that waits for messages with no timeout never rechecks;
    auth's one non-equivalent survivor, docs/testing.md). The recheck period is shortened
    to 0.2 s; the test waits for the stream's end, bounded only so it cannot hang."""
    from referee import keys

    token = bots.register(redis_client, "alpha")
    digest = bots.hash_token(token)

    async def scenario() -> bool:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        feed = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        watch = TokenWatch(client, recheck_s=0.2)
        watched = watch.add("alpha", digest)
        runner = asyncio.create_task(watch.run(feed))
        try:
            await asyncio.sleep(0.5)  # subscribed, first recheck done: the token is valid
            assert not watched.ended.is_set()
            assert redis_client.hdel(keys.TOKEN_INDEX, digest) == 1  # no message published
            try:
                await asyncio.wait_for(watched.ended.wait(), 20.0)
            except TimeoutError:
                return False
            return True
        finally:
            runner.cancel()
            await asyncio.wait({runner}, timeout=5.0)
            await client.aclose()
            await feed.aclose()

    assert asyncio.run(scenario()), "the lost revocation was never noticed by the recheck"


# --- the interceptor, in memory: fake call details and context, real Redis ---------------


@dataclass
class _Details:
    """A ``grpc.HandlerCallDetails``: the method and the metadata the client sent."""

    method: str
    invocation_metadata: tuple[tuple[str, str], ...] = ()


class _Aborted(Exception):
    pass


class _Context:
    """What ``status.abort`` needs of a ``ServicerContext``: the status, recorded."""

    def __init__(self) -> None:
        self.status: tuple[grpc.StatusCode, str] | None = None

    async def abort(self, code: grpc.StatusCode, details: str) -> None:
        self.status = (code, details)
        raise _Aborted


async def _served_by(handler: Any) -> tuple[grpc.StatusCode, str] | None:
    """Run a stream-stream handler's behaviour; the status it aborted with, if any."""
    context = _Context()
    with contextlib.suppress(_Aborted):
        await handler.stream_stream(iter(()), context)
    return context.status


def test_the_interceptor_checks_bot_calls_only_and_leaves_the_rest_to_grpc(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Calls outside ``arena.v1.BotGateway`` (the League API, its own admin check) go on
    untouched, with their call details, token or not; a bot call with a valid token to a
    method the service does not have (no handler) or one that is not a stream is left to
    gRPC as it is (UNIMPLEMENTED, ...), not wrapped."""
    token = bots.register(redis_client, "alpha")
    league = _Details("/arena.v1.League/Standings")
    unary = grpc.unary_unary_rpc_method_handler(lambda request, context: None)

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        interceptor = BotAuthInterceptor(client, TokenWatch(client))
        seen: list[Any] = []

        async def continuation(details: Any) -> Any:
            seen.append(details)
            return {
                "/arena.v1.League/Standings": "league",
                BOT_SERVICE_PREFIX + "Unary": unary,
            }.get(details.method)

        assert await interceptor.intercept_service(continuation, league) == "league"
        metadata = (("authorization", f"Bearer {token}"),)
        nope = _Details(BOT_SERVICE_PREFIX + "Nope", metadata)
        assert await interceptor.intercept_service(continuation, nope) is None
        call = _Details(BOT_SERVICE_PREFIX + "Unary", metadata)
        assert await interceptor.intercept_service(continuation, call) is unary
        assert seen == [league, nope, call]
        await client.aclose()

    asyncio.run(scenario())


def test_a_bot_call_whose_token_redis_cannot_check_ends_unavailable() -> None:
    """With Redis down the token cannot be checked: the call ends UNAVAILABLE, saying the
    storage is unavailable and to try again (not INTERNAL, not served)."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario() -> None:
        client = redis.asyncio.Redis(
            port=port, socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 0)
        )
        interceptor = BotAuthInterceptor(client, TokenWatch(client))

        async def continuation(details: Any) -> Any:
            raise AssertionError("a call whose token was not checked must not be served")

        call = _Details(BOT_SERVICE_PREFIX + "Play", (("authorization", "Bearer arena_x"),))
        handler = await interceptor.intercept_service(continuation, call)
        code, details = await _served_by(handler) or (None, "")
        assert code == grpc.StatusCode.UNAVAILABLE
        assert details.startswith("the platform's storage is unavailable (")
        assert details.endswith("); try again shortly")
        await client.aclose()

    asyncio.run(scenario())


def test_a_stream_that_ends_is_no_longer_watched_and_leaves_no_task(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """A bot stream served through the interceptor runs with its bot as ``CURRENT_BOT``;
    when it ends, the token watch forgets it (a later rotation ends nothing: no stream is
    left to end) and nothing it started is left pending."""
    token = bots.register(redis_client, "alpha")

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        watch = TokenWatch(client)
        interceptor = BotAuthInterceptor(client, watch)
        served_as: list[str] = []

        async def play(request_iterator: Any, context: Any) -> None:
            served_as.append(CURRENT_BOT.get())

        async def continuation(details: Any) -> Any:
            return grpc.stream_stream_rpc_method_handler(play)

        call = _Details(BOT_SERVICE_PREFIX + "Play", (("authorization", f"Bearer {token}"),))
        handler = await interceptor.intercept_service(continuation, call)
        assert await _served_by(handler) is None and served_as == ["alpha"]
        await asyncio.sleep(0)  # let anything cancelled finish
        assert asyncio.all_tasks() == {asyncio.current_task()}
        bots.rotate_token(redis_client, "alpha")
        assert await watch.recheck() == 0
        await client.aclose()

    asyncio.run(scenario())


class _CountingWatch(TokenWatch):
    """A TokenWatch that records each recheck (the bot it was for, None for all)."""

    def __init__(self, client: redis.asyncio.Redis, recheck_s: float) -> None:
        super().__init__(client, recheck_s)
        self.rechecks: list[str | None] = []

    async def recheck(self, bot: str | None = None) -> int:
        self.rechecks.append(bot)
        return await super().recheck(bot)


class _CountingPubSub(redis.asyncio.client.PubSub):
    """A pub/sub connection that counts the reads of its owner's feed."""

    def __init__(self, feed: _Feed, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.feed = feed

    async def get_message(self, *args: Any, **kwargs: Any) -> Any:
        self.feed.reads += 1
        return await super().get_message(*args, **kwargs)


class _Feed(redis.asyncio.Redis):
    """The token watch's own connection, counting how often the watch reads it."""

    reads = 0
    failed_at = 0.0  # when a read failed (_BrokenPubSub)

    def pubsub(self, **kwargs: Any) -> redis.asyncio.client.PubSub:
        return _CountingPubSub(self, self.connection_pool, **kwargs)


async def _until(condition: Any) -> None:
    """Wait until ``condition()`` (bounded: at most 10 s, then the test's asserts fail)."""
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.05)


def test_token_watch_rechecks_after_subscribing_and_per_message_only(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """``TokenWatch.run`` rechecks every stream once when it has subscribed, then the
    streams of each bot named on ``keys.TOKEN_EVENTS`` as the message comes, and otherwise
    waits for the next message (here the period is 60 s): it neither rechecks nor reads
    its connection in a loop."""
    from referee import keys

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        feed = _Feed.from_url(redis_url, decode_responses=True)
        assert isinstance(feed, _Feed)
        watch = _CountingWatch(client, recheck_s=60.0)
        runner = asyncio.create_task(watch.run(feed))
        try:
            await _until(lambda: watch.rechecks)  # subscribed
            await asyncio.sleep(0.3)
            assert watch.rechecks == [None]
            assert redis_client.publish(keys.TOKEN_EVENTS, "alpha") == 1
            await _until(lambda: len(watch.rechecks) > 1)
            await asyncio.sleep(0.3)
            assert watch.rechecks == [None, "alpha"]
            assert 1 <= feed.reads <= 5  # each read waits for a message (or the period)
        finally:
            runner.cancel()
            await asyncio.wait({runner}, timeout=5.0)
            await client.aclose()
            await feed.aclose()

    asyncio.run(scenario())


def test_token_watch_rechecks_every_period(redis_url: str) -> None:
    """With no message, ``TokenWatch.run`` rechecks every stream once per period: with
    0.1 s, 4 to 17 times in 1.5 s (at most the first and one a period; at least 4 leaves
    room for a loaded machine's late timers, while reads that waited a second each would
    allow only 2)."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        feed = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        watch = _CountingWatch(client, recheck_s=0.1)
        runner = asyncio.create_task(watch.run(feed))
        try:
            await _until(lambda: watch.rechecks)  # subscribed
            await asyncio.sleep(1.5)
            assert 4 <= len(watch.rechecks) <= 17 and set(watch.rechecks) == {None}
        finally:
            runner.cancel()
            await asyncio.wait({runner}, timeout=5.0)
            await client.aclose()
            await feed.aclose()

    asyncio.run(scenario())


class _BrokenPubSub(_CountingPubSub):
    """A pub/sub connection that fails on its first read and again when closed."""

    async def get_message(self, *args: Any, **kwargs: Any) -> Any:
        self.feed.failed_at = asyncio.get_running_loop().time()
        raise redis.exceptions.ConnectionError("connection lost (test)")

    async def aclose(self) -> None:
        await super().aclose()
        raise redis.exceptions.ConnectionError("closing a lost connection failed (test)")


class _FlakyFeed(_Feed):
    """A feed whose first pub/sub connection breaks (then works)."""

    opened = 0

    def pubsub(self, **kwargs: Any) -> redis.asyncio.client.PubSub:
        self.opened += 1
        kind = _BrokenPubSub if self.opened == 1 else _CountingPubSub
        return kind(self, self.connection_pool, **kwargs)


def test_token_watch_follows_again_a_second_after_redis_failed(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """A Redis error while following ``keys.TOKEN_EVENTS`` (here the connection breaks on
    its first read, and closing it fails too) does not end ``TokenWatch.run``: a second
    later it subscribes again, rechecks every stream (a message may have been lost
    meanwhile) and follows the messages again."""
    from referee import keys

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        feed = _FlakyFeed.from_url(redis_url, decode_responses=True)
        assert isinstance(feed, _FlakyFeed)
        watch = _CountingWatch(client, recheck_s=60.0)
        runner = asyncio.create_task(watch.run(feed))
        try:
            await _until(lambda: len(watch.rechecks) > 1)  # subscribed again
            again = asyncio.get_running_loop().time() - feed.failed_at
            assert watch.rechecks == [None, None] and feed.opened == 2
            assert 0.9 <= again < 1.9  # the pause is a second (plus a loaded machine's lag)
            assert redis_client.publish(keys.TOKEN_EVENTS, "alpha") == 1
            await _until(lambda: len(watch.rechecks) > 2)
            assert watch.rechecks == [None, None, "alpha"] and not runner.done()
        finally:
            runner.cancel()
            await asyncio.wait({runner}, timeout=5.0)
            await client.aclose()
            await feed.aclose()

    asyncio.run(scenario())
