"""One test per RULES.md part 1 clause (SV-1 .. SV-34); ``grep -r SV-n tests/`` finds them.

Most scenarios use a stacked first deal (``helpers.stacked``): the listed hands, and every
other card already on the table, so a clause can be shown in a few moves.
"""

from __future__ import annotations

import random

import pytest

from referee.games.base import PASS, DealSpec, Event, EventKind, PenaltyRecord, Source
from referee.games.cards import make_deck
from referee.games.errors import InvalidRulesError, MatchStateError
from referee.games.sevens import GAME, PRESETS, SevensMatch, SevensRules
from referee.games.sevens.tables import tables_for
from tests.sevens.helpers import check_invariants, kinds, play_random, rules, stacked

CHAIN = ["6C 3C 8S JS", "5C 2C 9S QS", "4C AC TS KS"]
"""Three hands whose only playable cards at first are seat 0's 6C and 8S; the clubs go
down 6-5-4-3-2-A and the spades up 8-9-T-J-Q-K, seat after seat."""


def first_legal_until(match: SevensMatch, deal: int) -> None:
    while not match.is_over() and match.deal_index() < deal:
        match.apply(match.legal_actions()[0])


# -- players, deck, deal ------------------------------------------------------------------


def test_sv1_three_to_eight_players() -> None:  # SV-1
    assert list(GAME.player_counts(PRESETS["sevens"])) == [3, 4, 5, 6, 7, 8]
    for bad in (2, 9):
        with pytest.raises(InvalidRulesError, match="3 to 8 players"):
            GAME.new_match(PRESETS["sevens"], bad, 1)


def test_sv2_one_full_deck_is_dealt() -> None:  # SV-2
    match = GAME.new_match(PRESETS["sevens"], 4, 11)
    hands = match.initial_hands()[0]
    cards = sorted(c for hand in hands for c in hand)
    assert cards == sorted(str(c) for c in make_deck("french52"))
    assert [len(h) for h in hands] == [13, 13, 13, 13]


def test_sv3_ace_low_or_high() -> None:  # SV-3
    hands = ["AH 2H", "5C", "6C"]
    low = stacked(rules("sevens", opening="any_seven"), hands, dealer=2)
    assert low.legal_actions() == ["2H"]  # A below 2: only 2H extends the row down
    high = stacked(rules("sevens", opening="any_seven", ace="high"), hands, dealer=2)
    assert high.legal_actions() == ["AH", "2H"]  # A above K: the row's top end is playable


def test_sv4_first_seats_left_of_dealer_get_the_extra_cards() -> None:  # SV-4
    match = GAME.new_match(PRESETS["sevens"], 5, 3)
    obs = match.observation(0)
    assert obs["dealer"] == 0
    assert obs["hand_sizes"] == [10, 11, 11, 10, 10]


def test_sv5_the_deal_rotates_clockwise() -> None:  # SV-5
    match = GAME.new_match(PRESETS["sevens"], 4, 5)
    play_random(match, random.Random(5), check=False)
    starts = [e for e in match.events() if e.kind == "deal_start"]
    assert [e.detail["dealer"] for e in starts] == [0, 1, 2, 3]


def test_sv6_a_corrupt_deal_is_refused() -> None:  # SV-6
    deck = [str(c) for c in make_deck("french52")]
    with pytest.raises(MatchStateError, match="missing AC"):
        SevensMatch(PRESETS["sevens"], 3, 1, hands=[deck[1:18], deck[18:35], deck[35:]])
    with pytest.raises(MatchStateError, match="twice"):
        SevensMatch(PRESETS["sevens"], 3, 1, hands=[[*deck[:18], "AC"], deck[18:35], deck[35:]])


def test_sv6_a_stacked_deal_with_wrong_hand_sizes_is_refused() -> None:  # SV-6, SV-4
    deck = [str(c) for c in make_deck("french52")]
    with pytest.raises(MatchStateError, match=r"wrong hand sizes \(SV-6\).*\[13, 13, 13, 13\]"):
        SevensMatch(PRESETS["sevens"], 4, 1, hands=[deck[:15], deck[15:26], deck[26:39], deck[39:]])
    # 52 cards to 3 seats, dealer 0: seat 1 (left of the dealer) gets the 18th card.
    with pytest.raises(MatchStateError, match=r"\[17, 18, 17\]"):
        SevensMatch(PRESETS["sevens"], 3, 1, hands=[deck[:18], deck[18:35], deck[35:]])
    match = SevensMatch(PRESETS["sevens"], 3, 1, hands=[deck[:17], deck[17:35], deck[35:]])
    assert [len(h) for h in match.initial_hands()[0]] == [17, 18, 17]


# -- layout and legal plays -----------------------------------------------------------------


def test_sv7_rows_open_only_with_the_starter() -> None:  # SV-7
    # in_hand (default): a closed row takes only its starter.
    match = stacked(rules("sevens", opening="any_seven"), ["8H 7H", "6H", "5C"], dealer=2)
    assert match.legal_actions() == ["7H"]
    assert "it opens with 7H" in (match.check("8H") or "")
    # removed_before_deal: the four 7s are on the table and 48 cards are dealt.
    shichi = GAME.new_match(PRESETS["shichi-narabe"], 4, 2)
    obs = shichi.observation(0)
    assert sum(obs["hand_sizes"]) == 48
    assert all(row == [f"7{s}"] for s, row in obs["table"].items())
    # placed_from_hands (cinquillo): the holders lay the four 5s down first.
    cinq = GAME.new_match(PRESETS["cinquillo"], 4, 2)
    starters = [e for e in cinq.events() if e.reason == "starter"]
    assert [e.action for e in starters] == ["5C", "5D", "5H", "5S"]
    dealt = cinq.initial_hands()[0]
    assert all(e.action in dealt[e.seat or 0] and e.source == Source.FORCED for e in starters)
    # domino: rows start from the Unter (J); the J of diamonds opens.
    dom = GAME.new_match(PRESETS["domino"], 4, 2)
    assert dom.legal_actions() == ["JD"]


def test_sv8_legal_plays_are_a_starter_or_one_beyond_a_row_end() -> None:  # SV-8
    match = stacked(
        rules("sevens", opening="any_seven"), ["6H 8H 9H 5C", "7H KH", "4C 4H"], dealer=2
    )
    assert match.legal_actions() == ["5C"]
    match.apply("5C")
    assert match.legal_actions() == ["7H"]
    match.apply("7H")
    assert match.legal_actions() == ["4C"]
    match.apply("4C")
    assert match.legal_actions() == ["6H", "8H"]
    assert match.check("9H") == (
        "9H is not playable: the hearts row runs AH-3H, 5H, 7H, TH-QH; "
        "playable hearts are 6H and 8H"
    )


def test_sv9_a_complete_row_takes_no_more_cards() -> None:  # SV-9
    match = stacked(rules("sevens", opening="any_seven"), ["KH 2C", "3C", "4C"], dealer=2)
    match.apply("KH")
    obs = match.observation(1)
    assert len(obs["table"]["H"]) == 13
    assert obs["table"]["H"][0] == "AH" and obs["table"]["H"][-1] == "KH"
    assert all(not a.endswith("H") for a in match.legal_actions())


def test_sv10_every_card_is_in_a_hand_or_on_the_table() -> None:  # SV-10
    match = GAME.new_match(PRESETS["sevens"], 4, 8, [DealSpec(8)])
    rng = random.Random(8)
    while not match.is_over():
        check_invariants(match)  # hands + table == deck, no pile anywhere
        match.apply(rng.choice(match.legal_actions()))


