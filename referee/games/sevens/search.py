"""The search API of the Sevens family (see ``referee/games/search.py``).

A :class:`SevensPosition` reads a seat's observation; its determinizations are one-deal
:class:`SevensMatch` objects set to the observed position (table, turn, passes, free
passes, eliminations, skips, pot) with the unseen cards dealt to the other seats. What
the seat knows beyond its own hand and the table:

* hand sizes (every seat);
* a seat that made a *forced* pass held none of the cards playable at that moment, and
  since Sevens never adds cards to a hand, it cannot hold them now (SV-18: a pass is
  forced exactly when the seat cannot play). This API uses no more: a free, voluntary or
  illegal pass proves the seat *could* play, which ``belief.py`` uses (with plays
  weighing the worlds) for the search bots of ``bots.py``.

Chips already paid are sunk: a determinization keeps the pot but starts every seat's
``paid`` at zero, so :meth:`SevensState.returns` measures what the rest of the deal is
worth; illegal-pass chips owed to the winner (by bots that made one) are not carried over.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from referee.games.base import RUN_SEPARATOR, DealHistory, DealSpec, EventKind
from referee.games.sevens import heuristic
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import cached_rules
from referee.games.sevens.tables import CARD_INDEX, ROW_BITS, Tables, bits, mask_actions, tables_for

_LIST_FIELDS = (
    "_hands",
    "_passes",
    "_free_left",
    "_vol",
    "_elim",
    "_elim_mask",
    "_elim_order",
    "_skip",
    "_paid",
    "_owed",
    "_points",
    "_penalties",
    "_events",
    "_log",
    "_results",
    "_initial",
    "_net",
)
"""The mutable containers of a ``SevensMatch`` (everything else is immutable or shared)."""

_DETERMINIZE_TRIES = 50


def clone_match(match: SevensMatch) -> SevensMatch:
    """An independent copy of ``match`` (its lists copied, its immutable parts shared)."""
    copy = object.__new__(SevensMatch)
    copy.__dict__.update(match.__dict__)
    for name in _LIST_FIELDS:
        setattr(copy, name, list(getattr(match, name)))
    copy._history = DealHistory()  # its own cache of the history items
    return copy


def playable_mask(t: Tables, table: int) -> int:
    """The cards playable on ``table`` (the engine's rule: the opening card first, then
    each row's neighbours of its run, D-20, D-30, D-31)."""
    if t.opening_index >= 0 and not (table >> t.opening_index) & 1:
        return 1 << t.opening_index
    out = 0
    for s in range(4):
        out |= t.row_playable((table >> (13 * s)) & ROW_BITS) << (13 * s)
    return out


def _cards_of(action: str) -> int:
    mask = 0
    for text in action.split(RUN_SEPARATOR):
        index = CARD_INDEX.get(text)
        if index is not None:
            mask |= 1 << index
    return mask


class SevensState:
    """A determinized Sevens deal (a one-deal match); terminal when the deal ends."""

    __slots__ = ("match", "num_players")

    def __init__(self, match: SevensMatch) -> None:
        self.match = match
        self.num_players = match.num_players

    def clone(self) -> SevensState:
        return SevensState(clone_match(self.match))

    def to_act(self) -> int:
        return self.match.to_act()

    def legal_actions(self) -> list[str]:
        return self.match.legal_actions()

    def apply(self, action: str) -> None:
        self.match.apply(action)

    def is_terminal(self) -> bool:
        return bool(self.match._results) or self.match.is_over()

    def hand(self, seat: int) -> list[str]:
        """``seat``'s cards in this state (canonical order)."""
        return list(mask_actions(self.match._hands[seat]))

    def returns(self) -> list[float]:
        """Placing (1 for the winner down to -1 for the last, ties sharing the better
        place) weighted 0.8, plus 0.2 times the deal's score change in the rules' unit
        relative to the largest change of the deal."""
        m = self.match
        result = m._results[0]
        n = m.num_players
        place = [0.0] * n
        ahead = 0
        for group in result.order:
            for s in group:
                place[s] = 1.0 - 2.0 * ahead / (n - 1)
            ahead += len(group)
        sign = 1.0 if m._rules.higher_is_better else -1.0
        scale = max(1, max(abs(d) for d in result.deltas))
        return [0.8 * place[s] + 0.2 * sign * result.deltas[s] / scale for s in range(n)]

    def rollout_action(self, rng: random.Random) -> str:
        m = self.match
        seat = m._to_act
        return heuristic.choose(
            m._rules,
            m._t,
            m._hands[seat],
            m._table,
            m.legal_actions(),
            m._passes[seat],
            m._free_left[seat],
            rng,
        )


class SevensPosition:
    """What one seat of a Sevens deal knows (from its observation)."""

    def __init__(self, obs: Mapping[str, Any]) -> None:
        rules = cached_rules(obs["rules"])
        t = tables_for(rules)
        n = int(obs["num_players"])
        self.rules = rules
        self.tables = t
        self.num_players = n
        self.seat = int(obs["seat"])
        self.hand = _cards_of(RUN_SEPARATOR.join(obs["hand"])) if obs["hand"] else 0
        self.table = heuristic.row_mask_of(obs["table"])
        self.sizes: list[int] = [int(x) for x in obs["hand_sizes"]]
        self.eliminated: list[bool] = [bool(x) for x in obs["eliminated"]]
        self.excluded, self.voluntary, self.elim_order = self._replay(obs["history"])
        self._obs = obs
        self._template: SevensMatch | None = None

    def _replay(
        self, history: Sequence[Mapping[str, Any]]
    ) -> tuple[list[int], list[int], list[int]]:
        """Replay the deal's public history: per seat the cards it was seen not to hold,
        its voluntary passes, and the order of eliminations."""
        t = self.tables
        n = self.num_players
        start = t.starters_mask if self.rules.starters == "removed_before_deal" else 0
        played = start
        for item in history:
            if item.get("kind") == EventKind.PLAY and "action" in item:
                played |= _cards_of(str(item["action"]))
        # Cards on the table that nobody played came from eliminated hands (SV-23); they
        # are added at the last elimination (earlier ones cannot be told apart).
        orphans = self.table & ~played
        last_elim = max(
            (i for i, item in enumerate(history) if item.get("kind") == EventKind.ELIMINATED),
            default=-1,
        )
        excluded = [0] * n
        voluntary = [0] * n
        elim_order: list[int] = []
        table = start
        for i, item in enumerate(history):
            kind = item.get("kind")
            seat = int(item.get("seat", -1))
            if kind == EventKind.PLAY and "action" in item:
                table |= _cards_of(str(item["action"]))
            elif kind == EventKind.PASS and 0 <= seat < n:
                reason = item.get("reason")
                if reason == "forced":
                    excluded[seat] |= playable_mask(t, table)
                elif reason == "voluntary":
                    voluntary[seat] += 1
            elif kind == EventKind.ELIMINATED and 0 <= seat < n:
                elim_order.append(seat)
                if i == last_elim:
                    table |= orphans
        return excluded, voluntary, elim_order

    def unseen(self) -> int:
        """The cards the seat cannot see: neither its own nor on the table."""
        return self.tables.deck_mask & ~self.table & ~self.hand

    def _deal(self, rng: random.Random, respect: bool) -> list[int] | None:
        n = self.num_players
        left = [0 if s == self.seat or self.eliminated[s] else self.sizes[s] for s in range(n)]
        cards = bits(self.unseen())
        if sum(left) != len(cards):
            raise ValueError(
                f"observation is inconsistent: {len(cards)} unseen cards for hand sizes "
                f"{self.sizes} (seat {self.seat}, eliminated {self.eliminated})"
            )
        excluded = self.excluded if respect else [0] * n
        rng.shuffle(cards)
        # Most constrained card first, so that a feasible deal is rarely missed.
        cards.sort(key=lambda c: sum(1 for s in range(n) if (excluded[s] >> c) & 1), reverse=True)
        hands = [0] * n
        hands[self.seat] = self.hand
        for c in cards:
            weights = [left[s] if not (excluded[s] >> c) & 1 else 0 for s in range(n)]
            total = sum(weights)
            if total == 0:
                return None
            pick = rng.randrange(total)
            for s in range(n):
                pick -= weights[s]
                if pick < 0:
                    hands[s] |= 1 << c
                    left[s] -= 1
                    break
        return hands

    def deal_hands(self, rng: random.Random) -> list[int]:
        """Every seat's hand mask: its own as observed, the unseen cards at random so that
        no seat gets a card it was seen not to hold (when no such deal is found in a few
        tries, which only inconsistent input can cause, the facts are dropped)."""
        for _ in range(_DETERMINIZE_TRIES):
            hands = self._deal(rng, respect=True)
            if hands is not None:
                return hands
        hands = self._deal(rng, respect=False)
        assert hands is not None
        return hands

    def _base(self) -> SevensMatch:
        if self._template is None:
            obs = self._obs
            n = self.num_players
            hands = self.deal_hands(random.Random(0))
            match = SevensMatch(
                self.rules,
                n,
                0,
                [DealSpec(0, 0, int(obs["dealer"]))],
                hands=[list(mask_actions(h)) for h in hands],
                table=list(mask_actions(self.table)),
            )
            match._to_act = int(obs["to_act"]) if int(obs["to_act"]) >= 0 else self.seat
            match._passes = [int(x) for x in obs["passes"]]
            match._free_left = [int(x) for x in obs["free_passes_left"]]
            match._vol = list(self.voluntary)
            match._elim = list(self.eliminated)
            match._elim_mask = [0] * n
            match._elim_order = list(self.elim_order)
            match._skip = [bool(x) for x in obs["skip_next"]]
            match._special = any(match._elim) or any(match._skip)
            match._pot = int(obs["pot"])
            match._paid = [0] * n
            match._owed = [0] * n
            match._points = [0] * n
            match._penalties = []
            match._legal = None
            self._template = match
        return self._template

    def determinize(self, rng: random.Random) -> SevensState:
        match = clone_match(self._base())
        match._hands = self.deal_hands(rng)
        match._legal = None
        return SevensState(match)
