"""Bearer-token authentication of bot streams, in a server interceptor.

Every ``BotGateway`` call must carry ``authorization: Bearer <token>``. The interceptor
looks the token's hash up in Redis (:func:`referee.bots.authenticate_async`); on success
the handler runs with :data:`CURRENT_BOT` set to the bot's name, otherwise the call ends
with UNAUTHENTICATED before the handler sees a message. League calls pass through: their
admin check is :meth:`referee.gateway.league.LeagueCore.require_admin`.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis.asyncio
from redis.exceptions import RedisError

from referee import bots
from referee.errors import AuthError
from referee.gateway import status

log = logging.getLogger(__name__)

CURRENT_BOT: contextvars.ContextVar[str] = contextvars.ContextVar("arena_current_bot")
"""The authenticated bot of the call being handled (set by :class:`BotAuthInterceptor`)."""

BOT_SERVICE_PREFIX = "/arena.v1.BotGateway/"


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
    def __init__(self, client: redis.asyncio.Redis) -> None:
        self._redis = client

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

        async def authenticated(request_iterator: Any, context: Any) -> Any:
            CURRENT_BOT.set(name)
            return await inner(request_iterator, context)

        return grpc.stream_stream_rpc_method_handler(
            authenticated,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )
