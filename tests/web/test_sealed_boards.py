"""Spectators never see a board that another table is still playing (docs/SECURITY.md,
"Spectators and sealed boards"; ``referee.seasons.embargo``).

Real stack: ``arena referee`` (gRPC, the web, the season driver) and an ``arena worker``
process, six SDK bots over gRPC in threads. A field-duplicate Sevens season of six bots at
tables of three: flights of two tables, each flight's tables play the same two boards.
The bots hold their first decision of two chosen matches until the test lets them go, so:

* table 1 of flight 0 has finished its match while table 2 has not played a card of the
  same boards: the web (replay page, text replay, replay JSON, live JSON) and the League
  API (``GetMatch``'s record, ``GetReplay``, ``WatchEvents``) show nothing of it;
* once table 2 has finished too, while the season still runs (a match of the last flight
  is held), both replays open, ``WatchEvents`` says ``replays_opened``, and what is shown
  is the record; a finished match of the held flight is still sealed;
* at the season's end everything is open.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import league_pb2, league_pb2_grpc
from referee import keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.match.replay import render_replay
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.platform import Platform
from sample_bots.sdk import Bot, Turn
from tests.web.browser import wait_for

pytestmark = pytest.mark.slow

NAMES = [f"seal-{i}" for i in range(6)]
CARD = re.compile(r"\b[2-9TJQKA][CDHS]\b|(?:10|[2-9JQKA])[♣♦♥♠]")
"""A card as data (``7D``) or as people read it (``7♦``, the text replay)."""
SEASON_TOML = """
name = "sealed"
game = "sevens"
preset = "fan-tan"
bots = ["seal-0", "seal-1", "seal-2", "seal-3", "seal-4", "seal-5"]
table_size = 3
deals_per_match = 2
seed = 7

[time_control]
move_ms = 120000
bank_ms = 10000

