"""The ``Match`` / ``Game`` contract (``referee/games/base.py``), checked the same way for
every game of ``registry.GAMES`` and every preset, the way OpenSpiel runs its basic tests
on every game: sorted legal actions and ``[]`` after the end, ``check`` accepting every
legal action, garbage refused only with the documented errors, the JSON record round
trip, and no observation showing another seat's cards, refused actions included.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

import pytest

from referee.games.base import (
    PASS,
    DealSpec,
    EventKind,
    Game,
    Match,
    Rules,
    action_sort_key,
)
from referee.games.cards import Card
from referee.games.errors import InvalidRulesError, MatchStateError, RulesError
from referee.games.record import FORMAT_VERSION
from referee.games.registry import GAMES

ALL_CARDS = [str(Card.from_index(i)) for i in range(52)]
GARBAGE = ["", "zz", "7", "7D+", "+", "7D+7D", "1H", "7X", "x" * 5000, "\x00", "é", "pass+7D"]
CASES = [
    pytest.param(game, name, rules, id=f"{game.name}-{name}")
    for game in GAMES.values()
    for name, rules in game.presets().items()
]


def _strings(value: Any, skip: tuple[str, ...] = ()) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in skip:
                yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _check_views(match: Match) -> None:
    """No seat's observation holds a card another seat holds now (Sedma's shown marriages
    aside), and no refused action's text is shown."""
    n = match.num_players
    views = [match.observation(seat) for seat in range(n)]
    hands = [set(view["hand"]) for view in views]
    for seat, view in enumerate(views):
        assert view["seat"] == seat and view["num_players"] == n
        assert len(view["hand_sizes"]) == n and view["hand_sizes"][seat] == len(view["hand"])
        others = set().union(*(hands[o] for o in range(n) if o != seat))
        shown = set(_strings(view, skip=("hand", "history", "marriages", "rules")))
        for item in view["history"]:
            if item["kind"] == EventKind.INVALID_ACTION:
                assert "action" not in item, (seat, item)  # a refused action's text
            else:
                shown.update(_strings(item.get("action", "")))
        marriages = {card for pair in view.get("marriages", []) for card in pair}
        leaked = {
            card
            for text in shown
            for card in text.split("+")
            if card in others and card not in marriages
        }
        assert not leaked, f"seat {seat} sees {sorted(leaked)} held by another seat"


def _check_decision(match: Match) -> None:
    legal = match.legal_actions()
    assert legal, "a match that is not over has a legal action"
    assert legal == sorted(legal, key=action_sort_key) and len(set(legal)) == len(legal)
    for action in legal:
        assert match.check(action) is None, action
    assert match.fallback_action() in legal
    for text in GARBAGE:
        if text not in legal:
            assert isinstance(match.check(text), str), text
    assert 0 <= match.to_act() < match.num_players


def _play(match: Match, rng: random.Random, steps: int, refuse: float) -> None:
    """Random legal play, with a garbage or another seat's card sent now and then."""
    while not match.is_over() and steps:
        steps -= 1
        _check_decision(match)
        roll = rng.random()
        if roll < refuse:
            seat = match.to_act()
            foreign = [
                c
                for o in range(match.num_players)
                if o != seat
                for c in match.observation(o)["hand"]
            ]
            match.apply(rng.choice(foreign or GARBAGE))
            _check_views(match)
        elif roll < refuse * 1.5:
            match.apply(rng.choice(GARBAGE))
        elif roll < refuse * 2:
            match.apply_timeout()
        else:
            match.apply(rng.choice(match.legal_actions()))
        if steps % 7 == 0:
            _check_views(match)


def _round_trip(game: Game, match: Match) -> None:
    text = match.to_json()
    data = json.loads(text)
    assert data["game"] == game.name and data["format"] == FORMAT_VERSION
    for key in ("rules", "num_players", "seed", "deals", "actions", "initial_hands", "events"):
        assert key in data, key
    assert data["events"] == [event.to_dict() for event in match.events()]
    again = game.match_from_json(text)
    assert again.to_json() == text
    assert again.legal_actions() == match.legal_actions()
    assert again.is_over() == match.is_over()


@pytest.mark.parametrize(("game", "name", "rules"), CASES)
def test_every_preset_keeps_the_match_contract(game: Game, name: str, rules: Rules) -> None:
    """One dealt deal per table size, played at random with refusals mixed in."""
    for n in game.player_counts(rules):
        rng = random.Random(f"{name}-{n}")
        match = game.new_match(rules, n, seed=n, deals=[DealSpec(seed=100 + n, rotation=1)])
        assert match.game == game.name and match.num_players == n
        _check_views(match)
        _play(match, rng, steps=2000, refuse=0.04)
        assert match.is_over(), "one deal ends within 2000 decisions"
        _round_trip(game, match)
        # After the end: nothing to do, and every call that needs a turn says so.
        assert match.legal_actions() == []
        for action in (PASS, *ALL_CARDS[:13]):
            assert isinstance(match.check(action), str), action
        for call in (match.to_act, match.fallback_action, match.apply_timeout):
            with pytest.raises(MatchStateError):
                call()
        with pytest.raises(MatchStateError):
            match.apply(PASS)
        result = match.result()
        assert len(result.totals) == n
        assert sorted(s for group in result.order for s in group) == list(range(n))
        _check_views(match)


