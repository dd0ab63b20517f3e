"""Pins for the match runner's fencing, commit and clock (mutants that once survived), on the
direct decision path of ``workers/runner.py``: each test names the mutation it kills.

Unit tests of one module against real Redis: the fake game of ``tests/workers/fakegame.py``
and, where a bot is needed, a scripted ``ask`` or a referee link played by the test itself.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any, cast

import pytest
import redis

from arena.v1 import bot_pb2, internal_pb2
from referee import keys, queue
from referee.games import registry
from referee.games.base import DealSpec, Event, EventKind
from referee.games.loop import Walk
from referee.match.messages import ClockInfo
from referee.match.spec import FallbackMode, MatchSpec, TimeControl, redeal_seed
from referee.metrics_store import read_counters
from tests.workers import fakegame
from tests.workers.test_runner import FAST, make_spec
from workers import attempts, notices
from workers.ask import Reply, left_clock
from workers.attempts import REVEALED, commit, reveal, start_attempt, worker_name
from workers.attempts import mark_failed as _mark_failed
from workers.link import LinkLost
from workers.metrics import HostMetrics
from workers.runner import MatchRun


class _Router:
    """Routes every bot to ``links`` in turn (the last one again when they run out)."""

    def __init__(self, *links: Any) -> None:
        self.links = list(links)

    async def route(self, bot: str, until_ms: float) -> Any:
        return self.links.pop(0) if len(self.links) > 1 else self.links[0]

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        pass

    def avoid(self, referee: str, for_ms: float = 0.0) -> None:
        pass

    def forget(self, bot: str) -> None:
        pass

    def excused(self, bot: str, within_ms: float) -> bool:
        return False


def _mark_running(conn: redis.Redis, spec: MatchSpec, attempt: int, worker: str = "") -> None:
    """State ``running`` under ``attempt`` with a heartbeat, as a start leaves it (a test's
    set-up: the start itself is ``start_attempt``'s script)."""
    now = time.time() * 1000.0
    conn.hset(
        keys.match_state(spec.match_id),
        mapping={
            "state": "running",
            "attempt": attempt,
            "worker": worker or worker_name(),
            "started_ms": f"{now:.0f}",
            "heartbeat_ms": f"{now:.0f}",
        },
    )
    conn.zadd(keys.MATCHES_RUNNING, {spec.match_id: now})


def _host(*links: Any) -> Any:
    return SimpleNamespace(router=_Router(*links), metrics=HostMetrics())


@pytest.fixture(autouse=True)
def fake_game(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.GAMES, "fake", fakegame.GAME)
    yield


def _result(mid: str = "m1") -> Any:
    return {"match_id": mid, "season": "s1", "finished_ms": 1.0, "stats": []}


def test_an_old_attempts_failure_leaves_the_newer_attempt_running(
    redis_client: redis.Redis,
) -> None:
    """Pins attempt fencing in ``_mark_failed``: attempt 1 failing late must not mark the
    running attempt 2 ``failed`` (a mutation ignoring the attempt did)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    _mark_running(redis_client, spec, 2)
    _mark_failed(redis_client, spec, 1, "RuntimeError: attempt 1 crashed late")
    status = queue.match_status(redis_client, "m1")
    assert status["state"] == "running" and status["attempt"] == "2"
    assert status["worker"] == worker_name()  # no worker named: this process
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m1") is not None
    _mark_failed(redis_client, spec, 2, "RuntimeError: attempt 2 crashed")
    status = queue.match_status(redis_client, "m1")
    assert status["state"] == "failed" and "attempt 2" in status["error"]
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m1") is None


def test_a_committed_match_leaves_the_running_set(redis_client: redis.Redis) -> None:
    """Pins the commit's ZREM: a committed match is not left in the running set (where the
    janitor would find its heartbeat lapse and run it again)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    _mark_running(redis_client, spec, 1)
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m1") is not None
    assert commit(redis_client, spec, 1, _result(), {})
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m1") is None
    assert queue.match_status(redis_client, "m1")["state"] == "done"


def test_a_second_commit_finds_the_result_and_writes_nothing(redis_client: redis.Redis) -> None:
    """Pins the "result exists" check deterministically: a commit after a commit returns
    False and adds nothing to the results stream (without the check, WATCH alone lets a
    later commit through)."""
    spec = make_spec()
    assert commit(redis_client, spec, 1, _result(), {})
    assert not commit(redis_client, spec, 2, _result(), {})
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1
    assert queue.match_status(redis_client, "m1")["attempt"] == "1"


