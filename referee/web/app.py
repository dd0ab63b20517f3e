"""The referee's HTTP server: aiohttp.web inside the referee's event loop.

Routes (GET also answers HEAD):

* ``/metrics``: Prometheus text format (:class:`referee.metrics.ArenaCollector`);
* ``/healthz``: ``200 {"status": "ok"}`` when Redis answers, else ``503`` (within
  :data:`HEALTH_TIMEOUT_S`: a Redis out of reach must not hang the probe);
* ``/readyz``: ``200 {"status": "ready", "checks": {...}}`` when Redis answers and every
  check of the referee (``WebConfig.readiness``: the bots' gRPC port and the internal port
  accept connections, the referee is not draining) says ``ok``; else ``503`` with
  ``"not ready"``, the same checks and ``reasons``, one sentence per failed check;
* ``/``: the league page (``?season=ID``, default the newest), updated in place from
  ``/events``;
* ``/events?season=ID``: server-sent events, one ``live`` event per second with the
  page's live parts (progress, standings, in-flight matches, throughput, ETA);
* ``/bot/<name>``: a bot's seasons, matches, penalties and think times;
* ``/replay/<match_id>``: the visual replay for browsers, the text replay for anything
  that does not ask for HTML (``curl``), or with ``?format=text``; ``/replay/<id>.txt``;
* ``/play``, ``/play/<session>``: a person plays a casual match (:mod:`referee.web.play`);
* ``/api/seasons``, ``/api/standings/<season>``, ``/api/live/<season>``,
  ``/api/replay/<match_id>``: JSON;
* ``/static/...``: CSS and JS, cached for a year (URLs carry the file's hash).

Limits: aiohttp's own, request line and header fields at most :data:`MAX_LINE_BYTES`,
bodies at most :data:`MAX_BODY_BYTES` (only the play forms post), idle and half-open
connections closed after :data:`IDLE_TIMEOUT_S`; and the referee's (``referee.limits``,
``WebConfig.limits``), in :func:`_limits`:

* every route but ``/healthz``, ``/readyz``, ``/metrics`` and ``/static/`` pays a token of
  its client's bucket (``reads_per_s``, ``reads_burst``), else ``429`` with ``Retry-After``;
* at most ``page_redis_connections`` page requests run at once, on a Redis pool of their
  own; the next ones wait up to ``page_wait_s``, then get ``503`` with ``Retry-After``
  (never a pool error). ``/healthz`` and ``/readyz`` ping Redis on connections of their
  own, so page traffic cannot starve them;
* ``/events`` streams are capped per client and in total (``referee.web.live``).

There is no cap that turns new connections away: a flood of idle connections costs
descriptors until the idle timeout closes them, never the health check's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import redis
import redis.asyncio as aredis
from aiohttp import web
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import CollectorRegistry

from referee import keys
from referee.errors import LimitExceeded
from referee.limits import Limits, RateLimiter, RenderCache
from referee.metrics import make_registry
from referee.web import league
from referee.web.admin import AdminRoutes
from referee.web.hosting import HostingRoutes
from referee.web.ladder import LadderRoutes
from referee.web.live import LiveFeed
from referee.web.pages import Pages
from referee.web.play import PlayRoutes
from referee.web.responses import error, json_response, refused

log = logging.getLogger(__name__)

MAX_LINE_BYTES = 16 * 1024
MAX_BODY_BYTES = 16 * 1024
IDLE_TIMEOUT_S = 15.0
"""A connection with no request in flight for this long is closed (half-open ones too)."""
SHUTDOWN_TIMEOUT_S = 2.0
HEALTH_TIMEOUT_S = 2.0
"""How long /healthz waits for Redis before it answers 503."""
HEALTH_CONNECTIONS = 4
"""Redis connections of /healthz and /readyz alone (page traffic never holds them)."""
POLLER_CONNECTIONS = 16
"""Connections the pages' pool keeps beyond ``page_redis_connections``: the live feed's
pollers (one per watched season) and the event streams' first check use it too."""
UNLIMITED_PATHS = ("/healthz", "/readyz", "/metrics")
"""Routes neither rate-limited nor queued: the operator's probes and scrapes."""
STATIC_MAX_AGE_S = 365 * 24 * 3600

