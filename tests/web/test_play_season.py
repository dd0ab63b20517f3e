"""A person entered in a season like a bot: their page's seat (``/play`` with ``join``)
plays the season's match through the web's HTTP interface (the event stream and the
action posts the page uses), against SDK bots, on a real referee and worker, and the
season counts the result."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse
from typing import Any

import pytest

from referee import keys
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from sample_bots.first_legal import FirstLegalBot
from tests.metrics.http_helpers import running_server
from tests.platform_fixtures import bots_in_threads, running_platform

pytestmark = pytest.mark.slow

SEASON = """
name = "people"
game = "sevens"
preset = "fan-tan"
bots = ["human-bob", "fl-a", "fl-b", "fl-c"]
table_size = 4
deals_per_match = 1

[time_control]
move_ms = 30000
bank_ms = 60000

[options]
duplicate = false
"""


def post_form(port: int, path: str, fields: dict[str, str]) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    body = urllib.parse.urlencode(fields)
    conn.request("POST", path, body, {"Content-Type": "application/x-www-form-urlencoded"})
    response = conn.getresponse()
    response.read()
    conn.close()
    return response


def test_a_person_plays_their_season_match_from_the_page(redis_url: str) -> None:
    with (
        running_platform(redis_url, workers=1) as platform,
        bots_in_threads(platform, {n: FirstLegalBot() for n in ("fl-a", "fl-b", "fl-c")}),
        running_server(redis_url, grpc_target=platform.server) as port,
    ):
        joined = post_form(port, "/play", {"join": "1", "name": "bob"})
        assert joined.status == 303, joined.status
        sid = joined.getheader("Location", "").rsplit("/", 1)[-1]
        assert platform.conn.hlen(keys.bot_streams("human-bob")) == 1
        store.create_season(platform.conn, SeasonSpec.from_toml(SEASON))
        store.start_season(platform.conn, "people")
        total = int(store.get_season(platform.conn, "people")["matches_total"])

        events = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        events.request("GET", f"/play/{sid}/events")
        stream = events.getresponse()
        assert stream.status == 200
        ends = turns = 0
        deadline = time.monotonic() + 120
        while ends < total:
            assert time.monotonic() < deadline, "the season's matches did not end"
            line = stream.fp.readline().decode()
            if not line.startswith("data: "):
                continue
            event: dict[str, Any] = json.loads(line[6:])
            if event["kind"] == "turn":
                turn = event["payload"]
                assert turn["season"] == "people"
                action = {"seq": turn["seq"], "action": turn["legal_actions"][-1]}
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                conn.request("POST", f"/play/{sid}/action", json.dumps(action))
                answer = conn.getresponse()
                assert answer.status == 200, answer.read()
                conn.close()
                turns += 1
            elif event["kind"] == "match_end":
                ends += 1
        events.close()
        assert turns > 0
        deadline = time.monotonic() + 60
        while store.get_season(platform.conn, "people")["state"] != "finished":
            assert time.monotonic() < deadline, store.get_season(platform.conn, "people")
            time.sleep(0.1)
        standings = store.get_standings(platform.conn, "people")
        assert standings is not None
        row = next(r for r in standings["rows"] if r["bot"] == "human-bob")
        assert row["matches"] == total and row["timeouts"] == 0 and row["invalid_actions"] == 0
