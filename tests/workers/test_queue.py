"""referee.queue against real Redis: enqueue once, statuses, listing, abandoned retries."""

from __future__ import annotations

import threading

import redis

from referee import keys, queue
from referee.match.messages import now_ms
from referee.match.spec import MatchSpec, TimeControl
from referee.metrics_store import read_counters


def spec(match_id: str = "q1", season: str = "s1", **kw: object) -> MatchSpec:
    return MatchSpec(
        match_id=match_id,
        game="sevens",
        rules={"name": "fan-tan"},
        seats=("a", "b", "c"),
        seed=1,
        season=season,
        **kw,  # type: ignore[arg-type]
    )


def test_enqueued_once_even_when_racing(redis_client: redis.Redis) -> None:
    outcomes: list[bool] = []

    def one() -> None:
        conn = redis.Redis(connection_pool=redis_client.connection_pool)
        outcomes.append(queue.enqueue_match(conn, spec()))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == [False] * 7 + [True]
    assert queue.get_queue(redis_client).job_ids == [queue.job_id("q1")]
    assert queue.match_status(redis_client, "q1")["state"] == "queued"
    assert queue.get_spec(redis_client, "q1") == spec()
    assert queue.match_status(redis_client, "nope") == {"match_id": "nope", "state": "unknown"}


def test_committed_match_is_not_enqueued_again(redis_client: redis.Redis) -> None:
    redis_client.set(keys.match_result("q1"), "{}")
    assert not queue.enqueue_match(redis_client, spec())
    assert queue.get_queue(redis_client).job_ids == []


def test_job_timeout_grows_with_the_time_control() -> None:
    short = queue.job_timeout_s(spec(time_control=TimeControl(move_ms=100, bank_ms=0)))
    long = queue.job_timeout_s(spec(time_control=TimeControl(move_ms=5000, bank_ms=60_000)))
    assert 300 < short < long


def test_list_matches_newest_first_and_by_season(redis_client: redis.Redis) -> None:
    for i, season in enumerate(["s1", "s2", "s1"]):
        assert queue.enqueue_match(redis_client, spec(f"m{i}", season))
    assert [m["match_id"] for m in queue.list_matches(redis_client, None, 10)] == [
        "m2",
        "m1",
        "m0",
    ]
    assert [m["match_id"] for m in queue.list_matches(redis_client, "s1", 10)] == ["m2", "m0"]
    assert len(queue.list_matches(redis_client, None, 1)) == 1


def _running(conn: redis.Redis, match_id: str, attempt: int, beat_ms: float) -> None:
    conn.hset(keys.match_state(match_id), mapping={"state": "running", "attempt": attempt})
    conn.zadd(keys.MATCHES_RUNNING, {match_id: beat_ms})


def test_abandoned_attempt_is_requeued_once_with_its_own_job(redis_client: redis.Redis) -> None:
    assert queue.enqueue_match(redis_client, spec())
    queue.get_queue(redis_client).empty()  # type: ignore[no-untyped-call]
    old = now_ms() - 60_000
    _running(redis_client, "q1", 3, old)
    cutoff = now_ms() - 10_000
    assert not queue.requeue_abandoned(redis_client, "q1", 2, cutoff)  # not that attempt
    assert queue.requeue_abandoned(redis_client, "q1", 3, cutoff)
    assert not queue.requeue_abandoned(redis_client, "q1", 3, cutoff)  # already done
    status = queue.match_status(redis_client, "q1")
    assert status["state"] == "queued" and status["retries"] == "1"
    assert queue.get_queue(redis_client).job_ids == [queue.job_id("q1", 3)]
    counters = read_counters(redis_client)
    assert counters["arena_matches_total"]["game=sevens,kind=retried"] == 1


def test_fresh_heartbeat_is_left_alone(redis_client: redis.Redis) -> None:
    assert queue.enqueue_match(redis_client, spec())
    _running(redis_client, "q1", 1, now_ms())
    assert not queue.requeue_abandoned(redis_client, "q1", 1, now_ms() - 10_000)


def test_too_many_retries_fail_the_match(redis_client: redis.Redis) -> None:
    assert queue.enqueue_match(redis_client, spec())
    _running(redis_client, "q1", 9, now_ms() - 60_000)
    redis_client.hset(keys.match_state("q1"), "retries", queue.MAX_RETRIES)
    assert not queue.requeue_abandoned(redis_client, "q1", 9, now_ms() - 10_000)
    status = queue.match_status(redis_client, "q1")
    assert status["state"] == "failed" and "gave up" in status["error"]
    assert redis_client.hget(keys.season_matches("s1"), "q1") == "failed"
