"""The league page's live parts, and the server-sent events that update them in place.

:meth:`LiveFeed.context` gathers what the page shows of one season (progress, standings,
in-flight matches, throughput and ETA, charts, recent matches); the page renders it with
the same template fragments that ``/events`` sends, so a live update and a reload show the
same table. One poller per watched season reads Redis every :data:`INTERVAL_S` and fans
the result out to every open stream of that season: a viewer costs a queue, never a Redis
connection. Open streams are capped per client and in total (``Limits.sse_per_client``,
``Limits.sse_streams``): over the client's cap ``429``, over the total ``503``, both with
``Retry-After``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import redis
import redis.asyncio as aredis
from aiohttp import web

from referee import keys, metrics_store
from referee.errors import LimitExceeded
from referee.limits import Slots
from referee.match.season_row import Standings
from referee.web import charts, history, league
from referee.web.responses import error, refused

if TYPE_CHECKING:
    from referee.web.app import ArenaWeb

INTERVAL_S = 1.0
"""How often a watched season is read and its viewers updated."""
STORED_TTL_S = 0.5
"""The workers' counters are read at most this often for all the seasons being watched."""
HEARTBEAT_S = 15.0
CHART_MIN_INTERVAL_S = 10.0
"""Charts are drawn again at most this often per season while it runs."""
RESULTS_CHART_MAX = 2000
"""A season without stored checkpoints (counted before they existed) is charted from its
results (``history.elo_over_time``: up to ``history.CHECKPOINTS`` Bradley-Terry fits) only
up to this many results; a larger one shows no chart until its next refit stores a point."""
RATE_WINDOW_S = 30.0
"""Decisions/s and matches/s are averaged over about this long."""

FRAGMENTS = ("platform", "seasons", "progress", "standings", "inflight", "charts", "recent")
"""Element ids of the page's live parts; each is the template ``_<id>.html``."""


@dataclass
class _Rates:
    samples: deque[tuple[float, int, int]] = field(default_factory=lambda: deque(maxlen=200))

    def add(self, now: float, decisions: int, settled: int) -> None:
        self.samples.append((now, decisions, settled))
        while len(self.samples) > 2 and now - self.samples[1][0] > RATE_WINDOW_S:
            self.samples.popleft()

    def rates(self) -> tuple[float | None, float | None]:
        if len(self.samples) < 2:
            return None, None
        t0, d0, s0 = self.samples[0]
        t1, d1, s1 = self.samples[-1]
        if t1 - t0 < 0.5:
            return None, None
        return (d1 - d0) / (t1 - t0), (s1 - s0) / (t1 - t0)


@dataclass
class _Watch:
    queues: set[asyncio.Queue[str]] = field(default_factory=set)
    task: asyncio.Task[None] | None = None