HERE = Path(__file__).parent
STATIC_DIR = HERE / "static"
TEMPLATE_DIR = HERE / "templates"

KNOWN_ROUTES = (
    "/, /metrics, /healthz, /readyz, /events, /bot/<name>, /replay/<match>, /play, /api/seasons, "
    "/api/standings/<season>, /api/live/<season>, /api/replay/<match>"
)

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
Readiness = Callable[[], Awaitable[dict[str, str]]]
"""The referee's own readiness checks: check name -> ``"ok"`` or why it is not."""


def static_versions() -> dict[str, str]:
    """File name -> short content hash, appended to static URLs so they can be cached."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()[:12]
        for p in sorted(STATIC_DIR.iterdir())
        if p.is_file()
    }


def format_utc(ms: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) if ms else ""


def format_duration(seconds: Any) -> str:
    s = int(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def plural(count: Any, word: str, words: str = "") -> str:
    """``1 worker``, ``2 workers`` (``words``: the plural when it is not ``word + s``)."""
    return f"{count} {word if count == 1 else words or word + 's'}"


_CELL_FORMATS = {
    "elo": "{:.0f}",
    "live_elo": "{:.0f}",
    "openskill_ordinal": "{:.1f}",
    "score": "{:+g}",
    "dup_score": "{:+.1f}",
    "avg_place": "{:.2f}",
}


def format_cell(row: Mapping[str, Any], key: str) -> str:
    """One standings cell as text (``elo_interval`` is ``low – high``)."""
    if key == "elo_interval":
        low, high = row.get("elo_low"), row.get("elo_high")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            return f"{low:.0f} – {high:.0f}"
        return ""
    value = row.get(key)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _CELL_FORMATS.get(key, "{:.0f}").format(value)
    return "" if value is None else str(value)


@dataclass
class WebConfig:
    redis_url: str
    grpc_target: str | None = None
    """The referee's gRPC address (HOST:PORT): people's seats connect there like bots."""
    human_move_s: float = 60.0
    """A person's time per decision in casual matches (the operator sets it)."""
    human_bank_s: float = 300.0
    casual_play: bool = True
    """Visitors may start casual matches against bots on ``/play`` (``--no-casual-play``
    turns it off; joining a season's seat stays on)."""
    person_idle_s: float = 30 * 24 * 3600.0
    """A person identity made by ``/play`` that nobody used this long, holding no stream and
    named by no season, is deleted (``referee.web.human.forget_idle_people``)."""
    readiness: Readiness | None = None
    """The referee's checks for ``/readyz`` besides Redis (None: Redis alone)."""
    admin_token: str | None = None
    """The League API's admin token, which the admin pages ask for (None: no admin pages)."""
    limits: Limits = field(default_factory=Limits)
    """Rates and caps per client and in total (``arena referee --limit``)."""
    hosting_dir: str = ""
    """The data dir that keeps hosted bots' code ("": no upload form, ``referee.web.hosting``)."""


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """JSON errors that say what would work; Redis failures as 503; headers for all."""
    try:
        response = await handler(request)
    except web.HTTPNotFound:
        response = error(404, f"no page at {request.path}: try {KNOWN_ROUTES}")
    except web.HTTPMethodNotAllowed as exc:
        allowed = ", ".join(sorted(exc.allowed_methods))
        response = error(405, f"{request.method} is not supported here: use {allowed}")
    except web.HTTPRequestEntityTooLarge:
        response = error(413, f"request bodies are limited to {MAX_BODY_BYTES} bytes")
    except web.HTTPException:
        raise
    except redis.RedisError as exc:
        if "No connection available" in str(exc):  # the pages' pool waited page_wait_s
            response = refused(
                LimitExceeded(
                    "the pages are busy: every Redis connection of the pages is taken (--limit "
                    "page_redis_connections, page_wait_s); try again shortly",
                    retry_after_s=1.0,
                ),
                503,
            )
        else:
            log.warning("HTTP %s %s: Redis failed: %s", request.method, request.path, exc)
            response = error(503, f"Redis is not reachable: {exc}")
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception:
        log.exception("HTTP %s %s failed", request.method, request.path)
        response = error(500, "internal error; see the referee's log")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    if request.path.startswith("/static/"):
        response.headers["Cache-Control"] = f"public, max-age={STATIC_MAX_AGE_S}, immutable"
    else:
        response.headers.setdefault("Cache-Control", "no-store")
    if isinstance(response, web.Response):
        body = response.body
        if isinstance(body, (bytes, bytearray)) and len(body) > 1024:
            response.enable_compression()
    return response


