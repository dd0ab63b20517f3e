"""League API methods of hosted bots: ``HostingServicerMixin`` (SubmitBot, ListBotVersions).

The gateway's ``LeagueServicer`` inherits this mixin and provides ``self._sync`` (a
synchronous Redis client), ``self._admin_token`` and ``self.hosting_dir`` (the data dir the
referee keeps hosted code in; ``None`` = this referee takes no submissions). Both methods
take the admin token or the bot's own token: a bot's author holds that token. The work
(checking, unpacking, building in the sandbox) runs in a thread
(``referee.hosting.versions``).
"""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis

from arena.v1 import league_pb2
from referee import bots
from referee.errors import ArenaError, AuthError
from referee.gateway import status
from referee.gateway.auth import bearer_token
from referee.hosting.archive import ArchiveLimits
from referee.hosting.errors import ArchiveRefused
from referee.hosting.versions import VersionInfo, VersionStore

Context = Any  # grpc.aio.ServicerContext (grpcio ships no type stubs)

CHUNK_BYTES = 32 * 1024
"""The most archive bytes one ``SubmitBotChunk`` carries (every message fits the cap)."""


def version_message(
    bot: str, info: VersionInfo, active: int | None, log: str = ""
) -> league_pb2.BotVersion:
    return league_pb2.BotVersion(
        bot=bot,
        version=info.version,
        sha256=info.sha256,
        created_at=info.created_at,
        language=info.language,
        protocol=info.protocol,
        files=info.files,
        archive_bytes=info.archive_bytes,
        build=info.build,
        built_at=info.built_at,
        build_seconds=info.build_seconds,
        summary=info.summary,
        active=info.version == active,
        build_log=log,
    )


class HostingServicerMixin:
    _sync: redis.Redis
    _admin_token: str | None
    hosting_dir: Path | None

    async def _owner_or_admin(self, context: Context, bot: str) -> None:
        """Abort unless the call carries the admin token or ``bot``'s own token."""
        try:
            token = bearer_token(context.invocation_metadata())
        except AuthError as exc:
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED, f"{exc} (the bot's token or the admin token)"
            )
            raise
        admin = self._admin_token
        if admin is not None and hmac.compare_digest(token.encode(), admin.encode()):
            return
        try:
            owner = await asyncio.to_thread(bots.authenticate, self._sync, token)
        except ArenaError as exc:
            await status.abort(context, exc)
        if owner != bot:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"this token is bot {owner!r}'s: only {bot!r}'s own token or the admin token "
                f"may submit or read {bot!r}'s code",
            )

    async def _store(self, context: Context) -> VersionStore:
        if self.hosting_dir is None:
            await context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                "this referee keeps no hosted bots: start it with a data dir (arena up, or "
                "arena referee --data-dir DIR)",
            )
        assert self.hosting_dir is not None
        return VersionStore(self._sync, self.hosting_dir)

    async def SubmitBot(
        self, request_iterator: AsyncIterator[league_pb2.SubmitBotChunk], context: Context
    ) -> league_pb2.BotVersion:
        store = await self._store(context)
        limit = ArchiveLimits().archive_bytes
        first: league_pb2.SubmitBotChunk | None = None
        parts: list[bytes] = []
        size = 0
        async for chunk in request_iterator:
            if first is None:
                first = chunk
                await self._owner_or_admin(context, chunk.name)
            if len(chunk.data) > CHUNK_BYTES:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"a chunk of {len(chunk.data)} bytes: send at most {CHUNK_BYTES} per chunk",
                )
            size += len(chunk.data)
            if size > limit:
                await status.abort(
                    context,
                    ArchiveRefused(
                        f"the archive is over {limit // (1024 * 1024)} MiB; at most that is "
                        "taken (leave out build products and dependencies the platform provides)"
                    ),
                )
            parts.append(chunk.data)
        if first is None or not first.name:
            await context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                "an empty submission: the first chunk names the bot and the archive's file name",
            )
        assert first is not None
        data = b"".join(parts)

        def work() -> tuple[VersionInfo, int | None, str]:
            info = store.submit_and_build(
                first.name, data=data, filename=first.filename, language=first.language or None
            )
            return info, store.active_version(first.name), store.build_log(first.name, info.version)

        try:
            info, active, log = await asyncio.to_thread(work)
        except ArenaError as exc:
            await status.abort(context, exc)
        return version_message(first.name, info, active, log)

    async def ListBotVersions(
        self, request: league_pb2.BotVersionsRequest, context: Context
    ) -> league_pb2.BotVersions:
        store = await self._store(context)
        await self._owner_or_admin(context, request.name)

        def work() -> tuple[list[VersionInfo], int | None, str, int]:
            versions = store.versions(request.name)
            wanted = request.log_version or (versions[-1].version if versions else 0)
            log = store.build_log(request.name, wanted) if wanted else ""
            return versions, store.active_version(request.name), log, wanted

        try:
            versions, active, log, wanted = await asyncio.to_thread(work)
        except ArenaError as exc:
            await status.abort(context, exc)
        answer = league_pb2.BotVersions(active_version=active or 0)
        for info in versions:
            shown = log if info.version == wanted else ""
            answer.versions.append(version_message(request.name, info, active, shown))
        return answer