class _BarrierPipeline:
    """A real pipeline whose ``exists`` waits until every racer has made it: all of them
    WATCH and see no result before any of them runs MULTI/EXEC."""

    def __init__(self, pipe: Any, barrier: threading.Barrier) -> None:
        self._pipe = pipe
        self._barrier = barrier

    def __enter__(self) -> _BarrierPipeline:
        self._pipe.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pipe.__exit__(*exc)

    def exists(self, *names: str) -> int:
        found = int(self._pipe.exists(*names))
        self._barrier.wait(timeout=30)
        return found

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)


class _BarrierClient:
    """Holds a racer's first pipeline at the barrier (the commit checks again after its
    EXEC lost to a WATCH, on a pipeline of its own, which the barrier leaves alone)."""

    def __init__(self, client: redis.Redis, barrier: threading.Barrier) -> None:
        self._client = client
        self._barrier: threading.Barrier | None = barrier

    def pipeline(self, *args: Any, **kwargs: Any) -> Any:
        pipe = self._client.pipeline(*args, **kwargs)
        barrier, self._barrier = self._barrier, None
        return pipe if barrier is None else _BarrierPipeline(pipe, barrier)


def test_commit_is_exactly_once_when_every_racer_checked_before_any_commits(
    redis_client: redis.Redis,
) -> None:
    """Pins the WATCH of the commit with a deterministic race: a barrier holds 8 commits
    until each has checked that no result exists; exactly one EXEC may then succeed."""
    spec = make_spec()
    racers = 8
    barrier = threading.Barrier(racers)
    outcomes: list[bool] = []

    def one() -> None:
        conn = redis.Redis(connection_pool=redis_client.connection_pool)
        client = cast(redis.Redis, _BarrierClient(conn, barrier))
        outcomes.append(commit(client, spec, 1, _result(), {}))

    threads = [threading.Thread(target=one) for _ in range(racers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(outcomes) == [False] * (racers - 1) + [True]
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1


def test_requests_belong_to_one_attempt(redis_client: redis.Redis) -> None:
    """Pins requests per attempt: a retry (attempt 2) asks under its own key, so an answer
    left for attempt 1's request with the same sequence number is never taken by it."""
    spec = make_spec()
    asked: list[tuple[str, int, int]] = []
    for attempt in (1, 2):
        run = MatchRun(_host(), spec, attempt)

        async def ask(turn: Any, limit: float) -> Reply:
            asked.append((turn["match_id"], turn["attempt"], turn["seq"]))
            return Reply(turn["legal_actions"][0], 1.0, "")

        run.asker.ask = ask  # type: ignore[method-assign]
        asyncio.run(run.ask_step(run.match.to_act(), run.match.legal_actions()))
    assert asked == [("m1", 1, 1), ("m1", 2, 1)]


def _scripted_run(redis_client: redis.Redis, replies: list[Reply], strikes: int) -> MatchRun:
    run = MatchRun(_host(), make_spec(strikes=strikes, rules={"hand": 6}), 1)
    script = iter(replies)

    async def ask(turn: Any, limit: float) -> Reply:
        return next(script)

    run.asker.ask = ask  # type: ignore[method-assign]
    return run


def test_a_disconnect_leaves_the_bank_alone_and_a_timeout_empties_it(
    redis_client: redis.Redis,
) -> None:
    """Pins "disconnected is uncharged": nothing was in the bot's hands, so its bank stays
    whole (a mutation charging it emptied the bank); a timeout spends it (docs/workers.md)."""
    run = _scripted_run(redis_client, [Reply(None, 0.0, "disconnected")], strikes=5)
    seat = run.match.to_act()
    asyncio.run(run.ask_step(seat, run.match.legal_actions()))
    assert run.clock.bank_left_ms[seat] == FAST.bank_ms
    assert run.steps[-1]["bank_left_ms"] == FAST.bank_ms
    run = _scripted_run(redis_client, [Reply(None, 1000.0, "timeout")], strikes=5)
    asyncio.run(run.ask_step(seat, run.match.legal_actions()))
    assert run.clock.bank_left_ms[seat] == 0.0


def test_strikes_count_failures_in_a_row_only(redis_client: redis.Redis) -> None:
    """Pins the strike reset: with ``strikes=2``, refused, accepted, refused is never two
    in a row, so the autopilot does not take the seat (a mutation that never reset the
    count gave the seat to the autopilot here)."""
    run = _scripted_run(redis_client, [], strikes=2)
    seat = run.match.to_act()
    for kind in ("refused", "accepted", "refused", "refused"):
        while run.match.to_act() != seat:
            run.match.apply(run.match.legal_actions()[0])
        legal = run.match.legal_actions()
        answer = Reply("not-a-card" if kind == "refused" else legal[0], 1.0, "")

        async def ask(turn: Any, limit: float, answer: Reply = answer) -> Reply:
            return answer

        run.asker.ask = ask  # type: ignore[method-assign]
        asyncio.run(run.ask_step(seat, legal))
        if kind == "accepted":
            assert run.strikes[seat] == 0
        elif not run.autopilot[seat]:
            assert run.strikes[seat] == 1  # refused, accepted, refused: one in a row
    assert run.strikes[seat] == 2 and run.autopilot[seat]  # then two in a row


class _Link:
    """A referee link played by the test: it keeps what it was sent and answers with
    ``outcome`` (a Reply, or LinkLost: the referee died holding the request)."""

    def __init__(self, name: str, outcome: Any) -> None:
        self.referee = name
        self.outcome = outcome
        self.sent: list[Any] = []

    def turn(
        self, bot: str, key: Any, payload: bytes, limit: float, expires: float, first: float
    ) -> Any:
        self.sent.append(bot_pb2.RefereeMessage.FromString(payload).turn)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        if isinstance(self.outcome, Exception):
            future.set_exception(self.outcome)
        else:
            future.set_result(self.outcome)
        return future

    def forget(self, key: Any) -> None:
        pass


def test_a_request_sent_again_shows_the_bank_the_seat_has(redis_client: redis.Redis) -> None:
    """Pins the re-sent request's clock: when the referee holding a request dies, the host
    sends the same request again to the bot's new referee (docs/workers.md); it must show
    the bank the seat has left, not more."""
    legal_holder: list[str] = []
    dying = _Link("dying-referee", LinkLost("the referee died holding the request"))
    answer = internal_pb2.Reply(kind=internal_pb2.Reply.ANSWER, sent_ms=1000.0, received_ms=1001.0)
    other = _Link("another-referee", answer)
    run = MatchRun(_host(dying, other), make_spec(), 1)
    seat = run.match.to_act()
    run.clock.bank_left_ms[seat] = 123.0
    legal = run.match.legal_actions()
    legal_holder.extend(legal)
    answer.action = legal[0]
    asyncio.run(run.ask_step(seat, legal))
    first, again = dying.sent[0], other.sent[0]
    assert first.clock.bank_ms == 123 and again.seq == first.seq
    assert again.clock.bank_ms == 123 == int(run.clock.bank_left_ms[seat])
    assert run.resent == 1 and run.steps[-1]["answer"] == legal[0]


# --- found by `make mutate` (area runner, 2026-12-01): each test names what it kills ----


def test_a_late_failure_never_overwrites_a_committed_result(redis_client: redis.Redis) -> None:
    """Pins ``mark_failed``'s "a result exists" fence: attempt 1 commits, then a failure
    of the same attempt reported late (e.g. its notification after the commit raised) must
    leave the match ``done``: nothing counted as failed, the season's entry still ``done``
    (a mutation that looked up the result under the wrong key marked it failed)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    _mark_running(redis_client, spec, 1)
    assert commit(redis_client, spec, 1, _result(), {})
    _mark_failed(redis_client, spec, 1, "RuntimeError: after the commit")
    status = queue.match_status(redis_client, "m1")
    assert status["state"] == "done" and status["error"] == ""
    assert redis_client.hget(keys.season_matches("s1"), "m1") == "done"
    assert "game=fake,kind=failed" not in read_counters(redis_client).get("arena_matches_total", {})


def test_a_failure_of_an_attempt_never_started_writes_nothing(redis_client: redis.Redis) -> None:
    """Pins the attempt fence of ``mark_failed`` when the state names no attempt (a queued
    match, or one a janitor put back): a failure of attempt 1 must not mark it failed
    (a mutation reading a missing attempt as 1 instead of 0 did)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    _mark_failed(redis_client, spec, 1, "RuntimeError: never started")
    status = queue.match_status(redis_client, "m1")
    assert status["state"] == "queued" and not status.get("error")


def test_a_failure_is_recorded_in_the_state_the_season_and_the_metrics(
    redis_client: redis.Redis,
) -> None:
    """Pins what ``mark_failed`` writes for the running attempt: state ``failed`` with the
    error and ``failed_ms`` (a time in ms, read by the League API), the season's entry
    ``failed`` (the season driver reschedules on it) and ``arena_matches_total{game,
    kind="failed"}`` (mutations of each key, label or value survived before)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    _mark_running(redis_client, spec, 1)
    before = time.time() * 1000
    _mark_failed(redis_client, spec, 1, "RuntimeError: boom")
    state = redis_client.hgetall(keys.match_state("m1"))
    assert state["state"] == "failed" and state["error"] == "RuntimeError: boom"
    assert before - 1 <= int(state["failed_ms"]) <= time.time() * 1000 + 1
    assert redis_client.hget(keys.season_matches("s1"), "m1") == "failed"
    assert read_counters(redis_client)["arena_matches_total"]["game=fake,kind=failed"] == 1


def test_the_worker_name_comes_from_arena_worker_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pins ``ARENA_WORKER_NAME``: ``workers/pool.py`` sets it per host process so the
    match state names the host running it; without it, host:pid."""
    monkeypatch.setenv("ARENA_WORKER_NAME", "host-7")
    assert worker_name() == "host-7"
    monkeypatch.delenv("ARENA_WORKER_NAME")
    assert worker_name() == f"{socket.gethostname()}:{os.getpid()}"


def test_a_step_the_platform_plays_is_recorded_with_its_source(redis_client: redis.Redis) -> None:
    """Pins ``unasked``'s record: the step keeps its deal, seat, source and action and
    events, and the engine is told the source (``autopilot``), so a replay
    (referee/match/replay.py applies each step with its recorded source) reproduces the
    same events."""
    run = MatchRun(_host(), make_spec(), 1)
    seat = run.match.to_act()
    action = run.match.fallback_action()
    run.autopilot[seat] = True
    turn = Walk(run.match, autopilot=run.autopilot, unasked=run.unasked).next_turn()
    assert turn is None or turn.seat != seat
    step = run.steps[0]
    assert step == {
        "deal": 0,
        "seat": seat,
        "source": "autopilot",
        "action": action,
        "events": step["events"],
    }
    assert step["events"] and all(e["source"] == "autopilot" for e in step["events"])


def test_redeal_seeds_are_the_documented_derivation() -> None:
    """Pins ``redeal_seed`` (the first 6 bytes, big-endian, of SHA-256 of
    ``arena-redeal:SEED:ATTEMPT:INDEX``): ``arena season verify`` (referee/seasons/verify.py)
    re-derives a retried match's deals with it, so a change would fail every season
    already played with a retry. Values computed once and kept."""
    assert redeal_seed(7, 2) == 3010580330609
    assert redeal_seed(7, 2, 0) == 164157383905955
    assert redeal_seed(123456789, 3, 4) == 94771825279979
    assert all(0 <= redeal_seed(s, 2) < 2**48 for s in range(50))


def test_starting_an_attempt_numbers_it_and_marks_the_match_running(
    redis_client: redis.Redis,
) -> None:
    """Pins ``start_attempt`` (the host's first call for a dequeued match): it loads the
    spec, takes the next attempt number (1, then 2 for a retry) and marks the match
    ``running`` under that attempt and worker, with a heartbeat in the running set and the
    season's entry ``running``."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    state = redis_client.hgetall(keys.match_state("m1"))
    assert (state["state"], state["attempt"], state["worker"]) == ("running", "1", "host-1")
    assert state["heartbeat_ms"] == state["started_ms"]
    beat = redis_client.zscore(keys.MATCHES_RUNNING, "m1")
    assert beat is not None and round(beat) == int(state["heartbeat_ms"])
    assert redis_client.hget(keys.season_matches("s1"), "m1") == "running"
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 2, False)
    assert redis_client.hget(keys.match_state("m1"), "worker") == "host-2"


def test_a_retry_is_re_dealt_only_after_an_attempt_that_showed_the_bots_anything(
    redis_client: redis.Redis,
) -> None:
    """Pins the re-deal decision (docs/workers.md "A retry is re-dealt"): an attempt that
    never showed the bots anything (its INCR reply lost in a Redis outage, so the retry
    took the next number; or its host gone before the first message) leaves the scheduled
    deals to the next attempt, which therefore equals an undisturbed run; once an attempt
    has recorded its reveal (``reveal``, before its first message), every later attempt is
    re-dealt. The state keeps the first attempt that revealed."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 2, False)  # 1 showed nothing
    assert reveal(redis_client, "m1", 2)
    assert reveal(redis_client, "m1", 2)  # a retry after a lost reply: still true
    assert redis_client.hget(keys.match_state("m1"), REVEALED) == "2"
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 3, True)
    assert reveal(redis_client, "m1", 3)
    assert redis_client.hget(keys.match_state("m1"), REVEALED) == "2"
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 4, True)
    # a match started and abandoned, never revealed, re-run: its scheduled deals
    run = MatchRun(_host(), spec, 2, redeal=False)
    assert run.spec is spec and "redealt" not in run.record()
    assert MatchRun(_host(), spec, 2).spec == spec.for_attempt(2)  # not said: re-dealt


