"""The one match loop: :class:`Walk` steps a match to its next decision, applying on the
way the actions nobody is asked for (a forced move under ``autoplay_forced``, the
autopilot's move for a seat it holds); each driver says how a seat answers. In-process
drivers (in-process seasons ``referee.seasons.inprocess``, ``arena selfplay``, the
collusion simulation, the benches) call :func:`play_out`; the match host
(``workers.runner.MatchRun``) walks the same :class:`Walk` and awaits its bots over the
network between ``next_turn`` and ``apply``.
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
Unasked = Callable[[int, int, str, str, list[Event]], None]
"""Called with each action applied without asking: deal index, seat, source (forced,
autopilot), action, events."""


class Walk:
    """A match walked decision by decision: :meth:`next_turn` applies the actions nobody
    is asked for and stops at the next decision (or the end). ``autoplay_forced``: a seat
    with one legal action plays it (``Source.FORCED``), as the season option of that
    name; ``autopilot[s]``: seat ``s`` plays ``Match.fallback_action`` (``Source.AUTOPILOT``),
    read at each step (the host sets it when a seat runs out of strikes)."""

    __slots__ = ("autopilot", "autoplay_forced", "match", "seq", "unasked")

    def __init__(
        self,
        match: Match,
        *,
        autoplay_forced: bool = False,
        autopilot: Sequence[bool] = (),
        unasked: Unasked | None = None,
    ) -> None:
        self.match = match
        self.autoplay_forced = autoplay_forced
        self.autopilot = autopilot
        self.unasked = unasked
        self.seq = 0  # the decisions asked so far

    def next_turn(self) -> Turn | None:
        """The next decision to ask, or None when the match is over."""
        match = self.match
        while not match.is_over():
            seat = match.to_act()
            legal = match.legal_actions()
            if self.autopilot and self.autopilot[seat]:
                action, source = match.fallback_action(), Source.AUTOPILOT
            elif self.autoplay_forced and len(legal) == 1:
                action, source = legal[0], Source.FORCED
            else:
                self.seq += 1
                return Turn(seat, self.seq, legal)
            deal = match.deal_index()
            events = match.apply(action, source)
            if self.unasked is not None:
                self.unasked(deal, seat, source, action, events)
        return None


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
    walk = Walk(match, autoplay_forced=autoplay_forced)
    while (turn := walk.next_turn()) is not None:
        events = match.apply(choose(match, turn))
        if after is not None and after(turn, events):
            break
    return walk.seq


def seat_rng(*parts: object) -> random.Random:
    """A seat's random generator, from the one seed derivation (64 bits of ``parts``)."""
    return random.Random(derive_seed(*parts, bits=64))


def policies_chooser(policies: Sequence[Policy], rngs: Sequence[random.Random]) -> Chooser:
    """Seat ``s`` answers with ``policies[s]`` and its own generator ``rngs[s]``."""

    def choose(match: Match, turn: Turn) -> str:
        return policies[turn.seat](match.observation(turn.seat), turn.legal, rngs[turn.seat])

    return choose
