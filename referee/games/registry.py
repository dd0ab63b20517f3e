"""Games by name: the one list the layers above the engines look games up in."""

from __future__ import annotations

from referee.games.base import Game
from referee.games.errors import InvalidRulesError


def _load() -> dict[str, Game]:
    from referee.games.sevens import GAME as SEVENS

    games: dict[str, Game] = {SEVENS.name: SEVENS}
    from referee.games.sedma import GAME as SEDMA

    games[SEDMA.name] = SEDMA
    return games


GAMES: dict[str, Game] = _load()


def get_game(name: str) -> Game:
    """The game called ``name``; the error lists the games there are."""
    try:
        return GAMES[name]
    except KeyError:
        raise InvalidRulesError(
            f"unknown game {name!r}: use one of {', '.join(sorted(GAMES)) or '(none yet)'}"
        ) from None
