"""Bad input never crashes the engine: any text is applied or refused with a reason, and
any rules dict is accepted or refused with ``InvalidRulesError`` (``referee.games.errors``)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from referee.games.base import EventKind, Source
from referee.games.errors import InvalidRulesError
from referee.games.registry import get_game
from referee.games.sedma.match import SedmaMatch
from referee.games.sedma.rules import SedmaRules, rules_from_dict

GAME = get_game("sedma")
CARDISH = st.sampled_from(["7H", "QH+KH", "KH+QH", "10h", "ts", "AS", "2C", "pass", "+", "QS+KH"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), CARDISH), min_size=1, max_size=40))
def test_any_text_is_played_or_refused_and_replays(texts: list[str]) -> None:
    match = GAME.new_match(GAME.preset("mariash-sedma"), 4, 1)
    assert isinstance(match, SedmaMatch)
    for text in texts:
        if match.is_over():
            break
        seat = match.to_act()
        legal = match.legal_actions()
        verdict = match.check(text)
        events = match.apply(text)
        assert events[0].seat == seat
        if verdict is None:
            assert events[0].kind == EventKind.PLAY and events[0].source == Source.BOT
            assert events[0].action in legal
        else:
            assert events[0].kind == EventKind.INVALID_ACTION
            assert events[0].reason in ("malformed", "not_held", "not_legal")
            assert events[0].detail["message"] == verdict
            assert events[1].kind == EventKind.PLAY and events[1].source == Source.AUTOPILOT
    assert GAME.match_from_json(match.to_json()).to_json() == match.to_json()


VALUES = st.one_of(
    st.integers(-5, 60), st.booleans(), st.text(max_size=10), st.none(),
    st.sampled_from(["german32", "sedma24", "target", "running", "sedma", "custom"]),
)  # fmt: skip
KEYS = st.sampled_from([*SedmaRules.__dataclass_fields__, "bogus"])


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_any_rules_dict_is_built_or_refused_with_a_reason(data: dict[str, Any]) -> None:
    try:
        rules = rules_from_dict(data)
    except InvalidRulesError as exc:
        assert str(exc)
        return
    assert rules_from_dict(rules.to_dict()) == rules
    match = GAME.new_match(rules, rules.players, 3)
    steps = 0
    while not match.is_over() and steps < 400:
        match.apply(match.fallback_action())
        steps += 1
