"""``TurnRequest.action_info`` (referee.games.action_info) against what the engine does.

For every listed action of many random decisions under every preset (and rules with
voluntary passes and pass chips), the action is applied to a copy of the match and the
events it produced are compared with the info's kind, cost and ``eliminates``.
"""

from __future__ import annotations

import random
from typing import cast

import pytest

from arena_sdk.observation import Observation
from referee.games.action_info import KINDS, action_info
from referee.games.base import PASS, RUN_SEPARATOR, EventKind, Match
from referee.games.registry import get_game
from referee.games.sevens import PRESETS, SevensRules

CUSTOM = {
    # SV-20 + SV-17: voluntary passes that cost chips, bounded by max_voluntary_passes.
    "voluntary": PRESETS["fan-tan"].replace(
        must_play=False, voluntary_pass_chips=2, max_voluntary_passes=2
    ),
    # SV-22 + SV-23 + SV-11: free passes, elimination and runs together.
    "free-multi": PRESETS["shichi-narabe"].replace(multi_card_turn=True, pass_elimination=1),
}


def _copy(match: Match) -> Match:
    return get_game(match.game).match_from_json(match.to_json())


def _check_decision(match: Match) -> set[str]:
    seat = match.to_act()
    obs = match.observation(seat)
    legal = match.legal_actions()
    infos = action_info(obs, legal)
    assert [i["action"] for i in infos] == legal
    assert all(i["kind"] in KINDS for i in infos)
    cards = [i for i in infos if i["action"] != PASS]
    for info in cards:
        expected = "run" if RUN_SEPARATOR in info["action"] else "card"
        assert (info["kind"], info["cost"], info["eliminates"]) == (expected, 0, False)
    # Every pass, and one card or run per decision, is applied to a copy of the match
    # (the copies are the slow part) and the engine's events are compared with the info.
    checked = [i for i in infos if i["action"] == PASS]
    if cards:
        checked.append(cards[len(match.events()) % len(cards)])
    for info in checked:
        events = _copy(match).apply(info["action"])
        assert not any(e.kind == EventKind.ILLEGAL_PASS for e in events), info  # SV-18
        eliminated = any(e.kind == EventKind.ELIMINATED and e.seat == seat for e in events)
        assert info["eliminates"] == eliminated, (info, events)  # SV-23
        if info["action"] != PASS:
            continue
        passed = [e for e in events if e.kind == EventKind.PASS and e.seat == seat]
        assert len(passed) == 1, events
        # The engine's pass event names the kind (forced/free/voluntary) and the chips paid
        # (SV-17, SV-20, SV-22).
        assert info["kind"] == f"{passed[0].reason}_pass", (info, passed[0])
        assert info["cost"] == passed[0].detail.get("chips", 0), (info, passed[0])
    return {i["kind"] for i in infos}


@pytest.mark.parametrize("name", [*PRESETS, *CUSTOM])
def test_action_info_matches_what_the_engine_does(name: str) -> None:
    rules: SevensRules = CUSTOM.get(name) or PRESETS[name]
    game = get_game("sevens")
    seen: set[str] = set()
    for seed in range(2):
        match = game.new_match(rules, 4, seed)
        rng = random.Random(seed)
        for _ in range(150):
            if match.is_over():
                break
            seen |= _check_decision(match)
            match.apply(rng.choice(match.legal_actions()))
    assert "card" in seen
    if name == "voluntary":
        assert "voluntary_pass" in seen
    if name in ("shichi-narabe", "free-multi"):
        assert "free_pass" in seen
    if name == "free-multi":
        assert "run" in seen


def test_sedma_actions_are_free_cards_and_marriages() -> None:
    game = get_game("sedma")
    match = game.new_match(game.preset("mariash-sedma"), 4, 3)
    rng = random.Random(3)
    kinds: set[str] = set()
    while not match.is_over():
        legal = match.legal_actions()
        for info in action_info(match.observation(match.to_act()), legal):
            assert info["cost"] == 0 and not info["eliminates"]
            kinds.add(info["kind"])
            assert info["kind"] == ("marriage" if RUN_SEPARATOR in info["action"] else "card")
        match.apply(rng.choice(legal))
    assert "card" in kinds


def test_a_pass_with_odd_rules_still_gets_an_answer() -> None:
    """A request whose rules object is incomplete still gets kinds (defaults: no chips)."""
    obs = {"game": "sevens", "seat": 1, "rules": {"start_card": "7D"}, "passes": [0, 1]}
    assert action_info(cast(Observation, obs), ["pass"]) == [
        {"action": "pass", "kind": "forced_pass", "cost": 0, "eliminates": False}
    ]
