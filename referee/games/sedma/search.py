"""The search API of Sedma (see ``referee/games/search.py``).

A :class:`SedmaPosition` reads a seat's observation; its determinizations are
:class:`~referee.games.sedma.hand.Hand` objects set to the observed hand (trick on the
table, leader, tricks and card points per side, marriages shown) with the unseen cards
dealt to the other seats and the talon. What the seat knows beyond its own hand:

* every card played this hand (the history's ``play`` entries) is out of play;
* a card shown in a marriage (SD-19, ``QH+KH`` leads the queen and shows the king) stays
  with the seat that showed it until that seat plays it;
* hand sizes and the talon's size. Cards drawn by others are not shown (only that they
  drew), and Sedma has no duty to follow, so plays reveal no voids.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

from referee.games.base import RUN_SEPARATOR, EventKind
from referee.games.cards import Card
from referee.games.sedma import heuristic
from referee.games.sedma.hand import Hand
from referee.games.sedma.rules import SedmaRules, deck_cards, rules_from_dict


def clone_hand(hand: Hand) -> Hand:
    """An independent copy of ``hand`` (cards are immutable and shared)."""
    copy = Hand.__new__(Hand)
    copy.rules = hand.rules
    copy.hands = [list(h) for h in hand.hands]
    copy.talon = list(hand.talon)
    copy.leader = hand.leader
    copy.to_act = hand.to_act
    copy.trick = list(hand.trick)
    copy.tricks_won = list(hand.tricks_won)
    copy.card_points = list(hand.card_points)
    copy.marriage_points = list(hand.marriage_points)
    copy.marriages = list(hand.marriages)
    copy.taken = [list(t) for t in hand.taken]
    copy.tricks_played = hand.tricks_played
    copy.last_trick_side = hand.last_trick_side
    copy._legal = None
    return copy


class SedmaState:
    """A determinized Sedma hand; terminal when the hand is over (SD-12)."""

    __slots__ = ("hand", "num_players")

    def __init__(self, hand: Hand) -> None:
        self.hand = hand
        self.num_players = hand.rules.players

    def clone(self) -> SedmaState:
        return SedmaState(clone_hand(self.hand))

    def to_act(self) -> int:
        return self.hand.to_act

    def legal_actions(self) -> list[str]:
        return list(self.hand.legal_actions())

    def apply(self, action: str) -> None:
        if RUN_SEPARATOR in action:
            lead, shown = action.split(RUN_SEPARATOR)
            self.hand.play(Card.parse(lead), Card.parse(shown))
        else:
            self.hand.play(Card.parse(action))

    def is_terminal(self) -> bool:
        return self.hand.is_over()

    def returns(self) -> list[float]:
        """0.8 times the match points won (lost: the winner's, shared among the losing
        sides) over the naked-hand maximum, plus 0.2 times the side's hand points above
        the mean of the sides over the points there are; 0 for a void hand (SD-16)."""
        hand = self.hand
        rules = hand.rules
        score = hand.score()
        sides = rules.num_sides
        points = score.points
        mean = sum(points) / sides
        total = rules.card_point_total + rules.last_trick_bonus + rules.marriage_points * 4
        out = []
        for seat in range(rules.players):
            side = rules.side_of(seat)
            if score.winner_side is None:
                won = 0.0
            elif score.winner_side == side:
                won = score.match_points[side] / rules.naked_points
            else:
                won = -score.match_points[score.winner_side] / rules.naked_points / (sides - 1)
            out.append(0.8 * won + 0.2 * (points[side] - mean) / total)
        return out

    def rollout_action(self, rng: random.Random) -> str:
        hand = self.hand
        seat = hand.to_act
        return heuristic.choose(
            hand.rules,
            seat,
            hand.hands[seat],
            hand.trick,
            hand.legal_actions(),
            hand.tricks_played == hand.rules.num_tricks - 1,
            rng,
        )


class SedmaPosition:
    """What one seat of a Sedma hand knows (from its observation)."""

    def __init__(self, obs: Mapping[str, Any]) -> None:
        rules: SedmaRules = rules_from_dict(obs["rules"])
        n = rules.players
        self.rules = rules
        self.seat = int(obs["seat"])
        self.obs = obs
        self.hand = [Card.parse(c) for c in obs["hand"]]
        self.sizes = [int(x) for x in obs["hand_sizes"]]
        self.talon_size = int(obs["talon_size"])
        played: set[Card] = set()
        known: list[set[Card]] = [set() for _ in range(n)]
        marriage_points = [0] * rules.num_sides
        for item in obs["history"]:
            if item.get("kind") != EventKind.PLAY or "action" not in item:
                continue
            seat = int(item["seat"])
            parts = [Card.parse(p) for p in str(item["action"]).split(RUN_SEPARATOR)]
            played.add(parts[0])
            for holder in known:
                holder.discard(parts[0])
            if len(parts) == 2:
                known[seat].add(parts[1])
                marriage_points[rules.side_of(seat)] += rules.marriage_points
        known[self.seat] = set()
        self.played = played
        self.known = known
        self.marriage_points = marriage_points
        mine = set(self.hand)
        held = set().union(*known)
        self.pool = [
            c for c in deck_cards(rules.deck) if c not in mine and c not in played and c not in held
        ]
        need = sum(self.sizes[s] - len(known[s]) for s in range(n) if s != self.seat)
        if need + self.talon_size != len(self.pool):
            raise ValueError(
                f"observation is inconsistent: {len(self.pool)} unseen cards for hand sizes "
                f"{self.sizes} and a talon of {self.talon_size}"
            )

    def unseen(self) -> list[Card]:
        """The cards whose place the seat does not know (other hands or the talon)."""
        return list(self.pool)

    def deal_hands(self, rng: random.Random) -> tuple[list[list[Card]], list[Card]]:
        """Every seat's hand and the talon: the seat's own cards, shown marriage cards
        with their holders, the rest of the unseen cards at random."""
        pool = list(self.pool)
        rng.shuffle(pool)
        hands: list[list[Card]] = []
        k = 0
        for s in range(self.rules.players):
            if s == self.seat:
                hands.append(list(self.hand))
                continue
            extra = self.sizes[s] - len(self.known[s])
            hands.append(sorted([*self.known[s], *pool[k : k + extra]]))
            k += extra
        return hands, pool[k:]

    def determinize(self, rng: random.Random) -> SedmaState:
        obs = self.obs
        rules = self.rules
        hands, talon = self.deal_hands(rng)
        hand = Hand(rules, hands, talon, int(obs["dealer"]))
        hand.leader = int(obs["leader"])
        hand.to_act = int(obs["to_act"]) if int(obs["to_act"]) >= 0 else self.seat
        hand.trick = [(int(t["seat"]), Card.parse(t["card"])) for t in obs["trick"]]
        hand.tricks_won = [int(x) for x in obs["tricks_won"]]
        hand.card_points = [int(x) for x in obs["card_points"]]
        hand.marriage_points = list(self.marriage_points)
        hand.tricks_played = sum(hand.tricks_won)
        return SedmaState(hand)
