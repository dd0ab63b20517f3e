"""What a match job is given (``MatchSpec``) and what it commits (``CommittedResult``).

A season (or a one-off command) stores a :class:`MatchSpec` under
``keys.match_spec(match_id)`` and enqueues a ``run_match`` job for it
(``referee.queue.enqueue_match``). The match host commits exactly one
:class:`CommittedResult` per match id under ``keys.match_result(match_id)`` and appends
``{"match_id", "season"}`` to ``keys.RESULTS_STREAM`` in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from types import MappingProxyType
from typing import Any, Final, Literal, TypedDict

from referee.games.base import DealSpec, Event, EventKind, derive_seed


class MatchState(StrEnum):
    """The ``state`` field of ``keys.match_state`` and of ``keys.season_matches``: the one
    list of a match's states (``referee.queue`` and ``referee.seasons.store`` write them)."""

    SCHEDULED = "scheduled"  # a season's match not handed to the queue yet (season_matches)
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"  # its season was cancelled before it started (seasons.store)
    UNKNOWN = "unknown"  # never enqueued (only ever reported, never stored)


_S = MatchState
MATCH_MOVES: Final[Mapping[MatchState, frozenset[MatchState]]] = MappingProxyType(
    {
        # a season hands it to the queue (referee.queue.enqueue_match); its season is
        # cancelled (referee.lua.CANCEL)
        _S.SCHEDULED: frozenset({_S.QUEUED, _S.CANCELLED}),
        # a host starts an attempt (referee.lua.START); the job cannot be enqueued
        # (enqueue_match); its season is cancelled; an older attempt still the latest
        # commits after the janitor queued the match again (workers.attempts.commit)
        _S.QUEUED: frozenset({_S.RUNNING, _S.FAILED, _S.CANCELLED, _S.DONE}),
        # the commit; the attempt's error (workers.attempts.mark_failed) or the janitor
        # giving up (referee.queue.requeue_abandoned); the janitor queueing it again; a
        # newer attempt starting
        _S.RUNNING: frozenset({_S.DONE, _S.FAILED, _S.QUEUED, _S.RUNNING}),
        # enqueued again (enqueue_match); scheduled again when its season resumes
        # (referee.lua.UNFAIL); cancelled; a retry job queued before it failed starts; the
        # latest attempt commits after the janitor gave up on it
        _S.FAILED: frozenset({_S.QUEUED, _S.SCHEDULED, _S.CANCELLED, _S.RUNNING, _S.DONE}),
        _S.DONE: frozenset(),  # the result is committed exactly once
        _S.CANCELLED: frozenset(),  # it never plays
    }
)
"""The one state machine of a match: each state and the states it may move to, in
``keys.match_state`` and its season's mirror ``keys.season_matches`` alike (``scheduled``
and ``cancelled`` exist in the mirror only). Python writes a state only through
``referee.queue.write_state``; the Lua scripts of ``referee.lua`` take their guards from
this table. ``tests/workers/test_match_states.py`` plays every writer on real Redis and
checks each move it makes is here."""

FIRST_STATES: Final = frozenset({MatchState.SCHEDULED, MatchState.QUEUED})
"""The states a match is born in: scheduled by a season, queued by a one-off enqueue."""

SETTLED_STATES: Final = frozenset(s for s, moves in MATCH_MOVES.items() if not moves)
"""The final states: a match in one never plays again (``done``, ``cancelled``)."""


def may_move(old: MatchState | None, new: MatchState) -> bool:
    """Whether a match in ``old`` (None: no state yet) may move to ``new``."""
    return new in FIRST_STATES if old is None else new in MATCH_MOVES.get(old, frozenset())


def moving_to(new: MatchState) -> tuple[MatchState, ...]:
    """The states from which a match may move to ``new`` (in the table's order)."""
    return tuple(s for s, moves in MATCH_MOVES.items() if new in moves)


class SeasonState(StrEnum):
    """The ``state`` field of ``keys.season``."""

    CREATED = "created"
    RUNNING = "running"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    FINISHED = "finished"


