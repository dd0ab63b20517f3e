"""The rules-of-thumb Sedma player (the ladder's ``heuristic`` rung for Sedma).

It sees only its own hand, the trick on the table and public counts. The tips it
encodes (docs/ladder.md):

* show a marriage whenever you may (SD-19: points for free);
* lead a low card you hold twice (you can take the trick back with its twin), never a
  7 or an ace/ten you cannot defend;
* when your side wins the trick and nobody after you can take it back, add an ace or a
  ten to it;
* when an opponent holds the trick, take it with a card of the led rank when it is worth
  something; keep a 7 back for a rich trick, especially the last one (its bonus, SD-4);
* match a partner's ace or ten with a same-rank card before a 7, and otherwise throw the
  cheapest card (no points, not a 7).
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from referee.games.base import RUN_SEPARATOR
from referee.games.cards import Card, Rank
from referee.games.sedma.hand import SEDMA_ORDER, card_points, is_match
from referee.games.sedma.rules import SedmaRules

_SEVEN = Rank.SEVEN


def _junk_key(card: Card) -> tuple[int, int, int]:
    """Cheapest to give away first: no points, not a 7, low rank."""
    group = 2 if card_points(card) else 1 if card.rank is _SEVEN else 0
    return (group, SEDMA_ORDER[card.rank], card.index)


def trick_winner(trick: Sequence[tuple[int, Card]]) -> int:
    """The seat that holds the trick now (SD-10: the last match, else the leader)."""
    led = trick[0][1]
    winner = trick[0][0]
    for seat, card in trick[1:]:
        if is_match(led, card):
            winner = seat
    return winner


def choose(
    rules: SedmaRules,
    seat: int,
    hand: Sequence[Card],
    trick: Sequence[tuple[int, Card]],
    legal: Sequence[str],
    last_trick: bool,
    rng: random.Random,
) -> str:
    """The heuristic's action among ``legal`` for ``seat`` holding ``hand``."""
    if len(legal) == 1:
        return legal[0]
    marriages = [a for a in legal if RUN_SEPARATOR in a]
    if marriages:
        return marriages[rng.randrange(len(marriages))]
    cards = sorted(hand, key=_junk_key)
    if not trick:
        return str(_lead(cards))
    players = rules.players
    led = trick[0][1]
    side = rules.side_of(seat)
    holder = trick_winner(trick)
    ours = rules.side_of(holder) == side
    later = [(seat + k) % players for k in range(1, players - len(trick))]
    threat = any(rules.side_of(s) != side for s in later)  # an opponent still plays
    value = sum(card_points(c) for _, c in trick) + (rules.last_trick_bonus if last_trick else 0)
    twins = [c for c in cards if c.rank is led.rank and c.rank is not _SEVEN]
    sevens = [c for c in cards if c.rank is _SEVEN]
    junk = [c for c in cards if not card_points(c) and c.rank is not _SEVEN]
    points = [c for c in cards if card_points(c) and c.rank is not _SEVEN]
    if ours:
        if not threat and points:
            return str(points[-1])  # smear an ace or ten onto our trick
        if threat and twins and value >= 10:
            return str(twins[0])  # match the partner's card: they must match again
        return str((junk or cards)[0])
    # An opponent holds the trick.
    if twins and (value >= 10 or not threat or card_points(twins[0])):
        return str(twins[0])
    if sevens and (value >= 20 or (value >= 10 and (last_trick or not threat))):
        return str(sevens[0])
    if junk:
        return str(junk[0])
    if sevens and not threat:
        return str(sevens[0])
    return str(cards[0])


def _lead(cards: Sequence[Card]) -> Card:
    counts: dict[Rank, int] = {}
    for c in cards:
        counts[c.rank] = counts.get(c.rank, 0) + 1

    def key(card: Card) -> tuple[int, int, int, int]:
        twin = counts[card.rank] > 1 and card.rank is not _SEVEN
        group = 2 if card.rank is _SEVEN else 1 if card_points(card) and not twin else 0
        return (group, 0 if twin else 1, SEDMA_ORDER[card.rank], card.index)

    return min(cards, key=key)
