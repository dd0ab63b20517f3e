"""The Sevens search bots on the fast engine (referee/games/sevens/bots.py): they play
only legal moves in every preset, stop at their deadline, and are deterministic given
their random generator while their work limit stops them."""

from __future__ import annotations

import random
import time

import pytest

from referee.games.base import DealSpec
from referee.games.ladder import Ismcts, MonteCarlo, Solver
from referee.games.sevens import bots, exact
from referee.games.sevens.belief import SevensBelief
from referee.games.sevens.fast import FastDeal, heuristic_move, text_move
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS


def _mid_deal(preset: str, seed: int, steps: int = 10) -> SevensMatch:
    rng = random.Random(seed)
    match = SevensMatch(PRESETS[preset], 4, seed, [DealSpec(seed)])
    for _ in range(steps):
        legal = match.legal_actions()
        match.apply(legal[rng.randrange(len(legal))])
    while len(match.legal_actions()) < 2:
        match.apply(match.legal_actions()[0])
    return match


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_search_bots_play_legal_moves_in_every_preset(preset: str) -> None:
    mc = MonteCarlo(sevens_worlds=8, budget_ms=1000)
    ism = Ismcts(sevens_iterations=40, budget_ms=1000)
    solver = Solver(worlds=4, exact_cards=20, budget_ms=1000)
    rng = random.Random(preset)
    seed = rng.getrandbits(32)
    match = SevensMatch(PRESETS[preset], 4, seed, [DealSpec(seed)])
    while not match._results:
        seat = match.to_act()
        legal = match.legal_actions()
        obs = match.observation(seat)
        assert bots.supports(obs)
        action = (mc, ism, solver, solver)[seat % 4](obs, legal, rng)
        assert action in legal
        match.apply(action)


def test_search_bots_are_deterministic_given_their_generator() -> None:
    early = _mid_deal("fan-tan", 4)
    late = _mid_deal("fan-tan", 4, steps=30)  # in the solver's exact range
    for policy in (
        MonteCarlo(sevens_worlds=20, budget_ms=60_000),
        Ismcts(budget_ms=60_000),
        Solver(worlds=8, exact_cards=30, budget_ms=60_000),
    ):
        for match in (early, late):
            obs = match.observation(match.to_act())
            legal = match.legal_actions()
            first = policy(obs, legal, random.Random(9))
            assert all(policy(obs, legal, random.Random(9)) == first for _ in range(2))


def test_search_bots_stop_at_their_deadline() -> None:
    """With a work limit far beyond the clock, a call returns within its budget plus a few
    worlds or iterations (measured in the same run, so load does not decide). The work is
    measured in this thread's CPU time: the deadline is on the wall clock, so a call that
    stops at it uses at most the budget's CPU, while a preempted test process (load 10+)
    can see more wall time pass than any search did."""
    match = _mid_deal("sevens", 6)
    obs = match.observation(match.to_act())
    legal = match.legal_actions()
    rng = random.Random(1)
    start, cpu = time.perf_counter(), time.thread_time()
    bots.determinized(obs, legal, rng, 4, start + 1000)
    bots.ismcts(obs, legal, rng, 16, start + 1000)
    unit = time.thread_time() - cpu  # four worlds plus sixteen iterations
    budget = 0.05

    def pimc(deadline: float) -> str:
        return bots.determinized(obs, legal, rng, 10**6, deadline)

    def tree(deadline: float) -> str:
        return bots.ismcts(obs, legal, rng, 10**6, deadline)

    for run in (pimc, tree):
        cpu = time.thread_time()
        assert run(time.perf_counter() + budget) in legal
        assert time.thread_time() - cpu < budget + 2 * unit + 0.05


def test_utility_is_the_rules_own() -> None:
    """winner_only: 1 for the winner and 0 for everyone else; chips: the winner above
    every loser."""
    for preset in ("sevens", "fan-tan", "fwend"):
        match = _mid_deal(preset, 2)
        deal = FastDeal.from_match(match)
        rng = random.Random(3)
        while not deal.is_terminal():
            deal.play(heuristic_move(deal, rng))
        values = [bots.utility(deal, s) for s in range(4)]
        assert max(values) == values[deal.winner]
        if preset == "sevens":
            assert sorted(values) == [0.0, 0.0, 0.0, 1.0]
        assert all(-1.0 <= v <= 1.0 for v in values)


def _endgame(preset: str, seed: int, left: int) -> SevensMatch | None:
    """A match of ``preset`` played at random until at most ``left`` cards are in the
    hands and the seat to act has a choice; None if the deal ended first."""
    rng = random.Random(seed)
    match = SevensMatch(PRESETS[preset], 4, seed, [DealSpec(seed)])
    while not match._results:
        legal = match.legal_actions()
        in_hands = sum(h.bit_count() for h in match._hands)
        if in_hands <= left and len(legal) > 1:
            return match
        match.apply(legal[rng.randrange(len(legal))])
    return None


@pytest.mark.parametrize("preset", ["sevens", "fan-tan"])
def test_solver_plays_the_best_move_of_the_worlds_it_is_shown(
    preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shown the true hands in every world, the solver plays a move of the highest exact
    value in the true deal (SV-25: the first to empty its hand wins), against random
    opponents and, in its own later moves, either maximising or playing the heuristic."""
    checked = 0
    for seed in range(8):
        match = _endgame(preset, seed, 24)
        if match is None:
            continue
        hands = list(match._hands)
        monkeypatch.setattr(SevensBelief, "sample", lambda self, rng, h=hands: list(h))
        seat = match.to_act()
        obs = match.observation(seat)
        legal = match.legal_actions()
        deal = FastDeal.from_match(match)
        for hero_max in (True, False):
            shares = [0.0] * 4
            shares[seat] = 1.0
            values = exact.solve_python(
                deal.fr, deal.hands, deal.table, seat, shares, hero_max=hero_max
            )
            assert values is not None
            best = max(values.values())
            choice = bots.solver(
                obs,
                legal,
                random.Random(seed),
                3,
                52,
                10**6,
                time.perf_counter() + 60,
                0,
                "random",
                hero_max,
            )
            assert values[text_move(choice)] == pytest.approx(best, abs=1e-12)
        checked += 1
    assert checked >= 5


def test_solver_plays_alike_with_the_c_and_the_python_solver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if exact.load() is None:
        pytest.skip("no C compiler here")
    positions = [m for m in (_endgame("sevens", s, 18) for s in range(6)) if m is not None]
    assert len(positions) >= 4
    policy = Solver(worlds=6, budget_ms=60_000)
    with_c = [
        policy(m.observation(m.to_act()), m.legal_actions(), random.Random(1)) for m in positions
    ]
    monkeypatch.setenv("ARENA_EXACT_ENGINE", "python")
    with_py = [
        policy(m.observation(m.to_act()), m.legal_actions(), random.Random(1)) for m in positions
    ]
    assert with_c == with_py
