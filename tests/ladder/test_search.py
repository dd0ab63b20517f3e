"""The search API (referee/games/search.py): positions read from observations,
determinizations that respect what the seat observed, clones, playouts."""

from __future__ import annotations

import random

import pytest

from referee.games.base import PASS, DealSpec, Match
from referee.games.cards import Card
from referee.games.registry import GAMES
from referee.games.search import position
from referee.games.sedma.search import SedmaPosition, SedmaState
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS as SEVENS_PRESETS
from referee.games.sevens.search import SevensPosition, SevensState
from referee.games.sevens.tables import mask_actions

SEDMA = GAMES["sedma"]
SEVENS = GAMES["sevens"]


def _random_step(match: Match, rng: random.Random) -> None:
    legal = match.legal_actions()
    match.apply(legal[rng.randrange(len(legal))])


@pytest.mark.parametrize("preset", sorted(SEVENS_PRESETS))
@pytest.mark.parametrize("players", [3, 5])
def test_sevens_determinizations_respect_observed_facts(preset: str, players: int) -> None:
    """At every decision of a random deal, a determinization of the seat to act has the
    engine's legal actions and seat to act; it gives every other seat its hand size, no
    card of the table or of the seat's own hand, and no card that seat was seen not to
    hold (SV-17/SV-18: a forced pass means no playable card). The facts are sound: the
    true hands never break them."""
    rng = random.Random(f"{preset}:{players}")
    match = SEVENS.new_match(SEVENS.preset(preset), players, 7, [DealSpec(rng.getrandbits(32))])
    assert isinstance(match, SevensMatch)
    decisions = 0
    while not match.is_over():
        seat = match.to_act()
        obs = match.observation(seat)
        pos = position(obs)
        assert isinstance(pos, SevensPosition)
        for _ in range(3):
            state = pos.determinize(rng)
            assert isinstance(state, SevensState)
            assert state.to_act() == seat
            assert state.legal_actions() == match.legal_actions()
            hands = state.match._hands
            assert hands[seat] == match._hands[seat]
            for s in range(players):
                assert hands[s].bit_count() == obs["hand_sizes"][s]
                assert not hands[s] & pos.table
                if s != seat:
                    assert not hands[s] & pos.excluded[s], (s, mask_actions(pos.excluded[s]))
        for s in range(players):
            assert not match._hands[s] & pos.excluded[s]
        decisions += 1
        _random_step(match, rng)
    assert decisions > 10


def test_a_forced_pass_rules_out_the_playable_cards() -> None:
    """SV-17/SV-18: seat 1 holds no diamond next to 7D and must pass; from then on no
    determinization by another seat gives seat 1 the 6D or 8D, nor (before hearts open)
    anything else that was playable then."""
    deck = [str(Card.from_index(i)) for i in range(52)]
    hands: list[list[str]] = [[], [], []]
    # seat 0 opens with 7D; seat 1 gets no diamond 6/8 and no other 7.
    fixed = {"7D": 0, "6D": 2, "8D": 2, "7C": 0, "7H": 2, "7S": 0}
    rest = [c for c in deck if c not in fixed]
    for card, seat in fixed.items():
        hands[seat].append(card)
    seat = 1
    for card in rest:
        while len(hands[seat]) >= (18 if seat == 0 else 17):
            seat = (seat + 1) % 3
        hands[seat].append(card)
        seat = (seat + 1) % 3
    assert sorted(len(h) for h in hands) == [17, 17, 18]
    match = SevensMatch(SEVENS_PRESETS["sevens"], 3, 1, [DealSpec(1, 0, 2)], hands=hands)
    assert match.to_act() == 0
    match.apply("7D")
    assert match.legal_actions() == [PASS]  # seat 1 cannot play
    match.apply(PASS)
    obs = match.observation(2)
    pos = SevensPosition(obs)
    ruled_out = set(mask_actions(pos.excluded[1]))
    assert {"6D", "8D", "7C", "7H", "7S"} <= ruled_out
    rng = random.Random(3)
    for _ in range(200):
        state = pos.determinize(rng)
        assert not set(state.hand(1)) & ruled_out
        assert not set(state.hand(0)) & set(match.observation(2)["hand"])


