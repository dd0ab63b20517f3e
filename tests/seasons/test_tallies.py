"""Incremental standings (referee/seasons/tallies.py): folded once per counted result,
refitted from the tally log, always equal to the pure ``compute_standings``."""

from __future__ import annotations

import json
import random
from typing import Any, cast

import pytest
import redis

from referee import keys
from referee.match.spec import CommittedResult
from referee.seasons import store, tallies
from referee.seasons.standings import compute_standings, standings_rows_equal

BOTS = [f"b{i}" for i in range(7)]


def synthetic(rng: random.Random, n: int, bots: list[str] = BOTS) -> list[CommittedResult]:
    """Results of 4-seat, 3-deal matches with ties and a late finisher now and then."""
    out: list[CommittedResult] = []
    for m in range(n):
        seats = rng.sample(bots, 4)
        deals: list[dict[str, Any]] = []
        for _ in range(3):
            perm = list(range(4))
            rng.shuffle(perm)
            tie = rng.random() < 0.2
            order = [[perm[0]], [perm[1], perm[2]], [perm[3]]] if tie else [[p] for p in perm]
            deals.append({"order": order, "deltas": [rng.randint(-9, 9) for _ in range(4)]})
        result: dict[str, Any] = {
            "unit": "chips",
            "totals": [rng.randint(-20, 20) for _ in range(4)],
            "deals": deals,
        }
        out.append(
            {
                "match_id": f"t-m{m:04d}",
                "season": "t",
                "game": "sevens",
                "seats": seats,
                "attempt": 1,
                "result": result,
                "stats": [
                    {
                        "bot": b,
                        "decisions": 9,
                        "timeouts": rng.randint(0, 1),
                        "invalid_actions": 0,
                        "illegal_passes": rng.randint(0, 1),
                        "fallbacks": 0,
                        "autopilot": False,
                        "think_ms_total": 0.0,
                    }
                    for b in seats
                ],
                "finished_ms": 1_000.0 + m * 10 + rng.random() * 60,  # overlapping finishes
            }
        )
    return out


