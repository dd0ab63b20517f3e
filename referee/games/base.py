"""The interface every game engine offers to the layers above it.

Everything above the engines (workers, seasons, standings, the gateway, the CLI)
talks to a game only through these types, so the Sevens family and Sedma are served
without special cases.

Actions are plain strings in canonical form, so that whatever a bot sent can be handed
to the engine unchanged:

* a card: ``7D``; ``pass``;
* a run of cards of one suit in one turn (Sevens with ``multi_card_turn``): the cards
  joined by ``+`` in the order they are placed, ``8D+9D+TD``;
* Sedma marriage announcement while leading (``mariash-sedma``): ``QH+KH`` leads the
  first card and shows the pair.

Legal-action lists are sorted with :func:`action_sort_key`: card actions by their
first card (suit, then rank), then by length; ``pass`` last.

Observations are JSON-able dicts built by ``Match.observation(seat)``: the one place
that decides what a seat may see. Their schema is documented in
``docs/OBSERVATIONS.md`` and mirrored field for field by ``proto/arena/v1/game.proto``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from arena_sdk.observation import HistoryItem as HistoryItem
from arena_sdk.observation import Observation as Observation
from referee.games.cards import Card

PASS = "pass"
"""The pass action."""

RUN_SEPARATOR = "+"
"""Joins the cards of a multi-card action (a run, or a marriage lead)."""

JSON = dict[str, Any]


def action_sort_key(action: str) -> tuple[int, int, int]:
    """Sort key of the canonical legal-action order (cards by suit then rank, pass last)."""
    if action == PASS:
        return (1, 0, 0)
    first, _, _rest = action.partition(RUN_SEPARATOR)
    return (0, Card.parse(first).index, action.count(RUN_SEPARATOR))


class EventKind:
    """Event kinds shared by every engine (an engine may add its own, documented ones)."""

    DEAL_START = "deal_start"
    PLAY = "play"  # an accepted card (or run) played
    PASS = "pass"  # a legal pass (forced, free, or a paid voluntary pass)
    ILLEGAL_PASS = "illegal_pass"  # a pass while able to play (SV-18/SV-19)
    INVALID_ACTION = "invalid_action"  # refused: not held, not legal, malformed (SV-21)
    TIMEOUT = "timeout"  # the seat did not answer in time (docs/workers.md)
    PENALTY = "penalty"  # chips or points paid because of a penalty
    ELIMINATED = "eliminated"  # out of the deal (SV-19 forfeit, SV-23)
    TRICK = "trick"  # Sedma: a trick was won
    DEAL_END = "deal_end"
    VOID_DEAL = "void_deal"  # Sedma: a tied hand, redealt (SD-16)
    MATCH_END = "match_end"


class Source:
    """Who chose an action: the bot itself, the platform's autopilot, or auto-play."""

    BOT = "bot"
    AUTOPILOT = "autopilot"  # after strikes, or Sedma's answer to a timeout/invalid action
    FORCED = "forced"  # a single-option decision auto-played by season option


@dataclass(frozen=True, slots=True)
class Event:
    """One thing that happened in a match, in the order it happened.

    ``reason`` is a machine-readable code (``not_held``, ``not_legal``, ``malformed``,
    ``illegal_pass``, ``timeout``, ``pass_limit`` …); ``detail`` holds JSON-able extras,
    e.g. ``{"chips": 5, "payee": "pot"}`` on a penalty or ``{"message": "…"}`` with the
    reason in words on a refused action.
    """

    kind: str
    seat: int | None = None
    deal: int = 0
    action: str | None = None
    reason: str | None = None
    source: str = Source.BOT
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> JSON:
        out: JSON = {"kind": self.kind, "deal": self.deal}
        if self.seat is not None:
            out["seat"] = self.seat
        if self.action is not None:
            out["action"] = self.action
        if self.reason is not None:
            out["reason"] = self.reason
        if self.source != Source.BOT:
            out["source"] = self.source
        if self.detail:
            out["detail"] = dict(self.detail)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        return cls(
            kind=data["kind"],
            seat=data.get("seat"),
            deal=data.get("deal", 0),
            action=data.get("action"),
            reason=data.get("reason"),
            source=data.get("source", Source.BOT),
            detail=dict(data.get("detail", {})),
        )


@dataclass(frozen=True, slots=True)
class PenaltyRecord:
    """A penalty applied in a deal: who, why (reason code), and how much (native unit)."""

    seat: int
    reason: str
    amount: int

    def to_dict(self) -> JSON:
        return {"seat": self.seat, "reason": self.reason, "amount": self.amount}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PenaltyRecord:
        return cls(seat=data["seat"], reason=data["reason"], amount=data["amount"])