[options]
duplicate = true
max_subsets = 0
window = 2
"""


class Gates:
    """Matches whose first decision waits until the test opens their gate."""

    def __init__(self) -> None:
        self.gates: dict[str, threading.Event] = {}
        self.reached: dict[str, threading.Event] = {}

    def hold(self, match_id: str) -> None:
        self.gates[match_id] = threading.Event()
        self.reached[match_id] = threading.Event()

    def open(self, match_id: str) -> None:
        self.gates[match_id].set()

    def pass_through(self, match_id: str) -> None:
        gate = self.gates.get(match_id)
        if gate is not None and not gate.is_set():
            self.reached[match_id].set()
            gate.wait(300)


class GatedBot(Bot):
    def __init__(self, gates: Gates) -> None:
        self.gates = gates

    def choose(self, turn: Turn) -> str:
        self.gates.pass_through(turn.match_id)
        return turn.legal_actions[0]


@contextlib.contextmanager
def sealed_platform(embedded_redis: EmbeddedRedis, tmp_path: Any) -> Iterator[Platform]:
    """A referee and one worker (2 matches) on the emptied embedded Redis, :data:`NAMES`
    registered: the platform of the sealed-board tests."""
    conn = redis.Redis.from_url(embedded_redis.url)
    conn.flushall()
    conn.close()
    with Platform(tmp_path / "sealed", redis_url=embedded_redis.url) as p:
        p.start_referee()
        p.register_bots(NAMES)
        p.start_workers(processes=1, per_process=2)
        yield p


@pytest.fixture()
def platform(embedded_redis: EmbeddedRedis, tmp_path: Any) -> Iterator[Platform]:
    with sealed_platform(embedded_redis, tmp_path) as p:
        yield p


def _get(platform: Platform, path: str, accept: str = "*/*") -> tuple[int, str]:
    request = urllib.request.Request(
        f"http://127.0.0.1:{platform.http_port}{path}", headers={"Accept": accept}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def _watch(stub: Any, season: str, into: list[Any], started: threading.Event) -> Any:
    call = stub.WatchEvents(league_pb2.WatchEventsRequest(season=season))

    def read() -> None:
        started.set()
        try:
            for event in call:
                into.append(event)
        except grpc.RpcError:
            pass  # cancelled at the end of the test

    threading.Thread(target=read, daemon=True).start()
    return call


def _grpc_code(fn: Any, request: Any) -> grpc.StatusCode:
    try:
        fn(request, timeout=30)
    except grpc.RpcError as exc:
        return exc.code()
    return grpc.StatusCode.OK


def _spectators_see_nothing(
    platform: Platform, stub: Any, match_id: str, events: list[Any]
) -> None:
    for path, accept in (
        (f"/replay/{match_id}", "text/html"),
        (f"/replay/{match_id}.txt", "*/*"),
        (f"/api/replay/{match_id}", "application/json"),
    ):
        status, body = _get(platform, path, accept)
        assert status == 403, (path, status, body[:300])
        assert "sealed" in body and not CARD.findall(body), body
        if accept == "text/html":  # a person gets a page saying why, not JSON
            assert 'id="sealed"' in body and "every table" in body, body
    status, body = _get(platform, "/api/live/sealed")
    assert status == 200 and not CARD.findall(body), body
    for call in (stub.GetReplay, stub.GetMatch):
        code = _grpc_code(call, league_pb2.MatchRef(match_id=match_id))
        assert code == grpc.StatusCode.FAILED_PRECONDITION, (call, code)
    listed = stub.ListMatches(league_pb2.ListMatchesRequest(season="sealed"), timeout=30)
    summary = next(m for m in listed.matches if m.match_id == match_id)  # listed, state done,
    assert summary.state == "done" and not list(summary.totals)  # its totals wait too
    seen = [json.loads(e.data_json) for e in events]
    assert not any(CARD.findall(json.dumps(d)) for d in seen), seen
    # its result is counted (standings, match_committed) once its flight is over
    assert not any(e.kind == "match_committed" and e.match_id == match_id for e in events)


def _spectators_see_the_record(
    platform: Platform, stub: Any, conn: redis.Redis, match_id: str
) -> None:
    record = queue.get_record(conn, match_id) or {}
    status, text = _get(platform, f"/replay/{match_id}.txt")
    assert status == 200 and text == render_replay(record)
    assert CARD.findall(text), "an open replay shows the cards"
    status, body = _get(platform, f"/api/replay/{match_id}", "application/json")
    assert status == 200 and json.loads(body)["match_id"] == match_id
    replay = stub.GetReplay(league_pb2.MatchRef(match_id=match_id), timeout=30)
    assert CARD.findall(replay.text)
    got = stub.GetMatch(league_pb2.MatchRef(match_id=match_id), timeout=30)
    assert json.loads(got.record_json)["match_id"] == match_id
    assert CARD.findall(got.record_json), "the record with its cards"


@dataclass
class HeldFlight:
    """A started field-duplicate season whose first flight's second table holds its first
    decision (its other tables' bots answer at once): see :func:`held_flight`."""

    conn: redis.Redis
    stub: Any
    gates: Gates
    events: list[Any]  # every WatchEvents message of the season since before its start
    groups: list[list[str]]  # the flights' match ids, in play order
    first: str  # the first flight's first table: done
    second: str  # its second table: holding


@contextlib.contextmanager
def held_flight(platform: Platform, toml: str, *also_held: int) -> Iterator[HeldFlight]:
    """Six gated SDK bots, the season of ``toml`` created and started with a WatchEvents
    stream on it, and returned once the first flight's first table is done while its
    second holds its first decision; ``also_held``: flights whose first table holds too.
    Every gate is opened and every bot stopped on the way out."""
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
        store.create_season(conn, SeasonSpec.from_toml(toml))
        flights: dict[tuple[str, ...], list[str]] = {}
        for m in store.get_schedule(conn, "sealed"):
            flights.setdefault(tuple(m["boards"]), []).append(m["match_id"])
        groups = list(flights.values())
        first, second = groups[0]  # play order: a flight's tables are adjacent
        gates.hold(second)
        for index in also_held:
            gates.hold(groups[index][0])
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
        yield HeldFlight(conn, stub, gates, events, groups, first, second)
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


def test_spectators_see_no_board_another_table_is_still_playing(platform: Platform) -> None:
    with held_flight(platform, SEASON_TOML, -1) as flight:
        conn, stub, gates, events = flight.conn, flight.stub, flight.gates, flight.events
        groups, first, second = flight.groups, flight.first, flight.second
        assert len(groups) == 3 and all(len(g) == 2 for g in groups), groups
        held_late = groups[-1][0]

        # Table 1 has finished the boards; table 2 waits on its first decision.
        assert conn.get(keys.match_record(first)), "the record exists: it is only hidden"
        _spectators_see_nothing(platform, stub, first, events)

        # Table 2 finishes: both open while the season still runs.
        gates.open(second)
        wait_for(
            lambda: any(
                e.kind == "replays_opened" and first in json.loads(e.data_json)["matches"]
                for e in events
            ),
            180,
            "replays_opened for the first flight",
        )
        assert store.get_season(conn, "sealed")["state"] == store.RUNNING
        opened = [
            sorted(json.loads(e.data_json)["matches"]) for e in events if e.kind == "replays_opened"
        ]
        assert sorted(groups[0]) in opened and sorted(groups[-1]) not in opened, opened
        for match_id in groups[0]:
            _spectators_see_the_record(platform, stub, conn, match_id)
            committed = [
                json.loads(e.data_json)
                for e in events
                if e.kind == "match_committed" and e.match_id == match_id
            ]
            assert committed and committed[0]["sealed"] is False, [e.kind for e in events]

        # The held flight: its other table finishes first and stays sealed.
        other_late = groups[-1][1]
        wait_for(
            lambda: (
                store.match_states(conn, "sealed").get(other_late) == "done"
                and gates.reached[held_late].is_set()
            ),
            180,
            f"{other_late} done while {held_late} holds its first decision",
        )
        _spectators_see_nothing(platform, stub, other_late, events)

        gates.open(held_late)
        wait_for(
            lambda: store.get_season(conn, "sealed")["state"] == store.FINISHED,
            180,
            "the season finished",
        )
        for group in groups:
            for match_id in group:
                _spectators_see_the_record(platform, stub, conn, match_id)
