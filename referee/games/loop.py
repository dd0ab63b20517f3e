"""The one match loop of the in-process drivers: in-process seasons
(``referee.seasons.inprocess``), ``arena selfplay``, the collusion simulation and the
benches each say how a seat chooses; :func:`play_out` walks the match.

The match host (``workers.runner.MatchRun``) walks the same steps (legal actions, the seat
to act, forced moves, apply, events) asynchronously, with the clock, the network and the
autopilot between ``to_act`` and ``apply``; docs/ARCHITECTURE.md says why it keeps its own
loop.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from referee.games.base import Event, Match, Source, derive_seed
from referee.games.policies import Policy


@dataclass(frozen=True, slots=True)
class Turn:
    """One decision: the seat to act, its number in the match (1, 2, ...: every seat's
    decisions counted, forced moves not) and the legal actions."""

    seat: int
    seq: int
    legal: list[str]


Chooser = Callable[[Match, Turn], str]
"""How a seat answers a turn (the match is there to read its observation or more)."""
After = Callable[[Turn, list[Event]], bool]
"""Called with each decision's events once applied; True stops the loop there."""


def play_out(
    match: Match,
    choose: Chooser,
    *,
    autoplay_forced: bool = False,
    after: After | None = None,
) -> int:
    """Play ``match`` to its end (or until ``after`` says stop); the decisions asked.
    ``autoplay_forced``: a seat with one legal action plays it unasked (``Source.FORCED``),
    as the season option of that name."""
    seq = 0
    while not match.is_over():
        legal = match.legal_actions()
        if autoplay_forced and len(legal) == 1:
            match.apply(legal[0], Source.FORCED)
            continue
        seq += 1
        turn = Turn(match.to_act(), seq, legal)
        events = match.apply(choose(match, turn))
        if after is not None and after(turn, events):
            break
    return seq


def seat_rng(*parts: object) -> random.Random:
    """A seat's random generator, from the one seed derivation (64 bits of ``parts``)."""
    return random.Random(derive_seed(*parts, bits=64))


def policies_chooser(policies: Sequence[Policy], rngs: Sequence[random.Random]) -> Chooser:
    """Seat ``s`` answers with ``policies[s]`` and its own generator ``rngs[s]``."""

    def choose(match: Match, turn: Turn) -> str:
        return policies[turn.seat](match.observation(turn.seat), turn.legal, rngs[turn.seat])

    return choose
