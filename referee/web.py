"""The referee's small HTTP server: ``/metrics``, ``/healthz``, a standings page and JSON.

It runs inside the referee's asyncio loop (``await serve_http(redis_url, host, port,
stop_event)``) on plain asyncio streams: no web framework, no build step, no external
assets. Everything it shows is read from Redis per request, so any number of referees can
serve it for one league.

Routes (GET and HEAD):

* ``/metrics``: Prometheus text format from :class:`referee.metrics.ArenaCollector`;
* ``/healthz``: ``200 {"status": "ok"}`` when Redis answers, else ``503``;
* ``/``: HTML page (refreshes itself) with the seasons, their progress, the standings table
  of one season (``?season=ID``, default the newest) and the recent matches;
* ``/replay/<match_id>``: the match's text replay (``workers.replay.render_replay``);
* ``/api/seasons``, ``/api/standings/<season>``: JSON.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import html
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import redis
import redis.asyncio as aredis
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.registry import CollectorRegistry

from referee import keys
from referee.metrics import WORKER_STALE_S, make_registry

log = logging.getLogger(__name__)

REFRESH_S = 5
"""The standings page reloads itself this often."""
RECENT_MATCHES = 20
MAX_SEASONS_LISTED = 50
MAX_HEADER_BYTES = 16 * 1024
MAX_HEADERS = 100
MAX_CONNECTIONS = 128
"""Open HTTP connections one referee accepts; more are answered 503 and closed."""
IDLE_TIMEOUT_S = 30.0
"""A keep-alive connection with no new request for this long is closed."""

_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}$")


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


def _json_response(status: int, data: Any) -> Response:
    body = json.dumps(data, indent=1, sort_keys=True).encode()
    return Response(status, body + b"\n", "application/json")


def _error(status: int, message: str) -> Response:
    return _json_response(status, {"error": message})


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(float(_text(value)))
    except (TypeError, ValueError):
        return default


# --- reading the league from Redis ---------------------------------------------------------


async def load_seasons(conn: aredis.Redis, limit: int = MAX_SEASONS_LISTED) -> list[dict[str, Any]]:
    """The newest seasons first: id, game, preset, state, progress counters."""
    ids = [_text(s) for s in await conn.zrevrange(keys.SEASONS, 0, limit - 1)]
    if not ids:
        return []
    async with conn.pipeline(transaction=False) as pipe:
        for season_id in ids:
            pipe.hgetall(keys.season(season_id))
        hashes = await pipe.execute()
    seasons = []
    for season_id, raw in zip(ids, hashes, strict=True):
        fields = {_text(k): _text(v) for k, v in (raw or {}).items()}
        seasons.append(
            {
                "season": season_id,
                "game": fields.get("game", ""),
                "preset": fields.get("preset", ""),
                "state": fields.get("state", "unknown"),
                "matches_total": _int(fields.get("matches_total")),
                "matches_done": _int(fields.get("matches_done")),
                "matches_failed": _int(fields.get("matches_failed")),
                "created_ms": _int(fields.get("created_ms")),
            }
        )
    return seasons


async def load_standings(conn: aredis.Redis, season_id: str) -> dict[str, Any] | None:
    raw = await conn.get(keys.season_standings(season_id))
    if raw is None:
        return None
    loaded = json.loads(raw)
    return loaded if isinstance(loaded, dict) else None


async def load_recent_matches(
    conn: aredis.Redis, limit: int = RECENT_MATCHES
) -> list[dict[str, Any]]:
    """The most recently finished matches: id, season, game, seats, winners, finish time."""
    raw_entries = await conn.zrevrange(keys.MATCHES_RECENT, 0, limit - 1, withscores=True)
    entries: list[tuple[Any, float]] = [(e[0], float(e[1])) for e in raw_entries]
    if not entries:
        return []
    async with conn.pipeline(transaction=False) as pipe:
        for match_id, _score in entries:
            pipe.get(keys.match_result(_text(match_id)))
        results = await pipe.execute()
    matches = []
    for (match_id, score), raw in zip(entries, results, strict=True):
        item: dict[str, Any] = {"match_id": _text(match_id), "finished_ms": int(score)}
        if raw:
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                result = json.loads(raw)
                seats = [str(s) for s in result.get("seats", [])]
                outcome = result.get("result") or {}
                item.update(
                    season=result.get("season", ""),
                    game=result.get("game", ""),
                    seats=seats,
                    winners=[seats[w] for w in outcome.get("winners", []) if w < len(seats)],
                    totals=outcome.get("totals", []),
                    unit=outcome.get("unit", ""),
                )
        matches.append(item)
    return matches


async def load_platform(conn: aredis.Redis) -> dict[str, int]:
    bots = [_text(b) for b in await conn.smembers(keys.BOTS)]
    async with conn.pipeline(transaction=False) as pipe:
        for bot in bots:
            pipe.hlen(keys.bot_streams(bot))
        pipe.hvals(keys.WORKERS_ALIVE)
        replies = await pipe.execute()
    now_ms = time.time() * 1000
    beats = replies[-1]
    return {
        "bots_registered": len(bots),
        "bots_connected": sum(1 for n in replies[:-1] if n),
        "workers_alive": sum(1 for b in beats if now_ms - _int(b) <= WORKER_STALE_S * 1000),
    }


# --- HTML -----------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;background:#fafafa}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
table{border-collapse:collapse;background:#fff}th,td{padding:.25em .6em;border:1px solid #ddd}
th{background:#eee;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}
.bar{display:inline-block;width:8em;height:.7em;background:#ddd;vertical-align:middle}
.bar span{display:block;height:100%;background:#3a7}.muted{color:#777}
a{color:#15c}.sel{font-weight:bold}
"""

