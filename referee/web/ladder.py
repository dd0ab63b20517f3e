"""The continuous ladder's pages: ``GET /ladder/{id}`` (standings that update live: the
page polls ``GET /api/ladder/{id}`` every two seconds) and ``GET /api/ladder/{id}``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import redis
from aiohttp import web

from referee.errors import NotFoundError
from referee.ladder import store as ladders
from referee.web import league
from referee.web.responses import error, json_response

if TYPE_CHECKING:
    from referee.web.app import ArenaWeb


class LadderRoutes:
    def __init__(self, arena: ArenaWeb) -> None:
        self.arena = arena

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/ladder/{ladder}", self.page)
        router.add_get("/api/ladder/{ladder}", self.api)

    async def _load(self, request: web.Request) -> dict[str, Any] | web.Response:
        ladder = request.match_info["ladder"]
        if not league.ID_PATTERN.match(ladder):
            return error(400, f"ladder id {ladder!r} is not valid: letters, digits, ._:@+-")

        def build() -> dict[str, Any]:
            with redis.Redis.from_url(
                self.arena.config.redis_url, decode_responses=True, socket_timeout=30
            ) as conn:
                return ladders.standings(conn, ladder)

        try:
            return await asyncio.to_thread(build)
        except NotFoundError as exc:
            return error(404, str(exc))

    async def api(self, request: web.Request) -> web.Response:
        table = await self._load(request)
        return table if isinstance(table, web.Response) else json_response(200, table)

    async def page(self, request: web.Request) -> web.Response:
        table = await self._load(request)
        if isinstance(table, web.Response):
            return table
        return self.arena.html("ladder.html", table=table)
