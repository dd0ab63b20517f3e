"""Reading the league from Redis for the pages: seasons, progress, standings, matches.

Every function takes an async Redis client (``decode_responses`` or not: values are
decoded here) and returns plain JSON-able dicts, so the HTML pages, the JSON API and the
live feed (server-sent events) show the same numbers.

One source per number, so that the page never disagrees with itself:

* a season's progress is its hash's counters (``matches_done`` / ``matches_failed``, which
  the season driver increments exactly once per counted match);
* "recent matches" of a season are the matches the driver has counted (the
  ``season_counted`` set), newest first: the same matches the progress counts; the driver
  counts a match only once no other table still plays its boards (its flight), so no list
  shows a board's result before that;
* in-flight matches are the season's matches in state ``queued`` or ``running``
  (``season_matches``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import time
from collections.abc import Mapping
from typing import Any, cast

import redis.asyncio as aredis

from referee import keys, lua, metrics_store
from referee.match.row import parse_row
from referee.match.season_row import BadSeasonRow, SeasonRow, Standings
from referee.metrics import WORKER_STALE_S
from referee.seasons.standings import ranking_words

log = logging.getLogger(__name__)

RECENT_MATCHES = 20
RECENT_SCAN = 500
"""How many of the newest finished matches are looked at to find a season's (or bot's)."""
MAX_SEASONS_LISTED = 50
MAX_IN_FLIGHT_LISTED = 20

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@+-]{0,199}$")
"""Season, match and bot ids the pages accept in a URL."""

UNIT_WORDS = {
    "chips": "chips",
    "penalty_points": "penalty points",
    "deals_won": "deals won",
    "match_points": "match points",
}


def unit_words(unit: str) -> str:
    """``deals_won`` -> ``deals won``: the unit as people read it."""
    return UNIT_WORDS.get(unit, unit.replace("_", " "))


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def to_int(value: Any, default: int = 0) -> int:
    try:
        return int(float(text(value)))
    except (TypeError, ValueError):
        return default


def _season_entry(season_id: str, raw: Mapping[Any, Any] | None) -> dict[str, Any] | None:
    """The season's row for a page; None for an empty hash (being deleted) or, with a log
    line, one :class:`SeasonRow` cannot read (no state, an unknown one)."""
    if not raw:
        return None
    try:
        row = SeasonRow.parse(season_id, raw)
    except (BadSeasonRow, ValueError) as exc:
        log.warning("season %s not shown: %s", season_id, exc)
        return None
    bots: list[str] = []
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        bots = [str(b) for b in json.loads(row.spec or "{}").get("bots", [])]
    total = row.matches_total
    return {
        "season": season_id,
        "game": row.game,
        "preset": row.preset,
        "state": str(row.state),
        "matches_total": total,
        "matches_done": row.matches_done,
        "matches_failed": row.matches_failed,
        "percent": round(100.0 * row.settled / total, 1) if total else 0.0,
        "created_ms": int(row.created_ms),
        "bots": bots,
    }


async def load_seasons(conn: aredis.Redis, limit: int = MAX_SEASONS_LISTED) -> list[dict[str, Any]]:
    """The newest seasons first: id, game, preset, state, progress counters, bots."""
    ids = [text(s) for s in await conn.zrevrange(keys.SEASONS, 0, limit - 1)]
    if not ids:
        return []
    async with conn.pipeline(transaction=False) as pipe:
        for season_id in ids:
            pipe.hgetall(keys.season(season_id))
        hashes = await pipe.execute()
    entries = (_season_entry(s, raw) for s, raw in zip(ids, hashes, strict=True))
    return [e for e in entries if e is not None]


async def load_season(conn: aredis.Redis, season_id: str) -> dict[str, Any] | None:
    return _season_entry(season_id, await conn.hgetall(keys.season(season_id)))


async def load_standings(conn: aredis.Redis, season_id: str) -> Standings | None:
    """The stored standings JSON (``ValueError`` if it is not JSON)."""
    raw = await conn.get(keys.season_standings(season_id))
    if raw is None:
        return None
    loaded = json.loads(raw)
    return cast(Standings, loaded) if isinstance(loaded, dict) else None


def display_rows(standings: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """Standings rows for people: bots that played first (in the stored order), then the
    bots with no match yet, unranked and with no rating shown (a prior is not a result)."""
    if not standings:
        return []
    played: list[dict[str, Any]] = []
    waiting: list[dict[str, Any]] = []
    for row in standings.get("rows", []):
        if not isinstance(row, dict):
            continue
        if to_int(row.get("matches"), 1) > 0:
            played.append({**row, "unrated": False})
        else:
            waiting.append({"bot": row.get("bot", ""), "matches": 0, "unrated": True})
    for rank, row in enumerate(played, start=1):
        row["rank"] = rank
    return played + waiting


def standings_columns(unit: str, duplicate: bool = False) -> list[tuple[str, str]]:
    """(key, title) of the standings columns: Elo with the game's score beside it (titled
    by its unit; a unit that is itself a column, ``deals_won``, is not shown twice), and
    ``dup_score`` in a field-duplicate season (``duplicate``)."""
    columns = [
        ("elo", "Elo"),
        ("score", unit_words(unit) or "score"),
        *([("dup_score", "dup score")] if duplicate else []),
        ("elo_interval", "95% interval"),
        ("live_elo", "live Elo"),
        ("openskill_ordinal", "OpenSkill"),
        ("matches", "matches"),
        ("deals", "deals"),
        ("deals_won", "deals won"),
        ("avg_place", "avg place"),
        ("illegal_passes", "illegal passes"),
        ("invalid_actions", "invalid actions"),
        ("timeouts", "timeouts"),
        ("fallbacks", "fallbacks"),
        ("autopilot_seats", "autopilot"),
    ]
    if unit == "deals_won":
        columns = [c for c in columns if c[0] != "deals_won"]
    return columns


def is_duplicate(standings: Mapping[str, Any] | None) -> bool:
    """Whether the standings compare hands across tables (some bot has ``dup_hands``)."""
    return any(
        isinstance(r, dict) and r.get("dup_hands") for r in (standings or {}).get("rows", [])
    )


def ranked_by(standings: Mapping[str, Any] | None) -> str:
    """What orders the standings, in words (``Elo``, ``chips per match`` ...)."""
    return ranking_words(standings, unit_words(str((standings or {}).get("unit", ""))))


def _result_summary(match_id: str, finished_ms: int, raw: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"match_id": match_id, "finished_ms": finished_ms}
    if raw:
        with contextlib.suppress(ValueError, TypeError, AttributeError, IndexError):
            result = parse_row(raw)
            seats = [str(s) for s in result.get("seats", [])]
            outcome = result.get("result") or {}
            unit = str(outcome.get("unit", ""))
            item.update(
                season=result.get("season", ""),
                game=result.get("game", ""),
                seats=seats,
                winners=[seats[w] for w in outcome.get("winners", []) if w < len(seats)],
                totals=outcome.get("totals", []),
                unit=unit,
                unit_words=unit_words(unit),
                stats=result.get("stats", []),
            )
    return item


async def load_recent_matches(
    conn: aredis.Redis,
    *,
    season: str | None = None,
    bot: str | None = None,
    limit: int = RECENT_MATCHES,
) -> list[dict[str, Any]]:
    """The newest finished matches, of one season (those its driver has counted) and/or
    with one bot at the table."""
    raw_entries = await conn.zrevrange(keys.MATCHES_RECENT, 0, RECENT_SCAN - 1, withscores=True)
    entries = [(text(e[0]), int(float(e[1]))) for e in raw_entries]
    if season is not None and entries:
        counted = await conn.smismember(keys.season_counted(season), [m for m, _ in entries])
        entries = [e for e, ok in zip(entries, counted, strict=True) if ok]
    if not entries:
        return []
    if bot is None:
        entries = entries[:limit]
    async with conn.pipeline(transaction=False) as pipe:
        for match_id, _ in entries:
            pipe.get(keys.match_result(match_id))
        results = await pipe.execute()
    items = [_result_summary(m, f, raw) for (m, f), raw in zip(entries, results, strict=True)]
    if season is None:  # a season's match is shown once its driver counted it (its flight)
        async with conn.pipeline(transaction=False) as pipe:
            for item in items:
                season_of = str(item.get("season") or "-")
                pipe.sismember(keys.season_counted(season_of), item["match_id"])
            counted = await pipe.execute()
        items = [i for i, ok in zip(items, counted, strict=True) if ok or not i.get("season")]
    out = []
    for item in items:
        if bot is not None and bot not in item.get("seats", []):
            continue
        out.append(item)
        if len(out) >= limit:
            break
    return out


async def load_platform(conn: aredis.Redis) -> dict[str, int]:
    bots = [text(b) for b in await conn.smembers(keys.BOTS)]
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
        "workers_alive": sum(1 for b in beats if now_ms - to_int(b) <= WORKER_STALE_S * 1000),
    }


async def load_in_flight(conn: aredis.Redis, season_id: str) -> dict[str, Any]:
    """The season's matches that are queued or running, with their seats (counted in Redis:
    a season's match hash has a field per scheduled match)."""
    queued, ids = await lua.IN_FLIGHT.run(conn, [keys.season_matches(season_id)], [])
    running = sorted(text(m) for m in ids)
    shown = running[:MAX_IN_FLIGHT_LISTED]
    async with conn.pipeline(transaction=False) as pipe:
        for match_id in shown:
            pipe.hgetall(keys.match_state(match_id))
        hashes = await pipe.execute() if shown else []
    matches = []
    for match_id, raw in zip(shown, hashes, strict=True):
        fields = {text(k): text(v) for k, v in (raw or {}).items()}
        seats = [s for s in fields.get("seats", "").split(",") if s]
        matches.append(
            {"match_id": match_id, "seats": seats, "attempt": to_int(fields.get("attempt"), 1)}
        )
    return {"running": len(running), "queued": queued, "matches": matches}


