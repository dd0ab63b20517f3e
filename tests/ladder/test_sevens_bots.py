"""The Sevens search bots on the fast engine (referee/games/sevens/bots.py): they play
only legal moves in every preset, stop at their deadline, and are deterministic given
their random generator while their work limit stops them."""

from __future__ import annotations

import random
import time

import pytest

from referee.games.base import DealSpec
from referee.games.ladder import Ismcts, MonteCarlo
from referee.games.sevens import bots
from referee.games.sevens.fast import FastDeal, heuristic_move
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
    rng = random.Random(preset)
    seed = rng.getrandbits(32)
    match = SevensMatch(PRESETS[preset], 4, seed, [DealSpec(seed)])
    while not match._results:
        seat = match.to_act()
        legal = match.legal_actions()
        obs = match.observation(seat)
        assert bots.supports(obs)
        action = (mc if seat % 2 else ism)(obs, legal, rng)
        assert action in legal
        match.apply(action)


def test_search_bots_are_deterministic_given_their_generator() -> None:
    match = _mid_deal("fan-tan", 4)
    obs = match.observation(match.to_act())
    legal = match.legal_actions()
    for policy in (MonteCarlo(sevens_worlds=20, budget_ms=60_000), Ismcts(budget_ms=60_000)):
        first = policy(obs, legal, random.Random(9))
        assert all(policy(obs, legal, random.Random(9)) == first for _ in range(2))


def test_search_bots_stop_at_their_deadline() -> None:
    """With a work limit far beyond the clock, a call returns within its budget plus a few
    worlds or iterations (measured in the same run, so load does not decide)."""
    match = _mid_deal("sevens", 6)
    obs = match.observation(match.to_act())
    legal = match.legal_actions()
    rng = random.Random(1)
    start = time.perf_counter()
    bots.determinized(obs, legal, rng, 4, start + 1000)
    bots.ismcts(obs, legal, rng, 16, start + 1000)
    unit = time.perf_counter() - start  # four worlds plus sixteen iterations
    budget = 0.05

    def pimc(deadline: float) -> str:
        return bots.determinized(obs, legal, rng, 10**6, deadline)

    def tree(deadline: float) -> str:
        return bots.ismcts(obs, legal, rng, 10**6, deadline)

    for run in (pimc, tree):
        start = time.perf_counter()
        assert run(start + budget) in legal
        assert time.perf_counter() - start < budget + 2 * unit + 0.05


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
