"""A tiny game behind the engine interface, for unit tests of the runner only.

Each seat is dealt ``hand`` cards from a seeded shuffle and must play its lowest card
(the only legal action); anything else is refused and counts as an illegal pass that
costs one chip into the deal's pot, as a timeout does. The first empty hand wins the deal
and the pot.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from referee.games.base import (
    PASS,
    DealResult,
    DealSpec,
    Event,
    EventKind,
    Match,
    MatchResult,
    Observation,
    Rules,
    Source,
)
from referee.games.cards import make_deck


@dataclass(frozen=True)
class FakeRules:
    hand: int = 3
    name: str = "fake"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "hand": self.hand}


class FakeMatch:
    game = "fake"

    def __init__(self, rules: FakeRules, n: int, seed: int, deals: Sequence[DealSpec] | None):
        self.rules: Rules = rules
        self.hand_size = rules.hand
        self.num_players = n
        self.seed = seed
        self.specs = list(deals) if deals else [DealSpec(seed)]
        self._events: list[Event] = []
        self._results: list[DealResult] = []
        self._hands_dealt: list[list[list[str]]] = []
        self.log: list[tuple[str, str]] = []
        self.fine = 1  # chips an illegal pass pays (a test may make refusals free)
        self._deal(0)

    def _deal(self, index: int) -> None:
        self.deal = index
        deck = make_deck()
        random.Random(self.specs[index].seed).shuffle(deck)
        self.hands = [
            sorted(deck[i * self.hand_size : (i + 1) * self.hand_size])
            for i in range(self.num_players)
        ]
        self._hands_dealt.append([[str(c) for c in h] for h in self.hands])
        self.turn = index % self.num_players
        self.pot = 0
        self.paid = [0] * self.num_players
        self._events.append(Event(EventKind.DEAL_START, deal=index))

    def is_over(self) -> bool:
        return len(self._results) == len(self.specs)

    def to_act(self) -> int:
        return self.turn

    def deal_index(self) -> int:
        return self.deal

    def legal_actions(self) -> list[str]:
        return [str(self.hands[self.turn][0])]

    def check(self, action: str) -> str | None:
        return None if action in self.legal_actions() else "play your lowest card"

    def observation(self, seat: int) -> Observation:
        # Shaped like a Sevens observation (arena.v1.Observation carries it to the bot), with
        # only the fields this fake has: partial on purpose, hence the cast.
        return cast(
            Observation,
            {
                "game": "sevens",
                "seat": seat,
                "num_players": self.num_players,
                "hand": [str(c) for c in self.hands[seat]],
                "num_deals": len(self.specs),
                "deal_index": self.deal,
            },
        )

    def _step(self, events: list[Event]) -> list[Event]:
        seat = self.turn
        if not self.hands[seat]:
            winner = seat
            deltas = [-p for p in self.paid]
            deltas[winner] += self.pot
            self._results.append(DealResult(self.deal, winner, ((winner,),), tuple(deltas)))
            events.append(Event(EventKind.DEAL_END, deal=self.deal))
            self._events.extend(events)
            if not self.is_over():
                self._deal(self.deal + 1)
            return events
        self.turn = (seat + 1) % self.num_players
        self._events.extend(events)
        return events

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]:
        seat = self.turn
        self.log.append(("apply", action))
        if action in self.legal_actions():
            self.hands[seat].pop(0)
            return self._step([Event(EventKind.PLAY, seat, self.deal, action, source=source)])
        events = []
        if action != PASS:
            events.append(
                Event(
                    EventKind.INVALID_ACTION,
                    seat,
                    self.deal,
                    action[:20],
                    "not_legal",
                    source,
                    {"message": "play your lowest card"},
                )
            )
        return self._step(events + self._illegal_pass(seat, source))

    def _illegal_pass(self, seat: int, source: str) -> list[Event]:
        self.pot += self.fine
        self.paid[seat] += self.fine
        penalty = Event(
            EventKind.PENALTY,
            seat,
            self.deal,
            None,
            "illegal_pass",
            source,
            {"chips": self.fine, "payee": "pot"},
        )
        illegal = Event(EventKind.ILLEGAL_PASS, seat, self.deal, PASS, "illegal_pass", source)
        return [illegal, penalty] if self.fine else [illegal]

    def apply_timeout(self) -> list[Event]:
        seat = self.turn
        self.log.append(("timeout", ""))
        timeout = Event(EventKind.TIMEOUT, seat, self.deal, None, "timeout")
        return self._step([timeout, *self._illegal_pass(seat, Source.BOT)])

    def fallback_action(self) -> str:
        return self.legal_actions()[0]

    def events(self) -> list[Event]:
        return list(self._events)

    def deal_results(self) -> list[DealResult]:
        return list(self._results)

    def result(self) -> MatchResult:
        totals = tuple(sum(r.deltas[s] for r in self._results) for s in range(self.num_players))
        best = max(totals)
        order = tuple((s,) for s in sorted(range(self.num_players), key=lambda s: -totals[s]))
        return MatchResult(
            totals,
            "chips",
            True,
            order,
            tuple(s for s in range(self.num_players) if totals[s] == best),
            tuple(self._results),
        )

    def initial_hands(self) -> list[list[list[str]]]:
        return self._hands_dealt

    def to_json(self) -> str:
        return json.dumps(
            {
                "rules": self.rules.to_dict(),
                "n": self.num_players,
                "seed": self.seed,
                "deals": [d.to_dict() for d in self.specs],
                "log": self.log,
            }
        )


class FakeGame:
    name = "fake"

    def presets(self) -> Mapping[str, Rules]:
        return {"fake": FakeRules()}

    def preset(self, name: str) -> Rules:
        return FakeRules()

    def rules_from_dict(self, data: Mapping[str, Any]) -> Rules:
        return FakeRules(hand=int(data.get("hand", 3)))

    def player_counts(self, rules: Rules) -> Sequence[int]:
        return (2, 3, 4)

    def new_match(
        self, rules: Rules, num_players: int, seed: int, deals: Sequence[DealSpec] | None = None
    ) -> Match:
        assert isinstance(rules, FakeRules)
        return FakeMatch(rules, num_players, seed, deals)

    def match_from_json(self, text: str) -> Match:
        data = json.loads(text)
        m = FakeMatch(
            FakeRules(hand=data["rules"]["hand"]),
            data["n"],
            data["seed"],
            [DealSpec.from_dict(d) for d in data["deals"]],
        )
        for kind, action in data["log"]:
            m.apply(action) if kind == "apply" else m.apply_timeout()
        return m


GAME = FakeGame()
