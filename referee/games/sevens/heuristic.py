"""The rules-of-thumb Sevens player (the ladder's ``heuristic`` rung for the Sevens family).

It sees only its own hand, the table and the public counts. The tips it encodes
(docs/ladder.md):

* a card is worth playing when it leads towards your own cards (you will need that
  row opened anyway) and costly when it opens the row for cards you do not hold;
* a starter (7) is your lever: release it when you hold more of its suit than the
  others do, otherwise keep it to block the suit;
* of two equal cards, release the suit you are shortest in first;
* with a multi-card turn, a run dumps cards: the longer the better, judged by where it
  ends;
* a free pass (or a pass for at most one chip) is worth taking when every play would
  open the way for others, as long as it cannot get the seat eliminated.

Everything works on the engine's bit masks (``tables.py``), so the search bots use the
same function for their playouts at engine speed.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache

from referee.games.base import PASS, RUN_SEPARATOR
from referee.games.sevens.rules import SevensRules
from referee.games.sevens.tables import CARD_INDEX, Tables

_VOLUNTARY_PASS_GAIN = 3.0
"""A pass that costs one chip is taken when the best play scores below minus this."""


@lru_cache(maxsize=64)
def _beyond(t: Tables) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Per card index: the mask of its suit's cards farther from the starter than it (in
    its direction; both directions for the starter), the mask of its whole suit, and the
    mask of the next card outwards (0 at a row end or for the starter)."""
    beyond = [0] * 52
    suit_mask = [0] * 52
    nxt = [0] * 52
    sp = t.starter_pos
    for s in range(4):
        shift = 13 * s
        row_mask = 0
        for b in t.order:
            row_mask |= 1 << (shift + b)
        for pos, b in enumerate(t.order):
            i = shift + b
            suit_mask[i] = row_mask
            if pos > sp:
                outs = t.order[pos + 1 :]
            elif pos < sp:
                outs = t.order[:pos]
            else:
                outs = [o for o in t.order if o != b]
            beyond[i] = sum(1 << (shift + o) for o in outs)
            if pos > sp and pos + 1 < t.row_len:
                nxt[i] = 1 << (shift + t.order[pos + 1])
            elif 0 < pos < sp:
                nxt[i] = 1 << (shift + t.order[pos - 1])
    return tuple(beyond), tuple(suit_mask), tuple(nxt)


def score_play(t: Tables, hand: int, others: int, action: str) -> float:
    """How good playing ``action`` (a card or a run) is for the holder of ``hand``;
    ``others`` are the cards neither on the table nor in ``hand``."""
    beyond, suit_mask, nxt = _beyond(t)
    if RUN_SEPARATOR in action:
        cards = [CARD_INDEX[c] for c in action.split(RUN_SEPARATOR)]
    else:
        cards = [CARD_INDEX[action]]
    played = 0
    for i in cards:
        played |= 1 << i
    rest = hand & ~played
    last = cards[-1]
    region = beyond[last] & ~played
    mine = (region & rest).bit_count()
    theirs = (region & others).bit_count()
    score = 2.0 * mine - theirs
    if nxt[last] & rest:
        score += 1.0
    score -= 0.1 * (suit_mask[last] & rest).bit_count()  # shortest suit first
    score += 0.75 * (len(cards) - 1)
    return score


def choose(
    rules: SevensRules,
    t: Tables,
    hand: int,
    table: int,
    legal: Sequence[str],
    passes: int,
    free_left: int,
    rng: random.Random,
) -> str:
    """The heuristic's action among ``legal`` for a seat holding ``hand`` (a mask) with
    ``passes`` passes so far this deal and ``free_left`` free passes left."""
    if len(legal) == 1:
        return legal[0]
    others = t.deck_mask & ~table & ~hand
    best = ""
    best_score = -1e9
    can_pass = False
    for action in legal:
        if action == PASS:
            can_pass = True
            continue
        score = score_play(t, hand, others, action)
        if score > best_score or (score == best_score and rng.random() < 0.5):
            best, best_score = action, score
    if can_pass and best_score < 0:
        safe = not rules.pass_elimination or passes + 2 <= rules.pass_elimination
        if safe and free_left > 0:
            return PASS
        cost = rules.voluntary_pass_chips
        if safe and free_left == 0 and cost <= 1 and best_score < -_VOLUNTARY_PASS_GAIN * cost:
            return PASS
    return best


def row_mask_of(table_rows: dict[str, list[str]]) -> int:
    """The table mask of an observation's ``table`` field."""
    mask = 0
    for cards in table_rows.values():
        for text in cards:
            mask |= 1 << CARD_INDEX[text]
    return mask
