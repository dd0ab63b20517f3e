"""The season store and driver against a real Redis; matches are played by the workers'
real ``run_match`` in this process (no bot connects, so every seat is judged disconnected
once and the autopilot plays it, strikes = 1), then results flow through the results
stream."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from referee import bots, keys, queue
from referee.errors import ConfigError, ConflictError, NotFoundError
from referee.seasons import driver as driver_mod
from referee.seasons import store
from referee.seasons.driver import SeasonDriver
from referee.seasons.model import SeasonSpec, seed_sha256
from referee.seasons.verify import verify_season
from workers.host import run_match

BOTS = ["ann", "bob", "cat"]


@pytest.fixture
def conn(redis_url: str) -> Iterator[redis.Redis]:
    client = store.connect(redis_url)
    for name in BOTS:
        bots.register(client, name)
    yield client
    client.close()


def _spec(name: str = "s1", seed: int = 99, window: int = 2) -> SeasonSpec:
    return SeasonSpec.from_dict(
        {
            "name": name,
            "game": "sedma",
            "preset": "sedma",
            "bots": BOTS,
            "table_size": 4,
            "deals_per_match": 2,
            "seed": seed,
            # absent_ms 0: no bot connects, so each seat's first decision is judged at
            # once rather than 3 s (the default) past its 5 ms clock
            "time_control": {
                "move_ms": 5,
                "bank_ms": 0,
                "grace_ms": 0,
                "queue_ms": 1,
                "absent_ms": 0,
            },
            "options": {"strikes": 1, "window": window},
        }
    )


class _RunnerRedis(redis.Redis):
    """The runner's connection. Redis 6.2 takes ``BLPOP key 0.001`` as "block forever"
    (0.002 and up work); the runner may ask for 0.001 s when a deadline is that close,
    which hangs a match on a loaded machine. Reported to the workers' owner; until it is
    fixed there, round such timeouts up here."""

    def blpop(self, keys: Any, timeout: float | None = 0) -> Any:
        if timeout and timeout < 0.002:
            timeout = 0.002
        return super().blpop(keys, timeout)


def _run_queued(conn: redis.Redis, season: str) -> int:
    # the runner blocks on replies: its connection has no socket timeout (it would cut a
    # blocking read short)
    pool_kwargs = conn.connection_pool.connection_kwargs
    runner_conn = _RunnerRedis(
        host=pool_kwargs["host"],
        port=pool_kwargs["port"],
        password=pool_kwargs.get("password"),  # the embedded Redis wants its password
        db=0,
        decode_responses=True,
    )
    ran = 0
    try:
        for match_id, state in sorted(store.match_states(conn, season).items()):
            if state == "queued":
                assert run_match(match_id, runner_conn) == "committed"
                ran += 1
    finally:
        runner_conn.close()
    return ran


def _drive(conn: redis.Redis, season: str, drv: SeasonDriver) -> None:
    for _ in range(50):
        drv.step(block_ms=5)
        if store.get_season(conn, season)["state"] == store.FINISHED:
            return
        _run_queued(conn, season)
    raise AssertionError("season did not finish")


def test_create_validates_and_keeps_the_seed_secret(conn: redis.Redis) -> None:
    info = store.create_season(conn, _spec())
    assert info.state == "created" and info.matches_total == 3
    assert info.seed_sha256 == seed_sha256(99)
    assert info.seed is None and json.loads(info.spec)["seed"] is None
    assert store.get_schedule(conn, "s1")[0]["match_id"] == "s1-m0000"
    with pytest.raises(ConflictError, match="exists already"):
        store.create_season(conn, _spec())
    with pytest.raises(ConfigError, match="unknown bot"):
        store.create_season(
            conn, SeasonSpec.from_dict({**_spec("s2").to_dict(), "bots": ["zed", "ann"]})
        )
    with pytest.raises(ConfigError, match="table_size = 3"):
        store.create_season(
            conn,
            SeasonSpec.from_dict(
                {**_spec("s3").to_dict(), "table_size": 3, "options": {"duplicate": False}}
            ),
        )
    with pytest.raises(NotFoundError):
        store.start_season(conn, "nope")


def test_state_changes_are_guarded(conn: redis.Redis) -> None:
    store.create_season(conn, _spec())
    with pytest.raises(ConflictError, match="only when it is paused"):
        store.resume_season(conn, "s1")
    assert store.start_season(conn, "s1").state == "running"
    assert store.pause_season(conn, "s1").state == "paused"
    drv = SeasonDriver(conn)
    drv.step(block_ms=5)
    assert not any(s == "queued" for s in store.match_states(conn, "s1").values())
    assert store.resume_season(conn, "s1").state == "running"
    info = store.cancel_season(conn, "s1")
    assert info.state == "cancelled" and info.seed == "99"
    with pytest.raises(ConflictError):
        store.start_season(conn, "s1")


def test_season_runs_to_the_end_counts_once_and_verifies(conn: redis.Redis) -> None:
    store.create_season(conn, _spec())
    store.start_season(conn, "s1")
    drv = SeasonDriver(conn, consumer="one")
    drv.step(block_ms=5)
    states = store.match_states(conn, "s1")
    assert sorted(states.values()) == ["queued", "queued", "scheduled"]  # window of 2
    _drive(conn, "s1", drv)
    info = store.get_season(conn, "s1")
    assert info["matches_done"] == "3" and info["matches_failed"] == "0"
    assert info["seed"] == "99" and int(info["decisions"]) > 0
    assert store.live_decisions(conn, "s1") == int(info["decisions"])
    standings = store.get_standings(conn, "s1")
    assert standings is not None and standings["matches_done"] == 3
    assert {r["bot"] for r in standings["rows"]} == set(BOTS)
    assert sum(r["matches"] for r in standings["rows"]) == 6  # head-to-head: 2 bots a match
    assert all(r["timeouts"] >= 2 and r["autopilot_seats"] >= 2 for r in standings["rows"])
    # A result delivered again (a referee that died before acknowledging) counts once.
    conn.xadd(keys.RESULTS_STREAM, {"match_id": "s1-m0000", "season": "s1"})
    assert SeasonDriver(conn, consumer="two").step(block_ms=5) == 0
    assert store.get_season(conn, "s1")["matches_done"] == "3"
    report = verify_season(conn, "s1")
    assert report.ok, report.problems
    assert report.matches_checked == 3 and report.deals_checked >= 6


def test_unacknowledged_results_of_a_dead_referee_are_claimed(
    conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create_season(conn, _spec(window=3))
    store.start_season(conn, "s1")
    SeasonDriver(conn, consumer="dead").step(block_ms=5)
    assert _run_queued(conn, "s1") == 3
    # "dead" reads the three results and dies before acknowledging or counting them.
    conn.xreadgroup(driver_mod.GROUP, "dead", {keys.RESULTS_STREAM: ">"}, count=10)
    monkeypatch.setattr(driver_mod, "CLAIM_IDLE_MS", 0)
    alive = SeasonDriver(conn, consumer="alive")
    alive.step(block_ms=5)
    assert store.get_season(conn, "s1")["state"] == "finished"
    assert store.get_season(conn, "s1")["matches_done"] == "3"
    assert conn.xpending(keys.RESULTS_STREAM, driver_mod.GROUP)["pending"] == 0
    # the dead referee's consumer is forgotten once it has been idle long enough
    monkeypatch.setattr(driver_mod, "CONSUMER_FORGET_MS", -1)
    alive.last_claim = 0.0
    alive.step(block_ms=5)
    names = {c["name"] for c in conn.xinfo_consumers(keys.RESULTS_STREAM, driver_mod.GROUP)}
    assert names == {"alive"}


def test_verify_re_deals_exactly_the_retries_after_a_reveal(conn: redis.Redis) -> None:
    """``arena season verify`` re-deals a retried match from ``redeal_seed`` when its record
    says ``redealt`` (an earlier attempt showed the bots its deals) and from the scheduled
    seeds otherwise (an earlier attempt that showed nothing: docs/workers.md "A retry is
    re-dealt"); a record that hides its re-deal fails the check."""
    store.create_season(conn, _spec(window=3))
    store.start_season(conn, "s1")
    conn.incr(keys.match_attempt("s1-m0001"))  # attempt 1 begun, showed nothing
    conn.incr(keys.match_attempt("s1-m0002"))  # attempt 1 showed the bots its deals
    conn.hset(keys.match_state("s1-m0002"), "revealed", 1)
    _drive(conn, "s1", SeasonDriver(conn))
    records = {}
    for mid in ("s1-m0000", "s1-m0001", "s1-m0002"):
        record = queue.get_record(conn, mid)
        assert record is not None
        records[mid] = record
    assert [r["attempt"] for r in records.values()] == [1, 2, 2]
    assert "redealt" not in records["s1-m0000"] and "redealt" not in records["s1-m0001"]
    assert records["s1-m0002"]["redealt"]["attempt"] == 2
    assert records["s1-m0002"]["spec"]["seed"] != records["s1-m0002"]["redealt"]["scheduled_seed"]
    report = verify_season(conn, "s1")
    assert report.ok, report.problems
    assert report.matches_checked == 3
    hidden = {k: v for k, v in records["s1-m0002"].items() if k != "redealt"}
    conn.set(keys.match_record("s1-m0002"), json.dumps(hidden))
    report = verify_season(conn, "s1")
    assert not report.ok and all("s1-m0002" in p for p in report.problems), report.problems


def test_verify_finds_a_tampered_record(conn: redis.Redis) -> None:
    store.create_season(conn, _spec(window=3))
    store.start_season(conn, "s1")
    drv = SeasonDriver(conn)
    _drive(conn, "s1", drv)
    record = queue.get_record(conn, "s1-m0001")
    assert record is not None
    hands = record["initial_hands"]
    hands[0][0], hands[0][1] = hands[0][1], hands[0][0]
    conn.set(keys.match_record("s1-m0001"), json.dumps(record))
    report = verify_season(conn, "s1")
    assert not report.ok
    assert any("s1-m0001" in p for p in report.problems)


def test_two_referees_share_a_season_without_double_work(conn: redis.Redis) -> None:
    """Two drivers (two referees) step the same season in turn: the window is never
    exceeded, every match is enqueued once and counted once."""
    store.create_season(conn, _spec(window=2))
    store.start_season(conn, "s1")
    drivers = [SeasonDriver(conn, consumer="r1"), SeasonDriver(conn, consumer="r2")]
    for turn in range(40):
        drivers[turn % 2].step(block_ms=5)
        states = store.match_states(conn, "s1")
        assert sum(1 for s in states.values() if s in ("queued", "running")) <= 2
        if store.get_season(conn, "s1")["state"] == store.FINISHED:
            break
        _run_queued(conn, "s1")
    info = store.get_season(conn, "s1")
    assert info["state"] == "finished" and info["matches_done"] == "3"
    assert conn.zcard(keys.MATCHES_INDEX) == 3
    for match_id in store.match_states(conn, "s1"):
        assert conn.get(keys.match_attempt(match_id)) == "1"  # played once


def test_a_match_queued_without_a_job_is_enqueued_again(
    conn: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A referee killed inside enqueue_match (state written, RQ job not yet created)."""
    from rq.job import Job

    from referee.queue import get_queue, job_id

    store.create_season(conn, _spec(window=1))
    store.start_season(conn, "s1")
    drv = SeasonDriver(conn)
    drv.step(block_ms=5)
    queued = [m for m, s in store.match_states(conn, "s1").items() if s == "queued"]
    assert len(queued) == 1
    job = Job.fetch(job_id(queued[0]), connection=get_queue(conn).connection)
    job.delete()  # as if the job had never been created
    monkeypatch.setattr(driver_mod, "RESCUE_AFTER_MS", 0)
    drv.last_rescue = 0.0
    drv.step(block_ms=5)
    assert conn.exists(Job.key_for(job_id(queued[0])))
    assert store.match_states(conn, "s1")[queued[0]] == "queued"
    _drive(conn, "s1", drv)
    assert store.get_season(conn, "s1")["matches_done"] == "3"


def test_rows_compact_and_old_read_alike_and_a_changed_row_is_found(conn: redis.Redis) -> None:
    """The stored row is compact (referee/match/row.py): the result less each deal's
    penalties and detail, which the record keeps. A row in the form written before (the
    whole committed result as JSON) verifies and counts as the compact one does; a row
    whose score changes differ from the replay is found."""
    from referee.match.row import full_result, lean_result, parse_row

    store.create_season(conn, _spec(window=3))
    store.start_season(conn, "s1")
    _drive(conn, "s1", SeasonDriver(conn))
    record = queue.get_record(conn, "s1-m0001")
    raw = conn.get(keys.match_result("s1-m0001"))
    assert record is not None and raw is not None
    row = parse_row(raw)
    assert json.loads(raw)["v"] == 2 and row["result"] == lean_result(record["result"])
    assert all("penalties" not in d and "detail" not in d for d in row["result"]["deals"])
    old = json.dumps(full_result(row, record))
    assert len(raw) * 2 < len(old)
    conn.set(keys.match_result("s1-m0001"), old)
    assert parse_row(old) == full_result(row, record)
    report = verify_season(conn, "s1")
    assert report.ok and report.standings_ok, report.problems
    changed = json.loads(raw)
    changed["d"][0][2] = [
        d + (1 if s == 0 else -1 if s == 1 else 0) for s, d in enumerate(changed["d"][0][2])
    ]
    conn.set(keys.match_result("s1-m0001"), json.dumps(changed))
    report = verify_season(conn, "s1")
    assert not report.ok
    assert any("s1-m0001: replayed result differs" in p for p in report.problems), report.problems
