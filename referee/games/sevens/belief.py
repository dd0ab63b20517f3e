"""What a Sevens seat can infer about the hidden hands, and worlds sampled from it.

Hard facts (a sampled world never breaks one; ``tests/ladder/test_belief.py`` checks it
over many states of every preset):

* the seat's own hand, the table and every hand size;
* a *forced* pass means the seat held none of the cards playable then, and a Sevens hand
  never gains a card, so it holds none of them now;
* a *free*, *voluntary* or *illegal* pass means the seat held at least one card playable
  then (the engine calls a pass forced exactly when the seat cannot play): unless it
  played one of them since, it holds one of them still (a skipped turn proves nothing);
* a card a seat played was in its hand, so it is on the table now (an eliminated seat's
  cards lie on the table too).

Soft facts weight the worlds (:meth:`SevensBelief.weight`): every play of an opponent is
more or less likely given the hand the world gives it at that moment (its hand now plus
the cards it played since). A world where the opponent had fewer choices, or where its
choice was one the heuristic (``heuristic.py``) would make, explains its play better. Each
opponent is, for the whole deal, either the heuristic (a softmax over its scores) or a
uniformly random player, half and half before it plays: the plays weigh each world by how
well either kind explains them, and give, per world, each seat's posterior share of
heuristic play, which the search's playouts use (:meth:`SevensBelief.model`).
Starters held back are part of it: a world that gives a seat a 7 it could have played but
did not is weighed down by how rarely the heuristic and a random player would hold it.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import Any

from referee.games.base import EventKind
from referee.games.sevens import heuristic
from referee.games.sevens.fast import FastDeal, FastRules, fast_rules
from referee.games.sevens.search import SevensPosition, _cards_of, playable_mask
from referee.games.sevens.tables import bits

HEURISTIC_SHARE = 0.5
"""The opponent model's prior that a seat plays the heuristic (else uniformly at random)."""

SHARE_FLOOR = 0.1
"""The playout model keeps at least this much of either kind of play for every seat."""

TEMPERATURE = 1.0
"""The softmax temperature over the heuristic's scores (score units: cards)."""

_BIT = tuple(1 << i for i in range(52))
_TRIES = 200


