"""A naive second implementation of one Sedma hand, written from RULES.md part 2.

Plain strings, sets and loops; no shared code with ``referee.games.sedma`` except the
documented dealing procedure (the deck in canonical order shuffled by ``random.Random``)
and ``Card`` for parsing. It exists only to be diffed against the engine.
"""

from __future__ import annotations

import hashlib
import random

from referee.games.cards import Card

SUITS = "CDHS"
RANKS_32 = "789TJQKA"
RANKS_24 = "7TJQKA"


class ReferenceHand:
    """One hand of Sedma for ``players`` seats (partners opposite when ``partnerships``)."""

    def __init__(
        self,
        *,
        players: int,
        partnerships: bool,
        ranks: str,
        seed: int,
        rotation: int,
        dealer: int,
        marriage_points: int | None = None,
    ) -> None:
        self.players = players
        self.partnerships = partnerships
        self.marriage_points = marriage_points
        deck = sorted((r + s for s in SUITS for r in ranks), key=lambda t: Card.parse(t).index)
        random.Random(seed).shuffle(deck)
        self.hands: list[set[str]] = [set() for _ in range(players)]
        for i in range(players):
            self.hands[(i + rotation) % players] = set(deck[4 * i : 4 * i + 4])
        self.talon = deck[4 * players :]  # the first card is the top
        self.turn = (dealer + 1) % players  # left of the dealer leads the first trick
        self.trick: list[tuple[int, str]] = []
        self.nsides = 2 if partnerships else players
        self.won_cards: list[list[str]] = [[] for _ in range(self.nsides)]
        self.tricks: list[int] = [0] * self.nsides
        self.bonus: list[int] = [0] * self.nsides
        self.last_winner: int | None = None
        self.total_tricks = len(deck) // players

    def side(self, seat: int) -> int:
        return seat % 2 if self.partnerships else seat

    def over(self) -> bool:
        return sum(self.tricks) == self.total_tricks

    def legal(self) -> set[str]:
        out = set(self.hands[self.turn])
        if self.marriage_points is not None and not self.trick:
            for suit in SUITS:
                if "Q" + suit in out and "K" + suit in out:
                    out.add("Q" + suit + "+K" + suit)
                    out.add("K" + suit + "+Q" + suit)
        return out

    def fallback(self) -> str:
        """Lowest card that is neither a point card nor a 7, else a 7, else a point card."""
        order = "789TJQKA"
        best: tuple[int, int, int] | None = None
        choice = ""
        for card in self.hands[self.turn]:
            group = 2 if card[0] in "TA" else 1 if card[0] == "7" else 0
            key = (group, order.index(card[0]), SUITS.index(card[1]))
            if best is None or key < best:
                best, choice = key, card
        return choice

    def play(self, action: str) -> None:
        seat = self.turn
        first = action.split("+")[0]
        if "+" in action:
            assert self.marriage_points is not None
            self.bonus[self.side(seat)] += self.marriage_points
        self.hands[seat].remove(first)
        self.trick.append((seat, first))
        if len(self.trick) < self.players:
            self.turn = (seat + 1) % self.players
            return
        led_rank = self.trick[0][1][0]
        winner = self.trick[0][0]
        for i in range(1, len(self.trick)):
            s, card = self.trick[i]
            if card[0] == led_rank or card[0] == "7":
                winner = s
        self.won_cards[self.side(winner)].extend(card for _, card in self.trick)
        self.tricks[self.side(winner)] += 1
        self.trick = []
        for k in range(self.players):
            if self.talon:
                self.hands[(winner + k) % self.players].add(self.talon.pop(0))
        if self.over():
            self.last_winner = self.side(winner)
        self.turn = winner

    def card_points(self) -> list[int]:
        return [10 * sum(1 for c in cards if c[0] in "TA") for cards in self.won_cards]

    def points(self) -> list[int]:
        pts = [c + b for c, b in zip(self.card_points(), self.bonus, strict=True)]
        if self.last_winner is not None:
            pts[self.last_winner] += 10
        return pts

    def outcome(self) -> tuple[int | None, int]:
        """(winning side or None when void, match points won)."""
        pts = self.points()
        top = max(pts)
        if pts.count(top) > 1:
            return None, 0
        side = pts.index(top)
        if self.tricks[side] == self.total_tricks:
            return side, 3
        if self.card_points()[side] == 80:
            return side, 2
        return side, 1


def derive(seed: int, *parts: object) -> int:
    """The documented seed derivation: sha256 of ``sedma:<seed>:<parts…>``, 63 bits."""
    text = ":".join(["sedma", str(seed), *(str(p) for p in parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def first_dealer(seed: int, players: int, ranks: str) -> int:
    """SD-5 as documented: draw j takes card derive(seed, "cut", j) % remaining of the game's
    own deck (``ranks``); the lowest rank deals, tied seats draw again."""
    order = "789TJQKA"
    rest = sorted((r + s for s in SUITS for r in ranks), key=lambda t: Card.parse(t).index)
    seats = list(range(players))
    j = 0
    while len(seats) > 1 and len(rest) >= len(seats):
        drawn = []
        for seat in seats:
            drawn.append((seat, rest.pop(derive(seed, "cut", j) % len(rest))))
            j += 1
        low = min(order.index(card[0]) for _, card in drawn)
        seats = [seat for seat, card in drawn if order.index(card[0]) == low]
    return seats[0]


class ReferenceSession:
    """Hands until a side reaches ``target`` match points (SD-15); a void hand is redealt by
    the same dealer from ``derive(slot_seed, "redeal", n)`` (SD-16); the deal passes left."""

    def __init__(self, *, players: int, partnerships: bool, ranks: str, seed: int,
                 target: int, marriage_points: int | None = None) -> None:  # fmt: skip
        self.players = players
        self.partnerships = partnerships
        self.ranks = ranks
        self.seed = seed
        self.target = target
        self.marriage_points = marriage_points
        self.first = first_dealer(seed, players, ranks)
        self.slot = 0
        self.redeal = 0
        self.totals = [0] * (2 if partnerships else players)
        self.outcomes: list[tuple[int, int | None, int]] = []  # (dealer, side, match points)
        self.hand = self._deal()

    def _deal(self) -> ReferenceHand:
        slot_seed = derive(self.seed, "hand", self.slot)
        seed = slot_seed if self.redeal == 0 else derive(slot_seed, "redeal", self.redeal)
        self.dealer = (self.first + self.slot) % self.players
        return ReferenceHand(
            players=self.players, partnerships=self.partnerships, ranks=self.ranks, seed=seed,
            rotation=0, dealer=self.dealer, marriage_points=self.marriage_points,
        )  # fmt: skip

    def over(self) -> bool:
        return max(self.totals) >= self.target

    def play(self, action: str) -> None:
        self.hand.play(action)
        if not self.hand.over():
            return
        side, won = self.hand.outcome()
        self.outcomes.append((self.dealer, side, won))
        if side is None:
            self.redeal += 1
        else:
            self.totals[side] += won
            self.slot += 1
            self.redeal = 0
        if not self.over():
            self.hand = self._deal()
