"""Two bots of one owner never play one board at two tables of a flight by default.

With default options, two bots of one owner at different tables of a flight pooled what
they held: on 50 and 41 of 80 boards each knew one opponent's whole hand. Owners apart
(``separate_owners``) is now the default; an operator may turn it off explicitly, and is
warned when creating such a season. Seasons stored before keep their stored option (and
records written without the field read as the old default, off), so ``arena season
verify`` rebuilds their schedules unchanged. Real Redis, the real registry and CLI.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from referee import bots, keys
from referee.cli.main import main
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.schedule import build_schedule

SEASON = """
name = "{name}"
game = "sevens"
preset = "fan-tan"
bots = {bots}
table_size = 3
deals_per_match = 2
seed = 2026
"""
TEAM = ["t1", "t2", "t3"]
OTHERS = ["o1", "o2", "o3", "o4", "o5", "o6", "o7"]


def _register(conn: redis.Redis) -> None:
    for bot in TEAM:
        bots.register(conn, bot, owner="team")
    for bot in OTHERS:
        bots.register(conn, bot, owner=bot)


def _flights(conn: redis.Redis, season: str) -> list[set[str]]:
    """The bots of each group of tables that share boards."""
    by_board: dict[str, set[str]] = {}
    for match in store.get_schedule(conn, season):
        for board in match.get("boards") or ():
            by_board.setdefault(board, set()).update(match["seats"])
    return list(by_board.values())


def _toml(tmp_path: Path, name: str, extra: str = "") -> str:
    path = tmp_path / f"{name}.toml"
    path.write_text(SEASON.format(name=name, bots=json.dumps(TEAM + OTHERS)) + extra)
    return str(path)


def test_a_default_season_keeps_one_owners_bots_off_each_others_boards(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(redis_client)
    url = ["--redis-url", redis_url]
    assert main(["season", "create", _toml(tmp_path, "default"), *url]) == 0
    err = capsys.readouterr().err  # (the bots hold no stream: that warning is expected)
    assert "separate_owners" not in err and "pool" not in err
    flights = _flights(redis_client, "default")
    assert flights, "field duplicate: the season has boards played at several tables"
    for seated in flights:
        assert len(seated & set(TEAM)) <= 1, f"two bots of one owner on one board: {seated}"
    spec = SeasonSpec.from_json(store.get_season(redis_client, "default")["spec"])
    assert spec.options.separate_owners


def test_turning_owners_apart_off_is_explicit_and_warned(
    redis_url: str, redis_client: redis.Redis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _register(redis_client)
    url = ["--redis-url", redis_url]
    off = _toml(tmp_path, "off", "[options]\nseparate_owners = false\n")
    assert main(["season", "create", off, *url]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "separate_owners" in err and "pool" in err
    assert main(["season", "create", _toml(tmp_path, "flag"), "--no-separate-owners", *url]) == 0
    assert "separate_owners" in capsys.readouterr().err
    assert not SeasonSpec.from_json(
        store.get_season(redis_client, "off")["spec"]
    ).options.separate_owners


def test_a_season_stored_without_the_option_reads_as_the_old_default(
    redis_client: redis.Redis,
) -> None:
    """A record written before the option existed: owners apart off, so the rebuilt
    schedule is the one it was created with (``arena season verify``)."""
    _register(redis_client)
    spec = SeasonSpec.from_toml(SEASON.format(name="old", bots=json.dumps(TEAM + OTHERS)))
    stored = spec.to_dict()
    del stored["options"]["separate_owners"]
    old = SeasonSpec.from_json(json.dumps(stored))
    assert not old.options.separate_owners
    owners = {b: "team" for b in TEAM}
    assert build_schedule(old, 2026, owners) == build_schedule(old, 2026, None)
    assert redis_client.hget(keys.bot("t1"), "owner") == "team"


@pytest.mark.parametrize(("n", "k", "deals"), [(7, 3, 2), (9, 3, 2), (10, 3, 2), (8, 4, 4)])
def test_owners_apart_costs_nothing_when_no_two_bots_share_an_owner(
    n: int, k: int, deals: int
) -> None:
    """Bots with no owner or distinct owners: the default's schedule is the one with the
    option off (no search of its own; seasons created before verify unchanged)."""
    names = tuple(f"b{i}" for i in range(n))
    for owners in (None, {b: f"owner-of-{b}" for b in names}):
        on = SeasonSpec(name="s", game="sevens", bots=names, table_size=k, deals_per_match=deals)
        off = SeasonSpec.from_dict({**on.to_dict(), "options": {"separate_owners": False}})
        assert on.options.separate_owners
        assert build_schedule(on, 2026, owners) == build_schedule(off, 2026, owners)
