"""docs/schemas/<game>.rules.schema.json against the rules classes and every preset.

The schema and the class cannot drift: same fields in the same order, same types and
defaults, the same allowed values as the validator's choice lists; every preset and every
rules object the engines put in an observation validates; a wrong type or a value outside
a choice list is refused by both the schema and the class.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any, Literal, get_args, get_origin, get_type_hints

import pytest
from jsonschema import Draft202012Validator

from referee.games.errors import InvalidRulesError
from referee.games.registry import GAMES, get_game
from referee.games.sedma import rules as sedma_rules
from referee.games.sevens import rules as sevens_rules

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = ROOT / "docs" / "schemas"
JSON_TYPES = {str: "string", int: "integer", bool: "boolean"}


def json_type(cls: type, name: str) -> str:
    """The JSON type of a rules field (a Literal option: the type of its values)."""
    hint = get_type_hints(cls)[name]
    if get_origin(hint) is Literal:
        hint = type(get_args(hint)[0])
    return JSON_TYPES[hint]


CLAUSE = re.compile(r"^S[VD]-\d+$")
CLASSES: dict[str, Any] = {
    "sevens": sevens_rules.SevensRules,
    "sedma": sedma_rules.SedmaRules,
}
CHOICES: dict[str, dict[str, tuple[Any, ...]]] = {
    "sevens": {
        "deck": sevens_rules.DECKS,
        "ace": sevens_rules.ACES,
        "starters": sevens_rules.STARTERS,
        "opening": sevens_rules.OPENINGS,
        "illegal_pass_penalty": sevens_rules.ILLEGAL_PASS_PENALTIES,
        "illegal_pass_payee": sevens_rules.PAYEES,
        "short_hand_ante": sevens_rules.SHORT_HAND_ANTES,
        "card_penalty": sevens_rules.CARD_PENALTIES,
        "scoring": sevens_rules.SCORINGS,
        "match_tiebreak": sevens_rules.TIEBREAKS,
        "ace_pips": sevens_rules.ACE_PIPS,
        "starter_rank": tuple("A23456789TJQK"),
    },
    "sedma": {
        "deck": tuple(sedma_rules.DECK_RANKS),
        "session": sedma_rules.SESSIONS,
        "players": (2, 3, 4),
    },
}


def schema(game: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((SCHEMAS / f"{game}.rules.schema.json").read_text())
    return loaded


def build(game: str, data: dict[str, Any]) -> Any:
    return get_game(game).rules_from_dict(data)


@pytest.mark.parametrize("game", sorted(GAMES))
def test_schema_fields_types_defaults_and_choices_are_the_classes(game: str) -> None:
    doc = schema(game)
    Draft202012Validator.check_schema(doc)
    fields = dataclasses.fields(CLASSES[game])
    props = doc["properties"]
    assert list(props) == [f.name for f in fields]
    assert doc["required"] == [f.name for f in fields] and doc["additionalProperties"] is False
    for f in fields:
        prop = props[f.name]
        assert prop["type"] == json_type(CLASSES[game], f.name), f.name
        assert prop["default"] == f.default, f.name
        assert prop["description"].strip(), f.name
        assert all(CLAUSE.match(c) for c in prop["x-clauses"]), f.name
        assert prop["x-clauses"] or f.name == "name", f"{f.name} names no rules clause"
        if f.name in CHOICES[game]:
            assert prop["enum"] == list(CHOICES[game][f.name]), f.name
        else:
            assert "enum" not in prop, f.name


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_preset_and_every_observed_rules_object_validates(game: str) -> None:
    validator = Draft202012Validator(schema(game))
    engine = get_game(game)
    for name, rules in engine.presets().items():
        validator.validate(rules.to_dict())
        players = min(engine.player_counts(rules))
        match = engine.new_match(rules, players, 1)
        observed = match.observation(match.to_act())["rules"]
        assert observed == rules.to_dict(), name
        validator.validate(json.loads(json.dumps(observed)))


def wrong_values(prop: dict[str, Any]) -> list[Any]:
    """Values of the wrong type, and (for a choice) a value outside the choice list."""
    by_type: dict[str, list[Any]] = {
        "string": [7, True],
        "integer": ["3", 2.5, True],
        "boolean": [1, "yes"],
    }
    out = list(by_type[prop["type"]])
    if "enum" in prop:
        out = [*out, "tarot78" if prop["type"] == "string" else 99]
    if "minimum" in prop:
        out = [*out, prop["minimum"] - 1]
    return out


@pytest.mark.parametrize("game", sorted(GAMES))
def test_schema_and_class_refuse_the_same_wrong_values(game: str) -> None:
    doc = schema(game)
    validator = Draft202012Validator(doc)
    base = get_game(game).preset(game).to_dict()
    for name, prop in doc["properties"].items():
        for value in wrong_values(prop):
            data = {**base, name: value}
            assert not validator.is_valid(data), (name, value)
            with pytest.raises(InvalidRulesError):
                build(game, data)
    assert not validator.is_valid({**base, "colour": "red"})
    with pytest.raises(InvalidRulesError):
        build(game, {**base, "colour": "red"})


def test_protocol_links_the_schemas() -> None:
    text = (ROOT / "docs" / "PROTOCOL.md").read_text()
    for game in GAMES:
        assert f"schemas/{game}.rules.schema.json" in text


def test_every_cited_clause_is_in_the_rules_reference() -> None:
    """The schemas' x-clauses name clauses that docs/RULES.md defines."""
    defined = set(re.findall(r"\b(S[VD]-\d+)\b", (ROOT / "docs" / "RULES.md").read_text()))
    for game in GAMES:
        for name, prop in schema(game)["properties"].items():
            missing = set(prop["x-clauses"]) - defined
            assert not missing, f"{game}.{name} cites {sorted(missing)}, not in docs/RULES.md"