def test_sevens_clone_is_independent() -> None:
    rng = random.Random(5)
    match = SEVENS.new_match(SEVENS.preset("fan-tan"), 4, 3, [DealSpec(9)])
    for _ in range(10):
        _random_step(match, rng)
    state = position(match.observation(match.to_act())).determinize(rng)
    before = state.legal_actions(), state.to_act()
    copy = state.clone()
    while not copy.is_terminal():
        copy.apply(copy.rollout_action(rng))
    assert (state.legal_actions(), state.to_act()) == before
    assert not state.is_terminal()
    returns = copy.returns()
    # the winner scores 1.0; losers tied for second (a per_card tie) may all score above 0
    assert len(returns) == 4 and max(returns) == 1.0 > min(returns)
    assert all(-1.0 <= r <= 1.0 for r in returns)


@pytest.mark.parametrize("preset", sorted(SEDMA.presets()))
def test_sedma_determinizations_respect_observed_facts(preset: str) -> None:
    """Played cards are never dealt again (SD-8), cards shown in a marriage stay with
    their holder (SD-19), hand and talon sizes are kept (SD-11), and the unseen cards are
    exactly the cards the seat cannot see."""
    rules = SEDMA.preset(preset)
    n = rules.players  # type: ignore[attr-defined]
    shown_checked = 0
    for k in range(4):
        rng = random.Random(f"{preset}:{k}")
        match = SEDMA.new_match(rules, n, k, [DealSpec(rng.getrandbits(32))])
        while not match.is_over():
            seat = match.to_act()
            obs = match.observation(seat)
            pos = position(obs)
            assert isinstance(pos, SedmaPosition)
            truth = match.hand_state()  # type: ignore[attr-defined]
            hidden = {c for s in range(n) if s != seat for c in truth.hands[s]} | set(truth.talon)
            for _ in range(3):
                state = pos.determinize(rng)
                assert isinstance(state, SedmaState)
                hand = state.hand
                assert state.to_act() == seat
                assert state.legal_actions() == match.legal_actions()
                dealt = {c for s in range(n) if s != seat for c in hand.hands[s]}
                assert dealt | set(hand.talon) == hidden
                assert not dealt & pos.played
                assert [len(h) for h in hand.hands] == [len(h) for h in truth.hands]
                assert len(hand.talon) == len(truth.talon)
                for s in range(n):
                    assert pos.known[s] <= set(hand.hands[s])
                    shown_checked += len(pos.known[s])
            _random_step(match, rng)
    if rules.marriages:  # type: ignore[attr-defined]
        assert shown_checked > 0


def test_sedma_determinized_hand_scores_like_the_engine() -> None:
    """Replaying the rest of a real hand in a determinization that got the true cards
    (the talon in its true order) ends with the engine's score."""
    rng = random.Random(11)
    rules = SEDMA.preset("mariash-sedma")
    for k in range(6):
        match = SEDMA.new_match(rules, 4, k, [DealSpec(100 + k)])
        for _ in range(rng.randrange(1, 20)):
            _random_step(match, rng)
        seat = match.to_act()
        state = position(match.observation(seat)).determinize(rng)
        assert isinstance(state, SedmaState)
        truth = match.hand_state()  # type: ignore[attr-defined]
        state.hand.hands = [list(h) for h in truth.hands]
        state.hand.talon = list(truth.talon)
        while not match.deal_results():
            legal = match.legal_actions()
            action = legal[rng.randrange(len(legal))]
            match.apply(action)
            state.apply(action)
        result = match.deal_results()[0]
        assert state.is_terminal()
        score = state.hand.score()
        assert list(score.points) == result.detail["points"]
