"""The sealed-boards rule (``referee.seasons.embargo``, docs/SECURITY.md "Against
spectators: sealed boards"): a match's cards and moves stay hidden while its season runs
and a match sharing a board with it is not settled. The whole stack is tested in
tests/web/test_sealed_boards.py."""

from __future__ import annotations

from typing import Any

import redis

from referee import keys
from referee.seasons import embargo, store
from referee.seasons.model import SeasonOptions, SeasonSpec


def _spec(name: str, duplicate: str | bool) -> SeasonSpec:
    return SeasonSpec(
        name=name,
        game="sevens",
        preset="fan-tan",
        bots=tuple(f"e{i}" for i in range(6)),
        table_size=3,
        deals_per_match=2,
        seed=7,
        options=SeasonOptions(duplicate=duplicate, max_subsets=0, window=2),
    )


def test_board_groups_join_the_tables_of_a_flight_only() -> None:
    schedule: list[dict[str, Any]] = [
        {"match_id": "a", "boards": ["f0b0", "f0b1"]},
        {"match_id": "b", "boards": ["f0b0", "f0b1"]},
        {"match_id": "c", "boards": ["f1b0"]},
        {"match_id": "d", "boards": None},
    ]
    groups = embargo.board_groups(schedule)
    assert groups == {"a": {"a", "b"}, "b": {"a", "b"}, "c": {"c"}}


def test_waiting_for_lists_unsettled_members_until_the_season_ends() -> None:
    states = {"a": "done", "b": "running", "c": "cancelled", "d": "failed", "e": "queued"}
    assert embargo.waiting_for("abcd", states, "running") == ("b", "d")
    assert embargo.waiting_for("abcd", states, "paused") == ("b", "d")
    assert embargo.waiting_for("ac", states, "running") == ()
    assert embargo.waiting_for("abcde", states, "finished") == ()
    # a cancelled season: what may still play (running, queued again) keeps its boards
    # sealed; a failed match never plays again there
    assert embargo.waiting_for("abcde", states, "cancelled") == ("b", "e")
    assert embargo.waiting_for("acd", states, "cancelled") == ()


def test_a_match_is_sealed_until_its_flight_has_finished(redis_client: redis.Redis) -> None:
    store.create_season(redis_client, _spec("emb", True), require_registered=False)
    schedule = store.get_schedule(redis_client, "emb")
    first, second = schedule[0]["match_id"], schedule[1]["match_id"]
    assert schedule[0]["boards"] == schedule[1]["boards"]
    other = schedule[2]["match_id"]
    matches = keys.season_matches("emb")
    store.start_season(redis_client, "emb")
    redis_client.hset(matches, mapping={first: "done", second: "running", other: "done"})
    seal = embargo.seal_of(redis_client, first, "emb")
    assert seal.sealed and seal.waiting == (second,)
    assert second in seal.message() and "sealed" in seal.message()
    assert embargo.opened_by(redis_client, "emb", first) == []
    # a client that answers bytes (the web's) reads the same
    raw = redis.Redis(
        connection_pool=redis.ConnectionPool(
            **{**redis_client.connection_pool.connection_kwargs, "decode_responses": False}
        )
    )
    assert embargo.seal_of(raw, first, "emb").waiting == (second,)
    raw.close()
    redis_client.hset(matches, second, "done")
    assert not embargo.seal_of(redis_client, first, "emb").sealed
    assert embargo.opened_by(redis_client, "emb", second) == sorted([first, second])
    # a failed table keeps its flight sealed while the season runs (it may be resumed) ...
    redis_client.hset(matches, second, "failed")
    assert embargo.seal_of(redis_client, first, "emb").sealed
    # ... and everything opens when the season ends
    store.cancel_season(redis_client, "emb")
    assert not embargo.seal_of(redis_client, first, "emb").sealed
    assert not embargo.seal_of(redis_client, second, "emb").sealed


def test_matches_that_share_no_board_are_never_sealed(redis_client: redis.Redis) -> None:
    store.create_season(redis_client, _spec("plain", False), require_registered=False)
    store.start_season(redis_client, "plain")
    first = store.get_schedule(redis_client, "plain")[0]["match_id"]
    redis_client.hset(keys.season_matches("plain"), first, "done")
    assert not embargo.seal_of(redis_client, first, "plain").sealed
    assert not embargo.seal_of(redis_client, "casual-1", "").sealed
