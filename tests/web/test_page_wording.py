"""Counts and separators on the pages read right: ``1 worker alive``
not ``1 workers alive``, ``registered bot · …`` not ``registered bot·``, and a season
with every match played says so rather than ``ETA done``. Real templates, real server."""

from __future__ import annotations

import re

import redis

from referee import keys
from referee.web.app import ArenaWeb, WebConfig
from tests.metrics import league_data
from tests.metrics.http_helpers import get, running_server


def test_one_of_each_is_singular(redis_url: str) -> None:
    web = ArenaWeb(WebConfig(redis_url))
    one = {"bots_connected": 1, "bots_registered": 1, "workers_alive": 1}
    text = " ".join(web.render("_platform.html", platform=one).split())
    assert "1 of 1 bot connected · 1 worker alive" in text.replace("&middot;", "·"), text
    two = {"bots_connected": 2, "bots_registered": 3, "workers_alive": 2}
    text = " ".join(web.render("_platform.html", platform=two).split())
    assert "2 of 3 bots connected · 2 workers alive" in text.replace("&middot;", "·"), text


def test_a_finished_season_says_every_match_was_played(redis_url: str) -> None:
    web = ArenaWeb(WebConfig(redis_url))
    context = {
        "season": {"matches_done": 6, "matches_failed": 0, "matches_total": 6, "percent": 100,
                   "state": "finished"},
        "in_flight": {"running": 0, "queued": 0},
        "throughput": {"decisions_per_s": None, "decisions": 1, "eta_s": None, "remaining": 0},
    }  # fmt: skip
    text = web.render("_progress.html", **context)
    assert "ETA done" not in text and "ETA" not in text and "every match played" in text, text
    assert "1 decision so far" in text


def test_the_bot_page_separates_its_facts(redis_url: str, redis_client: redis.Redis) -> None:
    league_data.write_season(redis_client, "s1")
    redis_client.sadd(keys.BOTS, "alpha")
    with running_server(redis_url) as port:
        page = get(port, "/bot/alpha").text
    facts = page[page.index('<p class="muted">') :]
    facts = " ".join(facts[: facts.index("</p>")].split()).replace("&middot;", "·")
    assert re.search(r"registered bot · \d+ recent match(es)? · \d+ decisions? in", facts), facts
