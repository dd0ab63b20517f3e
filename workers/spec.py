"""What a match job is given (``MatchSpec``) and what it commits (``CommittedResult``).

A season (or a one-off command) stores a :class:`MatchSpec` under
``keys.match_spec(match_id)`` and enqueues a ``run_match`` job for it
(``workers.queue.enqueue_match``). The worker commits exactly one
:class:`CommittedResult` per match id under ``keys.match_result(match_id)`` and appends
``{"match_id", "season"}`` to ``keys.RESULTS_STREAM`` in the same transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypedDict

from referee.games.base import DealSpec


@dataclass(frozen=True, slots=True)
class TimeControl:
    """Clock of every decision (DESIGN section 3): ``move_ms`` per decision, a ``bank_ms``
    reserve per match that absorbs overruns, and ``grace_ms`` for the network.

    ``queue_ms`` is not thinking time: it is how long a request may wait, uncharged, in
    the inbox of a bot that is busy or disconnected before it counts as a timeout
    (reason ``disconnected``). docs/workers.md defines the clock precisely."""

    move_ms: int = 1000
    bank_ms: int = 5000
    grace_ms: int = 50
    queue_ms: int = 30_000

    def to_dict(self) -> dict[str, int]:
        return {
            "move_ms": self.move_ms,
            "bank_ms": self.bank_ms,
            "grace_ms": self.grace_ms,
            "queue_ms": self.queue_ms,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TimeControl:
        return cls(
            move_ms=int(data.get("move_ms", 1000)),
            bank_ms=int(data.get("bank_ms", 5000)),
            grace_ms=int(data.get("grace_ms", 50)),
            queue_ms=int(data.get("queue_ms", 30_000)),
        )


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
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> MatchSpec:
        return cls.from_dict(json.loads(text))


class SeatStats(TypedDict):
    """Per seat counters of one match, for standings and metrics."""

    bot: str
    decisions: int
    timeouts: int
    invalid_actions: int
    illegal_passes: int
    autopilot: bool  # the autopilot took the seat over (strikes exhausted)
    think_ms_total: float


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
