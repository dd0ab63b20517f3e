"""A Sevens-family deal built for search: bit masks, integer moves, no events, no log.

``SevensMatch`` is the rules engine: it records every event, keeps the log a record
replays, builds observations and explains invalid actions. A search bot plays thousands
of deals per move and needs none of that. :class:`FastDeal` keeps only what decides the
rest of one deal (hands and table as 52-bit masks, the playable mask updated per row,
passes, free and voluntary passes, eliminations, skips, pot and chips) and plays moves
that are card indices (``PASS_MOVE`` for a pass). :meth:`FastDeal.clone` copies a few short
lists; :meth:`FastDeal.undo_play` takes back a card, so a search can try a move and come
back without a copy.

Scope: one deal, single-card turns (``multi_card_turn`` off, as in every preset), the
moves a legal bot can make (an illegal pass never happens here). Everything else follows
the engine's rules exactly; ``tests/ladder/test_fast_engine.py`` plays both side by side
on every preset (same legal moves, same turn order, same deal result).

:func:`heuristic_move` is the Sevens heuristic (``heuristic.py``) on integer moves: the
same scores, the same pass rule, at the cost of a few bit counts per card.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from referee.games.base import PASS
from referee.games.sevens import heuristic
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import SevensRules
from referee.games.sevens.tables import CARD_INDEX, CARD_TEXT, ROW_BITS, Tables, bits

PASS_MOVE = -1
"""The move that passes (every other move is a card index, bit ``Card.index``)."""

_BIT = tuple(1 << i for i in range(52))
_SHIFT = tuple(13 * (i // 13) for i in range(52))
_MOVE_LISTS: dict[int, tuple[int, ...]] = {}


def mask_moves(mask: int) -> tuple[int, ...]:
    """The card indices of ``mask``, ascending (memoized: playable sets repeat a lot)."""
    found = _MOVE_LISTS.get(mask)
    if found is None:
        found = tuple(bits(mask))
        if len(_MOVE_LISTS) < 200_000:
            _MOVE_LISTS[mask] = found
    return found


def move_text(move: int) -> str:
    """The engine's action text of ``move``."""
    return PASS if move == PASS_MOVE else CARD_TEXT[move]


def text_move(action: str) -> int:
    """The move of an engine action text (a single card or ``pass``)."""
    return PASS_MOVE if action == PASS else CARD_INDEX[action]


class FastRules:
    """What :class:`FastDeal` needs of a rules object, looked up once per rules."""

    __slots__ = (
        "chip_scoring",
        "forced_chips",
        "free_passes",
        "higher_is_better",
        "lanes",
        "max_voluntary",
        "must_play",
        "opening_index",
        "pass_elimination",
        "pass_ok_when_able",
        "points_scoring",
        "row_cache",
        "rules",
        "scoring",
        "t",
        "voluntary_chips",
    )

    def __init__(self, rules: SevensRules, t: Tables) -> None:
        if rules.multi_card_turn:
            raise ValueError(
                "the fast Sevens engine plays one card a turn: multi_card_turn must be off "
                "(use referee.games.sevens.search for runs)"
            )
        self.rules = rules
        self.t = t
        self.opening_index = t.opening_index
        self.must_play = rules.must_play
        self.free_passes = rules.free_passes
        self.max_voluntary = rules.max_voluntary_passes
        self.pass_ok_when_able = rules.free_passes > 0 or not rules.must_play
        self.pass_elimination = rules.pass_elimination
        self.forced_chips = rules.pass_chips
        self.voluntary_chips = rules.voluntary_pass_chips
        self.scoring = rules.scoring
        self.points_scoring = rules.scoring == "penalty_points"
        self.chip_scoring = rules.scoring == "chips"
        self.higher_is_better = rules.higher_is_better
        self.row_cache = t.row_cache
        self.lanes = heuristic.lanes(t)

    def row_playable(self, row: int) -> int:
        found = self.row_cache.get(row)
        return self.t.row_playable(row) if found is None else found


