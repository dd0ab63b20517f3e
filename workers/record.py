"""The match record a host keeps of one attempt (docs/workers.md "Match record"): every
step as it was played, everything needed to audit and replay the match, and the result
committed beside it (``referee.match.spec.CommittedResult``)."""

from __future__ import annotations

import json
from typing import Any, Final

from referee.games.base import Event, Match, Observation, Rules, Source
from referee.match.messages import ClockInfo
from referee.match.spec import CommittedResult, MatchSpec, SeatStats
from workers.ask import Reply

RECORD_VERSION: Final = 3

Step = dict[str, Any]
"""One step of the record, as JSON: an action the platform applied, a bot's decision with
its request and answer, or the autopilot taking a seat over."""

_NOT_RECORDED: Final = frozenset({"rules", "history"})


def recorded(observation: Observation) -> dict[str, object]:
    """A request's observation as the match record keeps it: without the rules (the
    record's own ``rules``) and the deal's history (the record's ``events`` of the deal up
    to this step; ``history_entries`` says how many the seat was shown), which every step
    would repeat (docs/workers.md "Match record")."""
    return {k: v for k, v in observation.items() if k not in _NOT_RECORDED}


def dicts(events: list[Event]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in events]


def auto_step(deal: int, seat: int, source: str, action: str, events: list[Event]) -> Step:
    """An action the platform applied without asking the bot (forced, autopilot)."""
    return {"deal": deal, "seat": seat, "source": source, "action": action, "events": dicts(events)}


def bot_step(
    deal: int,
    seat: int,
    seq: int,
    request: tuple[Observation, list[str], ClockInfo],
    reply: Reply,
    told: tuple[str, str],
    wall_ms: float,
    bank_left_ms: float,
    events: list[Event],
) -> Step:
    """A decision asked of a bot: what it was shown (observation, legal actions, clock),
    what it answered, what it was told (status, reason), and the events."""
    observation, legal, clock = request
    status, reason = told
    return {
        "deal": deal,
        "seat": seat,
        "source": Source.BOT,
        "seq": seq,
        "request": {
            "observation": recorded(observation),
            "history_entries": len(observation.get("history", ())),
            "legal_actions": legal,
            "clock": clock,
        },
        "answer": reply.action,
        **({"fallback": reply.fallback} if reply.fallback else {}),
        "timeout": bool(reply.failure),
        "status": status,
        "reason": reason,
        "think_ms": round(reply.think_ms, 3),
        **({"cpu_clock": True} if reply.cpu_clock else {}),
        "wall_ms": round(wall_ms, 3),
        "wait_ms": round(reply.wait_ms, 3),
        "bank_left_ms": round(bank_left_ms, 3),
        "events": dicts(events),
    }


def takeover_step(deal: int, seat: int, source: str) -> Step:
    """The autopilot took the seat over."""
    return {"deal": deal, "seat": seat, "source": source, "takeover": True}


def committed_result(
    spec: MatchSpec, attempt: int, match: Match, stats: list[SeatStats], finished_ms: float
) -> CommittedResult:
    return {
        "match_id": spec.match_id,
        "season": spec.season,
        "game": spec.game,
        "seats": list(spec.seats),
        "attempt": attempt,
        "result": match.result().to_dict(),
        "stats": stats,
        "finished_ms": finished_ms,
    }


def match_record(
    played: MatchSpec,
    scheduled: MatchSpec,
    attempt: int,
    rules: Rules,
    match: Match,
    steps: list[Step],
    stats: list[SeatStats],
    finished_ms: float,
    resent: int,
) -> dict[str, Any]:
    """Everything needed to audit and replay the match (docs/workers.md): ``played``, the
    spec the attempt played (re-dealt or not), ``scheduled``, the one it was given."""
    engine = json.loads(match.to_json())
    # The engine's record holds the events as Event.to_dict() made them (the Match
    # contract, referee/games/base.py): the same list, not made a second time.
    events = engine.get("events")
    record = {
        "version": RECORD_VERSION,
        "match_id": played.match_id,
        "attempt": attempt,
        "spec": played.to_dict(),
        "rules": rules.to_dict(),
        "initial_hands": match.initial_hands(),
        "steps": steps,
        "events": events if isinstance(events, list) else dicts(match.events()),
        "engine": engine,
        "result": match.result().to_dict(),
        "stats": stats,
        "finished_ms": finished_ms,
        "resent": resent,
    }
    if played is not scheduled:
        record["redealt"] = {
            "attempt": attempt,
            "scheduled_seed": scheduled.seed,
            "scheduled_deals": None
            if scheduled.deals is None
            else [d.to_dict() for d in scheduled.deals],
        }
    return record
