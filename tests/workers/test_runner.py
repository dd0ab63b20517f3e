"""The match runner in-process (``workers.host.run_match``) against real Redis, a real
referee process and SDK bots answering by policy, with a tiny fake game.

These check the decision pipeline (clock, penalties, strikes, commit, fencing) in one
module; tests/workers/test_e2e.py runs the real engines and match-host processes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from referee import keys, queue
from referee.games import registry
from referee.match.row import lean_result
from referee.match.spec import MatchSpec, TimeControl
from referee.metrics_store import read_counters, read_stored
from tests.workers import fakegame
from tests.workers.policy_bot import PolicyBot, first_legal, policy_bots
from workers.host import run_match

TurnMessage = dict[str, Any]

FAST = TimeControl(move_ms=300, bank_ms=400, grace_ms=50, queue_ms=300)


@pytest.fixture
def server(referee_address: str, redis_url: str) -> str:
    return referee_address


@pytest.fixture(autouse=True)
def fake_game(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.GAMES, "fake", fakegame.GAME)
    yield


def make_spec(match_id: str = "m1", bots: tuple[str, ...] = ("a", "b"), **kw: object) -> MatchSpec:
    base: dict[str, object] = {
        "match_id": match_id,
        "game": "fake",
        "rules": {"hand": 3},
        "seats": bots,
        "seed": 7,
        "season": "s1",
        "time_control": FAST,
    }
    base.update(kw)
    return MatchSpec(**base)  # type: ignore[arg-type]


def run(redis_client: redis.Redis, spec: MatchSpec) -> str:
    assert queue.enqueue_match(redis_client, spec)
    return run_match(spec.match_id, conn=redis_client)


def test_plays_commits_once_and_notifies(redis_client: redis.Redis, server: str) -> None:
    spec = make_spec()
    with policy_bots(redis_client, server, a := PolicyBot("a"), b := PolicyBot("b")):
        assert run(redis_client, spec) == "committed"
        a.wait_for("match_end")  # sent after the commit: don't stop the bots before it arrives
        b.wait_for("match_end")
    result = queue.get_result(redis_client, "m1")
    assert result is not None and result["attempt"] == 1
    assert [s["decisions"] for s in result["stats"]] == [3, 2]  # seat 0 empties first
    assert result["result"]["totals"] == [0, 0]
    assert queue.match_status(redis_client, "m1")["state"] == "done"
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1
    assert redis_client.hget(keys.season_matches("s1"), "m1") == "done"
    for bot in (a, b):
        kinds = [m["type"] for m in bot.received]
        assert kinds[0] == "match_start" and kinds[-1] == "match_end"
        assert "deal_end" in kinds
        assert all(r["status"] == "accepted" for r in bot.of_type("action_result"))
    # a second run finds the result and commits nothing
    assert run_match("m1", conn=redis_client) == "already-done"
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1
    counters = read_counters(redis_client)
    assert counters["arena_matches_total"] == {"game=fake,kind=committed": 1.0}
    assert counters["arena_decisions_total"]["bot=a,game=fake,season=s1"] == 3
    name = "arena_bot_think_seconds"
    think = read_stored(redis_client, (name,)).histograms[name]
    assert think["game=fake"]["count"] == 5
    record = queue.get_record(redis_client, "m1")
    assert record is not None
    asked = [s for s in record["steps"] if "request" in s]
    assert len(asked) == 5 and asked[0]["request"]["legal_actions"] == [asked[0]["answer"]]
    assert record["initial_hands"][0][0] == asked[0]["request"]["observation"]["hand"]


# The commit's exactly-once race, made deterministic with a barrier, and the second
# commit that finds the result: tests/workers/test_runner_pins.py.


def slow(seconds: float) -> Callable[[TurnMessage], tuple[str | None, float]]:
    def policy(turn: TurnMessage) -> tuple[str | None, float]:
        return turn["legal_actions"][0], seconds

    return policy


def test_clock_inside_limit_is_never_penalised(redis_client: redis.Redis, server: str) -> None:
    # move 300 ms, answers at ~150 ms: 150 ms inside the limit, bank untouched.
    spec = make_spec(bots=("a", "b"))
    with policy_bots(redis_client, server, PolicyBot("a", slow(0.15)), b := PolicyBot("b")):
        assert run(redis_client, spec) == "committed"
    result = queue.get_result(redis_client, "m1")
    assert result is not None
    assert result["stats"][0]["timeouts"] == 0 and result["stats"][0]["illegal_passes"] == 0
    assert result["result"]["totals"] == [0, 0]
    record = queue.get_record(redis_client, "m1")
    assert record is not None
    assert all(
        s["bank_left_ms"] == 400 for s in record["steps"] if s.get("seat") == 0 and "request" in s
    )
    assert b.of_type("action_result")


def test_bank_absorbs_overruns_until_empty(redis_client: redis.Redis, server: str) -> None:
    # move 300 + bank 400 + grace 50. Seat 0 answers after 500, 400, 600 and 150 ms:
    # 1) limit 750: in time (250 inside), the bank pays 200 -> 200 left
    # 2) limit 550: in time (150 inside), the bank pays 100 -> 100 left
    # 3) limit 450: 150 over -> timed out, the bank is empty
    # 4) limit 350: 150 ms is inside the move time -> in time, the bank stays empty
    delays = iter([0.5, 0.4, 0.6, 0.15])

    def policy(turn: TurnMessage) -> tuple[str | None, float]:
        return turn["legal_actions"][0], next(delays)

    spec = make_spec(bots=("a", "b"), rules={"hand": 4}, strikes=0)
    with policy_bots(redis_client, server, PolicyBot("a", policy), PolicyBot("b")):
        assert run(redis_client, spec) == "committed"
    record = queue.get_record(redis_client, "m1")
    assert record is not None
    mine = [s for s in record["steps"] if s.get("seat") == 0 and "request" in s]
    assert [s["timeout"] for s in mine] == [False, False, True, False], [
        (s["think_ms"], s["wall_ms"], s["reason"]) for s in mine
    ]
    told = [s["request"]["clock"]["bank_ms"] for s in mine]
    # (approximate: the stamps include this busy machine's scheduling delays)
    assert told[0] == 400 and 100 < told[1] <= 200 and 0 < told[2] <= 100 and told[3] == 0
    assert mine[2]["bank_left_ms"] == 0 and mine[3]["bank_left_ms"] == 0


def test_well_over_is_timed_out_and_pays_the_penalty(
    redis_client: redis.Redis, server: str
) -> None:
    # The limit is move + bank + grace = 750 ms; the bot answers after 900 ms (150 over).
    spec = make_spec(bots=("a", "b"), strikes=0)
    with policy_bots(redis_client, server, a := PolicyBot("a", slow(0.9)), PolicyBot("b")):
        assert run(redis_client, spec) == "committed"
    results = a.of_type("action_result")
    first = results[0]
    assert first["status"] == "timed_out" and first["reason"] == "timeout"
    assert first["penalty"] == 1  # the fake rules' illegal-pass chip
    assert first["think_ms"] >= 750
    result = queue.get_result(redis_client, "m1")
    assert result is not None and result["stats"][0]["timeouts"] >= 1
    counters = read_counters(redis_client)
    assert counters["arena_timeouts_total"]["bot=a,season=s1"] == result["stats"][0]["timeouts"]


def garbage(turn: TurnMessage) -> tuple[str | None, float]:
    return "\x00 not a card \u2603", 0.0


def test_invalid_actions_are_refused_then_autopilot(redis_client: redis.Redis, server: str) -> None:
    spec = make_spec(bots=("a", "b"), strikes=2)
    with policy_bots(
        redis_client, server, a := PolicyBot("a", garbage), PolicyBot("b", first_legal)
    ):
        assert run(redis_client, spec) == "committed"
    results = a.of_type("action_result")
    assert len(results) == 2  # then the autopilot plays without asking
    assert [r["status"] for r in results] == ["refused", "refused"]
    assert results[0]["reason"] == "not_legal" and "lowest card" in results[0]["message"]
    assert [r["autopilot"] for r in results] == [False, True]
    result = queue.get_result(redis_client, "m1")
    assert result is not None
    assert result["stats"][0]["autopilot"] and result["stats"][0]["invalid_actions"] == 2
    record = queue.get_record(redis_client, "m1")
    assert record is not None
    assert any(s["source"] == "autopilot" and s.get("action") for s in record["steps"])
    counters = read_counters(redis_client)
    assert counters["arena_autopilot_seats_total"]["bot=a,season=s1"] == 1


def test_disconnected_bot_times_out_uncharged(redis_client: redis.Redis, server: str) -> None:
    """A bot with no stream anywhere that the match never reached waits ``absent_ms`` past
    its clock, as one that was reached and left does (test_faults.py), not ``queue_ms``
    (20 s here: a bot that never connects would stall its table), then is judged
    ``disconnected``, its bank untouched."""
    tc = TimeControl(move_ms=300, bank_ms=400, grace_ms=50, queue_ms=20_000, absent_ms=100)
    spec = make_spec(bots=("gone", "b"), strikes=1, time_control=tc)
    with policy_bots(redis_client, server, PolicyBot("b")):
        start = time.monotonic()
        assert run(redis_client, spec) == "committed"
        took = time.monotonic() - start
    result = queue.get_result(redis_client, "m1")
    assert result is not None
    assert result["stats"][0]["timeouts"] == 1 and result["stats"][0]["autopilot"]
    # limit 750 ms + absent 100 ms, once (strikes=1); limit + queue_ms would be 20.75 s
    assert 0.85 <= took < 10.0, took
    record = queue.get_record(redis_client, "m1")
    assert record is not None
    gone = [s for s in record["steps"] if s.get("seat") == 0 and "request" in s]
    assert gone[0]["reason"] == "disconnected" and gone[0]["bank_left_ms"] == 400


def test_an_older_attempt_stops_when_a_newer_one_starts(
    redis_client: redis.Redis, server: str
) -> None:
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)

    def bump(turn: TurnMessage) -> tuple[str | None, float]:
        if turn["seq"] == 1:  # a newer attempt starts while this one plays
            redis_client.incr(keys.match_attempt("m1"))
        return turn["legal_actions"][0], 0.0

    with policy_bots(redis_client, server, PolicyBot("a", bump), PolicyBot("b")):
        # the commit is fenced by the attempt: nothing is committed
        assert run_match("m1", conn=redis_client) in ("superseded", "duplicate")
    assert queue.get_result(redis_client, "m1") is None
    # The stopped attempt marks nothing: the match belongs to the newer attempt (2).
    status = queue.match_status(redis_client, "m1")
    assert status["state"] == "running" and status["attempt"] == "1"
    assert redis_client.get(keys.match_attempt("m1")) == "2"


def test_engine_failure_is_kept_in_the_state(redis_client: redis.Redis) -> None:
    spec = make_spec(game="no-such-game")
    assert queue.enqueue_match(redis_client, spec)
    with pytest.raises(Exception, match="unknown game"):
        run_match("m1", conn=redis_client)
    status = queue.match_status(redis_client, "m1")
    assert status["state"] == "failed" and "unknown game 'no-such-game'" in status["error"]
    # a failed match may be enqueued again
    assert queue.enqueue_match(redis_client, spec)


def test_record_replays_to_the_recorded_result(redis_client: redis.Redis, server: str) -> None:
    from referee.match.replay import ReplayMismatch, render_replay, verify_record

    spec = make_spec(bots=("a", "b"), strikes=2)
    with policy_bots(redis_client, server, PolicyBot("a", garbage), PolicyBot("b")):
        assert run(redis_client, spec) == "committed"
    record = queue.get_record(redis_client, "m1")
    result = queue.get_result(redis_client, "m1")
    assert record is not None and result is not None
    assert lean_result(verify_record(record)) == result["result"]
    text = render_replay(record)
    assert "REFUSED" in text and "autopilot takes over" in text and "result: totals" in text
    tampered = dict(record, steps=[s for s in record["steps"] if not s.get("takeover")][1:])
    with pytest.raises(ReplayMismatch):
        verify_record(tampered)


def test_forced_decisions_are_autoplayed_when_the_spec_says_so(
    redis_client: redis.Redis, server: str
) -> None:
    # every decision of the fake game has exactly one legal action
    spec = make_spec(autoplay_forced=True)
    with policy_bots(redis_client, server, a := PolicyBot("a"), PolicyBot("b")):
        assert run(redis_client, spec) == "committed"
    assert not a.of_type("turn")  # never asked
    assert a.received[0]["type"] == "match_start"
    record = queue.get_record(redis_client, "m1")
    assert record is not None
    assert {s["source"] for s in record["steps"]} == {"forced"}
    result = queue.get_result(redis_client, "m1")
    assert result is not None and all(s["decisions"] == 0 for s in result["stats"])