_STANDINGS_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("elo", "Elo", "{:.0f}"),
    ("elo_interval", "95% interval", ""),  # elo_low - elo_high
    ("live_elo", "live Elo", "{:.0f}"),
    ("openskill_ordinal", "OpenSkill", "{:.1f}"),
    ("score", "score", "{:+g}"),
    ("matches", "matches", "{:.0f}"),
    ("deals", "deals", "{:.0f}"),
    ("deals_won", "deals won", "{:.0f}"),
    ("avg_place", "avg place", "{:.2f}"),
    ("illegal_passes", "illegal passes", "{:.0f}"),
    ("invalid_actions", "invalid actions", "{:.0f}"),
    ("timeouts", "timeouts", "{:.0f}"),
    ("autopilot_seats", "autopilot", "{:.0f}"),
)


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _fmt(value: Any, pattern: str) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return pattern.format(value)
    return "" if value is None else _esc(value)


def _cell(row: Mapping[str, Any], key: str, pattern: str) -> str:
    if key == "elo_interval":
        low, high = row.get("elo_low"), row.get("elo_high")
        if isinstance(low, (int, float)) and isinstance(high, (int, float)):
            return f"{low:.0f} &ndash; {high:.0f}"
        return ""
    return _fmt(row.get(key), pattern)


def _progress(done: int, total: int) -> str:
    pct = 100.0 * done / total if total else 0.0
    return (
        f'<span class="bar" title="{pct:.0f}%"><span style="width:{pct:.1f}%"></span></span> '
        f"{done}/{total}"
    )


def _time(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ms / 1000)) if ms else ""


