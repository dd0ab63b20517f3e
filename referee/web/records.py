"""The one place the web reads the shape of a committed match record (the pages fetch it
through ``referee.records``, wherever it is stored).

Records are written by the workers; their shape may change (the spec's deal list, the
steps). Everything the pages need goes through :func:`read_record`, so a change of shape
is one edit here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from referee.games.base import DealSpec, Event, Match
from referee.games.registry import get_game
from referee.match.replay import ReplayMismatch, apply_steps


class RecordError(ValueError):
    """A record this version cannot read (says which part is missing or wrong)."""


@dataclass(frozen=True)
class RecordView:
    match_id: str
    game: str
    preset: str
    season: str
    seats: tuple[str, ...]
    seed: int
    deals: tuple[DealSpec, ...] | None
    rules: Mapping[str, Any]
    steps: tuple[Mapping[str, Any], ...]
    result: Mapping[str, Any]
    attempt: int

    def new_match(self) -> Match:
        game = get_game(self.game)
        return game.new_match(
            game.rules_from_dict(self.rules), len(self.seats), self.seed, self.deals
        )

    def applied(self) -> Iterator[tuple[Match, Mapping[str, Any], list[Event]]]:
        """Re-apply the steps to a fresh match: (match after the step, step, its events);
        a takeover step (autopilot from now on) changes nothing and yields no events."""
        match = self.new_match()
        try:
            for step, events in apply_steps(match, self.steps):
                yield match, step, events
        except ReplayMismatch as exc:
            raise RecordError(str(exc)) from None
        except (KeyError, TypeError) as exc:
            raise RecordError(f"a step lacks or garbles {exc}") from None


def read_record(record: Mapping[str, Any]) -> RecordView:
    """A record as the web reads it (``RecordError`` says what is missing)."""
    try:
        spec = record["spec"]
        raw_deals = spec.get("deals", spec.get("deal_specs"))
        deals = None if raw_deals is None else tuple(DealSpec.from_dict(d) for d in raw_deals)
        rules = record.get("rules") or spec["rules"]
        return RecordView(
            match_id=str(spec.get("match_id", record.get("match_id", ""))),
            game=str(spec["game"]),
            preset=str(rules.get("name", "")),
            season=str(spec.get("season", "")),
            seats=tuple(str(s) for s in spec["seats"]),
            seed=int(spec["seed"]),
            deals=deals,
            rules=rules,
            steps=tuple(record.get("steps", [])),
            result=record.get("result") or {},
            attempt=int(record.get("attempt", 1)),
        )
    except (KeyError, TypeError, AttributeError) as exc:
        raise RecordError(
            f"the record lacks or garbles {exc}: expected spec, rules and steps"
        ) from None