def test_an_older_attempt_may_not_reveal_once_a_newer_one_started(
    redis_client: redis.Redis,
) -> None:
    """Pins the fence of ``reveal``: attempt 1 (on a host cut off from Redis while a janitor
    started attempt 2) asking to show its deals after attempt 2 began is refused and
    records nothing, since attempt 2 plays the same scheduled deals (it read no reveal) and
    attempt 1's messages would tell the bots the cards of attempt 2's deals. Attempt 2's
    own reveal then goes through."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 2, False)
    assert not reveal(redis_client, "m1", 1)
    assert redis_client.hget(keys.match_state("m1"), REVEALED) is None
    assert not reveal(redis_client, "m2", 1)  # no attempt at all: refused too
    assert reveal(redis_client, "m1", 2)
    assert redis_client.hget(keys.match_state("m1"), REVEALED) == "2"


def test_a_one_off_match_starts_with_no_season_entry(redis_client: redis.Redis) -> None:
    """Pins the start's season flag: a match of no season (``arena match run``) writes its
    state and heartbeat only, nothing for a season (the script's season key is then the
    state itself: a flag wrongly set wrote a stray field into it)."""
    spec = replace(make_spec(), season="")
    assert queue.enqueue_match(redis_client, spec)
    begun = start_attempt(redis_client, "m1", "host-1")
    assert begun == (spec, 1, False)
    state = {str(k): str(v) for k, v in redis_client.hgetall(keys.match_state("m1")).items()}
    assert "m1" not in state
    assert {k for k in state if not k.startswith("start:")} >= {"state", "attempt", "worker"}
    assert [k for k in state if k.startswith("start:")] and state["state"] == "running"


def test_no_attempt_starts_for_a_committed_match_or_a_cancelled_season(
    redis_client: redis.Redis,
) -> None:
    """Pins the two refusals of ``start_attempt``: a match with a result, and a match whose
    season was cancelled before it started (referee/seasons/store.py marks it
    ``cancelled``): None, no attempt number taken, nothing marked running. A match with no
    spec raises ``LookupError`` naming the key."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert commit(redis_client, spec, 1, _result(), {})
    assert start_attempt(redis_client, "m1", "host-1") is None
    assert redis_client.get(keys.match_attempt("m1")) is None
    other = make_spec("m2")
    assert queue.enqueue_match(redis_client, other)
    redis_client.hset(keys.season_matches("s1"), "m2", "cancelled")
    assert start_attempt(redis_client, "m2", "host-1") is None
    assert redis_client.get(keys.match_attempt("m2")) is None
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m2") is None
    assert redis_client.hget(keys.season_matches("s1"), "m2") == "cancelled"
    with pytest.raises(LookupError, match=r"match 'nope' has no spec at .*nope"):
        start_attempt(redis_client, "nope", "host-1")