def render_index(
    seasons: list[dict[str, Any]],
    selected: str | None,
    standings: Mapping[str, Any] | None,
    matches: list[dict[str, Any]],
    platform: Mapping[str, int],
) -> str:
    """The standings page (pure: every value it shows is escaped here)."""
    out = [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv="refresh" content="{REFRESH_S}">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>Sevens Arena standings</title><style>{_CSS}</style></head><body>",
        "<h1>Sevens Arena</h1>",
        f'<p class="muted">{platform.get("bots_connected", 0)} of '
        f"{platform.get('bots_registered', 0)} bots connected &middot; "
        f"{platform.get('workers_alive', 0)} workers alive &middot; "
        f'<a href="/metrics">metrics</a> &middot; refreshes every {REFRESH_S} s</p>',
        "<h2>Seasons</h2>",
    ]
    if not seasons:
        out.append('<p class="muted">No seasons yet: create one with <code>arena season create'
                   "</code>.</p>")  # fmt: skip
    else:
        out.append(
            "<table><tr><th>season</th><th>game</th><th>preset</th><th>state</th>"
            "<th>progress</th><th>failed</th><th>created (UTC)</th></tr>"
        )
        for s in seasons:
            cls = ' class="sel"' if s["season"] == selected else ""
            out.append(
                f'<tr{cls}><td><a href="/?season={_esc(s["season"])}">{_esc(s["season"])}</a>'
                f"</td><td>{_esc(s['game'])}</td><td>{_esc(s['preset'])}</td>"
                f"<td>{_esc(s['state'])}</td>"
                f"<td>{_progress(s['matches_done'], s['matches_total'])}</td>"
                f'<td class="n">{s["matches_failed"]}</td><td>{_time(s["created_ms"])}</td></tr>'
            )
        out.append("</table>")
    if selected is not None:
        out.append(f"<h2>Standings of {_esc(selected)}</h2>")
        if standings is None or not standings.get("rows"):
            out.append('<p class="muted">No committed results yet.</p>')
        else:
            unit = str(standings.get("unit", "score"))
            unit_title = unit.replace("_", " ")
            out.append(
                f'<p class="muted">game {_esc(standings.get("game", ""))} &middot; score in '
                f"{_esc(unit_title)} &middot; {standings.get('matches_done', 0)}/"
                f"{standings.get('matches_total', 0)} matches &middot; "
                f'<a href="/api/standings/{_esc(selected)}">JSON</a></p>'
            )
            out.append("<table><tr><th>#</th><th>bot</th>")
            out.extend(
                f"<th>{_esc(unit_title if key == 'score' else title)}</th>"
                for key, title, _ in _STANDINGS_COLUMNS
            )
            out.append("</tr>")
            for row in standings["rows"]:
                if not isinstance(row, dict):
                    continue
                out.append(f'<tr><td class="n">{_fmt(row.get("rank"), "{:.0f}")}</td>')
                out.append(f"<td>{_esc(row.get('bot', ''))}</td>")
                out.extend(
                    f'<td class="n">{_cell(row, key, pattern)}</td>'
                    for key, _, pattern in _STANDINGS_COLUMNS
                )
                out.append("</tr>")
            out.append("</table>")
    out.append("<h2>Recent matches</h2>")
    if not matches:
        out.append('<p class="muted">No finished matches yet.</p>')
    else:
        out.append(
            "<table><tr><th>match</th><th>season</th><th>game</th><th>seats</th>"
            "<th>winners</th><th>totals</th><th>finished (UTC)</th></tr>"
        )
        for m in matches:
            mid = _esc(m["match_id"])
            totals = ", ".join(_fmt(t, "{:+g}") for t in m.get("totals", []))
            out.append(
                f'<tr><td><a href="/replay/{mid}">{mid}</a></td>'
                f"<td>{_esc(m.get('season', ''))}</td><td>{_esc(m.get('game', ''))}</td>"
                f"<td>{_esc(', '.join(m.get('seats', [])))}</td>"
                f"<td>{_esc(', '.join(m.get('winners', [])))}</td>"
                f"<td>{totals} {_esc(m.get('unit', ''))}</td>"
                f"<td>{_time(m['finished_ms'])}</td></tr>"
            )
        out.append("</table>")
    out.append("</body></html>\n")
    return "\n".join(out)


def render_replay_text(record: Mapping[str, Any]) -> str:
    """A match record as text via ``workers.replay.render_replay``; when the renderer is
    missing or fails on this record, the record itself as indented JSON, with the reason."""
    raw = json.dumps(record, indent=1, sort_keys=True) + "\n"
    try:
        from workers.replay import render_replay
    except ImportError as exc:
        return f"# text replays need workers.replay.render_replay ({exc}); the raw record:\n{raw}"
    try:
        return str(render_replay(record))
    except Exception as exc:  # a record from another version: still show what we have
        log.warning("could not render the replay of %s: %r", record.get("match_id"), exc)
        return f"# could not render this record as a replay ({exc!r}); the raw record:\n{raw}"


# --- the application -------------------------------------------------------------------------


