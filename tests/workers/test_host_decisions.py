"""What a match host decides about its matches (``workers/host.py``), without processes:
which attempts are superseded and which matches heartbeat (``tick``), what a played match
ends as (``_play``: committed, duplicate, left, superseded, failed), the commit retried
while Redis is away (``_commit``) and the matches handed back on a stop (``_finish``,
``_hand_back``). Real Redis and a real ``MatchHost`` (RQ registration included); the match
itself is a stand-in. Fast enough for the ``host`` mutation area (``make mutate``).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
import redis
from rq import Queue
from rq.executions import Execution
from rq.intermediate_queue import IntermediateQueue

from referee import keys, queue, records
from referee.errors import RecordStoreError
from referee.match.messages import now_ms
from referee.queue import RunningMatches
from tests.metrics.test_host_totals import host  # noqa: F401  (the fixture)  # noqa: F401  (the fixture)
from tests.workers.test_runner import make_spec
from workers import host as host_module
from workers.attempts import REVEALED, Started, Superseded, commit, start_attempt
from workers.host import MatchHost, Running
from workers.metrics import HostMetrics


@pytest.fixture
def jobs(host: MatchHost, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:  # noqa: F811
    """The host's RQ job endings, recorded instead of written: (``ok``/``failed``, the
    outcome or the failure text); each must name a running match of the host."""
    ended: list[tuple[str, str]] = []

    def end(kind: str, running: Any, text: str) -> None:
        assert isinstance(running, Running), f"a job ended without its match: {running!r}"
        ended.append((kind, text))

    monkeypatch.setattr(host, "_succeed_job", lambda r, outcome: end("ok", r, outcome))
    monkeypatch.setattr(host, "_fail_job", lambda r, text: end("failed", r, text))
    yield ended


def _running(run: Any = None) -> Running:
    return Running(job=SimpleNamespace(id="job"), execution=SimpleNamespace(), run=run)  # type: ignore[arg-type]


def test_a_tick_beats_for_the_running_matches_and_names_the_superseded_ones(
    host: MatchHost,  # noqa: F811
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``tick``'s decisions: a match whose latest attempt (``keys.match_attempt``) is
    not the one this host plays is superseded (its run stops and commits nothing); one
    with the same attempt, no attempt key, or no run yet is not. Each running match's
    heartbeat in the running set is renewed, never added (a match the janitor already
    removed stays out), the host's own beat written; every 30th tick (RQ's beat) also
    the state's ``heartbeat_ms``. Checked on a tick with and without that RQ beat."""
    monkeypatch.setattr(host, "_rq_heartbeats", lambda runs: None)
    redis_client.set(keys.match_attempt("m1"), 2)
    redis_client.set(keys.match_attempt("m2"), 1)
    redis_client.set(keys.match_attempt("m4"), 5)
    runs = {
        "m1": _running(SimpleNamespace(attempt=1)),  # attempt 2 started elsewhere
        "m2": _running(SimpleNamespace(attempt=1)),
        "m3": _running(SimpleNamespace(attempt=1)),  # no attempt key
        "m4": _running(None),  # not started yet
    }
    for rq_beat in (True, False):
        RunningMatches(redis_client).beat({"m1": 1.0, "m2": 1.0})
        redis_client.delete(keys.match_state("m1"))
        host._ticks = 0 if rq_beat else 1  # the tick makes it 1 (an RQ beat) or 2
        before = now_ms()
        assert host.tick(host.conn, runs, HostMetrics()) == ["m1"]
        for mid in ("m1", "m2"):
            beat = redis_client.zscore(keys.MATCHES_RUNNING, mid)
            assert beat is not None and beat >= before - 1
        assert redis_client.zscore(keys.MATCHES_RUNNING, "m3") is None
        alive = redis_client.hget(keys.WORKERS_ALIVE, "host-a")
        assert alive is not None and int(alive) >= before - 1
        state_beat = redis_client.hget(keys.match_state("m1"), "heartbeat_ms")
        assert (state_beat is not None) == rq_beat
        if state_beat is not None:
            assert int(state_beat) >= before - 1
    assert host.tick(host.conn, {}, HostMetrics()) == []


class _Run:
    """Stands in for ``runner.MatchRun`` in ``_play``: ``play`` raises ``error`` if any."""

    error: Exception | None = None

    def __init__(self, owner: Any, spec: Any, attempt: int, redeal: bool | None = None) -> None:
        self.owner, self.spec, self.attempt, self.redeal = owner, spec, attempt, redeal
        self.ended = self.played = False

    async def play(self) -> None:
        self.played = True
        if self.error is not None:
            raise self.error

    def notify_match_end(self) -> None:
        self.ended = True


