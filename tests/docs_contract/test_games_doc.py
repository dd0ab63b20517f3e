"""The worked example turns of docs/GAMES.md are real engine states.

Each example is marked ``<!-- example game=G preset=P players=N seed=S moves=M -->`` and
followed by a JSON block; the test replays the match (``M`` random legal moves drawn with
``random.Random(S)``) and compares the seat's observation, legal actions and action info.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

from referee.games.action_info import action_info
from referee.games.registry import GAMES, get_game

DOC = Path(__file__).resolve().parents[2] / "docs" / "GAMES.md"
EXAMPLE = re.compile(r"<!-- example (?P<args>[^>]*) -->\n```json\n(?P<body>.*?)\n```", re.S)


def test_each_family_has_a_worked_example_that_the_engine_reproduces() -> None:
    found = EXAMPLE.findall(DOC.read_text())
    games = set()
    for args, body in found:
        spec = dict(item.split("=", 1) for item in args.split())
        engine = get_game(spec["game"])
        match = engine.new_match(
            engine.preset(spec["preset"]), int(spec["players"]), int(spec["seed"])
        )
        rng = random.Random(int(spec["seed"]))
        for _ in range(int(spec["moves"])):
            match.apply(rng.choice(match.legal_actions()))
        observation = match.observation(match.to_act())
        legal = match.legal_actions()
        assert json.loads(body) == {
            "observation": observation,
            "legal_actions": legal,
            "action_info": action_info(observation, legal),
        }, f"docs/GAMES.md example {args} no longer matches the engine"
        games.add(spec["game"])
    assert games == set(GAMES) and len(found) == len(GAMES)


def test_every_history_kind_the_engines_emit_is_explained() -> None:
    text = DOC.read_text()
    kinds: set[str] = set()
    for name in sorted(GAMES):
        engine = get_game(name)
        for index, rules in enumerate(engine.presets().values()):
            players = min(engine.player_counts(rules))
            match = engine.new_match(rules, players, index)
            rng = random.Random(index)
            while not match.is_over():
                if rng.random() < 0.02:
                    match.apply("ZZ")  # refused: an invalid_action entry
                else:
                    match.apply(rng.choice(match.legal_actions()))
                if rng.random() < 0.3 and not match.is_over():
                    seat = match.to_act()
                    kinds.update(e["kind"] for e in match.observation(seat)["history"])
    for kind in sorted(kinds):
        assert f"| `{kind}` |" in text, f"history kind {kind!r} is not explained in GAMES.md"
