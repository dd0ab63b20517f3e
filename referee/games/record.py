"""The match record every engine writes with ``Match.to_json`` and reads back with
``Game.match_from_json``: one shape for every game (docs/engine.md, "Match records").

Format 2 (written now)::

    {
      "game": "sevens" | "sedma",
      "format": 2,
      "rules": {...},                      # Rules.to_dict()
      "num_players": 4,
      "seed": 123,
      "deals": null | [DealSpec.to_dict(), ...],
      "actions": [{"seat": 0, "action": "7D"},            # "source" when not "bot"
                  {"seat": 1, "timeout": true}, ...],
      "initial_hands": [[[card, ...] per seat] per deal],
      "events": [Event.to_dict(), ...],
      "stacked": {...}                     # Sevens only, a stacked first deal (tests)
    }

Format 1 records (before the shapes were merged: Sevens wrote ``deal_specs`` and
``[seat, action, source]`` triples, Sedma wrote no events) are still read.

Reading replays the actions through a fresh engine; when the record holds events, the
replay must produce exactly them, otherwise ``MatchStateError`` says where it differs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from referee.games.base import JSON, DealSpec, Event, Source
from referee.games.errors import MatchStateError

FORMAT_VERSION = 2
"""The record format written now; :func:`read_record` also reads format 1."""


class _Replayable(Protocol):
    def is_over(self) -> bool: ...

    def to_act(self) -> int: ...

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]: ...

    def apply_timeout(self) -> list[Event]: ...

    def events(self) -> list[Event]: ...


def action_entry(seat: int, action: str | None, source: str = Source.BOT) -> JSON:
    """One entry of ``actions``: ``action=None`` is a timeout."""
    entry: JSON = {"seat": seat}
    if action is None:
        entry["timeout"] = True
    else:
        entry["action"] = action
    if source != Source.BOT:
        entry["source"] = source
    return entry


def write_record(
    *,
    game: str,
    rules: Mapping[str, Any],
    num_players: int,
    seed: int,
    deals: Sequence[DealSpec] | None,
    actions: list[JSON],
    initial_hands: list[list[list[str]]],
    events: Sequence[Event],
    extra: Mapping[str, Any] | None = None,
) -> str:
    """The record as canonical JSON (sorted keys, no spaces)."""
    data: JSON = {
        "game": game,
        "format": FORMAT_VERSION,
        "rules": dict(rules),
        "num_players": num_players,
        "seed": seed,
        "deals": None if deals is None else [spec.to_dict() for spec in deals],
        "actions": actions,
        "initial_hands": initial_hands,
        "events": [event.to_dict() for event in events],
    }
    data.update(extra or {})
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def read_record(text: str | Mapping[str, Any], game: str) -> JSON:
    """The record of a ``game`` match as a format-2 dict (format 1 is converted).

    Raises ``MatchStateError`` naming what is wrong: not JSON, another game, an unknown
    format, a missing field.
    """
    if isinstance(text, str):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise MatchStateError(f"not a {game} match record (invalid JSON: {exc})") from None
    else:
        data = dict(text)
    if not isinstance(data, dict) or data.get("game") != game:
        found = data.get("game") if isinstance(data, dict) else type(data).__name__
        raise MatchStateError(
            f"not a {game} match record: expected an object with game={game}, got {found!r}"
        )
    version = data.get("format")
    if version not in (1, FORMAT_VERSION):
        raise MatchStateError(
            f"unknown {game} record format {version!r}: expected {FORMAT_VERSION} (or 1)"
        )
    out = dict(data)
    if version == 1 and "deal_specs" in out:
        out["deals"] = out.pop("deal_specs")
    missing = [k for k in ("rules", "num_players", "seed", "actions") if k not in out]
    if missing:
        raise MatchStateError(f"{game} match record lacks {', '.join(missing)}")
    deals = out.get("deals")
    if deals is not None and not isinstance(deals, list):
        raise MatchStateError(f"{game} match record: deals must be null or a list, got {deals!r}")
    if not isinstance(out["actions"], list):
        raise MatchStateError(f"{game} match record: actions must be a list")
    out["actions"] = [_entry(i, a, game) for i, a in enumerate(out["actions"])]
    out["format"] = FORMAT_VERSION
    return out


def _entry(i: int, raw: object, game: str) -> JSON:
    if isinstance(raw, list) and len(raw) == 3:  # format 1 (Sevens): [seat, action, source]
        seat, action, source = raw
        return action_entry(seat, action, source)
    if isinstance(raw, dict) and "seat" in raw and ("timeout" in raw or "action" in raw):
        return dict(raw)
    raise MatchStateError(
        f"{game} match record action #{i} must be {{'seat', 'action'}} or "
        f"{{'seat', 'timeout': true}}, got {raw!r}"
    )


def deal_specs(data: Mapping[str, Any]) -> list[DealSpec] | None:
    """The record's deal specs (``None`` when the match made its own)."""
    deals = data.get("deals")
    try:
        return None if deals is None else [DealSpec.from_dict(d) for d in deals]
    except (KeyError, TypeError, AttributeError) as exc:
        raise MatchStateError(f"match record has a garbled deal spec: {exc!r}") from None


def replay(match: _Replayable, data: Mapping[str, Any], game: str) -> None:
    """Apply the record's actions to ``match`` (fresh from the record's header), checking
    whose turn each was; then, if the record holds events, that the replay made them."""
    for i, entry in enumerate(data["actions"]):
        if match.is_over():
            raise MatchStateError(f"{game} match record has actions after the end (#{i})")
        if entry.get("seat") != match.to_act():
            raise MatchStateError(
                f"{game} match record does not replay: action #{i} is by seat "
                f"{entry.get('seat')!r}, but seat {match.to_act()} is to act"
            )
        if entry.get("timeout"):
            match.apply_timeout()
        else:
            match.apply(entry["action"], entry.get("source", Source.BOT))
    recorded = data.get("events")
    if recorded is not None:
        replayed = [event.to_dict() for event in match.events()]
        if _normal(recorded) != _normal(replayed):
            at = next(
                (i for i, (a, b) in enumerate(zip(recorded, replayed, strict=False)) if a != b),
                min(len(recorded), len(replayed)),
            )
            raise MatchStateError(
                f"{game} match record does not replay: its events differ from the replay's "
                f"from event #{at} on"
            )


def _normal(events: object) -> object:
    """Events as JSON sees them (tuples become lists)."""
    return json.loads(json.dumps(events))
