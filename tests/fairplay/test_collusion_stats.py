"""The collusion statistic (referee/games/collusion.py, docs/SECURITY.md "Fair play"):
what a decision moves to each opponent, the pair z and its corrected thresholds, and an
in-process season of the bench that flags a soft-playing pair and no honest one."""

from __future__ import annotations

import random

import pytest

from referee.games.collusion import (
    Decision,
    PlayedMatch,
    decision_help,
    pair_statistics,
    thresholds,
)
from referee.games.collusion_sim import judge, play_season
from referee.games.registry import get_game
from referee.games.sedma import rules as sedma_rules
from tests.sevens.helpers import rules, stacked


def _to_act_first(hands: list[str], first: str) -> list[str]:
    """Rotate the hands so that the seat the match asks first holds ``first``."""
    probe = stacked(rules("sevens"), hands)
    seat = probe.to_act()
    owner = next(i for i, h in enumerate(hands) if first in h.split())
    shift = (owner - seat) % len(hands)
    return hands[shift:] + hands[:shift]


def test_a_play_that_opens_an_opponents_card_moves_it_to_that_opponent() -> None:
    # hearts lack 8H (A) and 9H (B), clubs lack 6C (A) and 5C (C): every other card is out
    hands = _to_act_first(["8H 6C", "9H", "5C"], "8H")
    match = stacked(rules("sevens"), hands)
    a = match.to_act()
    b = next(i for i, h in enumerate(hands) if h == "9H")
    c = next(i for i, h in enumerate(hands) if h == "5C")
    assert sorted(match.legal_actions()) == ["6C", "8H"]
    hearts = decision_help(match, "8H")
    clubs = decision_help(match, "6C")
    assert hearts is not None and clubs is not None
    assert hearts.seat == clubs.seat == a
    # 8H opens 9H (B's): half a card above the average alternative for B, below for C
    assert hearts.transfer[b] > 0 > hearts.transfer[c]
    assert clubs.transfer[c] > 0 > clubs.transfer[b]
    assert hearts.transfer[b] == pytest.approx(-clubs.transfer[b])


def test_no_choice_no_decision() -> None:
    hands = _to_act_first(["8H", "9H", "5C 6C"], "8H")
    match = stacked(rules("sevens"), hands)
    assert match.legal_actions() == ["8H"]
    assert decision_help(match, "8H") is None


def test_sedma_points_moved_onto_an_opponents_trick() -> None:
    game = get_game("sedma")
    match = game.new_match(game.preset("sedma-3"), 3, 11, None)
    assert isinstance(match.rules, sedma_rules.SedmaRules)
    rng = random.Random(3)
    found = 0
    while not match.is_over() and found < 20:
        legal = match.legal_actions()
        for action in legal:
            d = decision_help(match, action)
            if d is not None:
                found += 1
                assert set(d.transfer) == {s for s in range(3) if s != match.to_act()}
        match.apply(rng.choice(legal))
    assert found > 0


def _decisions(per_deal: list[float], seat: int = 0) -> list[Decision]:
    return [Decision(seat, deal, "x", {1: v, 2: -v, 3: 0.0}) for deal, v in enumerate(per_deal)]


def test_a_consistent_transfer_is_flagged_and_a_symmetric_one_is_not() -> None:
    rng = random.Random(5)
    biased = [rng.gauss(0.6, 1.0) for _ in range(200)]
    fair = [rng.gauss(0.0, 1.0) for _ in range(200)]
    stats, limits = pair_statistics(
        [
            PlayedMatch("m1", ["a", "b", "c", "d"], _decisions(biased)),
            PlayedMatch("m2", ["e", "f", "g", "h"], _decisions(fair)),
        ]
    )
    by_pair = {(s.helper, s.helped): s for s in stats}
    assert by_pair["a", "b"].level == "act" and by_pair["a", "b"].z > limits.act
    assert by_pair["a", "c"].z < 0  # what b gained c lost
    assert not by_pair["e", "f"].level and not by_pair["e", "g"].level
    assert stats[0].helper == "a" and stats[0].helped == "b"
    assert by_pair["a", "b"].evidence and by_pair["a", "b"].evidence[0].moved > 0


def test_too_few_deals_gives_no_z() -> None:
    stats, _ = pair_statistics([PlayedMatch("m", ["a", "b", "c", "d"], _decisions([5.0] * 9))])
    assert all(s.z == 0.0 and not s.level for s in stats)


def test_thresholds_grow_with_the_pairs_tested() -> None:
    one, many = thresholds(1), thresholds(132)
    assert one.screen == pytest.approx(3.0) and one.act == pytest.approx(5.0)
    assert 4.0 < many.screen < many.act and many.act > 5.5


def test_a_soft_playing_pair_is_flagged_and_no_honest_pair() -> None:
    outcome = judge(play_season("sevens", bots=8, deals=150, strength=1.0, seed=4))
    assert outcome.colluders_screened, outcome
    assert outcome.honest_screened == 0, outcome


def test_an_honest_field_flags_no_pair() -> None:
    outcome = judge(play_season("sevens", bots=8, deals=150, strength=0.0, seed=4))
    assert not outcome.colluders_screened and outcome.honest_screened == 0, outcome


def test_the_simulations_honest_bots_choose_as_the_reference_heuristic() -> None:
    from referee.games.collusion_sim import _honest
    from referee.games.ladder import heuristic_policy

    game = get_game("sevens")
    compared = 0
    for seed in range(6):
        match = game.new_match(game.preset("sevens"), 4, seed, None)
        while not match.is_over():
            legal, seat = match.legal_actions(), match.to_act()
            if len(legal) > 1:
                obs = match.observation(seat)
                expected = heuristic_policy(obs, legal, random.Random(compared))
                assert _honest(match, seat, legal, random.Random(compared)) == expected
                compared += 1
            match.apply(legal[-1])
    assert compared > 100