def test_sv11_runs_with_multi_card_turn() -> None:  # SV-11
    hands = ["7S 8S 9S 6S 2C", "KD KH", "QD QH"]
    multi = stacked(rules("sevens", opening="any_seven", multi_card_turn=True), hands, dealer=2)
    assert multi.legal_actions() == ["2C", "7S", "7S+6S", "7S+8S", "7S+8S+9S"]
    events = multi.apply("7S+8S+9S")
    assert kinds(events) == [("play", 0, "7S+8S+9S", None)]
    assert multi.observation(0)["hand"] == ["2C", "6S"]
    multi.apply(PASS)  # seat 1: KD and KH wait for QD and QH
    multi.apply("QD")  # seat 2
    assert multi.to_act() == 0
    assert "is not a run" in (multi.check("6S+2C") or "")
    single = stacked(rules("sevens", opening="any_seven"), hands, dealer=2)
    assert single.legal_actions() == ["2C", "7S"]
    assert "multi_card_turn is off" in (single.check("7S+8S") or "")


def test_sv12_eights_before_sixes() -> None:  # SV-12
    hands = ["6S 8S KD", "QD KH", "JD QH"]
    plain = stacked(rules("sevens", opening="any_seven"), hands, dealer=2)
    assert plain.legal_actions() == ["6S", "8S"]
    fr = stacked(rules("sevens", opening="any_seven", eights_before_sixes=True), hands, dealer=2)
    assert fr.legal_actions() == ["8S"]
    assert "8S must come before the cards below 7S" in (fr.check("6S") or "")
    fr.apply("8S")
    fr.apply(PASS)  # seat 1: QD waits for JD
    fr.apply("JD")
    assert fr.legal_actions() == ["6S"]  # KD still waits for QD


# -- opening ------------------------------------------------------------------------------


def test_sv13_the_seven_of_diamonds_opens() -> None:  # SV-13
    match = GAME.new_match(PRESETS["sevens"], 4, 21)
    seat = match.to_act()
    assert "7D" in match.observation(seat)["hand"]
    assert match.legal_actions() == ["7D"]
    assert match.events()[0].detail["first"] == seat
    match.apply("7D")
    assert match.to_act() == (seat + 1) % 4


def test_sv14_left_of_dealer_passes_until_the_seven_of_diamonds() -> None:  # SV-14
    match = GAME.new_match(PRESETS["fan-tan-pt"], 4, 4)
    obs = match.observation(0)
    assert match.to_act() == (obs["dealer"] + 1) % 4
    while "7D" not in match.observation(match.to_act())["hand"]:
        assert match.legal_actions() == [PASS]
        pot = match.observation(0)["pot"]
        (event,) = match.apply(PASS)
        assert (event.reason, event.detail["chips"]) == ("forced", 1)
        assert match.observation(0)["pot"] == pot + 1
    assert match.legal_actions() == ["7D"]
    first_legal_until(match, 1)
    starts = [e for e in match.events() if e.kind == "deal_start"]
    assert starts[1].detail["first"] == match.deal_results()[0].winner
    assert match.to_act() == match.deal_results()[0].winner


def test_sv15_any_seven_from_left_of_dealer() -> None:  # SV-15
    for seed in range(6):
        match = GAME.new_match(PRESETS["fan-tan"], 4, seed)
        seat = match.to_act()
        assert seat == 1  # dealer 0
        sevens = [c for c in match.observation(seat)["hand"] if c[0] == "7"]
        assert match.legal_actions() == (sevens or [PASS])


def test_sv16_sjuan_opens_with_the_seven_of_hearts() -> None:  # SV-16
    match = GAME.new_match(PRESETS["sjuan"], 5, 3)
    assert "7H" in match.observation(match.to_act())["hand"]
    assert match.legal_actions() == ["7H"]


# -- passing and illegal actions ------------------------------------------------------------


def test_sv17_a_forced_pass_is_free_or_costs_pass_chips() -> None:  # SV-17
    base = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=0)
    assert base.to_act() == 1
    assert base.legal_actions() == [PASS]
    (event,) = base.apply(PASS)
    assert (event.kind, event.reason, event.detail["chips"]) == ("pass", "forced", 0)
    chips = stacked(rules("fan-tan"), CHAIN, dealer=0)
    pot = chips.observation(0)["pot"]
    (event,) = chips.apply(PASS)
    assert (event.reason, event.detail["chips"]) == ("forced", 1)
    assert chips.observation(0)["pot"] == pot + 1


def test_sv18_passing_while_able_is_an_illegal_pass() -> None:  # SV-18
    match = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    assert match.legal_actions() == ["6C", "8S"]
    assert match.check(PASS) == (
        "pass is not allowed: you hold a playable card (6C, 8S); must_play is on (SV-18)"
    )
    assert kinds(match.apply(PASS))[0] == ("illegal_pass", 0, PASS, "illegal_pass")


def test_sv19_lose_a_turn() -> None:  # SV-19
    match = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    assert kinds(match.apply(PASS)) == [("illegal_pass", 0, PASS, "illegal_pass")]
    assert match.observation(1)["skip_next"] == [True, False, False]
    match.apply(PASS)  # seat 1, forced
    events = match.apply(PASS)  # seat 2, forced; then seat 0's turn is skipped
    assert kinds(events) == [("pass", 2, PASS, "forced"), ("pass", 0, PASS, "skipped")]
    assert events[1].source == Source.FORCED
    assert match.to_act() == 1
    assert match.observation(1)["skip_next"] == [False, False, False]
    assert match.observation(1)["passes"] == [1, 1, 1]  # a skipped turn is no pass (D-41)


def test_sv19_illegal_pass_chips_to_the_pot_or_the_winner() -> None:  # SV-19
    outcomes = []
    for payee in ("pot", "winner"):
        match = stacked(rules("fan-tan", illegal_pass_payee=payee), CHAIN, dealer=2)
        pot = match.observation(0)["pot"]
        events = match.apply(PASS)
        assert kinds(events) == [
            ("illegal_pass", 0, PASS, "illegal_pass"),
            ("penalty", 0, None, "illegal_pass"),
        ]
        assert dict(events[1].detail) == {"chips": 5, "payee": payee}
        assert match.observation(0)["pot"] == pot + 1 + (5 if payee == "pot" else 0)
        while not match.is_over():
            match.apply(match.legal_actions()[0])
        (deal,) = match.deal_results()
        assert sum(deal.deltas) == 0  # SV-31
        assert next(p for p in deal.penalties if p.reason == "illegal_pass").amount == 5
        outcomes.append(deal.deltas)
    assert outcomes[0] == outcomes[1]  # the pot goes to the winner too


def test_sv17_sv19_an_illegal_pass_pays_the_pass_chip_and_the_penalty() -> None:
    """SV-17 (every pass pays pass_chips) with SV-19 (the penalty on top): fan-tan's illegal
    pass costs 1 + 5 by default; illegal_pass_also_pays_pass=false is the penalty alone."""
    for also, cost in ((None, 6), (True, 6), (False, 5)):
        changes = {} if also is None else {"illegal_pass_also_pays_pass": also}
        match = stacked(rules("fan-tan", **changes), CHAIN, dealer=2)
        pot = match.observation(0)["pot"]
        events = match.apply(PASS)
        assert events[0].kind == "illegal_pass"
        assert dict(events[0].detail) == ({"chips": 1} if cost == 6 else {})
        assert match.observation(0)["pot"] == pot + cost, also
    assert PRESETS["fan-tan"].illegal_pass_also_pays_pass
    # penalty points (fan-tan-pips style): the pass point and the penalty points add up
    points = rules("fan-tan", scoring="penalty_points", ante=0, card_penalty="pips")
    match = stacked(points, CHAIN, dealer=2)
    match.apply(PASS)
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    (deal,) = match.deal_results()
    assert deal.deltas[0] >= 6


