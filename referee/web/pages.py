"""The HTML pages: the league, a bot, a replay."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from aiohttp import web

from referee import keys, records
from referee.errors import RecordCorrupt, RecordMissing, RecordStoreError
from referee.seasons import embargo
from referee.web import charts, league
from referee.web.hosting import LANGUAGE_CHOICES
from referee.web.records import RecordError, read_record
from referee.web.replay import replay_data, replay_text
from referee.web.responses import error, json_response

if TYPE_CHECKING:
    from referee.web.app import ArenaWeb

BOT_RECORDS = 40
"""How many of a bot's newest matches its page reads records of (penalties, think times)."""
RUN_EVENTS = 10
"""Sandbox events of a hosted bot its page shows (newest first)."""
BOT_SUMMARIES = 4096
"""(match, bot) summaries a web server keeps (the least recently used go first)."""
BOT_PAGE_TTL_S = 2.0
"""A bot's page whose inputs (seasons, standings, recent matches, records) did not change is
served again for this long."""
BOT_PAGES = 256
"""Bot pages kept (the oldest built go first)."""

THINK_BUCKETS: tuple[tuple[float, str], ...] = (
    (1.0, "<1 ms"),
    (5.0, "1-5 ms"),
    (20.0, "5-20 ms"),
    (100.0, "20-100 ms"),
    (500.0, "0.1-0.5 s"),
    (2000.0, "0.5-2 s"),
    (float("inf"), "≥2 s"),
)


def think_histogram(times_ms: list[float]) -> dict[str, int]:
    counts = dict.fromkeys((label for _, label in THINK_BUCKETS), 0)
    for t in times_ms:
        for top, label in THINK_BUCKETS:
            if t < top:
                counts[label] += 1
                break
    return counts


def wants_html(request: web.Request) -> bool:
    return "text/html" in request.headers.get("Accept", "")


@dataclass(frozen=True)
class _Summary:
    """What a bot's page shows of one committed record for that bot."""

    season: str
    penalties: tuple[dict[str, Any], ...]
    think: tuple[float, ...]


class _Summaries:
    """Each committed record read once per bot: a committed record never changes (the
    commit is fenced, exactly once: docs/workers.md), so a page flood costs its Redis reads
    and a render, not the parsing of 40 records of up to hundreds of kB each. Used from
    the page threads (a lock)."""

    def __init__(self, size: int = BOT_SUMMARIES) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, str], _Summary] = OrderedDict()

    def has(self, match_id: str, bot: str) -> bool:
        with self._lock:
            return (match_id, bot) in self._kept

    def get(self, match_id: str, bot: str) -> _Summary | None:
        with self._lock:
            summary = self._kept.get((match_id, bot))
            if summary is not None:
                self._kept.move_to_end((match_id, bot))
            return summary

    def parse(self, match_id: str, bot: str, raw: Any) -> _Summary | None:
        """Read ``bot``'s penalties and think times off a record's JSON (None: not a
        record); kept for the next page."""
        try:
            record = records.parse_stored(raw)
        except RecordStoreError:
            return None
        spec = record.get("spec")
        season = str(spec.get("season") or "") if isinstance(spec, Mapping) else ""
        penalties: list[dict[str, Any]] = []
        think: list[float] = []
        try:
            view = read_record(record)
        except RecordError:
            view = None
        mine = {i for i, s in enumerate(view.seats) if s == bot} if view is not None else set()
        for step in view.steps if view is not None else ():
            if step.get("seat") not in mine or step.get("takeover"):
                continue
            if step.get("think_ms") is not None and step.get("source") == "bot":
                think.append(float(step["think_ms"]))
            if step.get("fallback"):  # its SDK or bridge answered: the bot's code failed
                penalties.append(
                    {
                        "match_id": match_id,
                        "deal": int(step.get("deal", 0)) + 1,
                        "kind": "fallback",
                        "reason": str(step["fallback"]),
                        "message": "the bot's SDK or bridge answered for it "
                        f"({step.get('status', '')})",
                        "action": step.get("answer") or "",
                    }
                )
            for event in step.get("events", []):
                if event.get("seat") in mine and event.get("kind") in PENALTY_KINDS:
                    penalties.append(
                        {
                            "match_id": match_id,
                            "deal": int(event.get("deal", 0)) + 1,
                            "kind": event.get("kind"),
                            "reason": event.get("reason") or step.get("reason") or "",
                            "message": (event.get("detail") or {}).get("message", ""),
                            "action": event.get("action", ""),
                        }
                    )
        summary = _Summary(season, tuple(penalties), tuple(think))
        with self._lock:
            self._kept[(match_id, bot)] = summary
            while len(self._kept) > self._size:
                self._kept.popitem(last=False)
        return summary


