"""A hosted bot's code on its web page: ``POST /bot/{name}/submit`` (the upload form) and
``POST /bot/{name}/builds`` (its builds with their logs).

The bot's page shows its versions to everyone (number, language, build state, time); the
forms ask for the bot's token (or the admin token), typed into the form: the author holds
it, and no cookie is involved, so another site cannot post in the author's name. Build logs
quote the author's code, so they are shown only in the answer to a form with the token.
The upload is read part by part with its own cap (``ArchiveLimits.archive_bytes``), above
the site's small body limit for every other route.
"""

from __future__ import annotations

import asyncio
import hmac
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from aiohttp import BodyPartReader, web

from referee import bots, keys
from referee.errors import ArenaError
from referee.hosting.archive import ArchiveLimits
from referee.hosting.languages import LANGUAGES
from referee.hosting.versions import VersionInfo, VersionStore
from referee.web import league
from referee.web.responses import error

if TYPE_CHECKING:
    from referee.web.app import ArenaWeb

FIELD_BYTES = 4096
"""The most a text field of the forms (token, language) may hold."""


class HostingRoutes:
    def __init__(self, arena: ArenaWeb) -> None:
        self.arena = arena

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_post("/bot/{name}/submit", self.submit)
        router.add_post("/bot/{name}/builds", self.builds)

    @property
    def enabled(self) -> bool:
        return bool(self.arena.config.hosting_dir)

    def store(self, conn: redis.Redis) -> VersionStore:
        return VersionStore(conn, Path(self.arena.config.hosting_dir))

    async def versions(self, name: str) -> tuple[list[VersionInfo], int | None]:
        """The bot's versions, newest first, and its active one (for the bot's page)."""
        if not self.enabled:
            return [], None
        raw = await self.arena.conn.hgetall(keys.bot_versions(name))
        active = await self.arena.conn.hget(keys.bot(name), "active_version")
        versions = sorted((VersionInfo.from_json(v) for v in raw.values()), key=_number)
        return versions[::-1], int(active) if active else None

    def _conn(self) -> redis.Redis:
        return redis.Redis.from_url(
            self.arena.config.redis_url, decode_responses=True, socket_timeout=30
        )

    def _allowed(self, conn: redis.Redis, name: str, token: str) -> str | None:
        """None when ``token`` is the bot's or the admin's; else why not."""
        admin = self.arena.config.admin_token
        if admin and hmac.compare_digest(token.encode(), admin.encode()):
            return None
        try:
            owner = bots.authenticate(conn, token)
        except ArenaError:
            return "that token is not valid: type the token `arena bot register` printed"
        if owner != name:
            return f"that is bot {owner!r}'s token: {name!r}'s own token is needed"
        return None

    async def _form(
        self, request: web.Request
    ) -> tuple[dict[str, str], tuple[str, bytes] | None] | web.Response:
        """The form's text fields and its file (name, bytes), read with caps."""
        if not request.content_type.startswith("multipart/form-data"):
            return error(400, "send the form as multipart/form-data (the page's form does)")
        limit = ArchiveLimits().archive_bytes
        fields: dict[str, str] = {}
        upload: tuple[str, bytes] | None = None
        reader = await request.multipart()
        while (part := await reader.next()) is not None:
            if not isinstance(part, BodyPartReader):
                return error(400, "a nested multipart body is not taken")
            data = bytearray()
            cap = limit if part.filename else FIELD_BYTES
            while chunk := await part.read_chunk(64 * 1024):
                data += chunk
                if len(data) > cap:
                    what = "the archive" if part.filename else f"the field {part.name!r}"
                    return error(413, f"{what} is over {cap} bytes; at most that is taken")
            if part.filename:
                if data:
                    upload = (part.filename, bytes(data))
            elif part.name:
                fields[part.name] = data.decode("utf-8", "replace").strip()
        return fields, upload

    async def submit(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        problem = self._check_name(name)
        if problem is not None:
            return problem
        form = await self._form(request)
        if isinstance(form, web.Response):
            return form
        fields, upload = form
        if upload is None:
            return error(400, "no archive in the form: choose a .tar.gz or .zip of the bot")
        language = fields.get("language") or None

        def work() -> dict[str, Any] | str:
            with self._conn() as conn:
                refused = self._allowed(conn, name, fields.get("token", ""))
                if refused is not None:
                    return refused
                store = self.store(conn)
                try:
                    info = store.submit_and_build(
                        name, data=upload[1], filename=upload[0], language=language
                    )
                except ArenaError as exc:
                    return f"refused: {exc}"
                return self._builds_context(store, name, info.version)

        return await self._answer(name, work)

    async def builds(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        problem = self._check_name(name)
        if problem is not None:
            return problem
        form = await self._form(request)
        if isinstance(form, web.Response):
            return form
        fields, _ = form

        def work() -> dict[str, Any] | str:
            with self._conn() as conn:
                refused = self._allowed(conn, name, fields.get("token", ""))
                if refused is not None:
                    return refused
                return self._builds_context(self.store(conn), name, None)

        return await self._answer(name, work)

    def _check_name(self, name: str) -> web.Response | None:
        if not league.ID_PATTERN.match(name):
            return error(400, f"bot name {name!r} is not valid: letters, digits, ._:@+-")
        if not self.enabled:
            return error(
                403, "this referee keeps no hosted bots: it was started without a data dir"
            )
        return None

    def _builds_context(
        self, store: VersionStore, name: str, submitted: int | None
    ) -> dict[str, Any]:
        versions = store.versions(name)
        return {
            "name": name,
            "submitted": submitted,
            "active": store.active_version(name),
            "versions": list(reversed(versions)),
            "logs": {v.version: store.build_log(name, v.version) for v in versions[-3:]},
        }

    async def _answer(self, name: str, work: Any) -> web.Response:
        result = await asyncio.to_thread(work)
        if isinstance(result, str):
            status = 400 if result.startswith("refused: ") else 403
            return self.arena.html(
                "bot_builds.html",
                status=status,
                name=name,
                problem=result.removeprefix("refused: "),
            )
        return self.arena.html("bot_builds.html", problem="", **result)


def _number(info: VersionInfo) -> int:
    return info.version


LANGUAGE_CHOICES = [(lang.name, lang.describe) for lang in LANGUAGES]