@pytest.mark.parametrize(
    ("preset", "changes", "priced"),
    [
        ("sevens", {}, True),  # lose_turn
        ("fan-tan", {}, True),  # 5 chips
        ("fan-tan", {"illegal_pass_penalty": "forfeit_deal"}, False),
        ("fan-tan", {"must_play": False, "max_voluntary_passes": 2}, False),
    ],
)
def test_sv19_which_rules_price_an_illegal_pass(
    preset: str, changes: dict[str, object], priced: bool
) -> None:
    """SV-18/SV-19/SV-20: a pass while able is priced short of the deal (the ladder's
    priced-pass may take it) under lose_turn and chips; forfeit_deal costs the deal, and
    with must_play off such a pass is no illegal pass at all."""
    assert rules(preset, **changes).prices_illegal_pass is priced


def test_sv19_forfeit_the_deal() -> None:  # SV-19
    match = stacked(rules("fan-tan", illegal_pass_penalty="forfeit_deal"), CHAIN, dealer=2)
    assert kinds(match.apply(PASS)) == [
        ("illegal_pass", 0, PASS, "illegal_pass"),
        ("eliminated", 0, None, "forfeit"),
    ]
    obs = match.observation(1)
    assert obs["eliminated"] == [True, False, False]
    assert obs["hand_sizes"][0] == 0
    assert {"6C", "3C"} <= set(obs["table"]["C"]) and {"8S", "JS"} <= set(obs["table"]["S"])
    assert match.to_act() == 1
    while not match.is_over():
        assert match.to_act() != 0
        match.apply(match.legal_actions()[0])
    (deal,) = match.deal_results()
    assert deal.order[-1] == (0,)
    assert deal.detail["cards_left"][0] == 4
    assert sum(deal.deltas) == 0


def test_sv20_voluntary_passes_cost_more_and_are_bounded() -> None:  # SV-20
    r = rules(
        "fan-tan",
        must_play=False,
        max_voluntary_passes=1,
        voluntary_pass_chips=2,
        illegal_pass_penalty="chips",
    )
    match = stacked(r, CHAIN, dealer=2)
    assert match.legal_actions() == ["6C", "8S", PASS]
    (event,) = match.apply(PASS)
    assert (event.reason, event.detail["chips"]) == ("voluntary", 2)
    match.apply(PASS)
    match.apply(PASS)
    assert match.legal_actions() == ["6C", "8S"]
    assert "voluntary passes are used up" in (match.check(PASS) or "")


def test_sv21_an_invalid_action_is_refused_and_the_turn_passes() -> None:  # SV-21
    match = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    # Seat 0 could play: not held -> refused, then an illegal pass.
    events = match.apply("KH")
    assert kinds(events) == [
        ("invalid_action", 0, "KH", "not_held"),
        ("illegal_pass", 0, PASS, "illegal_pass"),
    ]
    assert "you do not hold KH" in events[0].detail["message"]
    # Seat 1 could not play: held but not legal -> refused, then a forced pass.
    events = match.apply("2C")
    assert kinds(events) == [
        ("invalid_action", 1, "2C", "not_legal"),
        ("pass", 1, PASS, "forced"),
    ]
    assert events[0].detail["message"].startswith("2C is not playable: the clubs row runs")
    # Malformed text, cut to 64 characters in the record.
    events = match.apply("x" * 100)
    assert kinds(events)[0] == ("invalid_action", 2, "x" * 64, "malformed")
    assert kinds(events)[1] == ("pass", 2, PASS, "forced")
    assert match.observation(0)["hand"] == ["3C", "6C", "8S", "JS"]  # nothing lost
    # A timeout is handled the same way.
    match2 = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    events = match2.apply_timeout()
    assert kinds(events) == [
        ("timeout", 0, None, "timeout"),
        ("illegal_pass", 0, PASS, "illegal_pass"),
    ]
    # ... in deal 0, as the bot's own pass, and the turn goes on to the next seat
    assert [(e.deal, e.source) for e in events] == [(0, Source.BOT), (0, Source.BOT)]
    assert match2.to_act() == 1
    # a timeout that is a forced pass passes the turn on too
    events = match2.apply_timeout()
    assert kinds(events) == [("timeout", 1, None, "timeout"), ("pass", 1, PASS, "forced")]
    assert match2.to_act() == 2


def test_sv22_free_passes() -> None:  # SV-22
    match = stacked(rules("sevens", opening="any_seven", free_passes=2), CHAIN, dealer=2)
    for _ in range(2):
        assert match.legal_actions() == ["6C", "8S", PASS]
        events = match.apply(PASS)
        assert (events[0].reason, events[0].detail["chips"]) == ("free", 0)
        match.apply(PASS)
        match.apply(PASS)
    assert match.observation(0)["free_passes_left"] == [0, 2, 2]  # forced passes are free
    assert match.legal_actions() == ["6C", "8S"]
    assert match.check(PASS) == (
        "pass is not allowed: you hold a playable card (6C, 8S); no free passes are left "
        "(SV-22) and must_play is on (SV-18)"
    )


def test_sv23_pass_elimination_puts_the_cards_on_the_table() -> None:  # SV-23
    r = rules("sevens", opening="any_seven", free_passes=3, pass_elimination=1)
    match = stacked(r, CHAIN, dealer=2)
    match.apply(PASS)  # seat 0, free
    match.apply(PASS)  # seat 1, forced
    match.apply(PASS)  # seat 2, forced
    events = match.apply(PASS)  # seat 0's second pass: out
    assert kinds(events) == [("pass", 0, PASS, "free"), ("eliminated", 0, None, "pass_limit")]
    assert match.to_act() == 1
    assert match.legal_actions() == ["5C", "9S", PASS]  # seat 1 has free passes left
    match.apply("5C")
    assert match.legal_actions() == ["4C", PASS]
    match.apply("4C")
    assert match.legal_actions() == ["2C", "9S", PASS]  # the row end skips 3C on the table


def test_sv24_passing_while_able_needs_a_bound() -> None:  # SV-24
    with pytest.raises(InvalidRulesError, match="SV-24"):
        SevensRules(must_play=False)
    SevensRules(must_play=False, max_voluntary_passes=3)
    SevensRules(must_play=False, pass_elimination=3)
    r = rules("sevens", must_play=False, pass_elimination=2)
    for seed in range(5):
        match = GAME.new_match(r, 4, seed)
        play_random(match, random.Random(seed), check=False)
        assert match.is_over()


# -- end of deal and scoring ------------------------------------------------------------------


END_HANDS = ["6C", "AH KH", "QS 5D"]
"""Seat 0 goes out with its first card."""


def ends_at_once(r: SevensRules) -> SevensMatch:
    match = stacked(r.replace(deals=1, name=r.name), END_HANDS, dealer=2)
    match.apply("6C")
    assert match.is_over()
    return match


def test_sv25_the_deal_ends_when_a_player_plays_the_last_card() -> None:  # SV-25
    match = ends_at_once(rules("sevens", opening="any_seven"))
    assert kinds(match.events()[-2:]) == [
        ("deal_end", 0, None, "out"),
        ("match_end", None, None, None),
    ]
    (deal,) = match.deal_results()
    assert deal.winner == 0 and deal.detail["cards_left"] == [0, 2, 2]


def test_sv26_winner_only() -> None:  # SV-26
    match = ends_at_once(rules("sevens", opening="any_seven"))
    result = match.result()
    assert result.unit == "deals_won"
    assert result.deals[0].deltas == (1, 0, 0)
    assert result.winners == (0,)


def test_sv27_ante_into_the_pot_and_the_winner_takes_it() -> None:  # SV-27
    match = GAME.new_match(PRESETS["fan-tan"], 4, 9)
    antes = [e for e in match.events() if e.kind == "ante"]
    assert [(e.seat, e.detail["chips"]) for e in antes] == [(0, 1), (1, 1), (2, 1), (3, 1)]
    assert match.observation(0)["pot"] == 4
    won = ends_at_once(rules("fan-tan"))
    # seat 0: -1 ante +3 pot +2 +2 per card; the others -1 ante -2 cards.
    assert won.deal_results()[0].deltas == (6, -3, -3)
    assert won.deal_results()[0].detail["pot"] == 3