class SevensBelief:
    """The hard and soft facts a seat has about the other hands (module docstring)."""

    def __init__(self, obs: Mapping[str, Any], pos: SevensPosition | None = None) -> None:
        pos = pos if pos is not None else SevensPosition(obs)
        self.pos = pos
        self.obs = obs
        self.seat = pos.seat
        self.n = pos.num_players
        self.fr: FastRules = fast_rules(pos.rules, pos.tables)
        self.unseen = pos.unseen()
        n = self.n
        self.left = [0 if s == self.seat or pos.eliminated[s] else pos.sizes[s] for s in range(n)]
        self.allowed = [
            0 if self.left[s] == 0 else self.unseen & ~pos.excluded[s] for s in range(n)
        ]
        self.plays = self._plays(obs.get("history", []))
        self.needs = self._needs(obs.get("history", []))
        constrained = 0
        for s in range(n):
            if self.left[s]:
                constrained |= self.unseen & ~self.allowed[s]
        self.constrained = constrained
        self._free = bits(self.unseen & ~constrained)
        self._tight = bits(constrained)

    def _plays(self, history: Any) -> list[tuple[int, int, int, int]]:
        """Every decision play of another live seat this deal: (seat, card index, table
        before, playable before)."""
        t = self.pos.tables
        rules = self.pos.rules
        table = t.starters_mask if rules.starters == "removed_before_deal" else 0
        out = []
        for item in history:
            kind = item.get("kind")
            if kind == EventKind.PLAY and "action" in item:
                cards = _cards_of(str(item["action"]))
                seat = int(item.get("seat", -1))
                single = cards.bit_count() == 1
                live = 0 <= seat < self.n and seat != self.seat and not self.pos.eliminated[seat]
                if single and live and item.get("reason") != "starter":
                    out.append((seat, cards.bit_length() - 1, table, playable_mask(t, table)))
                table |= cards
            elif kind == EventKind.ELIMINATED:
                return []  # cards put on the table by an elimination: stop weighing
        return out

    def _needs(self, history: Any) -> list[tuple[int, int]]:
        """(seat, mask): the seat holds at least one card of the mask, from its passes
        while able to play that no later play of its own explains."""
        t = self.pos.tables
        rules = self.pos.rules
        table = t.starters_mask if rules.starters == "removed_before_deal" else 0
        pending: list[tuple[int, int]] = []
        for item in history:
            kind = item.get("kind")
            seat = int(item.get("seat", -1))
            if kind == EventKind.PLAY and "action" in item:
                cards = _cards_of(str(item["action"]))
                pending = [(s, m) for s, m in pending if not (s == seat and m & cards)]
                table |= cards
            elif kind == EventKind.ELIMINATED:
                return []  # cards put on the table by an elimination: stop inferring
            elif 0 <= seat < self.n and seat != self.seat and not self.pos.eliminated[seat]:
                able = kind == EventKind.ILLEGAL_PASS or (
                    kind == EventKind.PASS and item.get("reason") in ("free", "voluntary")
                )
                if able:
                    pending.append((seat, playable_mask(t, table)))
        return [(s, m & self.unseen) for s, m in pending]

    # ------------------------------------------------------------------ hard facts

    def sample(self, rng: random.Random) -> list[int]:
        """Every seat's hand: its own as observed, the unseen cards dealt so that every
        hard fact holds (the constrained cards first; when no such deal is found, which
        only inconsistent input can cause, the position's fallback deals)."""
        for _ in range(_TRIES):
            hands = self._try(rng)
            if hands is not None:
                return hands
        return self.pos.deal_hands(rng)

    def _try(self, rng: random.Random) -> list[int] | None:
        n = self.n
        left = list(self.left)
        hands = [0] * n
        hands[self.seat] = self.pos.hand
        allowed = self.allowed
        taken = 0
        for s, mask in self.needs:  # a card of each need first, so that few tries fail
            if hands[s] & mask:
                continue
            options = bits(mask & allowed[s] & ~taken)
            if not options or not left[s]:
                return None
            c = options[rng.randrange(len(options))]
            hands[s] |= _BIT[c]
            taken |= _BIT[c]
            left[s] -= 1
        tight = [c for c in self._tight if not (taken >> c) & 1]
        free = [c for c in self._free if not (taken >> c) & 1]
        if tight:
            rng.shuffle(tight)
            tight.sort(key=lambda c: sum(1 for s in range(n) if (allowed[s] >> c) & 1))
            for c in tight:
                total = 0
                for s in range(n):
                    if (allowed[s] >> c) & 1:
                        total += left[s]
                if total == 0:
                    return None
                pick = rng.randrange(total)
                for s in range(n):
                    if (allowed[s] >> c) & 1:
                        pick -= left[s]
                        if pick < 0:
                            hands[s] |= _BIT[c]
                            left[s] -= 1
                            break
        rng.shuffle(free)
        k = 0
        for s in range(n):
            if left[s]:
                hands[s] |= sum(map(_BIT.__getitem__, free[k : k + left[s]]))
                k += left[s]
        for s, mask in self.needs:
            if not hands[s] & mask:
                return None
        return hands

    def consistent(self, hands: list[int]) -> bool:
        """True when ``hands`` breaks no hard fact (for tests and assertions)."""
        pos = self.pos
        seen = pos.hand | pos.table
        union = 0
        for s in range(self.n):
            if s == self.seat:
                if hands[s] != pos.hand:
                    return False
                continue
            h = hands[s]
            if h & seen or h & union or h & pos.excluded[s] or h.bit_count() != self.left[s]:
                return False
            union |= h
        if any(not hands[s] & mask for s, mask in self.needs):
            return False
        return union == self.unseen

    # ------------------------------------------------------------------ soft facts

    def weight(self, hands: list[int]) -> float:
        """The likelihood of the other seats' plays this deal given ``hands`` under the
        opponent model (up to a constant: compare worlds of one position only)."""
        return self.model(hands)[0]

    def model(self, hands: list[int]) -> tuple[float, list[float]]:
        """:meth:`weight` and, per seat, the posterior probability that it plays the
        heuristic rather than at random given its plays in ``hands`` (``HEURISTIC_SHARE``
        before any play, kept within ``SHARE_FLOOR`` of 0 and 1). Each seat is one kind of
        player or the other for the whole deal, so the plays of a random player soon
        outweigh the prior, and the search's playouts model each seat as it has played."""
        n = self.n
        prior = HEURISTIC_SHARE
        shares = [prior] * n
        if not self.plays:
            return 1.0, shares
        lanes = self.fr.lanes
        card_score = heuristic.card_score
        held = list(hands)
        log_h = [0.0] * n
        log_r = [0.0] * n
        for seat, card, table, playable in reversed(self.plays):
            bit = _BIT[card]
            hand = held[seat] | bit
            held[seat] = hand
            able = hand & playable
            count = able.bit_count()
            if count <= 1:
                continue
            moves = bits(able)
            scores = [card_score(lanes[i], hand & ~_BIT[i], table) for i in moves]
            top = max(scores)
            total = sum(math.exp((x - top) / TEMPERATURE) for x in scores)
            log_h[seat] += (scores[moves.index(card)] - top) / TEMPERATURE - math.log(total)
            log_r[seat] -= math.log(count)
        log_w = 0.0
        for s in range(n):
            if log_h[s] == 0.0 and log_r[s] == 0.0:
                continue
            h = math.log(prior) + log_h[s] if prior > 0.0 else -math.inf
            r = math.log(1.0 - prior) + log_r[s] if prior < 1.0 else -math.inf
            top = max(h, r)
            mix = top + math.log(math.exp(h - top) + math.exp(r - top))
            log_w += mix
            share = math.exp(h - mix)
            shares[s] = min(1.0 - SHARE_FLOOR, max(SHARE_FLOOR, share))
        return math.exp(log_w), shares

    def deal(self, hands: list[int]) -> FastDeal:
        """The search state of the deal with ``hands`` (chips already paid are sunk)."""
        obs = self.obs
        pos = self.pos
        to_act = int(obs["to_act"])
        return FastDeal.start(
            self.fr,
            hands,
            pos.table,
            to_act if to_act >= 0 else self.seat,
            [int(x) for x in obs["passes"]],
            [int(x) for x in obs["free_passes_left"]],
            pos.voluntary,
            pos.eliminated,
            [bool(x) for x in obs["skip_next"]],
            int(obs["pot"]),
        )
