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

import threading
import time
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import league_pb2, league_pb2_grpc
from referee import keys
from referee.embedded_redis import EmbeddedRedis
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.platform import Platform
from tests.web.browser import wait_for
from tests.web.test_sealed_boards import NAMES, SEASON_TOML, GatedBot, Gates, _get, _watch

pytestmark = pytest.mark.slow

ONE_DEAL = SEASON_TOML.replace("deals_per_match = 2", "deals_per_match = 1")


@pytest.fixture()
def platform(embedded_redis: EmbeddedRedis, tmp_path: Any) -> Iterator[Platform]:
    conn = redis.Redis.from_url(embedded_redis.url)
    conn.flushall()
    conn.close()
    with Platform(tmp_path / "counters", redis_url=embedded_redis.url) as p:
        p.start_referee()
        p.register_bots(NAMES)
        p.start_workers(processes=1, per_process=2)
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
    conn = platform.client()
    gates = Gates()
    stop = threading.Event()
    threads = []
    channel = grpc.insecure_channel(f"127.0.0.1:{platform.port}")
    stub = league_pb2_grpc.LeagueStub(channel)
    watch = None
    try:
        for name in NAMES:
            bot = GatedBot(gates)
            bot.name = name
            thread = threading.Thread(
                target=bot.run,
                args=(f"127.0.0.1:{platform.port}", platform.tokens[name]),
                kwargs={"stop": stop},
                daemon=True,
            )
            thread.start()
            threads.append(thread)
        wait_for(lambda: all(conn.hlen(keys.bot_streams(n)) for n in NAMES), 60, "bots connected")
        store.create_season(conn, SeasonSpec.from_toml(ONE_DEAL))
        flights: dict[tuple[str, ...], list[str]] = {}
        for m in store.get_schedule(conn, "sealed"):
            flights.setdefault(tuple(m["boards"]), []).append(m["match_id"])
        first, second = next(iter(flights.values()))
        gates.hold(second)
        events: list[Any] = []
        started = threading.Event()
        watch = _watch(stub, "sealed", events, started)
        started.wait(10)
        time.sleep(0.5)  # the subscription is made when the first message is awaited
        store.start_season(conn, "sealed")
        wait_for(
            lambda: (
                store.match_states(conn, "sealed").get(first) == "done"
                and gates.reached[second].is_set()
            ),
            180,
            f"{first} done while {second} holds its first decision",
        )
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
    finally:
        for match_id in list(gates.gates):
            gates.open(match_id)
        stop.set()
        if watch is not None:
            watch.cancel()
        for thread in threads:
            thread.join(10)
        channel.close()
        conn.close()
