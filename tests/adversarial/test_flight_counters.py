"""A board's public counters wait for its flight, as its replay does.

Found: with 1-deal matches and a slow bot, a board's result (a match total is then one
board's) was public (standings, match totals and winners, ``match_committed``) up to
5.65 s before another table finished the same board. Now the season driver counts a
result only once no other table may still play its boards, and the surfaces that show a
season match's totals show them once counted (``ListMatches``/``GetMatch`` at once by the
same rule).

Real stack: ``arena referee`` (gRPC, League API, web, season driver), an ``arena worker``,
six SDK bots; table 2 of the first flight holds its first decision.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from arena.v1 import league_pb2
from referee import keys
from referee.embedded_redis import EmbeddedRedis
from referee.seasons.platform import Platform
from tests.web.browser import wait_for
from tests.web.test_sealed_boards import SEASON_TOML, _get, held_flight, sealed_platform

pytestmark = pytest.mark.slow

ONE_DEAL = SEASON_TOML.replace("deals_per_match = 2", "deals_per_match = 1")


@pytest.fixture()
def platform(embedded_redis: EmbeddedRedis, tmp_path: Any) -> Iterator[Platform]:
    with sealed_platform(embedded_redis, tmp_path) as p:
        yield p


def _listed(stub: Any, match_id: str) -> Any:
    listed = stub.ListMatches(league_pb2.ListMatchesRequest(season="sealed"), timeout=30)
    return next(m for m in listed.matches if m.match_id == match_id)


def _shown_anywhere(platform: Platform, stub: Any, match_id: str, events: list[Any]) -> list[str]:
    """Where ``match_id``'s result can be read by anyone."""
    where = []
    if list(_listed(stub, match_id).totals):
        where.append("ListMatches totals")
    status, body = _get(platform, "/api/live/sealed", "application/json")
    assert status == 200, body
    if match_id in body:
        where.append("/api/live")
    conn = platform.client()
    if conn.sismember(keys.season_counted("sealed"), match_id):  # what the standings sum
        where.append("standings")
    conn.close()
    if any(e.kind == "match_committed" and e.match_id == match_id for e in events):
        where.append("WatchEvents match_committed")
    seats = _listed(stub, match_id).players
    for path in ("/", *(f"/bot/{seat}" for seat in seats)):
        status, body = _get(platform, path, "text/html")
        assert status == 200, (path, body[:300])
        if match_id in body:
            where.append(path)
    return where


def test_a_boards_counters_wait_for_every_table_of_its_flight(platform: Platform) -> None:
    with held_flight(platform, ONE_DEAL) as flight:
        conn, stub, gates, events = flight.conn, flight.stub, flight.gates, flight.events
        first, second = flight.first, flight.second
        # the driver counted the old way within a second; watch every surface for 5 s
        until = time.monotonic() + 5.0
        while time.monotonic() < until:
            assert _shown_anywhere(platform, stub, first, events) == []
            time.sleep(0.5)

        gates.open(second)
        wait_for(
            lambda: bool(conn.smismember(keys.season_counted("sealed"), [first, second]) == [1, 1]),
            180,
            "both tables of the flight counted",
        )
        assert list(_listed(stub, first).totals)
        wait_for(
            lambda: "WatchEvents match_committed" in _shown_anywhere(platform, stub, first, events),
            30,
            "match_committed once the flight is over",
        )
