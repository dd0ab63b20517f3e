"""Small hand-built checks of the naive reference (tests/sevens/reference.py) itself.

The differential test only shows that the reference and the engine agree; these tests pin
the reference to RULES.md part 1 and docs/SEVENS_DECISIONS.md on situations worked out by
hand, so that agreement means "both right" rather than "both wrong the same way".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from referee.games.base import PASS, Source
from referee.games.cards import Card, Rank
from referee.games.sevens.rules import PRESETS, SevensRules
from tests.sevens.reference import (
    CorruptDealError,
    RefMatch,
    card_penalty,
    deck_cards,
    pip_value,
    row_order,
)


def _rules(**options: Any) -> SevensRules:
    return SevensRules.from_dict(options)


def _hands(
    rules: SevensRules, n: int, dealer: int, wanted: Mapping[int, Sequence[str]]
) -> list[list[str]]:
    """A legal deal (SV-4) that gives each seat the ``wanted`` cards; the rest of the deck
    is handed out in deck order to fill every seat to its size."""
    deck = sorted(deck_cards(rules))
    if rules.starters == "removed_before_deal":
        deck = [c for c in deck if c.rank != Rank.parse(rules.starter_rank)]
    sizes = [len(deck) // n] * n
    for k in range(len(deck) % n):
        sizes[(dealer + 1 + k) % n] += 1  # the first seats from the left of the dealer
    hands: list[list[str]] = [list(wanted.get(seat, ())) for seat in range(n)]
    taken = {text for hand in hands for text in hand}
    rest = [str(c) for c in deck if str(c) not in taken]
    for seat in range(n):
        while len(hands[seat]) < sizes[seat]:
            hands[seat].append(rest.pop(0))
    assert not rest and all(len(h) == s for h, s in zip(hands, sizes, strict=True)), sizes
    return hands


def _match(
    rules: SevensRules,
    n: int,
    wanted: Mapping[int, Sequence[str]],
    dealer: int = 0,
    deals: int = 1,
) -> RefMatch:
    hands = _hands(rules, n, dealer, wanted)
    return RefMatch(rules, n, lambda d: hands, num_deals=deals, dealers=[dealer] * deals)


def _suit(actions: Sequence[str], letter: str) -> list[str]:
    return [a for a in actions if a != PASS and a.endswith(letter)]


def _kinds(events: Sequence[Any]) -> list[tuple[str, int | None, str | None]]:
    return [(e.kind, e.seat, e.reason) for e in events]


# -- deck and layout ------------------------------------------------------------------


def test_row_orders() -> None:  # SV-3, D-3
    def text(rules: SevensRules) -> str:
        return " ".join(rank.letter for rank in row_order(rules))

    assert text(_rules()) == "A 2 3 4 5 6 7 8 9 T J Q K"
    assert text(_rules(ace="high")) == "2 3 4 5 6 7 8 9 T J Q K A"
    assert text(PRESETS["domino"]) == "7 8 9 T J Q K A"
    assert text(PRESETS["cinquillo"]) == "A 2 3 4 5 6 7 J Q K"
    assert len(deck_cards(PRESETS["cinquillo"])) == 40  # SV-2 and the Spanish deck


def test_pip_values() -> None:  # SV-29, D-50
    pips = _rules(scoring="chips", card_penalty="pips")
    pips15 = _rules(scoring="chips", card_penalty="pips", ace_pips=15)
    face = _rules(scoring="penalty_points", card_penalty="face_ten")
    spanish = _rules(
        deck="spanish40",
        starter_rank="5",
        scoring="penalty_points",
        card_penalty="pips",
    )
    assert [pip_value(pips, Card.parse(t)) for t in ("AS", "7S", "TS", "JS", "QS", "KS")] == [
        1,
        7,
        10,
        11,
        12,
        13,
    ]
    assert pip_value(pips15, Card.parse("AH")) == 15
    assert [pip_value(face, Card.parse(t)) for t in ("AD", "9D", "JD", "QD", "KD")] == [
        1,
        9,
        10,
        10,
        10,
    ]
    assert [pip_value(spanish, Card.parse(t)) for t in ("AC", "7C", "JC", "QC", "KC")] == [
        1,
        7,
        10,
        11,
        12,
    ]
    per_card = _rules(scoring="chips", card_penalty="per_card")
    cards = [Card.parse(t) for t in ("AS", "KS", "7H")]
    assert card_penalty(per_card, cards) == 3
    assert card_penalty(pips, cards) == 1 + 13 + 7
    assert card_penalty(_rules(), cards) == 0


def test_corrupt_deal_is_refused() -> None:  # SV-6
    rules = _rules()
    good = _hands(rules, 4, 0, {})
    missing = [hand[:] for hand in good]
    missing[0] = missing[0][1:]
    with pytest.raises(CorruptDealError, match="partition"):
        RefMatch(rules, 4, lambda d: missing, num_deals=1)
    uneven = [hand[:] for hand in good]
    uneven[1].append(uneven[2].pop())
    uneven[1].append(uneven[2].pop())
    with pytest.raises(CorruptDealError, match="differ"):
        RefMatch(rules, 4, lambda d: uneven, num_deals=1)


# -- opening and legal plays -----------------------------------------------------------


def test_seven_of_diamonds_holder_opens_with_it() -> None:  # SV-13, D-20
    ref = _match(_rules(), 4, {2: ["7D", "7C", "8C"]})
    start = ref.events()[0]
    assert (start.kind, start.detail) == ("deal_start", {"dealer": 0, "first": 2})
    assert ref.to_act() == 2
    assert ref.legal_actions() == ["7D"]  # no other card before 7D, not even 7C
    ref.apply("7D")
    assert ref.to_act() == 3


def test_seven_of_hearts_opens_sjuan() -> None:  # SV-16
    ref = _match(PRESETS["sjuan"], 4, {1: ["7H", "7D"]})
    assert ref.to_act() == 1
    assert ref.legal_actions() == ["7H"]


def test_any_seven_from_left_of_dealer() -> None:  # SV-15, SV-17, SV-21, D-22
    ref = _match(PRESETS["fan-tan"], 4, {1: ["7C", "7S"], 3: ["7D", "7H"]}, dealer=0)
    assert ref.to_act() == 1
    assert ref.legal_actions() == ["7C", "7S"]  # pass is illegal while a 7 is held
    ref.apply("7S")
    # Seat 2 holds hearts and AS only: no 7, and 6S / 8S are seat 3's.
    assert ref.to_act() == 2
    assert ref.legal_actions() == [PASS]
    events = ref.apply("2C")  # not held, and nothing playable: a forced pass (SV-21)
    assert [(e.kind, e.seat, e.reason, e.detail.get("chips")) for e in events] == [
        ("invalid_action", 2, "not_held", None),
        ("pass", 2, "forced", 1),
    ]
    assert ref.deal.pot == 4 + 1


def test_left_of_dealer_passes_until_the_diamond() -> None:  # SV-14, SV-17
    rules = PRESETS["fan-tan-pt"]
    ref = _match(rules, 4, {3: ["7D"], 1: ["7C"]}, dealer=0)
    assert ref.to_act() == 1
    assert ref.legal_actions() == [PASS]  # 7C may not open before 7D
    events = ref.apply(PASS)
    assert [(e.kind, e.seat, e.reason, e.detail.get("chips")) for e in events] == [
        ("pass", 1, "forced", 1)
    ]
    assert ref.deal.pot == 4 + 1  # four antes and the pass chip
    ref.apply(PASS)
    assert ref.to_act() == 3
    assert ref.legal_actions() == ["7D"]


def test_rows_extend_one_rank_at_either_end() -> None:  # SV-8, SV-9
    ref = _match(_rules(), 4, {1: ["7D"], 2: ["6D", "8D", "9D", "5D"]})
    ref.apply("7D")
    assert ref.to_act() == 2
    assert _suit(ref.legal_actions(), "D") == ["6D", "8D"]  # 9D and 5D wait for 8D and 6D
    ref.apply("8D")
    assert ref.deal.table.as_texts()["D"] == ["7D", "8D"]


def test_eights_before_sixes() -> None:  # SV-12, D-31
    rules = _rules(eights_before_sixes=True)
    ref = _match(rules, 4, {1: ["7D", "6D"], 2: ["8D", "5D"]})
    ref.apply("7D")
    assert _suit(ref.legal_actions(), "D") == ["8D"]  # not 6D yet
    ref.apply("8D")
    assert ref.to_act() == 3
    ref.apply(ref.legal_actions()[0])
    ref.apply(ref.legal_actions()[0])
    assert ref.to_act() == 1
    assert "6D" in ref.legal_actions()  # the 8 is down: now the 6 may follow


def test_runs_from_a_starter_go_both_ways() -> None:  # SV-11, D-32
    rules = _rules(multi_card_turn=True)
    ref = _match(rules, 4, {1: ["7D", "6D", "8D", "9D", "JD"], 2: ["5D", "TD"]})
    assert ref.legal_actions() == ["7D", "7D+6D", "7D+8D", "7D+8D+9D"]
    events = ref.apply("7D+8D+9D")
    assert [(e.kind, e.action) for e in events] == [("play", "7D+8D+9D")]
    assert ref.deal.table.as_texts()["D"] == ["7D", "8D", "9D"]
    assert ref.check("8D+7D") is not None


# -- passing and refused actions --------------------------------------------------------


def test_illegal_pass_loses_a_turn() -> None:  # SV-18, SV-19 lose_turn, D-21
    ref = _match(_rules(), 3, {0: ["7D"], 1: ["8D"]})
    ref.apply("7D")
    assert ref.to_act() == 1
    assert PASS not in ref.legal_actions()
    events = ref.apply(PASS)
    assert _kinds(events) == [("illegal_pass", 1, "illegal_pass")]
    assert ref.observation_facts()["skip_next"] == [False, True, False]
    ref.apply(ref.legal_actions()[0])  # seat 2
    events = ref.apply(ref.legal_actions()[0])  # seat 0; then seat 1's turn is skipped
    assert _kinds(events)[-1] == ("pass", 1, "skipped")
    assert events[-1].source == Source.FORCED
    assert ref.to_act() == 2
    assert ref.deal.seats[1].passes == 1  # D-41: the skipped turn is not a pass


def test_refused_actions_and_timeouts_are_illegal_passes() -> None:  # SV-19, SV-21, D-21
    # Seat 0: 7D, clubs, AD 2D 3D; seat 1: 8D, 4D-6D, 9D-KD, AH-9H; seat 2: KS, TH-KH, spades.
    ref = _match(_rules(), 3, {0: ["7D"], 1: ["8D"], 2: ["KS"]})
    ref.apply("7D")
    events = ref.apply("KS")  # seat 1 does not hold KS, and could play 8D or 6D
    assert _kinds(events) == [
        ("invalid_action", 1, "not_held"),
        ("illegal_pass", 1, "illegal_pass"),
    ]
    assert ref.to_act() == 2 and ref.legal_actions() == ["7S"]
    events = ref.apply("KS")  # held but not playable
    assert _kinds(events) == [
        ("invalid_action", 2, "not_legal"),
        ("illegal_pass", 2, "illegal_pass"),
    ]
    assert ref.to_act() == 0 and ref.legal_actions() == ["7C"]
    events = ref.apply_timeout()  # seat 0 could play 7C: an illegal pass too
    assert _kinds(events) == [
        ("timeout", 0, "timeout"),
        ("illegal_pass", 0, "illegal_pass"),
        ("pass", 1, "skipped"),
        ("pass", 2, "skipped"),
        ("pass", 0, "skipped"),
    ]
    assert ref.to_act() == 1
    assert ref.deal.seats[1].passes == 1  # D-41: a skipped turn is not a pass
    events = ref.apply("7 of diamonds")
    assert _kinds(events)[0] == ("invalid_action", 1, "malformed")


def test_free_passes_then_illegal_and_eliminated() -> None:  # SV-22, SV-23, D-40, D-41
    rules = PRESETS["shichi-narabe"]
    ref = _match(rules, 4, {1: ["6C", "8C"]}, dealer=0)
    # Starters are on the table already (removed_before_deal); seat 1 can play 6C or 8C.
    assert ref.deal.table.as_texts()["C"] == ["7C"]
    for _ in range(3):
        assert ref.to_act() == 1
        assert PASS in ref.legal_actions()
        events = ref.apply(PASS)
        assert _kinds(events) == [("pass", 1, "free")]
        for _other in range(3):
            ref.apply(ref.legal_actions()[-1])  # the others pass (free, forced) or play
    assert ref.to_act() == 1
    assert ref.observation_facts()["free_passes_left"][1] == 0
    assert PASS not in ref.legal_actions()
    events = ref.apply(PASS)  # the fourth pass: illegal, and more than 3 passes
    assert _kinds(events) == [
        ("illegal_pass", 1, "illegal_pass"),
        ("eliminated", 1, "pass_limit"),
    ]
    assert "6C" in ref.deal.table.as_texts()["C"]  # SV-23: its cards went to the table
    assert ref.hand(1) == []


def test_eliminated_cards_are_skipped_at_row_ends() -> None:  # SV-23, D-30
    rules = _rules(illegal_pass_penalty="forfeit_deal")
    ref = _match(rules, 3, {0: ["7D"], 1: ["8D"], 2: ["9D"]})
    ref.apply("7D")
    events = ref.apply(PASS)  # seat 1 could play 8D: forfeits the deal
    assert _kinds(events) == [("illegal_pass", 1, "illegal_pass"), ("eliminated", 1, "forfeit")]
    assert ref.to_act() == 2
    assert "9D" in ref.legal_actions()  # 8D lies on the table now: the row's top skips it
    assert "8D" in ref.deal.table.as_texts()["D"]


def test_voluntary_pass_costs_more_and_is_capped() -> None:  # SV-20, SV-24, D-40
    rules = _rules(
        must_play=False,
        max_voluntary_passes=1,
        voluntary_pass_chips=3,
        pass_chips=1,
        scoring="chips",
    )
    ref = _match(rules, 3, {0: ["7D"], 1: ["8D"]})
    ref.apply("7D")
    assert ref.legal_actions()[-1] == PASS
    events = ref.apply(PASS)
    assert [(e.kind, e.reason, e.detail.get("chips")) for e in events] == [("pass", "voluntary", 3)]
    assert ref.deal.pot == 3
    ref.apply(ref.legal_actions()[0])  # seat 2 plays
    ref.apply(ref.legal_actions()[0])  # seat 0 plays
    assert ref.to_act() == 1
    assert "8D" in ref.legal_actions() and PASS not in ref.legal_actions()  # cap reached
    events = ref.apply(PASS)
    assert _kinds(events) == [("illegal_pass", 1, "illegal_pass")]  # lose_turn by default


# -- antes and scoring -----------------------------------------------------------------


def test_short_hand_ante() -> None:  # SV-27, SV-28, D-53
    # Dealer 1: 52 = 18 + 17 + 17 and the long hand is seat 2's (left of the dealer).
    for mode, short_pays in (("minus_one", 1), ("plus_one", 3), ("none", 2)):
        rules = _rules(scoring="chips", ante=2, short_hand_ante=mode)
        ref = _match(rules, 3, {}, dealer=1)
        assert ref.observation_facts()["hand_sizes"] == [17, 17, 18]
        antes = [(e.seat, e.detail["chips"]) for e in ref.events() if e.kind == "ante"]
        assert antes == [(0, short_pays), (1, short_pays), (2, 2)], mode
        assert ref.deal.pot == 2 + 2 * short_pays
    rules = _rules(scoring="chips", ante=1, short_hand_ante="minus_one")
    ref = _match(rules, 3, {}, dealer=1)
    antes = [(e.seat, e.detail["chips"]) for e in ref.events() if e.kind == "ante"]
    assert antes == [(2, 1)]  # a seat paying 0 has no ante event


def test_forfeits_end_the_deal_and_score() -> None:  # SV-19, SV-29, SV-30, SV-31, D-42, D-52
    rules = _rules(
        opening="any_seven",
        illegal_pass_penalty="forfeit_deal",
        scoring="chips",
        ante=1,
        card_penalty="per_card",
        seven_penalty=5,
    )
    # Dealer 0: seat 1 (18 cards) acts first and holds two 7s; seat 2 holds one.
    ref = _match(rules, 3, {1: ["7C", "7D"], 2: ["7H"], 0: ["7S"]}, dealer=0)
    ref.apply(PASS)
    events = ref.apply(PASS)
    assert _kinds(events) == [
        ("illegal_pass", 2, "illegal_pass"),
        ("eliminated", 2, "forfeit"),
        ("deal_end", 0, "last_active"),
        ("match_end", None, None),
    ]
    result = ref.deal_results()[0]
    assert result.winner == 0
    # Seat 1 pays 18 cards + two 7s; seat 2 pays 17 cards + one 7; each paid a 1-chip ante.
    assert list(result.deltas) == [-1 + 3 + 28 + 22, -1 - 28, -1 - 22]
    assert sum(result.deltas) == 0
    assert result.order == ((0,), (1, 2))  # eliminated seats last, as one group (D-54)
    assert result.detail["cards_left"] == [17, 18, 17]
    assert sorted((p.seat, p.reason, p.amount) for p in result.penalties) == [
        (1, "card_penalty", 18),
        (1, "forfeit", 0),
        (1, "illegal_pass", 0),
        (1, "seven_penalty", 10),
        (2, "card_penalty", 17),
        (2, "forfeit", 0),
        (2, "illegal_pass", 0),
        (2, "seven_penalty", 5),
    ]


def test_illegal_pass_chips_to_pot_or_winner() -> None:  # SV-19 payee, SV-31, D-52
    for payee in ("pot", "winner"):
        rules = _rules(
            opening="any_seven",
            scoring="chips",
            illegal_pass_penalty="chips",
            illegal_pass_chips=4,
            illegal_pass_payee=payee,
            pass_elimination=1,
        )
        ref = _match(rules, 3, {1: ["7C"], 2: ["7H"], 0: ["7S"]}, dealer=0)
        ref.apply(PASS)  # seat 1: illegal, 4 chips
        events = ref.apply(PASS)  # seat 1 is not asked again; seat 2: illegal, 4 chips
        assert (events[1].kind, events[1].detail) == ("penalty", {"chips": 4, "payee": payee})
        assert ref.deal.pot == (8 if payee == "pot" else 0)
        for _ in range(200):
            if ref.is_over():
                break
            ref.apply(ref.legal_actions()[0])
        result = ref.deal_results()[0]
        assert sum(result.deltas) == 0
        assert ("illegal_pass", 4) in [(p.reason, p.amount) for p in result.penalties]


def test_penalty_points_charge_the_passer() -> None:  # SV-29 running score, D-5
    rules = PRESETS["fwend"]
    ref = _match(rules, 4, {1: ["7H"]})
    for _ in range(500):
        if ref.is_over():
            break
        ref.apply(ref.legal_actions()[0])
    result = ref.deal_results()[0]
    winner = result.winner
    assert winner is not None and result.deltas[winner] == 0
    for seat in range(4):
        if seat != winner:
            left = result.detail["cards_left"][seat]
            assert (left == 0) == (result.deltas[seat] == 0)
    assert ref.result().unit == "penalty_points" and not ref.result().higher_is_better


# -- the match ----------------------------------------------------------------------------


def test_previous_winner_opens_the_next_deal() -> None:  # SV-5, SV-14, SV-32
    rules = _rules(opening="left_of_dealer_diamond", illegal_pass_penalty="forfeit_deal", deals=2)
    hands = _hands(rules, 3, 0, {2: ["7D"]})
    ref = RefMatch(rules, 3, lambda d: hands)
    assert ref.to_act() == 1 and ref.legal_actions() == [PASS]
    ref.apply(PASS)  # seat 1: no 7D, a forced pass
    events = ref.apply(PASS)  # seat 2 holds 7D: forfeits, its cards go to the table
    assert _kinds(events) == [("illegal_pass", 2, "illegal_pass"), ("eliminated", 2, "forfeit")]
    for _ in range(300):
        if ref.deal.index == 1:
            break
        ref.apply(ref.legal_actions()[0])
    winner = ref.deal_results()[0].winner
    assert winner in (0, 1)
    assert ref.deal.dealer == 1  # the deal rotates one seat clockwise
    assert ref.deal.first == winner != 2  # not the seat left of the new dealer
    start = [e for e in ref.events() if e.kind == "deal_start"][-1]
    assert start.detail == {"dealer": 1, "first": winner}


def test_match_tiebreak_fewest_cards_last_deal() -> None:  # SV-33, SV-34, D-60
    rules = _rules(match_tiebreak="fewest_cards_last_deal", deals=1)
    ref = _match(rules, 5, {1: ["7D"]})
    for _ in range(500):
        if ref.is_over():
            break
        ref.apply(ref.legal_actions()[0])
    final = ref.result()
    (winner,) = final.winners
    assert final.unit == "deals_won" and final.higher_is_better
    assert list(final.totals) == [int(seat == winner) for seat in range(5)]
    cards = ref.deal_results()[0].detail["cards_left"]
    # The four losers tie on 0 deals won; cards left in the last deal split them.
    expected: list[tuple[int, ...]] = [(winner,)]
    for value in sorted({cards[s] for s in range(5) if s != winner}):
        expected.append(tuple(s for s in range(5) if s != winner and cards[s] == value))
    assert list(final.order) == expected
    assert len(expected) > 2  # the tie-break did split the tied group here
