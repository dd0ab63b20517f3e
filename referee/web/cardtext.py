"""Cards as people read them: ``7D`` -> ``7♦``, ``TS`` -> ``10♠``, ``8D+9D`` -> ``8♦ 9♦``.

The one Python place for it (the replay page's log, ``arena play``); the pages' script
``static/cards.js`` draws the same symbols.

>>> action_text("TS"), action_text("8D+9D"), action_text("pass")
('10♠', '8♦ 9♦', 'pass')
"""

from __future__ import annotations

SUITS = {"C": ("♣", "clubs"), "D": ("♦", "diamonds"), "H": ("♥", "hearts"), "S": ("♠", "spades")}


def card_text(card: str) -> str:
    symbol = SUITS.get(card[-1:], ("?", ""))[0]
    rank = "10" if card[:-1] == "T" else card[:-1]
    return f"{rank}{symbol}"


def action_text(action: str) -> str:
    """An action in canonical form, with suit symbols (``pass`` stays ``pass``)."""
    return "pass" if action == "pass" else " ".join(card_text(c) for c in action.split("+"))
