"""In-process sample policies, generic over string actions (Sevens and Sedma alike).

A policy picks one of the legal actions given the seat's observation; it sees nothing
more than a bot would. ``arena selfplay`` seats them, and the worker's autopilot may use
them. Every policy is deterministic given its ``random.Random``.

* ``random``: a uniformly random legal action.
* ``first-legal``: the first legal action (the lowest card; ``pass`` only when alone).
* ``hold-sevens``: never passes when it can play, keeps 7s (the starters in Sevens, the
  wild cards in Sedma) as long as it can, and otherwise plays the card whose rank is
  farthest from 7 (in Sevens that extends rows towards its own cards last, so it opens
  the way for others as little as possible).
* ``heuristic``, ``mc``, ``ismcts``, ``solver``: the reference bots of the strength ladder
  (``referee/games/ladder.py``): rules of thumb, determinized Monte Carlo, Information
  Set MCTS and (Sevens family) sampled worlds solved exactly in the endgame, with a time
  budget per move.
* ``priced-pass``: ``heuristic``, and in the Sevens family an illegal pass (SV-18) where
  the rules price it (SV-19: a lost turn or chips) and every play would open the way for
  the others (``referee/games/ladder.py``, docs/ladder.md "priced-pass").
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from referee.games import ladder
from referee.games.base import PASS, RUN_SEPARATOR
from referee.games.cards import Card, Rank
from referee.games.errors import CardParseError, RulesError

Policy = Callable[[Mapping[str, Any], Sequence[str], random.Random], str]
"""``policy(observation, legal_actions, rng) -> action``: one of ``legal_actions``, except
that ``priced-pass`` may answer ``pass`` while able to play (an illegal pass, which the
rules price: SV-18, SV-19)."""


def random_policy(obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
    return legal[rng.randrange(len(legal))]


def first_legal(obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
    return legal[0]


def _cards(action: str) -> list[Card]:
    try:
        return [Card.parse(part) for part in action.split(RUN_SEPARATOR)]
    except CardParseError:
        return []


def hold_sevens(obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
    plays = [a for a in legal if a != PASS]
    if not plays:
        return legal[0]

    def score(action: str) -> tuple[int, int, int]:
        cards = _cards(action)
        sevens = sum(1 for c in cards if c.rank == Rank.SEVEN)
        spread = max((abs(int(c.rank) - 7) for c in cards), default=0)
        # fewer 7s first, then the farthest rank from 7, then the longest run.
        return (sevens, -spread, -len(cards))

    best = min(score(a) for a in plays)
    candidates = [a for a in plays if score(a) == best]
    return candidates[rng.randrange(len(candidates))]


POLICIES: dict[str, Policy] = {
    "random": random_policy,
    "first-legal": first_legal,
    "hold-sevens": hold_sevens,
    # The reference bots of the strength ladder (referee/games/ladder.py, docs/ladder.md).
    "heuristic": ladder.heuristic_policy,
    "mc": ladder.MONTE_CARLO,
    "ismcts": ladder.ISMCTS,
    "solver": ladder.SOLVER,
    "priced-pass": ladder.priced_pass_policy,
}


def get_policy(name: str) -> Policy:
    """The policy called ``name``; the error lists the policies there are."""
    try:
        return POLICIES[name]
    except KeyError:
        raise RulesError(f"unknown policy {name!r}: use one of {', '.join(POLICIES)}") from None