def test_sv28_short_hand_ante() -> None:  # SV-28
    for mode, short_pays in (("minus_one", 0), ("plus_one", 2)):
        match = GAME.new_match(rules("fan-tan-pt", short_hand_ante=mode), 3, 2)
        sizes = [len(h) for h in match.initial_hands()[0]]
        paid = {e.seat: e.detail["chips"] for e in match.events() if e.kind == "ante"}
        for seat, size in enumerate(sizes):
            expected = 1 if size == max(sizes) else short_pays
            assert paid.get(seat, 0) == expected
    even = GAME.new_match(PRESETS["fan-tan-pt"], 4, 2)
    assert len([e for e in even.events() if e.kind == "ante"]) == 4


@pytest.mark.parametrize(
    ("changes", "deltas", "order"),
    [
        ({"card_penalty": "per_card"}, (4, -2, -2), ((0,), (1, 2))),
        ({"card_penalty": "pips"}, (31, -14, -17), ((0,), (1,), (2,))),
        ({"card_penalty": "pips", "ace_pips": 15}, (45, -28, -17), ((0,), (2,), (1,))),
    ],
)
def test_sv29_card_penalties_paid_to_the_winner(
    changes: dict[str, object], deltas: tuple[int, ...], order: tuple[tuple[int, ...], ...]
) -> None:  # SV-29
    match = ends_at_once(rules("fan-tan", ante=0, **changes))
    (deal,) = match.deal_results()
    assert deal.deltas == deltas
    assert deal.order == order


def test_sv29_face_ten_penalty_points() -> None:  # SV-29
    match = ends_at_once(rules("fwend", opening="any_seven"))
    result = match.result()
    assert result.unit == "penalty_points" and not result.higher_is_better
    assert result.deals[0].deltas == (0, 11, 15)
    assert result.winners == (0,)


def test_sv30_seven_penalty() -> None:  # SV-30
    r = rules("fan-tan", ante=0, seven_penalty=5)
    match = stacked(r.replace(deals=1), ["6C", "7H KH", "QS 5D"], dealer=2)
    match.apply("6C")
    (deal,) = match.deal_results()
    assert deal.deltas == (9, -7, -2)
    assert {(p.seat, p.reason, p.amount) for p in deal.penalties} >= {(1, "seven_penalty", 5)}


def test_sv31_chips_are_conserved_in_every_deal() -> None:  # SV-31
    for preset in ("fan-tan", "fan-tan-pt"):
        r = rules(preset, illegal_pass_payee="winner", seven_penalty=3)
        match = GAME.new_match(r, 5, 31)
        rng = random.Random(31)
        while not match.is_over():
            action = PASS if rng.random() < 0.1 else rng.choice(match.legal_actions())
            match.apply(action)
        for deal in match.deal_results():
            assert sum(deal.deltas) == 0
        assert sum(match.result().totals) == 0


# -- the match ---------------------------------------------------------------------------


def test_sv32_match_length_and_until_broke() -> None:  # SV-32
    match = GAME.new_match(PRESETS["sevens"], 4, 1)
    play_random(match, random.Random(1), check=False)
    assert len(match.deal_results()) == 4  # deals=0: one per player
    seven = GAME.new_match(rules("sevens", deals=7), 3, 1)
    play_random(seven, random.Random(1), check=False)
    assert len(seven.deal_results()) == 7
    broke = rules("fan-tan", until_broke=True, starting_chips=8)
    match = GAME.new_match(broke, 4, 3)
    assert match.observation(0)["num_deals"] == 0
    play_random(match, random.Random(3), check=False)
    running = [8] * 4
    results = match.deal_results()
    for i, deal in enumerate(results):
        running = [a + b for a, b in zip(running, deal.deltas, strict=True)]
        assert (min(running) <= 0) == (i == len(results) - 1) or len(results) == 100
    assert match.result().totals == tuple(running)


def test_sv33_match_winner_by_totals() -> None:  # SV-33
    for preset in ("fan-tan", "fwend"):
        match = GAME.new_match(PRESETS[preset], 4, 33)
        play_random(match, random.Random(33), check=False)
        result = match.result()
        best = max(result.totals) if result.higher_is_better else min(result.totals)
        assert set(result.winners) == {s for s in range(4) if result.totals[s] == best}


def test_sv34_fewest_cards_in_the_last_deal() -> None:  # SV-34
    r = rules("fan-tan", ante=0, card_penalty="pips")
    hands = ["6C", "KS", "5H 8H"]  # seats 1 and 2 both owe 13 pips
    plain = stacked(r.replace(deals=1), hands, dealer=2)
    plain.apply("6C")
    assert plain.result().order == ((0,), (1, 2))
    tb = stacked(r.replace(deals=1, match_tiebreak="fewest_cards_last_deal"), hands, dealer=2)
    tb.apply("6C")
    assert tb.result().order == ((0,), (1,), (2,))


@pytest.mark.parametrize("mode", ["extra_deal", "showdown"])
def test_sv34_extra_deal_and_showdown(mode: str) -> None:  # SV-34
    scoring = "penalty_points" if mode == "showdown" else "chips"
    r = rules(
        "sevens",
        opening="any_seven",
        scoring=scoring,
        card_penalty="none",
        match_tiebreak=mode,
        deals=1,
    )
    match = stacked(r, END_HANDS, dealer=2)
    match.apply("6C")  # nothing is scored: all three tie
    assert not match.is_over()
    assert match.deal_index() == 1
    play_random(match, random.Random(34), check=False)
    deals = match.deal_results()
    assert len(deals) == 2
    assert deals[1].detail["tiebreak"] == mode
    assert deals[1].deltas == (0, 0, 0)
    result = match.result()
    assert result.totals == (0, 0, 0)
    assert result.winners == (deals[1].winner,)
    assert result.order == deals[1].order


def test_sv23_the_last_seat_standing_wins_the_deal() -> None:  # SV-23, D-42
    r = rules("sevens", opening="any_seven", free_passes=3, pass_elimination=1, deals=1)
    match = stacked(r, CHAIN, dealer=2)
    for _ in range(4):  # seat 0 free, seat 1 forced, seat 2 forced, seat 0 free: out
        match.apply(PASS)
    assert match.to_act() == 1
    events = match.apply(PASS)  # seat 1's second pass (a free one): out, seat 2 alone
    assert kinds(events)[:3] == [
        ("pass", 1, PASS, "free"),
        ("eliminated", 1, None, "pass_limit"),
        ("deal_end", 2, None, "last_active"),
    ]
    (deal,) = match.deal_results()
    assert deal.winner == 2 and deal.order == ((2,), (0, 1))
    assert deal.deltas == (0, 0, 1)
    assert deal.detail["cards_left"] == [4, 4, 4]


def test_sv25_going_out_with_a_run_ends_the_deal() -> None:  # SV-25 with SV-11
    """SV-25 when the last play is a run (multi_card_turn, SV-11): the deal stops at once and
    the player who went out wins it. Found by ``make mutate``: a run is judged on the
    engine's slow path, whose end of deal no clause test reached (single cards end the
    deal on the fast path)."""
    hands = ["7S 8S 9S", "KD KH", "QD QH"]
    match = stacked(rules("sevens", opening="any_seven", multi_card_turn=True), hands, dealer=2)
    assert match.to_act() == 0
    events = match.apply("7S+8S+9S")
    assert [e.kind for e in events][-2:] == ["deal_end", "match_end"]
    assert match.is_over()
    (deal,) = match.deal_results()
    assert deal.winner == 0 and deal.order[0] == (0,)
    assert deal.detail["end"] == "out" and events[-2].reason == "out"
    assert match.result().order[0] == (0,)


