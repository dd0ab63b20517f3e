"""The League API servicer: bot registry (admin) and the spectator feed.

Season and match methods come from ``referee.gateway.seasons_api.SeasonsServicerMixin`` (it
relies on ``self.redis`` and ``self.require_admin``, which :class:`LeagueCore` provides).
Build the servicer with :func:`make_league_servicer`.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeAlias, TypeVar

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis
import redis.asyncio

from arena.v1 import league_pb2
from referee import bots, keys
from referee.aio import raise_if_cancelling
from referee.errors import ArenaError, AuthError
from referee.gateway import status
from referee.gateway.auth import bearer_token
from referee.gateway.seasons_api import SeasonsServicerMixin

log = logging.getLogger(__name__)

LIST_PAGE_MAX = 200
"""Bots per ``ListBots`` page at most (its ``page_size`` default)."""
LIST_PAGE_BYTES = 48 * 1024
"""A ``ListBots`` page ends before this many bytes: every answer fits the gateway's
message cap (``server.MAX_MESSAGE_BYTES``), however many bots are registered."""
LIST_TEXT_MAX = 1000
"""Owner and description are cut to this many characters in a listing."""

Context: TypeAlias = Any  # grpc.aio.ServicerContext (grpcio ships no type stubs)
T = TypeVar("T")


class LeagueCore:
    """Registry methods, the event feed, and what the seasons mixin needs."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        redis_url: str,
        admin_token: str | None,
        pubsub_client: redis.asyncio.Redis | None = None,
    ):
        self.redis = client
        # Each WatchEvents call holds a connection while it waits: not from the shared pool.
        self._pubsub_redis = pubsub_client or client
        self._sync = redis.Redis.from_url(redis_url, decode_responses=True)
        self._admin_token = admin_token or None

    def close(self) -> None:
        self._sync.close()

    async def require_admin(self, context: Context) -> None:
        """Abort with UNAUTHENTICATED (no token) or PERMISSION_DENIED (not the admin's)."""
        try:
            token = bearer_token(context.invocation_metadata())
        except AuthError as exc:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, f"admin call: {exc} (the admin token)"
            )
            raise
        if self._admin_token is None:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                "admin calls are disabled: the referee was started without an admin token "
                "($ARENA_ADMIN_TOKEN or --admin-token-file)",
            )
        if not hmac.compare_digest(token.encode(), self._admin_token.encode()):  # type: ignore[union-attr]
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                "this call needs the admin token ($ARENA_ADMIN_TOKEN of the referee); a bot token "
                "or another token was sent",
            )

    async def _call(self, context: Context, fn: Callable[[], T]) -> T:
        """Run a blocking registry function in a thread; map its errors to a status."""
        try:
            return await asyncio.to_thread(fn)
        except ArenaError as exc:
            await status.abort(context, exc)

    async def RegisterBot(
        self, request: league_pb2.RegisterBotRequest, context: Context
    ) -> league_pb2.RegisterBotResponse:
        await self.require_admin(context)
        token = await self._call(
            context,
            lambda: bots.register(self._sync, request.name, request.owner, request.description),
        )
        return league_pb2.RegisterBotResponse(name=request.name, token=token)

    async def ListBots(
        self, request: league_pb2.ListBotsRequest, context: Context
    ) -> league_pb2.ListBotsResponse:
        size = min(request.page_size or LIST_PAGE_MAX, LIST_PAGE_MAX)
        records = await self._call(
            context, lambda: bots.list_bots(self._sync, request.page_token, size + 1)
        )
        answer = league_pb2.ListBotsResponse()
        used = 0
        for r in records[:size]:
            info = league_pb2.BotInfo(
                name=r.name,
                owner=r.owner[:LIST_TEXT_MAX],
                description=r.description[:LIST_TEXT_MAX],
                revoked=r.revoked,
                connected_streams=r.connected_streams,
                created_at=r.created_at,
            )
            used += info.ByteSize() + 8
            if used > LIST_PAGE_BYTES and answer.bots:
                break
            answer.bots.append(info)
        if len(answer.bots) < len(records):
            answer.next_page_token = answer.bots[-1].name
        return answer

    async def RevokeBot(
        self, request: league_pb2.RevokeBotRequest, context: Context
    ) -> league_pb2.RevokeBotResponse:
        await self.require_admin(context)
        await self._call(context, lambda: bots.revoke(self._sync, request.name))
        return league_pb2.RevokeBotResponse(name=request.name, revoked=True)

    async def RotateToken(
        self, request: league_pb2.RotateTokenRequest, context: Context
    ) -> league_pb2.RegisterBotResponse:
        await self.require_admin(context)
        token = await self._call(context, lambda: bots.rotate_token(self._sync, request.name))
        return league_pb2.RegisterBotResponse(name=request.name, token=token)

    async def WatchEvents(
        self, request: league_pb2.WatchEventsRequest, context: Context
    ) -> AsyncIterator[league_pb2.LeagueEvent]:
        """League events from the pub/sub channel, live only (pub/sub delivers at most once)."""
        pubsub = self._pubsub_redis.pubsub(ignore_subscribe_messages=True)
        await pubsub.subscribe(keys.EVENTS_CHANNEL)
        raise_if_cancelling()
        try:
            while True:
                message = await pubsub.get_message(timeout=1.0)
                raise_if_cancelling()
                if message is None:
                    continue
                event = _event(message.get("data"))
                if event is None:
                    continue
                if request.season and event.season != request.season:
                    continue
                yield event
        finally:
            with _quiet():
                await pubsub.unsubscribe(keys.EVENTS_CHANNEL)
            with _quiet():
                await pubsub.aclose()  # type: ignore[no-untyped-call]


class _quiet:
    """Suppress errors of best-effort cleanup (but never CancelledError)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool:
        return exc_type is not None and issubclass(exc_type, Exception)


def _event(data: Any) -> Any:
    if isinstance(data, bytes):
        data = data.decode()
    try:
        payload = json.loads(data)
        return league_pb2.LeagueEvent(
            kind=str(payload.get("kind", "")),
            season=str(payload.get("season", "")),
            match_id=str(payload.get("match_id", "")),
            data_json=json.dumps(payload.get("data", {}), sort_keys=True),
            at_ms=int(payload.get("at_ms", 0)),
        )
    except (ValueError, TypeError, AttributeError):
        log.warning("ignored a malformed league event: %r", str(data)[:120])
        return None


class LeagueServicer(SeasonsServicerMixin, LeagueCore):
    """The whole League service: registry and feed (:class:`LeagueCore`), seasons and matches."""


def make_league_servicer(
    client: redis.asyncio.Redis,
    redis_url: str,
    admin_token: str | None,
    pubsub_client: redis.asyncio.Redis | None = None,
) -> LeagueCore:
    """The League servicer for one referee process."""
    return LeagueServicer(client, redis_url, admin_token, pubsub_client)
