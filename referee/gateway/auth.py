"""Bearer-token authentication of bot streams, in a server interceptor.

Every ``BotGateway`` call must carry ``authorization: Bearer <token>``. The interceptor
looks the token's hash up in Redis (:func:`referee.bots.authenticate_async`); on success
the handler runs with :data:`CURRENT_BOT` set to the bot's name, otherwise the call ends
with UNAUTHENTICATED before the handler sees a message. League calls pass through: their
admin check is :meth:`referee.gateway.league.LeagueCore.require_admin`.

A stream stays tied to the token it was opened with: revoking or rotating
a bot's token publishes the bot's name on ``keys.TOKEN_EVENTS`` (:mod:`referee.bots`), and
:class:`TokenWatch` ends at once every stream of that bot whose token no longer
authenticates, with UNAUTHENTICATED (its held requests go back to the inbox as on any
disconnect). Pub/sub is at-most-once (a message published while the watch resubscribes is
lost), so the watch also re-checks every held token after each (re)subscription and every
``TOKEN_RECHECK_S``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis.asyncio
from redis.exceptions import RedisError

from referee import bots, keys
from referee.aio import raise_if_cancelling
from referee.errors import AuthError
from referee.gateway import status

log = logging.getLogger(__name__)

CURRENT_BOT: contextvars.ContextVar[str] = contextvars.ContextVar("arena_current_bot")
"""The authenticated bot of the call being handled (set by :class:`BotAuthInterceptor`)."""

BOT_SERVICE_PREFIX = "/arena.v1.BotGateway/"
TOKEN_RECHECK_S = 5.0
"""How often every held token is checked again, in case a pub/sub message was missed."""


@dataclass(eq=False)
class _Watched:
    bot: str
    digest: str
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class TokenWatch:
    """The streams of this referee by the token they were opened with; ends those whose
    token was revoked or rotated (pushed on ``keys.TOKEN_EVENTS``, re-checked on a timer)."""

    def __init__(self, client: redis.asyncio.Redis, recheck_s: float = TOKEN_RECHECK_S) -> None:
        self._redis = client
        self._recheck_s = recheck_s
        self._streams: set[_Watched] = set()

    def add(self, bot: str, digest: str) -> _Watched:
        watched = _Watched(bot, digest)
        self._streams.add(watched)
        return watched

    def discard(self, watched: _Watched) -> None:
        self._streams.discard(watched)

    async def recheck(self, bot: str | None = None) -> int:
        """End the streams (of ``bot``, or all) whose token no longer authenticates."""
        streams = [w for w in self._streams if bot is None or w.bot == bot]
        if not streams:
            return 0
        digests = sorted({w.digest for w in streams})
        owners = await self._redis.hmget(keys.TOKEN_INDEX, digests)
        valid = {d: o for d, o in zip(digests, owners, strict=True)}
        ended = 0
        for watched in streams:
            if valid.get(watched.digest) != watched.bot and not watched.ended.is_set():
                watched.ended.set()
                ended += 1
        if ended:
            log.info("ended %d stream(s) whose token was revoked or rotated", ended)
        return ended

    async def run(self, client: redis.asyncio.Redis) -> None:
        """Follow ``keys.TOKEN_EVENTS`` on ``client`` (a connection of its own, no socket
        timeout) until cancelled; re-subscribe after Redis errors."""
        while True:
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(keys.TOKEN_EVENTS)
                raise_if_cancelling()
                await self.recheck()  # whatever changed while we were not subscribed
                next_check = asyncio.get_running_loop().time() + self._recheck_s
                while True:
                    timeout = max(0.0, next_check - asyncio.get_running_loop().time())
                    message = await pubsub.get_message(
                        ignore_subscribe_messages=True, timeout=timeout
                    )
                    raise_if_cancelling()
                    if message is not None and message.get("type") == "message":
                        data = message["data"]
                        await self.recheck(data.decode() if isinstance(data, bytes) else data)
                    if asyncio.get_running_loop().time() >= next_check:
                        await self.recheck()
                        next_check = asyncio.get_running_loop().time() + self._recheck_s
            except RedisError as exc:
                raise_if_cancelling()
                log.warning("following token changes failed (%s); subscribing again", exc)
                await asyncio.sleep(1.0)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()


def bearer_token(metadata: Sequence[tuple[str, str | bytes]] | None) -> str:
    """The token of an ``authorization: Bearer <token>`` entry; AuthError when absent."""
    for key, value in metadata or ():
        if key.lower() == "authorization":
            text = value.decode() if isinstance(value, bytes) else value
            scheme, _, token = text.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise AuthError(
                    "malformed authorization metadata: send 'authorization: Bearer <token>'"
                )
            return token.strip()
    raise AuthError(
        "missing authorization metadata: send 'authorization: Bearer <token>' with the "
        "token `arena bot register NAME` printed"
    )


def _abort_handler(exc: BaseException) -> grpc.RpcMethodHandler:
    async def behavior(request_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        await status.abort(context, exc)

    return grpc.stream_stream_rpc_method_handler(behavior)


class BotAuthInterceptor(grpc.aio.ServerInterceptor):  # type: ignore[misc]
    def __init__(self, client: redis.asyncio.Redis, watch: TokenWatch | None = None) -> None:
        self._redis = client
        self.watch = watch if watch is not None else TokenWatch(client)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        method: str = handler_call_details.method
        if not method.startswith(BOT_SERVICE_PREFIX):
            return await continuation(handler_call_details)
        try:
            token = bearer_token(handler_call_details.invocation_metadata)
            name = await bots.authenticate_async(self._redis, token)
        except AuthError as exc:
            log.info("refused bot stream: %s", exc)
            return _abort_handler(exc)
        except RedisError as exc:
            log.warning("could not check a bot token: %s", exc)
            return _abort_handler(exc)
        handler = await continuation(handler_call_details)
        if handler is None or handler.stream_stream is None:
            return handler
        inner = handler.stream_stream
        digest = bots.hash_token(token)
        watch = self.watch

        async def authenticated(request_iterator: Any, context: Any) -> Any:
            CURRENT_BOT.set(name)
            watched = watch.add(name, digest)
            served = asyncio.ensure_future(inner(request_iterator, context))
            ended = asyncio.ensure_future(watched.ended.wait())
            try:
                await asyncio.wait({served, ended}, return_when=asyncio.FIRST_COMPLETED)
                if served.done():
                    return served.result()  # re-raises what ended the stream (an abort, ...)
                # The token was revoked or rotated: stop serving (the session cleans up
                # as on any disconnect, held requests back to the inbox), then say why.
                served.cancel()
                with contextlib.suppress(BaseException):
                    await served
                await status.abort(
                    context,
                    AuthError(
                        f"the token this stream of bot {name!r} was opened with was revoked "
                        "or rotated: connect again with the bot's current token"
                    ),
                )
            finally:
                watch.discard(watched)
                for task in (served, ended):
                    if not task.done():
                        task.cancel()

        return grpc.stream_stream_rpc_method_handler(
            authenticated,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