class FallbackMode(StrEnum):
    """What a match makes of a fallback answer (``Action.fallback``: the bot's SDK or bridge
    answered for it because the bot's code failed): the season option ``fallback``."""

    COUNT = "count"  # applied as the bot's move, counted in ``fallbacks``
    INVALID = "invalid"  # refused as an invalid action (the rules' consequence, a strike)


ClockKind = Literal["wall", "cpu"]
"""What a decision's think time is (docs/workers.md, "The clock"): ``wall``, the referee's
send to receive stamps; ``cpu``, the CPU time a hosted bot's sandbox used in between
(docs/HOSTING.md; a bot whose CPU is not measured, an external one, is judged by the
wall)."""
CLOCK_KINDS: Final = ("wall", "cpu")
CPU_CLOCK_BACKSTOP: Final = 10.0
"""On the CPU clock, a decision may take this many times its limit in wall time ..."""
CPU_CLOCK_BACKSTOP_MIN_MS: Final = 2000.0
"""... and at least its limit plus this (a short clock on a busy machine)."""


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Clock of every decision (docs/workers.md, "The clock"): ``move_ms`` per decision, a
    ``bank_ms`` reserve per match that absorbs overruns, and ``grace_ms`` for the network.

    ``queue_ms`` is not thinking time: it is how long a request may wait, uncharged, at
    the referee for a free slot of a busy bot before it counts as a timeout (reason
    ``disconnected``). ``absent_ms``: how long past its clock a bot with no stream
    anywhere is waited for before its decision is judged ``disconnected``. ``clock``:
    what think time is (:data:`ClockKind`). docs/workers.md defines the clock precisely."""

    move_ms: int = 1000
    bank_ms: int = 5000
    grace_ms: int = 50
    queue_ms: int = 30_000
    absent_ms: int = 3000
    clock: ClockKind = "wall"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "move_ms": self.move_ms,
            "bank_ms": self.bank_ms,
            "grace_ms": self.grace_ms,
            "queue_ms": self.queue_ms,
            "absent_ms": self.absent_ms,
        }
        if self.clock != "wall":  # stored specs of wall-clock seasons keep their old form
            data["clock"] = self.clock
        return data

    def wall_limit_ms(self, limit_ms: float) -> float:
        """The wall time a decision of ``limit_ms`` may take: the limit itself on the wall
        clock; on the CPU clock a backstop of :data:`CPU_CLOCK_BACKSTOP` times it, at least
        :data:`CPU_CLOCK_BACKSTOP_MIN_MS` more (a bot that sleeps, or waits on nothing,
        still loses its turn)."""
        if self.clock != "cpu":
            return limit_ms
        return max(limit_ms * CPU_CLOCK_BACKSTOP, limit_ms + CPU_CLOCK_BACKSTOP_MIN_MS)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeControl:
        """The fields ``data`` has; the class's defaults for the others."""
        given = {
            f.name: int(data[f.name]) for f in fields(cls) if f.name in data and f.name != "clock"
        }
        return cls(**given, clock="cpu" if data.get("clock") == "cpu" else "wall")


