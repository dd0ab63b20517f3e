"""Sizes are checked where a season is made, listings survive what was
stored before, and what a bot or a user wrote reaches the terminal harmless.

Real referee (in-process, real gRPC on loopback, the session's real Redis), the real
League API and the real ``arena`` command line.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import bot_pb2, league_pb2, league_pb2_grpc
from referee import bots, keys
from referee.cli.main import main
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from tests.gateway.helpers import RawBot, running_referee

ADMIN = (("authorization", "Bearer s3cret"),)
BOTS = ("lim-a", "lim-b", "lim-c", "lim-d")


def _run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 120))


async def _refused(call: Any) -> tuple[grpc.StatusCode, str, float]:
    started = time.monotonic()
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    return caught.value.code(), caught.value.details(), time.monotonic() - started


def test_the_league_api_refuses_sizes_out_of_range(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """``move_ms = 5000000000``, ``deals 200000``, ``rounds 100000``: each refused at once
    with one line naming the field, the value and the allowed range; listings still work."""
    for name in BOTS:
        bots.register(redis_client, name)
    toml = (
        f'name = "huge-clock"\ngame = "sevens"\npreset = "fan-tan"\nbots = {json.dumps(BOTS)}\n'
        "deals_per_match = 4\n[time_control]\nmove_ms = 5000000000\n"
    )
    fields: dict[str, Any] = {"game": "sevens", "preset": "fan-tan", "bots": BOTS, "table_size": 4}

    async def scenario() -> None:
        async with (
            running_referee(redis_url, admin_token="s3cret") as ref,
            grpc.aio.insecure_channel(f"127.0.0.1:{ref.port}") as channel,
        ):
            league = league_pb2_grpc.LeagueStub(channel)
            cases = [
                (
                    league_pb2.CreateSeasonRequest(toml=toml),
                    "time_control.move_ms = 5000000000: use at most 600000 ms "
                    "(the range is 1 .. 600000)",
                ),
                (
                    league_pb2.CreateSeasonRequest(
                        name="many-deals", deals_per_match=200_000, **fields
                    ),
                    "deals_per_match = 200000: use at most 100 (the range is 0 .. 100)",
                ),
                (
                    league_pb2.CreateSeasonRequest(
                        name="many-rounds",
                        deals_per_match=4,
                        options_json='{"rounds": 100000}',
                        **fields,
                    ),
                    "rounds = 100000: use at most 100 (the range is 1 .. 100)",
                ),
            ]
            for request, message in cases:
                code, details, took = await _refused(league.CreateSeason(request, metadata=ADMIN))
                assert code == grpc.StatusCode.INVALID_ARGUMENT, (code, details)
                assert details == message
                assert took < 10.0, f"refusing took {took:.1f} s"
            listed = await league.ListSeasons(league_pb2.ListSeasonsRequest())
            assert not listed.seasons

    _run(scenario())


def test_a_stored_season_with_odd_values_still_lists(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """A season stored before the ranges existed (its clock 5e9 ms, 100000 rounds) does
    not make ``ListSeasons``/``GetSeason`` fail for everyone."""
    for name in BOTS:
        bots.register(redis_client, name)
    spec = SeasonSpec.from_dict(
        {"name": "old", "game": "sevens", "preset": "fan-tan", "bots": list(BOTS)}
        | {"deals_per_match": 4}
    )
    store.create_season(redis_client, spec)
    stored = json.loads(redis_client.hget(keys.season("old"), "spec") or "{}")
    stored["time_control"]["move_ms"] = 5_000_000_000
    stored["options"]["rounds"] = 100_000
    redis_client.hset(keys.season("old"), "spec", json.dumps(stored))

    async def scenario() -> None:
        async with (
            running_referee(redis_url) as ref,
            grpc.aio.insecure_channel(f"127.0.0.1:{ref.port}") as channel,
        ):
            league = league_pb2_grpc.LeagueStub(channel)
            listed = await league.ListSeasons(league_pb2.ListSeasonsRequest())
            assert [s.season for s in listed.seasons] == ["old"]
            info = await league.GetSeason(league_pb2.SeasonRef(season="old"))
            assert info.time_control.move_ms == 2**32 - 1  # the most the field holds

    _run(scenario())


HOSTILE_GAMES = ["\x1b]0;owned\x07", "\x1b[2J\x1b[31m[bold]red[/bold]"]


def test_what_a_bot_wrote_reaches_the_terminal_escaped(
    redis_url: str,
    redis_client: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A bot's ``Hello.games`` with terminal escapes, quoted by ``arena season create``'s
    refusal, and an owner with escapes in ``arena bot list``: printed escaped, never raw."""
    token = bots.register(redis_client, "escaper", owner="\x1b[31mred\x1b[0m")
    for name in BOTS[:3]:
        bots.register(redis_client, name)

    async def connect() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token)
            hello = bot_pb2.BotMessage(
                hello=bot_pb2.Hello(
                    protocol_version=1,
                    bot_version="test",
                    games=HOSTILE_GAMES,
                    max_concurrent_matches=1,
                )
            )
            await bot.send(hello)
            assert (await bot.read()).WhichOneof("msg") == "welcome"
            deadline = time.monotonic() + 10
            while not redis_client.hget(keys.bot("escaper"), "games"):
                assert time.monotonic() < deadline, "the referee never recorded Hello.games"
                await asyncio.sleep(0.05)
            await bot.close()

    _run(connect())
    season = tmp_path / "s.toml"
    season.write_text(
        'name = "esc"\ngame = "sevens"\npreset = "fan-tan"\n'
        f'bots = ["escaper", "{BOTS[0]}", "{BOTS[1]}", "{BOTS[2]}"]\ndeals_per_match = 4\n'
    )
    url = ["--redis-url", redis_url]
    capsys.readouterr()
    assert main(["season", "create", str(season), *url]) == 1
    err = capsys.readouterr().err
    assert "do not play sevens" in err
    assert "\x1b" not in err and "\x07" not in err, repr(err)
    assert "\\x1b]0;owned\\x07" in err
    assert main(["bot", "list", *url]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\\x1b[31mred" in out


def test_terminal_safe_escapes_controls_and_keeps_text() -> None:
    from referee.cli.common import cell, terminal_safe

    assert terminal_safe("a\x1b[2Jb\u202ec\r\x9b") == "a\\x1b[2Jb\\u202ec\\r\\x9b"
    assert terminal_safe("two\nlines\tand ♠ é") == "two\nlines\tand ♠ é"
    assert cell("[bold]not markup[/bold]\x1b").plain == "[bold]not markup[/bold]\\x1b"
