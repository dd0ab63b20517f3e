"""Random legal play for every preset and every legal player count (STYLE 5).

Full invariants (observations, privacy, card conservation SV-10, chip conservation SV-31,
``check`` agreeing with the legal list) after every step of a few matches per table, plus
many more matches with cheap per-step checks; every match ends in a result that survives
a JSON round trip.
"""

from __future__ import annotations

import random

import pytest

from referee.games.base import PASS, DealSpec, action_sort_key
from referee.games.sevens import GAME, PRESETS
from tests.sevens.helpers import check_end, check_invariants, play_random

TABLES = [(name, n) for name in PRESETS for n in GAME.player_counts(PRESETS[name])]


@pytest.mark.parametrize(("preset", "players"), TABLES)
def test_random_play_with_full_invariants(preset: str, players: int) -> None:
    for seed in range(2):
        specs = [DealSpec(seed * 10 + d, rotation=d) for d in range(2)]
        match = GAME.new_match(PRESETS[preset], players, seed, specs)
        play_random(match, random.Random(seed))


@pytest.mark.parametrize(("preset", "players"), TABLES)
def test_many_random_matches_terminate_with_consistent_results(preset: str, players: int) -> None:
    rules = PRESETS[preset]
    deals = 0
    for seed in range(100, 108):
        match = GAME.new_match(rules, players, seed)
        rng = random.Random(seed)
        while not match.is_over():
            legal = match.legal_actions()
            assert legal and legal == sorted(legal, key=action_sort_key)
            assert (PASS in legal) == (legal[-1] == PASS)
            hands = match._hands
            assert sum(h.bit_count() for h in hands) + match._table.bit_count() == len(
                match._t.dealt
            ) + (4 if rules.starters == "removed_before_deal" else 0)
            match.apply(rng.choice(legal))
        deals += len(match.deal_results())
        check_end(match)
    assert deals >= 8


@pytest.mark.parametrize("preset", ["sevens", "fan-tan", "shichi-narabe", "fwend"])
def test_random_play_with_variant_options(preset: str) -> None:
    """Options no preset uses: runs, ace high, voluntary passes, forfeits, until_broke."""
    variants: list[dict[str, object]] = [
        {"multi_card_turn": True},
        {"ace": "high"},
        {"must_play": False, "max_voluntary_passes": 2},
        {"illegal_pass_penalty": "forfeit_deal"},
        {"starters": "placed_from_hands", "opening": "any_seven"},
        {"eights_before_sixes": True, "multi_card_turn": True},
    ]
    if PRESETS[preset].scoring == "chips":
        variants.append({"until_broke": True, "starting_chips": 20})
        variants.append({"seven_penalty": 5, "short_hand_ante": "plus_one"})
        variants.append({"must_play": False, "pass_elimination": 2, "voluntary_pass_chips": 2})
    for i, changes in enumerate(variants):
        rules = PRESETS[preset].replace(**changes)
        for players in (3, 5):
            match = GAME.new_match(rules, players, 1000 + i)
            play_random(match, random.Random(i), check=i % 2 == 0)
            check_end(match)


BAD_ACTIONS = ["pass", "AS", "7C", "KH", "2D", "9S+TS", "xx", "", "pass ", "10H", "7d"]


@pytest.mark.parametrize("preset", list(PRESETS))
def test_random_play_with_refused_actions_keeps_invariants(preset: str) -> None:
    """One decision in eight sends something arbitrary (SV-18, SV-19, SV-21, timeouts)."""
    for seed in range(3):
        rules = PRESETS[preset]
        if seed == 2 and rules.scoring != "winner_only":
            rules = rules.replace(illegal_pass_penalty="forfeit_deal")
        match = GAME.new_match(rules, 4, seed, [DealSpec(seed), DealSpec(seed + 1)])
        rng = random.Random(seed)
        refused = 0
        while not match.is_over():
            check_invariants(match)
            roll = rng.random()
            if roll < 0.1:
                action = rng.choice(BAD_ACTIONS)
                refused += match.check(action) is not None
                events = match.apply(action)
                assert events
            elif roll < 0.12:
                events = match.apply_timeout()
                assert events[0].kind == "timeout"
            else:
                match.apply(rng.choice(match.legal_actions()))
        check_end(match)
        assert refused > 0