def _is_stream(path: str) -> bool:
    """Server-sent events: long-lived, capped by count rather than queued."""
    return path == "/events" or path.endswith("/events")


@web.middleware
async def _limits(request: web.Request, handler: Handler) -> web.StreamResponse:
    """The client's read rate, then a bounded wait for one of the pages' slots."""
    path = request.path
    if path in UNLIMITED_PATHS or path.startswith("/static/"):
        return await handler(request)
    web_app: ArenaWeb = request.app[WEB_KEY]
    try:
        web_app.reads.check(request.remote or "unknown", f"{request.method} {path}")
    except LimitExceeded as exc:
        return refused(exc, 429)
    if _is_stream(path):
        return await handler(request)
    gate = web_app.pages_gate
    if gate is None:
        return await handler(request)
    wait_s = web_app.config.limits.page_wait_s
    try:
        await asyncio.wait_for(gate.acquire(), wait_s)
    except TimeoutError:
        return refused(
            LimitExceeded(
                f"the pages are busy: {web_app.config.limits.page_redis_connections} requests "
                f"are being served and this one waited {wait_s:g} s (--limit "
                "page_redis_connections, page_wait_s); try again shortly",
                retry_after_s=1.0,
            ),
            503,
        )
    try:
        return await handler(request)
    finally:
        gate.release()


