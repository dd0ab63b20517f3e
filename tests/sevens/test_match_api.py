"""The ``Match`` / ``Game`` interface of the Sevens engine: observations, checks,
serialization, determinism, and the rules object (presets, validator, round trips)."""

from __future__ import annotations

import json
import random

import pytest

from referee.games.base import PASS, DealSpec, Game, Match, Source
from referee.games.cards import Card, make_deck
from referee.games.errors import InvalidRulesError, MatchStateError
from referee.games.registry import get_game
from referee.games.sevens import GAME, PRESETS, SevensMatch, SevensRules, preset
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
        match.apply(match.legal_actions()[0])
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
