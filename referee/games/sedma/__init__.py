"""Sedma, the Czech and Slovak trick-taking game with wild sevens (docs/RULES.md part 2).

``GAME`` is what the registry serves. Modules: ``rules`` (rules object, presets,
validator), ``hand`` (one hand's state: tricks, talon, score), ``match`` (session,
events, autopilot, JSON), ``game`` (the ``Game`` object).
"""

from referee.games.sedma.game import GAME, SedmaGame
from referee.games.sedma.hand import Hand
from referee.games.sedma.match import SedmaMatch
from referee.games.sedma.rules import PRESETS, SedmaRules

__all__ = ["GAME", "PRESETS", "Hand", "SedmaGame", "SedmaMatch", "SedmaRules"]