@pytest.mark.parametrize(
    ("error", "committed", "outcome", "ended"),
    [
        (None, True, "committed", True),
        (None, False, "duplicate", False),
        (None, None, "left", False),
        (Superseded("a newer attempt"), True, "superseded", False),
    ],
)
def test_a_played_match_ends_its_job_with_what_became_of_it(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception | None,
    committed: bool | None,
    outcome: str,
    ended: bool,
) -> None:
    """Pins ``_play``'s outcomes (docs/workers.md "The life of a match"): committed (the
    bots are told the match end, only then), a duplicate (the fenced commit refused: told
    nothing), left (Redis stayed away: the janitor re-runs it), superseded (a newer
    attempt: no commit tried); each ends its job as a success with that outcome and frees
    its slot."""
    commits: list[Any] = []

    async def fake_commit(run: Any) -> bool | None:
        commits.append(run)
        return committed

    monkeypatch.setattr(host_module, "MatchRun", type("Run", (_Run,), {"error": error}))
    monkeypatch.setattr(host, "_commit", fake_commit)
    spec = make_spec()
    running = _running()
    host.runs["m1"] = running
    host._slot_free.clear()
    host.conn.set(keys.match_attempt("m1"), 3)  # attempt 3 is the latest
    asyncio.run(host._play(running, Started(spec, 3, True)))
    run = running.run
    assert isinstance(run, _Run) and (run.owner, run.spec, run.attempt) == (host, spec, 3)
    assert run.redeal is True and run.played
    assert host.conn.hget(keys.match_state("m1"), REVEALED) == "3"  # before it played
    assert jobs == [("ok", outcome)] and run.ended is ended
    assert commits == ([] if error is not None else [run])
    assert "m1" not in host.runs and host._slot_free.is_set()