def test_sv11_legal_runs_come_in_the_canonical_order() -> None:  # SV-11, D-32
    """With multi_card_turn the singles and runs are sorted as every legal list is (cards by
    suit, then rank from the ace; a run after its first card): clubs before hearts, 10
    before the jack. Plain text order would put 8H first (mutmut: the sort key of the runs
    was unchecked: every tested list happened to be in text order too)."""
    hands = ["TC JC 9H 8H 2C", "KD KH", "QD QH"]
    match = stacked(rules("sevens", opening="any_seven", multi_card_turn=True), hands, dealer=2)
    assert match.legal_actions() == ["2C", "TC", "TC+JC", "8H", "8H+9H"]


def test_sv34_the_extra_deal_orders_only_the_seats_tied_for_first() -> None:  # SV-34, D-60
    """Totals 1, 1, 0, 0 after two deals: the extra deal (played by the whole table) orders
    seats 0 and 1, tied for first; seats 2 and 3, tied lower, stay tied and keep their
    place below, whatever the extra deal says about them."""
    r = rules("sevens", opening="any_seven", match_tiebreak="extra_deal")
    match = stacked(r, ["6C", "AH KH", "QS 5D", "2S 3D"], dealer=3, deals=2, seed=13)
    match.apply("6C")  # seat 0 wins the first deal; seat 1 the second (seed 13)
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    first, second, extra = match.deal_results()
    assert (first.winner, second.winner) == (0, 1)
    assert extra.detail["tiebreak"] == "extra_deal"
    assert extra.order == ((1,), (3,), (2,), (0,))
    result = match.result()
    assert result.totals == (1, 1, 0, 0)
    assert result.order == ((1,), (0,), (2, 3))
    assert result.winners == (1,)


def test_sv17_every_paid_pass_adds_to_a_penalty_point_score() -> None:  # SV-17, SV-29
    """With penalties kept as points, each pass's chip is a point on the passer's score for
    the deal: seat 1's two forced passes are two points, plus its card left (mutmut: the
    points of a second pass replacing the first's went unnoticed)."""
    r = rules("fan-tan", scoring="penalty_points", ante=0, card_penalty="per_card", deals=1)
    match = stacked(r, ["6C 5C JD", "KD", "QD 2S"], dealer=2)
    for action in ("6C", PASS, "2S", "5C", PASS, PASS, "JD"):  # seat 0, 1, 2, 0, 1, 2, 0
        match.apply(action)
    (deal,) = match.deal_results()
    assert deal.winner == 0 and deal.detail["cards_left"] == [0, 1, 1]
    assert deal.deltas == (0, 2 + 1, 1 + 1)


def test_sv4_the_extra_cards_go_to_the_seats_left_of_the_dealer() -> None:  # SV-4, SV-6
    """52 cards to 5 seats: the two seats left of the dealer hold 11 (a stacked fresh deal
    with those sizes is a normal deal), for dealer 0 and for dealer 3."""
    deck = [str(c) for c in make_deck("french52")]
    for dealer, sizes in ((0, [10, 11, 11, 10, 10]), (3, [11, 10, 10, 10, 11])):
        cuts = [sum(sizes[:i]) for i in range(6)]
        hands = [deck[cuts[i] : cuts[i + 1]] for i in range(5)]
        match = SevensMatch(PRESETS["sevens"], 5, 1, [DealSpec(1, 0, dealer)], hands=hands)
        assert [len(h) for h in match.initial_hands()[0]] == sizes


def test_sv6_a_corrupt_deal_names_the_missing_and_the_foreign_cards() -> None:  # SV-6
    """Cards missing while others are held twice (as many cards as the deck) and cards
    from outside the deck are both refused, every card named."""
    deck = [str(c) for c in make_deck("french52")]
    hands = [[*deck[2:18], "KS", "QS"], deck[18:35], deck[35:]]
    with pytest.raises(
        MatchStateError,
        match=r"^deal 0: corrupt deal \(SV-6\): hands and table must hold every card of the "
        r"french52 deck exactly once; hand sizes \[18, 17, 17\], missing AC 2C, not in the "
        r"deck none, 52 cards for 52$",
    ):
        SevensMatch(PRESETS["sevens"], 3, 1, hands=hands)
    german = [str(c) for c in make_deck("german32")]
    hands = [[*german[:11], "2C", "3C"], german[11:22], german[22:]]
    with pytest.raises(
        MatchStateError,
        match=r"^deal 0: corrupt deal \(SV-6\): hands and table must hold every card of the "
        r"german32 deck exactly once; hand sizes \[13, 11, 10\], missing none, not in the "
        r"deck 2C 3C, 34 cards for 32$",
    ):
        SevensMatch(PRESETS["domino"], 3, 1, hands=hands)


def test_sv6_sv7_a_stacked_deal_with_the_starters_removed_counts_only_dealt_cards() -> None:
    """`removed_before_deal` (SV-7): the starters lie on the table and the 48 other cards
    are dealt, 12 each to 4 seats; other sizes are refused naming the 48 (SV-4, SV-6)."""
    r = PRESETS["shichi-narabe"]
    dealt = [str(c) for c in make_deck("french52") if not str(c).startswith("7")]
    match = SevensMatch(r, 4, 1, hands=[dealt[i : i + 12] for i in range(0, 48, 12)])
    assert match.observation(0)["table"] == {s: [f"7{s}"] for s in "CDHS"}
    with pytest.raises(
        MatchStateError,
        match=r"^deal 0: wrong hand sizes \(SV-6\): hands of \[13, 11, 12, 12\] cards, but 48 "
        r"cards dealt to 4 seats from the left of dealer 0 make hands of \[12, 12, 12, 12\] "
        r"\(SV-4\); stack the cards already played as table=\.\.\. for a position after "
        r"the start$",
    ):
        SevensMatch(r, 4, 1, hands=[dealt[:13], dealt[13:24], dealt[24:36], dealt[36:]])


def test_sv7_starters_are_placed_from_hands_suit_by_suit() -> None:  # SV-7, D-12
    """`placed_from_hands`: each starter a seat holds is put down by its holder at the deal
    start (a forced ``play``, reason ``starter``), even when an earlier suit's starter
    already lies on the table; a seat left with no card has gone out (SV-25)."""
    r = PRESETS["cinquillo"]
    match = stacked(r, ["5D 2C", "5H 3C", "5S 4C"], dealer=2)
    assert match.events()[1:] == [
        Event(EventKind.PLAY, seat, 0, card, "starter", Source.FORCED, {})
        for seat, card in ((0, "5D"), (1, "5H"), (2, "5S"))
    ]
    assert [match.observation(s)["hand"] for s in range(3)] == [["2C"], ["3C"], ["4C"]]
    match = stacked(r, ["5D AC", "5H 2C", "5S 3C"], dealer=2)
    assert not match.deal_results() and match.observation(0)["hand"] == ["AC"]
    match = stacked(r, ["5D 2C", "5H", "5S 4C"], dealer=2)
    (deal,) = match.deal_results()
    assert (deal.winner, deal.detail["end"]) == (1, "out") and match.is_over()


def test_sv13_the_opening_seven_waits_even_when_cards_above_it_lie_on_the_table() -> None:
    """SV-13: until the 7D is down it is the only legal card, whatever else lies on the
    table (here the 8D and every card nobody holds); with the 7D already on the table the
    seat left of the dealer begins."""
    match = stacked(rules("sevens"), ["7D 5C", "6D 9S", "KS 2S"], dealer=2)
    assert match.to_act() == 0 and match.legal_actions() == ["7D"]
    match = stacked(rules("sevens"), ["6C 5C", "8D 9S", "KS 2S"], dealer=1)
    assert match.to_act() == 2 and match.events()[0].detail["first"] == 2


