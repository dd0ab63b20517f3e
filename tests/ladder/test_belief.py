"""Inference over the hidden Sevens hands (referee/games/sevens/belief.py): no sampled
world contradicts what the seat observed. The check is independent of the belief's own
bookkeeping: each world, with the cards every seat played this deal given back, is dealt
again to the engine and the deal's real actions are replayed on it; every action must be
legal there and the seat must observe exactly what it observed (its history with every
pass's reason, the table, the hand sizes)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.games.base import DealSpec, EventKind
from referee.games.sevens import belief as belief_module
from referee.games.sevens.belief import SevensBelief
from referee.games.sevens.fast import FastDeal, heuristic_move, move_text, random_move
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS
from referee.games.sevens.search import _cards_of
from referee.games.sevens.tables import mask_actions

# One card a turn: every preset.
SINGLE_CARD = sorted(name for name, rules in PRESETS.items() if not rules.multi_card_turn)


def _replays(match: SevensMatch, seat: int, hands: list[int]) -> bool:
    """True when the deal, dealt with ``hands`` plus the cards each seat played, replays
    the real actions legally and shows ``seat`` the same observation."""
    obs = match.observation(seat)
    played = [0] * match.num_players
    for item in obs["history"]:
        if item.get("kind") == EventKind.PLAY:
            played[int(item["seat"])] |= _cards_of(str(item["action"]))
    initial = [hands[s] | played[s] for s in range(match.num_players)]
    again = SevensMatch(
        match.sevens_rules,
        match.num_players,
        0,
        [DealSpec(0, 0, int(obs["dealer"]))],
        hands=[list(mask_actions(h)) for h in initial],
    )
    for s, action, source in match._log:
        if again.to_act() != s or again.check(str(action)) is not None:
            return False
        again.apply(str(action), source)
    mine = again.observation(seat)
    return all(mine[k] == obs[k] for k in ("history", "table", "hand_sizes", "passes", "hand"))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    preset=st.sampled_from(SINGLE_CARD),
    players=st.integers(3, 8),
    seed=st.integers(0, 2**32 - 1),
    steps=st.integers(0, 60),
    heuristic_share=st.floats(0.0, 1.0),
)
def test_no_sampled_world_contradicts_an_observation(
    preset: str, players: int, seed: int, steps: int, heuristic_share: float
) -> None:
    rng = random.Random(seed)
    match = SevensMatch(PRESETS[preset], players, seed, [DealSpec(seed)])
    for _ in range(steps):
        if match._results:
            break
        legal = match.legal_actions()
        if rng.random() < heuristic_share:
            action = move_text(heuristic_move(FastDeal.from_match(match), rng))
        else:
            action = legal[rng.randrange(len(legal))]
        match.apply(action)
    if match._results:
        return
    seat = match.to_act()
    belief = SevensBelief(match.observation(seat))
    truth = list(match._hands)
    assert belief.consistent(truth)
    assert belief.weight(truth) > 0.0
    eliminated = any(match._elim)
    for _ in range(8):
        world = belief.sample(rng)
        assert belief.consistent(world), (preset, players, seed, steps)
        assert belief.weight(world) > 0.0
        if not eliminated:  # whose cards an elimination put on the table is not public
            assert _replays(match, seat, world), (preset, players, seed, steps)
        deal = belief.deal(world)
        assert deal.to_act == seat
        assert deal.legal_moves() == FastDeal.from_match(match).legal_moves()


def test_the_replay_check_can_fail() -> None:
    """A world that gives a seat a card it was seen not to hold (a forced pass with 8D
    playable) does not replay: the pass would not have been forced."""
    rng = random.Random(3)
    for seed in range(200):
        match = SevensMatch(PRESETS["sevens"], 4, seed, [DealSpec(seed)])
        while not match._results:
            legal = match.legal_actions()
            match.apply(legal[rng.randrange(len(legal))])
            obs = match.observation(match.to_act())
            belief = SevensBelief(obs)
            seat = match.to_act()
            for s in range(4):
                if s == seat or not belief.pos.excluded[s] & belief.unseen:
                    continue
                card = (belief.pos.excluded[s] & belief.unseen).bit_length() - 1
                holder = next(h for h in range(4) if (match._hands[h] >> card) & 1)
                world = list(match._hands)
                # swap the ruled-out card into seat s for one of s's cards
                give = match._hands[s] & -match._hands[s]
                world[s] = (world[s] & ~give) | (1 << card)
                world[holder] = (world[holder] & ~(1 << card)) | give
                assert not belief.consistent(world)
                assert not _replays(match, seat, world)
                return
    raise AssertionError("no forced pass with a hidden playable card in 200 deals")


def test_weights_prefer_worlds_that_explain_the_plays() -> None:
    """With a heuristic-only model, the true hands of heuristic players are on average
    likelier than random consistent worlds."""
    rng = random.Random(8)
    better = 0
    trials = 0
    old = belief_module.HEURISTIC_SHARE
    belief_module.HEURISTIC_SHARE = 0.95
    try:
        for seed in range(30):
            match = SevensMatch(PRESETS["sevens"], 4, seed, [DealSpec(seed)])
            for _ in range(24):
                match.apply(move_text(heuristic_move(FastDeal.from_match(match), rng)))
            belief = SevensBelief(match.observation(match.to_act()))
            truth = belief.weight(list(match._hands))
            others = [belief.weight(belief.sample(rng)) for _ in range(20)]
            trials += 1
            better += truth > sorted(others)[len(others) // 2]
    finally:
        belief_module.HEURISTIC_SHARE = old
    assert better > 0.7 * trials, (better, trials)


def test_the_plays_tell_a_random_player_from_the_heuristic() -> None:
    """In the true hands, the posterior share of heuristic play (the playouts' model of
    each seat) is high for heuristic players and low for a random one, after 24 moves."""
    rng = random.Random(3)
    kinds = ("self", "heuristic", "random", "heuristic")
    shares: dict[str, list[float]] = {"heuristic": [], "random": []}
    for seed in range(30):
        match = SevensMatch(PRESETS["sevens"], 4, seed, [DealSpec(seed)])
        for _ in range(24):
            deal = FastDeal.from_match(match)
            mover = random_move if kinds[match.to_act()] == "random" else heuristic_move
            match.apply(move_text(mover(deal, rng)))
            if match._results:
                break
        if match._results:
            continue
        _, share = SevensBelief(match.observation(0)).model(list(match._hands))
        for s in (1, 2, 3):
            shares[kinds[s]].append(share[s])
    mean = {kind: sum(v) / len(v) for kind, v in shares.items()}
    assert len(shares["random"]) >= 20
    assert mean["heuristic"] > 0.7 and mean["random"] < 0.35, mean
    assert all(
        belief_module.SHARE_FLOOR <= x <= 1 - belief_module.SHARE_FLOOR
        for v in shares.values()
        for x in v
    )
