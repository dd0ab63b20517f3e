"""Simulated seasons with and without a colluding pair, for measuring the collusion
statistic (``bench/collusion.py``, tests/fairplay): honest bots are the reference heuristic
with per-bot noise (a uniformly random legal action with their own probability, 5-40%);
``b00`` and ``b01`` collude with a given strength, seeing each other's hand as two bots of
one person could through a side channel. Every 1-deal match seats a random table."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from referee.games.base import Match
from referee.games.collusion import (
    Decision,
    PlayedMatch,
    action_help,
    decision_help,
    pair_statistics,
)
from referee.games.ladder import heuristic_policy
from referee.games.loop import Turn, play_out, seat_rng
from referee.games.registry import get_game
from referee.games.sevens import heuristic as sevens_heuristic
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.tables import tables_for

FAMILIES = {"sevens": ("sevens", "sevens", 4), "sedma": ("sedma", "sedma-3", 3)}
KINDS = {"none": 0.0, "soft": 1.0, "soft-30": 0.3}


@dataclass(frozen=True)
class SeasonOutcome:
    colluders_screened: bool
    colluders_acted: bool
    honest_pairs: int
    honest_screened: int
    honest_acted: int
    top_honest_z: float
    colluder_z: float


def _collusive(match: Match, legal: Sequence[str], partner: int, rng: random.Random) -> str:
    helps = action_help(match, legal)
    if helps is None or partner not in next(iter(helps.values())):
        return legal[rng.randrange(len(legal))]
    best = max(helps[a][partner] for a in legal)
    return next(a for a in legal if helps[a][partner] == best)


def _honest(match: Match, seat: int, legal: Sequence[str], rng: random.Random) -> str:
    """The reference heuristic's choice; straight from the deal's masks where its passes
    and free passes cannot matter (must-play rules without free passes: a pass is then
    never a choice), as ``heuristic_policy`` would make it from the observation."""
    if isinstance(match, SevensMatch):
        rules = match.sevens_rules
        if rules.must_play and rules.free_passes == 0:
            table, hands = match.held_masks()
            t = tables_for(rules)
            return sevens_heuristic.choose(rules, t, hands[seat], table, legal, 0, 0, rng)
    return heuristic_policy(match.observation(seat), legal, rng)


def _play_one_deal(
    match: Match,
    seats: list[str],
    strength: float,
    noise: dict[str, float],
    rng: random.Random,
) -> list[Decision]:
    """The match's first deal, ``b00`` and ``b01`` colluding with ``strength``; the
    decisions where help was possible."""
    decisions: list[Decision] = []

    def choose(match: Match, turn: Turn) -> str:
        legal, me = turn.legal, seats[turn.seat]
        mate = {"b00": "b01", "b01": "b00"}.get(me)
        if len(legal) == 1:
            action = legal[0]
        elif mate in seats and rng.random() < strength:
            action = _collusive(match, legal, seats.index(mate), rng)
        elif rng.random() < noise[me]:
            action = legal[rng.randrange(len(legal))]
        else:
            action = _honest(match, turn.seat, legal, rng)
        decision = decision_help(match, action)
        if decision is not None:
            decisions.append(decision)
        return action

    play_out(match, choose, after=lambda _turn, _events: match.deal_index() > 0)
    return decisions


def play_season(
    family: str, bots: int, deals: int, strength: float, seed: int
) -> list[PlayedMatch]:
    """One season: ``bots`` bots (``b00``, ``b01`` collude with ``strength``), each in
    ``deals`` 1-deal matches on random tables."""
    game_name, preset, table = FAMILIES[family]
    game = get_game(game_name)
    rules = game.preset(preset)
    rng = seat_rng(seed, "collusion", family)  # the tables and the deals' seeds
    names = [f"b{i:02d}" for i in range(bots)]
    noise = {name: 0.05 + 0.35 * i / max(bots - 1, 1) for i, name in enumerate(names)}
    played: list[PlayedMatch] = []
    for index in range(bots * deals // table):
        seats = rng.sample(names, table)
        match = game.new_match(rules, table, rng.getrandbits(63), None)
        decisions = _play_one_deal(match, seats, strength, noise, rng)
        played.append(PlayedMatch(f"m{index:05d}", seats, decisions))
    return played


def judge(played: list[PlayedMatch]) -> SeasonOutcome:
    stats, _ = pair_statistics(played)
    pair = {("b00", "b01"), ("b01", "b00")}
    colluders = [s for s in stats if (s.helper, s.helped) in pair]
    honest = [s for s in stats if (s.helper, s.helped) not in pair]
    return SeasonOutcome(
        colluders_screened=any(s.level for s in colluders),
        colluders_acted=any(s.level == "act" for s in colluders),
        honest_pairs=len(honest),
        honest_screened=sum(1 for s in honest if s.level),
        honest_acted=sum(1 for s in honest if s.level == "act"),
        top_honest_z=max((s.z for s in honest), default=0.0),
        colluder_z=max((s.z for s in colluders), default=0.0),
    )
