"""Decisions taken from real engine states, for the scenarios to put to a bot.

Each finder plays seeded random legal moves through the public engine API until the seat
to act faces the wanted situation (a forced pass, a multi-card run on offer, ...), then
hands back that seat's real observation and legal actions. Deterministic: the same
arguments always give the same decision.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from referee.games.base import PASS, RUN_SEPARATOR, Game, Match, Observation, Rules
from referee.games.loop import Walk
from referee.games.registry import GAMES, get_game


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision of a real match, as the seat to act sees it."""

    game: str
    preset: str
    seat: int
    observation: Observation
    legal_actions: list[str]


Predicate = Callable[[Match], bool]


def available_games() -> list[str]:
    return sorted(GAMES)


def table_size(game: Game, rules: Rules) -> int:
    """Four seats when the rules allow it (the common table), else the smallest allowed."""
    counts = list(game.player_counts(rules))
    return 4 if 4 in counts else min(counts)


def decision_of(match: Match, preset: str) -> Decision:
    seat = match.to_act()
    return Decision(match.game, preset, seat, match.observation(seat), list(match.legal_actions()))


def find_decision(
    game_name: str,
    rules: Rules,
    want: Predicate,
    *,
    seeds: Iterable[int] = range(1, 60),
    max_steps: int = 400,
) -> Decision | None:
    """The first decision, over seeded random games, at which ``want(match)`` holds."""
    game = get_game(game_name)
    players = table_size(game, rules)
    for seed in seeds:
        match = game.new_match(rules, players, seed)
        rng = random.Random(seed)
        walk = Walk(match)
        for _ in range(max_steps):
            turn = walk.next_turn()
            if turn is None:
                break
            if want(match):
                return decision_of(match, rules.name)
            match.apply(rng.choice(turn.legal))
    return None


def is_forced_pass(match: Match) -> bool:
    return match.legal_actions() == [PASS]


def offers_run(match: Match) -> bool:
    return any(RUN_SEPARATOR in action for action in match.legal_actions())


def has_choice(match: Match) -> bool:
    return len(match.legal_actions()) >= 2


def multi_card_rules(game: Game) -> Rules | None:
    """A rules object of ``game`` with multi-card turns on: a preset, else a custom one."""
    for rules in game.presets().values():
        if _multi_card_on(rules.to_dict()):
            return rules
    for rules in game.presets().values():
        data = rules.to_dict()
        for key in data:
            if "multi" in key and isinstance(data[key], bool):
                try:
                    return game.rules_from_dict({**data, key: True})
                except ValueError:
                    continue
    return None


def _multi_card_on(data: dict[str, Any]) -> bool:
    return any("multi" in key and value is True for key, value in data.items())


def default_rules(game_name: str) -> Rules:
    """The game's preset named like the game, else its first preset."""
    game = get_game(game_name)
    presets = game.presets()
    if game_name in presets:
        return presets[game_name]
    return next(iter(presets.values()))


def deal_decisions(
    game_name: str, rules: Rules, seed: int = 7
) -> tuple[Match, Callable[[], Decision | None]]:
    """A fresh match and a function giving its next decision (None after the first deal)."""
    game = get_game(game_name)
    match = game.new_match(rules, table_size(game, rules), seed)

    def next_decision() -> Decision | None:
        if match.is_over() or match.deal_index() > 0:
            return None
        return decision_of(match, rules.name)

    return match, next_decision
