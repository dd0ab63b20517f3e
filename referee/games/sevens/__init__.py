"""The Sevens family (Sevens, Parliament, Fan Tan, Sjuan, Shichi Narabe, Domino, Cinquillo).

``GAME`` is the engine the registry offers as ``sevens``; ``SevensRules`` and
``PRESETS`` are the rules object and its named presets (docs/RULES.md part 1);
``SevensMatch`` is the match state (``referee.games.base.Match``).
"""

from referee.games.sevens.game import GAME, SevensGame
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS, SevensRules, preset

__all__ = ["GAME", "PRESETS", "SevensGame", "SevensMatch", "SevensRules", "preset"]
