"""``options.rank_by``: a season ranks by Elo, by the game's own score
per match, or by average place; new seasons take their game's default, stored seasons
without the field keep the Elo order they always had, and every reader (CLI, exports,
web, League API) shows the stored order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import redis

from referee import bots, keys
from referee.cli.main import main
from referee.errors import ConfigError
from referee.match.spec import CommittedResult
from referee.seasons import store
from referee.seasons.model import DEFAULT_RANK_BY, SeasonSpec
from referee.seasons.standings import compute_standings
from tests.seasons.test_standings import _result

BOTS = ["ace", "bee", "cid"]


def _fan_tan_like(unit: str = "chips") -> list[CommittedResult]:
    """``ace`` finishes first in most deals but loses chips; ``bee`` wins the chips; ``cid``
    has the best chips per match over fewer matches (one instead of two)."""
    first = [[[0], [1], [2]], [[0], [2], [1]], [[0], [1], [2]]]
    results = [
        _result("m1", ["ace", "bee", "cid"], first, 1.0, [-30, 50, -20]),
        _result("m2", ["ace", "bee", "dan"], first, 2.0, [-10, 40, -30]),
        _result("m3", ["cid", "ace", "dan"], [[[1], [0], [2]]] * 3, 3.0, [200, -50, -150]),
        _result("m4", ["dan", "cid", "bee"], [[[0], [1], [2]]] * 3, 4.0, [0, 0, 0]),
    ]
    for r in results:
        r["result"]["unit"] = unit
    return results


def _order(rank_by: str, unit: str = "chips") -> list[str]:
    table = compute_standings("s", "sevens", [*BOTS, "dan"], _fan_tan_like(unit), rank_by=rank_by)
    assert table["rank_by"] == rank_by
    assert [r["rank"] for r in table["rows"]] == [1, 2, 3, 4]
    return [r["bot"] for r in table["rows"]]


def test_elo_score_and_place_give_their_own_order() -> None:
    table = compute_standings("s", "sevens", [*BOTS, "dan"], _fan_tan_like(), rank_by="score")
    per_match = {r["bot"]: r["score"] / r["matches"] for r in table["rows"]}
    assert per_match == {"cid": 60.0, "bee": 30.0, "dan": -60.0, "ace": -30.0}
    assert _order("score") == ["cid", "bee", "ace", "dan"]  # chips per match, best first
    assert _order("elo")[0] == "ace"  # first in most deals, last in chips
    rows = compute_standings("s", "sevens", [*BOTS, "dan"], _fan_tan_like(), rank_by="place")
    places = [r["avg_place"] for r in rows["rows"]]
    assert places == sorted(places)


def test_penalty_points_rank_the_lowest_first() -> None:
    assert _order("score", unit="penalty_points") == ["dan", "ace", "bee", "cid"]


def test_a_bot_with_no_match_is_ranked_last_by_score() -> None:
    table = compute_standings(
        "s", "sevens", ["zed", *BOTS, "dan"], _fan_tan_like(), rank_by="score"
    )
    assert table["rows"][-1]["bot"] == "zed"


def test_rank_by_is_validated_and_named_in_the_error() -> None:
    with pytest.raises(ConfigError, match="rank_by = 'chips': use one of elo, score, place"):
        SeasonSpec.from_toml('game = "sevens"\n[options]\nrank_by = "chips"')


@pytest.fixture
def conn(redis_url: str) -> redis.Redis:
    client = store.connect(redis_url)
    for name in ("a", "b", "c", "d"):
        bots.register(client, name)
    return client


def _spec(game: str, **options: Any) -> SeasonSpec:
    return SeasonSpec.from_dict(
        {
            "name": f"{game}-{'-'.join(map(str, options.values())) or 'default'}",
            "game": game,
            "bots": ["a", "b", "c", "d"],
            "table_size": 4,
            "deals_per_match": 2,
            "seed": 3,
            "options": options,
        }
    )


def test_a_new_season_stores_its_games_default_and_an_old_one_ranks_by_elo(
    conn: redis.Redis,
) -> None:
    assert DEFAULT_RANK_BY == {"sevens": "score", "sedma": "elo"}
    for game, expected in DEFAULT_RANK_BY.items():
        info = store.create_season(conn, _spec(game))
        assert json.loads(info.spec)["options"]["rank_by"] == expected
        assert store.recompute_standings(conn, info.season)["rank_by"] == expected
    info = store.create_season(conn, _spec("sevens", rank_by="place"))
    assert store.recompute_standings(conn, info.season)["rank_by"] == "place"
    # a season stored before rank_by existed: its spec has no such option
    old = json.loads(store.get_season(conn, "sevens-default")["spec"])
    del old["options"]["rank_by"]
    conn.hset(keys.season("sevens-default"), "spec", json.dumps(old))
    assert store.recompute_standings(conn, "sevens-default")["rank_by"] == "elo"


def test_cli_create_takes_rank_by_and_says_it(
    conn: redis.Redis, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = ["--redis-url", redis_url]
    argv = ["season", "create", "--game", "sevens", "--bots", "a,b,c,d", "--deals", "2"]
    assert main([*argv, "--name", "by-place", "--rank-by", "place", *url]) == 0
    assert "standings ranked by place" in capsys.readouterr().out
    assert main([*argv, "--name", "by-default", *url]) == 0
    assert "standings ranked by score" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main([*argv, "--name", "bad", "--rank-by", "chips", *url])
    assert "invalid choice: 'chips'" in capsys.readouterr().err
    assert main(["season", "status", "by-place", *url]) == 0
    assert "ranked by  place" in capsys.readouterr().out
    assert main(["standings", "by-place", *url]) == 0
    assert "ranked by average place" in " ".join(capsys.readouterr().out.split())
    assert main(["season", "export", "by-place", str(tmp_path / "x"), *url]) == 0
    assert json.loads((tmp_path / "x" / "standings.json").read_text())["rank_by"] == "place"
