"""The rules-of-thumb Sevens player (the ladder's ``heuristic`` rung for the Sevens family).

It sees only its own hand, the table and the public counts. Each row has two *lanes*, the
cards above its starter and the cards below, played outwards from the starter; a card's
lanes are the cards beyond it (a starter has both lanes of its row). The tips it encodes
(docs/ladder.md):

* a card that leads towards more of your own cards in its lane is played first: you need
  that lane opened anyway. Of those, open the lane where the most other cards (held by the
  others) lie between the card and your farthest card: those take the others longest to
  play, so start them first;
* a card with none of your cards beyond it (the last you hold in its lane) only opens the
  way for the others: keep it, it blocks them, and when you must play one, play the one
  that opens the way to the fewest of their cards (a starter you hold alone blocks a
  whole row and is played last);
* with a multi-card turn, a run dumps cards: the longer the better, judged by where it
  ends;
* a free pass (or a pass for at most one chip) is worth taking when every play would
  open the way for others, as long as it cannot get the seat eliminated.

Tuned on the fast engine against three ``random`` seats (``bench/sevens_heuristic.py``).
Everything works on the engine's bit masks (``tables.py``), so the search bots use the
same function for their playouts at engine speed (``fast.heuristic_move``).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from functools import lru_cache

from referee.games.base import PASS, RUN_SEPARATOR
from referee.games.sevens.rules import SevensRules
from referee.games.sevens.tables import CARD_INDEX, Tables

LEADS_ON = 100.0
"""The score of a card with more of the seat's own cards beyond it in its lane: such
cards come before every card that is the last of its lane."""

DEPENDENCY = 1.0
"""Per card of the others between the played card and the seat's farthest card in the
lane (the lane that needs the others most is opened first)."""

GAP = 0.5
"""Per card of the others between the played card and the seat's next card in the lane."""

RELEASE = 1.0
"""The cost per card of the others that the last card of a lane opens the way to."""

RUN_BONUS = 0.75
"""Per extra card of a run (multi-card turns)."""

_VOLUNTARY_PASS_GAIN = 3.0
"""A pass that costs one chip is taken when the best play scores below minus this."""

PRICED_PASS_BELOW = 0.0
"""``priced-pass`` passes while able (an illegal pass, SV-18) when its best play scores
below minus this: every play would open the way for the others."""

PRICED_PASSES_PER_DEAL = 2
"""At most this many illegal passes a deal for ``priced-pass`` (2 and 3 won as many deals
against random seats; 2 keeps a run of forced plays that no bot is asked for, under
``autoplay_forced``, from adding up to three strikes within a deal)."""

_OWN_DECISIONS = frozenset({"play", "pass", "illegal_pass", "invalid_action", "timeout"})

_BIT = tuple(1 << i for i in range(52))

Lanes = tuple[tuple[tuple[int, ...], ...], ...]
"""Per card index, its lanes: each the card indices beyond it outwards, nearest first."""


@lru_cache(maxsize=64)
def lanes(t: Tables) -> Lanes:
    """The lanes of every card of the rules' rows (module docstring)."""
    out: list[tuple[tuple[int, ...], ...]] = [()] * 52
    sp = t.starter_pos
    for s in range(4):
        order = [13 * s + b for b in t.order]
        for pos, i in enumerate(order):
            up = tuple(order[pos + 1 :])
            down = tuple(reversed(order[:pos]))
            out[i] = (up,) if pos > sp else (down,) if pos < sp else (up, down)
    return tuple(out)


def card_score(card_lanes: tuple[tuple[int, ...], ...], rest: int, table: int) -> float:
    """How good playing a card with lanes ``card_lanes`` is for a seat left holding
    ``rest``; ``table`` is the table (the cards in neither are the others')."""
    score = 0.0
    for lane in card_lanes:
        mine = False
        gap = dependency = tail = 0
        for j in lane:
            bit = _BIT[j]
            if rest & bit:
                if not mine:
                    gap = tail
                    mine = True
                dependency += tail
                tail = 0
            elif not table & bit:
                tail += 1
        if mine:
            score += LEADS_ON + DEPENDENCY * dependency + GAP * gap
        else:
            score -= RELEASE * tail
    return score


def score_play(t: Tables, hand: int, table: int, action: str) -> float:
    """How good playing ``action`` (a card or a run) is for the holder of ``hand``."""
    if RUN_SEPARATOR in action:
        cards = [CARD_INDEX[c] for c in action.split(RUN_SEPARATOR)]
    else:
        cards = [CARD_INDEX[action]]
    played = 0
    for i in cards:
        played |= 1 << i
    score = card_score(lanes(t)[cards[-1]], hand & ~played, table | played)
    return score + RUN_BONUS * (len(cards) - 1)


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
    return choose_scored(rules, t, hand, table, legal, passes, free_left, rng)[0]


def choose_scored(
    rules: SevensRules,
    t: Tables,
    hand: int,
    table: int,
    legal: Sequence[str],
    passes: int,
    free_left: int,
    rng: random.Random,
) -> tuple[str, float]:
    """:func:`choose`'s action, and the score of the best play among ``legal`` (``-inf``
    when there is none) from the same pass over the plays: ``priced-pass`` decides on it
    (:func:`priced_pass_pays`)."""
    best = ""
    best_score = float("-inf")
    can_pass = False
    for action in legal:
        if action == PASS:
            can_pass = True
            continue
        score = score_play(t, hand, table, action)
        if score > best_score or (score == best_score and rng.random() < 0.5):
            best, best_score = action, score
    if len(legal) == 1:
        return legal[0], best_score
    if can_pass and best_score < 0:
        safe = not rules.pass_elimination or passes + 2 <= rules.pass_elimination
        if safe and free_left > 0:
            return PASS, best_score
        cost = rules.voluntary_pass_chips
        if safe and free_left == 0 and cost <= 1 and best_score < -_VOLUNTARY_PASS_GAIN * cost:
            return PASS, best_score
    return best, best_score


def priced_pass_pays(
    rules: SevensRules,
    best_score: float,
    history: Sequence[Mapping[str, object]],
    seat: int,
    passes: int,
) -> bool:
    """Whether ``priced-pass`` passes while able to play: an illegal pass (SV-18), which
    these rules price (SV-19: a lost turn or chips, not the deal) instead of refusing.

    It pays when every play would open the way for the others (``best_score`` below
    ``-PRICED_PASS_BELOW``): the blocker stays, and the others stay blocked for a round.
    Never as the seat's first decision of a deal, never twice in a row (a failed decision
    is a strike: three in a row hand the seat to the autopilot), at most
    ``PRICED_PASSES_PER_DEAL`` a deal (``history``: the deal's events as the seat sees
    them), and never where a pass could get the seat eliminated (SV-23)."""
    if not rules.prices_illegal_pass:
        return False
    if best_score >= -PRICED_PASS_BELOW or best_score == float("-inf"):
        return False
    if rules.pass_elimination and passes + 2 > rules.pass_elimination:
        return False
    decisions = [
        item["kind"]
        for item in history
        if item.get("seat") == seat
        and item["kind"] in _OWN_DECISIONS
        and item.get("reason") != "skipped"  # the turn an illegal pass lost (SV-19)
    ]
    if not decisions or decisions[-1] == "illegal_pass":
        return False
    return decisions.count("illegal_pass") < PRICED_PASSES_PER_DEAL


def row_mask_of(table_rows: dict[str, list[str]]) -> int:
    """The table mask of an observation's ``table`` field."""
    mask = 0
    for cards in table_rows.values():
        for text in cards:
            mask |= 1 << CARD_INDEX[text]
    return mask
