"""Random-play invariants on every preset, checked after every step (STYLE 5).

Cards are conserved (32 or 24, SD-2, SD-18), legal actions are sorted and held (SD-8),
card points sum to 80 and with the last trick to 90 (SD-4), partners score alike (SD-1),
every hand ends after deck/players tricks (SD-12) and every session ends (SD-15).
"""

from __future__ import annotations

import random

import pytest

from referee.games.base import EventKind, action_sort_key
from referee.games.cards import Rank
from referee.games.registry import get_game
from referee.games.sedma.match import SedmaMatch
from referee.games.sedma.rules import SedmaRules, deck_cards

SESSIONS_PER_PRESET = 150


def _check_state(match: SedmaMatch, rules: SedmaRules) -> None:
    hand = match.hand_state()
    held = [c for h in hand.hands for c in h]
    in_play = held + list(hand.talon) + [c for _, c in hand.trick]
    in_play += [c for taken in hand.taken for c in taken]
    assert sorted(in_play) == deck_cards(rules.deck)  # every card exactly once
    legal = match.legal_actions()
    assert legal and legal == sorted(legal, key=action_sort_key)
    assert len(set(legal)) == len(legal)
    seat = match.to_act()
    obs = match.observation(seat)
    assert {a.split("+")[0] for a in legal} == set(obs["hand"])
    assert obs["hand_sizes"] == [len(h) for h in hand.hands]
    assert sum(obs["card_points"]) == 10 * sum(
        1 for taken in hand.taken for c in taken if c.rank in (Rank.TEN, Rank.ACE)
    )


@pytest.mark.parametrize("preset", ["sedma", "sedma-2", "sedma-3", "mariash-sedma"])
def test_random_sessions_keep_every_invariant(preset: str) -> None:
    game = get_game("sedma")
    rules = game.preset(preset)
    assert isinstance(rules, SedmaRules)
    n = rules.players
    for seed in range(SESSIONS_PER_PRESET):
        match = game.new_match(rules, n, seed)
        assert isinstance(match, SedmaMatch)
        rng = random.Random(seed)
        steps = 0
        while not match.is_over():
            _check_state(match, rules)
            match.apply(rng.choice(match.legal_actions()))
            steps += 1
            assert steps < 10_000, "the session did not end"
        plays = [e for e in match.events() if e.kind == EventKind.PLAY]
        results = match.deal_results()
        assert len(plays) == rules.deck_size * len(results)  # every hand ran to its end
        for k, deal in enumerate(results):
            detail = deal.detail
            assert deal.deal == k
            assert sum(detail["card_points"]) == 80
            assert sum(detail["points"]) == 90 + sum(detail["marriage_points"])
            assert sum(detail["tricks"]) == rules.num_tricks
            for side in rules.sides():  # partners always score alike
                assert len({deal.deltas[s] for s in side}) == 1
            if not deal.void:
                assert sorted(detail["match_points"], reverse=True)[1:] == [0] * (
                    rules.num_sides - 1
                )
                assert deal.winner in deal.order[0]
        result = match.result()
        totals = [0] * n
        for deal in results:
            totals = [t + d for t, d in zip(totals, deal.deltas, strict=True)]
        assert list(result.totals) == totals
        assert max(result.totals) >= rules.target
        assert game.match_from_json(match.to_json()).to_json() == match.to_json()
        assert sorted(s for group in result.order for s in group) == list(range(n))
