"""The ``Match`` / ``Game`` interface of the Sevens engine: observations, checks,
serialization, determinism, and the rules object (presets, validator, round trips)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from referee.games.base import PASS, DealSpec, Event, Game, Match, Source
from referee.games.cards import Card, make_deck
from referee.games.errors import InvalidRulesError, MatchStateError
from referee.games.registry import get_game
from referee.games.sevens import GAME, PRESETS, SevensMatch, SevensRules, preset, tables
from referee.games.sevens import match as match_module
from referee.games.sevens.tables import tables_for
from tests.sevens.helpers import CARD_RE, play_random, rules, stacked

OBS_FIELDS = {
    "game", "preset", "rules", "seat", "num_players", "deal_index", "num_deals", "dealer",
    "to_act", "hand", "hand_sizes", "totals", "unit", "history", "table", "pot", "passes",
    "free_passes_left", "eliminated", "skip_next",
}  # fmt: skip


def test_the_registry_offers_sevens_as_a_game() -> None:
    game: Game = get_game("sevens")
    assert game is GAME and game.name == "sevens"
    match: Match = game.new_match(game.preset("sevens"), 4, 1)
    assert match.game == "sevens" and match.rules is PRESETS["sevens"]


def test_ten_presets_round_trip_and_are_named() -> None:
    assert list(PRESETS) == [
        "sevens", "parliament", "fan-tan", "fan-tan-pt", "fan-tan-pips", "sjuan",
        "shichi-narabe", "domino", "cinquillo", "fwend",
    ]  # fmt: skip
    for name, r in PRESETS.items():
        assert r.name == name
        assert SevensRules.from_dict(r.to_dict()) == r
        assert GAME.rules_from_dict(json.loads(json.dumps(r.to_dict()))) == r
    assert PRESETS["parliament"].replace(name="sevens") == PRESETS["sevens"]
    with pytest.raises(InvalidRulesError, match="use one of sevens, parliament"):
        preset("euchre")


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"colour": "red"}, "unknown sevens option"),
        ({"ante": True}, "ante must be int"),
        ({"ante": -1}, "0 or more"),
        ({"deck": "tarot78"}, "use one of french52"),
        ({"deck": "german32"}, "set ace='high'"),
        ({"starter_rank": "2", "deck": "german32", "ace": "high"}, "not a rank of deck"),
        ({"ante": 1}, "set scoring='chips'"),
        ({"card_penalty": "pips"}, "needs scoring="),
        ({"scoring": "penalty_points", "ante": 1}, "set ante=0"),
        ({"starters": "placed_from_hands"}, "set opening='any_seven'"),
        ({"scoring": "chips", "illegal_pass_penalty": "chips"}, "illegal_pass_chips above 0"),
        ({"scoring": "chips", "until_broke": True}, "starting_chips above 0"),
        ({"match_tiebreak": "showdown"}, "set scoring='penalty_points'"),
    ],
)
def test_the_validator_says_what_to_set(data: dict[str, object], message: str) -> None:
    with pytest.raises(InvalidRulesError, match=message):
        SevensRules.from_dict(data)


def test_observation_fields_and_privacy() -> None:
    match = GAME.new_match(PRESETS["fan-tan"], 4, 5)
    rng = random.Random(5)
    for _ in range(30):
        match.apply(rng.choice(match.legal_actions()))
    hands = [set(match.observation(s)["hand"]) for s in range(4)]
    for seat in range(4):
        obs = match.observation(seat)
        assert set(obs) == OBS_FIELDS
        assert obs["seat"] == seat and obs["game"] == "sevens" and obs["preset"] == "fan-tan"
        assert obs["unit"] == "chips" and obs["to_act"] == match.to_act()
        assert list(obs["table"]) == ["C", "D", "H", "S"]
        assert json.loads(json.dumps(obs)) == obs
        shown = set(CARD_RE.findall(json.dumps(obs)))
        public = {c for row in obs["table"].values() for c in row}
        for other in range(4):
            if other != seat:
                assert not (shown & hands[other]) - public
        assert "seed" not in json.dumps(obs)


def test_a_refused_card_is_not_shown_in_the_history() -> None:
    match = stacked(rules("sevens", opening="any_seven"), ["6C 3C 8S JS", "5C 2C", "4C AC"])
    assert match.to_act() == 1  # dealer 0
    match.apply("6C")  # seat 0's card: refused as not held
    history = match.observation(2)["history"]
    refused = [h for h in history if h["kind"] == "invalid_action"]
    assert refused and "action" not in refused[0]


def test_check_gives_the_reason_in_words() -> None:
    match = GAME.new_match(PRESETS["sevens"], 4, 21)
    seat = match.to_act()
    hand = match.observation(seat)["hand"]
    other = next(c for c in hand if c != "7D")
    assert match.check("7D") is None
    assert match.check(other) == f"{other} is not playable: 7D must be played first (SV-13, SV-14)"
    assert "is not an action" in (match.check("seven") or "")
    assert match.check("7d") is None  # case-insensitive card text is accepted
    match.apply("7d")
    assert match.events()[-1].action == "7D"


def test_fallback_action_is_deterministic_and_legal() -> None:
    match = GAME.new_match(PRESETS["shichi-narabe"], 5, 2)
    while not match.is_over():
        action = match.fallback_action()
        assert action == match.legal_actions()[0]
        assert match.check(action) is None
        match.apply(action, Source.AUTOPILOT)
    assert all(e.source in (Source.AUTOPILOT, Source.FORCED, Source.BOT) for e in match.events())


def test_errors_after_the_end_and_before_the_result() -> None:
    """Each out-of-order call says, in the whole sentence a caller reads, what is wrong and
    what to do (mutmut found only a word of each checked: its wording could change
    unnoticed)."""
    match = stacked(rules("sevens", opening="any_seven").replace(deals=1), ["6C", "5C", "4C"])
    with pytest.raises(MatchStateError) as early:
        match.result()
    assert str(early.value) == (
        "the match is not over (deal 1 of 1 in play): ask for the result after is_over() is true"
    )
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    assert match.legal_actions() == []  # the Match protocol: [] once the match is over
    assert match.check("4C") == "the match is over: no action is expected"
    for call, words in (
        (match.to_act, "nobody is to act"),
        (match.fallback_action, "there is no fallback action"),
        (match.apply_timeout, "nobody can time out"),
        (lambda: match.apply("4C"), "no action can be applied"),
    ):
        with pytest.raises(MatchStateError) as late:
            call()
        assert str(late.value) == f"the match is over: {words}"
    assert match.observation(0)["to_act"] == -1


def test_the_result_error_names_the_deal_in_play() -> None:
    """``result()`` before the end names the deal in play counted from 1 (the third deal of
    four is "deal 3 of 4")."""
    match = GAME.new_match(PRESETS["sevens"], 4, 5)
    while match.deal_index() < 2:
        match.apply(match.legal_actions()[0])
    with pytest.raises(MatchStateError) as early:
        match.result()
    assert str(early.value).startswith("the match is not over (deal 3 of 4 in play): ")


def test_the_match_end_event_carries_the_last_deal_and_the_totals() -> None:  # SV-33
    """The last event of a match (what the bots are told at the end) names the last deal and
    every seat's total, the same as the result's (mutmut: neither was checked)."""
    match = GAME.new_match(PRESETS["fan-tan"], 4, 5)
    play_random(match, random.Random(5), check=False)
    end = match.events()[-1]
    assert end.kind == "match_end" and end.seat is None
    assert end.deal == match.deal_index() == len(match.deal_results()) - 1 > 0
    assert dict(end.detail) == {"totals": list(match.result().totals)}


@pytest.mark.parametrize("name", list(PRESETS))
def test_json_round_trip_mid_match_and_at_the_end(name: str) -> None:
    match = GAME.new_match(PRESETS[name], 5, 17)
    rng = random.Random(17)
    steps = 0
    while not match.is_over():
        if steps % 40 == 0:
            again = GAME.match_from_json(match.to_json())
            assert again == match and again.to_json() == match.to_json()
            assert again.legal_actions() == match.legal_actions()
            assert again.observation(1) == match.observation(1)
        roll = rng.random()
        if roll < 0.03:
            match.apply_timeout()
        elif roll < 0.06:
            match.apply("ZZ")
        else:
            match.apply(rng.choice(match.legal_actions()))
        steps += 1
    data = json.loads(match.to_json())
    assert {"rules", "seed", "initial_hands", "actions", "events"} <= set(data)
    assert GAME.match_from_json(match.to_json()).result() == match.result()


def test_a_tampered_record_is_refused() -> None:
    match = GAME.new_match(PRESETS["sevens"], 4, 3)
    play_random(match, random.Random(3), check=False)
    data = json.loads(match.to_json())
    data["events"][5]["seat"] = (data["events"][5].get("seat", 0) + 1) % 4
    with pytest.raises(MatchStateError, match="does not replay"):
        SevensMatch.from_dict(data)
    data = json.loads(match.to_json())
    data["actions"][0]["seat"] = (data["actions"][0]["seat"] + 1) % 4
    with pytest.raises(MatchStateError, match="does not replay"):
        SevensMatch.from_dict(data)


def test_same_seed_same_match_other_seed_other_deal() -> None:
    a = GAME.new_match(PRESETS["fan-tan"], 4, 99)
    b = GAME.new_match(PRESETS["fan-tan"], 4, 99)
    play_random(a, random.Random(1), check=False)
    play_random(b, random.Random(1), check=False)
    assert a.to_json() == b.to_json()
    c = GAME.new_match(PRESETS["fan-tan"], 4, 100)
    assert c.initial_hands()[0] != a.initial_hands()[0]


def test_duplicate_deals_rotate_the_same_hands() -> None:
    specs = [DealSpec(5, rotation=r, dealer=r) for r in range(4)]
    match = GAME.new_match(PRESETS["sevens"], 4, 0, specs)
    play_random(match, random.Random(0), check=False)
    hands = match.initial_hands()
    for r in range(4):
        assert [hands[r][(i + r) % 4] for i in range(4)] == hands[0]
    starts = [e.detail["dealer"] for e in match.events() if e.kind == "deal_start"]
    assert starts == [0, 1, 2, 3]


def test_rules_as_a_dict_are_accepted_and_bad_types_refused() -> None:
    match = GAME.new_match(PRESETS["sevens"].to_dict(), 3, 1)  # type: ignore[arg-type]
    assert match.rules == PRESETS["sevens"]
    with pytest.raises(InvalidRulesError, match="needs SevensRules"):
        GAME.new_match(42, 3, 1)  # type: ignore[arg-type]


def test_pass_is_listed_last_only_when_legal() -> None:
    match = GAME.new_match(PRESETS["shichi-narabe"], 4, 6)
    legal = match.legal_actions()
    assert legal[-1] == PASS and PASS not in legal[:-1]


def test_anything_a_bot_sends_is_refused_and_still_replays() -> None:
    match = GAME.new_match(PRESETS["fan-tan"], 4, 12)
    for junk in (None, 7, ["7D"], "7D+" * 5000, "\x00", "pass+pass"):
        events = match.apply(junk)  # type: ignore[arg-type]
        assert events[0].kind == "invalid_action" and events[0].reason == "malformed"
        assert len(events[0].action or "") <= 64
    again = GAME.match_from_json(match.to_json())
    assert again == match and again.events() == match.events()


def test_deal_specs_are_checked_up_front() -> None:
    with pytest.raises(InvalidRulesError, match=r"dealer 4 is not a seat: use 0\.\.3"):
        GAME.new_match(PRESETS["sevens"], 4, 1, [DealSpec(1), DealSpec(2, dealer=4)])
    with pytest.raises(InvalidRulesError, match="at least one DealSpec"):
        GAME.new_match(PRESETS["sevens"], 4, 1, [])


def test_short_hand_ante_needs_chips_and_a_positive_ante() -> None:  # SV-28
    """Pins the validator: ``short_hand_ante`` adjusts the ante, so it is refused with
    ``ante = 0`` (a mutation dropping that condition accepted it) and without chips."""
    base = PRESETS["fan-tan"].to_dict()
    for mode in ("minus_one", "plus_one"):
        assert SevensRules.from_dict({**base, "short_hand_ante": mode, "ante": 1})
        with pytest.raises(InvalidRulesError, match="short_hand_ante"):
            SevensRules.from_dict({**base, "short_hand_ante": mode, "ante": 0})
        with pytest.raises(InvalidRulesError, match="short_hand_ante"):
            SevensRules.from_dict({**PRESETS["sevens"].to_dict(), "short_hand_ante": mode})
    assert SevensRules.from_dict({**base, "short_hand_ante": "none", "ante": 0})


def test_the_observation_carries_the_matchs_own_values() -> None:
    """The common fields hold this match's values (not only their keys): the rules' dict,
    the deal in play, the totals, the scheduled deals (0 for an until-broke match making
    its own deals, else the number of deal specs or of the rules' deals), and a seatless
    deal start as seat -1 in the history; ``is_over()`` is a bool from the start."""
    match = GAME.new_match(PRESETS["fan-tan"], 4, 5)
    assert match.is_over() is False
    rng = random.Random(5)
    while match.deal_index() == 0:
        match.apply(rng.choice(match.legal_actions()))
    for _ in range(5):
        match.apply(rng.choice(match.legal_actions()))
    obs = match.observation(2)
    assert obs["rules"] == PRESETS["fan-tan"].to_dict() and obs["deal_index"] == 1
    assert obs["totals"] == match.totals() and obs["totals"] != [0, 0, 0, 0]
    assert obs["num_deals"] == 4 and obs["history"][0] == {"seat": -1, "kind": "deal_start"}
    broke = rules("fan-tan", until_broke=True, starting_chips=20)
    assert GAME.new_match(broke, 4, 5).observation(0)["num_deals"] == 0
    specs = [DealSpec(1), DealSpec(2), DealSpec(3)]
    assert GAME.new_match(broke, 4, 5, specs).observation(0)["num_deals"] == 3


def test_the_table_shows_each_row_in_the_rules_rank_order() -> None:
    """``table``: per suit, the cards on the table from the row's low end to its high end
    (ace high in `domino`, SV-3). The row texts are cached per rules (``Tables.row_text``):
    the cache is emptied first, so the rows are built here."""
    for name in ("fan-tan", "domino"):
        r = PRESETS[name]
        match = GAME.new_match(r, 4, 8)
        rng = random.Random(8)
        for _ in range(40):
            match.apply(rng.choice(match.legal_actions()))
        tables_for(r).row_text.clear()
        obs = match.observation(0)
        held = {c for s in range(4) for c in match.observation(s)["hand"]}
        order = {rank: i for i, rank in enumerate(r.rank_order)}
        for suit, row in obs["table"].items():
            cards = [c for c in map(str, make_deck(r.deck)) if c[1] == suit and c not in held]
            assert row == sorted(cards, key=lambda c: order[Card.parse(c).rank]), (name, suit)
        assert any(len(row) > 1 for row in obs["table"].values())


def test_errors_of_a_match_set_up_wrong_say_what_to_do() -> None:
    with pytest.raises(MatchStateError, match=r"^seat 4 is not a seat of 0\.\.3$"):
        GAME.new_match(PRESETS["sevens"], 4, 1).observation(4)
    with pytest.raises(
        InvalidRulesError, match=r"^deals must list at least one DealSpec \(or be None\)$"
    ):
        GAME.new_match(PRESETS["sevens"], 4, 1, [])
    with pytest.raises(
        InvalidRulesError,
        match=r"^deal 1: dealer 4 is not a seat: use 0\.\.3 or None for the normal rotation$",
    ):
        GAME.new_match(PRESETS["sevens"], 4, 1, [DealSpec(1), DealSpec(2, dealer=4)])
    with pytest.raises(MatchStateError, match=r"^hands must list one hand per seat \(4\), not 3$"):
        SevensMatch(PRESETS["sevens"], 4, 1, hands=[["7D"], ["7C"], ["7H"]])


def test_every_event_carries_the_deal_it_happened_in() -> None:
    """Over 66 deals of the same seed (the engine shares its bot ``play`` events per deal
    index up to 64, fresh above): each event's ``deal`` is the deal it happened in, antes
    and deal starts included, and a deal start is about no seat. The shared events are
    emptied first, so this match builds them."""
    match_module._BOT_PLAYS.clear()
    specs = [DealSpec(5)] * 66
    match = GAME.new_match(PRESETS["fan-tan"], 4, 1, specs)
    while not match.is_over():
        seat, played, action = match.to_act(), match.deal_index(), match.legal_actions()[0]
        events = match.apply(action)
        if action != PASS:  # the fast path's shared event, exact
            assert events[0] == Event("play", seat, played, action, None, Source.BOT, {})
    deal = -1
    for event in match.events():
        if event.kind == "deal_start":
            deal += 1
            assert event.seat is None
        assert event.deal == deal, event
    assert deal == 65
    for result, start in zip(
        match.deal_results(),
        (e for e in match.events() if e.kind == "deal_start"),
        strict=True,
    ):
        assert result.detail["first"] == start.detail["first"]
        assert result.detail["dealer"] == start.detail["dealer"]


WINNER_ONLY = "moves chips, but scoring='winner_only' keeps none: set scoring='chips' (or "
OPTIONS = (
    "name, deck, starter_rank, ace, starters, multi_card_turn, eights_before_sixes, opening, "
    "must_play, pass_chips, illegal_pass_penalty, illegal_pass_chips, illegal_pass_payee, "
    "illegal_pass_also_pays_pass, voluntary_pass_chips, free_passes, pass_elimination, "
    "max_voluntary_passes, ante, short_hand_ante, card_penalty, ace_pips, seven_penalty, "
    "scoring, deals, until_broke, starting_chips, match_tiebreak"
)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([1], "sevens rules must be an object, not list"),
        ({"zz": 1, "aa": 2}, f"unknown sevens option(s) aa, zz: the options are {OPTIONS}"),
        ({"ante": "1"}, "option ante must be int, not '1'"),
        ({"multi_card_turn": 1}, "option multi_card_turn must be bool, not 1"),
        ({"ante": True}, "option ante must be int, not True"),
        ({"ante": -1}, "option ante must be 0 or more, not -1"),
        ({"name": ""}, "name must not be empty (use 'custom')"),
        ({"deck": "x"}, "deck='x' is not allowed: use one of french52, german32, spanish40"),
        ({"ace": "x"}, "ace='x' is not allowed: use one of low, high"),
        (
            {"starters": "x"},
            "starters='x' is not allowed: use one of in_hand, removed_before_deal, "
            "placed_from_hands",
        ),
        (
            {"opening": "x"},
            "opening='x' is not allowed: use one of seven_of_diamonds, left_of_dealer_diamond, "
            "any_seven, seven_of_hearts",
        ),
        (
            {"illegal_pass_penalty": "x"},
            "illegal_pass_penalty='x' is not allowed: use one of lose_turn, chips, forfeit_deal",
        ),
        (
            {"illegal_pass_payee": "x"},
            "illegal_pass_payee='x' is not allowed: use one of pot, winner",
        ),
        (
            {"short_hand_ante": "x"},
            "short_hand_ante='x' is not allowed: use one of none, minus_one, plus_one",
        ),
        (
            {"card_penalty": "x"},
            "card_penalty='x' is not allowed: use one of none, per_card, pips, face_ten",
        ),
        (
            {"scoring": "x"},
            "scoring='x' is not allowed: use one of winner_only, chips, penalty_points",
        ),
        (
            {"match_tiebreak": "x"},
            "match_tiebreak='x' is not allowed: use one of none, extra_deal, "
            "fewest_cards_last_deal, showdown",
        ),
        ({"ace_pips": 2}, "ace_pips=2 is not allowed: use one of 1, 15"),
        (
            {"deck": "german32"},
            "deck german32 runs 7 8 9 T J Q K A (the ace above the king): set ace='high'",
        ),
        (
            {"deck": "spanish40", "ace": "high"},
            "deck spanish40 runs A 2 … 7 J Q K (the ace is 1): set ace='low'",
        ),
        (
            {"starter_rank": "10"},
            "starter_rank='10' is not a rank of deck french52: use one of "
            "A 2 3 4 5 6 7 8 9 T J Q K",
        ),
        (
            {"starter_rank": "2", "deck": "german32", "ace": "high"},
            "starter_rank='2' is not a rank of deck german32: use one of A 7 8 9 T J Q K",
        ),
        (
            {"starter_rank": "x"},
            "starter_rank='x' is not a rank of deck french52: use one of A 2 3 4 5 6 7 8 9 T J Q K",
        ),
        (
            {"starters": "placed_from_hands"},
            "starters='placed_from_hands' puts every starter on the table before play, so "
            "opening='seven_of_diamonds' cannot apply: set opening='any_seven' (the player "
            "left of the dealer acts first)",
        ),
        (
            {"must_play": False},
            "must_play=false lets a seat pass forever (SV-24): set max_voluntary_passes or "
            "pass_elimination to a number above 0",
        ),
        (
            {"scoring": "chips", "illegal_pass_penalty": "chips"},
            "illegal_pass_penalty='chips' needs illegal_pass_chips above 0 (pt: 3, it nl: 5)",
        ),
        ({"ante": 1}, f"ante=1 {WINNER_ONLY}'penalty_points'), or ante=0"),
        ({"pass_chips": 2}, f"pass_chips=2 {WINNER_ONLY}'penalty_points'), or pass_chips=0"),
        (
            {"voluntary_pass_chips": 1},
            f"voluntary_pass_chips=1 {WINNER_ONLY}'penalty_points'), or voluntary_pass_chips=0",
        ),
        (
            {"seven_penalty": 1},
            f"seven_penalty=1 {WINNER_ONLY}'penalty_points'), or seven_penalty=0",
        ),
        (
            {"card_penalty": "pips"},
            "card_penalty='pips' needs scoring='chips' or 'penalty_points' "
            "(scoring='winner_only' keeps no score but deals won)",
        ),
        (
            {"illegal_pass_penalty": "chips", "illegal_pass_chips": 3},
            "illegal_pass_penalty='chips' needs scoring='chips' or 'penalty_points': "
            "or use 'lose_turn' / 'forfeit_deal'",
        ),
        (
            {"scoring": "penalty_points", "ante": 1},
            "ante needs a pot, and scoring='penalty_points' has none: "
            "set ante=0 or scoring='chips'",
        ),
        (
            {"scoring": "chips", "short_hand_ante": "plus_one"},
            "short_hand_ante='plus_one' adjusts the ante: "
            "set scoring='chips' and ante to 1 or more",
        ),
        (
            {"short_hand_ante": "minus_one", "ante": 1, "scoring": "penalty_points"},
            "ante needs a pot, and scoring='penalty_points' has none: "
            "set ante=0 or scoring='chips'",
        ),
        (
            {"until_broke": True},
            "until_broke plays until a seat runs out of chips (SV-32): set scoring='chips' and "
            "starting_chips above 0",
        ),
        (
            {"until_broke": True, "scoring": "chips"},
            "until_broke plays until a seat runs out of chips (SV-32): set scoring='chips' and "
            "starting_chips above 0",
        ),
        (
            {"scoring": "chips", "until_broke": True, "starting_chips": 10},
            "until_broke with no ante, no pass chips and no card penalty moves no chips, so "
            "nobody can go broke: set ante, pass_chips or card_penalty",
        ),
        ({"starting_chips": 5}, "starting_chips needs scoring='chips'"),
        (
            {"match_tiebreak": "showdown"},
            "match_tiebreak='showdown' scores a remaining-card penalty round: set "
            "scoring='penalty_points' or pick another match_tiebreak",
        ),
    ],
)
def test_every_rules_check_says_exactly_what_is_wrong(data: Any, message: str) -> None:
    """Each check of the validator (docs/RULES.md part 1, the SV-n each message names)
    refuses with its whole sentence, the option and value it is about included."""
    with pytest.raises(InvalidRulesError) as error:
        SevensRules.from_dict(data)
    assert str(error.value) == message


def test_the_validator_also_checks_rules_built_directly_and_allows_the_bounds() -> None:
    """The constructor runs the same checks as ``from_dict`` (types, negative numbers); 0
    is allowed for every count, and each option's edge values that are legal pass."""
    with pytest.raises(InvalidRulesError) as error:
        SevensRules(ante="1")  # type: ignore[arg-type]
    assert str(error.value) == "option ante must be int, not '1'"
    with pytest.raises(InvalidRulesError) as error:
        SevensRules(deals=True)
    assert str(error.value) == "option deals must be int, not True"
    with pytest.raises(InvalidRulesError) as error:
        SevensRules(free_passes=-1)
    assert str(error.value) == "option free_passes must be 0 or more, not -1"
    for ok in (
        {"ante": 0, "deals": 0},
        {"must_play": False, "max_voluntary_passes": 1},
        {"must_play": False, "pass_elimination": 1},
        {"scoring": "chips", "illegal_pass_penalty": "chips", "illegal_pass_chips": 1},
        {"scoring": "chips", "until_broke": True, "starting_chips": 1, "ante": 1},
        {"scoring": "chips", "until_broke": True, "starting_chips": 1, "pass_chips": 1},
        {"scoring": "chips", "until_broke": True, "starting_chips": 1, "card_penalty": "per_card"},
        {"scoring": "chips", "starting_chips": 5},
        {"scoring": "chips", "ante": 1, "short_hand_ante": "minus_one"},
        {"scoring": "penalty_points", "match_tiebreak": "showdown"},
        {"scoring": "penalty_points", "card_penalty": "pips"},
        {"scoring": "penalty_points", "illegal_pass_penalty": "chips", "illegal_pass_chips": 2},
        {"deck": "german32", "ace": "high", "starter_rank": "A"},
        {"deck": "spanish40", "starter_rank": "5"},
        {"starters": "removed_before_deal", "opening": "any_seven"},
        {"seven_penalty": 0, "pass_chips": 0, "voluntary_pass_chips": 0},
    ):
        assert SevensRules.from_dict(ok).to_dict() == {**SevensRules().to_dict(), **ok}


def test_a_stacked_match_keeps_its_stack_and_sources_in_its_record() -> None:
    """A stacked first deal is written under ``stacked`` (hands and table) and read back
    into an equal match, sources other than ``bot`` included (docs/engine.md "Match
    records"); a stack without its table is refused naming the field, and a tampered
    record names the game."""
    r = rules("sevens", opening="any_seven")
    match = stacked(r, ["6C 3C 8S JS", "5C 2C", "4C AC"], dealer=0)
    match.apply("5C", Source.AUTOPILOT)
    match.apply_timeout()
    data = json.loads(match.to_json())
    table = data["stacked"]["table"]
    assert (
        data["stacked"]
        == {
            "hands": [["3C", "6C", "8S", "JS"], ["2C", "5C"], ["AC", "4C"]],
            "table": table,
        }
        and len(table) == 52 - 8
    )
    assert data["initial_hands"] == [data["stacked"]["hands"]]
    assert data["actions"][0] == {"seat": 1, "action": "5C", "source": "autopilot"}
    again = SevensMatch.from_json(match.to_json())
    assert again == match and again.to_json() == match.to_json()
    del data["stacked"]["table"]
    with pytest.raises(
        MatchStateError,
        match=r"^sevens match record lacks or garbles a field: KeyError\('table'\)$",
    ):
        SevensMatch.from_dict(data)
    data = json.loads(match.to_json())
    data["events"][-1]["seat"] = 99
    with pytest.raises(MatchStateError, match=r"^sevens match record does not replay: "):
        SevensMatch.from_dict(data)


def test_matches_are_equal_only_when_every_part_of_their_record_is() -> None:
    """``==`` compares rules, table size, seed, deal specs, stack and actions, each on its
    own; ``repr`` says where a match stands."""
    deck = [str(c) for c in make_deck("french52")]
    hands = [deck[:17], deck[17:35], deck[35:]]
    swapped = [[*hands[0][:-1], hands[2][0]], hands[1], [hands[0][-1], *hands[2][1:]]]
    base = SevensMatch(PRESETS["sevens"], 3, 1, [DealSpec(4)], hands=hands)
    assert base == SevensMatch(PRESETS["sevens"], 3, 1, [DealSpec(4)], hands=hands)
    others = [
        SevensMatch(PRESETS["parliament"], 3, 1, [DealSpec(4)], hands=hands),
        SevensMatch(PRESETS["sevens"], 3, 2, [DealSpec(4)], hands=hands),
        SevensMatch(PRESETS["sevens"], 3, 1, [DealSpec(5)], hands=hands),
        SevensMatch(PRESETS["sevens"], 3, 1, [DealSpec(4)], hands=swapped),
        SevensMatch(PRESETS["sevens"], 4, 1, [DealSpec(4)]),
    ]
    for other in others:
        assert base != other
    played = SevensMatch(PRESETS["sevens"], 3, 1, [DealSpec(4)], hands=hands)
    played.apply(played.legal_actions()[0])
    assert base != played
    assert repr(base) == "<SevensMatch sevens players=3 seed=1 deal=0 actions=0>"
    while not played.is_over():
        played.apply(played.legal_actions()[0])
    assert repr(played).endswith(f"actions={len(json.loads(played.to_json())['actions'])} over>")


def test_a_changed_preset_is_called_custom_unless_named() -> None:
    assert PRESETS["fan-tan"].replace(ante=2).name == "custom"
    assert PRESETS["fan-tan"].replace(ante=2, name="mine").name == "mine"


def test_legal_actions_are_built_when_the_mask_cache_is_cold() -> None:
    """The simple rules' legal list comes from the cards' mask even when no list of that
    mask is cached (a fresh process: the cache is emptied first, so a run cannot be masked
    by a cache warmed by earlier tests)."""
    match = stacked(
        rules("sevens", opening="any_seven"),
        ["6C 3C 8S JS", "5C 2C 9S QS", "4C AC TS KS"],
        dealer=2,
    )
    tables._MASK_ACTIONS.clear()
    assert match.legal_actions() == ["6C", "8S"]
