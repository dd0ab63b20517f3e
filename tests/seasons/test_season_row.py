"""The season hash as one typed row (``referee/match/season_row.py``): what a season's creation
writes parses back to the row it was built from, field by field, and the counters the
Lua scripts change read as numbers."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest
import redis

from referee import keys
from referee.match.season_row import ROW_FIELDS, BadSeasonRow, SeasonRow, StandingRow, Standings
from referee.match.spec import SeasonState
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec


def _spec(name: str) -> SeasonSpec:
    return SeasonSpec(
        name=name,
        game="sevens",
        preset="fan-tan",
        bots=tuple(f"r{i}" for i in range(4)),
        table_size=4,
        deals_per_match=1,
        seed=11,
        options=SeasonOptions(duplicate=False, max_subsets=0, window=2),
    )


def test_a_created_season_reads_back_as_its_row(redis_client: redis.Redis) -> None:
    info = store.create_season(redis_client, _spec("row-1"), require_registered=False)
    row = store.season_row(redis_client, "row-1")
    assert row.season == "row-1" and row.state is SeasonState.CREATED
    assert row.game == "sevens" and row.preset == "fan-tan" and row.schedule == ""
    assert row.matches_total == info.matches_total > 0
    assert (row.matches_done, row.matches_failed, row.decisions) == (0, 0, 0)
    assert row.started_ms is None and row.finished_ms is None and row.seed is None
    assert row.created_ms == info.created_ms > 0
    stored = redis_client.hgetall(keys.season("row-1"))
    assert row.to_hash() == stored  # written through the row: the same strings
    # the counters and the state as the scripts and transitions leave them
    redis_client.hincrby(keys.season("row-1"), "matches_done", 3)
    redis_client.hincrby(keys.season("row-1"), "matches_failed", 1)
    store.start_season(redis_client, "row-1")
    later = store.season_row(redis_client, "row-1")
    assert later.state is SeasonState.RUNNING and later.settled == 4
    assert later.started_ms is not None and later.started_ms >= row.created_ms


def test_a_row_parses_bytes_and_round_trips() -> None:
    row = SeasonRow(
        season="s",
        state=SeasonState.FINISHED,
        spec="{}",
        game="sedma",
        preset="sedma",
        rules="{}",
        owners='{"a": "ann"}',
        seed_sha256="ab",
        matches_total=6,
        matches_done=5,
        matches_failed=1,
        decisions=300,
        created_ms=1.5,
        started_ms=2.0,
        finished_ms=3.0,
        seed="42",
    )
    raw = {k.encode(): v.encode() for k, v in row.to_hash().items()}
    assert SeasonRow.parse("s", raw) == row
    assert row.owners_map() == {"a": "ann"} and row.settled == 6


def test_a_hash_with_no_state_or_an_unknown_one_is_refused_in_words() -> None:
    with pytest.raises(BadSeasonRow, match="has no state"):
        SeasonRow.parse("s", {"game": "sevens"})
    with pytest.raises(BadSeasonRow, match="unknown state 'archiving'"):
        SeasonRow.parse("s", {"state": "archiving"})


def test_listing_skips_an_unreadable_hash_with_a_log_line(
    redis_client: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    store.create_season(redis_client, _spec("row-ok"), require_registered=False)
    for name, fields in (("row-none", {"game": "sevens"}), ("row-odd", {"state": "archiving"})):
        redis_client.zadd(keys.SEASONS, {name: 1})
        for field, value in fields.items():
            redis_client.hset(keys.season(name), field, value)
    redis_client.zadd(keys.SEASONS, {"row-gone": 2})  # listed, its hash deleted: silent
    with caplog.at_level(logging.WARNING, logger="referee.seasons.store"):
        rows = store.season_rows(redis_client)
    assert [r.season for r in rows] == ["row-ok"]
    logged = [r.getMessage() for r in caplog.records]
    assert len(logged) == 2 and all("skipped" in m for m in logged), logged
    assert any("row-none" in m for m in logged) and any("row-odd" in m for m in logged)


def test_a_standings_row_declares_every_field_the_standings_write() -> None:
    from referee.seasons.tallies import Ratings, Tallies, standings_of

    table = standings_of("s", "sevens", ["a", "b"], Tallies(), Ratings(), now_ms=1)
    assert set(table) == set(Standings.__annotations__)
    assert all(tuple(r) == ROW_FIELDS == tuple(StandingRow.__annotations__) for r in table["rows"])


def test_a_hash_of_only_its_state_reads_as_the_defaults_and_writes_every_field() -> None:
    """A season created by an earlier version (fields added since are missing) reads with
    the empty defaults, not a crash, and writes back every field under its own name."""
    row = SeasonRow.parse("old", {"state": "created"})
    assert row == SeasonRow(
        season="old",
        state=SeasonState.CREATED,
        spec="",
        game="",
        preset="",
        rules="{}",
        owners="{}",
        seed_sha256="",
    )
    assert (row.duplicate, row.schedule, row.created_ms, row.started_ms) == ("", "", 0.0, None)
    assert (row.matches_total, row.matches_done, row.decisions, row.seed) == (0, 0, 0, None)
    assert row.owners_map() == {} and replace(row, owners="").owners_map() == {}
    assert row.to_hash() == {
        "spec": "",
        "state": "created",
        "game": "",
        "preset": "",
        "rules": "{}",
        "owners": "{}",
        "seed_sha256": "",
        "duplicate": "",
        "schedule": "",
        "matches_total": "0",
        "matches_done": "0",
        "matches_failed": "0",
        "decisions": "0",
        "created_ms": "0",
        "started_ms": "",
        "finished_ms": "",
    }
    given = SeasonRow.parse("v", {"state": "running", "schedule": "versus", "duplicate": "on"})
    assert (given.schedule, given.duplicate) == ("versus", "on")
    assert given.to_hash()["schedule"] == "versus"
