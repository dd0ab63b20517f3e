"""The ``sevens`` game object the registry offers (``referee.games.base.Game``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.games.base import DealSpec, Game, Rules
from referee.games.errors import InvalidRulesError
from referee.games.sevens.match import GAME_NAME, SevensMatch
from referee.games.sevens.rules import PRESETS, SevensRules, preset

PLAYER_COUNTS = tuple(range(3, 9))
"""SV-1: 3 to 8 players, each for themselves."""


class SevensGame(Game):
    """The Sevens family: presets, rules from dicts, and new or replayed matches."""

    name: str = GAME_NAME

    def presets(self) -> Mapping[str, Rules]:
        return dict(PRESETS)

    def preset(self, name: str) -> Rules:
        return preset(name)

    def rules_from_dict(self, data: Mapping[str, Any]) -> Rules:
        return SevensRules.from_dict(data)

    def player_counts(self, rules: Rules) -> Sequence[int]:
        return PLAYER_COUNTS

    def new_match(
        self,
        rules: Rules,
        num_players: int,
        seed: int,
        deals: Sequence[DealSpec] | None = None,
    ) -> SevensMatch:
        return SevensMatch(_sevens_rules(rules), num_players, seed, deals)

    def match_from_json(self, text: str) -> SevensMatch:
        return SevensMatch.from_json(text)


def _sevens_rules(rules: Rules) -> SevensRules:
    if isinstance(rules, SevensRules):
        return rules
    if isinstance(rules, Mapping):
        return SevensRules.from_dict(rules)
    raise InvalidRulesError(
        f"sevens needs SevensRules (or a dict of its options), not {type(rules).__name__}"
    )


GAME = SevensGame()
