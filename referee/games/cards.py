"""Cards as small value objects with one canonical text form.

A card prints as rank then suit: ``7D``, ``TH``, ``AS``, ``QC``. Ranks are
``A 2 3 4 5 6 7 8 9 T J Q K`` (``10`` is accepted on input and printed as ``T``);
suits are ``C D H S``. The same form is used by the German/piquet deck (Unter = J,
Ober = Q) and the Spanish deck (sota = J, caballo = Q, rey = K).

>>> Card.parse("7D")
Card.parse('7D')
>>> str(Card(Suit.HEARTS, Rank.TEN))
'TH'
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar

from referee.games.errors import CardParseError


class Suit(IntEnum):
    CLUBS = 0
    DIAMONDS = 1
    HEARTS = 2
    SPADES = 3

    @property
    def letter(self) -> str:
        return "CDHS"[self]

    @classmethod
    def parse(cls, text: str) -> Suit:
        index = "CDHS".find(text.upper()) if len(text) == 1 else -1
        if index < 0:
            raise CardParseError(f"{text!r} is not a suit: use one of C, D, H, S")
        return cls(index)


class Rank(IntEnum):
    ACE = 1
    TWO = 2
    THREE = 3
    FOUR = 4
    FIVE = 5
    SIX = 6
    SEVEN = 7
    EIGHT = 8
    NINE = 9
    TEN = 10
    JACK = 11
    QUEEN = 12
    KING = 13

    @property
    def letter(self) -> str:
        return RANK_LETTERS[self - 1]

    @classmethod
    def parse(cls, text: str) -> Rank:
        upper = text.upper()
        if upper == "10":
            return cls.TEN
        index = RANK_LETTERS.find(upper) if len(upper) == 1 else -1
        if index < 0:
            raise CardParseError(
                f"{text!r} is not a rank: use one of A 2 3 4 5 6 7 8 9 T J Q K (10 also reads as T)"
            )
        return cls(index + 1)


RANK_LETTERS = "A23456789TJQK"


class Card:
    """One playing card; instances are interned, so ``is`` and ``==`` agree.

    ``card.index`` is ``suit * 13 + rank - 1`` (0..51), handy for bit sets.
    Cards order by suit, then rank (ace low), which is the canonical sort order of
    hands and legal-action lists.
    """

    __slots__ = ("_text", "index", "rank", "suit")

    _interned: ClassVar[dict[tuple[Suit, Rank], Card]] = {}
    _by_text: ClassVar[dict[str, Card]] = {}

    suit: Suit
    rank: Rank
    index: int
    _text: str

    def __new__(cls, suit: Suit, rank: Rank) -> Card:
        key = (Suit(suit), Rank(rank))
        existing = cls._interned.get(key)
        if existing is not None:
            return existing
        card = super().__new__(cls)
        object.__setattr__(card, "suit", key[0])
        object.__setattr__(card, "rank", key[1])
        object.__setattr__(card, "index", key[0] * 13 + key[1] - 1)
        object.__setattr__(card, "_text", key[1].letter + key[0].letter)
        cls._interned[key] = card
        return card

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("Card is immutable")

    @classmethod
    def parse(cls, text: str) -> Card:
        """Read a card in canonical form (``7D``, ``TH``, ``10H``); case-insensitive."""
        cached = cls._by_text.get(text)
        if cached is not None:
            return cached
        stripped = text.strip()
        if len(stripped) not in (2, 3):
            raise CardParseError(
                f"{text!r} is not a card: write rank then suit, e.g. 7D, TH, AS, QC"
            )
        card = cls(Suit.parse(stripped[-1]), Rank.parse(stripped[:-1]))
        if len(cls._by_text) < 4096:
            cls._by_text[text] = card
        return card

    @classmethod
    def from_index(cls, index: int) -> Card:
        if not 0 <= index < 52:
            raise CardParseError(f"card index {index} is out of range 0..51")
        return cls(Suit(index // 13), Rank(index % 13 + 1))

    def __str__(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Card.parse({self._text!r})"

    def __hash__(self) -> int:
        return self.index

    def __eq__(self, other: object) -> bool:
        return self is other

    def __lt__(self, other: Card) -> bool:
        return self.index < other.index

    def __le__(self, other: Card) -> bool:
        return self.index <= other.index

    def __gt__(self, other: Card) -> bool:
        return self.index > other.index

    def __ge__(self, other: Card) -> bool:
        return self.index >= other.index

    def __reduce__(self) -> tuple[type[Card], tuple[Suit, Rank]]:
        return (Card, (self.suit, self.rank))


FRENCH_RANKS: tuple[Rank, ...] = tuple(Rank)
"""The 52-card French deck: A 2 … 10 J Q K."""

GERMAN_RANKS: tuple[Rank, ...] = (
    Rank.SEVEN,
    Rank.EIGHT,
    Rank.NINE,
    Rank.TEN,
    Rank.JACK,
    Rank.QUEEN,
    Rank.KING,
    Rank.ACE,
)
"""The 32-card German/piquet deck: 7 8 9 10 U(J) O(Q) K A."""

SPANISH_RANKS: tuple[Rank, ...] = (
    Rank.ACE,
    Rank.TWO,
    Rank.THREE,
    Rank.FOUR,
    Rank.FIVE,
    Rank.SIX,
    Rank.SEVEN,
    Rank.JACK,
    Rank.QUEEN,
    Rank.KING,
)
"""The 40-card Spanish deck: 1-7, sota (J), caballo (Q), rey (K)."""

DECK_RANKS: dict[str, tuple[Rank, ...]] = {
    "french52": FRENCH_RANKS,
    "german32": GERMAN_RANKS,
    "spanish40": SPANISH_RANKS,
}


def make_deck(kind: str = "french52") -> list[Card]:
    """All cards of a deck kind (``french52``, ``german32``, ``spanish40``), sorted."""
    try:
        ranks = DECK_RANKS[kind]
    except KeyError:
        raise CardParseError(
            f"unknown deck {kind!r}: use one of {', '.join(sorted(DECK_RANKS))}"
        ) from None
    return sorted(Card(suit, rank) for suit in Suit for rank in ranks)


for _suit in Suit:
    for _rank in Rank:
        Card(_suit, _rank)


SUIT_SYMBOLS = {"C": "♣", "D": "♦", "H": "♥", "S": "♠"}
"""How people see a suit (the web pages, ``arena play`` and the text replay)."""


def card_symbol(text: str) -> str:
    """A card as people read it: ``2C`` -> ``2♣``, ``TH`` -> ``10♥``; text that is not a
    card comes back as it is.

    >>> card_symbol("TH"), card_symbol("QC"), card_symbol("pass")
    ('10♥', 'Q♣', 'pass')
    """
    suit = SUIT_SYMBOLS.get(text[-1:])
    if suit is None or not 2 <= len(text) <= 3:
        return text
    rank = text[:-1]
    return f"{'10' if rank == 'T' else rank}{suit}"


def action_symbols(action: str) -> str:
    """An action as people read it: ``pass``, ``7♦``, or a run ``7♦ 8♦``."""
    return " ".join(card_symbol(c) for c in action.split("+"))