def test_a_match_that_raises_is_marked_failed_for_its_attempt(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_play``'s failure path: an exception in the match marks the match failed for
    this attempt (``mark_failed``: type and message), fails its job with the traceback,
    commits nothing and frees the slot."""
    failed: list[tuple[Any, ...]] = []
    monkeypatch.setattr(
        host_module, "MatchRun", type("Run", (_Run,), {"error": RuntimeError("boom")})
    )
    monkeypatch.setattr(host_module, "mark_failed", lambda conn, *args: failed.append(args))
    monkeypatch.setattr(host_module, "commit", lambda *a: pytest.fail("committed"))
    spec = make_spec()
    running = _running()
    host.runs["m1"] = running
    host.conn.set(keys.match_attempt("m1"), 2)
    asyncio.run(host._play(running, Started(spec, 2, False)))
    assert failed == [(spec, 2, "RuntimeError: boom")]
    assert len(jobs) == 1 and jobs[0][0] == "failed"
    assert "Traceback" in jobs[0][1] and "RuntimeError: boom" in jobs[0][1]
    assert "m1" not in host.runs and host._slot_free.is_set()


def test_a_match_frees_its_slot_even_when_redis_fails_its_bookkeeping(
    host: MatchHost,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins the ``suppress(RedisError)`` around a played match's bookkeeping in ``_play``:
    with Redis failing when the job is ended (after a commit) or the failure recorded
    (after an exception), the match still leaves ``runs`` and frees its slot (the janitor
    and RQ's cleanup see to the rest); otherwise the slot would be lost for good."""

    def away(*args: Any) -> None:
        raise redis.ConnectionError("Redis is away")

    async def committed(run: Any) -> bool:
        return True

    monkeypatch.setattr(host, "_succeed_job", away)
    monkeypatch.setattr(host, "_fail_job", away)
    monkeypatch.setattr(host_module, "mark_failed", away)
    monkeypatch.setattr(host, "_commit", committed)
    for error in (None, RuntimeError("boom")):
        monkeypatch.setattr(host_module, "MatchRun", type("Run", (_Run,), {"error": error}))
        running = _running()
        host.runs["m1"] = running
        host._slot_free.clear()
        host.conn.set(keys.match_attempt("m1"), 1)
        asyncio.run(host._play(running, Started(make_spec(), 1, False)))
        assert "m1" not in host.runs and host._slot_free.is_set()


def test_an_attempt_superseded_before_it_showed_anything_plays_nothing(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins the reveal step of ``_play`` (docs/workers.md "A retry is re-dealt"): an
    attempt whose match has a newer attempt by the time it would send its first message
    (a janitor judged it lost meanwhile) plays nothing, sends the bots nothing, records no
    reveal (the newer attempt may be playing the same deals) and commits nothing; its job
    ends ``superseded``. With no newer attempt it records its reveal first, and a later
    attempt of the match then starts re-dealt."""
    monkeypatch.setattr(host_module, "MatchRun", _Run)
    monkeypatch.setattr(host, "_commit", lambda run: pytest.fail("committed"))
    spec = make_spec()
    assert queue.enqueue_match(host.conn, spec)
    first = start_attempt(host.conn, "m1", "host-a")
    assert first == (spec, 1, False)
    assert start_attempt(host.conn, "m1", "host-b") == (spec, 2, False)  # the janitor's retry
    running = _running()
    host.runs["m1"] = running
    asyncio.run(host._play(running, first))
    run = running.run
    assert isinstance(run, _Run) and not run.played
    assert jobs == [("ok", "superseded")]
    assert host.conn.hget(keys.match_state("m1"), REVEALED) is None
    # attempt 2 showed nothing either: attempt 3 plays the scheduled deals
    assert start_attempt(host.conn, "m1", "host-b") == (spec, 3, False)


def test_a_commit_is_retried_while_redis_is_away_and_given_up_after_a_while(
    host: MatchHost,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_commit``: the fenced commit of the run's spec, attempt, result and record is
    tried again every ``COMMIT_RETRY_S`` while Redis errors, its answer returned as it is
    (a refused commit is False); after ``COMMIT_GIVE_UP_S`` of errors it gives up (None:
    the janitor re-runs the match, the fence keeps it exactly once)."""
    calls: list[tuple[Any, ...]] = []
    errors = [2]

    def flaky(conn: Any, *args: Any) -> bool:
        calls.append(args)
        if errors[0] > 0:
            errors[0] -= 1
            raise redis.ConnectionError("Redis is away")
        return False

    monkeypatch.setattr(host_module, "commit", flaky)
    monkeypatch.setattr(host_module, "COMMIT_RETRY_S", 0.01)
    ref = records.RecordRef(host.records.url, "matches/s1/m1/a4-d.json.zst", "d" * 64, 1)
    saved: list[Any] = []

    def save(store: Any, record: Any) -> records.RecordRef:
        saved.append(record)
        return ref

    monkeypatch.setattr(records, "save_record", save)
    run = SimpleNamespace(
        spec=make_spec(),
        attempt=4,
        committed_result=lambda: {"r": 1},
        record=lambda: {"steps": []},
    )
    assert asyncio.run(host._commit(run)) is False  # type: ignore[arg-type]
    assert calls == [(run.spec, 4, {"r": 1}, ref)] * 3  # the record's pointer, written once
    assert saved == [{"steps": []}]
    errors[0] = 10**6
    monkeypatch.setattr(host_module, "COMMIT_GIVE_UP_S", 0.05)
    assert asyncio.run(host._commit(run)) is None  # type: ignore[arg-type]
    assert 3 + 2 <= len(calls) < 3 + 1000
    # On a clock read once for the deadline (0) and once after each error: it gives up
    # at the first error past COMMIT_GIVE_UP_S (1 s here), not at or before it.
    monkeypatch.setattr(host_module, "COMMIT_GIVE_UP_S", 1.0)
    for times, tries in (([0.0, 1_000.0, 2_000.0], 2), ([0.0, 1_000.5], 1)):
        clock = iter(times)
        monkeypatch.setattr(host_module, "now_ms", functools.partial(next, clock))
        calls.clear()
        assert asyncio.run(host._commit(run)) is None  # type: ignore[arg-type]
        assert len(calls) == tries


def test_a_commit_that_loses_deletes_the_record_it_wrote_and_a_winner_keeps_it(
    host: MatchHost,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins the end of ``_commit``: a refused commit (superseded, or the match committed by
    another attempt) deletes the record this attempt wrote from the host's record store, a
    store away for that delete changes nothing, and a commit that wins keeps its record."""
    ref = records.RecordRef(host.records.url, "matches/s1/m1/a4-d.json.zst", "d" * 64, 1)
    monkeypatch.setattr(records, "save_record", lambda store, record: ref)
    won = [False]
    monkeypatch.setattr(host_module, "commit", lambda conn, *args: won[0])
    deleted: list[tuple[Any, Any]] = []
    store_away = [False]

    def delete(found: Any, store: Any) -> None:
        deleted.append((found, store))
        if store_away[0]:
            raise RecordStoreError("the record store is away")

    monkeypatch.setattr(records, "delete_record", delete)
    run = SimpleNamespace(
        spec=make_spec(), attempt=4, committed_result=lambda: {"r": 1}, record=lambda: {}
    )
    assert asyncio.run(host._commit(run)) is False  # type: ignore[arg-type]
    assert deleted == [(ref, host.records)]
    store_away[0] = True
    assert asyncio.run(host._commit(run)) is False  # type: ignore[arg-type]
    assert len(deleted) == 2
    won[0] = True
    assert asyncio.run(host._commit(run)) is True  # type: ignore[arg-type]
    assert len(deleted) == 2


def test_a_record_store_away_holds_the_commit_until_it_is_back_or_given_up(
    host: MatchHost,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_save_record``: the record is written before the commit, tried again every
    ``COMMIT_RETRY_S`` while the store raises ``RecordStoreError``; nothing is committed
    until it is written; given up (None, nothing committed) past ``COMMIT_GIVE_UP_S`` or
    when a newer attempt took the match over."""
    commits: list[Any] = []

    def fake_commit(conn: Any, *args: Any) -> bool:
        commits.append(args)
        return True

    monkeypatch.setattr(host_module, "commit", fake_commit)
    monkeypatch.setattr(host_module, "COMMIT_RETRY_S", 0.01)
    ref = records.RecordRef(host.records.url, "matches/s1/m1/a4-d.json.zst", "d" * 64, 1)
    away = [3]

    def save(store: Any, record: Any) -> records.RecordRef:
        if away[0] > 0:
            away[0] -= 1
            assert commits == []  # no commit before the record is written
            raise RecordStoreError("the record store is away")
        return ref

    monkeypatch.setattr(records, "save_record", save)
    run = SimpleNamespace(
        spec=make_spec(),
        attempt=4,
        superseded=False,
        committed_result=lambda: {"r": 1},
        record=lambda: {"steps": []},
    )
    assert asyncio.run(host._commit(run)) is True  # type: ignore[arg-type]
    assert away == [0] and commits == [(run.spec, 4, {"r": 1}, ref)]
    commits.clear()
    away[0] = 10**6
    run.superseded = True
    assert asyncio.run(host._commit(run)) is None  # type: ignore[arg-type]
    run.superseded = False
    monkeypatch.setattr(host_module, "COMMIT_GIVE_UP_S", 0.05)
    assert asyncio.run(host._commit(run)) is None  # type: ignore[arg-type]
    assert commits == []


def test_a_stopping_host_hands_back_the_matches_still_running_after_the_grace(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    redis_client: redis.Redis,
) -> None:
    """Pins ``_finish`` and ``_hand_back`` (SIGTERM, docs/workers.md): a match still
    playing when the grace ends is cancelled and re-enqueued at once for a new attempt
    (state ``queued``, no longer in the running set), its job failed with the reason; a
    match that finishes within the grace and one not started yet are not handed back."""
    spec, quick = make_spec("m1"), make_spec("m2")
    for s in (spec, quick):
        assert queue.enqueue_match(redis_client, s)
        assert start_attempt(redis_client, s.match_id, "host-a") == (s, 1, False)

    async def stop() -> None:
        async def forever() -> None:
            await asyncio.sleep(3600)

        async def finishes() -> None:
            host._done("m2")

        host.runs = {
            "m3": _running(None),  # first: the others are still handed back
            "m1": _running(SimpleNamespace(spec=spec, attempt=1)),
            "m2": _running(SimpleNamespace(spec=quick, attempt=1)),
        }
        host.runs["m1"].task = asyncio.ensure_future(forever())
        host.runs["m2"].task = asyncio.ensure_future(finishes())
        await host._finish(0.2)
        assert host.runs == {}

    asyncio.run(stop())
    assert jobs == [("failed", "handed back by host-a on shutdown; re-enqueued: True")]
    assert queue.match_status(redis_client, "m1")["state"] == "queued"
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m1") is None
    assert queue.match_status(redis_client, "m2")["state"] == "running"


def test_a_hand_back_that_redis_refuses_does_not_stop_the_others(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins the ``suppress(RedisError)`` of ``_finish``: a match whose hand back fails on a
    Redis error (the janitor re-runs it once its heartbeat lapses) does not keep the
    other matches from being handed back, nor the host from stopping."""
    specs = [make_spec("m1"), make_spec("m2")]
    for s in specs:
        assert queue.enqueue_match(redis_client, s)
        assert start_attempt(redis_client, s.match_id, "host-a") == (s, 1, False)
    requeue = queue.requeue_abandoned

    def flaky(conn: Any, mid: str, *args: Any) -> bool:
        if mid == "m1":
            raise redis.ConnectionError("Redis is away")
        return requeue(conn, mid, *args)

    monkeypatch.setattr(queue, "requeue_abandoned", flaky)

    async def stop() -> None:
        host.runs = {s.match_id: _running(SimpleNamespace(spec=s, attempt=1)) for s in specs}
        await host._finish(0.0)

    asyncio.run(stop())
    assert jobs == [("failed", "handed back by host-a on shutdown; re-enqueued: True")]
    assert queue.match_status(redis_client, "m2")["state"] == "queued"
    assert host.runs == {}


def test_the_tick_runs_the_janitor_and_rqs_chores_on_their_own_cadence(
    host: MatchHost,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins the cadence of ``tick`` (docs/workers.md "Match hosts and RQ"): RQ's heartbeats
    for the running matches every ``RQ_BEAT_EVERY`` (30) ticks from the first, the
    give-back of jobs a dead host dequeued every ``GIVE_BACK_EVERY`` (10), RQ's registry
    cleanup of both queues (seasons' and casual) every ``CLEAN_EVERY`` (30), the janitor
    every tick; after a Redis outage the janitor waits ``stale_s`` + ``OUTAGE_SLACK_S``
    from the first tick that got through (every host saw the outage: their heartbeats need
    that long to flow again), and runs again from that time on (frozen clock)."""
    chores: list[tuple[str, int]] = []
    monkeypatch.setattr(host, "_rq_heartbeats", lambda r: chores.append(("rq", len(r))))
    monkeypatch.setattr(host, "_give_back_unstarted_jobs", lambda: chores.append(("give", 0)))
    monkeypatch.setattr(
        host_module, "clean_registries", lambda q: chores.append((f"clean {q.name}", 0))
    )
    monkeypatch.setattr(queue, "janitor_pass", lambda conn, stale: chores.append(("jan", 0)))
    clock = [1_000_000.0]
    monkeypatch.setattr(host_module, "now_ms", lambda: clock[0])
    runs = {"m1": _running(SimpleNamespace(attempt=1))}
    host._ticks = 0
    seen: dict[int, list[tuple[str, int]]] = {}
    for tick in range(1, 32):
        chores.clear()
        host.tick(host.conn, runs, HostMetrics())
        seen[tick] = sorted(chores)
    cleans = [("clean arena", 0), ("clean arena-casual", 0)]  # both queues' registries
    assert seen[1] == [*cleans, ("give", 0), ("jan", 0), ("rq", 1)]
    assert seen[11] == seen[21] == [("give", 0), ("jan", 0)]
    assert seen[31] == seen[1]
    assert all(seen[t] == [("jan", 0)] for t in seen if t not in (1, 11, 21, 31))
    host._outage = True  # a dequeue or a tick failed on Redis
    chores.clear()
    host.tick(host.conn, runs, HostMetrics())
    judge_after = clock[0] + (host.stale_s + host_module.OUTAGE_SLACK_S) * 1000
    assert host._judge_after_ms == judge_after
    assert ("jan", 0) not in chores and not host._outage
    while clock[0] + 1000.0 < judge_after:  # a tick a second, none judging
        clock[0] += 1000.0
        chores.clear()
        host.tick(host.conn, runs, HostMetrics())
        assert ("jan", 0) not in chores
    clock[0] = judge_after - 1.0
    chores.clear()
    host.tick(host.conn, runs, HostMetrics())
    assert ("jan", 0) not in chores
    clock[0] += 1.0  # the time itself: judged again
    chores.clear()
    host.tick(host.conn, runs, HostMetrics())
    assert ("jan", 0) in chores
    assert host._judge_after_ms == judge_after  # ticks a second apart never re-arm it


def test_a_host_whose_own_beats_stalled_waits_before_judging_as_after_an_outage(
    host: MatchHost,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``OUT_OF_TOUCH_S``: a tick whose writes get through more than 3 s after the
    previous ones (no Redis error: a call, the loop or the machine held it up) judges no
    heartbeat until ``stale_s`` + ``OUTAGE_SLACK_S`` later, like the first tick after an
    outage (found in tests/multihost's 10 s Redis cut: a host whose tick never failed re-ran
    every match the moment Redis came back, their heartbeats all stale through the cut).
    Ticks at most 3 s apart, and the first tick of a host, judge as usual."""
    janitor: list[float] = []
    clock = [1_000_000.0]
    monkeypatch.setattr(host, "_rq_heartbeats", lambda r: None)
    monkeypatch.setattr(host, "_give_back_unstarted_jobs", lambda: None)
    monkeypatch.setattr(host_module, "clean_registries", lambda q: None)
    monkeypatch.setattr(queue, "janitor_pass", lambda conn, stale: janitor.append(clock[0]))
    monkeypatch.setattr(host_module, "now_ms", lambda: clock[0])
    host.tick(host.conn, {}, HostMetrics())  # the first tick: nothing to compare with
    assert janitor == [clock[0]]
    clock[0] += host_module.OUT_OF_TOUCH_S * 1000.0  # 3 s late: still in touch
    host.tick(host.conn, {}, HostMetrics())
    assert janitor[-1] == clock[0]
    stalled_at = clock[0] = clock[0] + host_module.OUT_OF_TOUCH_S * 1000.0 + 1.0
    host.tick(host.conn, {}, HostMetrics())
    assert janitor[-1] != stalled_at
    wait = (host.stale_s + host_module.OUTAGE_SLACK_S) * 1000.0
    assert host._judge_after_ms == stalled_at + wait
    clock[0] = stalled_at + 1000.0
    host.tick(host.conn, {}, HostMetrics())
    assert janitor[-1] != clock[0]


def test_a_dequeued_match_starts_its_attempt_or_ends_its_job_at_once(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    redis_client: redis.Redis,
) -> None:
    """Pins ``_dequeue`` (docs/workers.md "Match hosts and RQ"): a match job taken off the
    queue starts a new attempt of its match at once (running, this host named, in the
    running set: from then on a janitor re-runs it if this host dies), its RQ execution
    open (the job in the started registry, its start time set); a match that already has
    a result ends its job as ``already-done`` and is not played; a match without a spec,
    or a job naming none, fails its job with the ``LookupError``. With the queue empty it
    waits ``DEQUEUE_WAIT_S`` (1 s) for a job, never spinning."""
    specs = [make_spec("m1"), make_spec("m2"), make_spec("m3")]
    for s in specs:
        assert queue.enqueue_match(redis_client, s)
    host.queue.enqueue("workers.host.match_job")  # a job with no match id
    assert commit(redis_client, specs[1], 1, {"finished_ms": 1.0, "stats": []}, {})  # type: ignore[typeddict-item]
    redis_client.delete(keys.match_spec("m3"))
    got = host._dequeue()
    assert got is not None
    running, started = got
    assert started == (specs[0], 1, False) and running.job.args == ("m1",) and running.run is None
    assert running.job.started_at is not None and isinstance(running.execution, Execution)
    assert IntermediateQueue(host.queue.key, connection=host.rq_conn).get_job_ids() == []
    assert running.job.id in host.queue.started_job_registry.get_job_ids()
    status = queue.match_status(redis_client, "m1")
    assert (status["state"], status["attempt"], status["worker"]) == ("running", "1", "host-a")
    assert redis_client.zscore(keys.MATCHES_RUNNING, "m1") is not None
    assert jobs == []
    for mid in ("m2", "m3"):
        got = host._dequeue()
        assert got is not None and got[1] is None and got[0].job.args == (mid,)
    assert jobs[0] == ("ok", "already-done")
    assert jobs[1][0] == "failed" and jobs[1][1].startswith("LookupError: match 'm3' has no spec")
    assert redis_client.get(keys.match_attempt("m2")) is None  # no attempt taken
    got = host._dequeue()
    assert got is not None and got[1] is None and got[0].job.args == ()
    assert jobs[2][0] == "failed" and jobs[2][1].startswith("LookupError: match '' has no spec")
    waited = time.monotonic()
    assert host._dequeue() is None
    assert time.monotonic() - waited >= 0.9


def test_a_job_a_dead_host_dequeued_but_never_started_is_queued_again(
    host: MatchHost,  # noqa: F811
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_give_back_unstarted_jobs``: a job that sits in RQ's intermediate queue (a
    host took it off the queue and died before starting it: its match is 'queued' and
    outside the running set, where no janitor looks) for ``stale_s`` is pushed back to the
    front of the queue, once, and forgotten; a job seen for less long, or one started
    (in the started registry), stays; ids no longer listed are forgotten (frozen clock)."""
    clock = [100.0]
    monkeypatch.setattr(host_module, "time", SimpleNamespace(monotonic=lambda: clock[0]))
    for s in (make_spec("m1"), make_spec("m2"), make_spec("m3")):
        assert queue.enqueue_match(redis_client, s)
    lost = Queue.dequeue_any([host.queue], 1, connection=host.rq_conn)  # a host that died
    started = Queue.dequeue_any([host.queue], 1, connection=host.rq_conn)
    assert lost is not None and started is not None
    host.worker.prepare_execution(started[0])  # started (as _dequeue does), still listed
    host.worker.prepare_job_execution(started[0])
    intermediate = IntermediateQueue(host.queue.key, connection=host.rq_conn)
    assert set(intermediate.get_job_ids()) == {lost[0].id, started[0].id}
    host._unstarted_seen["gone"] = 1.0  # listed once, not any more
    host._give_back_unstarted_jobs()  # first seen now
    assert host._unstarted_seen == {lost[0].id: 100.0, started[0].id: 100.0}
    clock[0] += host.stale_s - 0.01
    host._give_back_unstarted_jobs()
    assert host.queue.get_job_ids()[0] != lost[0].id
    clock[0] += 0.01  # stale_s since it was first seen
    host._give_back_unstarted_jobs()
    assert host.queue.get_job_ids()[0] == lost[0].id and host.queue.count == 2
    assert intermediate.get_job_ids() == [started[0].id]
    assert host._unstarted_seen == {started[0].id: 100.0}
    host._give_back_unstarted_jobs()
    assert host.queue.count == 2  # pushed back once


def test_an_attempt_that_cannot_record_its_reveal_is_left_to_the_janitor(
    host: MatchHost,  # noqa: F811
    jobs: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_reveal``: Redis away through ``reveal``'s patience before the first message
    (the attempt began, then the outage came) leaves the match as ``left``: nothing played,
    nothing committed, not marked failed (a failed match is never run again; this one
    showed nothing, so the janitor's re-run plays its scheduled deals)."""

    def away(conn: Any, match_id: str, attempt: int) -> bool:
        raise redis.ConnectionError("Error 113 connecting to 198.18.17.2:6379.")

    monkeypatch.setattr(host_module, "MatchRun", _Run)
    monkeypatch.setattr(host_module, "reveal", away)
    monkeypatch.setattr(host_module, "mark_failed", lambda *a: pytest.fail("marked failed"))
    monkeypatch.setattr(host, "_commit", lambda run: pytest.fail("committed"))
    running = _running()
    host.runs["m1"] = running
    host._slot_free.clear()
    asyncio.run(host._play(running, Started(make_spec(), 1, False)))
    run = running.run
    assert isinstance(run, _Run) and not run.played
    assert jobs == [("ok", "left")]
    assert "m1" not in host.runs and host._slot_free.is_set()


def test_a_backlog_starts_several_matches_at_once_and_never_more_than_the_slots(
    host: MatchHost,  # noqa: F811
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_dequeue_loop``'s starts (``START_AT_ONCE``): with matches waiting, the host
    takes several at once (dequeues in flight together, the extra ones from the seasons'
    queue without waiting), fills its ``max_matches`` slots and takes no more while they
    are busy; a slot freed takes the next queued match. Matches that start play
    (``_play``, a stand-in here), each once."""
    host.max_matches = 10
    ids = [f"m{i}" for i in range(13)]
    for mid in ids:
        assert queue.enqueue_match(redis_client, make_spec(mid))
    in_flight = [0, 0]  # now, most at once
    dequeue = host._dequeue

    def counted(*args: Any) -> Any:
        in_flight[0] += 1
        in_flight[1] = max(in_flight[1], in_flight[0])
        try:
            time.sleep(0.05)  # every start overlaps the others of its burst
            return dequeue(*args)
        finally:
            in_flight[0] -= 1

    played: list[str] = []
    release = asyncio.Event()

    async def play(running: Running, started: Started) -> None:
        played.append(started.spec.match_id)
        await release.wait()
        host._done(started.spec.match_id)

    monkeypatch.setattr(host, "_dequeue", counted)
    monkeypatch.setattr(host, "_play", play)

    async def scenario() -> None:
        loop_task = asyncio.ensure_future(host._dequeue_loop())
        deadline = time.monotonic() + 10
        while len(played) < 10 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # time to take more, if it would
        assert sorted(played) == sorted(ids[:10]) and len(host.runs) == 10
        assert in_flight[1] == host_module.START_AT_ONCE
        assert redis_client.llen(host.queue.key) == 3
        release.set()  # the ten end: the three left start
        while len(played) < 13 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        host.request_stop()
        await asyncio.wait_for(loop_task, 5)

    asyncio.run(scenario())
    assert sorted(played) == sorted(ids) and redis_client.llen(host.queue.key) == 0


def test_a_season_slot_freed_during_the_casual_wait_takes_the_next_match_at_once(
    host: MatchHost,  # noqa: F811
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_refill_while``: with every season slot busy the host's one blocking dequeue
    waits on the casual queue alone (``DEQUEUE_WAIT_S``, 4 s here); a season slot freed
    meanwhile takes the next queued season match at once, not when that wait ends."""
    monkeypatch.setattr(host_module, "DEQUEUE_WAIT_S", 4)
    host.max_matches = 2
    for mid in ("m0", "m1", "m2"):
        assert queue.enqueue_match(redis_client, make_spec(mid))
    started_at: dict[str, float] = {}
    end_first = asyncio.Event()
    hold = asyncio.Event()

    async def play(running: Running, started: Started) -> None:
        mid = started.spec.match_id
        started_at[mid] = time.monotonic()
        await (end_first if mid == "m0" else hold).wait()
        host._done(mid)

    monkeypatch.setattr(host, "_play", play)

    async def scenario() -> float:
        loop_task = asyncio.ensure_future(host._dequeue_loop())
        deadline = time.monotonic() + 10
        while len(started_at) < 2 and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)  # the dequeue now waits on the casual queue
        assert set(started_at) == {"m0", "m1"}
        freed = time.monotonic()
        end_first.set()
        while "m2" not in started_at and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        host.request_stop()
        hold.set()
        await asyncio.wait_for(loop_task, 10)
        return started_at["m2"] - freed

    # the casual wait had 3.7 s left: without the refill m2 starts when it ends; the bound
    # is half of that, room for a loaded machine's scheduling (at once is a few ms idle)
    took = asyncio.run(scenario())
    assert took < 1.8, f"m2 started {took:.2f} s after the slot was freed"


def test_extra_starts_take_only_the_seasons_queue_without_waiting_and_survive_its_errors(
    host: MatchHost,  # noqa: F811
    redis_client: redis.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins ``_start_more``: with every slot busy it asks Redis nothing; otherwise it reads
    the seasons' queue length once and makes at most that many dequeues, each of the
    seasons' queue alone and without waiting; a dequeue that Redis fails marks an outage
    (the loop's wait-and-retry) instead of ending the loop, and one that raises anything
    else is logged while the other starts go on."""
    calls: list[tuple[Any, ...]] = []
    outcomes: list[Any] = []

    def dequeue(queues: Any, wait: Any) -> Any:
        calls.append((queues, wait))
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(host, "_dequeue", dequeue)
    lengths: list[str] = []

    def llen(key: str) -> int:
        lengths.append(key)
        return 2

    monkeypatch.setattr(host.rq_conn, "llen", llen)
    host.max_matches = 0  # every slot busy
    asyncio.run(host._start_more())
    assert lengths == [] and calls == []
    host.max_matches = 8
    outcomes[:] = [redis.ConnectionError("Redis is away"), ValueError("a bad job")]
    host._outage = False
    asyncio.run(host._start_more())  # two waiting: two dequeues, neither starts a match
    assert lengths == [host.queue.key]
    assert len(calls) == 2 and all(q == [host.queue] and w is False for q, w in calls)
    assert host._outage is True and host.runs == {}


def test_the_grace_counts_from_the_stop_request_not_from_the_end_of_the_dequeue(
    host: MatchHost,  # noqa: F811
) -> None:
    """Pins the grace of ``_finish``: a stop requested a while ago (the dequeue waiting for
    a job took that long to notice) leaves only the rest of the grace; with no stop time
    recorded the whole grace is given. A match that needs 0.3 s more is cancelled when
    less is left and finishes when enough is."""

    async def finish(stop_at: float, grace_s: float) -> bool:
        """Whether a match needing 0.3 s more was cancelled by ``_finish(grace_s)``."""
        host._stop_at = stop_at

        async def plays() -> None:
            await asyncio.sleep(0.3)
            host._done("m1")

        running = _running(None)
        host.runs = {"m1": running}
        running.task = asyncio.ensure_future(plays())
        await host._finish(grace_s)
        assert host.runs == {}
        return running.task.cancelled()

    now = time.monotonic
    assert asyncio.run(finish(now() - 5.0, 5.2)) is True  # 0.2 s left of the grace
    assert asyncio.run(finish(now() - 0.1, 3.1)) is False  # 3.0 s left
    assert asyncio.run(finish(0.0, 1.0)) is False  # no stop time: the whole second