def test_a_request_sent_again_shows_the_clock_left_since_its_first_send() -> None:
    """Pins ``left_clock`` (docs/workers.md, a bot that left holding a request): the time
    since the first send comes off the move time first, then off the bank, never below
    zero; grace is unchanged; a clock running backwards takes nothing."""
    clock: ClockInfo = {"move_ms": 300, "bank_ms": 400, "grace_ms": 50}
    assert left_clock(clock, 1000.0, 1100.0) == {"move_ms": 200, "bank_ms": 400, "grace_ms": 50}
    assert left_clock(clock, 1000.0, 1300.0) == {"move_ms": 0, "bank_ms": 400, "grace_ms": 50}
    assert left_clock(clock, 1000.0, 1500.5) == {"move_ms": 0, "bank_ms": 199, "grace_ms": 50}
    assert left_clock(clock, 1000.0, 2000.0) == {"move_ms": 0, "bank_ms": 0, "grace_ms": 50}
    assert left_clock(clock, 1000.0, 900.0) == clock


def test_a_commit_is_fenced_by_the_latest_attempt_and_writes_every_key(
    redis_client: redis.Redis,
) -> None:
    """Pins ``commit``: attempt 1 may not commit once attempt 2 has started (it returns
    False and writes nothing); attempt 2's commit stores the result and the record (as
    JSON), adds ``{match_id, season}`` to the results stream (the season driver reads it),
    marks the state ``done`` with the attempt, no error and ``finished_ms``, puts the match
    in the recent list at its finish time and the season's entry ``done``."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 2, False)
    result = {**_result(), "finished_ms": 1234.0, "attempt": 2}
    record = {"steps": [{"seq": 1}], "attempt": 2}
    assert not commit(redis_client, spec, 1, _result(), {"attempt": 1})
    assert redis_client.get(keys.match_result("m1")) is None
    assert redis_client.xlen(keys.RESULTS_STREAM) == 0
    assert commit(redis_client, spec, 2, result, record)  # type: ignore[arg-type]
    assert json.loads(redis_client.get(keys.match_result("m1")) or "") == result
    assert json.loads(redis_client.get(keys.match_record("m1")) or "") == record
    entries: Any = redis_client.xrange(keys.RESULTS_STREAM)
    assert [fields for _, fields in entries] == [{"match_id": "m1", "season": "s1"}]
    state = redis_client.hgetall(keys.match_state("m1"))
    assert (state["state"], state["attempt"], state["error"]) == ("done", "2", "")
    assert state["finished_ms"] == "1234"
    assert redis_client.zscore(keys.MATCHES_RECENT, "m1") == 1234.0
    assert redis_client.hget(keys.season_matches("s1"), "m1") == "done"


def test_the_penalty_told_to_a_bot_sums_its_penalty_events() -> None:
    """Pins ``_penalty`` (the ``penalty`` of an ``action_result``): every PENALTY event of
    the seat counts, whichever of ``amount``, ``chips`` or ``points`` the engine names it
    (the first present); other events and booleans do not."""
    events = [
        Event(EventKind.PENALTY, 0, detail={"amount": 2}),
        Event(EventKind.PENALTY, 0, detail={"chips": 3, "points": 100}),
        Event(EventKind.PENALTY, 0, detail={"points": 5}),
        Event(EventKind.PENALTY, 0, detail={"chips": True}),
        Event(EventKind.PLAY, 0, action="7D", detail={"chips": 50}),
    ]
    assert notices.penalty(events) == 2 + 3 + 5
    assert notices.penalty([]) == 0


def test_the_applied_action_told_to_a_bot_is_the_last_that_took_effect() -> None:
    """Pins ``_applied`` (``applied_action`` of an ``action_result``): the last card played,
    else ``pass`` for a pass, an illegal pass or a timeout, else "" (nothing took effect)."""
    play = Event(EventKind.PLAY, 0, action="8D+9D")
    assert notices.applied([play]) == "8D+9D"
    assert notices.applied([Event(EventKind.TIMEOUT, 0), play]) == "8D+9D"
    assert notices.applied([play, Event(EventKind.ILLEGAL_PASS, 0, action="pass")]) == "pass"
    assert notices.applied([Event(EventKind.PASS, 0, action="pass")]) == "pass"
    assert notices.applied([Event(EventKind.TIMEOUT, 0)]) == "pass"
    assert notices.applied([Event(EventKind.PLAY, 0, action=None)]) == ""
    assert notices.applied([Event(EventKind.INVALID_ACTION, 0, action="XX")]) == ""
    assert notices.applied([Event(EventKind.PENALTY, 0)]) == ""


class _RacedPipeline:
    """A real pipeline that lets ``race()`` run (on another connection) right after the
    ``HGET`` that ``mark_failed`` reads the attempt with: the newer attempt starts between
    the read and the write, deterministically."""

    def __init__(self, pipe: Any, race: Any) -> None:
        self._pipe = pipe
        self._race = race

    def __enter__(self) -> _RacedPipeline:
        self._pipe.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pipe.__exit__(*exc)

    def hget(self, *args: Any) -> Any:
        value = self._pipe.hget(*args)
        self._race()
        return value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)


def test_a_failure_loses_the_race_to_a_newer_attempt_starting_meanwhile(
    redis_client: redis.Redis,
) -> None:
    """Pins the WATCH of the match state in ``mark_failed``: attempt 1's failure read
    attempt 1 in the state, then attempt 2 started before it wrote; the failure must not
    overwrite attempt 2's ``running`` (without the WATCH it marked the match failed)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    _mark_running(redis_client, spec, 1)
    other = redis.Redis(connection_pool=redis_client.connection_pool)

    class _Client:
        def pipeline(self, *args: Any, **kwargs: Any) -> _RacedPipeline:
            race = lambda: _mark_running(other, spec, 2, "host-2")  # noqa: E731
            return _RacedPipeline(redis_client.pipeline(*args, **kwargs), race)

    _mark_failed(cast(redis.Redis, _Client()), spec, 1, "RuntimeError: attempt 1 crashed")
    status = queue.match_status(redis_client, "m1")
    assert (status["state"], status["attempt"], status["worker"]) == ("running", "2", "host-2")
    assert not status.get("error")


