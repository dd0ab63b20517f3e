"""Season notices on a bot's stream and ``Hello.games`` at season creation.

A referee in-process, raw bot streams, and the real season store (its pub/sub events feed
referee.gateway.notices)."""

from __future__ import annotations

import asyncio

import pytest
import redis

from arena.v1 import bot_pb2
from referee import keys
from referee.errors import ConfigError
from referee.gateway.notices import NOTICE_CODES, bot_notice_payload, season_notice
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from tests.gateway.helpers import RawBot, register, running_referee


def spec(name: str, game: str, entrants: tuple[str, ...], preset: str) -> SeasonSpec:
    return SeasonSpec(
        name=name,
        game=game,
        bots=entrants,
        table_size=len(entrants),
        preset=preset,
        deals_per_match=1,
        seed=3,
        options=SeasonOptions(duplicate=False),
    )


async def say_hello(bot: RawBot, games: list[str]) -> None:
    await bot.send(
        bot_pb2.BotMessage(
            hello=bot_pb2.Hello(protocol_version=1, games=games, max_concurrent_matches=1)
        )
    )
    assert (await bot.read()).WhichOneof("msg") == "welcome"


def test_season_start_and_end_reach_the_bots_stream(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    tokens = {name: register(client, name) for name in ("a", "b", "c")}

    async def scenario() -> None:
        async with running_referee(redis_url) as referee:
            bot = RawBot(referee.port, tokens["a"])
            try:
                await say_hello(bot, ["sevens"])
                store.create_season(client, spec("s-notice", "sevens", ("a", "b", "c"), "sevens"))
                await asyncio.sleep(0.3)  # the referee's subscription is live by now
                store.start_season(client, "s-notice")
                start = await bot.read_kind("notice")
                assert (start.code, start.season, start.game) == (
                    "season_start",
                    "s-notice",
                    "sevens",
                )
                store.cancel_season(client, "s-notice")
                end = await bot.read_kind("notice")
                assert (end.code, end.season, end.season_state) == (
                    "season_end",
                    "s-notice",
                    "cancelled",
                )
                # Cancelled before any match: the row is there, with no matches.
                assert (end.standing.bot, end.standing.of, end.standing.matches) == ("a", 3, 0)
                assert "after 0 match(es)" in end.message
            finally:
                await bot.close()

    try:
        asyncio.run(scenario())
    finally:
        client.close()


def test_season_end_notice_carries_the_bots_row() -> None:
    standings = {
        "unit": "chips",
        "rows": [
            {"bot": "x", "rank": 1, "matches": 4, "deals": 16, "deals_won": 9, "score": 12,
             "avg_place": 1.6, "elo": 1540.5, "elo_low": 1500.0, "elo_high": 1580.0,
             "illegal_passes": 0, "invalid_actions": 1, "timeouts": 2, "autopilot_seats": 0},
            {"bot": "y", "rank": 2, "matches": 4, "elo": 1459.5},
        ],
    }  # fmt: skip
    message = season_notice("season_end", "s9", "sevens", "finished", standings, "x")
    row = message.notice.standing
    assert (row.bot, row.rank, row.of, row.unit) == ("x", 1, 2, "chips")
    assert (row.deals_won, row.score, row.elo, row.timeouts) == (9, 12.0, 1540.5, 2)
    assert "ranked 1 of 2" in message.notice.message
    assert set(NOTICE_CODES) == {"draining", "season_start", "season_end", "hosted"}


def test_hello_games_are_honoured_at_season_creation(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    tokens = {name: register(client, name) for name in ("only-sedma", "any1", "any2", "any3")}

    async def connect(name: str, games: list[str]) -> None:
        async with running_referee(redis_url) as referee:
            bot = RawBot(referee.port, tokens[name])
            try:
                await say_hello(bot, games)
            finally:
                await bot.close()

    try:
        asyncio.run(connect("only-sedma", ["sedma"]))
        asyncio.run(connect("any1", []))
        sevens = spec("s-games", "sevens", ("only-sedma", "any1", "any2"), "sevens")
        with pytest.raises(ConfigError, match=r"only-sedma declared sedma .*Leave them out"):
            store.create_season(client, sevens)
        assert store.bots_declining(client, ["only-sedma", "any1", "any2"], "sedma") == []
        store.create_season(client, spec("s-sedma", "sedma", ("only-sedma", "any1"), "sedma-2"))
        store.create_season(client, spec("s-ok", "sevens", ("any1", "any2", "any3"), "sevens"))
    finally:
        client.close()


def test_a_notice_for_one_bot_reaches_only_its_streams(redis_url: str) -> None:
    """keys.BOT_NOTICES_CHANNEL (what `arena bot check` sends): the named bot's streams get
    the notice, another bot's do not; malformed payloads are dropped."""
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    tokens = {name: register(client, name) for name in ("target", "other")}

    async def scenario() -> None:
        async with running_referee(redis_url) as referee:
            target, other = (
                RawBot(referee.port, tokens["target"]),
                RawBot(referee.port, tokens["other"]),
            )
            try:
                await say_hello(target, [])
                await say_hello(other, [])
                await asyncio.sleep(0.3)
                client.publish(keys.BOT_NOTICES_CHANNEL, "not json")
                client.publish(keys.BOT_NOTICES_CHANNEL, bot_notice_payload("target", {"code": 5}))
                fields = {
                    "code": "season_end",
                    "season": "s7",
                    "season_state": "finished",
                    "standing": {"bot": "target", "rank": 2, "of": 4, "elo": 1490.5},
                }
                assert client.publish(
                    keys.BOT_NOTICES_CHANNEL, bot_notice_payload("target", fields)
                )
                notice = await target.read_kind("notice")
                assert (notice.code, notice.standing.rank, notice.standing.elo) == (
                    "season_end",
                    2,
                    1490.5,
                )
                with pytest.raises(asyncio.TimeoutError):
                    await other.read_kind("notice", timeout=0.5)
            finally:
                await target.close()
                await other.close()

    try:
        asyncio.run(scenario())
    finally:
        client.close()