class ArenaWeb:
    """The routes, over one async Redis client (pages) and one sync client (the collector,
    which prometheus_client calls synchronously; we run it in a thread)."""

    def __init__(self, redis_url: str) -> None:
        self.conn = aredis.Redis.from_url(redis_url, socket_timeout=10)
        self.sync_conn = redis.Redis.from_url(redis_url, socket_timeout=10)
        self.registry: CollectorRegistry = make_registry(self.sync_conn)
        self.routes: list[tuple[re.Pattern[str], Callable[..., Awaitable[Response]]]] = [
            (re.compile(r"^/$"), self.index),
            (re.compile(r"^/metrics$"), self.metrics),
            (re.compile(r"^/healthz$"), self.healthz),
            (re.compile(r"^/api/seasons$"), self.api_seasons),
            (re.compile(r"^/api/standings/(?P<season>[^/]+)$"), self.api_standings),
            (re.compile(r"^/replay/(?P<match_id>[^/]+)$"), self.replay),
        ]

    async def close(self) -> None:
        await self.conn.aclose()
        self.sync_conn.close()

    async def handle(self, method: str, target: str) -> Response:
        if method not in ("GET", "HEAD"):
            return _error(405, f"{method} is not supported: use GET or HEAD")
        parts = urlsplit(target)
        path = unquote(parts.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        for pattern, handler in self.routes:
            match = pattern.match(path)
            if match:
                try:
                    return await handler(query=query, **match.groupdict())
                except redis.RedisError as exc:
                    log.warning("HTTP %s %s: Redis failed: %s", method, path, exc)
                    return _error(503, f"Redis is not reachable: {exc}")
        known = "/, /metrics, /healthz, /api/seasons, /api/standings/<season>, /replay/<match>"
        return _error(404, f"no page at {path}: try {known}")

    async def index(self, query: Mapping[str, str]) -> Response:
        seasons = await load_seasons(self.conn)
        selected = query.get("season") or (seasons[0]["season"] if seasons else None)
        if selected is not None and not _ID.match(selected):
            return _error(400, f"season id {selected!r} is not valid")
        if selected is not None and not await self.conn.exists(keys.season(selected)):
            known = ", ".join(s["season"] for s in seasons[:10]) or "none yet"
            return _error(404, f"no season {selected!r}; seasons: {known}")
        standings = None
        if selected is not None:
            try:
                standings = await load_standings(self.conn, selected)
            except ValueError:
                log.warning("standings of season %s are not JSON", selected)
        matches = await load_recent_matches(self.conn)
        platform = await load_platform(self.conn)
        page = render_index(seasons, selected, standings, matches, platform)
        return Response(200, page.encode(), "text/html; charset=utf-8")

    async def metrics(self, query: Mapping[str, str]) -> Response:
        body = await asyncio.to_thread(generate_latest, self.registry)
        return Response(200, body, CONTENT_TYPE_PLAIN_0_0_4)  # names need no escaping

    async def healthz(self, query: Mapping[str, str]) -> Response:
        try:
            await self.conn.ping()
        except redis.RedisError as exc:
            return _json_response(503, {"status": "unavailable", "redis": str(exc)})
        return _json_response(200, {"status": "ok", "redis": "ok"})

    async def api_seasons(self, query: Mapping[str, str]) -> Response:
        return _json_response(200, {"seasons": await load_seasons(self.conn)})

    async def api_standings(self, query: Mapping[str, str], season: str) -> Response:
        if not _ID.match(season):
            return _error(400, f"season id {season!r} is not valid: letters, digits, ._:@+-")
        try:
            standings = await load_standings(self.conn, season)
        except ValueError:
            return _error(500, f"the standings of season {season!r} in Redis are not JSON")
        if standings is None:
            if await self.conn.exists(keys.season(season)):
                return _error(404, f"season {season!r} has no committed results yet")
            return _error(404, f"no season {season!r}: see /api/seasons")
        return _json_response(200, standings)

    async def replay(self, query: Mapping[str, str], match_id: str) -> Response:
        if not _ID.match(match_id):
            return _error(400, f"match id {match_id!r} is not valid: letters, digits, ._:@+-")
        raw = await self.conn.get(keys.match_record(match_id))
        if raw is None:
            return _error(404, f"no committed record for match {match_id!r}")
        try:
            record = json.loads(raw)
        except ValueError:
            return _error(500, f"the record of match {match_id!r} in Redis is not JSON")
        text = await asyncio.to_thread(render_replay_text, record)
        return Response(200, text.encode())


# --- HTTP/1.1 over asyncio streams -------------------------------------------------------------


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _read_head(reader: asyncio.StreamReader) -> tuple[str, str, str, dict[str, str]]:
    """Request line and headers; raises EOFError on a clean close before a request."""
    line = await reader.readline()
    if not line:
        raise EOFError
    try:
        method, target, version = line.decode("latin-1").rstrip("\r\n").split(" ")
    except ValueError:
        raise _BadRequest(400, "malformed request line: expected 'METHOD /path HTTP/1.1'") from None
    if not version.startswith("HTTP/1."):
        raise _BadRequest(400, f"unsupported protocol {version!r}: use HTTP/1.0 or HTTP/1.1")
    headers: dict[str, str] = {}
    size = len(line)
    while True:
        line = await reader.readline()
        size += len(line)
        if size > MAX_HEADER_BYTES or len(headers) > MAX_HEADERS:
            raise _BadRequest(431, f"request headers exceed {MAX_HEADER_BYTES} bytes")
        if line in (b"\r\n", b"\n", b""):
            break
        name, sep, value = line.decode("latin-1").partition(":")
        if not sep:
            raise _BadRequest(400, f"malformed header line {line[:60]!r}")
        headers[name.strip().lower()] = value.strip()
    return method, target, version, headers


def _encode(response: Response, *, head: bool, keep_alive: bool, gzip_ok: bool) -> bytes:
    body = response.body
    extra = list(response.headers)
    if gzip_ok and len(body) > 1024:
        body = gzip.compress(body, compresslevel=5)
        extra.append(("Content-Encoding", "gzip"))
    lines = [
        f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Error')}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(body)}",
        "Cache-Control: no-store",
        "X-Content-Type-Options: nosniff",
        f"Connection: {'keep-alive' if keep_alive else 'close'}",
        *(f"{k}: {v}" for k, v in extra),
    ]
    head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head_bytes if head else head_bytes + body


class HttpServer:
    """A started server; :meth:`close` stops it and every open connection."""

    def __init__(self, app: ArenaWeb, server: asyncio.Server) -> None:
        self.app = app
        self._server = server
        self._connections: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    @classmethod
    async def start(cls, redis_url: str, host: str = "127.0.0.1", port: int = 0) -> HttpServer:
        app = ArenaWeb(redis_url)
        holder: list[HttpServer] = []

        async def on_connect(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            if len(holder[0]._connections) >= MAX_CONNECTIONS:
                # The referee also holds the bots' streams: never let HTTP eat its descriptors.
                busy = _error(503, f"more than {MAX_CONNECTIONS} open HTTP connections")
                writer.write(_encode(busy, head=False, keep_alive=False, gzip_ok=False))
                with contextlib.suppress(ConnectionError, OSError):
                    await writer.drain()
                writer.close()
                return
            holder[0]._connections.add(task)
            try:
                await holder[0]._serve_connection(reader, writer)
            finally:
                holder[0]._connections.discard(task)

        server = await asyncio.start_server(on_connect, host, port, limit=MAX_HEADER_BYTES)
        holder.append(cls(app, server))
        return holder[0]

    async def _serve_connection(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            while True:
                try:
                    method, target, version, headers = await asyncio.wait_for(
                        _read_head(reader), IDLE_TIMEOUT_S
                    )
                except (EOFError, TimeoutError, ConnectionError):
                    return
                except (_BadRequest, ValueError) as exc:  # ValueError: line over the limit
                    status = exc.status if isinstance(exc, _BadRequest) else 431
                    writer.write(
                        _encode(
                            _error(status, str(exc)), head=False, keep_alive=False, gzip_ok=False
                        )
                    )
                    await writer.drain()
                    return
                if int(headers.get("content-length", "0") or 0) or "transfer-encoding" in headers:
                    response = _error(400, "request bodies are not accepted: use GET or HEAD")
                    keep_alive = False
                else:
                    try:
                        response = await self.app.handle(method, target)
                    except Exception:
                        log.exception("HTTP %s %s failed", method, target)
                        response = _error(500, "internal error; see the referee's log")
                    connection = headers.get("connection", "").lower()
                    keep_alive = (
                        connection != "close"
                        if version == "HTTP/1.1"
                        else connection == "keep-alive"
                    )
                gzip_ok = "gzip" in headers.get("accept-encoding", "")
                writer.write(
                    _encode(response, head=method == "HEAD", keep_alive=keep_alive, gzip_ok=gzip_ok)
                )
                await writer.drain()
                if not keep_alive:
                    return
        except ConnectionError:
            return
        finally:
            writer.close()
            with contextlib.suppress(ConnectionError, OSError):
                await writer.wait_closed()

    async def close(self) -> None:
        self._server.close()
        for task in list(self._connections):
            task.cancel()
        if self._connections:
            await asyncio.gather(*self._connections, return_exceptions=True)
        await self._server.wait_closed()
        await self.app.close()


async def serve_http(
    redis_url: str,
    host: str,
    port: int,
    stop_event: asyncio.Event,
    *,
    on_ready: Callable[[int], None] | None = None,
) -> None:
    """Serve the referee's HTTP routes until ``stop_event`` is set.

    ``on_ready(port)`` is called once listening (useful with ``port=0``).
    """
    server = await HttpServer.start(redis_url, host, port)
    log.info("HTTP on http://%s:%d/ (metrics at /metrics)", host, server.port)
    try:
        if on_ready is not None:
            on_ready(server.port)
        await stop_event.wait()
    finally:
        await server.close()
