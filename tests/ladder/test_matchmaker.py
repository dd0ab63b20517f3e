"""The continuous ladder's matchmaker and ratings (referee/ladder/matchmaker.py), pure:
simulated results from bots of known strength."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from referee.ladder.matchmaker import (
    LadderState,
    apply_batch,
    apply_join,
    apply_results,
    pick_batch,
    replay,
)

SEED = 4242


def _results(
    tables: list[tuple[str, ...]], strength: dict[str, float], rng: random.Random, n: int
) -> list[dict[str, Any]]:
    out = []
    for i, seats in enumerate(tables):
        deals = []
        for _ in range(2):
            noisy = sorted(range(len(seats)), key=lambda s: -(strength[seats[s]] + rng.gauss(0, 1)))
            deals.append({"order": [[s] for s in noisy]})
        out.append({"match_id": f"b{n}-m{i:04d}", "seats": list(seats), "result": {"deals": deals}})
    return out


def _run(
    bots: dict[str, str], batches: int, sizes: tuple[int, ...] = (4,), tables: int = 2
) -> tuple[LadderState, list[dict[str, Any]], dict[int, list[dict[str, Any]]]]:
    rng = random.Random(1)
    strength = {b: i / 2 for i, b in enumerate(sorted(bots))}
    state = LadderState()
    log: list[dict[str, Any]] = []
    results: dict[int, list[dict[str, Any]]] = {}
    for bot, owner in bots.items():
        record = {"kind": "join", "bot": bot, "owner": owner, "prev": ""}
        apply_join(state, record)
        log.append(record)
    for n in range(batches):
        size, picked = pick_batch(state, sizes, tables, SEED, n)
        log.append({"kind": "batch", "n": n, "size": size, "tables": [list(t) for t in picked]})
        apply_batch(state, size, picked)
        results[n] = _results(picked, strength, rng, n)
        apply_results(state, n, results[n])
    return state, log, results


def test_owners_never_share_a_table_and_nobody_plays_twice_in_a_batch() -> None:
    bots = {f"b{i}": f"owner{i % 5}" for i in range(10)}  # two bots per owner
    _, log, _ = _run(bots, 40)
    for record in log:
        if record["kind"] != "batch":
            continue
        seen: list[str] = [b for t in record["tables"] for b in t]
        assert len(seen) == len(set(seen))
        for table in record["tables"]:
            assert len({bots[b] for b in table}) == len(table), table


def test_play_is_spread_seats_balanced_and_ratings_order_the_strengths() -> None:
    bots = {f"b{i}": f"o{i}" for i in range(9)}
    state, _, _ = _run(bots, 120)
    matches = [e.matches for e in state.entries.values()]
    assert max(matches) - min(matches) <= 0.25 * max(matches), matches
    for entry in state.entries.values():
        counts = [entry.seats.get(str(s), 0) for s in range(4)]
        assert max(counts) - min(counts) <= 3, (entry.name, counts)
    by_mu = sorted(state.entries.values(), key=lambda e: e.mu)
    assert [e.name for e in by_mu][:2] == ["b0", "b1"] and by_mu[-1].name in ("b7", "b8")
    assert all(e.sigma < 25 / 3 for e in by_mu)


def test_a_newcomer_plays_first_and_sizes_are_balanced() -> None:
    bots = {f"b{i}": f"o{i}" for i in range(8)}
    state, _, _ = _run(bots, 30, sizes=(3, 4), tables=1)
    assert abs(state.sizes["3"] - state.sizes["4"]) <= 1
    apply_join(state, {"kind": "join", "bot": "new", "owner": "x", "prev": "b3"})
    assert state.entries["b3"].retired  # a new version retires the entry it replaces
    plays = 0
    for n in range(30, 36):
        size, picked = pick_batch(state, (3, 4), 1, SEED, n)
        plays += any("new" in t for t in picked)
        assert not any("b3" in t for t in picked)
        apply_batch(state, size, picked)
    assert plays >= 4  # under-played: chosen far more often than 1 batch in 2


def test_opponents_come_from_a_rating_window() -> None:
    bots = {f"b{i}": f"o{i}" for i in range(16)}
    state, log, _ = _run(bots, 150, tables=2)
    mu = {n: e.mu for n, e in state.entries.items()}
    spread = [
        max(mu[b] for b in t) - min(mu[b] for b in t)
        for r in log[-40:]
        if r["kind"] == "batch"
        for t in r["tables"]
    ]
    rng = random.Random(3)
    names = sorted(mu)
    chance = []
    for _ in range(400):
        t = rng.sample(names, 4)
        chance.append(max(mu[b] for b in t) - min(mu[b] for b in t))
    assert sum(spread) / len(spread) < 0.8 * sum(chance) / len(chance)


def test_the_decisions_replay_from_the_seed_and_the_log() -> None:
    bots = {f"b{i}": f"o{i % 4}" for i in range(8)}
    state, log, results = _run(bots, 25, sizes=(3, 4))
    replayed, problems = replay(SEED, log, results, (3, 4), 2)
    assert problems == []
    assert replayed.to_dict()["entries"] == state.to_dict()["entries"]
    _, problems = replay(SEED + 1, log, results, (3, 4), 2)  # another seed decides otherwise
    assert problems
    tampered = [dict(r) for r in log]
    last = next(r for r in reversed(tampered) if r["kind"] == "batch")
    last["tables"] = [list(reversed(t)) for t in last["tables"]]
    assert replay(SEED, tampered, results, (3, 4), 2)[1]
    assert Counter(r["kind"] for r in log)["batch"] == 25
