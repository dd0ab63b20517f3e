"""Pages for the league's operators only: ``GET /admin/collusion/{season}``.

An operator sends the referee's admin token as ``Authorization: Bearer TOKEN`` (the League
API's admin credential; e.g. ``curl -H "Authorization: Bearer $(cat admin.token)"``). The
pages see every hand (docs/SECURITY.md, "Fair play"), so nothing here is shown to anyone
else: no token is 401, a wrong one 403, and a referee started without an admin token
serves no admin page at all.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import TYPE_CHECKING

import redis
from aiohttp import web

from referee.errors import NotFoundError
from referee.web import league
from referee.web.responses import error

if TYPE_CHECKING:
    from referee.web.app import ArenaWeb


class AdminRoutes:
    def __init__(self, arena: ArenaWeb) -> None:
        self.arena = arena

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/admin/collusion/{season}", self.collusion)

    def _refused(self, request: web.Request) -> web.Response | None:
        token = self.arena.config.admin_token
        if not token:
            return error(
                403,
                "admin pages are off: the referee was started without an admin token "
                "($ARENA_ADMIN_TOKEN or --admin-token-file)",
            )
        given = request.headers.get("Authorization", "")
        scheme, _, value = given.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            response = error(
                401, "an admin page: send the admin token as 'Authorization: Bearer TOKEN'"
            )
            response.headers["WWW-Authenticate"] = 'Bearer realm="arena-admin"'
            return response
        if not hmac.compare_digest(value.strip().encode(), token.encode()):
            return error(403, "that is not the referee's admin token")
        return None

    async def collusion(self, request: web.Request) -> web.Response:
        refused = self._refused(request)
        if refused is not None:
            return refused
        season = request.match_info["season"]
        if not league.ID_PATTERN.match(season):
            return error(400, f"season id {season!r} is not valid: letters, digits, ._:@+-")
        from referee.seasons.collusion import season_collusion

        def build() -> object:
            with redis.Redis.from_url(
                self.arena.config.redis_url, decode_responses=True, socket_timeout=30
            ) as conn:
                return season_collusion(conn, season)

        try:
            report = await asyncio.to_thread(build)
        except NotFoundError as exc:
            return error(404, str(exc))
        return self.arena.html("admin_collusion.html", season=season, report=report)
