"""A fast search API over the engines, for bots that plan (docs/ladder.md, "Search API").

A bot sees an observation, not the state: the cards of the other seats are hidden. The
usual way to search such a game is to *determinize*: deal the unseen cards to the other
seats in a way consistent with everything the seat has observed, then search the
resulting perfect-information state. This module gives every game the same four verbs:

* :func:`position` reads an observation (docs/OBSERVATIONS.md) into a :class:`Position`:
  what the seat knows, including what it inferred (Sevens: a seat that was *forced* to
  pass holds none of the cards that were playable then; Sedma: every card played is gone,
  a card shown in a marriage stays with its holder until played);
* :meth:`Position.determinize` deals the unseen cards at random respecting those facts
  and returns a :class:`SearchState` of the current deal;
* :meth:`SearchState.clone`, :meth:`SearchState.legal_actions`, :meth:`SearchState.apply`
  explore it; :meth:`SearchState.returns` scores a finished deal for every seat;
* :meth:`SearchState.rollout_action` is the game's rules-of-thumb choice for the seat to
  act (the heuristic reference bot), the default playout policy.

A search state covers the current deal (Sevens) or hand (Sedma) only: it is terminal when
that deal ends. The engines stay pure and I/O-free; this is a convenience for Python bots
(bots in other languages get the same facts from their observation).
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

CONFIDENCE = 1.0
"""Standard errors by which a searched move must beat the heuristic's move to replace it:
a deal is mostly decided by the cards, and a noisy estimate plays worse than the rules of
thumb (the reference bots keep the heuristic's move unless the search is sure)."""


class SearchState(Protocol):
    """A perfect-information state of one deal, cheap to copy and to play forward."""

    num_players: int

    def clone(self) -> SearchState:
        """An independent copy (applying to one never changes the other)."""
        ...

    def to_act(self) -> int:
        """The seat to act (only while not terminal)."""
        ...

    def legal_actions(self) -> list[str]:
        """The sorted legal actions of the seat to act (the engine's own list)."""
        ...

    def apply(self, action: str) -> None:
        """Apply one legal action of the seat to act."""
        ...

    def is_terminal(self) -> bool:
        """True once the deal (Sevens) or hand (Sedma) is over."""
        ...

    def returns(self) -> list[float]:
        """Each seat's utility of the finished deal, in [-1, 1] (higher is better)."""
        ...

    def rollout_action(self, rng: random.Random) -> str:
        """The heuristic's action for the seat to act (it looks only at that seat's hand
        and the public state, never at the other hands)."""
        ...


class Position(Protocol):
    """What one seat knows about the current deal."""

    seat: int

    def determinize(self, rng: random.Random) -> SearchState:
        """A full state of the deal: the seat's own cards and everything public as
        observed, the unseen cards dealt at random to the other seats (and the talon)
        so that no seat gets a card it was seen not to hold."""
        ...


def position(obs: Mapping[str, Any]) -> Position:
    """The :class:`Position` of an observation of any game."""
    game = obs.get("game")
    if game == "sevens":
        from referee.games.sevens.search import SevensPosition

        return SevensPosition(obs)
    if game == "sedma":
        from referee.games.sedma.search import SedmaPosition

        return SedmaPosition(obs)
    raise ValueError(f"no search API for game {game!r}: use sevens or sedma")


def paired_best(values: Sequence[Sequence[float]], default: int, z: float = CONFIDENCE) -> int:
    """The move (index) to play when ``values[k][w]`` is move ``k``'s value in world ``w``
    (every move played in every world): the move with the best mean gain over
    ``default``, world by world, if that gain exceeds ``z`` standard errors; else
    ``default``."""
    base = values[default]
    best, best_mean = default, 0.0
    for k, row in enumerate(values):
        n = len(row)
        if k == default or n < 2:
            continue
        gains = [a - b for a, b in zip(row, base, strict=True)]
        mean = sum(gains) / n
        var = sum((g - mean) ** 2 for g in gains) / (n - 1)
        if mean > best_mean and mean > z * math.sqrt(var / n):
            best, best_mean = k, mean
    return best


def beats(a: tuple[int, float, float], b: tuple[int, float, float], z: float = CONFIDENCE) -> bool:
    """True when the mean of ``a`` exceeds the mean of ``b`` by more than ``z`` standard
    errors of the difference; each is (count, sum, sum of squares) of independent values."""
    (na, sa, qa), (nb, sb, qb) = a, b
    if na < 2 or nb < 2:
        return nb == 0 and na > 0
    ma, mb = sa / na, sb / nb
    va = max(0.0, (qa - na * ma * ma) / (na - 1))
    vb = max(0.0, (qb - nb * mb * mb) / (nb - 1))
    return ma - mb > z * math.sqrt(va / na + vb / nb)
