"""The Sevens family (Sevens, Parliament, Fan Tan, Sjuan, Shichi Narabe, Domino, Cinquillo).

``GAME`` is the engine the registry offers as ``sevens``; ``SevensRules`` and
``PRESETS`` are the rules object and its named presets (RULES.md part 1).
"""

from referee.games.sevens.rules import PRESETS, SevensRules, preset

__all__ = ["PRESETS", "SevensRules", "preset"]