def test_sv22_a_single_free_pass_is_listed_as_legal() -> None:  # SV-22
    match = stacked(rules("sevens", opening="any_seven", free_passes=1), CHAIN, dealer=2)
    assert match.legal_actions() == ["6C", "8S", PASS]


def test_sv28_a_short_hand_antes_one_chip_less_or_none_at_all() -> None:  # SV-28
    """`minus_one`: with an ante of 2 the short hands ante 1; with an ante of 1 they ante
    nothing, and no ``ante`` event is written for them."""
    for ante, short in ((2, 1), (1, 0)):
        match = GAME.new_match(rules("fan-tan-pt", ante=ante), 3, 2)
        sizes = [len(h) for h in match.initial_hands()[0]]
        paid = [(e.seat, e.detail["chips"]) for e in match.events() if e.kind == "ante"]
        want = [(s, ante if size == max(sizes) else short) for s, size in enumerate(sizes)]
        assert paid == [(s, chips) for s, chips in want if chips]


def test_sv19_illegal_pass_chips_owed_go_from_the_loser_to_the_winner() -> None:  # SV-19, SV-31
    """`illegal_pass_payee = winner`: seat 2's illegal pass owes 5 chips, paid to seat 0
    when seat 0 wins (the pot case gives the same deltas: the pot goes to the winner too).
    The deal's result and ``deal_end`` event are exact: antes, passes, the penalty and a
    card penalty of 1 chip per card left (SV-29)."""
    for payee in ("winner", "pot"):
        match = stacked(rules("fan-tan", illegal_pass_payee=payee), CHAIN, dealer=2)
        for action in ("6C", "5C", PASS):  # seat 2 holds the playable 4C
            match.apply(action)
        while not match.is_over():
            match.apply(match.legal_actions()[0])
        (deal,) = match.deal_results()
        assert (deal.deal, deal.winner, deal.deltas) == (0, 0, (11, -3, -8))
        assert deal.penalties == (
            PenaltyRecord(2, "illegal_pass", 5),
            PenaltyRecord(1, "card_penalty", 1),
            PenaltyRecord(2, "card_penalty", 1),
        )
        assert match.events()[-2] == Event(
            EventKind.DEAL_END,
            0,
            0,
            None,
            "out",
            Source.BOT,
            {"deltas": [11, -3, -8], "cards_left": [0, 1, 1]},
        )


def test_sv23_an_elimination_is_one_exact_event_and_a_penalty_record() -> None:  # SV-23
    """The seat put out of the deal: one ``eliminated`` event with the reason and the
    source of the pass that put it out, no skipped turn shown for it, and a penalty record
    of 0 at the deal's end."""
    r = rules("sevens", opening="any_seven", free_passes=3, pass_elimination=1, deals=1)
    match = stacked(r, CHAIN, dealer=2)
    for _ in range(3):
        match.apply(PASS)
    events = match.apply(PASS, Source.AUTOPILOT)
    assert events[-1] == Event(EventKind.ELIMINATED, 0, 0, None, "pass_limit", Source.AUTOPILOT)
    assert match.observation(1)["skip_next"] == [False, False, False]
    assert all(flag is False for flag in match.observation(1)["skip_next"])
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    (deal,) = match.deal_results()
    assert PenaltyRecord(0, "pass_limit", 0) in deal.penalties


def test_sv34_a_showdown_pays_only_the_seats_not_tied_for_first() -> None:  # SV-34, D-60
    """`fan-tan-pips` over two deals, seed 1: seats 0 and 1 tie for the fewest points
    (16), so a showdown deal is played: its raw deltas are kept in its detail, the tied
    seats score 0 and the others their points. An extra deal (`fan-tan`, seed 106) scores
    nobody, whatever its raw deltas."""
    match = stacked(
        rules("fan-tan-pips", deals=2), ["6C", "AH KH", "QS 5D", "2S 3D"], dealer=3, deals=2, seed=1
    )
    match.apply("6C")
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    showdown = match.deal_results()[2]
    assert showdown.detail["tiebreak"] == "showdown"
    assert showdown.detail["raw_deltas"] == [23, 16, 23, 0]
    assert showdown.deltas == (0, 0, 23, 0)
    r = rules("fan-tan", deals=2, match_tiebreak="extra_deal")
    match = stacked(r, ["6C", "AH KH", "QS 5D", "2S 3D"], dealer=3, deals=2, seed=106)
    match.apply("6C")
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    extra = match.deal_results()[2]
    assert extra.detail["raw_deltas"] == [13, -2, -4, -7] and extra.deltas == (0, 0, 0, 0)


def test_sv11_runs_start_from_a_held_card_and_may_reach_the_ace() -> None:  # SV-11, D-32
    """A run is made of the seat's own cards only (the playable 8C another seat holds does
    not start a run to seat 0's 9C), and goes down to the ace of any suit."""
    r = rules("sevens", opening="any_seven", multi_card_turn=True)
    for suit in "SH":
        match = stacked(r, [f"3{suit} 2{suit} A{suit}", "KD", "QD"], dealer=2)
        assert match.legal_actions() == [f"3{suit}", f"3{suit}+2{suit}", f"3{suit}+2{suit}+A{suit}"]
    match = stacked(r, ["9C 2D", "8C KD", "QD"], dealer=2)
    assert match.legal_actions() == ["2D"]
    assert match.check("8C+9C") == "you do not hold 8C; your hand is 9C 2D"


def test_sv8_sv12_a_card_that_is_not_playable_is_refused_saying_what_is() -> None:  # SV-8, SV-12
    """The refusal names the row as it runs (groups of adjacent cards), the playable cards
    of that suit, and with `eights_before_sixes` the card that must come first, when it is
    still missing and there is a card above the starter (starters 7 and Q; not K)."""
    deck = [str(c) for c in make_deck("french52")]
    others = [c for c in deck if c[1] != "H"]

    def refusal(r: SevensRules, hands: list[list[str]], table: list[str], card: str) -> str | None:
        match = SevensMatch(r, 3, 1, hands=hands, table=[*table, *others])
        assert match.to_act() == 1  # left of dealer 0
        return match.check(card)

    eights = rules("sevens", opening="any_seven", eights_before_sixes=True)
    rest = ["9H", "TH", "JH", "QH", "KH"]
    assert refusal(eights, [["8H", "6H", "2H", "AH"], ["5H", "4H", "3H"], rest], ["7H"], "5H") == (
        "5H is not playable: the hearts row runs 7H; the playable heart is 8H "
        "(8H must come before the cards below 7H: SV-12)"
    )
    assert refusal(eights, [["6H", "2H", "AH"], ["5H", "4H", "3H"], rest], ["7H", "8H"], "5H") == (
        "5H is not playable: the hearts row runs 7H-8H; playable hearts are 6H and 9H"
    )
    low = ["9H", "TH", "JH", "7H", "8H"]
    kings = rules("sevens", opening="any_seven", eights_before_sixes=True, starter_rank="K")
    assert refusal(kings, [["6H", "2H", "AH", "QH"], ["5H", "4H", "3H"], low], ["KH"], "5H") == (
        "5H is not playable: the hearts row runs KH; the playable heart is QH"
    )
    queens = rules("sevens", opening="any_seven", eights_before_sixes=True, starter_rank="Q")
    assert refusal(queens, [["6H", "2H", "AH", "KH"], ["5H", "4H", "3H"], low], ["QH"], "5H") == (
        "5H is not playable: the hearts row runs QH; the playable heart is KH "
        "(KH must come before the cards below QH: SV-12)"
    )
    plain = rules("sevens", opening="any_seven")
    hands = [["3H", "KH"], ["2H", "AH"], ["9H", "TH", "JH", "8H", "QH"]]
    assert refusal(plain, hands, ["4H", "5H", "6H", "7H"], "2H") == (
        "2H is not playable: the hearts row runs 4H-7H; playable hearts are 3H and 8H"
    )


