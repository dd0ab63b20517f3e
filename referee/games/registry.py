"""Games by name: the one list the layers above the engines look games up in."""

from __future__ import annotations

from referee.games.base import Game
from referee.games.errors import InvalidRulesError
from referee.games.sedma import GAME as SEDMA
from referee.games.sevens import GAME as SEVENS

GAMES: dict[str, Game] = {game.name: game for game in (SEVENS, SEDMA)}


def get_game(name: str) -> Game:
    """The game called ``name``; the error lists the games there are."""
    try:
        return GAMES[name]
    except KeyError:
        raise InvalidRulesError(
            f"unknown game {name!r}: use one of {', '.join(sorted(GAMES))}"
        ) from None