@dataclass(frozen=True, slots=True)
class MatchSpec:
    """One match: which game and rules, which bot sits in which seat, how it is dealt.

    A bot may hold several seats (Sedma: one bot plays both seats of a partnership).
    ``deals=None`` lets the rules decide the match length (SV-32, SD-15).
    """

    match_id: str
    game: str
    rules: Mapping[str, Any]
    seats: tuple[str, ...]
    seed: int
    deals: tuple[DealSpec, ...] | None = None
    time_control: TimeControl = field(default_factory=TimeControl)
    season: str = ""
    strikes: int = 3
    autoplay_forced: bool = False
    fallback: FallbackMode = FallbackMode.COUNT

    def for_attempt(self, attempt: int) -> MatchSpec:
        """The spec attempt ``attempt`` plays: this one for the first attempt; for a retry,
        the same seats and rules with every seed replaced by :func:`redeal_seed` (each
        deal's rotation and dealer kept). A retry must not replay deals the abandoned
        attempt may have shown the bots (docs/DECISIONS.md, "A retried match is re-dealt")."""
        if attempt <= 1:
            return self
        deals = (
            None
            if self.deals is None
            else tuple(
                DealSpec(seed=redeal_seed(d.seed, attempt, i), rotation=d.rotation, dealer=d.dealer)
                for i, d in enumerate(self.deals)
            )
        )
        return replace(self, seed=redeal_seed(self.seed, attempt), deals=deals)

    def to_dict(self) -> dict[str, Any]:
        return {
            "match_id": self.match_id,
            "game": self.game,
            "rules": dict(self.rules),
            "seats": list(self.seats),
            "seed": self.seed,
            "deals": None if self.deals is None else [d.to_dict() for d in self.deals],
            "time_control": self.time_control.to_dict(),
            "season": self.season,
            "strikes": self.strikes,
            "autoplay_forced": self.autoplay_forced,
            "fallback": str(self.fallback),
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MatchSpec:
        deals = data.get("deals")
        return cls(
            match_id=data["match_id"],
            game=data["game"],
            rules=dict(data["rules"]),
            seats=tuple(data["seats"]),
            seed=int(data["seed"]),
            deals=None if deals is None else tuple(DealSpec.from_dict(d) for d in deals),
            time_control=TimeControl.from_dict(data.get("time_control", {})),
            season=data.get("season", ""),
            strikes=int(data.get("strikes", 3)),
            autoplay_forced=bool(data.get("autoplay_forced", False)),
            fallback=FallbackMode(data.get("fallback", FallbackMode.COUNT)),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> MatchSpec:
        return cls.from_dict(json.loads(text))


def match_deal_seed(seed: int, index: int) -> int:
    """The seed of deal ``index`` of a one-off match seeded ``seed`` (``arena match run
    --deals``, a casual game from ``arena play`` or the web)."""
    return derive_seed("arena-match", seed, index, bits=48)


def redeal_seed(seed: int, attempt: int, index: int = -1) -> int:
    """The seed of deal ``index`` (-1: the match seed) in retry ``attempt`` of a match."""
    return derive_seed("arena-redeal", seed, attempt, index, bits=48)


class SeatStats(TypedDict):
    """Per seat counters of one match, for standings and metrics."""

    bot: str
    decisions: int
    timeouts: int
    invalid_actions: int
    illegal_passes: int
    fallbacks: int  # answers the bot's SDK or bridge sent because its code failed
    autopilot: bool  # the autopilot took the seat over (strikes exhausted)
    think_ms_total: float


def seat_stats(bot: str) -> SeatStats:
    """The counters of ``bot``'s seat before its first decision."""
    return {
        "bot": bot,
        "decisions": 0,
        "timeouts": 0,
        "invalid_actions": 0,
        "illegal_passes": 0,
        "fallbacks": 0,
        "autopilot": False,
        "think_ms_total": 0.0,
    }


FAILURE_KINDS: Final = frozenset(
    {EventKind.TIMEOUT, EventKind.INVALID_ACTION, EventKind.ILLEGAL_PASS}
)
"""A seat's events that make its decision a failure (a strike towards the autopilot)."""


def tally_decision(
    stats: SeatStats,
    mine: Sequence[Event],
    *,
    no_answer: bool = False,
    fallback: bool = False,
    think_ms: float = 0.0,
) -> bool:
    """Count one decision of a seat in its ``stats`` (the one tally of seat statistics:
    match hosts and in-process seasons): ``mine``, the seat's events of the decision;
    ``no_answer``, nothing came in time. True if the seat failed the decision."""
    kinds = [e.kind for e in mine]
    stats["decisions"] += 1
    stats["timeouts"] += int(no_answer)
    stats["invalid_actions"] += kinds.count(EventKind.INVALID_ACTION)
    stats["illegal_passes"] += kinds.count(EventKind.ILLEGAL_PASS)
    stats["fallbacks"] += int(fallback and not no_answer)
    stats["think_ms_total"] += think_ms
    return no_answer or not FAILURE_KINDS.isdisjoint(kinds)


class CommittedResult(TypedDict):
    """The JSON stored once per match under ``keys.match_result(match_id)``."""

    match_id: str
    season: str
    game: str
    seats: list[str]  # bot name per seat
    attempt: int
    result: dict[str, Any]  # MatchResult.to_dict()
    stats: list[SeatStats]  # per seat
    finished_ms: float
