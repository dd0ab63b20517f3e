"""The Sedma game object the registry serves (implements ``referee.games.base.Game``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.games.base import DealSpec, Game, Rules
from referee.games.errors import InvalidRulesError
from referee.games.sedma.match import GAME_NAME, SedmaMatch
from referee.games.sedma.rules import PRESETS, SedmaRules, preset, rules_from_dict


class SedmaGame(Game):
    """Sedma and its variants (docs/RULES.md part 2): presets, rules, new and replayed matches."""

    name: str = GAME_NAME

    def presets(self) -> Mapping[str, Rules]:
        return dict(PRESETS)

    def preset(self, name: str) -> Rules:
        return preset(name)

    def rules_from_dict(self, data: Mapping[str, Any]) -> Rules:
        return rules_from_dict(data)

    def player_counts(self, rules: Rules) -> Sequence[int]:
        return (_sedma_rules(rules).players,)

    def new_match(
        self,
        rules: Rules,
        num_players: int,
        seed: int,
        deals: Sequence[DealSpec] | None = None,
    ) -> SedmaMatch:
        return SedmaMatch(_sedma_rules(rules), num_players, seed, deals)

    def match_from_json(self, text: str) -> SedmaMatch:
        return SedmaMatch.from_json(text)


def _sedma_rules(rules: Rules) -> SedmaRules:
    if isinstance(rules, SedmaRules):
        return rules
    if isinstance(rules, Rules):
        return rules_from_dict(rules.to_dict())
    raise InvalidRulesError(f"expected Sedma rules, got {type(rules).__name__}")


GAME = SedmaGame()
