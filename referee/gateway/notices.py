"""Season notices on the bots' own streams (docs/PROTOCOL.md section 2, ``Notice`` codes).

:func:`forward_season_notices` runs in every referee: it listens to the league events the
season store publishes on ``keys.EVENTS_CHANNEL`` (``season_started``,
``season_finished``, ``season_cancelled``) and tells every bot of that season that has a
stream on this referee, with :func:`notify_bot` ("notify the sessions of bot X"). The
``season_end`` notice carries the bot's row of the final standings.

Any other process may notify one bot through ``keys.BOT_NOTICES_CHANNEL`` with
:func:`bot_notice_payload` (``arena bot check`` sends its season-notice scenario this way).

Pub/sub is best effort: a bot that was not connected when its season ended gets no
notice; it can ask the League API (``GetSeason``/``GetStandings``, readable without the
admin token) when it reconnects.
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

if TYPE_CHECKING:
    from referee.gateway.relay import Hub

log = logging.getLogger(__name__)

SEASON_START = "season_start"
SEASON_END = "season_end"
DRAINING = "draining"
NOTICE_CODES = {
    DRAINING: "this referee is shutting down: answer the requests you hold, then reconnect "
    "(to it or another referee) when the stream ends",
    SEASON_START: "a season you are entered in started",
    SEASON_END: "a season you are entered in ended (finished or cancelled); `standing` is "
    "your final row",
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


async def _on_event(hub: Hub, client: redis.asyncio.Redis, event: Mapping[str, Any]) -> int:
    code_state = _EVENT_CODES.get(str(event.get("kind", "")))
    season = str(event.get("season", ""))
    if code_state is None or not season:
        return 0
    code, state = code_state
    local = set(hub.sessions)
    if not local:
        return 0
    info = cast(dict[str, str], await client.hgetall(keys.season(season)))
    try:
        bots = [str(b) for b in json.loads(info.get("spec", "{}")).get("bots", [])]
    except (ValueError, AttributeError):
        return 0
    wanted = [b for b in bots if b in local]
    if not wanted:
        return 0
    standings = None
    if code == SEASON_END:
        raw = await client.get(keys.season_standings(season))
        standings = json.loads(raw) if raw else None
    sent = 0
    for bot in wanted:
        message = season_notice(code, season, info.get("game", ""), state, standings, bot)
        sent += await notify_bot(hub, bot, message)
    return sent


async def forward_season_notices(
    hub: Hub, pubsub_client: redis.asyncio.Redis, client: redis.asyncio.Redis
) -> None:
    """Forward season starts and ends to the bots' streams until cancelled."""
    while True:
        pubsub = pubsub_client.pubsub(ignore_subscribe_messages=True)
        try:
            await pubsub.subscribe(keys.EVENTS_CHANNEL, keys.BOT_NOTICES_CHANNEL)
            while True:
                message = await pubsub.get_message(timeout=1.0)
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
            log.warning("season notices: Redis unavailable (%s); retrying", exc)
            await asyncio.sleep(1.0)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