def test_sv32_until_broke_stops_when_a_seat_has_exactly_no_chips_left() -> None:  # SV-32
    """A seat at 0 chips is broke: `fan-tan` until broke from 5 chips, seed 0, ends after
    the first deal with totals 0, 15, 0."""
    match = GAME.new_match(rules("fan-tan", until_broke=True, starting_chips=5), 3, 0)
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    assert len(match.deal_results()) == 1 and match.result().totals == (0, 15, 0)


def test_sv19_lose_a_turn_is_a_skipped_pass_and_a_penalty_record() -> None:  # SV-19
    """An illegal pass under `lose_turn` (autopilot's, here): the ``illegal_pass`` event by
    its source, a penalty record of 0 for the seat, and at its next turn a forced
    ``skipped`` pass of 0 chips, after which play goes on clockwise."""
    match = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    events = match.apply(PASS, Source.AUTOPILOT)
    assert events == [
        Event(EventKind.ILLEGAL_PASS, 0, 0, PASS, "illegal_pass", Source.AUTOPILOT, {})
    ]
    assert match.observation(1)["skip_next"] == [True, False, False]
    match.apply("6C" if "6C" in match.legal_actions() else match.legal_actions()[0])
    events = match.apply(match.legal_actions()[0])  # seat 2 plays, seat 0 is skipped
    assert events[-1] == Event("pass", 0, 0, PASS, "skipped", Source.FORCED, {"chips": 0})
    assert match.to_act() == 1 and match.observation(1)["skip_next"] == [False, False, False]
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    assert PenaltyRecord(0, "illegal_pass", 0) in match.deal_results()[0].penalties
    forfeit = stacked(rules("fan-tan", illegal_pass_penalty="forfeit_deal"), CHAIN, dealer=2)
    forfeit.apply(PASS)
    while not forfeit.is_over():
        forfeit.apply(forfeit.legal_actions()[0])
    penalties = forfeit.deal_results()[0].penalties
    assert PenaltyRecord(0, "illegal_pass", 0) in penalties
    assert PenaltyRecord(0, "forfeit", 0) in penalties


def test_sv21_every_refusal_has_its_reason_code_and_sentence() -> None:  # SV-21
    """The refused action comes back as one ``invalid_action`` (text cut to 64 characters,
    the source kept) with its reason code and sentence, then the seat's pass."""
    r = rules("sevens", opening="any_seven", multi_card_turn=True)
    clubs_3c = "3C is not playable: the clubs row runs 7C-KC; the playable club is 6C"
    cases = [
        ("7X", "malformed", "'7X' is not an action: send a card (7D), a run (8D+9D) where "
         "multi_card_turn is on, or pass"),
        ("5C+4C", "not_held", "you do not hold 5C; your hand is 3C 6C 8S JS"),
        ("6C+6C", "not_legal", "6C+6C names a card twice"),
        ("3C", "not_legal", clubs_3c),
        ("6C+8S", "not_legal", "6C+8S is not a run: each card must be playable after the "
         "previous one in one direction; runs from 6C: none"),
        ("8S+JS", "not_legal", "8S+JS is not a run: each card must be playable after the "
         "previous one in one direction; runs from 8S: none"),
        ("3C+6C", "not_legal", clubs_3c),
        ("x" * 70, "malformed", f"{'x' * 64!r} is not an action: send a card (7D), a run (8D+9D) "
         "where multi_card_turn is on, or pass"),
    ]  # fmt: skip
    for action, reason, message in cases:
        match = stacked(r, CHAIN, dealer=2)
        assert match.check(action) == message, action
        events = match.apply(action, Source.AUTOPILOT)
        assert events[0] == Event(
            EventKind.INVALID_ACTION,
            0,
            0,
            action[:64],
            reason,
            Source.AUTOPILOT,
            {"message": message},
        )
        assert events[1].kind == "illegal_pass" and events[1].source == Source.AUTOPILOT
    german = stacked(rules("domino"), ["JC 8C", "QC", "KC"], dealer=2)
    assert german.check("2C") == "2C is not in the german32 deck; your hand is 8C JC"
    single = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    assert single.check("6C+3C") == (
        "6C+3C plays several cards, but multi_card_turn is off: play one card"
    )
    assert single.check(7) == (  # type: ignore[arg-type]
        "'7' is not an action: send a card (7D), a run (8D+9D) where multi_card_turn is on, or pass"
    )


SOURCES = (Source.BOT, Source.AUTOPILOT, Source.FORCED)


def test_apply_returns_exactly_the_events_it_added() -> None:
    """Whatever happens in one ``apply`` (a play, a deal won, a skipped seat, a new deal
    started, the match ended), it returns exactly the events added to the match's list."""
    for name in ("sevens", "fan-tan", "shichi-narabe", "cinquillo", "fwend"):
        r = rules(name, deals=3)
        tables_for(r).row_cache.clear()  # the rows' playable cards, built here
        match = GAME.new_match(r, 4, 9)
        rng = random.Random(name)
        while not match.is_over():
            before, seat, deal = len(match.events()), match.to_act(), match.deal_index()
            roll = rng.random()
            if roll < 0.1:
                added = match.apply(PASS, Source.AUTOPILOT)
            elif roll < 0.15:
                added = match.apply_timeout()
            elif roll < 0.17:
                added = match.apply(7)  # type: ignore[arg-type]
                assert added[0].action == "7"
            else:
                action, source = rng.choice(match.legal_actions()), rng.choice(SOURCES)
                added = match.apply(action, source)
                if action != PASS:
                    assert added[0] == Event("play", seat, deal, action, None, source, {})
            assert added == match.events()[before:], name


def test_sv19_sv29_illegal_pass_penalties_are_points_on_the_passers_own_score() -> None:
    """Under `penalty_points` an illegal pass's penalty is points on the passer's score,
    whoever the payee would be with chips (SV-19, SV-29): seat 2's and seat 0's 5 points
    each, plus the pass point (SV-17) and the card pips; one exact ``penalty`` event."""
    match = stacked(rules("fan-tan-pips", illegal_pass_payee="winner"), CHAIN, dealer=2)
    match.apply("6C")
    match.apply("5C")
    events = match.apply(PASS)
    assert events[1] == Event(
        EventKind.PENALTY, 2, 0, None, "illegal_pass", Source.BOT, {"chips": 5, "payee": "winner"}
    )
    match.apply(PASS)
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    (deal,) = match.deal_results()
    assert (deal.winner, deal.deltas) == (0, (6, 13, 19))


def test_sv20_the_voluntary_pass_bound_counts_each_pass_once() -> None:  # SV-20
    r = rules(
        "fan-tan",
        must_play=False,
        max_voluntary_passes=2,
        voluntary_pass_chips=2,
        illegal_pass_penalty="chips",
    )
    match = stacked(r, CHAIN, dealer=2)
    for _ in range(2):
        assert match.legal_actions() == ["6C", "8S", PASS]
        match.apply(PASS)
        match.apply(PASS)
        match.apply(PASS)
    assert match.legal_actions() == ["6C", "8S"]


def test_sv19_two_illegal_passes_owe_the_winner_twice_and_count_as_two_passes() -> None:
    """SV-19 with `illegal_pass_payee = winner`: seat 2 passes illegally twice (it holds the
    4C, then the TS too); both penalties are owed to the winner (10 chips, not 5), both
    passes are counted in the observation, and the deltas are exact (SV-31)."""
    match = stacked(rules("fan-tan", illegal_pass_payee="winner"), CHAIN, dealer=2)
    for action in ("6C", "5C", PASS, "8S", "9S", PASS):
        match.apply(action)
    assert match.observation(0)["passes"] == [0, 0, 2]
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    (deal,) = match.deal_results()
    assert (deal.winner, deal.deltas) == (0, (18, -4, -14))
    assert deal.penalties[:2] == (PenaltyRecord(2, "illegal_pass", 5),) * 2


