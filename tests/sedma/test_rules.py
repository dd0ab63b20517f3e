"""The Sedma rules object, presets and validator (SD-1, SD-2, SD-6, SD-15, SD-17..SD-20)."""

from __future__ import annotations

import pytest

from referee.games.cards import Rank
from referee.games.errors import InvalidRulesError
from referee.games.registry import get_game
from referee.games.sedma.rules import PRESETS, SedmaRules, deck_cards, preset, rules_from_dict


def test_registry_serves_sedma_with_its_presets() -> None:
    game = get_game("sedma")
    assert game.name == "sedma"
    assert set(game.presets()) == {"sedma", "sedma-2", "sedma-3", "mariash-sedma"}
    for name, rules in game.presets().items():
        assert rules.name == name
        assert game.rules_from_dict(rules.to_dict()) == rules


def test_sedma_preset_is_four_players_in_partnerships() -> None:
    # SD-1: partners opposite, seats 0+2 against 1+3.
    rules = preset("sedma")
    assert rules.players == 4 and rules.partnerships
    assert rules.sides() == ((0, 2), (1, 3))
    assert [rules.side_of(seat) for seat in range(4)] == [0, 1, 0, 1]
    assert get_game("sedma").player_counts(rules) == (4,)


def test_german_deck_has_32_cards_and_80_card_points() -> None:
    # SD-2: 7 8 9 10 J Q K A in four suits; SD-4: aces and tens 10 each, 80 in the deck.
    deck = deck_cards("german32")
    assert len(deck) == 32 and len(set(deck)) == 32
    assert {card.rank for card in deck} == {
        Rank.SEVEN, Rank.EIGHT, Rank.NINE, Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING, Rank.ACE
    }  # fmt: skip
    assert preset("sedma").card_point_total == 80


def test_four_cards_each_and_a_talon_of_sixteen() -> None:
    # SD-6
    rules = preset("sedma")
    assert rules.hand_size == 4 and rules.talon_size == 16 and rules.num_tricks == 8


def test_session_defaults_to_four_match_points() -> None:
    # SD-15: first side to the target (default 4); option: a running total.
    rules = preset("sedma")
    assert rules.session == "target" and rules.target == 4
    assert (rules.win_points, rules.bald_points, rules.naked_points) == (1, 2, 3)  # SD-14
    running = rules_from_dict({**rules.to_dict(), "session": "running", "running_hands": 6})
    assert running.name == "custom" and running.running_hands == 6


def test_sedma_2_is_two_players_with_a_talon_of_24() -> None:
    # SD-17
    rules = preset("sedma-2")
    assert rules.players == 2 and not rules.partnerships
    assert rules.talon_size == 24 and rules.num_tricks == 16
    assert rules.sides() == ((0,), (1,))


def test_sedma_3_uses_24_cards_without_eights_and_nines() -> None:
    # SD-18: 7 10 J Q K A; 7s stay wild, every point card stays; talon of 12.
    rules = preset("sedma-3")
    deck = deck_cards(rules.deck)
    assert len(deck) == 24
    assert {card.rank for card in deck} == {
        Rank.SEVEN, Rank.TEN, Rank.JACK, Rank.QUEEN, Rank.KING, Rank.ACE
    }  # fmt: skip
    assert rules.players == 3 and not rules.partnerships
    assert rules.talon_size == 12 and rules.card_point_total == 80


def test_mariash_sedma_marriage_is_worth_20_with_a_40_option() -> None:
    # SD-19
    rules = preset("mariash-sedma")
    assert rules.marriages and rules.marriage_points == 20
    forty = rules_from_dict({"name": "mariash-sedma", "marriage_points": 40})
    assert forty.marriage_points == 40 and forty.name == "custom"
    assert not preset("sedma").marriages


def test_prsi_is_not_offered() -> None:
    # SD-20: Prší is a different game and out of scope.
    with pytest.raises(InvalidRulesError, match="use one of sedma, sedma-2"):
        get_game("sedma").preset("prsi")


def test_rules_from_dict_fills_missing_fields_from_the_named_preset() -> None:
    assert rules_from_dict({"name": "sedma-3"}) == PRESETS["sedma-3"]
    assert rules_from_dict({}).name == "custom"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"players": 5}, "players must be 2, 3 or 4"),
        ({"players": 3}, "partnerships need players = 4"),
        ({"players": 3, "partnerships": False}, "must split evenly"),
        ({"deck": "french52"}, "deck must be one of german32, sedma24"),
        ({"hand_size": 9}, "hand_size must be between 1 and 8"),
        ({"target": 0}, "target must be at least 1"),
        ({"session": "forever"}, "session must be 'target' or 'running'"),
        ({"marriage_points": 25}, "marriage_points must be a non-negative multiple of 10"),
        ({"bald_points": 5, "naked_points": 4}, "win_points <= bald_points <= naked_points"),
        ({"players": "4"}, "players must be int"),
        ({"marriages": 1}, "marriages must be bool"),
        ({"trumps": True}, "unknown Sedma rules option"),
    ],
)
def test_validator_refuses_bad_rules_and_says_what_to_fix(
    data: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidRulesError, match=message):
        rules_from_dict({"name": "custom", **data})


def test_rules_are_frozen() -> None:
    rules = SedmaRules()
    with pytest.raises(AttributeError):
        rules.target = 9  # type: ignore[misc]


