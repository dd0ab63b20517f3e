"""Schedule properties: pair balance, seat balance, duplicate deals, determinism."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
from collections import Counter

import pytest

from referee.errors import ConfigError
from referee.seasons.model import DUPLICATE_SAME_TABLE, SeasonOptions, SeasonSpec
from referee.seasons.schedule import (
    ScheduledMatch,
    _flights_done,
    _may_balance,
    all_subsets,
    assign_seats,
    balanced_tables,
    build_schedule,
    choose_tables,
    duplicate_plan,
    group_flights,
    owner_pairs,
    pair_counts,
    seat_counts,
)
from referee.seasons.store import scheduled_from_dict

CASES = [(n, k) for n in range(3, 13) for k in range(3, min(8, n) + 1)]


def _spec(n: int, k: int, **options: object) -> SeasonSpec:
    opts = {"duplicate": False, **options}
    return SeasonSpec(
        name="s1",
        game="sevens",
        bots=tuple(f"bot{i}" for i in range(n)),
        table_size=k,
        deals_per_match=k,
        options=SeasonOptions.from_dict(opts),
    )


def _spread(values: list[int]) -> int:
    return max(values) - min(values)


@pytest.mark.parametrize(("n", "k"), CASES)
def test_balanced_design_pairs_seats_and_appearances(n: int, k: int) -> None:
    rng = random.Random(n * 31 + k)
    tables = balanced_tables(n, k, rng)
    assert all(len(set(t)) == k for t in tables)
    counts = pair_counts(tables)
    assert _spread([counts[p] for p in itertools.combinations(range(n), 2)]) <= 1
    appearances = Counter(b for t in tables for b in t)
    assert set(appearances) == set(range(n))
    assert _spread(list(appearances.values())) <= 1
    seatings = assign_seats(tables, rng)
    assert [sorted(s) for s in seatings] == [sorted(t) for t in tables]
    for counter in seat_counts(seatings).values():
        assert _spread([counter[s] for s in range(k)]) <= 1


@pytest.mark.parametrize(("n", "k"), CASES)
def test_schedule_seats_and_dealers_rotate(n: int, k: int) -> None:
    """Every bot sits in every seat equally often (+-1), with the schedule's own choice of
    all subsets or a balanced design, and deals rotate the dealer through all seats."""
    spec = _spec(n, k, max_subsets=60)
    matches = build_schedule(spec, seed=1234)
    expected_tables = math.comb(n, k) if math.comb(n, k) <= 60 else None
    if expected_tables is not None:
        assert len(matches) == expected_tables
        assert {frozenset(m.seats) for m in matches} == {
            frozenset(f"bot{i}" for i in c) for c in itertools.combinations(range(n), k)
        }
    per_bot: dict[str, Counter[int]] = {}
    for m in matches:
        assert len(set(m.seats)) == k
        for seat, bot in enumerate(m.seats):
            per_bot.setdefault(bot, Counter())[seat] += 1
        assert m.deals is not None
        assert sorted(d.dealer for d in m.deals if d.dealer is not None) == list(range(k))
    for counter in per_bot.values():
        assert _spread([counter[s] for s in range(k)]) <= 1


def test_schedule_is_deterministic_from_the_seed() -> None:
    spec = _spec(9, 4, max_subsets=0, duplicate=True)
    spec = SeasonSpec.from_dict({**spec.to_dict(), "deals_per_match": 8})
    a = build_schedule(spec, seed=77)
    b = build_schedule(spec, seed=77)
    c = build_schedule(spec, seed=78)
    assert [m.to_dict() for m in a] == [m.to_dict() for m in b]
    assert [m.to_dict() for m in a] != [m.to_dict() for m in c]
    assert len({m.match_id for m in a}) == len(a)


def test_same_table_duplicate_is_an_explicit_opt_in_that_rotates_the_hands() -> None:
    spec = SeasonSpec(
        name="dup",
        game="sevens",
        bots=tuple(f"b{i}" for i in range(5)),
        table_size=4,
        deals_per_match=8,
        options=SeasonOptions(duplicate=DUPLICATE_SAME_TABLE),
    )
    assert duplicate_plan(spec).note == (
        "same-table duplicate (same_table_leaks_hands): every shuffle is replayed with the "
        "hands rotated at one table by the same bots; a bot that remembers its hand knows its "
        "neighbours' cards on the next rotation (for trusted bots only)"
    )  # the season's "duplicate" field, read by people: the whole sentence
    for m in build_schedule(spec, seed=5):
        assert m.deals is not None and len(m.deals) == 8
        by_seed: dict[int, list[tuple[int, int | None]]] = {}
        for d in m.deals:
            by_seed.setdefault(d.seed, []).append((d.rotation, d.dealer))
        assert len(by_seed) == 2
        for rotations in by_seed.values():
            assert sorted(r for r, _ in rotations) == [0, 1, 2, 3]
            base = rotations[0][1]
            assert base is not None
            # the dealer moves with the hands
            assert all(dealer == (base + r) % 4 for r, dealer in rotations)


def test_sedma_head_to_head_holds_both_seats_of_a_side() -> None:
    # SD-1: partners sit opposite (seats 0+2 against 1+3).
    spec = SeasonSpec(
        name="h2h",
        game="sedma",
        bots=tuple(f"b{i}" for i in range(5)),
        table_size=4,
        deals_per_match=4,
        options=SeasonOptions(duplicate=DUPLICATE_SAME_TABLE),
    )
    assert spec.head_to_head
    matches = build_schedule(spec, seed=9)
    assert len(matches) == math.comb(5, 2)
    sides: Counter[tuple[str, int]] = Counter()
    for m in matches:
        a, b, a2, b2 = m.seats
        assert a == a2 and b == b2 and a != b
        sides[(a, 0)] += 1
        sides[(b, 1)] += 1
        assert m.deals is not None
        # sides swapped on the duplicate deal: rotation 1 moves hand i to seat i+1
        assert [d.rotation for d in m.deals] == [0, 1, 0, 1]
        assert m.deals[0].seed == m.deals[1].seed != m.deals[2].seed
    for bot in spec.bots:
        assert abs(sides[(bot, 0)] - sides[(bot, 1)]) <= 1


@pytest.mark.parametrize(("preset_k"), [2, 3])
def test_sedma_small_tables_are_free_for_all(preset_k: int) -> None:
    spec = SeasonSpec(
        name="s2",
        game="sedma",
        bots=tuple(f"b{i}" for i in range(6)),
        table_size=preset_k,
        deals_per_match=2 * preset_k,
    )
    assert not spec.head_to_head
    matches = build_schedule(spec, seed=3)
    assert len(matches) == math.comb(6, preset_k)
    assert all(len(set(m.seats)) == preset_k for m in matches)


def test_separate_owners_never_share_a_table() -> None:
    bots = tuple(f"b{i}" for i in range(7))
    owners = {"b0": "ann", "b1": "ann", "b2": "bo", "b3": "bo"}
    spec = SeasonSpec.from_dict(
        {
            "name": "own",
            "game": "sevens",
            "bots": list(bots),
            "table_size": 3,
            "deals_per_match": 3,
            "options": {"separate_owners": True},
        }
    )
    matches = build_schedule(spec, seed=1, owners=owners)
    assert matches
    for m in matches:
        assert not ({"b0", "b1"} <= set(m.seats) or {"b2", "b3"} <= set(m.seats))
    assert owner_pairs(list(bots), owners) == {(0, 1), (2, 3)}
    assert all_subsets(4, 3, [(0, 1), (2, 3)]) == []
    with pytest.raises(ConfigError, match=r"^no table of 4 keeps every owner's bots apart"):
        balanced_tables(6, 4, random.Random(1), [(0, 1), (2, 3), (4, 5)])
    balanced = balanced_tables(9, 3, random.Random(1), [(0, 1), (2, 3)])
    assert all(not {0, 1} <= set(t) and not {2, 3} <= set(t) for t in balanced)


def test_rounds_repeat_the_tables() -> None:
    spec = _spec(5, 3, rounds=2)
    matches = build_schedule(spec, seed=2)
    assert len(matches) == 2 * math.comb(5, 3)
    counts = Counter(frozenset(m.seats) for m in matches)
    assert set(counts.values()) == {2}


def test_same_table_duplicate_needs_a_multiple_of_the_table_size() -> None:
    spec = SeasonSpec(
        name="x",
        game="sevens",
        bots=("a", "b", "c"),
        table_size=3,
        deals_per_match=4,
        options=SeasonOptions(duplicate=DUPLICATE_SAME_TABLE),
    )
    with pytest.raises(ConfigError, match="multiple of 3"):
        spec.validate()
    # field duplicate takes any number of deals
    SeasonSpec(
        name="x", game="sevens", bots=("a", "b", "c"), table_size=3, deals_per_match=4
    ).validate()


def test_a_stored_schedule_reads_back_as_the_same_matches() -> None:
    """The stored form (``ScheduledMatch.to_dict``, JSON in Redis) is read back by the
    store into equal matches: every field kept, with and without duplicate deals (mutmut
    found the stored keys and values unchecked by the schedule's own tests)."""
    for duplicate in (True, False):
        spec = _spec(6, 4, max_subsets=0, duplicate=duplicate)
        schedule = build_schedule(spec, seed=5)
        stored = json.loads(json.dumps([m.to_dict() for m in schedule]))
        assert [scheduled_from_dict(d) for d in stored] == list(schedule)
        assert [d["match_id"] for d in stored] == [f"s1-m{i:04d}" for i in range(len(stored))]
        assert all(d["index"] == i for i, d in enumerate(stored))
        if duplicate:
            assert all(d["deals"] for d in stored)


def _boards_seen(matches: list[ScheduledMatch]) -> Counter[tuple[str, int]]:
    """How often each bot is dealt each shuffle (deal seed)."""
    seen: Counter[tuple[str, int]] = Counter()
    for m in matches:
        assert m.deals is not None
        for deal in m.deals:
            for bot in set(m.seats):
                seen[(bot, deal.seed)] += 1
    return seen


FIELD_CASES = [("sevens", n, k) for n in range(4, 13) for k in (3, 4, 5) if n >= k] + [
    ("sedma", n, 4) for n in range(2, 9)
]


@pytest.mark.parametrize(("game", "n", "k"), FIELD_CASES)
def test_field_duplicate_never_deals_a_bot_a_shuffle_twice(game: str, n: int, k: int) -> None:
    """No bot is dealt (or shown) a shuffle it already played; each
    board is held, hand by hand, by different bots at different tables."""
    spec = SeasonSpec(
        name="fd", game=game, bots=tuple(f"b{i}" for i in range(n)), table_size=k,
        deals_per_match=3, options=SeasonOptions(rounds=2),
    )  # fmt: skip
    if n < spec.players_per_match:
        return
    plan = duplicate_plan(spec)
    matches = build_schedule(spec, seed=n * 100 + k)
    assert max(_boards_seen(matches).values()) == 1
    tables_of: dict[int, list[ScheduledMatch]] = {}
    for m in matches:
        assert m.deals is not None
        for deal in m.deals:
            tables_of.setdefault(deal.seed, []).append(m)
    if plan.tables_per_board < 2:
        assert "duplicate is off" in plan.note and all(len(t) == 1 for t in tables_of.values())
        return
    assert max(len(t) for t in tables_of.values()) <= plan.tables_per_board
    assert any(len(t) >= 2 for t in tables_of.values())
    for seed, tables in tables_of.items():
        bots_at = [set(m.seats) for m in tables]
        assert sum(len(b) for b in bots_at) == len(set().union(*bots_at))  # disjoint
        rotations = [next(d.rotation for d in m.deals or () if d.seed == seed) for m in tables]
        assert len(set(rotations)) == len(rotations)  # each hand with a different bot
        indexes = sorted(m.index for m in tables)
        assert indexes == list(range(indexes[0], indexes[0] + len(indexes)))  # together


def test_field_duplicate_keeps_owners_out_of_one_flight() -> None:
    bots = tuple(f"b{i}" for i in range(9))
    owners = {"b0": "ann", "b1": "ann", "b2": "bo", "b3": "bo"}
    spec = SeasonSpec(
        name="own", game="sevens", bots=bots, table_size=3, deals_per_match=2,
        options=SeasonOptions(separate_owners=True),
    )  # fmt: skip
    matches = build_schedule(spec, seed=4, owners=owners)
    players: dict[int, set[str]] = {}
    for m in matches:
        assert m.deals is not None
        for deal in m.deals:
            players.setdefault(deal.seed, set()).update(m.seats)
    assert any(len(p) > 3 for p in players.values())
    for p in players.values():
        assert not ({"b0", "b1"} <= p or {"b2", "b3"} <= p)


def test_a_field_too_small_turns_duplicate_off_and_says_why() -> None:
    spec = SeasonSpec(
        name="small", game="sevens", bots=tuple(f"b{i}" for i in range(7)), table_size=4,
        deals_per_match=4, options=SeasonOptions(separate_owners=False),  # counted in bots
    )  # fmt: skip
    plan = duplicate_plan(spec)
    assert plan.tables_per_board == 0
    assert "at least 8 bots" in plan.note and "this season has 7" in plan.note
    matches = build_schedule(spec, seed=3)
    assert max(_boards_seen(matches).values()) == 1
    assert all(m.boards is None for m in matches)


# Schedules rebuilt from seed 2026 by the code as it was when this test was written: the
# SHA-256 (first 16 hex digits) of the stored form, one case per path of the search.
# (id, game, bots, table size, deals per match, options, owners of b0-b3 apart, digest)
# fmt: off
GOLDEN_SCHEDULES = [
    ("subsets-plain", "sevens", 5, 3, 3, {}, False, "c06da7cae4dc0f88"),
    ("balanced-plain", "sevens", 7, 3, 3, {"duplicate": False, "max_subsets": 0}, False,
     "c62f1e4b7299a0da"),
    ("balanced-flights-built", "sevens", 7, 3, 3, {"max_subsets": 0}, False,
     "1ebaeb700e2b3465"),
    ("subsets-flights-built", "sevens", 9, 3, 3, {}, False, "16a5cc418d242712"),
    ("balanced-flights-grouped", "sevens", 9, 3, 3, {"max_subsets": 0}, False,
     "5c4ea12464764c34"),
    ("owners-plain", "sevens", 7, 3, 2, {"duplicate": False, "separate_owners": True}, True,
     "347b65e59a4ccd38"),
    ("owners-flights", "sevens", 10, 3, 2, {"separate_owners": True}, True,
     "d75435ec289c78ff"),
    ("same-table", "sevens", 5, 4, 8, {"duplicate": DUPLICATE_SAME_TABLE}, False,
     "0e24f06e063ad1b3"),
    ("sedma-head-to-head", "sedma", 4, 4, 4, {"duplicate": DUPLICATE_SAME_TABLE}, False,
     "d0ac26ad158dbf9c"),
    ("two-rounds", "sevens", 6, 3, 3, {"rounds": 2}, False, "f7839f6735073f6d"),
    ("rules-decide-length", "sevens", 4, 3, 0, {}, False, "8a6e89a419e5285a"),
    # the flight search at pair spread 2 (no +-1 design of 6 bots in two tables of 3), a
    # candidate count _may_balance rules out, several counts tried, and the owner-aware
    # flight search (which finds nothing here: the grouped flights are kept)
    ("flights-built-spread-2", "sevens", 6, 3, 2, {"max_subsets": 0}, False,
     "3a2e68ad6fd3ffef"),
    ("flights-built-count-skipped", "sevens", 10, 3, 2, {"max_subsets": 0}, False,
     "47a2189ccb6ac9ba"),
    ("flights-built-several-counts", "sevens", 8, 4, 2, {"max_subsets": 0}, False,
     "065e8e6063779de9"),
    ("owners-flight-search", "sevens", 9, 3, 2, {"separate_owners": True, "max_subsets": 0},
     True, "b398532411171f1a"),
]
# fmt: on


@pytest.mark.parametrize(
    ("game", "n", "k", "deals", "options", "owned", "digest"),
    [pytest.param(*case[1:], id=case[0]) for case in GOLDEN_SCHEDULES],
)
def test_a_seed_gives_the_same_schedule_in_every_later_version(
    game: str, n: int, k: int, deals: int, options: dict[str, object], owned: bool, digest: str
) -> None:
    """``arena season verify`` rebuilds a finished season's schedule from its revealed seed
    with the code it runs and compares it with the one played (docs/seasons.md, "Seed
    commitment"): a change of which design the seeded searches pick (candidate order,
    step budgets, swap acceptance, flight grouping, seats, deal seeds, rotations, dealers)
    would make every season played before it fail verification. Pins the stored schedule
    of each path (all subsets, balanced design, flights built or grouped, owners kept
    apart, same-table duplicate, Sedma head-to-head, rounds, rules-decided length) for one
    seed. If a change is meant, it breaks verification of old seasons: say so in
    docs/DECISIONS.md and update the digests. (Mutation testing found the searches'
    choices unpinned: any valid design passed the property tests above.)"""
    spec = SeasonSpec(
        name="g", game=game, bots=tuple(f"b{i}" for i in range(n)), table_size=k,
        deals_per_match=deals, options=SeasonOptions.from_dict(options),
    )  # fmt: skip
    owners = {"b0": "ann", "b1": "ann", "b2": "bo", "b3": "bo"} if owned else None
    stored = json.dumps([m.to_dict() for m in build_schedule(spec, seed=2026, owners=owners)])
    assert hashlib.sha256(stored.encode()).hexdigest()[:16] == digest


def test_a_flight_design_is_done_only_with_every_bot_playing_equally_often() -> None:
    """``field_flights`` promises designs where every bot plays equally often (+-1), every
    allowed pair meets equally often (+-1, or +-2 when none exists) and no two bots of one
    owner share a flight. Its acceptance check, on designs built by hand: a bot playing two
    games more than the others is refused even when the pairs are within the spread
    (mutmut: the appearance check could compare with bot 0 only, allow +-2 or be skipped;
    no search in the tests happened to stop on such a design)."""
    every_pair_once = [[[0, 1]], [[0, 2]], [[0, 3]], [[1, 2]], [[1, 3]], [[2, 3]]]
    assert _flights_done(4, every_pair_once, set())
    bot_0_twice_more = [*every_pair_once, [[0, 1]], [[0, 2]], [[0, 3]]]  # pairs 2,2,2,1,1,1
    assert not _flights_done(4, bot_0_twice_more, set())
    assert not _flights_done(4, bot_0_twice_more, set(), 2)
    bot_3_twice_more = [*every_pair_once, [[3, 0]], [[3, 1]], [[3, 2]]]
    assert not _flights_done(4, bot_3_twice_more, set())
    owners_in_one_flight = [[[0, 2], [1, 3]], [[0, 3], [1, 2]]]
    assert _flights_done(4, owners_in_one_flight, set())
    assert not _flights_done(4, owners_in_one_flight, {(0, 1)})


@pytest.mark.parametrize(("count", "digest"), [(64, "17086d2e62c2403f"), (65, "0dc8a4b34c69eff1")])
def test_flight_grouping_tries_64_orders_up_to_64_tables_and_16_above(
    count: int, digest: str
) -> None:
    """``group_flights`` makes 64 seeded greedy passes for a round of at most 64 tables and
    16 above (unless one is perfect): part of the schedule ``arena season verify`` rebuilds
    from the seed. Pinned at the boundary with tables no pass groups perfectly (12 bots,
    tables of 3, flights of 3), as the grouping of seed 7 (mutmut: the boundary was
    unchecked)."""
    rng = random.Random(2026)
    tables = [tuple(sorted(rng.sample(range(12), 3))) for _ in range(count)]
    flights = group_flights(tables, 3, random.Random(7))
    assert sorted(i for f in flights for i in f) == list(range(count))
    assert not all(len(f) == 3 for f in flights)
    assert hashlib.sha256(json.dumps(flights).encode()).hexdigest()[:16] == digest


def test_owners_change_nothing_unless_separate_owners_is_on() -> None:
    """The owners recorded with a season keep bots apart only with ``separate_owners``: with
    it off, the schedule (tables, flights, seats, deals) is the one without owners
    (mutmut: flights kept owners apart whatever the option)."""
    owners = {"b0": "ann", "b1": "ann", "b2": "bo", "b3": "bo"}
    off = {"separate_owners": False}  # explicitly: owners apart is the default
    for n, k, options in ((9, 3, off), (9, 3, {**off, "max_subsets": 0}), (10, 3, off)):
        spec = SeasonSpec(
            name="g", game="sevens", bots=tuple(f"b{i}" for i in range(n)), table_size=k,
            deals_per_match=2, options=SeasonOptions.from_dict(options),
        )  # fmt: skip
        assert build_schedule(spec, 2026, owners) == build_schedule(spec, 2026, None)


def _plan_searches(
    monkeypatch: pytest.MonkeyPatch, n: int, k: int, m: int, tables: int, alone: int
) -> bool:
    """Whether ``plan_flights`` tries the flight search when the grouped design of
    ``tables`` tables leaves ``alone`` of them out of full flights of ``m``."""
    from referee.seasons import schedule

    grouped = [list(range(i, i + m)) for i in range(0, tables - alone, m)]
    grouped += [[i] for i in range(tables - alone, tables)]
    searched: list[bool] = []
    monkeypatch.setattr(schedule, "choose_tables", lambda *a: [tuple(range(k))] * tables)
    monkeypatch.setattr(schedule, "group_flights", lambda *a: grouped)
    monkeypatch.setattr(schedule, "field_flights", lambda *a: searched.append(True))
    schedule.plan_flights(n, k, m, random.Random(1), 0)
    return bool(searched)


def test_the_flight_search_runs_when_more_than_a_tenth_of_the_tables_is_left_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``plan_flights``: the grouped design stands while at most max(m - 1, tables // 10)
    tables are out of full flights (a few always are when m does not divide), else the
    flight search is tried, never above ``FLIGHT_SEARCH_MAX`` bots x table size (minutes
    for nothing there). Boundaries pinned with the grouping and the search replaced
    (mutmut: every threshold could move unnoticed)."""
    cases = [
        ((9, 3, 3, 30, 3), False), ((9, 3, 3, 30, 4), True),  # tables // 10 = 3
        ((9, 3, 3, 10, 2), False), ((9, 3, 3, 10, 3), True),  # m - 1 = 2
        ((9, 3, 2, 30, 3), False), ((9, 3, 2, 30, 4), True),  # 30 // 10 = 3 > m - 1
        ((14, 7, 2, 20, 10), False),  # 98 > FLIGHT_SEARCH_MAX
        ((12, 8, 2, 20, 10), True),  # 96: still searched
    ]  # fmt: skip
    for (n, k, m, tables, alone), searched in cases:
        assert _plan_searches(monkeypatch, n, k, m, tables, alone) == searched, (n, k, m, alone)


def test_may_balance_counts_the_partner_slots_of_the_busiest_bot() -> None:
    """``_may_balance``, the necessary condition that skips hopeless table counts: 7 tables
    of 3 from 7 bots may balance (the Fano plane: every pair once); 3 tables of 4 from 5
    bots may not: 12 seats for 5 bots make one bot play 3 times, 9 partner slots among 4
    others who may meet it at most lam + 1 = 2 times each (mutmut: the busiest bot's count
    could be left out, or taken as the mean 2.4, unnoticed)."""
    assert _may_balance(7, 3, 7)
    assert not _may_balance(5, 4, 3)
    assert _may_balance(5, 4, 5)  # every 4-subset once: each bot 4 times, each pair 3 times
    # 6 tables of 3 from 4 bots: lam = 3, a bot playing 4 times has 8 < 3 * 3 partner slots
    assert not _may_balance(4, 3, 6)
    # 3 tables of 3 from 4 bots: a bot playing 3 times fills 6 = 3 * (lam + 1) slots exactly
    assert _may_balance(4, 3, 3)


def test_the_duplicate_plan_counts_owners_once_and_says_plain_deals_in_words() -> None:
    """With ``separate_owners`` each owner counts once toward the field duplicate needs
    (8 bots, two of them with one owner each: 8 units, 2 tables a board); no owners given
    counts every bot; duplicate off is "plain deals" in the words people read (mutmut:
    these were unchecked)."""
    spec = SeasonSpec(
        name="o", game="sevens", bots=tuple(f"b{i}" for i in range(8)), table_size=4,
        deals_per_match=4, options=SeasonOptions(separate_owners=True),
    )  # fmt: skip
    assert duplicate_plan(spec, {"b0": "ann", "b1": "bo"}).tables_per_board == 2
    assert duplicate_plan(spec, {"b0": "ann", "b1": "ann"}).tables_per_board == 0
    assert duplicate_plan(spec).tables_per_board == 2
    plain = SeasonSpec.from_dict({**spec.to_dict(), "options": {"duplicate": False}})
    assert duplicate_plan(plain).note == "plain deals: every deal a new shuffle"


def test_seat_counts_counts_each_bot_in_each_seat() -> None:
    """``seat_counts``, which the seat checks and the fairness tests read: per bot, how
    often it sat in each seat (mutmut: counting down passed, the seat check reads only
    spreads)."""
    seatings = [(0, 1, 2), (2, 0, 1), (0, 2, 1)]
    assert seat_counts(seatings) == {
        0: Counter({0: 2, 1: 1}),
        1: Counter({1: 1, 2: 2}),
        2: Counter({0: 1, 1: 1, 2: 1}),
    }


class _NeverSwaps(random.Random):
    """A generator whose ``randrange`` always answers 0, so the searches never offer a
    swap (the same seat twice at a table, the same table twice), and counts its calls;
    ``shuffle`` draws as usual."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed)
        self.calls = 0

    def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
        self.calls += 1
        return 0


def test_the_seat_search_stops_after_2000_plus_200_steps_a_seat() -> None:
    """``assign_seats`` tries at most 2000 + 200 x tables x table size swaps (three draws
    each: the table and two seats) when the seats are not balanced by then: part of the
    schedule ``arena season verify`` rebuilds from the seed (docs/seasons.md, "Seed
    commitment"). Counted with a generator that never offers a swap (mutmut: the budget
    was unchecked, every seeded search balanced the seats well before it)."""
    rng = _NeverSwaps(0)
    seatings = assign_seats([(0, 1, 2)] * 4, rng)
    assert max(_spread([c[s] for s in range(3)]) for c in seat_counts(seatings).values()) > 1
    assert rng.calls == 3 * (2000 + 200 * 4 * 3)


def test_balanced_tables_of_two_and_of_the_whole_field() -> None:
    """``balanced_tables`` takes every table size from 2 (Sedma head-to-head above
    ``max_subsets``) to the whole field: 5 bots in pairs meet once each, 4 bots at tables
    of 4 play one table (one covers every pair); more seats than bots are refused in words
    (mutmut: tables of 2 could be refused, the search could start at 2 tables, the
    refusal could say nothing)."""
    assert sorted(balanced_tables(5, 2, random.Random(1))) == list(
        itertools.combinations(range(5), 2)
    )
    assert balanced_tables(4, 4, random.Random(1)) == [(0, 1, 2, 3)]
    with pytest.raises(ConfigError, match=r"^tables of 5 need at least 5 bots, not 4$"):
        balanced_tables(4, 5, random.Random(1))


def test_the_table_search_tries_4n_table_counts_3_times_within_its_step_budget() -> None:
    """``balanced_tables`` tries ``4 x bots`` table counts from the smallest that covers
    every pair, each by 3 seeded searches of at most 4000 + 400 x tables x table size steps
    (two draws each when the two tables drawn are one), then says what to change: part of
    the schedule ``arena season verify`` rebuilds from the seed (docs/seasons.md, "Seed
    commitment"). 4 bots at tables of 3 with bot 0 kept from bots 1 and 2 have no balanced
    design (only {1, 2, 3} is allowed, pair (0, 3) never meets), so every try runs to the
    end; counted with a generator that never offers a swap (mutmut: the number of table
    counts, of tries and of steps, the skipped counts and the refusal without owners were
    unchecked: every seeded search in the tests found a design early)."""
    rng = _NeverSwaps(0)
    with pytest.raises(ConfigError) as refused:
        balanced_tables(4, 3, rng, [(0, 1), (0, 2)])
    assert str(refused.value) == (
        "no balanced design of tables of 3 for 4 bots was found with owners kept apart; set "
        "separate_owners = false; raise max_subsets to 4 to play every table instead"
    )
    counts = range(2, 2 + 4 * 4)  # 4 pairs allowed, 3 a table: from 2 tables
    assert rng.calls == 3 * sum(2 * (4000 + 400 * total * 3) for total in counts)
    # Without owners the counts _may_balance rules out (5, 15 and 25 tables of 3 for 6
    # bots) are skipped, not searched, and the search goes on after them; this generator's
    # first draws balance no count.
    rng = _NeverSwaps(0)
    with pytest.raises(ConfigError) as refused:
        balanced_tables(6, 3, rng)
    assert str(refused.value) == (
        "no balanced design of tables of 3 for 6 bots was found; raise max_subsets to 20 to "
        "play every table instead"
    )
    counts = range(5, 5 + 4 * 6)  # 15 pairs, 3 a table: from 5 tables
    searched = [total for total in counts if total not in (5, 15, 25)]
    assert rng.calls == 3 * sum(2 * (4000 + 400 * total * 3) for total in searched)


def test_choose_tables_plays_every_table_up_to_max_subsets_and_refuses_in_words() -> None:
    """``choose_tables`` plays every k-subset when there are at most ``max_subsets`` of
    them (the 10 tables of 3 from 5 bots with max_subsets = 10), else the balanced design
    (5 tables with 9); when owners kept apart leave no table it says so (mutmut: the
    boundary and the refusal's words were unchecked)."""
    every = list(itertools.combinations(range(5), 3))
    assert choose_tables(5, 3, random.Random(1), 10) == every
    assert len(choose_tables(5, 3, random.Random(1), 9)) == 5
    with pytest.raises(ConfigError) as refused:
        choose_tables(4, 3, random.Random(1), 10, [(0, 1), (2, 3)])
    assert str(refused.value) == (
        "no table of 3 keeps every owner's bots apart: add bots of other owners or set "
        "separate_owners = false"
    )


def test_the_duplicate_plan_says_in_full_what_it_does_and_why_it_is_off() -> None:
    """The sentences of ``duplicate_plan``, stored as the season's "duplicate" field and
    read by people: field duplicate at 2 tables, and off for a field too small, counted in
    owners with ``separate_owners`` (mutmut: only some words were checked)."""
    spec = SeasonSpec(
        name="o", game="sevens", bots=tuple(f"b{i}" for i in range(8)), table_size=4,
        deals_per_match=4,
    )  # fmt: skip
    assert duplicate_plan(spec).note == (
        "field duplicate: each shuffle is played at 2 tables by different bots, each hand "
        "held by 2 different bots, never twice by one bot; the standings compare them across "
        "tables (dup_score)"
    )
    small = SeasonSpec.from_dict(
        {**spec.to_dict(), "bots": list(spec.bots[:7]), "options": {"separate_owners": True}}
    )
    assert duplicate_plan(small).note == (
        "duplicate is off: field duplicate plays each shuffle at 2 or more tables with no bot "
        "(no owner with separate_owners) at two of them, which needs at least 8 owners for "
        "tables of 4; this season has 7: every deal is a new shuffle"
    )
