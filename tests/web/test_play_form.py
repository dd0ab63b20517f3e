"""The ``/play`` form: it opens on the flagship (Sevens, ``fan-tan``, what ``arena play``
plays by default), offers each game's presets in one picker with their table sizes, and a
table of the wrong size is refused with the counts that game really takes, before any seat
is opened."""

from __future__ import annotations

import http.client
import re
import urllib.parse
import urllib.request
from collections.abc import Iterator

import pytest
import redis

from referee import bots, keys
from referee.web import human
from tests.metrics.http_helpers import running_server


@pytest.fixture
def port(redis_url: str, redis_client: redis.Redis) -> Iterator[int]:
    for name in ("b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8"):
        bots.register(redis_client, name, owner="t")
    # The form is on (a gRPC address is set); nothing listens there: the tests below are
    # refused before a seat would connect.
    with running_server(redis_url, grpc_target="127.0.0.1:9") as p:
        yield p


def post(port: int, fields: list[tuple[str, str]]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        body = urllib.parse.urlencode(fields)
        conn.request("POST", "/play", body, {"Content-Type": "application/x-www-form-urlencoded"})
        reply = conn.getresponse()
        return reply.status, reply.read().decode()
    finally:
        conn.close()


def test_the_form_opens_on_sevens_with_one_picker_of_game_and_preset(port: int) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/play", timeout=30) as reply:
        page = reply.read().decode()
    form = page.split('id="join"')[0]
    selects = re.findall(r'<select name="(\w+)"', form)
    assert selects == ["variant"], f"one picker for the game and its preset, got {selects}"
    selected = re.findall(r'<option value="([^"]+)"[^>]*selected', form)
    assert selected == ["sevens/fan-tan"], selected
    groups = re.findall(r'<optgroup label="([^"]+)"', form)
    assert groups[0].startswith("Sevens") and any(g.startswith("Sedma") for g in groups)
    assert re.search(r'value="sedma/sedma"[^>]*>sedma · 4 players: choose 3 opponents<', form)
    assert re.search(r'value="sevens/fan-tan"[^>]*>fan-tan · 3-8 players: choose 2 to 7 opp', form)


@pytest.mark.parametrize(
    ("variant", "against", "says"),
    [
        ("sedma/sedma", "b1,b2", "sedma sedma is played by 4 players: choose exactly 3 opponents"),
        ("sedma/sedma-2", "b1,b2", "choose exactly 1 opponent, not 2"),
        ("sevens/fan-tan", "b1", "is played by 3 to 8 players: choose 2 to 7 opponents, not 1"),
        ("sevens/sevens", "b1,b2,b3,b4,b5,b6,b7,b8", "choose 2 to 7 opponents, not 8"),
    ],
)
def test_a_table_of_the_wrong_size_names_the_counts_that_game_takes(
    port: int, redis_client: redis.Redis, variant: str, against: str, says: str
) -> None:
    status, page = post(
        port, [("name", "ann"), ("variant", variant), *(("bot", b) for b in against.split(","))]
    )
    assert status == 400 and says in page, page.split("Not started:")[-1][:300]
    assert not redis_client.exists(keys.bot("human-ann")), "refused before a seat was made"


def test_the_table_check_counts_opponents() -> None:
    assert human.table_problem("sedma", "sedma", 3) is None
    assert human.table_problem("sevens", "fan-tan", 7) is None
    assert human.table_problem("sedma", "sedma-3", 1) == (
        "sedma sedma-3 is played by 3 players: choose exactly 2 opponents, not 1"
    )