class LiveFeed:
    def __init__(self, conn: aredis.Redis, web_app: ArenaWeb) -> None:
        self.conn = conn
        self.web = web_app
        self._rates: dict[str, _Rates] = {}
        self._charts: dict[str, tuple[int, float, str, str]] = {}
        self._watches: dict[str, _Watch] = {}
        limits = web_app.config.limits
        self.slots = Slots(
            limits.sse_per_client,
            limits.sse_streams,
            "event streams (/events)",
            ("sse_per_client", "sse_streams"),
        )
        self._closed = asyncio.Event()
        self._stored: tuple[float, metrics_store.Stored] | None = None  # read at, counters

    async def close(self) -> None:
        self._closed.set()
        for watch in self._watches.values():
            if watch.task is not None:
                watch.task.cancel()
        for watch in list(self._watches.values()):
            if watch.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await watch.task
        self._watches.clear()

    # --- what the page shows ---------------------------------------------------------------

    async def _throughput(self, season: dict[str, Any]) -> dict[str, Any]:
        season_id = season["season"]
        now = time.monotonic()
        if self._stored is None or now - self._stored[0] > STORED_TTL_S:
            self._stored = (now, await metrics_store.read_stored_async(self.conn))
        decisions = await league.season_decisions(self.conn, season_id, self._stored[1])
        settled = season["matches_done"] + season["matches_failed"]
        rates = self._rates.setdefault(season_id, _Rates())
        rates.add(time.monotonic(), decisions, settled)
        per_s, matches_per_s = rates.rates()
        remaining = max(0, season["matches_total"] - settled)
        eta_s: float | None = None
        if season["state"] == "running" and remaining and matches_per_s:
            eta_s = remaining / matches_per_s
        return {
            "decisions": decisions,
            "decisions_per_s": None if per_s is None else round(per_s, 1),
            "matches_per_s": None if matches_per_s is None else round(matches_per_s, 3),
            "remaining": remaining,
            "eta_s": None if eta_s is None else round(eta_s),
        }

    async def _chart_svgs(self, season: dict[str, Any]) -> tuple[str, str]:
        season_id = season["season"]
        done = season["matches_done"]
        cached = self._charts.get(season_id)
        now = time.monotonic()
        # Every match settled: the final picture now, not one up to CHART_MIN_INTERVAL_S old
        # (the season's state turns "finished" a moment after its last match is counted).
        settled = done + int(season["matches_failed"]) >= int(season["matches_total"])
        if cached is not None and (
            cached[0] == done
            or (
                season["state"] == "running"
                and not settled
                and now - cached[1] < CHART_MIN_INTERVAL_S
            )
        ):
            return cached[2], cached[3]
        points = await league.season_checkpoints(self.conn, season_id)
        results: list[dict[str, Any]] = []
        if not points and done <= RESULTS_CHART_MAX:
            results = await league.season_results(self.conn, season_id)
        unit = league.text(await self.conn.hget(keys.season_tallies(season_id), "unit") or "")
        if results:
            unit = str((results[0].get("result") or {}).get("unit", ""))

        def draw() -> tuple[str, str]:
            if points:
                elo_series, score_series = history.from_checkpoints(season["bots"], points)
            else:
                elo_series = history.elo_over_time(season["bots"], results)
                score_series = history.score_over_time(season["bots"], results)
            elo = charts.line_chart(
                elo_series,
                title=f"Elo over time in {season_id}, with 95% intervals",
                x_label="matches counted",
                y_label="Elo",
            )
            score = charts.line_chart(
                score_series,
                title=f"{league.unit_words(unit) or 'score'} over time in {season_id}",
                x_label="matches counted",
                y_label=league.unit_words(unit) or "score",
            )
            return elo, score

        elo_svg, score_svg = await asyncio.to_thread(draw)
        self._charts[season_id] = (done, now, elo_svg, score_svg)
        return elo_svg, score_svg

    async def context(self, season_id: str) -> dict[str, Any]:
        """Everything the page shows of one season (the fragments' template context)."""
        season = await league.load_season(self.conn, season_id)
        if season is None:
            raise KeyError(season_id)
        standings: Standings | None = None
        with contextlib.suppress(ValueError):
            standings = await league.load_standings(self.conn, season_id)
        unit = str(standings.get("unit", "")) if standings else ""
        elo_svg, score_svg = await self._chart_svgs(season)
        return {
            "selected": season_id,
            "seasons": await league.load_seasons(self.conn),
            "platform": await league.load_platform(self.conn),
            "season": season,
            "standings": standings,
            "standings_behind": (
                standings is not None
                and int(standings.get("matches_done", 0)) < season["matches_done"]
            ),
            "rows": league.display_rows(standings),
            "columns": league.standings_columns(unit, league.is_duplicate(standings)),
            "ranked_by": league.ranked_by(standings),
            "unit": unit,
            "in_flight": await league.load_in_flight(self.conn, season_id),
            "throughput": await self._throughput(season),
            "recent": await league.load_recent_matches(self.conn, season=season_id),
            "elo_svg": elo_svg,
            "score_svg": score_svg,
        }

    async def snapshot_data(self, season_id: str) -> dict[str, Any]:
        """The live numbers as JSON (``/api/live/<season>``)."""
        ctx = await self.context(season_id)
        return {
            "season": ctx["season"],
            "rows": ctx["rows"],
            "in_flight": ctx["in_flight"],
            "throughput": ctx["throughput"],
            "recent": [{k: v for k, v in m.items() if k != "stats"} for m in ctx["recent"]],
            "updated_ms": int(time.time() * 1000),
        }

    async def snapshot_event(self, season_id: str) -> str:
        """One ``live`` event: each fragment's HTML, plus the numbers."""
        ctx = await self.context(season_id)

        def render() -> str:  # in a thread: the referee's loop also stamps bots' answers
            fragments = {name: self.web.render(f"_{name}.html", **ctx) for name in FRAGMENTS}
            payload = {
                "fragments": fragments,
                "progress": {
                    "done": ctx["season"]["matches_done"],
                    "failed": ctx["season"]["matches_failed"],
                    "total": ctx["season"]["matches_total"],
                    "state": ctx["season"]["state"],
                },
                "updated_ms": int(time.time() * 1000),
            }
            return f"event: live\ndata: {json.dumps(payload, separators=(',', ':'))}\n\n"

        return await asyncio.to_thread(render)

    # --- the event streams -------------------------------------------------------------------

    async def _poll(self, season_id: str, watch: _Watch) -> None:
        """One snapshot a second for all viewers of a season; a season that is not running
        and whose record did not change costs one read (nothing of it moves)."""
        last = ""
        still: dict[Any, Any] | None = None
        while watch.queues and not self._closed.is_set():
            try:
                raw: dict[Any, Any] = await self.conn.hgetall(keys.season(season_id))
                running = league.text(raw.get(b"state") or raw.get("state")) == "running"
                if running or raw != still or not last:
                    still = raw
                    event = await self.snapshot_event(season_id)
                else:
                    event = last
            except (redis.RedisError, KeyError) as exc:
                event = f"event: problem\ndata: {json.dumps(str(exc))}\n\n"
            if event != last:
                for queue in list(watch.queues):
                    if queue.full():
                        with contextlib.suppress(asyncio.QueueEmpty):
                            queue.get_nowait()  # a slow viewer gets the newest only
                    queue.put_nowait(event)
                last = event
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closed.wait(), INTERVAL_S)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        season_id = request.query.get("season", "")
        if not league.ID_PATTERN.match(season_id):
            return error(400, "pass the season to follow: /events?season=ID (see /api/seasons)")
        if not await self.conn.exists(keys.season(season_id)):
            return error(404, f"no season {season_id!r}: see /api/seasons")
        client = request.remote or "unknown"
        full = bool(self.slots.total) and self.slots.count >= self.slots.total
        try:
            self.slots.acquire(client)
        except LimitExceeded as exc:
            return refused(exc, 503 if full else 429)
        response = web.StreamResponse(
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-store",
                "X-Accel-Buffering": "no",
            }
        )
        queue: asyncio.Queue[str] = asyncio.Queue(maxsize=1)
        watch = self._watches.setdefault(season_id, _Watch())
        watch.queues.add(queue)
        if watch.task is None or watch.task.done():
            watch.task = asyncio.ensure_future(self._poll(season_id, watch))
        try:
            await response.prepare(request)
            await response.write(b"retry: 2000\n\n")
            while not self._closed.is_set():
                get = asyncio.ensure_future(queue.get())
                closed = asyncio.ensure_future(self._closed.wait())
                done, _ = await asyncio.wait(
                    {get, closed}, timeout=HEARTBEAT_S, return_when=asyncio.FIRST_COMPLETED
                )
                closed.cancel()
                if get in done:
                    await response.write(get.result().encode())
                else:
                    get.cancel()
                    if not self._closed.is_set():
                        await response.write(b": keep-alive\n\n")
        except (ConnectionResetError, RuntimeError):
            pass  # the viewer went away
        finally:
            self.slots.release(client)
            watch.queues.discard(queue)
        return response