_FAST_RULES: dict[SevensRules, FastRules] = {}


def fast_rules(rules: SevensRules, t: Tables) -> FastRules:
    found = _FAST_RULES.get(rules)
    if found is None:
        found = _FAST_RULES[rules] = FastRules(rules, t)
    return found


class FastDeal:
    """One Sevens deal in play, for search (see the module docstring)."""

    __slots__ = (
        "elim",
        "elim_mask",
        "fr",
        "free_left",
        "hands",
        "n",
        "opening_pending",
        "owed",
        "paid",
        "passes",
        "playable",
        "points",
        "pot",
        "skip",
        "special",
        "table",
        "to_act",
        "vol",
        "winner",
    )

    fr: FastRules
    n: int
    hands: list[int]
    table: int
    playable: int
    opening_pending: bool
    to_act: int
    passes: list[int]
    free_left: list[int]
    vol: list[int]
    elim: list[bool]
    elim_mask: list[int]
    skip: list[bool]
    special: bool
    pot: int
    paid: list[int]
    owed: list[int]
    points: list[int]
    winner: int

    @classmethod
    def from_match(cls, match: SevensMatch) -> FastDeal:
        """The current deal of ``match`` (which must not be over)."""
        d = cls.__new__(cls)
        d.fr = fast_rules(match._rules, match._t)
        d.n = match.num_players
        d.hands = list(match._hands)
        d.table = match._table
        d.playable = match._playable
        d.opening_pending = match._opening_pending
        d.to_act = match._to_act
        d.passes = list(match._passes)
        d.free_left = list(match._free_left)
        d.vol = list(match._vol)
        d.elim = list(match._elim)
        d.elim_mask = list(match._elim_mask)
        d.skip = list(match._skip)
        d.special = match._special
        d.pot = match._pot
        d.paid = list(match._paid)
        d.owed = list(match._owed)
        d.points = list(match._points)
        d.winner = -1
        return d

    @classmethod
    def start(
        cls,
        fr: FastRules,
        hands: Sequence[int],
        table: int,
        to_act: int,
        passes: Sequence[int],
        free_left: Sequence[int],
        vol: Sequence[int],
        elim: Sequence[bool],
        skip: Sequence[bool],
        pot: int,
    ) -> FastDeal:
        """A deal from its public state and every seat's hand; chips already paid are
        sunk (``paid``, ``owed`` and ``points`` start at zero, the pot is kept)."""
        d = cls.__new__(cls)
        d.fr = fr
        n = len(hands)
        d.n = n
        d.hands = list(hands)
        d.table = table
        t = fr.t
        d.opening_pending = t.opening_index >= 0 and not (table >> t.opening_index) & 1
        d.playable = d._playable_of(table)
        d.to_act = to_act
        d.passes = list(passes)
        d.free_left = list(free_left)
        d.vol = list(vol)
        d.elim = list(elim)
        d.elim_mask = [0] * n
        d.skip = list(skip)
        d.special = any(d.elim) or any(d.skip)
        d.pot = pot
        d.paid = [0] * n
        d.owed = [0] * n
        d.points = [0] * n
        d.winner = -1
        return d

    def _playable_of(self, table: int) -> int:
        if self.opening_pending:
            index = self.fr.opening_index
            if (table >> index) & 1:
                self.opening_pending = False
            else:
                return 1 << index
        rp = self.fr.row_playable
        return (
            rp(table & ROW_BITS)
            | rp((table >> 13) & ROW_BITS) << 13
            | rp((table >> 26) & ROW_BITS) << 26
            | rp((table >> 39) & ROW_BITS) << 39
        )

    def clone(self) -> FastDeal:
        d = FastDeal.__new__(FastDeal)
        d.fr = self.fr
        d.n = self.n
        d.hands = self.hands[:]
        d.table = self.table
        d.playable = self.playable
        d.opening_pending = self.opening_pending
        d.to_act = self.to_act
        d.passes = self.passes[:]
        d.free_left = self.free_left[:]
        d.vol = self.vol[:]
        d.elim = self.elim[:]
        d.elim_mask = self.elim_mask[:]
        d.skip = self.skip[:]
        d.special = self.special
        d.pot = self.pot
        d.paid = self.paid[:]
        d.owed = self.owed[:]
        d.points = self.points[:]
        d.winner = self.winner
        return d

    # ------------------------------------------------------------------ queries

    def is_terminal(self) -> bool:
        return self.winner >= 0

    def _can_pass_when_able(self, seat: int) -> bool:
        fr = self.fr
        if self.free_left[seat] > 0:
            return True
        return not fr.must_play and (fr.max_voluntary == 0 or self.vol[seat] < fr.max_voluntary)

    def legal_moves(self) -> tuple[int, ...]:
        """The legal moves of the seat to act in the engine's order (cards ascending, then
        ``PASS_MOVE`` where a pass is allowed while able to play)."""
        seat = self.to_act
        able = self.hands[seat] & self.playable
        if not able:
            return (PASS_MOVE,)
        moves = mask_moves(able)
        if self.fr.pass_ok_when_able and self._can_pass_when_able(seat):
            return (*moves, PASS_MOVE)
        return moves

    # ------------------------------------------------------------------ playing

    def play(self, move: int) -> None:
        """Apply a legal move of the seat to act."""
        seat = self.to_act
        if move < 0:
            self._pass(seat)
            return
        bit = _BIT[move]
        hand = self.hands[seat] ^ bit
        self.hands[seat] = hand
        table = self.table | bit
        self.table = table
        if self.opening_pending:
            self.playable = self._playable_of(table)
        else:
            shift = _SHIFT[move]
            self.playable = (self.playable & ~(ROW_BITS << shift)) | (
                self.fr.row_playable((table >> shift) & ROW_BITS) << shift
            )
        if not hand:
            self.winner = seat
            return
        self._advance(seat)

    def _pass(self, seat: int) -> None:
        fr = self.fr
        able = self.hands[seat] & self.playable
        if not able:
            cost = fr.forced_chips
        elif self.free_left[seat] > 0:
            cost = 0
            self.free_left[seat] -= 1
        else:
            cost = fr.voluntary_chips
            self.vol[seat] += 1
        if cost:
            if fr.points_scoring:
                self.points[seat] += cost
            else:
                self.pot += cost
                self.paid[seat] += cost
        self.passes[seat] += 1
        if fr.pass_elimination and self.passes[seat] > fr.pass_elimination:
            self._eliminate(seat)
            if self.winner >= 0:
                return
        self._advance(seat)

    def _eliminate(self, seat: int) -> None:
        hand = self.hands[seat]
        self.elim[seat] = True
        self.elim_mask[seat] = hand
        self.special = True
        self.skip[seat] = False
        self.hands[seat] = 0
        self.table |= hand
        self.playable = self._playable_of(self.table)
        active = [s for s in range(self.n) if not self.elim[s]]
        if len(active) == 1:
            self.winner = active[0]

    def _advance(self, seat: int) -> None:
        n = self.n
        nxt = seat + 1 if seat + 1 < n else 0
        if self.special:
            elim = self.elim
            skip = self.skip
            while True:
                if elim[nxt]:
                    nxt = nxt + 1 if nxt + 1 < n else 0
                    continue
                if skip[nxt]:
                    skip[nxt] = False
                    self.special = any(skip) or any(elim)
                    nxt = nxt + 1 if nxt + 1 < n else 0
                    continue
                break
        self.to_act = nxt

    def undo_play(self, seat: int, move: int, playable: int, opening_pending: bool) -> None:
        """Take back the card ``move`` that ``seat`` played with ``playable`` and
        ``opening_pending`` as they were before it (a play that ended the deal included).
        Only while no seat is eliminated or skipping (``special`` false): the turn order
        then changed nothing else; otherwise search on a :meth:`clone`."""
        assert not self.special, "undo_play needs a deal without eliminations or skips"
        bit = _BIT[move]
        self.hands[seat] |= bit
        self.table &= ~bit
        self.playable = playable
        self.opening_pending = opening_pending
        self.to_act = seat
        self.winner = -1

    # ------------------------------------------------------------------ scoring

    def deltas(self) -> list[int]:
        """The finished deal's score change per seat in the rules' unit (the engine's
        ``DealResult.deltas`` for a one-deal match)."""
        fr = self.fr
        t = fr.t
        n = self.n
        winner = self.winner
        deltas = [0] * n
        if fr.scoring == "winner_only":
            deltas[winner] = 1
            return deltas
        points = fr.points_scoring
        for s in range(n):
            if points:
                deltas[s] += self.points[s]
            else:
                deltas[s] -= self.paid[s]
            if s == winner:
                continue
            held = self.elim_mask[s] if self.elim[s] else self.hands[s]
            owed = t.card_penalty(held) + t.seven_penalty(held)
            if points:
                deltas[s] += owed
            else:
                deltas[s] -= owed + self.owed[s]
                deltas[winner] += owed + self.owed[s]
        if not points:
            deltas[winner] += self.pot
        return deltas

    def order(self) -> list[tuple[int, ...]]:
        """The finished deal's placing groups: the winner, the losers by measure (ties
        together), the eliminated last."""
        t = self.fr.t
        winner = self.winner
        by_measure: dict[int, list[int]] = {}
        for s in range(self.n):
            if s != winner and not self.elim[s]:
                by_measure.setdefault(t.measure(self.hands[s]), []).append(s)
        out: list[tuple[int, ...]] = [(winner,)]
        out.extend(tuple(by_measure[m]) for m in sorted(by_measure))
        eliminated = tuple(s for s in range(self.n) if self.elim[s] and s != winner)
        if eliminated:
            out.append(eliminated)
        return out

    def returns(self) -> list[float]:
        """Each seat's utility of the finished deal, as ``SevensState.returns``."""
        n = self.n
        place = [0.0] * n
        ahead = 0
        for group in self.order():
            for s in group:
                place[s] = 1.0 - 2.0 * ahead / (n - 1)
            ahead += len(group)
        if self.fr.scoring == "winner_only":
            return [0.8 * place[s] + (0.2 if s == self.winner else 0.0) for s in range(n)]
        deltas = self.deltas()
        sign = 1.0 if self.fr.higher_is_better else -1.0
        scale = max(1, max(abs(x) for x in deltas))
        return [0.8 * place[s] + 0.2 * sign * deltas[s] / scale for s in range(n)]


