"""The league page says what orders its table and shows the game's score beside Elo, and
``dup_score`` in a duplicate season."""

from __future__ import annotations

import json

import redis

from referee import keys
from referee.web import league as web_league
from tests.metrics import league_data
from tests.metrics.http_helpers import get, running_server


def test_the_page_names_the_ranking_and_shows_score_and_dup_score(
    redis_url: str, redis_client: redis.Redis
) -> None:
    rows = [
        league_data.standings_row("alpha", 1, score=120, dup_score=14.5, dup_hands=8),
        league_data.standings_row("bravo", 2, score=-20, dup_score=-14.5, dup_hands=8),
    ]
    league_data.write_season(redis_client, "s1", bots=("alpha", "bravo"), rows=rows)
    standings = json.loads(redis_client.get(keys.season_standings("s1")) or "{}")
    redis_client.set(keys.season_standings("s1"), json.dumps({**standings, "rank_by": "score"}))
    league_data.write_season(redis_client, "old", bots=("alpha", "bravo"))  # no rank_by
    with running_server(redis_url) as port:
        page = get(port, "/?season=s1").text
        old = get(port, "/?season=old").text
    assert "ranked by chips per match" in page
    table = page[page.index('<table class="standings">') :]
    head = table[: table.index("</thead>")]
    assert head.index(">Elo<") < head.index(">chips<") < head.index(">dup score<")
    assert ">+14.5<" in page and ">-14.5<" in page
    assert "ranked by Elo" in old and "dup score" not in old


def test_columns_put_the_score_beside_elo() -> None:
    keys_ = [k for k, _ in web_league.standings_columns("chips", duplicate=True)]
    assert keys_[:3] == ["elo", "score", "dup_score"]
    assert "dup_score" not in [k for k, _ in web_league.standings_columns("chips")]