@pytest.mark.parametrize(("game", "name", "rules"), CASES)
def test_a_record_round_trips_in_the_middle_of_a_match(game: Game, name: str, rules: Rules) -> None:
    """The match's own deals (no deal specs), a record taken mid-match and loaded again."""
    n = max(game.player_counts(rules))
    match = game.new_match(rules, n, seed=7)
    _play(match, random.Random(name), steps=60, refuse=0.1)
    _round_trip(game, match)


@pytest.mark.parametrize(("game", "name", "rules"), CASES)
def test_garbage_is_refused_with_the_documented_errors(game: Game, name: str, rules: Rules) -> None:
    """Records, seats, rules and presets that are wrong raise the rules layer's own errors,
    and nothing else."""
    n = game.player_counts(rules)[0]
    match = game.new_match(rules, n, seed=3)
    for seat in (-1, n, 99):
        with pytest.raises(MatchStateError):
            match.observation(seat)
    record = json.loads(match.to_json())
    bad_records: list[Any] = [
        "{",
        "[]",
        "null",
        json.dumps({"game": "chess"}),
        json.dumps({"game": game.name, "format": 99}),
        json.dumps({"game": game.name, "format": FORMAT_VERSION}),
        json.dumps({**record, "actions": ["7H"]}),
        json.dumps({**record, "actions": [{"seat": n + 1, "action": "7H"}]}),
        json.dumps({**record, "actions": "7H"}),
        json.dumps({**record, "deals": [{"rotation": 1}]}),
        json.dumps({**record, "rules": {"nonsense": 1}}),
    ]
    for text in bad_records:
        with pytest.raises(RulesError):
            game.match_from_json(text)
    with pytest.raises(InvalidRulesError):
        game.preset("no-such-preset")
    for unknown in ({"no_such_option": 1}, {1: 2}, {1: 2, "no_such_option": 3}):
        # keys that are not strings too (found in the fourth session: TypeError before)
        with pytest.raises(InvalidRulesError):
            game.rules_from_dict(unknown)  # type: ignore[arg-type]


def test_format_1_records_are_still_read() -> None:
    """Records written before the shapes were merged (Sevens: ``deal_specs`` and
    ``[seat, action, source]`` triples; Sedma: no events) load into the same match."""
    sevens, sedma = GAMES["sevens"], GAMES["sedma"]
    match = sevens.new_match(sevens.preset("fan-tan"), 4, seed=5, deals=[DealSpec(9)])
    _play(match, random.Random(5), steps=40, refuse=0.1)
    data = json.loads(match.to_json())
    old = {**data, "format": 1, "deal_specs": data.pop("deals")}
    old["actions"] = [
        [a["seat"], None if a.get("timeout") else a["action"], a.get("source", "bot")]
        for a in data["actions"]
    ]
    old.pop("deals", None)
    assert sevens.match_from_json(json.dumps(old)).to_json() == match.to_json()
    match = sedma.new_match(sedma.preset("sedma"), 4, seed=5)
    _play(match, random.Random(5), steps=40, refuse=0.1)
    data = json.loads(match.to_json())
    old = {k: v for k, v in data.items() if k not in ("events", "initial_hands")}
    assert sedma.match_from_json(json.dumps({**old, "format": 1})).to_json() == match.to_json()


@pytest.mark.parametrize(("game", "name", "rules"), CASES)
def test_step_by_step_observations_equal_a_fresh_matchs(
    game: Game, name: str, rules: Rules
) -> None:
    """Engines keep a deal's history items between observations (``base.DealHistory``): at
    random steps of two deals (refusals and timeouts mixed in, several events between two
    looks), every seat's observation equals the one the same match loaded afresh from its
    record gives (its history built in one go), and changing a returned observation changes
    nothing the engine shows later."""
    n = max(game.player_counts(rules))
    deals = [DealSpec(seed=5), DealSpec(seed=6, rotation=1)]
    match = game.new_match(rules, n, seed=11, deals=deals)
    rng = random.Random(f"views-{name}")
    looks = 0
    while not match.is_over():
        if rng.random() < 0.3:
            looks += 1
            fresh = game.match_from_json(match.to_json())
            for seat in range(n):
                view = match.observation(seat)
                assert view == fresh.observation(seat), (seat, len(match.events()))
                for item in view["history"]:
                    item["kind"] = "changed by the caller"
                view["history"].append({"seat": 0, "kind": "added by the caller"})
                assert match.observation(seat) == fresh.observation(seat)
        roll = rng.random()
        if roll < 0.05:
            match.apply(rng.choice(GARBAGE))
        elif roll < 0.08:
            match.apply_timeout()
        else:
            match.apply(rng.choice(match.legal_actions()))
    assert looks > 3
    assert match.observation(0) == game.match_from_json(match.to_json()).observation(0)
