"""Season notices on the bots' own streams (docs/PROTOCOL.md section 2, ``Notice`` codes).

:func:`forward_season_notices` runs in every referee: it listens to the league events the
season store publishes on ``keys.EVENTS_CHANNEL`` (``season_started``,
``season_finished``, ``season_cancelled``) and tells every bot of that season that has a
stream on this referee, with :func:`notify_bot` ("notify the sessions of bot X"). The
``season_end`` notice carries the bot's row of the final standings.

Any other process may notify one bot through ``keys.BOT_NOTICES_CHANNEL`` with
:func:`bot_notice_payload` (``arena bot check`` sends its season-notice scenario this way).

A ``season_end`` is also kept for every bot of the season in
``keys.bot_pending_notices`` (the season store writes it before it publishes the event;
bounded and expiring, ``store.PENDING_NOTICES_*``). Whoever delivers it first removes it
(LREM is the claim, so one referee sends it, once): the referee that hears the event, for
bots with a stream here, or, for a bot that was not connected then, the referee where it
connects next (:func:`deliver_pending`, which looks at new streams every
:data:`PENDING_EVERY_S`). A notice that reached no stream goes back to the list.
``season_start`` stays best effort (pub/sub): a bot that missed it learns of the season
from its first match.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import redis.asyncio
from google.protobuf import json_format
from redis.exceptions import RedisError

from arena.v1 import bot_pb2
from referee import keys
from referee.aio import raise_if_cancelling
from referee.match.season_row import BadSeasonRow, SeasonRow

if TYPE_CHECKING:
    from referee.gateway.hub import Hub

log = logging.getLogger(__name__)

SEASON_START = "season_start"
SEASON_END = "season_end"
DRAINING = "draining"
HOSTED = "hosted"  # sent by the bot supervisor (referee.hosting.supervisor)
NOTICE_CODES = {
    DRAINING: "this referee is shutting down: answer the requests you hold, then reconnect "
    "(to it or another referee) when the stream ends",
    SEASON_START: "a season you are entered in started",
    SEASON_END: "a season you are entered in ended (finished or cancelled); `standing` is "
    "your final row",
    HOSTED: "something happened to your hosted bot's sandbox (an exit, a limit hit); "
    "`arena bot events NAME` lists them",
}
"""Every Notice code a referee sends, with its meaning (docs/PROTOCOL.md repeats them)."""

_EVENT_CODES = {
    "season_started": (SEASON_START, "running"),
    "season_finished": (SEASON_END, "finished"),
    "season_cancelled": (SEASON_END, "cancelled"),
}

_STANDING_INTS = (
    "matches",
    "deals",
    "deals_won",
    "illegal_passes",
    "invalid_actions",
    "timeouts",
    "autopilot_seats",
    "fallbacks",
)
_STANDING_FLOATS = ("avg_place", "score", "elo", "elo_low", "elo_high")


def standing_to_proto(row: Mapping[str, Any], of: int, unit: str) -> Any:
    """A standings row (referee.seasons.standings) -> ``arena.v1.SeasonStanding``."""
    standing = bot_pb2.SeasonStanding(
        bot=str(row.get("bot", "")), rank=int(row.get("rank", 0)), of=of, unit=unit
    )
    for name in _STANDING_INTS:
        setattr(standing, name, max(0, int(row.get(name, 0))))
    for name in _STANDING_FLOATS:
        setattr(standing, name, float(row.get(name, 0.0)))
    return standing


def season_notice(
    code: str,
    season: str,
    game: str,
    state: str,
    standings: Mapping[str, Any] | None = None,
    bot: str = "",
) -> Any:
    """The ``RefereeMessage(notice=...)`` of a season start or end for ``bot``."""
    notice = bot_pb2.Notice(code=code, season=season, game=game)
    if code == SEASON_START:
        notice.message = f"season {season} ({game}) started"
        return bot_pb2.RefereeMessage(notice=notice)
    notice.season_state = state
    rows = list((standings or {}).get("rows", []))  # every entrant, even with no match
    mine = next((r for r in rows if r.get("bot") == bot), None)
    if mine is None:
        notice.message = f"season {season} ({game}) {state}; you played no match in it"
    else:
        unit = str((standings or {}).get("unit", ""))
        notice.standing.CopyFrom(standing_to_proto(mine, len(rows), unit))
        notice.message = (
            f"season {season} ({game}) {state}: you ranked {mine.get('rank')} of {len(rows)} "
            f"after {mine.get('matches', 0)} match(es)"
        )
    return bot_pb2.RefereeMessage(notice=notice)


async def notify_bot(hub: Hub, bot: str, message: Any) -> int:
    """Write ``message`` to every stream of ``bot`` this referee holds; returns how many
    got it (a stream that is closing is skipped)."""
    sent = 0
    for session in list(hub.sessions.get(bot, [])):
        try:
            await session.send_notice(message)
            sent += 1
        except Exception as exc:  # the stream is ending: its bot reconnects elsewhere
            log.info("could not send a notice to %s: %r", bot, exc)
    return sent


def bot_notice_payload(bot: str, notice: Mapping[str, Any]) -> str:
    """The ``keys.BOT_NOTICES_CHANNEL`` message that sends ``notice`` (the JSON form of a
    ``Notice``: code, message, season, game, season_state, standing) to ``bot``'s streams."""
    return json.dumps({"bot": bot, "notice": dict(notice)}, separators=(",", ":"))


async def _on_bot_notice(hub: Hub, data: Mapping[str, Any]) -> int:
    bot = data.get("bot")
    fields = data.get("notice")
    if not isinstance(bot, str) or not isinstance(fields, Mapping):
        return 0
    try:
        notice = json_format.ParseDict(dict(fields), bot_pb2.Notice(), ignore_unknown_fields=True)
    except json_format.ParseError as exc:
        log.warning("dropped a malformed notice for %s: %s", bot, exc)
        return 0
    return await notify_bot(hub, bot, bot_pb2.RefereeMessage(notice=notice))