class ArenaWeb:
    """The application: async Redis clients (pages, a bounded pool; health, its own), one
    sync client (the collector, which prometheus_client calls synchronously: run in a
    thread)."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        limits = config.limits
        pages = limits.page_redis_connections
        self.conn = aredis.Redis(
            connection_pool=aredis.BlockingConnectionPool.from_url(
                config.redis_url,
                max_connections=pages + POLLER_CONNECTIONS if pages else 2**31,
                timeout=limits.page_wait_s or None,
                socket_timeout=10,
            )
        )
        self.health_conn = aredis.Redis(
            connection_pool=aredis.BlockingConnectionPool.from_url(
                config.redis_url,
                max_connections=HEALTH_CONNECTIONS,
                timeout=HEALTH_TIMEOUT_S,
                socket_timeout=HEALTH_TIMEOUT_S,
            )
        )
        self.pages_gate = asyncio.Semaphore(pages) if pages else None
        self.reads = RateLimiter(limits.reads_per_s, limits.reads_burst, what="requests")
        self.replays = RenderCache(limits.replay_cache)
        self.sync_conn = redis.Redis.from_url(config.redis_url, socket_timeout=10)
        self.registry: CollectorRegistry = make_registry(self.sync_conn)
        self.templates = jinja2.Environment(
            loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
            autoescape=True,
            undefined=jinja2.StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
        )
        self.templates.globals["static"] = self._static_url
        self.templates.globals["unit_words"] = league.unit_words
        self.templates.filters.update(
            utc=format_utc, duration=format_duration, cell=format_cell, plural=plural
        )
        self.versions = static_versions()
        self.live = LiveFeed(self.conn, self)
        self.pages = Pages(self)
        self.play = PlayRoutes(self)
        self.admin = AdminRoutes(self)
        self.hosting = HostingRoutes(self)
        self.ladders = LadderRoutes(self)
        self.app = web.Application(middlewares=[_errors, _limits], client_max_size=MAX_BODY_BYTES)
        self.app[WEB_KEY] = self
        self._routes()

    def _static_url(self, name: str) -> str:
        return f"/static/{name}?v={self.versions.get(name, '0')}"

    def render(self, template: str, **context: Any) -> str:
        return self.templates.get_template(template).render(**context)

    def html(self, template: str, status: int = 200, **context: Any) -> web.Response:
        return web.Response(
            status=status, text=self.render(template, **context), content_type="text/html"
        )

    def _routes(self) -> None:
        r = self.app.router
        r.add_get("/", self.pages.index)
        r.add_get("/metrics", self.metrics)
        r.add_get("/healthz", self.healthz)
        r.add_get("/readyz", self.readyz)
        r.add_get("/events", self.live.handle)
        r.add_get("/bot/{name}", self.pages.bot)
        r.add_get("/replay/{match_id}", self.pages.replay)
        r.add_get("/api/seasons", self.api_seasons)
        r.add_get("/api/standings/{season}", self.api_standings)
        r.add_get("/api/live/{season}", self.api_live)
        r.add_get("/api/replay/{match_id}", self.pages.api_replay)
        r.add_static("/static/", STATIC_DIR, append_version=False)
        self.play.add_routes(r)
        self.admin.add_routes(r)
        self.hosting.add_routes(r)
        self.ladders.add_routes(r)

    async def close(self) -> None:
        await self.live.close()
        await self.play.close()
        await self.conn.aclose(close_connection_pool=True)
        await self.health_conn.aclose(close_connection_pool=True)
        self.sync_conn.close()

    # --- the small routes ------------------------------------------------------------------

    async def metrics(self, request: web.Request) -> web.Response:
        body = await asyncio.to_thread(generate_latest, self.registry)
        response = web.Response(body=body)
        response.headers["Content-Type"] = CONTENT_TYPE_PLAIN_0_0_4
        return response

    async def healthz(self, request: web.Request) -> web.Response:
        try:
            await asyncio.wait_for(self.health_conn.ping(), HEALTH_TIMEOUT_S)
        except TimeoutError:
            message = f"Redis did not answer within {HEALTH_TIMEOUT_S:g} s"
            return json_response(503, {"status": "unavailable", "redis": message})
        except redis.RedisError as exc:
            return json_response(503, {"status": "unavailable", "redis": str(exc)})
        return json_response(200, {"status": "ok", "redis": "ok"})

    async def readyz(self, request: web.Request) -> web.Response:
        checks = {"redis": "ok"}
        try:
            await asyncio.wait_for(self.health_conn.ping(), HEALTH_TIMEOUT_S)
        except TimeoutError:
            checks["redis"] = f"Redis did not answer within {HEALTH_TIMEOUT_S:g} s"
        except redis.RedisError as exc:
            checks["redis"] = f"Redis is not reachable: {exc}"
        if self.config.readiness is not None:
            checks.update(await self.config.readiness())
        reasons = [why for why in checks.values() if why != "ok"]
        if reasons:
            return json_response(503, {"status": "not ready", "reasons": reasons, "checks": checks})
        return json_response(200, {"status": "ready", "checks": checks})

    async def api_seasons(self, request: web.Request) -> web.Response:
        return json_response(200, {"seasons": await league.load_seasons(self.conn)})

    async def _season_or_error(self, season: str) -> web.Response | None:
        if not league.ID_PATTERN.match(season):
            return error(400, f"season id {season!r} is not valid: letters, digits, ._:@+-")
        if not await self.conn.exists(keys.season(season)):
            return error(404, f"no season {season!r}: see /api/seasons")
        return None

    async def api_standings(self, request: web.Request) -> web.Response:
        season = request.match_info["season"]
        if not league.ID_PATTERN.match(season):
            return error(400, f"season id {season!r} is not valid: letters, digits, ._:@+-")
        try:
            standings = await league.load_standings(self.conn, season)
        except ValueError:
            return error(500, f"the standings of season {season!r} in Redis are not JSON")
        if standings is None:
            if await self.conn.exists(keys.season(season)):
                return error(404, f"season {season!r} has no committed results yet")
            return error(404, f"no season {season!r}: see /api/seasons")
        return json_response(200, standings)

    async def api_live(self, request: web.Request) -> web.Response:
        season = request.match_info["season"]
        problem = await self._season_or_error(season)
        if problem is not None:
            return problem
        return json_response(200, await self.live.snapshot_data(season))


WEB_KEY: web.AppKey[ArenaWeb] = web.AppKey("arena_web")


class HttpServer:
    """A started server; :meth:`close` stops it and every open connection."""

    def __init__(self, web_app: ArenaWeb, runner: web.AppRunner, site: web.TCPSite) -> None:
        self.web = web_app
        self._runner = runner
        self._site = site

    @property
    def port(self) -> int:
        server = self._site._server
        assert isinstance(server, asyncio.Server)
        port: int = server.sockets[0].getsockname()[1]
        return port

    @classmethod
    async def start(cls, config: WebConfig, host: str = "127.0.0.1", port: int = 0) -> HttpServer:
        web_app = ArenaWeb(config)
        runner = web.AppRunner(
            web_app.app,
            handle_signals=False,  # the referee owns SIGTERM/SIGINT
            access_log=None,
            keepalive_timeout=IDLE_TIMEOUT_S,
            max_line_size=MAX_LINE_BYTES,
            max_field_size=MAX_LINE_BYTES,
            shutdown_timeout=SHUTDOWN_TIMEOUT_S,
        )
        await runner.setup()
        site = web.TCPSite(runner, host, port, backlog=256)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            await web_app.close()
            raise
        return cls(web_app, runner, site)

    async def close(self) -> None:
        await self.web.live.close()  # ends the event streams so the runner need not wait
        await self.web.play.close()
        await self._runner.cleanup()
        await self.web.close()


async def serve_http(
    redis_url: str,
    host: str,
    port: int,
    stop_event: asyncio.Event,
    *,
    on_ready: Callable[[int], None] | None = None,
    grpc_target: str | None = None,
    human_move_s: float = WebConfig.human_move_s,
    human_bank_s: float = WebConfig.human_bank_s,
    casual_play: bool = WebConfig.casual_play,
    person_idle_s: float = WebConfig.person_idle_s,
    readiness: Readiness | None = None,
    admin_token: str | None = None,
    limits: Limits | None = None,
    hosting_dir: str = "",
) -> None:
    """Serve the referee's HTTP routes until ``stop_event`` is set.

    ``on_ready(port)`` is called once listening (useful with ``port=0``); ``grpc_target``
    is the referee's own gRPC address, needed for people to play (``/play``), with
    ``human_move_s`` per decision and a ``human_bank_s`` reserve (0 turns ``/play`` off);
    ``casual_play`` False refuses casual matches on ``/play`` (joins stay); ``person_idle_s``
    how long an unused person identity lives; ``readiness`` the referee's checks for
    ``/readyz``; ``limits`` its rates and caps; ``admin_token`` opens the admin pages;
    ``hosting_dir`` (the data dir) turns on the hosted bots' upload form.
    """
    config = WebConfig(
        redis_url,
        grpc_target=grpc_target,
        human_move_s=human_move_s,
        human_bank_s=human_bank_s,
        casual_play=casual_play,
        person_idle_s=person_idle_s,
        readiness=readiness,
        admin_token=admin_token,
        limits=limits or Limits(),
        hosting_dir=hosting_dir,
    )
    server = await HttpServer.start(config, host, port)
    log.info("HTTP on http://%s:%d/ (metrics at /metrics)", host, server.port)
    try:
        if on_ready is not None:
            on_ready(server.port)
        await stop_event.wait()
    finally:
        with contextlib.suppress(Exception):
            await server.close()