class _RacedGetPipeline(_RacedPipeline):
    """Lets ``race()`` run right after the ``GET`` of the latest attempt in ``commit``."""

    def hget(self, *args: Any) -> Any:
        return self._pipe.hget(*args)

    def get(self, *args: Any) -> Any:
        value = self._pipe.get(*args)
        self._race()
        return value


def test_a_commit_loses_the_race_to_a_newer_attempt_starting_meanwhile(
    redis_client: redis.Redis,
) -> None:
    """Pins the WATCH of the attempt counter in ``commit``: attempt 1 read that it is the
    latest, then attempt 2 started (a janitor judged attempt 1 lost) before the commit's
    EXEC; attempt 1 must not commit (without the WATCH it did, and attempt 2 would play a
    match that already has a result)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    other = redis.Redis(connection_pool=redis_client.connection_pool, decode_responses=True)

    class _Client:
        raced = False

        def pipeline(self, *args: Any, **kwargs: Any) -> Any:
            pipe = redis_client.pipeline(*args, **kwargs)
            if self.raced:  # the commit checking again after its EXEC lost to the WATCH
                return pipe
            self.raced = True
            race = lambda: start_attempt(other, "m1", "host-2")  # noqa: E731
            return _RacedGetPipeline(pipe, race)

    assert not commit(cast(redis.Redis, _Client()), spec, 1, _result(), {})
    assert redis_client.get(keys.match_result("m1")) is None
    assert redis_client.xlen(keys.RESULTS_STREAM) == 0
    status = queue.match_status(redis_client, "m1")
    assert (status["state"], status["attempt"]) == ("running", "2")


def test_a_commit_after_a_failed_attempt_clears_the_error_and_counts_the_match(
    redis_client: redis.Redis,
) -> None:
    """Pins the rest of ``commit``'s writes: a match whose attempt 1 failed and attempt 2
    committed is ``done`` with no error left from attempt 1, and the committed match is
    counted once per game (``arena_matches_total{game,kind="committed"}``) with each seat's
    timeouts per season and bot (docs/metrics.md)."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    _mark_failed(redis_client, spec, 1, "RuntimeError: attempt 1 crashed")
    assert queue.match_status(redis_client, "m1")["error"] == "RuntimeError: attempt 1 crashed"
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 2, False)
    seat = {"bot": "a", "timeouts": 2, "invalid_actions": 0, "illegal_passes": 0}
    result = {**_result(), "stats": [{**seat, "autopilot": False, "decisions": 3}]}
    assert commit(redis_client, spec, 2, result, {})  # type: ignore[arg-type]
    status = queue.match_status(redis_client, "m1")
    assert (status["state"], status["attempt"], status["error"]) == ("done", "2", "")
    counters = read_counters(redis_client)
    assert counters["arena_matches_total"]["game=fake,kind=committed"] == 1
    assert counters["arena_matches_total"]["game=fake,kind=failed"] == 1
    assert counters["arena_timeouts_total"] == {"bot=a,season=s1": 2}