async def _season_row(client: redis.asyncio.Redis, season: str) -> SeasonRow | None:
    """The season's row; None when its hash is gone, or (with a log line) unreadable."""
    fields = cast(dict[str, str], await client.hgetall(keys.season(season)))
    if not fields:
        return None
    try:
        return SeasonRow.parse(season, fields)
    except BadSeasonRow as exc:
        log.warning("%s; no notice read from it", exc)
        return None


async def _on_event(hub: Hub, client: redis.asyncio.Redis, event: Mapping[str, Any]) -> int:
    code_state = _EVENT_CODES.get(str(event.get("kind", "")))
    season = str(event.get("season", ""))
    if code_state is None or not season:
        return 0
    code, state = code_state
    local = set(hub.sessions)
    if not local:
        return 0
    row = await _season_row(client, season)
    try:
        bots = [str(b) for b in json.loads(row.spec or "{}").get("bots", [])] if row else []
    except (ValueError, AttributeError):
        return 0
    wanted = [b for b in dict.fromkeys(bots) if b in local]
    if not wanted:
        return 0
    if code == SEASON_END:
        sent = 0
        for bot in wanted:
            sent += await _deliver_season_end(hub, client, bot, season)
        return sent
    sent = 0
    for bot in wanted:
        message = season_notice(code, season, row.game if row else "", state, None, bot)
        sent += await notify_bot(hub, bot, message)
    return sent


PENDING_EVERY_S = 0.5
"""How often :func:`deliver_pending` looks for streams opened since its last look."""


async def _deliver_season_end(hub: Hub, client: redis.asyncio.Redis, bot: str, season: str) -> int:
    """Claim the bot's pending ``season_end`` of ``season`` and send it to the bot's streams
    here; 0 when another referee claimed it first (or it was delivered already). A notice
    no stream took is put back for the next connection."""
    from referee.seasons.store import PENDING_NOTICES_TTL_S, season_end_entry

    key = keys.bot_pending_notices(bot)
    entry = season_end_entry(season)
    if not int(await client.lrem(key, 1, entry)):
        return 0
    sent = 0
    try:
        row = await _season_row(client, season)
        raw = await client.get(keys.season_standings(season))
        standings = json.loads(raw) if raw else None
        state = str(row.state) if row else "finished"
        game = row.game if row else ""
        message = season_notice(SEASON_END, season, game, state, standings, bot)
        sent = await notify_bot(hub, bot, message)
    finally:
        if not sent:  # no stream took it: keep it for the bot's next connection
            async with client.pipeline(transaction=False) as pipe:
                pipe.lpush(key, entry)
                pipe.expire(key, PENDING_NOTICES_TTL_S)
                await pipe.execute()
    return sent


async def deliver_pending(hub: Hub, client: redis.asyncio.Redis, seen: set[str]) -> int:
    """Send the pending notices of every bot that opened a stream here since the last call
    (``seen``: the session ids already looked at, kept to the open ones); returns how many
    streams got one."""
    fresh: set[str] = set()
    current: set[str] = set()
    for bot, sessions in list(hub.sessions.items()):
        for session in sessions:
            current.add(session.session_id)
            if session.session_id not in seen:
                fresh.add(bot)
    seen.intersection_update(current)
    seen.update(current)
    sent = 0
    for bot in sorted(fresh):
        entries = await client.lrange(keys.bot_pending_notices(bot), 0, -1)
        for raw in entries:
            entry = raw.decode() if isinstance(raw, bytes) else str(raw)
            kind, _, season = entry.partition(":")
            if kind == SEASON_END and season:
                sent += await _deliver_season_end(hub, client, bot, season)
    return sent


async def _deliver_pending_forever(hub: Hub, client: redis.asyncio.Redis) -> None:
    seen: set[str] = set()
    failing = False
    while True:
        try:
            await deliver_pending(hub, client, seen)
            failing = False
        except RedisError as exc:
            if not failing:  # once per outage, not every PENDING_EVERY_S
                log.warning("pending notices: Redis unavailable (%s); retrying", exc)
            failing = True
            seen.clear()  # look at every stream again once Redis is back
        await asyncio.sleep(PENDING_EVERY_S)


async def forward_season_notices(
    hub: Hub, pubsub_client: redis.asyncio.Redis, client: redis.asyncio.Redis
) -> None:
    """Forward season starts and ends to the bots' streams, and deliver the pending
    notices of bots that connect, until cancelled."""
    pending = asyncio.ensure_future(_deliver_pending_forever(hub, client))
    try:
        await _forward_events(hub, pubsub_client, client)
    finally:
        pending.cancel()


async def _forward_events(
    hub: Hub, pubsub_client: redis.asyncio.Redis, client: redis.asyncio.Redis
) -> None:
    while True:
        pubsub = pubsub_client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(keys.EVENTS_CHANNEL, keys.BOT_NOTICES_CHANNEL)
            raise_if_cancelling()
            while True:
                message = await pubsub.get_message(timeout=1.0)
                raise_if_cancelling()
                if message is None:
                    continue
                try:
                    event = json.loads(message.get("data") or "")
                except (TypeError, ValueError):
                    continue
                if not isinstance(event, dict):
                    continue
                if message.get("channel") == keys.BOT_NOTICES_CHANNEL:
                    await _on_bot_notice(hub, event)
                else:
                    await _on_event(hub, client, event)
        except RedisError as exc:
            raise_if_cancelling()
            log.warning("season notices: Redis unavailable (%s); retrying", exc)
            await asyncio.sleep(1.0)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()
