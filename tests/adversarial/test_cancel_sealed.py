"""Cancelling a field-duplicate season does not open a board another table still plays,
and a table the cancel stopped is never counted.

Found: cancelling opened every replay of the season at once, while the running table of a
flight still played the same boards (a bot made 43 decisions after its board was public),
and that table's result counted. Now a cancelled season keeps a flight sealed until each
of its tables has stopped (``referee.seasons.embargo``), and a match the cancel stopped
counts nothing even if an attempt of it commits later.

Real stack for the first test (``arena referee``, an ``arena worker``, six SDK bots, the
fixtures of tests/web/test_sealed_boards.py); real Redis, the store, the runner's commit
and the season driver for the second.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from referee import keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.seasons import embargo, store
from referee.seasons.model import SeasonOptions, SeasonSpec
from referee.seasons.platform import Platform
from tests.web.browser import wait_for
from tests.web.test_sealed_boards import (
    SEASON_TOML,
    _spectators_see_nothing,
    _spectators_see_the_record,
    held_flight,
    sealed_platform,
)
from tests.workers.test_runner import make_spec
from workers import attempts

pytestmark = pytest.mark.slow


@pytest.fixture()
def platform(embedded_redis: EmbeddedRedis, tmp_path: Any) -> Iterator[Platform]:
    with sealed_platform(embedded_redis, tmp_path) as p:
        yield p


def test_a_cancel_keeps_a_board_sealed_while_another_table_plays_it(platform: Platform) -> None:
    with held_flight(platform, SEASON_TOML) as flight:
        conn, stub, gates, events = flight.conn, flight.stub, flight.gates, flight.events
        first, second = flight.first, flight.second
        store.cancel_season(conn, "sealed")
        assert store.match_states(conn, "sealed")[second] == "running"
        # the table still playing the boards: nothing of the other table is shown
        _spectators_see_nothing(platform, stub, first, events)
        assert "cancelled" in embargo.seal_of(conn, first, "sealed").message()

        gates.open(second)
        wait_for(
            lambda: store.match_states(conn, "sealed").get(second) == "done",
            180,
            f"{second} finished after the cancel",
        )
        wait_for(
            lambda: any(
                e.kind == "replays_opened" and first in json.loads(e.data_json)["matches"]
                for e in events
            ),
            60,
            "replays_opened once the last table stopped",
        )
        for match_id in (first, second):
            _spectators_see_the_record(platform, stub, conn, match_id)


def test_a_table_the_cancel_stopped_is_not_counted(redis_client: redis.Redis) -> None:
    """Attempt 1 of a match was judged lost (its host out of touch) and the match queued
    again; the season is cancelled, which stops the queued match; attempt 1 played on and
    commits. Its result is not counted: not in the standings, nor in matches done."""
    spec = SeasonSpec(
        name="s1",
        game="sevens",
        preset="fan-tan",
        bots=tuple(f"c{i}" for i in range(6)),
        table_size=3,
        deals_per_match=2,
        seed=7,
        options=SeasonOptions(max_subsets=0, window=2),
    )
    store.create_season(redis_client, spec, require_registered=False)
    store.start_season(redis_client, "s1")
    match_id = store.get_schedule(redis_client, "s1")[0]["match_id"]
    match = make_spec(match_id)
    assert queue.enqueue_match(redis_client, match)
    assert attempts.start_attempt(redis_client, match_id, "host-1") is not None
    assert queue.requeue_abandoned(redis_client, match_id, 1, float("inf"))
    store.cancel_season(redis_client, "s1")
    assert store.match_states(redis_client, "s1")[match_id] == "cancelled"
    result = {
        "match_id": match_id,
        "season": "s1",
        "game": "fake",
        "seats": list(match.seats),
        "attempt": 1,
        "finished_ms": 1.0,
        "result": {"totals": [0, 0], "order": [[0], [1]]},
        "stats": [],
    }
    assert attempts.commit(redis_client, match, 1, result, {})  # type: ignore[arg-type]
    assert not store.count_done(redis_client, "s1", match_id, 7)  # the driver's count
    info = store.get_season(redis_client, "s1")
    assert info["matches_done"] == "0"
    assert not redis_client.sismember(keys.season_counted("s1"), match_id)
    assert store.recompute_standings(redis_client, "s1")["matches_done"] == 0
