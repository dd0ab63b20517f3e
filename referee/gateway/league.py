"""The League API servicer: bot registry (admin), the spectator feed, and (from
``referee.gateway.hosting_api``) hosted bots' code.

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
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis
import redis.asyncio

from arena.v1 import league_pb2
from referee import bots
from referee.errors import ArenaError, AuthError, LimitExceeded
from referee.gateway import status
from referee.gateway.auth import bearer_token
from referee.gateway.feed import EventFeed
from referee.gateway.hosting_api import HostingServicerMixin
from referee.gateway.seasons_api import SeasonsServicerMixin
from referee.limits import Limits, RateLimiter, RenderCache, Slots, client_of_peer

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


ANONYMOUS_READS = (
    "ListBots",
    "ListSeasons",
    "GetSeason",
    "GetStandings",
    "ListMatches",
    "GetMatch",
    "GetReplay",
)
"""The League methods anyone may call; each pays a token of its client's bucket
(``Limits.reads_per_s``), and so does opening a ``WatchEvents`` stream."""


class LeagueCore:
    """Registry methods, the event feed, and what the seasons mixin needs."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        redis_url: str,
        admin_token: str | None,
        pubsub_client: redis.asyncio.Redis | None = None,
        limits: Limits | None = None,
        hosting_dir: Path | None = None,
    ):
        self.redis = client
        self.hosting_dir = hosting_dir
        self.limits = limits or Limits()
        # One subscription for every WatchEvents stream, on a connection of its own.
        self.feed = EventFeed(pubsub_client or client)
        self.watch_slots = Slots(
            self.limits.watch_streams_per_client,
            self.limits.watch_streams,
            "WatchEvents streams",
            ("watch_streams_per_client", "watch_streams"),
        )
        self.reads = RateLimiter(self.limits.reads_per_s, self.limits.reads_burst)
        self.replays = RenderCache(self.limits.replay_cache)
        self._sync = redis.Redis.from_url(redis_url, decode_responses=True)
        self._admin_token = admin_token or None

    def close(self) -> None:
        self._sync.close()

    async def admit(self, context: Context, method: str) -> None:
        """Abort with RESOURCE_EXHAUSTED when the caller is over its read rate."""
        try:
            self.reads.check(client_of_peer(context.peer()), f"League.{method}")
        except LimitExceeded as exc:
            await status.abort(context, exc)

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
        """League events, live only (pub/sub delivers at most once), from the referee's one
        shared subscription (:class:`~referee.gateway.feed.EventFeed`); streams per client
        and in total are capped (``Limits.watch_streams_per_client``, ``watch_streams``)."""
        client = client_of_peer(context.peer())
        try:
            self.reads.check(client, "League.WatchEvents")
            self.watch_slots.acquire(client)
        except LimitExceeded as exc:
            await status.abort(context, exc)
        try:
            async with self.feed.watch() as queue:
                while True:
                    event = _event(await queue.get())
                    if event is None:
                        continue
                    if request.season and event.season != request.season:
                        continue
                    yield event
        finally:
            self.watch_slots.release(client)


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


class LeagueServicer(SeasonsServicerMixin, HostingServicerMixin, LeagueCore):
    """The whole League service: registry and feed (:class:`LeagueCore`), seasons and
    matches, hosted bots' code (``referee.gateway.hosting_api``)."""


def _rate_limited(name: str) -> Any:
    method = getattr(LeagueServicer, name)

    async def admitted(self: LeagueServicer, request: Any, context: Context) -> Any:
        await self.admit(context, name)
        return await method(self, request, context)

    admitted.__doc__ = method.__doc__
    admitted.__name__ = name
    return admitted


for _name in ANONYMOUS_READS:
    setattr(LeagueServicer, _name, _rate_limited(_name))


def make_league_servicer(
    client: redis.asyncio.Redis,
    redis_url: str,
    admin_token: str | None,
    pubsub_client: redis.asyncio.Redis | None = None,
    limits: Limits | None = None,
    hosting_dir: Path | None = None,
) -> LeagueCore:
    """The League servicer for one referee process; ``hosting_dir`` is the data dir that
    keeps hosted bots' code (``None``: no submissions here)."""
    return LeagueServicer(client, redis_url, admin_token, pubsub_client, limits, hosting_dir)
