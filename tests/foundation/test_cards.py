"""Cards and decks (SV-2, SD-2, RULES presets `domino` and `cinquillo`)."""

from __future__ import annotations

import pickle
import re

import pytest

from referee.games.base import derive_seed
from referee.games.cards import Card, Rank, Suit, make_deck
from referee.games.errors import CardParseError


def test_every_card_round_trips_through_text() -> None:
    for card in make_deck("french52"):
        assert Card.parse(str(card)) is card
        assert eval(repr(card)) is card


def test_parse_accepts_ten_and_lower_case() -> None:
    assert Card.parse("10h") is Card(Suit.HEARTS, Rank.TEN)
    assert str(Card.parse("td")) == "TD"


@pytest.mark.parametrize("bad", ["", "7", "7X", "1D", "ZZ", "7DD", "11C"])
def test_parse_refuses_bad_text_with_a_hint(bad: str) -> None:
    with pytest.raises(CardParseError, match=r"use one of|write rank then suit"):
        Card.parse(bad)


def test_deck_sizes_and_ranks() -> None:
    # SV-2: 52 cards; domino: 32-card German deck; cinquillo: 40-card Spanish deck.
    assert len(make_deck("french52")) == 52
    german = make_deck("german32")
    assert len(german) == 32 and {c.rank for c in german} == {
        Rank.SEVEN,
        Rank.EIGHT,
        Rank.NINE,
        Rank.TEN,
        Rank.JACK,
        Rank.QUEEN,
        Rank.KING,
        Rank.ACE,
    }
    spanish = make_deck("spanish40")
    assert len(spanish) == 40 and not {Rank.EIGHT, Rank.NINE, Rank.TEN} & {c.rank for c in spanish}
    with pytest.raises(CardParseError, match="french52"):
        make_deck("tarot78")


def test_cards_sort_by_suit_then_rank_and_pickle() -> None:
    cards = [Card.parse(t) for t in ("KS", "AC", "7D", "2C")]
    assert [str(c) for c in sorted(cards)] == ["AC", "2C", "7D", "KS"]
    assert pickle.loads(pickle.dumps(cards[0])) is cards[0]


def test_card_indexes_run_suit_by_suit_from_the_ace() -> None:
    """``Card.from_index`` (the engines' 52-card tables are built from it): index
    ``13 * suit + rank - 1``, every index 0..51 a different card, anything else refused
    in words (found by ``make mutate``)."""
    cards = [Card.from_index(i) for i in range(52)]
    assert len(set(cards)) == 52 and set(cards) == set(make_deck())
    for i, card in enumerate(cards):
        assert (card.suit, card.rank) == (Suit(i // 13), Rank(i % 13 + 1))
    assert cards[0] == Card(Suit(0), Rank(1)) and cards[51] == Card(Suit(3), Rank(13))
    for bad in (-1, 52):
        with pytest.raises(CardParseError, match=rf"^card index {bad} is out of range 0\.\.51$"):
            Card.from_index(bad)


def test_a_derived_seed_has_1_to_64_bits() -> None:
    """``derive_seed``'s ``bits``: 1 and 64 are allowed, 0 and 65 refused in words."""
    assert derive_seed(7, 0, bits=1) in (0, 1)
    assert 0 <= derive_seed(7, 0, bits=64) < 2**64
    for bad in (0, 65):
        with pytest.raises(ValueError, match=rf"^a derived seed has 1 to 64 bits, not {bad}$"):
            derive_seed(7, 0, bits=bad)


def test_suits_and_ranks_parse_one_letter_each() -> None:
    """``Suit.parse`` and ``Rank.parse`` directly (``Card.parse`` caches its texts, so a
    card test may never reach them): every letter in either case, ``10`` for the ten, and
    anything longer or unknown refused in words (``Rank.parse`` also reads the rules'
    ``starter_rank``)."""
    for i, letter in enumerate("CDHS"):
        assert Suit.parse(letter) is Suit(i) and Suit.parse(letter.lower()) is Suit(i)
    for i, letter in enumerate("A23456789TJQK"):
        assert Rank.parse(letter) is Rank(i + 1) and Rank.parse(letter.lower()) is Rank(i + 1)
    assert Rank.parse("10") is Rank.TEN
    for bad in ("CD", "cd", "X", "", "DH"):
        with pytest.raises(
            CardParseError, match=rf"^{bad!r} is not a suit: use one of C, D, H, S$"
        ):
            Suit.parse(bad)
    for bad in ("23", "A2", "1", "X", "", "11"):
        with pytest.raises(
            CardParseError,
            match=rf"^{bad!r} is not a rank: use one of A 2 3 4 5 6 7 8 9 T J Q K "
            r"\(10 also reads as T\)$",
        ):
            Rank.parse(bad)


def test_card_parse_reads_texts_it_never_saw() -> None:
    """Texts no other test parses (``Card.parse`` caches by the exact text): the suit is
    the last character, the rank what comes before; two or three characters after
    stripping, else the rank-then-suit hint. The cache is emptied first: a text parsed
    before (by another test, or by mutmut's stats run) would not be read again."""
    Card._by_text.clear()
    assert Card.parse(" 10s\t") is Card(Suit.SPADES, Rank.TEN)
    assert Card.parse("\tqh ") is Card(Suit.HEARTS, Rank.QUEEN)
    for bad in ("10HH", " 7 ", "AAAA"):
        with pytest.raises(
            CardParseError, match=rf"^{re.escape(repr(bad))} is not a card: write rank then suit"
        ):
            Card.parse(bad)


def test_cards_compare_by_index_strictly_or_not() -> None:
    ace, two = Card.parse("AC"), Card.parse("2C")
    assert ace < two and not ace < ace and not two < ace
    assert ace <= ace and ace <= two and not two <= ace
    assert two > ace and not ace > ace and not ace > two
    assert ace >= ace and two >= ace and not ace >= two


def test_an_unknown_deck_names_the_known_ones() -> None:
    with pytest.raises(
        CardParseError, match=r"^unknown deck 'x': use one of french52, german32, spanish40$"
    ):
        make_deck("x")