def heuristic_move(deal: FastDeal, rng: random.Random) -> int:
    """The Sevens heuristic's move for the seat to act (``heuristic.choose`` on masks)."""
    seat = deal.to_act
    hand = deal.hands[seat]
    able = hand & deal.playable
    if not able:
        return PASS_MOVE
    fr = deal.fr
    moves = mask_moves(able)
    can_pass = fr.pass_ok_when_able and deal._can_pass_when_able(seat)
    if len(moves) == 1 and not can_pass:
        return moves[0]
    lanes = fr.lanes
    table = deal.table
    card_score = heuristic.card_score
    best = moves[0]
    best_score = -1e9
    for i in moves:
        score = card_score(lanes[i], hand & ~_BIT[i], table)
        if score > best_score or (score == best_score and rng.random() < 0.5):
            best, best_score = i, score
    if can_pass and best_score < 0:
        rules = fr.rules
        safe = not rules.pass_elimination or deal.passes[seat] + 2 <= rules.pass_elimination
        if safe and deal.free_left[seat] > 0:
            return PASS_MOVE
        cost = rules.voluntary_pass_chips
        if safe and deal.free_left[seat] == 0 and cost <= 1 and best_score < -3.0 * cost:
            return PASS_MOVE
    return best


def random_move(deal: FastDeal, rng: random.Random) -> int:
    """A uniformly random legal move."""
    moves = deal.legal_moves()
    return moves[0] if len(moves) == 1 else moves[rng.randrange(len(moves))]