# --- found by `make mutate` (area runner, 2026-12-01, fourth session) ----------------------


def _outage(monkeypatch: pytest.MonkeyPatch, failures: int) -> list[float | None]:
    """``start_attempt`` against a Redis that fails ``failures`` times, on a fake clock that
    moves 1 s per sleep whatever the delay (a loaded machine): returns the sleeps made."""
    clock = [0.0]
    sleeps: list[float | None] = []

    def sleep(delay: float | None) -> None:
        sleeps.append(delay)
        clock[0] += 1.0

    def flaky(conn: Any, match_id: str, worker: str, token: str) -> Any:
        if len(sleeps) < failures:
            raise redis.ConnectionError("Error 113 connecting to 198.18.17.2:6379.")
        return ("spec", 1)

    fake_time = SimpleNamespace(monotonic=lambda: clock[0], sleep=sleep)
    monkeypatch.setattr(attempts, "time", fake_time)
    monkeypatch.setattr(attempts, "_start_attempt", flaky)
    return sleeps


def test_starting_an_attempt_waits_out_an_outage_backing_off_until_its_patience_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``start_attempt``'s wait for Redis (``BEGIN_PATIENCE_S`` = 60 s): after each
    connection error it sleeps 0.2 s, doubling, at most 5 s, and tries again; it raises
    once the next sleep would end past the patience (a sleep ending exactly at it is still
    made). Here the clock moves 1 s per sleep: sleeps at 0..55 s, the error at 56 s (55 +
    5 = 60 is not past 60). tests/workers/test_begin_retry.py plays it on real Redis."""
    sleeps = _outage(monkeypatch, failures=3)
    assert attempts.start_attempt(cast(redis.Redis, None), "m1", "w1") == cast(Any, ("spec", 1))
    assert sleeps == pytest.approx([0.2, 0.4, 0.8])
    sleeps = _outage(monkeypatch, failures=1_000)
    with pytest.raises(redis.ConnectionError):
        attempts.start_attempt(cast(redis.Redis, None), "m1", "w1")
    assert sleeps == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2] + [5.0] * 51)


def test_a_spec_keeps_every_field_through_its_stored_json() -> None:
    """Pins ``MatchSpec.to_dict``/``from_dict`` (the spec a season or ``arena match run``
    stores under ``keys.match_spec`` and the host loads): every field, named as stored,
    comes back as it was, none of them at its default here; a spec whose deals the rules
    decide (``deals=None``) stays so."""
    spec = make_spec(
        rules={"hand": 4},
        deals=(DealSpec(11, rotation=1, dealer=2), DealSpec(12)),
        time_control=TimeControl(move_ms=1, bank_ms=2, grace_ms=3, queue_ms=4, absent_ms=5),
        strikes=0,
        autoplay_forced=True,
        fallback=FallbackMode.INVALID,
    )
    stored = json.loads(spec.to_json())
    assert stored == {
        "match_id": "m1",
        "game": "fake",
        "rules": {"hand": 4},
        "seats": ["a", "b"],
        "seed": 7,
        "deals": [d.to_dict() for d in spec.deals or ()],
        "time_control": {
            "move_ms": 1,
            "bank_ms": 2,
            "grace_ms": 3,
            "queue_ms": 4,
            "absent_ms": 5,
        },
        "season": "s1",
        "strikes": 0,
        "autoplay_forced": True,
        "fallback": "invalid",
    }
    assert MatchSpec.from_json(spec.to_json()) == spec
    ruled = replace(spec, deals=None)
    assert json.loads(ruled.to_json())["deals"] is None
    assert MatchSpec.from_json(ruled.to_json()) == ruled


def test_a_spec_stored_without_its_optional_fields_gets_their_defaults() -> None:
    """Pins the defaults of ``MatchSpec.from_dict`` and ``TimeControl.from_dict`` (a spec
    stored before a field existed, or written by hand): no deals (the rules decide), the
    default clock (1000/5000/50 ms, 30 s of queue, 3 s absent), no season, 3 strikes, no
    forced autoplay; a clock naming some fields keeps the defaults of the others."""
    spec = MatchSpec.from_dict(
        {"match_id": "m1", "game": "fake", "rules": {}, "seats": ["a", "b"], "seed": 7}
    )
    assert spec == MatchSpec("m1", "fake", {}, ("a", "b"), 7)
    assert (spec.deals, spec.season, spec.strikes, spec.autoplay_forced) == (None, "", 3, False)
    assert spec.fallback == FallbackMode.COUNT  # a fallback answer is played and counted
    assert spec.time_control.to_dict() == {
        "move_ms": 1000,
        "bank_ms": 5000,
        "grace_ms": 50,
        "queue_ms": 30_000,
        "absent_ms": 3000,
    }
    assert TimeControl.from_dict({}) == TimeControl()
    assert TimeControl.from_dict({"move_ms": 200}).to_dict() == {
        **TimeControl().to_dict(),
        "move_ms": 200,
    }


def test_a_retry_is_re_dealt_from_the_documented_seeds_keeping_rotation_and_dealer() -> None:
    """Pins ``MatchSpec.for_attempt`` (docs/DECISIONS.md "A retried match is re-dealt"):
    attempt 1 (or less) plays the spec as stored; attempt ``k`` replaces the match seed by
    ``redeal_seed(seed, k)`` and deal ``i``'s seed by ``redeal_seed(seed_i, k, i)``, each
    deal's rotation and dealer kept (duplicate deals stay duplicates), everything else
    unchanged; a spec whose rules decide its deals keeps none. ``arena season verify``
    re-derives these seeds."""
    spec = make_spec(deals=(DealSpec(11, rotation=1, dealer=1), DealSpec(12, rotation=0)))
    assert spec.for_attempt(1) is spec and spec.for_attempt(0) is spec
    retry = spec.for_attempt(3)
    assert retry == replace(
        spec,
        seed=redeal_seed(7, 3),
        deals=(
            DealSpec(redeal_seed(11, 3, 0), rotation=1, dealer=1),
            DealSpec(redeal_seed(12, 3, 1), rotation=0, dealer=None),
        ),
    )
    assert make_spec(deals=None).for_attempt(2) == make_spec(deals=None, seed=redeal_seed(7, 2))


def test_the_outcome_told_for_a_refusal_or_an_illegal_pass_names_the_rule_broken() -> None:
    """Pins ``_outcome``'s wording for engines that give less detail: a refusal is told
    with the engine's reason code and its message, else the reason, else "not a legal
    action" (code ``invalid_action``); an illegal pass (SV-18) with the engine's message,
    else the rule in words."""
    answer = Reply("XX", 1.0, "")

    def refused(reason: str | None, detail: dict[str, Any]) -> Any:
        return notices.outcome(
            answer, [Event(EventKind.INVALID_ACTION, 0, 0, "XX", reason, detail=detail)]
        )

    assert refused("not_legal", {"message": "play a 7"}) == (
        "refused",
        "not_legal",
        "'XX' refused: play a 7",
    )
    assert refused("not_legal", {}) == ("refused", "not_legal", "'XX' refused: not_legal")
    assert refused(None, {}) == ("refused", "invalid_action", "'XX' refused: not a legal action")
    passed = Event(EventKind.ILLEGAL_PASS, 0, 0, "pass", "illegal_pass", detail={"message": "7D"})
    assert notices.outcome(answer, [passed]) == (
        "accepted",
        "illegal_pass",
        "illegal pass (SV-18): 7D",
    )
