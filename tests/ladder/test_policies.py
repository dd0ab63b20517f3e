"""The ladder's policies in-process, beyond the named presets: multi-card turns (SV-11),
voluntary passes that cost chips (must_play = false, SV-18/SV-24), free passes with
elimination (SV-22, SV-23), and Sedma marriages (SD-19): every action legal, never an
illegal pass or a refused action."""

from __future__ import annotations

import random

import pytest

from referee.games.base import DealSpec, EventKind
from referee.games.ladder import Ismcts, MonteCarlo, heuristic_policy
from referee.games.policies import Policy, random_policy
from referee.games.registry import get_game
from referee.games.sevens.rules import PRESETS, SevensRules

VARIANTS = {
    "runs": PRESETS["fan-tan"].replace(multi_card_turn=True),
    "voluntary": SevensRules(
        name="custom",
        must_play=False,
        max_voluntary_passes=2,
        voluntary_pass_chips=1,
        pass_chips=1,
        ante=1,
        scoring="chips",
        card_penalty="per_card",
    ),
    "free-passes": PRESETS["shichi-narabe"],
}

SEATS: list[Policy] = [
    heuristic_policy,
    MonteCarlo(worlds=6, budget_ms=50),
    Ismcts(iterations=40, budget_ms=50),
    random_policy,
]


def _play(game: str, rules: object, players: int, seed: int) -> int:
    g = get_game(game)
    match = g.new_match(rules, players, seed, [DealSpec(seed)])  # type: ignore[arg-type]
    rngs = [random.Random(seed * 10 + s) for s in range(players)]
    decisions = 0
    while not match.is_over():
        seat = match.to_act()
        legal = match.legal_actions()
        action = SEATS[seat % len(SEATS)](match.observation(seat), legal, rngs[seat])
        assert action in legal, (action, legal)
        for event in match.apply(action):
            assert event.kind not in (EventKind.ILLEGAL_PASS, EventKind.INVALID_ACTION), event
        decisions += 1
    return decisions


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_policies_play_sevens_variants_legally(variant: str) -> None:
    assert _play("sevens", VARIANTS[variant], 4, 5) > 10


def test_heuristic_passes_voluntarily_only_when_it_pays() -> None:
    """With voluntary passes for one chip the heuristic sometimes passes while able to
    play (to block), and never beyond the cap."""
    rules = VARIANTS["voluntary"]
    g = get_game("sevens")
    voluntary = 0
    for seed in range(6):
        match = g.new_match(rules, 4, seed, [DealSpec(seed)])
        rng = random.Random(seed)
        while not match.is_over():
            seat = match.to_act()
            legal = match.legal_actions()
            action = heuristic_policy(match.observation(seat), legal, rng)
            events = match.apply(action)
            assert not [e for e in events if e.kind == EventKind.ILLEGAL_PASS]  # within the cap
            voluntary += sum(1 for e in events if e.reason == "voluntary")
    assert voluntary > 0


def test_policies_play_mariash_sedma_and_the_heuristic_shows_every_marriage() -> None:
    rules = get_game("sedma").preset("mariash-sedma")
    assert _play("sedma", rules, 4, 3) > 10
    assert _play("sedma", get_game("sedma").preset("sedma-3"), 3, 4) > 10
    offered = 0
    for seed in range(40):
        match = get_game("sedma").new_match(rules, 4, seed, [DealSpec(seed)])
        rng = random.Random(seed)
        while not match.is_over():
            seat = match.to_act()
            legal = match.legal_actions()
            action = heuristic_policy(match.observation(seat), legal, rng)
            if any("+" in a for a in legal):
                offered += 1
                assert "+" in action  # SD-19: the heuristic always shows a marriage
            match.apply(action)
    assert offered > 0
