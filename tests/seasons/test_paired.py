"""The paired statistics of a version test (referee/seasons/paired.py) and its schedule and
in-process run (referee/seasons/versiontest.py)."""

from __future__ import annotations

import math
import random
import statistics
from typing import Any

import pytest

from referee.errors import ConfigError
from referee.games.ladder import heuristic_policy
from referee.games.policies import get_policy
from referee.seasons.paired import (
    H0,
    H1,
    MIN_SETS,
    NELO_PER_T,
    Sprt,
    llr,
    paired_interval,
    sprt_bounds,
)
from referee.seasons.versiontest import (
    run_inprocess,
    set_differences,
    versus_schedule,
    versus_spec,
)


def test_the_interval_is_student_t_on_n_minus_1() -> None:
    s = paired_interval([1.0, 2.0, 3.0, 4.0])
    half = 3.182446305284263 * statistics.stdev([1, 2, 3, 4]) / 2  # t(0.975, 3)
    assert s.mean == 2.5
    assert s.low == pytest.approx(2.5 - half, rel=1e-6)
    assert s.high == pytest.approx(2.5 + half, rel=1e-6)
    assert s.excludes_zero
    assert not paired_interval([-1.0, 1.0, -2.0, 2.0]).excludes_zero
    with pytest.raises(ValueError, match="at least 2 sets"):
        paired_interval([1.0])


def test_wald_bounds_and_the_normalized_llr() -> None:
    low, high = sprt_bounds(0.05, 0.05)
    assert low == pytest.approx(math.log(0.05 / 0.95))
    assert high == pytest.approx(-low)
    # mean / sd exactly halfway between the hypotheses: no evidence either way
    t0, t1 = 0 / NELO_PER_T, 50 / NELO_PER_T
    assert llr(100, (t0 + t1) / 2, 1.0, 0, 50) == pytest.approx(0.0)
    assert llr(100, t1, 1.0, 0, 50) > 0 > llr(100, t0, 1.0, 0, 50)
    # scale-free: chips or match points, the same standardized difference weighs the same
    assert llr(100, 0.3, 2.0, 0, 50) == pytest.approx(llr(100, 3.0, 20.0, 0, 50))
    with pytest.raises(ValueError, match="ELO1 > ELO0"):
        Sprt(10, 5)


def _run(truth_nelo: float, seed: int, elo0: float = 0, elo1: float = 50) -> Sprt:
    rng = random.Random(seed)
    test = Sprt(elo0, elo1)
    while not test.decision:
        test.add(rng.gauss(truth_nelo / NELO_PER_T * 10.0, 10.0))
    return test


def test_the_sprt_decides_h1_for_a_better_bot_and_h0_for_an_equal_one() -> None:
    decided_h1 = sum(_run(150, s).decision == H1 for s in range(40))
    decided_h0 = sum(_run(0, s).decision == H0 for s in range(40))
    assert decided_h1 >= 38 and decided_h0 >= 36
    # a test once decided stays decided
    test = _run(150, 1)
    first = test.decision
    for _ in range(50):
        test.add(-100.0)
    assert test.decision == first


def test_identical_sets_accept_no_difference_and_a_lone_gain_is_h1() -> None:
    test = Sprt(0, 400)
    while not test.decision:
        test.add(0.0)
    assert test.decision == H0 and "no difference" in test.verdict()
    test = Sprt(0, 50)
    for _ in range(MIN_SETS - 1):
        test.add(3.0)
    assert not test.decision  # too few sets for a rough sd yet
    test.add(3.0)
    assert test.decision == H1 and "NEW is better" in test.verdict()


def test_the_schedule_pairs_new_and_old_on_the_same_deals_and_seats() -> None:
    spec = versus_spec("new", "old", ["f1", "f2", "f3"], "sevens", preset="fan-tan", deals=2)
    matches = versus_schedule(spec, 7, 4)
    assert len(matches) == 8
    for p in range(4):
        a, b = matches[2 * p], matches[2 * p + 1]
        assert a.deals == b.deals and a.seed == b.seed and a.boards == b.boards
        assert [s if s != "new" else "old" for s in a.seats] == list(b.seats)
        assert a.seats.index("new") == p % 4  # NEW's seat moves round the table
    assert matches[0].deals != matches[2].deals  # every pair has its own shuffles
    assert versus_schedule(spec, 7, 4) == matches  # deterministic from the seed
    h2h = versus_spec("new", "old", ["f"], "sedma", preset="sedma", deals=2)
    assert [m.seats for m in versus_schedule(h2h, 1, 2)[::2]] == [
        ("new", "f", "new", "f"),
        ("f", "new", "f", "new"),
    ]


def test_a_field_too_small_or_overlapping_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError, match="needs 3 distinct field bots, got 2"):
        versus_spec("new", "old", ["f1", "f2"], "sevens", preset="fan-tan")
    with pytest.raises(ConfigError, match="both 'a'"):
        versus_spec("a", "a", ["f"], "sedma", preset="sedma")
    with pytest.raises(ConfigError, match="also play in the field"):
        versus_spec("new", "old", ["new"], "sedma", preset="sedma")


def test_in_process_the_test_separates_heuristic_from_random_and_not_two_copies() -> None:
    field = ["f1"]
    spec = versus_spec("new", "old", field, "sedma", preset="sedma", deals=4, seed=11, name="vt")
    rnd = get_policy("random")
    better = Sprt(0, 200)
    run_inprocess(
        spec, {"new": heuristic_policy, "old": rnd, "f1": heuristic_policy}, pairs=60, sprt=better
    )
    assert better.decision == H1, better.verdict()
    same = Sprt(0, 200)
    run_inprocess(spec, {"new": rnd, "old": rnd, "f1": heuristic_policy}, pairs=60, sprt=same)
    assert same.decision == H0, same.verdict()


def test_set_differences_follow_the_committed_deltas() -> None:
    spec = versus_spec("new", "old", ["f"], "sedma", preset="sedma", deals=2, name="s")
    deal = {"deltas": [2, -2, 2, -2], "order": [[0, 2], [1, 3]]}
    lost = {"deltas": [-1, 1, -1, 1], "order": [[1, 3], [0, 2]]}
    results: dict[str, Any] = {
        "s-m0000": {"seats": ["new", "f", "new", "f"], "result": {"deals": [deal, lost]}},
        "s-m0001": {"seats": ["old", "f", "old", "f"], "result": {"deals": [lost, lost]}},
    }
    assert set_differences(spec, results, 1) == [3.0, 0.0]
    assert set_differences(spec, {"s-m0000": results["s-m0000"]}, 1) == []
