"""The search engine of the Sevens family (referee/games/sevens/fast.py) against the rules
engine: on every preset and table size, random deals played side by side give the same
legal moves, the same seat to act and the same deal result, and a deal rebuilt from public
facts plus the hands plays like the engine."""

from __future__ import annotations

import random

import pytest

from referee.games.base import DealSpec
from referee.games.sevens.fast import (
    PASS_MOVE,
    FastDeal,
    fast_rules,
    heuristic_move,
    move_text,
    text_move,
)
from referee.games.sevens.heuristic import choose
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS
from referee.games.sevens.tables import mask_actions

DEALS_PER_CASE = 12


def _play_side_by_side(match: SevensMatch, deal: FastDeal, rng: random.Random) -> int:
    """Random moves (heuristic moves one time in three) to the end of the deal, checking
    both engines agree at every step; the number of moves played."""
    moves = 0
    while not match._results:
        legal = match.legal_actions()
        assert not deal.is_terminal()
        assert [move_text(m) for m in deal.legal_moves()] == legal
        assert deal.to_act == match.to_act()
        assert deal.hands == match._hands
        assert deal.playable == match._playable
        if rng.random() < 1 / 3:
            move = heuristic_move(deal, rng)
        else:
            move = text_move(legal[rng.randrange(len(legal))])
        assert move_text(move) in legal
        match.apply(move_text(move))
        deal.play(move)
        moves += 1
    assert deal.is_terminal()
    result = match.deal_results()[0]
    assert deal.winner == result.winner
    assert tuple(deal.deltas()) == result.detail.get("raw_deltas", result.deltas)
    assert tuple(deal.order()) == result.order
    return moves


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_fast_engine_plays_every_preset_like_the_rules_engine(preset: str) -> None:
    rng = random.Random(preset)
    total = 0
    for players in (3, 4, 5, 8):
        for k in range(DEALS_PER_CASE):
            seed = rng.getrandbits(32)
            match = SevensMatch(PRESETS[preset], players, seed, [DealSpec(seed)])
            # Start the fast deal at a random point of the engine's deal.
            for _ in range(rng.randrange(0, 20)):
                if match._results:
                    break
                legal = match.legal_actions()
                match.apply(legal[rng.randrange(len(legal))])
            if match._results:
                continue
            total += _play_side_by_side(match, FastDeal.from_match(match), rng)
            assert k >= 0
    assert total > 200


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_a_deal_rebuilt_from_public_facts_plays_like_the_engine(preset: str) -> None:
    """``FastDeal.start`` from the observation's public fields and the true hands gives the
    engine's legal moves and placing for the rest of the deal (chips already paid are
    sunk, so only the placing is compared)."""
    rng = random.Random(f"start:{preset}")
    rules = PRESETS[preset]
    for players in (3, 4, 6):
        seed = rng.getrandbits(32)
        match = SevensMatch(rules, players, seed, [DealSpec(seed)])
        for _ in range(rng.randrange(5, 25)):
            legal = match.legal_actions()
            match.apply(legal[rng.randrange(len(legal))])
            if match._results:
                break
        if match._results:
            continue
        obs = match.observation(match.to_act())
        deal = FastDeal.start(
            fast_rules(rules, match._t),
            list(match._hands),
            match._table,
            obs["to_act"],
            obs["passes"],
            obs["free_passes_left"],
            match._vol,
            obs["eliminated"],
            obs["skip_next"],
            obs["pot"],
        )
        assert deal.playable == match._playable
        while not match._results:
            assert [move_text(m) for m in deal.legal_moves()] == match.legal_actions()
            legal = match.legal_actions()
            action = legal[rng.randrange(len(legal))]
            match.apply(action)
            deal.play(text_move(action))
        assert tuple(deal.order()) == match.deal_results()[0].order


def test_heuristic_move_is_the_heuristic() -> None:
    """The integer heuristic picks what ``heuristic.choose`` picks, given the same random
    generator state (their tie-breaks draw alike)."""
    for preset in ("sevens", "fan-tan", "shichi-narabe", "domino"):
        rules = PRESETS[preset]
        rng = random.Random(preset)
        for _ in range(6):
            seed = rng.getrandbits(32)
            match = SevensMatch(rules, 4, seed, [DealSpec(seed)])
            while not match._results:
                deal = FastDeal.from_match(match)
                seat = match.to_act()
                state = rng.getstate()
                move = heuristic_move(deal, rng)
                rng.setstate(state)
                want = choose(
                    rules,
                    match._t,
                    match._hands[seat],
                    match._table,
                    match.legal_actions(),
                    match._passes[seat],
                    match._free_left[seat],
                    rng,
                )
                assert move_text(move) == want, (preset, mask_actions(match._hands[seat]))
                match.apply(want)


def test_undo_play_restores_the_deal() -> None:
    rng = random.Random(5)
    match = SevensMatch(PRESETS["sevens"], 4, 9, [DealSpec(9)])
    deal = FastDeal.from_match(match)
    for _ in range(40):
        if deal.is_terminal():
            break
        moves = deal.legal_moves()
        if moves != (PASS_MOVE,):
            before = (deal.hands[:], deal.table, deal.playable, deal.to_act)
            seat, move = deal.to_act, moves[-1]
            playable, pending = deal.playable, deal.opening_pending
            deal.play(move)
            deal.undo_play(seat, move, playable, pending)
            assert (deal.hands, deal.table, deal.playable, deal.to_act) == before
        deal.play(moves[rng.randrange(len(moves))])