def test_sv19_a_forfeit_is_eliminated_by_whoever_sent_the_pass() -> None:  # SV-19, SV-23
    """The forfeit's ``illegal_pass`` and ``eliminated`` events carry the pass's source
    (here the autopilot), exactly."""
    match = stacked(rules("fan-tan", illegal_pass_penalty="forfeit_deal"), CHAIN, dealer=2)
    assert match.apply(PASS, Source.AUTOPILOT) == [
        Event("illegal_pass", 0, 0, PASS, "illegal_pass", Source.AUTOPILOT, {"chips": 1}),
        Event(EventKind.ELIMINATED, 0, 0, None, "forfeit", Source.AUTOPILOT),
    ]


def test_sv11_sv21_refusals_name_their_code_and_a_card_in_another_spelling_keeps_its_source() -> (
    None
):
    """SV-21: a card outside the deck is ``not_held``, several cards with multi_card_turn off
    and a broken run are ``not_legal`` (the run's sentence lists every run from its first
    card, SV-11); a legal card sent in lower case is played in canonical form with the
    sender's source."""
    r = rules("sevens", opening="any_seven", multi_card_turn=True)
    hands = ["6C 5C 4C 8S", "3C 2C 9S QS", "AC JS TS KS"]
    runs = stacked(r, hands, dealer=2)
    message = (
        "6C+4C is not a run: each card must be playable after the previous one in one "
        "direction; runs from 6C: 6C+5C, 6C+5C+4C"
    )
    assert runs.apply("6C+4C", Source.AUTOPILOT)[0] == Event(
        EventKind.INVALID_ACTION, 0, 0, "6C+4C", "not_legal", Source.AUTOPILOT,
        {"message": message},
    )  # fmt: skip
    lower = stacked(r, hands, dealer=2)
    assert lower.apply("6c", Source.AUTOPILOT) == [
        Event(EventKind.PLAY, 0, 0, "6C", None, Source.AUTOPILOT, {})
    ]
    german = stacked(rules("domino"), ["JC 8C", "QC", "KC"], dealer=2)
    assert german.apply("2C")[0] == Event(
        EventKind.INVALID_ACTION, 0, 0, "2C", "not_held", Source.BOT,
        {"message": "2C is not in the german32 deck; your hand is 8C JC"},
    )  # fmt: skip
    single = stacked(rules("sevens", opening="any_seven"), CHAIN, dealer=2)
    assert single.apply("6C+3C")[0] == Event(
        EventKind.INVALID_ACTION, 0, 0, "6C+3C", "not_legal", Source.BOT,
        {"message": "6C+3C plays several cards, but multi_card_turn is off: play one card"},
    )  # fmt: skip


def test_sv11_runs_of_one_length_from_a_starter_are_ordered_by_their_cards() -> None:
    """SV-11, D-32: with K as the starter and the ace high, the runs KC+AC (up) and KC+QC
    (down) tie on first card and length; the card indices put KC+AC (the AC is card 0)
    first, though the engine finds the down run first."""
    r = rules("sevens", starter_rank="K", ace="high", multi_card_turn=True, opening="any_seven")
    match = stacked(r, ["KC QC AC 5S", "2S 3S 4S 6S", "7S 8S 9S TS"], dealer=2)
    assert match.legal_actions() == ["KC", "KC+AC", "KC+QC"]


def test_sv19_sv23_turns_pass_over_seats_out_and_seats_skipped_as_the_reference_does() -> None:
    """SV-19 (lose a turn) and SV-23 (out of the deal) with D-21's turn order: the next seat
    clockwise that is neither out nor losing its turn acts, each lost turn a ``skipped``
    pass, however many such seats stand in a row. Compared with the naive reference
    (tests/sevens/reference.py) on 40 seeded deals of ``shichi-narabe`` (several seats out
    side by side) and of ``cinquillo`` (a lost turn next to another or to a seat out). Found by
    ``make mutate``: the slow differential test caught ``continue`` -> ``break`` in the
    turn loop and the special-turn flag reset to ``None`` or with ``and``; no fast test did."""
    from tests.sevens.test_differential import _run_deals

    for preset in ("shichi-narabe", "cinquillo"):
        _run_deals(preset, PRESETS[preset], 40)


def test_sv13_after_the_opening_card_a_refusal_names_the_row_not_the_opening() -> None:
    """SV-13: once the opening 7D lies on the table, a card that is not playable is refused
    for its row, not for an opening card still awaited (found by ``make mutate``: the
    engine kept saying "7D must be played first" after it was played)."""
    deck = [str(c) for c in make_deck("french52")]
    table = [c for c in deck if c[1] != "D"]
    hands = [["7D", "9D", "2D"], ["8D", "TD", "JD", "QD", "KD"], ["6D", "5D", "4D", "3D", "AD"]]
    match = SevensMatch(rules("sevens"), 3, 1, table=table, hands=hands)
    holder = match.to_act()
    assert hands[holder][0] == "7D"
    match.apply("7D")
    seat = match.to_act()
    assert seat != holder
    blocked = next(c for c in hands[seat] if c not in ("6D", "8D"))
    assert match.check(blocked) == (
        f"{blocked} is not playable: the diamonds row runs 7D; playable diamonds are 6D and 8D"
    )


def test_sv12_a_refusal_lists_the_lowest_playable_card_of_a_row_other_than_clubs() -> None:
    """The not-playable sentence lists every playable card of the card's row, the row's
    lowest cards included (found by ``make mutate``: the row's mask shifted by 14 bits a
    suit dropped 2H here and still passed the other sentences)."""
    deck = [str(c) for c in make_deck("french52")]
    table = [c for c in deck if c[1] != "H"] + ["3H", "4H", "5H", "6H", "7H"]
    match = SevensMatch(
        rules("sevens", opening="any_seven"),
        3,
        1,
        table=table,
        hands=[["KH", "2H"], ["AH", "8H", "9H"], ["TH", "JH", "QH"]],
    )
    assert match.to_act() == 1
    assert match.check("9H") == (
        "9H is not playable: the hearts row runs 3H-7H; playable hearts are 2H and 8H"
    )


def test_sv21_a_text_of_more_than_52_cards_is_malformed() -> None:
    """SV-21: an action text naming more cards than a deck holds is refused as malformed,
    whatever it names (the engine splits it into at most 53 parts: without the bound, a
    text of 60 cards was refused for naming a card twice)."""
    match = stacked(rules("sevens", opening="any_seven", multi_card_turn=True), CHAIN, dealer=2)
    deck = [str(c) for c in make_deck("french52")]
    text = "+".join((deck * 2)[:60])
    events = match.apply(text)
    assert events[0].kind == EventKind.INVALID_ACTION and events[0].reason == "malformed"


def test_sv21_an_action_that_is_not_text_plays_no_card() -> None:
    """SV-21: an answer that is not even a string (a record must replay whatever came, so
    ``apply`` takes it) is refused as malformed, never read as a card: here the 2C, the
    card at index 1, is playable for the seat (found by ``make mutate``: an unhashable
    answer played it)."""
    match = stacked(rules("sevens", opening="any_seven"), ["2C 9S", "KD", "QD"], dealer=2)
    assert match.to_act() == 0 and "2C" in match.legal_actions()
    events = match.apply(["2C"])  # type: ignore[arg-type]
    assert events[0].kind == EventKind.INVALID_ACTION and events[0].reason == "malformed"
    assert "2C" in match.observation(0)["hand"]