@dataclass(frozen=True, slots=True)
class DealResult:
    """The outcome of one deal (Sevens) or hand (Sedma).

    ``order`` is the finishing order, best first, as groups of seats that tie (a Sedma
    partnership is one group). ``deltas`` is each seat's change of the match score in
    the match's native unit (see ``MatchResult.unit``); for chip games they sum to zero
    (SV-31). ``detail`` holds game-specific extras (cards left, points per side, …).
    """

    deal: int
    winner: int | None
    order: tuple[tuple[int, ...], ...]
    deltas: tuple[int, ...]
    penalties: tuple[PenaltyRecord, ...] = ()
    void: bool = False
    detail: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> JSON:
        return {
            "deal": self.deal,
            "winner": self.winner,
            "order": [list(group) for group in self.order],
            "deltas": list(self.deltas),
            "penalties": [p.to_dict() for p in self.penalties],
            "void": self.void,
            "detail": dict(self.detail),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DealResult:
        return cls(
            deal=data["deal"],
            winner=data["winner"],
            order=tuple(tuple(group) for group in data["order"]),
            deltas=tuple(data["deltas"]),
            penalties=tuple(PenaltyRecord.from_dict(p) for p in data.get("penalties", [])),
            void=data.get("void", False),
            detail=dict(data.get("detail", {})),
        )


@dataclass(frozen=True, slots=True)
class MatchResult:
    """The outcome of a whole match.

    ``totals`` are per seat in ``unit`` (``chips``, ``penalty_points``, ``deals_won``
    or ``match_points``); ``higher_is_better`` says which way they rank. ``order`` is
    the match's finishing order with ties grouped, after the rules' tie-breaks.
    """

    totals: tuple[int, ...]
    unit: str
    higher_is_better: bool
    order: tuple[tuple[int, ...], ...]
    winners: tuple[int, ...]
    deals: tuple[DealResult, ...]

    def to_dict(self) -> JSON:
        return {
            "totals": list(self.totals),
            "unit": self.unit,
            "higher_is_better": self.higher_is_better,
            "order": [list(group) for group in self.order],
            "winners": list(self.winners),
            "deals": [deal.to_dict() for deal in self.deals],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchResult:
        return cls(
            totals=tuple(data["totals"]),
            unit=data["unit"],
            higher_is_better=data["higher_is_better"],
            order=tuple(tuple(group) for group in data["order"]),
            winners=tuple(data["winners"]),
            deals=tuple(DealResult.from_dict(d) for d in data["deals"]),
        )


@dataclass(frozen=True, slots=True)
class DealSpec:
    """How one deal of a match is dealt.

    The deck is shuffled by ``seed``. In Sevens it is then dealt as a dealer deals it
    (SV-4): one card at a time clockwise from the dealer's left, card ``k`` to seat
    ``(dealer + 1 + k) % num_players``, so the seats left of the dealer get the extra
    cards whatever the spec; ``rotation`` has no further effect there, the dealer carries
    it. In Sedma (even hands) hand ``i`` goes to seat ``(i + rotation) % num_players``.
    For duplicate deals a season plays the same seed with rotations ``0 .. n-1`` and
    ``dealer`` rotated along with them, so every bot plays every hand from the same
    position relative to the dealer. ``dealer=None`` means the match's normal dealer
    rotation (SV-5, SD-5).
    """

    seed: int
    rotation: int = 0
    dealer: int | None = None

    def to_dict(self) -> JSON:
        return {"seed": self.seed, "rotation": self.rotation, "dealer": self.dealer}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> DealSpec:
        return cls(seed=data["seed"], rotation=data.get("rotation", 0), dealer=data.get("dealer"))


def history_view(events: Sequence[Event], seat: int) -> list[HistoryItem]:
    """The events of the current deal as ``seat`` may see them.

    The text of a refused action is never shown, to any seat (docs/OBSERVATIONS.md): it
    may name cards a seat holds (``"7D"`` refused as ``not_legal`` says its sender holds
    the 7D), and its sender already has it back in its action result. ``seat`` is the
    observer; every seat sees the same public history today.

    >>> refused = Event(EventKind.INVALID_ACTION, 1, action="7D", reason="not_legal")
    >>> history_view([refused], seat=1)
    [{'seat': 1, 'kind': 'invalid_action', 'reason': 'not_legal'}]
    >>> history_view([Event(EventKind.PLAY, 0, action="7H")], seat=1)
    [{'seat': 0, 'kind': 'play', 'action': '7H'}]
    """
    out: list[HistoryItem] = []
    for event in events:
        item: HistoryItem = {"seat": -1 if event.seat is None else event.seat, "kind": event.kind}
        if event.action is not None and event.kind != EventKind.INVALID_ACTION:
            item["action"] = event.action
        if event.reason is not None:
            item["reason"] = event.reason
        out.append(item)
    return out


class DealHistory:
    """:func:`history_view` of the current deal, each event converted once.

    An engine asked for an observation at every decision would otherwise convert the whole
    deal's events again each time (a deal's history grows by a few events per decision).
    This keeps the items of the events already seen and converts only the new ones. It
    relies on two facts, both checked by ``tests/games/test_contract.py``: a deal's events
    are only ever appended to, and :func:`history_view` converts event by event, the same
    for every seat (no seat sees a different history today; a per-seat filter would need
    one ``DealHistory`` per seat). Each call returns fresh copies of the items, so a caller
    that changes its observation changes nothing the engine keeps.
    """

    __slots__ = ("_events", "_items", "_start")

    def __init__(self) -> None:
        self._events: Sequence[Event] | None = None
        self._start = -1
        self._items: list[HistoryItem] = []

    def view(self, events: Sequence[Event], deal_start: int, seat: int) -> list[HistoryItem]:
        """``history_view(events[deal_start:], seat)``: the current deal's history, whose
        events start at index ``deal_start`` of the match's ``events`` (the engine's own
        list: another list, e.g. a copied match's, starts the cache over)."""
        items = self._items
        if (
            events is not self._events
            or deal_start != self._start
            or deal_start + len(items) > len(events)
        ):
            self._events = events
            self._start = deal_start
            items = self._items = []
        seen = deal_start + len(items)
        if len(events) > seen:
            items.extend(history_view(events[seen:], seat))
        return [item.copy() for item in items]


def build_observation(
    *,
    game: str,
    preset: str,
    rules: JSON,
    seat: int,
    num_players: int,
    deal_index: int,
    num_deals: int,
    dealer: int,
    to_act: int,
    hand: list[str],
    hand_sizes: list[int],
    totals: list[int],
    unit: str,
    history: list[HistoryItem],
) -> Observation:
    """The common part of every observation; ``history`` is the current deal's events as
    ``seat`` may see them (:func:`history_view`, built incrementally by :class:`DealHistory`)."""
    return {
        "game": game,
        "preset": preset,
        "rules": rules,
        "seat": seat,
        "num_players": num_players,
        "deal_index": deal_index,
        "num_deals": num_deals,
        "dealer": dealer,
        "to_act": to_act,
        "hand": hand,
        "hand_sizes": hand_sizes,
        "totals": totals,
        "unit": unit,
        "history": history,
    }


def derive_seed(*parts: object, bits: int = 63, keep: Literal["high", "low"] = "high") -> int:
    """A seed of ``bits`` bits from SHA-256 of ``"part1:part2:..."``: stable across runs,
    platforms and Python versions, and revealing nothing of the seed it is derived from.

    The one seed derivation of the project: the first 8 bytes of the digest, read
    big-endian, as a 64-bit word; the seed is its top ``bits`` bits (``keep="high"``, the
    default) or its bottom ``bits`` bits (``keep="low"``). Callers differ only in their
    parts, width and end, each documented where it is used:

    * 63 high bits: seasons (schedule, match and deal seeds; docs/seasons.md), Sedma's cut
      and redeals (docs/SEDMA_DECISIONS.md);
    * 63 low bits: a Sevens match's own deal specs (D-11 in docs/SEVENS_DECISIONS.md:
      "first 8 bytes, top bit cleared") and ``arena selfplay --deals``;
    * 48 high bits (the first 6 bytes): ``arena match run`` deal seeds and a match's
      redeal on retry (``referee.match.spec.redeal_seed``);
    * 64 bits: the in-process season's per-turn random generators and the per-seat ones of
      ``arena selfplay`` and the benches (``referee.games.loop.seat_rng``).

    >>> derive_seed(42, 0, 1) == derive_seed("42:0:1")
    True
    >>> 0 <= derive_seed("sedma", 7, "hand", 0) < 2**63
    True
    >>> word = derive_seed(7, 0, bits=64)
    >>> (derive_seed(7, 0), derive_seed(7, 0, keep="low")) == (word >> 1, word % 2**63)
    True
    >>> derive_seed(7, 0, bits=48) == word >> 16
    True
    """
    if not 1 <= bits <= 64:
        raise ValueError(f"a derived seed has 1 to 64 bits, not {bits}")
    text = ":".join(str(p) for p in parts)
    word = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
    return word >> (64 - bits) if keep == "high" else word & ((1 << bits) - 1)


@runtime_checkable
class Rules(Protocol):
    """A frozen, validated rules object. ``name`` is its preset name (or ``custom``)."""

    @property
    def name(self) -> str: ...

    def to_dict(self) -> JSON: ...


class Match(Protocol):
    """A match in progress: a sequence of deals under one rules object.

    The match starts its next deal by itself when one ends. The contract every engine
    follows (checked for every game and preset by ``tests/games/test_contract.py``):

    * ``apply`` and ``apply_timeout`` never raise for anything a bot may send: refused
      actions are handled as the rules and docs/DECISIONS.md say and come back as events.
      Only calling them after the end raises (``MatchStateError``).
    * ``legal_actions()`` is sorted by :func:`action_sort_key` and is ``[]`` once the match
      is over; ``check(a)`` is ``None`` for each of them, and a reason in words for
      anything else (after the end: for everything).
    * ``to_act()``, ``fallback_action()`` and ``result()`` raise ``MatchStateError`` when
      they do not apply (after the end, or before it for ``result``); ``observation`` raises
      it for a seat that is not ``0 .. num_players - 1``.
    * ``observation(seat)`` never shows another seat's cards: not its hand, and never the
      text of a refused action, whoever sent it (:func:`history_view`).
    * ``to_json()`` writes the record of :mod:`referee.games.record` (the same shape for
      every game, events included) and ``Game.match_from_json`` reads it back into an equal
      match, or raises ``MatchStateError`` saying why it cannot.
    * Errors are the rules layer's own (``referee.games.errors``); no other exception
      escapes for any input.
    """

    game: str
    rules: Rules
    num_players: int
    seed: int

    def is_over(self) -> bool: ...

    def to_act(self) -> int:
        """The seat that must act now (raises ``MatchStateError`` when the match is over)."""
        ...

    def deal_index(self) -> int:
        """0-based index of the current (or last) deal."""
        ...

    def legal_actions(self) -> list[str]:
        """The sorted legal actions of the seat to act; ``[]`` once the match is over."""
        ...

    def check(self, action: str) -> str | None:
        """``None`` when ``action`` is legal for the seat to act, else the reason in words."""
        ...

    def observation(self, seat: int) -> Observation:
        """Everything ``seat`` may know now, and nothing more (docs/OBSERVATIONS.md): the
        common fields built by :func:`build_observation` plus the game's own (the type is
        ``arena_sdk.observation.Observation``, the one declaration every side uses)."""
        ...

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]:
        """Apply what the seat to act sent (whatever it is); return the new events."""
        ...

    def apply_timeout(self) -> list[Event]:
        """The seat to act did not answer in time: apply the rules' consequence."""
        ...

    def fallback_action(self) -> str:
        """A deterministic legal action for the autopilot (the same state gives the same one);
        ``MatchStateError`` once the match is over."""
        ...

    def events(self) -> list[Event]:
        """Every event of the match so far, in order."""
        ...

    def deal_results(self) -> list[DealResult]:
        """Results of the deals finished so far."""
        ...

    def result(self) -> MatchResult:
        """The match result (raises ``MatchStateError`` before the end)."""
        ...

    def initial_hands(self) -> list[list[list[str]]]:
        """Per deal so far, each seat's hand as dealt (canonical card text, sorted)."""
        ...

    def to_json(self) -> str:
        """The match record (:mod:`referee.games.record`): rules, seed, deal specs, every
        action with its source, the hands as dealt and the events; enough to replay."""
        ...


class Game(Protocol):
    """A game offered by the platform (``sevens``, ``sedma``)."""

    name: str

    def presets(self) -> Mapping[str, Rules]:
        """Every named preset, by name."""
        ...

    def preset(self, name: str) -> Rules:
        """One preset; ``InvalidRulesError`` naming the known presets if unknown."""
        ...

    def rules_from_dict(self, data: Mapping[str, Any]) -> Rules:
        """Build and validate a rules object (``InvalidRulesError`` says what to fix)."""
        ...

    def player_counts(self, rules: Rules) -> Sequence[int]:
        """The table sizes these rules allow."""
        ...

    def new_match(
        self,
        rules: Rules,
        num_players: int,
        seed: int,
        deals: Sequence[DealSpec] | None = None,
    ) -> Match:
        """A match dealt from ``seed``; ``deals`` fixes each deal's seed and rotation,
        otherwise the rules' own match length is used (SV-32, SD-15)."""
        ...

    def match_from_json(self, text: str) -> Match:
        """Load a match serialized by ``Match.to_json`` (replaying its actions)."""
        ...
