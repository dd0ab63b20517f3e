"""A season's rows, typed: the season hash (``keys.season``) as :class:`SeasonRow`, every
field named, parsed once (:meth:`SeasonRow.parse`) and written back as Redis holds it
(:meth:`SeasonRow.to_hash`); the standings JSON (``keys.season_standings``, docs/seasons.md)
as :class:`Standings` of :class:`StandingRow`. Pure: the readers (store, League API, web,
metrics, CLI, ladder, supervisor) fetch the hashes and skip, with a log line, a hash
:meth:`SeasonRow.parse` refuses (:class:`BadSeasonRow`).

The counters ``matches_done``, ``matches_failed`` and ``decisions`` are changed in Redis by
the Lua scripts of ``referee.lua`` (``COUNT_DONE``, ``COUNT_FAILED``, ``UNFAIL``), the
state by ``TRANSITION`` and ``CANCEL``; a row is what one read saw.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from referee.match.spec import SeasonState


class BadSeasonRow(ValueError):
    """A season hash with no state or a state :class:`SeasonState` does not name (a hash
    being deleted, or written by a later version): its readers skip it."""


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _int(value: str | None) -> int:
    return int(value) if value else 0


def _ms(value: str | None) -> float | None:
    return float(value) if value else None


def _ms_text(value: float | None) -> str:
    """A time as the season's writers store it: whole milliseconds without a fraction."""
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)


@dataclass(frozen=True, slots=True)
class SeasonRow:
    """One season's hash: the season id, then its fields as stored."""

    season: str
    state: SeasonState
    spec: str  # SeasonSpec.public() JSON: the seed only once revealed
    game: str
    preset: str
    rules: str  # the resolved rules, JSON
    owners: str  # bot -> owner, JSON
    seed_sha256: str  # the commitment published at creation
    duplicate: str = ""  # what the duplicate option does here, in words
    schedule: str = ""  # the schedule's kind ("versus", "given", or a round robin's "")
    matches_total: int = 0
    matches_done: int = 0
    matches_failed: int = 0
    decisions: int = 0
    created_ms: float = 0.0
    started_ms: float | None = None
    finished_ms: float | None = None
    seed: str | None = None  # revealed when the season has ended ("" once cancelled)

    @classmethod
    def parse(cls, season: str, fields: Mapping[str, str] | Mapping[bytes, bytes]) -> SeasonRow:
        """The row of the hash ``fields`` (str or bytes, as the connection decodes);
        :class:`BadSeasonRow` when it has no state or one :class:`SeasonState` lacks."""
        raw = {_text(k): _text(v) for k, v in fields.items()}
        try:
            state = SeasonState(raw["state"])
        except KeyError:
            raise BadSeasonRow(f"season {season!r} has no state") from None
        except ValueError:
            raise BadSeasonRow(f"season {season!r} has an unknown state {raw['state']!r}") from None
        return cls(
            season=season,
            state=state,
            spec=raw.get("spec", ""),
            game=raw.get("game", ""),
            preset=raw.get("preset", ""),
            rules=raw.get("rules", "{}"),
            owners=raw.get("owners", "{}"),
            seed_sha256=raw.get("seed_sha256", ""),
            duplicate=raw.get("duplicate", ""),
            schedule=raw.get("schedule", ""),
            matches_total=_int(raw.get("matches_total")),
            matches_done=_int(raw.get("matches_done")),
            matches_failed=_int(raw.get("matches_failed")),
            decisions=_int(raw.get("decisions")),
            created_ms=_ms(raw.get("created_ms")) or 0.0,
            started_ms=_ms(raw.get("started_ms")),
            finished_ms=_ms(raw.get("finished_ms")),
            seed=raw.get("seed"),
        )

    def to_hash(self) -> dict[str, str]:
        """The fields as Redis holds them (no ``season``: it is the key's; no ``seed``
        until one is set)."""
        out = {
            "spec": self.spec,
            "state": str(self.state),
            "game": self.game,
            "preset": self.preset,
            "rules": self.rules,
            "owners": self.owners,
            "seed_sha256": self.seed_sha256,
            "duplicate": self.duplicate,
            "schedule": self.schedule,
            "matches_total": str(self.matches_total),
            "matches_done": str(self.matches_done),
            "matches_failed": str(self.matches_failed),
            "decisions": str(self.decisions),
            "created_ms": _ms_text(self.created_ms),
            "started_ms": _ms_text(self.started_ms),
            "finished_ms": _ms_text(self.finished_ms),
        }
        if self.seed is not None:
            out["seed"] = self.seed
        return out

    @property
    def settled(self) -> int:
        """Matches that will not play again: done or failed."""
        return self.matches_done + self.matches_failed

    def owners_map(self) -> dict[str, str]:
        owners: dict[str, str] = json.loads(self.owners or "{}")
        return owners


class StandingRow(TypedDict):
    """One bot's row of the standings (docs/seasons.md, "Standings"), as
    ``referee.seasons.tallies.standings_of`` writes it."""

    bot: str
    rank: int
    matches: int
    deals: int
    deals_won: int
    avg_place: float
    score: float | int
    illegal_passes: int
    invalid_actions: int
    timeouts: int
    autopilot_seats: int
    fallbacks: int
    elo: float
    elo_low: float
    elo_high: float
    live_elo: float
    openskill_mu: float
    openskill_sigma: float
    openskill_ordinal: float
    dup_score: float
    dup_hands: int


ROW_FIELDS: tuple[str, ...] = tuple(StandingRow.__annotations__)
"""The fields of a standings row, in the order the CSV export writes them."""


class EloInterval(TypedDict):
    """How the Elo intervals were made: matches (the clusters), the Student-t quantile on
    matches - 1 degrees of freedom, and a warning when they are too few."""

    matches: int
    quantile: float
    warning: str


class Standings(TypedDict):
    """A season's standings JSON (docs/seasons.md). Standings stored before ``rank_by`` and
    ``elo_interval`` existed lack them (ranked by Elo)."""

    season: str
    game: str
    unit: str
    matches_done: int
    matches_total: int
    updated_ms: int
    rank_by: NotRequired[str]
    rows: list[StandingRow]
    elo_interval: NotRequired[EloInterval]
