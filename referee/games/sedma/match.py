"""A Sedma match: hands dealt from seeds, the session to a target (SD-15), events,
the autopilot's answer to refused actions and timeouts, and replayable JSON.

Deal ``k`` of a match is every hand dealt, void ones included, so ``deal_results()[k]``,
``initial_hands()[k]`` and events with ``deal == k`` line up. A *slot* is one scheduled
hand: a ``DealSpec`` of an explicit list, or the k-th hand of a session. A void hand
(SD-16) is redealt in the same slot by the same dealer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from referee.games import record
from referee.games.base import (
    RUN_SEPARATOR,
    DealHistory,
    DealResult,
    DealSpec,
    Event,
    EventKind,
    Match,
    MatchResult,
    Observation,
    Rules,
    Source,
    build_observation,
    derive_seed,
)
from referee.games.cards import Card, Rank
from referee.games.errors import CardParseError, InvalidRulesError, MatchStateError
from referee.games.sedma.hand import POINT_RANKS, SEDMA_ORDER, Hand, TrickResult, deal_cards
from referee.games.sedma.rules import SedmaRules, deck_cards, rules_from_dict

GAME_NAME = "sedma"
UNIT = "match_points"
DRAW = "draw"
"""Engine-specific event kind: a seat drew a talon card (the card only in ``detail``)."""

_CARDS: dict[str, Card] = {str(card): card for card in map(Card.from_index, range(52))}
"""Every card by its canonical text (the fast path of ``apply``)."""

MAX_ACTION_CHARS = 16
"""Longer action text is refused as malformed without parsing (and logged clipped)."""


def cut_for_dealer(seed: int, players: int, deck_kind: str) -> tuple[int, list[list[Any]]]:
    """SD-5: every seat draws a card of the game's own deck (``deck_kind``: ``sedma-3``
    cuts from its 24 cards, never the 8s and 9s it leaves out), the lowest rank deals;
    tied seats draw again.

    Draw ``j`` takes card ``derive_seed("sedma", seed, "cut", j) % len(rest)`` of the
    cards not yet drawn (canonical order). Returns the dealer and the draws as
    ``[seat, card]`` pairs.
    """
    deck = deck_cards(deck_kind)
    candidates = list(range(players))
    draws: list[list[Any]] = []
    j = 0
    while len(candidates) > 1 and len(deck) >= len(candidates):
        drawn = []
        for seat in candidates:
            drawn.append((seat, deck.pop(derive_seed(GAME_NAME, seed, "cut", j) % len(deck))))
            j += 1
        draws.extend([seat, str(card)] for seat, card in drawn)
        low = min(SEDMA_ORDER[card.rank] for _, card in drawn)
        candidates = [seat for seat, card in drawn if SEDMA_ORDER[card.rank] == low]
    return candidates[0], draws


@dataclass(frozen=True, slots=True)
class Refusal:
    reason: str  # "malformed" | "not_held" | "not_legal"
    message: str


Play = tuple[Card, Card | None]


class SedmaMatch(Match):
    """A Sedma match in progress (implements ``referee.games.base.Match``)."""

    game: str = GAME_NAME

    def __init__(
        self,
        rules: SedmaRules,
        num_players: int,
        seed: int,
        deals: Sequence[DealSpec] | None = None,
    ) -> None:
        if num_players != rules.players:
            raise InvalidRulesError(
                f"preset {rules.name!r} is for {rules.players} players, not {num_players}"
            )
        if type(seed) is not int:
            raise InvalidRulesError(f"seed must be an int, got {seed!r}")
        specs = None if deals is None else tuple(deals)
        if specs is not None:
            if not specs:
                raise InvalidRulesError("deals must hold at least one DealSpec (or be None)")
            for spec in specs:
                if spec.dealer is not None and not 0 <= spec.dealer < num_players:
                    raise InvalidRulesError(
                        f"DealSpec dealer {spec.dealer} is not a seat 0..{num_players - 1}"
                    )
        self.sedma_rules = rules
        self.rules: Rules = rules
        self.num_players = num_players
        self.seed = seed
        self._specs = specs
        self._first_dealer, self._cut = cut_for_dealer(seed, num_players, rules.deck)
        self._slot = 0
        self._redeals = 0
        self._deal = -1
        self._dealer = self._first_dealer
        self._side_totals = [0] * rules.num_sides
        self._events: list[Event] = []
        self._history = DealHistory()  # the current hand's history items, built once each
        self._results: list[DealResult] = []
        self._initial: list[list[list[str]]] = []
        self._log: list[Mapping[str, str | int | bool]] = []
        self._over = False
        self._deal_start = 0
        self._rules_dict = rules.to_dict()
        self._hand = self._start_hand()

    # Match protocol: queries ------------------------------------------------------------

    def is_over(self) -> bool:
        return self._over

    def to_act(self) -> int:
        if self._over:
            raise MatchStateError("the match is over: nobody is to act")
        return self._hand.to_act

    def deal_index(self) -> int:
        return self._deal

    def legal_actions(self) -> list[str]:
        if self._over:
            return []
        return list(self._hand.legal_actions())

    def check(self, action: str) -> str | None:
        if self._over:
            return "the match is over: no action is legal"
        verdict = self._interpret(action)
        return verdict.message if isinstance(verdict, Refusal) else None

    def fallback_action(self) -> str:
        """The lowest card that neither scores nor is a 7; else a 7; else the lowest point
        card (ranks in Sedma order, then suit). Never a marriage."""
        if self._over:
            raise MatchStateError("the match is over: there is no fallback action")

        def key(card: Card) -> tuple[int, int, int]:
            group = 2 if card.rank in POINT_RANKS else 1 if card.rank is Rank.SEVEN else 0
            return (group, SEDMA_ORDER[card.rank], card.suit)

        return str(min(self._hand.hands[self._hand.to_act], key=key))

    def events(self) -> list[Event]:
        return list(self._events)

    def deal_results(self) -> list[DealResult]:
        return list(self._results)

    def initial_hands(self) -> list[list[list[str]]]:
        return [[list(hand) for hand in deal] for deal in self._initial]

    def num_deals(self) -> int:
        """Scheduled hands (0 when the session runs to a target)."""
        if self._specs is not None:
            return len(self._specs)
        return self.sedma_rules.running_hands if self.sedma_rules.session == "running" else 0

    def side_totals(self) -> list[int]:
        return list(self._side_totals)

    def hand_state(self) -> Hand:
        """The current hand (full information; for tests and tools, never for bots)."""
        return self._hand

    def result(self) -> MatchResult:
        if not self._over:
            raise MatchStateError("the match is not over yet: play on until is_over()")
        rules = self.sedma_rules
        totals = tuple(self._side_totals[rules.side_of(s)] for s in range(self.num_players))
        order = _rank_sides(rules, self._side_totals)
        return MatchResult(
            totals=totals,
            unit=UNIT,
            higher_is_better=True,
            order=order,
            winners=order[0],
            deals=tuple(self._results),
        )

    def observation(self, seat: int) -> Observation:
        if type(seat) is not int or not 0 <= seat < self.num_players:
            raise MatchStateError(f"seat must be 0..{self.num_players - 1}, got {seat!r}")
        rules = self.sedma_rules
        hand = self._hand
        common = build_observation(
            game=GAME_NAME,
            preset=rules.name,
            rules=dict(self._rules_dict),
            seat=seat,
            num_players=self.num_players,
            deal_index=self._deal,
            num_deals=self.num_deals(),
            dealer=self._dealer,
            to_act=-1 if self._over else hand.to_act,
            hand=[str(card) for card in hand.hands[seat]],
            hand_sizes=[len(h) for h in hand.hands],
            totals=[self._side_totals[rules.side_of(s)] for s in range(self.num_players)],
            unit=UNIT,
            history=self._history.view(self._events, self._deal_start, seat),
        )
        common["sides"] = [list(side) for side in rules.sides()]
        common["leader"] = hand.leader
        common["trick"] = [{"seat": s, "card": str(card)} for s, card in hand.trick]
        common["talon_size"] = len(hand.talon)
        common["tricks_won"] = list(hand.tricks_won)
        common["card_points"] = list(hand.card_points)
        common["match_points"] = list(self._side_totals)
        common["target"] = rules.target if rules.session == "target" else 0
        common["marriages"] = [[str(q), str(k)] for _, q, k in hand.marriages]
        return common

    # Match protocol: changes ------------------------------------------------------------

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]:
        if self._over:
            raise MatchStateError(f"the match is over: cannot apply {action!r}")
        start = len(self._events)
        card = _CARDS.get(action) if type(action) is str else None
        if card is not None and card in self._hand.hands[self._hand.to_act]:
            # The common case, checked first for speed: a held card in canonical form.
            entry: dict[str, str | int | bool] = {"seat": self._hand.to_act, "action": action}
            if source != Source.BOT:
                entry["source"] = source
            self._log.append(entry)
            self._play((card, None), source)
            return self._events[start:]
        text = action if isinstance(action, str) else ""
        entry = {"seat": self._hand.to_act, "action": text[: MAX_ACTION_CHARS + 1]}
        if source != Source.BOT:
            entry["source"] = source
        self._log.append(entry)
        seat = self._hand.to_act
        verdict = self._interpret(text)
        if isinstance(verdict, Refusal):
            self._emit(
                EventKind.INVALID_ACTION,
                seat,
                action=text[: MAX_ACTION_CHARS + 1],
                reason=verdict.reason,
                source=source,
                detail={"message": verdict.message},
            )
            self._play_fallback()
        else:
            self._play(verdict, source)
        return self._events[start:]

    def apply_timeout(self) -> list[Event]:
        if self._over:
            raise MatchStateError("the match is over: nobody can time out")
        start = len(self._events)
        self._log.append({"seat": self._hand.to_act, "timeout": True})
        self._emit(EventKind.TIMEOUT, self._hand.to_act, reason="timeout")
        self._play_fallback()
        return self._events[start:]

    # Serialization ----------------------------------------------------------------------

    def to_json(self) -> str:
        """The match record (:mod:`referee.games.record`)."""
        return record.write_record(
            game=GAME_NAME,
            rules=self._rules_dict,
            num_players=self.num_players,
            seed=self.seed,
            deals=self._specs,
            actions=[dict(entry) for entry in self._log],
            initial_hands=self.initial_hands(),
            events=self._events,
        )

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any]) -> SedmaMatch:
        """Rebuild a match from its record (format 2, or the format-1 records written
        before, without events) by replaying its actions; ``MatchStateError`` when it does
        not replay."""
        data = record.read_record(text, GAME_NAME)
        try:
            rules = rules_from_dict(data["rules"])
            match = cls(rules, data["num_players"], data["seed"], record.deal_specs(data))
        except (KeyError, TypeError) as exc:
            raise MatchStateError(f"sedma match record lacks or garbles a field: {exc!r}") from None
        record.replay(match, data, GAME_NAME)
        return match

    # Internals ----------------------------------------------------------------------------

    def _emit(
        self,
        kind: str,
        seat: int | None,
        *,
        action: str | None = None,
        reason: str | None = None,
        source: str = Source.BOT,
        detail: Mapping[str, Any] | None = None,
    ) -> None:
        self._events.append(Event(kind, seat, self._deal, action, reason, source, detail or {}))

    def _interpret(self, action: str) -> Play | Refusal:
        """The play ``action`` stands for, or why it is refused (SD-8, SD-19)."""
        if not isinstance(action, str) or not action.strip():
            return Refusal("malformed", "empty action: send a card you hold, e.g. 7H")
        if len(action) > MAX_ACTION_CHARS:
            # The record keeps MAX_ACTION_CHARS + 1 characters: the message must read the
            # same when the record is replayed (tests/games/test_contract.py).
            return Refusal(
                "malformed",
                f"action is longer than {MAX_ACTION_CHARS} characters: send a card like 7H",
            )
        hand = self._hand
        seat = hand.to_act
        held = hand.hands[seat]
        if RUN_SEPARATOR in action:
            return self._interpret_marriage(action, held)
        try:
            card = Card.parse(action)
        except CardParseError as exc:
            return Refusal("malformed", str(exc))
        if card not in held:
            return Refusal(
                "not_held",
                f"{card} is not in your hand; play one of {' '.join(map(str, held))} "
                "(every held card is legal, SD-8)",
            )
        return (card, None)

    def _interpret_marriage(self, action: str, held: list[Card]) -> Play | Refusal:
        parts = action.split(RUN_SEPARATOR)
        try:
            cards = [Card.parse(p) for p in parts]
        except CardParseError as exc:
            return Refusal("malformed", f"{action!r} is not a marriage lead like QH+KH: {exc}")
        if len(cards) != 2:
            return Refusal("malformed", f"{action!r}: a marriage lead is two cards, like QH+KH")
        lead, shown = cards
        rules = self.sedma_rules
        if not rules.marriages:
            return Refusal(
                "not_legal",
                f"{action}: marriages are off in these rules (SD-19, mariash-sedma only); "
                "play a single card like 7H",
            )
        if self._hand.trick:
            return Refusal(
                "not_legal", f"{action}: a marriage is shown only when leading (SD-19); play a card"
            )
        if lead.suit != shown.suit or {lead.rank, shown.rank} != {Rank.QUEEN, Rank.KING}:
            return Refusal(
                "not_legal",
                f"{action} is not a marriage: show the queen and king of one suit, e.g. QH+KH",
            )
        missing = [str(c) for c in cards if c not in held]
        if missing:
            return Refusal(
                "not_held", f"{action}: you do not hold {' '.join(missing)}; play a card you hold"
            )
        return (lead, shown)

    def _play_fallback(self) -> None:
        self._play((Card.parse(self.fallback_action()), None), Source.AUTOPILOT)

    def _play(self, play: Play, source: str) -> None:
        card, shown = play
        hand = self._hand
        seat = hand.to_act
        rules = self.sedma_rules
        if shown is None:
            self._events.append(_shared_event(EventKind.PLAY, seat, self._deal, str(card), source))
        else:
            self._emit(
                EventKind.PLAY,
                seat,
                action=f"{card}{RUN_SEPARATOR}{shown}",
                source=source,
                detail={
                    "marriage": [str(card), str(shown)],
                    "side": rules.side_of(seat),
                    "points": rules.marriage_points,
                },
            )
        trick = hand.play(card, shown)
        if trick is not None:
            self._after_trick(trick)

    def _after_trick(self, trick: TrickResult) -> None:
        self._emit(
            EventKind.TRICK,
            trick.winner,
            detail={
                "cards": [str(card) for _, card in trick.cards],
                "leader": trick.cards[0][0],
                "points": trick.points,
            },
        )
        for seat, card in trick.draws:
            self._events.append(_shared_event(DRAW, seat, self._deal, str(card), Source.BOT))
        if self._hand.is_over():
            self._end_hand()

    def _spec(self, slot: int) -> DealSpec:
        if self._specs is not None:
            return self._specs[slot]
        return DealSpec(seed=derive_seed(GAME_NAME, self.seed, "hand", slot))

    def _start_hand(self) -> Hand:
        rules = self.sedma_rules
        spec = self._spec(self._slot)
        dealer = spec.dealer
        if dealer is None:  # SD-5: the deal passes left after each (scored) hand
            dealer = (self._first_dealer + self._slot) % self.num_players
        seed = (
            spec.seed
            if self._redeals == 0
            else derive_seed(GAME_NAME, spec.seed, "redeal", self._redeals)
        )
        hands, talon = deal_cards(rules, seed, spec.rotation % self.num_players)
        self._deal += 1
        self._dealer = dealer
        hand = Hand(rules, hands, talon, dealer)
        self._hand = hand
        self._initial.append([[str(card) for card in h] for h in hands])
        self._deal_start = len(self._events)
        detail: dict[str, Any] = {
            "leader": hand.leader,
            "slot": self._slot,
            "redeal": self._redeals,
            "talon_size": len(talon),
        }
        if self._deal == 0 and spec.dealer is None:
            detail["dealer_cut"] = self._cut
        self._emit(EventKind.DEAL_START, dealer, detail=detail)
        return hand

    def _end_hand(self) -> None:
        rules = self.sedma_rules
        hand = self._hand
        score = hand.score()
        common: dict[str, Any] = {
            "points": list(score.points),
            "card_points": list(hand.card_points),
            "marriage_points": list(hand.marriage_points),
            "tricks": list(hand.tricks_won),
            "last_trick": hand.last_trick_side,
        }
        n = self.num_players
        if score.winner_side is None:  # SD-16: a tied hand is void, same dealer redeals
            self._redeals += 1
            given_up = self._redeals > rules.max_redeals
            self._emit(EventKind.VOID_DEAL, self._dealer, detail={**common, "redeal": not given_up})
            self._results.append(
                DealResult(
                    deal=self._deal,
                    winner=None,
                    order=(tuple(range(n)),),
                    deltas=(0,) * n,
                    void=True,
                    detail=common,
                )
            )
            if given_up:
                self._slot += 1
                self._redeals = 0
        else:
            side = score.winner_side
            self._side_totals[side] += score.match_points[side]
            winner_seat = rules.sides()[side][0]
            detail = {
                **common,
                "kind": score.kind,
                "winner_side": side,
                "match_points": list(score.match_points),
                "totals": list(self._side_totals),
            }
            self._emit(EventKind.DEAL_END, winner_seat, detail=detail)
            self._results.append(
                DealResult(
                    deal=self._deal,
                    winner=winner_seat,
                    order=_rank_sides(rules, score.points),
                    deltas=tuple(score.match_points[rules.side_of(s)] for s in range(n)),
                    detail=detail,
                )
            )
            self._slot += 1
            self._redeals = 0
        if self._finished():
            self._over = True
            order = _rank_sides(rules, self._side_totals)
            self._emit(
                EventKind.MATCH_END,
                None,
                detail={"match_points": list(self._side_totals), "winners": list(order[0])},
            )
        else:
            self._start_hand()

    def _finished(self) -> bool:
        rules = self.sedma_rules
        if self._specs is not None:
            return self._slot >= len(self._specs)
        if rules.session == "running":
            return self._slot >= rules.running_hands
        return max(self._side_totals) >= rules.target  # SD-15


_SHARED_EVENTS: dict[tuple[str, int, int, str, str], Event] = {}


def _shared_event(kind: str, seat: int, deal: int, card: str, source: str) -> Event:
    """A ``play`` of one card or a ``draw`` (the card in ``detail``), interned: these two
    make most of a match's events, events are immutable values, and building a frozen
    dataclass costs more than the rest of a decision. The cache is bounded."""
    key = (kind, seat, deal, card, source)
    event = _SHARED_EVENTS.get(key)
    if event is None:
        if kind == DRAW:
            event = Event(DRAW, seat, deal, detail={"card": card})
        else:
            event = Event(kind, seat, deal, card, None, source)
        if len(_SHARED_EVENTS) < 20_000:  # a few MiB at most
            _SHARED_EVENTS[key] = event
    return event


def _rank_sides(rules: SedmaRules, scores: Sequence[int]) -> tuple[tuple[int, ...], ...]:
    """Seats grouped by their side's score, best first; tied sides share a group."""
    sides = rules.sides()
    groups: list[tuple[int, ...]] = []
    for score in sorted(set(scores), reverse=True):
        seats = sorted(s for i, side in enumerate(sides) if scores[i] == score for s in side)
        groups.append(tuple(seats))
    return tuple(groups)