PENALTY_KINDS = frozenset({"penalty", "invalid_action", "illegal_pass", "timeout", "eliminated"})


class Pages:
    def __init__(self, web_app: ArenaWeb) -> None:
        self.web = web_app
        self._summaries = _Summaries()
        # bot -> (the page's inputs, built at, HTML): a flood of one page renders it once
        self._bot_pages: OrderedDict[str, tuple[Any, float, str]] = OrderedDict()

    @property
    def conn(self) -> Any:
        return self.web.conn

    async def index(self, request: web.Request) -> web.Response:
        seasons = await league.load_seasons(self.conn)
        selected = request.query.get("season") or (seasons[0]["season"] if seasons else None)
        if selected is not None and not league.ID_PATTERN.match(selected):
            return error(400, f"season id {selected!r} is not valid: letters, digits, ._:@+-")
        ctx: dict[str, Any] = {
            "seasons": seasons,
            "selected": selected,
            "platform": await league.load_platform(self.conn),
        }
        if selected is not None:
            try:
                ctx = await self.web.live.context(selected)
            except KeyError:
                known = ", ".join(s["season"] for s in seasons[:10]) or "none yet"
                return error(404, f"no season {selected!r}; seasons: {known}")
        if selected is None:
            ctx["recent"] = await league.load_recent_matches(self.conn)
        return self.web.html("index.html", **ctx)

    async def bot(self, request: web.Request) -> web.Response:
        """A bot's page. Its Redis reads are awaited here; the records, parsed once each
        (a committed record never changes: :class:`_Summaries`), and the HTML are done in a
        thread: the referee's loop also stamps the bots' answers."""
        name = request.match_info["name"]
        if not league.ID_PATTERN.match(name):
            return error(400, f"bot name {name!r} is not valid: letters, digits, ._:@+-")
        registered = bool(await self.conn.sismember(keys.BOTS, name))
        seasons = [s for s in await league.load_seasons(self.conn) if name in s["bots"]]
        standing: dict[str, dict[str, Any]] = {}
        for season in seasons:
            for row in league.display_rows(
                await league.load_standings(self.conn, season["season"])
            ):
                if row.get("bot") == name:
                    standing[season["season"]] = row
        if not registered and not seasons:
            return error(404, f"no bot {name!r}: see the standings on /")
        matches = await league.load_recent_matches(self.conn, bot=name, limit=BOT_RECORDS)
        missing = [m["match_id"] for m in matches if not self._summaries.has(m["match_id"], name)]
        raws: dict[str, Any] = {}
        if missing:
            fetched = await self.conn.mget([keys.match_record(m) for m in missing])
            raws = dict(zip(missing, fetched, strict=True))
        versions, active = await self.web.hosting.versions(name)
        run_events = [
            json.loads(raw)
            for raw in await self.conn.lrange(keys.hosted_run_events(name), 0, RUN_EVENTS - 1)
        ]
        context = {
            "name": name,
            "registered": registered,
            "seasons": seasons,
            "standing": standing,
            "matches": matches,
            "hosting": self.web.hosting.enabled and registered,
            "versions": versions,
            "active_version": active,
            "languages": LANGUAGE_CHOICES,
            "run_events": run_events,
        }
        # The same inputs and no new record within BOT_PAGE_TTL_S: the same page (a seal
        # lifted meanwhile shows at most that much later).
        key = (repr(context), tuple(m for m in missing if raws.get(m) is not None))
        now = time.monotonic()
        cached = self._bot_pages.get(name)
        if cached is not None and cached[0] == key and now - cached[1] <= BOT_PAGE_TTL_S:
            return web.Response(text=cached[2], content_type="text/html")
        html = await asyncio.to_thread(self._bot_html, name, matches, raws, context)
        self._bot_pages[name] = (key, now, html)
        self._bot_pages.move_to_end(name)
        while len(self._bot_pages) > BOT_PAGES:
            self._bot_pages.popitem(last=False)
        return web.Response(text=html, content_type="text/html")

    def _bot_html(
        self,
        name: str,
        matches: list[dict[str, Any]],
        raws: Mapping[str, Any],
        context: dict[str, Any],
    ) -> str:
        """The records' penalties and think times, and the page (runs in a thread)."""
        penalties: list[dict[str, Any]] = []
        think: list[float] = []
        read = 0
        for m in matches:
            match_id = m["match_id"]
            summary = self._summaries.get(match_id, name)
            if summary is None and raws.get(match_id) is not None:
                summary = self._summaries.parse(match_id, name, raws[match_id])
            if summary is None:
                continue
            read += 1
            if embargo.seal_of(self.web.sync_conn, match_id, summary.season).sealed:
                continue  # a sealed match: its moves are not shown yet (counts are)
            penalties.extend(summary.penalties)
            think.extend(summary.think)
        reasons = Counter(p["reason"] or p["kind"] for p in penalties)
        svg = charts.histogram(
            think_histogram(think),
            title=f"think time of {name} over its last {read} matches",
            x_label="think time per decision",
        )
        return self.web.render(
            "bot.html",
            **context,
            penalties=penalties[:200],
            reasons=sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])),
            think_svg=svg,
            decisions=len(think),
        )

    async def _record(self, match_id: str) -> dict[str, Any] | web.Response:
        """The committed record, or the error to answer: 403 while it is sealed (a table
        still plays its boards: :mod:`referee.seasons.embargo`)."""
        if not league.ID_PATTERN.match(match_id):
            return error(400, f"match id {match_id!r} is not valid: letters, digits, ._:@+-")
        try:
            record = await records.aload_record(self.conn, match_id)
        except (RecordMissing, RecordCorrupt) as exc:
            return error(500, f"the record of match {match_id!r} is damaged: {exc}")
        except RecordStoreError as exc:
            return error(503, f"the record store is away, try again: {exc}")
        if record is None:
            return error(404, f"no committed record for match {match_id!r}")
        seal = await self._seal(match_id, record)
        if seal.sealed:
            return error(403, seal.message())
        return record

    async def _seal(self, match_id: str, record: Mapping[str, Any]) -> embargo.Seal:
        spec = record.get("spec")
        season = str(spec.get("season") or "") if isinstance(spec, Mapping) else ""
        return await asyncio.to_thread(embargo.seal_of, self.web.sync_conn, match_id, season)

    async def replay(self, request: web.Request) -> web.Response:
        match_id = request.match_info["match_id"]
        as_text = match_id.endswith(".txt") or request.query.get("format") == "text"
        match_id = match_id.removesuffix(".txt")
        if as_text or not wants_html(request):
            text = await self._rendered("text", match_id, replay_text)
            if isinstance(text, web.Response):
                return text
            return web.Response(text=text, content_type="text/plain")
        record = await self._record(match_id)
        if isinstance(record, web.Response):
            if record.status == 403:
                return await self._sealed_page(match_id)
            return record
        return self.web.html("replay.html", match_id=match_id)

    async def _rendered(
        self, kind: str, match_id: str, render: Callable[[dict[str, Any]], Any]
    ) -> Any:
        """``render(record)`` of a committed, unsealed match, or the error to answer. A
        committed record never changes, so the rendering is kept (``Limits.replay_cache``);
        the seal is checked on every read."""
        cached = self.web.replays.get((kind, match_id))
        if cached is not None:
            season, rendering = cached
            seal = await asyncio.to_thread(embargo.seal_of, self.web.sync_conn, match_id, season)
            return error(403, seal.message()) if seal.sealed else rendering
        record = await self._record(match_id)
        if isinstance(record, web.Response):
            return record
        rendering = await asyncio.to_thread(render, record)
        spec = record.get("spec")
        season = str(spec.get("season") or "") if isinstance(spec, Mapping) else ""
        self.web.replays.put((kind, match_id), season, rendering)
        return rendering

    async def _sealed_page(self, match_id: str) -> web.Response:
        """The page a browser gets for a sealed replay: why, and when it opens (403)."""
        season = str(await self.conn.hget(keys.match_state(match_id), "season") or b"", "utf-8")
        seal = await asyncio.to_thread(embargo.seal_of, self.web.sync_conn, match_id, season)
        return self.web.html(
            "sealed.html", status=403, match_id=match_id, season=season, message=seal.message()
        )

    async def api_replay(self, request: web.Request) -> web.Response:
        match_id = request.match_info["match_id"]
        try:
            data = await self._rendered("json", match_id, replay_data)
        except (RecordError, ValueError) as exc:
            return error(500, f"this record cannot be replayed: {exc}")
        if isinstance(data, web.Response):
            return data
        return json_response(200, data)
