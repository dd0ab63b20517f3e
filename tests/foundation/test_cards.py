"""Cards and decks (SV-2, SD-2, RULES presets `domino` and `cinquillo`)."""

from __future__ import annotations

import pickle

import pytest

from referee.games.cards import Card, Rank, Suit, make_deck, parse_cards
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
    cards = parse_cards(["KS", "AC", "7D", "2C"])
    assert [str(c) for c in sorted(cards)] == ["AC", "2C", "7D", "KS"]
    assert pickle.loads(pickle.dumps(cards[0])) is cards[0]
