"""One Sedma hand: the deal, tricks, talon draws and the hand's score (SD-6..SD-14).

The :class:`Hand` knows every card; it trusts its caller (``SedmaMatch``) to hand it only
legal plays. It has no events and no I/O.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from referee.games.base import RUN_SEPARATOR, action_sort_key
from referee.games.cards import Card, Rank
from referee.games.sedma.rules import SedmaRules, deck_cards

POINT_RANKS = frozenset({Rank.TEN, Rank.ACE})
"""SD-4: only aces and tens score, 10 each."""

SEDMA_ORDER: dict[Rank, int] = {
    Rank.SEVEN: 0,
    Rank.EIGHT: 1,
    Rank.NINE: 2,
    Rank.TEN: 3,
    Rank.JACK: 4,
    Rank.QUEEN: 5,
    Rank.KING: 6,
    Rank.ACE: 7,
}
"""Low to high, used only to cut for the dealer (SD-5) and by the fallback policy."""


def card_points(card: Card) -> int:
    return 10 if card.rank in POINT_RANKS else 0


def is_match(led: Card, card: Card) -> bool:
    """SD-8, SD-9: a card of the led rank, or any 7, matches the led card."""
    return card.rank is led.rank or card.rank is Rank.SEVEN


def deal_cards(rules: SedmaRules, seed: int, rotation: int) -> tuple[list[list[Card]], list[Card]]:
    """Shuffle the deck with ``seed``; hand ``i`` (cards ``4i..4i+3`` of the shuffle) goes to
    seat ``(i + rotation) % players``; the rest is the talon, top card first (SD-6)."""
    deck = deck_cards(rules.deck)
    random.Random(seed).shuffle(deck)
    n, size = rules.players, rules.hand_size
    hands: list[list[Card]] = [[] for _ in range(n)]
    for i in range(n):
        hands[(i + rotation) % n] = sorted(deck[i * size : (i + 1) * size])
    return hands, deck[n * size :]


@dataclass(frozen=True, slots=True)
class HandScore:
    """The score of a finished hand (SD-13, SD-14, SD-16).

    ``winner_side`` is ``None`` when the best score is tied: the hand is void. ``kind`` is
    ``win``, ``bald`` (all card points), ``naked`` (every trick) or ``void``;
    ``match_points`` holds what each side won.
    """

    points: tuple[int, ...]
    winner_side: int | None
    kind: str
    match_points: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class TrickResult:
    """A finished trick: winner seat, cards in play order, card points, talon draws."""

    winner: int
    cards: tuple[tuple[int, Card], ...]
    points: int
    draws: tuple[tuple[int, Card], ...]


class Hand:
    """The full state of one hand (SD-6..SD-12)."""

    __slots__ = (
        "_legal",
        "card_points",
        "hands",
        "last_trick_side",
        "leader",
        "marriage_points",
        "marriages",
        "rules",
        "taken",
        "talon",
        "to_act",
        "trick",
        "tricks_played",
        "tricks_won",
    )

    def __init__(
        self, rules: SedmaRules, hands: list[list[Card]], talon: list[Card], dealer: int
    ) -> None:
        self.rules = rules
        self.hands = [sorted(hand) for hand in hands]
        self.talon = list(reversed(talon))  # draws pop from the end: the top card first
        self.leader = (dealer + 1) % rules.players  # SD-7: left of the dealer leads
        self.to_act = self.leader
        self.trick: list[tuple[int, Card]] = []
        sides = rules.num_sides
        self.tricks_won = [0] * sides
        self.card_points = [0] * sides
        self.marriage_points = [0] * sides
        self.marriages: list[tuple[int, Card, Card]] = []
        self.taken: list[list[Card]] = [[] for _ in range(sides)]
        self.tricks_played = 0
        self.last_trick_side: int | None = None
        self._legal: list[str] | None = None

    # Queries --------------------------------------------------------------------------

    def is_over(self) -> bool:
        """SD-12: hands and talon are empty."""
        return self.tricks_played == self.rules.num_tricks

    def legal_actions(self) -> list[str]:
        """Every held card (SD-8), plus marriage leads where on (SD-19), sorted."""
        legal = self._legal
        if legal is None:
            hand = self.hands[self.to_act]
            legal = [str(card) for card in hand]
            if self.rules.marriages and not self.trick:
                legal.extend(self.marriage_actions(self.to_act))
                legal.sort(key=action_sort_key)
            self._legal = legal
        return legal

    def marriage_actions(self, seat: int) -> list[str]:
        """``QH+KH`` (lead the queen) and ``KH+QH`` (lead the king) for each pair held."""
        out: list[str] = []
        held = set(self.hands[seat])
        for card in self.hands[seat]:
            if card.rank is Rank.QUEEN:
                king = Card(card.suit, Rank.KING)
                if king in held:
                    out.append(f"{card}{RUN_SEPARATOR}{king}")
                    out.append(f"{king}{RUN_SEPARATOR}{card}")
        return out

    def points(self) -> list[int]:
        """Points per side: card points, marriages, and the last trick's bonus (SD-4)."""
        out = [c + m for c, m in zip(self.card_points, self.marriage_points, strict=True)]
        if self.last_trick_side is not None:
            out[self.last_trick_side] += self.rules.last_trick_bonus
        return out

    def score(self) -> HandScore:
        """Score the finished hand: most points wins (SD-13: with two sides sharing 90 that
        is 50 or more; SD-18: most points), a tie is void (SD-16)."""
        rules = self.rules
        points = tuple(self.points())
        best = max(points)
        top = [side for side, p in enumerate(points) if p == best]
        if len(top) > 1:
            return HandScore(points, None, "void", (0,) * len(points))
        side = top[0]
        if self.tricks_won[side] == rules.num_tricks:
            kind, won = "naked", rules.naked_points  # SD-14
        elif self.card_points[side] == rules.card_point_total:
            kind, won = "bald", rules.bald_points  # SD-14
        else:
            kind, won = "win", rules.win_points  # SD-13
        awarded = tuple(won if s == side else 0 for s in range(len(points)))
        return HandScore(points, side, kind, awarded)

    # Changes --------------------------------------------------------------------------

    def play(self, card: Card, shown: Card | None = None) -> TrickResult | None:
        """The seat to act plays ``card`` (showing ``shown`` for a marriage); returns the
        trick's result when this card completes it."""
        seat = self.to_act
        rules = self.rules
        self.hands[seat].remove(card)
        self._legal = None
        if shown is not None:
            side = rules.side_of(seat)
            self.marriage_points[side] += rules.marriage_points
            queen, king = (card, shown) if card.rank is Rank.QUEEN else (shown, card)
            self.marriages.append((seat, queen, king))
        self.trick.append((seat, card))
        if len(self.trick) < rules.players:
            self.to_act = (seat + 1) % rules.players
            return None
        return self._finish_trick()

    def _finish_trick(self) -> TrickResult:
        rules = self.rules
        trick = self.trick
        led = trick[0][1]
        winner = trick[0][0]  # SD-10: the leader wins when nobody matched
        points = 0
        for seat, card in trick:
            points += card_points(card)
            if seat != trick[0][0] and is_match(led, card):
                winner = seat  # SD-10: the last match wins
        side = rules.side_of(winner)
        self.tricks_won[side] += 1
        self.card_points[side] += points
        self.taken[side].extend(card for _, card in trick)
        self.tricks_played += 1
        draws: list[tuple[int, Card]] = []
        n = rules.players
        for i in range(n):  # SD-11: the winner draws first, then clockwise
            if not self.talon:
                break
            drawer = (winner + i) % n
            drawn = self.talon.pop()
            hand = self.hands[drawer]
            hand.append(drawn)
            hand.sort()
            draws.append((drawer, drawn))
        if self.tricks_played == rules.num_tricks:
            self.last_trick_side = side
        result = TrickResult(winner, tuple(trick), points, tuple(draws))
        self.trick = []
        self.leader = self.to_act = winner  # SD-7: the winner leads the next trick
        return result