async def season_decisions(
    conn: aredis.Redis, season_id: str, stored: metrics_store.Stored | None = None
) -> int:
    """Decisions asked so far in the season (the workers' ``arena_decisions_total`` counters,
    or the committed matches' count if larger), as ``arena season watch`` shows. ``stored``:
    the counters already read (one read serves every season of a live feed's second)."""
    if stored is None:
        stored = await metrics_store.read_stored_async(conn)
    total = metrics_store.season_decisions(stored.counters, season_id)
    committed = to_int(await conn.hget(keys.season(season_id), "decisions"))
    return max(total, committed)


async def season_checkpoints(conn: aredis.Redis, season_id: str) -> list[dict[str, Any]]:
    """The season's stored history points (``referee.seasons.store.checkpoints``)."""
    out: list[dict[str, Any]] = []
    for raw in await conn.zrange(keys.season_checkpoints(season_id), 0, -1):
        with contextlib.suppress(ValueError):
            out.append(json.loads(text(raw)))
    return out


async def season_results(conn: aredis.Redis, season_id: str) -> list[dict[str, Any]]:
    """Every committed result the season's driver has counted, by finish time."""
    ids = sorted(text(m) for m in await conn.smembers(keys.season_counted(season_id)))
    out: list[dict[str, Any]] = []
    for start in range(0, len(ids), 200):
        chunk = ids[start : start + 200]
        for raw in await conn.mget([keys.match_result(m) for m in chunk]):
            if raw is not None:
                with contextlib.suppress(ValueError):
                    out.append(dict(parse_row(raw)))
    out.sort(key=lambda r: (float(r.get("finished_ms", 0.0)), str(r.get("match_id"))))
    return out