TALON_3 = (
    "the talon (20 cards) must split evenly among 3 players so every seat draws after each "
    "trick (SD-11); change hand_size or deck (sedma24 for 3 players)"
)
POINTS = "match points must satisfy 1 <= win_points <= bald_points <= naked_points"


@pytest.mark.parametrize(
    ("data", "problems"),
    [
        ({"players": "4"}, "players must be int, got '4'"),
        ({"marriages": 1}, "marriages must be bool, got 1"),
        (
            {"players": 4.0, "target": True},
            "players must be int, got 4.0; target must be int, got True",
        ),
        (
            {"players": 5, "partnerships": False},
            "players must be 2, 3 or 4 (SD-1, SD-17, SD-18), got 5",
        ),
        (
            {"players": 1, "partnerships": False, "deck": "x"},
            "players must be 2, 3 or 4 (SD-1, SD-17, SD-18), got 1; "
            "deck must be one of german32, sedma24, got 'x'",
        ),
        (
            {"players": 3},
            f"partnerships need players = 4 (SD-1); set partnerships = false; {TALON_3}",
        ),
        ({"players": 3, "partnerships": False}, TALON_3),
        ({"deck": "x"}, "deck must be one of german32, sedma24, got 'x'"),
        (
            {"players": 2, "partnerships": False, "hand_size": 17},
            "hand_size must be between 1 and 16 for 2 players and a 32-card deck",
        ),
        ({"hand_size": 0}, "hand_size must be between 1 and 8 for 4 players and a 32-card deck"),
        ({"hand_size": 9}, "hand_size must be between 1 and 8 for 4 players and a 32-card deck"),
        (
            {"players": 3, "partnerships": False, "deck": "sedma24", "hand_size": 9},
            "hand_size must be between 1 and 8 for 3 players and a 24-card deck",
        ),
        (
            {"last_trick_bonus": -10},
            "last_trick_bonus must be a non-negative multiple of 10 (SD-4: 10)",
        ),
        (
            {"last_trick_bonus": 5},
            "last_trick_bonus must be a non-negative multiple of 10 (SD-4: 10)",
        ),
        ({"win_points": 0}, POINTS),
        ({"win_points": 3}, POINTS),
        ({"bald_points": 4}, POINTS),
        ({"session": "x"}, "session must be 'target' or 'running' (SD-15), got 'x'"),
        ({"target": 0}, "target must be at least 1 match point (SD-15: 4), got 0"),
        ({"running_hands": 0}, "running_hands must be at least 1, got 0"),
        (
            {"marriage_points": -10},
            "marriage_points must be a non-negative multiple of 10 (SD-19: 20 or 40)",
        ),
        (
            {"marriage_points": 15},
            "marriage_points must be a non-negative multiple of 10 (SD-19: 20 or 40)",
        ),
        ({"max_redeals": -1}, "max_redeals must be >= 0, got -1"),
    ],
)
def test_every_rules_check_says_exactly_what_is_wrong(
    data: dict[str, object], problems: str
) -> None:
    """Each check of the validator (docs/RULES.md part 2, the SD-n each message names)
    refuses with its whole sentence; several problems are all listed, in order."""
    with pytest.raises(InvalidRulesError) as error:
        rules_from_dict(data)
    assert str(error.value) == f"invalid Sedma rules 'custom': {problems}"


def test_the_rules_refusals_outside_the_checks_say_what_to_do() -> None:
    """A nameless rules object, a non-mapping, unknown options, an unknown preset."""
    cases: list[tuple[object, str]] = [
        ({"name": ""}, "invalid Sedma rules '': name must not be empty (use 'custom')"),
        ({"name": ["x"]}, "invalid Sedma rules ['x']: name must be str, got ['x']"),
        ([1], "Sedma rules must be a mapping, got list"),
        (
            {"zz": 1, "aa": 1},
            "unknown Sedma rules option(s) aa, zz: known are bald_points, deck, hand_size, "
            "last_trick_bonus, marriage_points, marriages, max_redeals, naked_points, name, "
            "partnerships, players, running_hands, session, target, win_points",
        ),
    ]
    for data, message in cases:
        with pytest.raises(InvalidRulesError) as error:
            rules_from_dict(data)  # type: ignore[arg-type]
        assert str(error.value) == message
    with pytest.raises(InvalidRulesError) as error:
        preset("x")
    assert (
        str(error.value)
        == "unknown Sedma preset 'x': use one of sedma, sedma-2, sedma-3, mariash-sedma"
    )


def test_the_legal_edge_values_pass_the_validator() -> None:
    """Each bound's legal side: 2 and 4 players, every card dealt (an empty talon), one
    card each, no last-trick bonus, equal match points, one hand, 0 marriage points and 0
    redeals."""
    for ok in (
        {"players": 2, "partnerships": False, "hand_size": 16},
        {"hand_size": 8},
        {"hand_size": 1},
        {"last_trick_bonus": 0, "marriage_points": 0, "max_redeals": 0},
        {"win_points": 1, "bald_points": 1, "naked_points": 1},
        {"target": 1, "running_hands": 1},
        {"players": 3, "partnerships": False, "deck": "sedma24"},
    ):
        rules = rules_from_dict(ok)
        assert all(getattr(rules, key) == value for key, value in ok.items())