def test_refits_carried_forward_in_any_arrival_order_equal_the_pure_standings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Results counted out of finish order (a late one rewinds the live ratings to a
    checkpoint, or to the start when none is early enough), refitted every few results:
    the standings equal ``compute_standings`` over all of them, field for field."""
    monkeypatch.setattr(tallies, "MARK_EVERY", 4)
    monkeypatch.setattr(tallies, "MARKS_KEPT", 3)
    rng = random.Random(7)
    results = synthetic(rng, 60)
    boards = {r["match_id"]: [(f"x{i % 9}", i % 4) for i in range(3)] for r in results}
    arrival = list(results)
    rng.shuffle(arrival[:20])  # early on: far out of order (rewinds past every checkpoint)
    for i in range(20, 59, 3):  # later: neighbours swapped (short rewinds)
        arrival[i], arrival[i + 1] = arrival[i + 1], arrival[i]
    kept = tallies.Tallies()
    entries: list[tallies.Entry] = []
    ratings: tallies.Ratings | None = None
    for i, result in enumerate(arrival):
        fold = tallies.fold_of(result, boards[result["match_id"]])
        kept.add(fold)
        entries.append(fold.entry)
        if i % 5 == 4 or i == len(arrival) - 1:
            names = tallies.names_of(BOTS, kept)
            ratings = tallies.refit(names, entries, ratings)
            # the stored form round-trips
            ratings = tallies.Ratings.from_json(ratings.to_json())
            got = tallies.standings_of("t", "sevens", BOTS, kept, ratings, now_ms=1)
            want = compute_standings("t", "sevens", BOTS, arrival[: i + 1], now_ms=1, boards=boards)
            assert got == want, f"after {i + 1} results"
    assert ratings is not None and ratings.marks, "no checkpoint was taken"


def test_a_result_counted_twice_folds_once(redis_client: redis.Redis) -> None:
    conn = redis_client
    result = synthetic(random.Random(1), 1)[0]
    fold = tallies.fold_of(result)
    assert store.count_done(conn, "t", result["match_id"], 9, fold)
    assert not store.count_done(conn, "t", result["match_id"], 9, fold)
    stored = tallies.Tallies.from_hash(cast(dict[str, str], conn.hgetall(keys.season_tallies("t"))))
    assert stored.n == 1 and conn.llen(keys.season_tally_log("t")) == 1
    assert stored.bots == {
        bot: {k: float(v) for k, v in counts.items() if v} for bot, counts in fold.counts.items()
    }


def test_standings_rows_equal_sees_a_tally_off_by_one() -> None:
    """The check is able to fail: one deal more in the tallies is a difference."""
    results = synthetic(random.Random(3), 5)
    kept = tallies.Tallies()
    entries = []
    for r in results:
        fold = tallies.fold_of(r)
        kept.add(fold)
        entries.append(fold.entry)
    kept.bots["b0"]["deals"] = kept.bots["b0"].get("deals", 0) + 1
    ratings = tallies.refit(tallies.names_of(BOTS, kept), entries)
    got = tallies.standings_of("t", "sevens", BOTS, kept, ratings, now_ms=1)
    assert not standings_rows_equal(got, compute_standings("t", "sevens", BOTS, results))


def _old_entry(fold: tallies.Fold) -> dict[str, Any]:
    """The log entry as it was written before bots were named by index."""
    names = tallies.entry_table(fold.entry, BOTS)
    cells = fold.entry[3]
    return {
        "m": fold.entry[0],
        "t": fold.entry[1],
        "o": [[list(g) for g in p.order] for p in tallies.entry_placings(fold.entry, BOTS)],
        "p": [
            [names[cells[k]], names[cells[k + 1]], float(cells[k + 2]), cells[k + 3] / 2]
            for k in range(0, len(cells), 4)
        ],
        "d": [[h, n, d] for h, n, d in tallies.entry_hands(fold.entry, BOTS)],
    }


def test_a_log_of_old_entries_refits_as_the_compact_one() -> None:
    """A tally log written before (objects naming bots) or mixed with compact entries
    (arrays naming them by index into the season's bots) refits to the same ratings."""
    results = synthetic(random.Random(11), 40)
    boards = {r["match_id"]: [(f"x{i % 5}", i % 4) for i in range(3)] for r in results}
    folds = [tallies.fold_of(r, boards[r["match_id"]], BOTS) for r in results]
    assert all(isinstance(b, int) for f in folds for b in f.entry[2])
    assert len(folds[0].entry_text()) < len(json.dumps(_old_entry(folds[0])))
    compact = [f.entry for f in folds]
    old: list[tallies.Entry] = [_old_entry(f) for f in folds]
    mixed = [o if i % 2 else c for i, (c, o) in enumerate(zip(compact, old, strict=True))]
    want = tallies.refit(BOTS, compact).to_json()
    assert tallies.refit(BOTS, old).to_json() == want
    assert tallies.refit(BOTS, mixed).to_json() == want
    # an entry naming a bot outside the season's list (by name) counts too
    named = [[e[0], e[1], [BOTS[b] for b in e[2]], *e[3:]] for e in compact]
    assert tallies.refit(BOTS, named).to_json() == want


def test_each_refit_stores_a_checkpoint_thinned_over_the_season(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refit adds a point of the season's history (what the league page charts): the
    last one is the standings' Elo; past CHECKPOINTS_KEPT, every other older point goes,
    the first and the last kept."""
    from referee.seasons.model import SeasonSpec

    conn = redis_client
    monkeypatch.setattr(store, "CHECKPOINTS_KEPT", 6)
    spec = SeasonSpec.from_dict(
        {"name": "t", "game": "sevens", "preset": "fan-tan", "bots": BOTS, "table_size": 4}
    )
    conn.hset(
        keys.season("t"),
        mapping={"spec": spec.to_json(), "state": "running", "matches_total": "30"},
    )
    for result in synthetic(random.Random(4), 30):
        fold = tallies.fold_of(result, None, BOTS)
        assert store.count_done(conn, "t", result["match_id"], 9, fold)
        standings = store.recompute_standings(conn, "t")
    points = store.checkpoints(conn, "t")
    ns = [p["n"] for p in points]
    assert len(points) <= 6 and ns[0] == 1 and ns[-1] == 30 and ns == sorted(ns)
    elo = {r["bot"]: r["elo"] for r in standings["rows"]}
    assert {b: v[0] for b, v in points[-1]["elo"].items()} == elo
    stored = cast(dict[str, str], conn.hgetall(keys.season_tallies("t")))
    tallied = tallies.Tallies.from_hash(stored)
    assert points[-1]["score"] == {b: t["score"] for b, t in tallied.bots.items()}
    # no second point at the same count
    store.recompute_standings(conn, "t")
    assert [p["n"] for p in store.checkpoints(conn, "t")] == ns
