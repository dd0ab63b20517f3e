"""Visual replays: a committed match as frames, one per step, re-simulated by the engine.

Frame 0 is the table as dealt; frame ``k`` is the table after the record's ``k``-th
step. Each frame keeps every seat's observation (``Match.observation(seat)``, without the
deal history and rules that every frame would repeat), so the page can show each seat's
view (exactly what that seat saw) or the full view (all hands face up: the match is over).
The plain text replay (``referee.match.replay.render_replay``) stays for the terminal.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from referee.games.base import Event, EventKind, Source
from referee.games.cards import action_symbols
from referee.web.records import RecordView, read_record

log = logging.getLogger(__name__)

_DROPPED = ("history", "rules", "game", "preset", "seat")


def view_of(observation: Mapping[str, Any]) -> dict[str, Any]:
    """An observation as a frame keeps it."""
    return {k: v for k, v in observation.items() if k not in _DROPPED}


def describe(event: Event, seats: Sequence[str]) -> str | None:
    """One event in words (``None`` for the ones a frame shows by itself)."""
    who = f"{seats[event.seat]} (seat {event.seat})" if event.seat is not None else ""
    source = "" if event.source == Source.BOT else f" [{event.source}]"
    detail = dict(event.detail)
    match event.kind:
        case EventKind.PLAY:
            return f"{who} plays {action_symbols(event.action or '')}{source}"
        case EventKind.PASS:
            return f"{who} passes{source}" + (f" ({event.reason})" if event.reason else "")
        case EventKind.ILLEGAL_PASS:
            return f"{who} passed while able to play (illegal pass){source}"
        case EventKind.INVALID_ACTION:
            message = detail.get("message", "")
            return f"{who} sent {event.action!r}: refused, {event.reason} {message}".rstrip()
        case EventKind.TIMEOUT:
            return f"{who} ran out of time"
        case EventKind.PENALTY:
            amount = ", ".join(f"{v} {k}" for k, v in detail.items() if isinstance(v, int))
            return f"{who} penalty for {event.reason}" + (f": {amount}" if amount else "")
        case EventKind.ELIMINATED:
            return f"{who} eliminated ({event.reason})"
        case EventKind.TRICK:
            points = detail.get("points")
            return f"trick to {who}" + (f": {points} card points" if points else "")
        case EventKind.DEAL_END:
            return f"deal {event.deal + 1} over"
        case EventKind.VOID_DEAL:
            return f"deal {event.deal + 1} void: redealt"
        case EventKind.DEAL_START | EventKind.MATCH_END:
            return None
        case _:
            return f"{who} {event.kind} {event.action or ''} {event.reason or ''}".strip()


def build_frames(view: RecordView) -> list[dict[str, Any]]:
    """Every frame of the match (see the module docstring)."""
    match = view.new_match()
    n = len(view.seats)
    frames = [
        {
            "step": 0,
            "deal": match.deal_index(),
            "seat": None,
            "text": ["dealt"],
            "views": [view_of(match.observation(s)) for s in range(n)],
        }
    ]
    for k, (match, step, events) in enumerate(view.applied(), start=1):
        texts = [t for e in events if (t := describe(e, view.seats)) is not None]
        if step.get("takeover"):
            texts = [f"{view.seats[int(step['seat'])]}: autopilot takes over (strikes)"]
        if EventKind.DEAL_END in {e.kind for e in events}:
            results = match.deal_results()
            if results:
                changes = ", ".join(
                    f"{name} {delta:+d}"
                    for name, delta in zip(view.seats, results[-1].deltas, strict=False)
                )
                texts.append(f"deal result: {changes}")
        frames.append(
            {
                "step": k,
                "deal": int(step.get("deal", match.deal_index())),
                "seat": step.get("seat"),
                "source": step.get("source", Source.BOT),
                "think_ms": step.get("think_ms"),
                "text": texts,
                "views": [view_of(match.observation(s)) for s in range(n)],
            }
        )
    return frames


def replay_data(record: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON the replay page plays (``/api/replay/<match_id>``)."""
    view = read_record(record)
    frames = build_frames(view)
    deals: dict[int, int] = {}
    for frame in frames:
        deals.setdefault(int(frame["deal"]), int(frame["step"]))
    return {
        "match_id": view.match_id,
        "game": view.game,
        "preset": view.preset,
        "season": view.season,
        "seats": list(view.seats),
        "result": dict(view.result),
        "deal_starts": [deals[d] for d in sorted(deals)],
        "frames": frames,
    }


def replay_text(record: Mapping[str, Any]) -> str:
    """The text replay (``referee.match.replay.render_replay``); when it fails on this record, the
    record itself as indented JSON, with the reason."""
    raw = json.dumps(record, indent=1, sort_keys=True) + "\n"
    try:
        from referee.match.replay import render_replay

        return str(render_replay(record))
    except Exception as exc:  # a record from another version: still show what we have
        log.warning("could not render the replay of %s: %r", record.get("match_id"), exc)
        return f"# could not render this record as a replay ({exc!r}); the raw record:\n{raw}"
