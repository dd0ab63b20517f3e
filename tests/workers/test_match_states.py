"""The one state machine of a match (``referee.match.spec.MATCH_MOVES``) against the code
that writes states: every writer (``referee.queue.enqueue_match``,
``requeue_abandoned``, ``workers.attempts``' start, failure and commit, the cancel script)
played on real Redis, each move it makes checked against the table; and the one tally of
seat statistics (``tally_decision``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from referee import keys, lua, queue
from referee.games import registry
from referee.games.base import Event, EventKind
from referee.match.spec import (
    FIRST_STATES,
    MATCH_MOVES,
    SETTLED_STATES,
    MatchState,
    may_move,
    moving_to,
    seat_stats,
    tally_decision,
)
from referee.seasons import embargo
from tests.workers import fakegame
from tests.workers.test_runner import make_spec
from workers.attempts import commit, mark_failed, start_attempt

S = MatchState


@pytest.fixture(autouse=True)
def fake_game(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.GAMES, "fake", fakegame.GAME)
    yield


def test_the_table_names_every_state_and_ends_in_done_or_cancelled() -> None:
    stored = set(S) - {S.UNKNOWN}
    assert set(MATCH_MOVES) == stored
    assert all(moves <= stored for moves in MATCH_MOVES.values())
    assert SETTLED_STATES == {S.DONE, S.CANCELLED} == embargo.SETTLED
    assert moving_to(S.CANCELLED) == (S.SCHEDULED, S.QUEUED, S.FAILED)
    assert not may_move(S.RUNNING, S.CANCELLED)  # a running attempt plays on; its count is refused
    assert not may_move(S.DONE, S.QUEUED) and not may_move(S.CANCELLED, S.RUNNING)
    assert may_move(None, S.QUEUED) and may_move(None, S.SCHEDULED)
    assert not may_move(None, S.RUNNING)
    # every state is reachable from a first one
    seen, todo = set(FIRST_STATES), list(FIRST_STATES)
    while todo:
        for nxt in MATCH_MOVES[todo.pop()] - seen:
            seen.add(nxt)
            todo.append(nxt)
    assert seen == stored


class _Watcher:
    """Reads a match's state (its own hash and its season's mirror) around each step and
    asserts every change is a move of the table and the states are the expected ones."""

    def __init__(self, conn: redis.Redis, match_id: str, season: str) -> None:
        self.conn, self.match_id, self.season = conn, match_id, season
        self.moves: list[tuple[str | None, str | None]] = []

    def states(self) -> tuple[str | None, str | None]:
        own = self.conn.hget(keys.match_state(self.match_id), "state")
        mirror = (
            self.conn.hget(keys.season_matches(self.season), self.match_id) if self.season else None
        )
        return (None if own is None else str(own), None if mirror is None else str(mirror))

    def step(self, call: Callable[[], Any], own: S | None, mirror: S | None = None) -> Any:
        before = self.states()
        out = call()
        after = self.states()
        for old, new in zip(before, after, strict=True):
            if new != old:
                assert new is not None
                assert may_move(None if old is None else S(old), S(new)), (old, new)
                self.moves.append((old, new))
        assert after == (own, mirror if self.season else None)
        return out


def _attempt(conn: redis.Redis, match_id: str) -> int:
    started = start_attempt(conn, match_id, "host-1")
    assert started is not None
    return started.attempt


def _result(match_id: str, season: str) -> Any:
    return {"match_id": match_id, "season": season, "finished_ms": 1.0, "stats": []}


def test_a_one_off_match_moves_only_as_the_table_says(redis_client: redis.Redis) -> None:
    spec = make_spec("st-1", season="")
    w = _Watcher(redis_client, "st-1", "")
    w.step(lambda: queue.enqueue_match(redis_client, spec), S.QUEUED)
    w.step(lambda: _attempt(redis_client, "st-1"), S.RUNNING)
    # its host's heartbeat lapses: queued again
    far = 1e15
    assert w.step(lambda: queue.requeue_abandoned(redis_client, "st-1", 1, far), S.QUEUED)
    w.step(lambda: _attempt(redis_client, "st-1"), S.RUNNING)
    w.step(lambda: _attempt(redis_client, "st-1"), S.RUNNING)  # a newer attempt: 3
    w.step(lambda: mark_failed(redis_client, spec, 2, "stale"), S.RUNNING)  # fenced: not 2's
    w.step(lambda: mark_failed(redis_client, spec, 3, "RuntimeError"), S.FAILED)
    w.step(lambda: queue.enqueue_match(redis_client, spec), S.QUEUED)
    w.step(lambda: _attempt(redis_client, "st-1"), S.RUNNING)
    done = w.step(lambda: commit(redis_client, spec, 4, _result("st-1", ""), {}), S.DONE)
    assert done
    # settled: nothing moves it again
    assert not w.step(lambda: queue.enqueue_match(redis_client, spec), S.DONE)
    assert w.step(lambda: start_attempt(redis_client, "st-1", "h"), S.DONE) is None
    assert not w.step(lambda: commit(redis_client, spec, 3, _result("st-1", ""), {}), S.DONE)
    after = ["queued", "running", "queued", "running", "failed", "queued", "running", "done"]
    assert [m[1] for m in w.moves] == after


def test_a_season_match_and_its_mirror_move_as_the_table_says(redis_client: redis.Redis) -> None:
    season = "st-season"
    spec = make_spec("st-2", season=season)
    redis_client.hset(keys.season_matches(season), "st-2", S.SCHEDULED)
    w = _Watcher(redis_client, "st-2", season)
    w.step(lambda: queue.enqueue_match(redis_client, spec), S.QUEUED, S.QUEUED)
    w.step(lambda: _attempt(redis_client, "st-2"), S.RUNNING, S.RUNNING)
    far = 1e15
    w.step(lambda: queue.requeue_abandoned(redis_client, "st-2", 1, far), S.QUEUED, S.QUEUED)
    # the attempt the janitor judged lost is still the latest: its commit counts
    w.step(lambda: commit(redis_client, spec, 1, _result("st-2", season), {}), S.DONE, S.DONE)

    other = make_spec("st-3", season=season)
    redis_client.hset(keys.season_matches(season), "st-3", S.SCHEDULED)
    w = _Watcher(redis_client, "st-3", season)
    w.step(lambda: queue.enqueue_match(redis_client, other), S.QUEUED, S.QUEUED)
    redis_client.hset(keys.season(season), "state", "running")
    cancelled = keys.season_cancelled(season)
    w.step(
        lambda: lua.CANCEL(
            redis_client,
            [keys.season(season), keys.season_matches(season), cancelled],
            ["1"],
        ),
        S.QUEUED,
        S.CANCELLED,
    )
    # its queued job finds the season's entry cancelled: it never starts
    assert w.step(lambda: start_attempt(redis_client, "st-3", "h"), S.QUEUED, S.CANCELLED) is None
    assert redis_client.hget(keys.season_matches(season), "st-2") == S.DONE  # settled stays


def test_seat_statistics_are_tallied_in_one_place() -> None:
    """``tally_decision``: one decision counted; timeouts, invalid actions, illegal passes
    and fallbacks each where they belong; a failure is what the strikes count."""
    stats = seat_stats("a")
    invalid = Event(EventKind.INVALID_ACTION, 0)
    assert not tally_decision(stats, [Event(EventKind.PLAY, 0, action="7H")], think_ms=2.5)
    assert tally_decision(stats, [invalid, Event(EventKind.PENALTY, 0)], fallback=True)
    assert tally_decision(stats, [Event(EventKind.ILLEGAL_PASS, 0)])
    assert tally_decision(stats, [Event(EventKind.TIMEOUT, 0)], no_answer=True, fallback=True)
    assert tally_decision(stats, [Event(EventKind.TIMEOUT, 0)])  # judged late
    assert stats == {
        "bot": "a",
        "decisions": 5,
        "timeouts": 1,
        "invalid_actions": 1,
        "illegal_passes": 1,
        "fallbacks": 1,  # a fallback that never arrived is a timeout, not a fallback
        "autopilot": False,
        "think_ms_total": 2.5,
    }
