"""Replays of committed match records: re-simulate through the engine, and render as text.

A record (``referee.queue.get_record``) holds the spec (rules, seeds, deal specs), the
initial hands and every step: what the platform applied, in order. Re-simulating those
steps through a fresh engine must give the recorded result; :func:`verify_record` checks
it and :func:`render_replay` prints the match: the layout after each card (Sevens), the
trick as it grows (Sedma), passes, refusals and penalties.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from referee.games.base import Event, EventKind, Match, Source
from referee.games.cards import SUIT_SYMBOLS, action_symbols, card_symbol
from referee.games.registry import get_game
from referee.match.spec import MatchSpec


class ReplayMismatch(Exception):
    """Re-simulating a record did not give its recorded result."""


def _new_match(record: Mapping[str, Any]) -> tuple[MatchSpec, Match]:
    spec = MatchSpec.from_dict(record["spec"])
    game = get_game(spec.game)
    rules = game.rules_from_dict(record["rules"])
    return spec, game.new_match(rules, len(spec.seats), spec.seed, spec.deals)


def apply_steps(
    match: Match, steps: Iterable[Mapping[str, Any]]
) -> Iterator[tuple[Mapping[str, Any], list[Event]]]:
    """The one replay of a match record's steps (what the platform applied, in order:
    ``workers/record.py``) on ``match``, fresh from the record's spec: yields each step
    and the events applying it made. A bot's step applies its answer, or its timeout; any
    other source (forced, autopilot, the host's fallback) its action; a takeover step
    (autopilot from now on) changes nothing and makes no events. ``ReplayMismatch`` when
    a step comes after the match's end; a step lacking its answer or action raises
    ``KeyError``, one the engine refuses a ``RulesError``.

    Used by the record store (``referee.records.expand``), the web's replays, season
    verification (``referee.seasons.verify``) and :func:`resimulate` here."""
    for step in steps:
        if step.get("takeover"):
            yield step, []
            continue
        if match.is_over():
            raise ReplayMismatch(f"the match ended before step {dict(step)!r}")
        if step.get("source", Source.BOT) == Source.BOT:
            events = match.apply_timeout() if step.get("timeout") else match.apply(step["answer"])
        else:
            events = match.apply(step["action"], step["source"])
        yield step, events


def _applied_steps(
    record: Mapping[str, Any],
) -> Iterator[tuple[Match, Mapping[str, Any], list[Event]]]:
    """Re-apply every step of ``record`` to a fresh match; yields (match, step, events)."""
    _spec, match = _new_match(record)
    yield match, {"start": True}, []
    for step, events in apply_steps(match, record["steps"]):
        yield match, step, events


def resimulate(record: Mapping[str, Any]) -> Match:
    """The match rebuilt from the record's spec and steps."""
    steps = _applied_steps(record)
    match, _start, _none = next(steps)
    for _match, _step, _events in steps:
        pass
    return match


def verify_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """Re-simulate ``record`` and return its result; ``ReplayMismatch`` if it differs."""
    match = resimulate(record)
    if not match.is_over():
        raise ReplayMismatch("the recorded steps do not finish the match")
    result = match.result().to_dict()
    if result != record["result"]:
        raise ReplayMismatch(
            f"re-simulated totals {result['totals']} differ from the recorded "
            f"{record['result']['totals']}"
        )
    return result


def _layout(obs: Mapping[str, Any], seats: Sequence[str]) -> str:
    """One line of public table state: Sevens rows, or the Sedma trick."""
    if "table" in obs:
        rows = []
        for suit, symbol in SUIT_SYMBOLS.items():
            cards = [card_symbol(c) for c in obs["table"].get(suit, [])]
            if not cards:
                rows.append(f"{symbol} --")
            elif len(cards) == 1:
                rows.append(f"{symbol} {cards[0]}")
            else:
                rows.append(f"{symbol} {cards[0]}-{cards[-1]}")
        return "  ".join(rows) + (f"  pot {obs['pot']}" if "pot" in obs else "")
    if "trick" in obs:
        trick = ", ".join(
            f"{card_symbol(t['card'])} by {_name(seats, t['seat'])}" for t in obs["trick"]
        )
        return f"trick: {trick or '--'}  talon {obs.get('talon_size', '?')}"
    return ""


def _name(seats: Sequence[str], seat: int) -> str:
    return seats[seat] if 0 <= seat < len(seats) else f"seat {seat}"


def _amount(unit: str, value: int) -> str:
    """``1 chip``, ``2 chips``, ``1 point``."""
    return f"{value} {unit[:-1] if value == 1 and unit.endswith('s') else unit}"


def _words(code: str | None) -> str:
    """A machine-readable reason as words: ``illegal_pass`` -> ``illegal pass``."""
    return (code or "").replace("_", " ")


def _signed(values: Sequence[float], seats: Sequence[str], unit: str = "") -> str:
    """``alice +3, bob -3`` (a seat's name with its signed amount)."""
    text = ", ".join(f"{_name(seats, s)} {v:+g}" for s, v in enumerate(values))
    return f"{text} ({_words(unit)})" if unit else text


def _describe(event: Event, seats: Sequence[str]) -> str | None:
    """One event as a sentence: names, cards as people write them (``10♥``), amounts."""
    who = f"seat {event.seat} ({seats[event.seat]})" if event.seat is not None else ""
    source = "" if event.source == Source.BOT else f" [{event.source}]"
    detail = dict(event.detail)
    paid = [_amount(k, v) for k, v in detail.items() if isinstance(v, int)]
    match event.kind:
        case EventKind.PLAY:
            marriage = detail.get("marriage")
            if isinstance(marriage, list) and len(marriage) == 2:
                points = detail.get("points")
                return (
                    f"{who} plays {card_symbol(marriage[0])} and shows {card_symbol(marriage[1])}: "
                    f"a marriage" + (f", {_amount('points', points)}" if points else "") + source
                )
            return f"{who} plays {action_symbols(event.action or '')}{source}"
        case EventKind.PASS:
            why = [_words(event.reason)] if event.reason else []
            return f"{who} passes{source}" + (f" ({', '.join(why + paid)})" if why or paid else "")
        case EventKind.ILLEGAL_PASS:
            return f"{who} ILLEGAL PASS{source}" + (f" ({', '.join(paid)})" if paid else "")
        case EventKind.INVALID_ACTION:
            message = detail.get("message", "")
            return f"{who} REFUSED {event.action!r}: {_words(event.reason)} {message}".rstrip()
        case EventKind.TIMEOUT:
            return f"{who} TIMEOUT"
        case EventKind.PENALTY:
            payee = detail.get("payee")
            to = f" to {'the pot' if payee == 'pot' else f'the {payee}'}" if payee else ""
            what = _words(event.reason) or "penalty"
            article = "an" if what[:1] in "aeiou" else "a"
            amount = f"pays {', '.join(paid)}{to}" if paid else "is penalised"
            return f"{who} {amount} for {article} {what}"
        case EventKind.ELIMINATED:
            return f"{who} eliminated ({_words(event.reason)})"
        case EventKind.TRICK:
            cards = ", ".join(card_symbol(c) for c in detail.get("cards", []))
            leader = detail.get("leader")
            led = f" led by {_name(seats, leader)}" if isinstance(leader, int) else ""
            points = detail.get("points")
            worth = f", {_amount('points', points)}" if isinstance(points, int) else ""
            return f"{who} takes the trick ({cards}{led}{worth})"
        case "draw":
            return f"{who} draws a card from the talon"
        case "ante":
            return f"{who} antes {', '.join(paid)}"
        case EventKind.VOID_DEAL:
            again = ": dealt again" if detail.get("redeal", True) else ""
            return f"deal {event.deal + 1} is void (a tied hand){again}"
        case EventKind.DEAL_END | EventKind.DEAL_START | EventKind.MATCH_END:
            return None
        case _:
            return f"{who} {_words(event.kind)} {event.action or ''} {_words(event.reason)}".strip()


def render_replay(record: Mapping[str, Any], seat: int | None = None) -> str:
    """The match as text, step by step, re-simulated through the engine. With ``seat``,
    only that seat's hands are shown (the others' as card counts) and its own decisions
    are marked with ``>``."""
    spec = MatchSpec.from_dict(record["spec"])
    lines = [
        f"match {spec.match_id}  game {spec.game}  preset {record['rules'].get('name', '?')}"
        f"  season {spec.season or '-'}  attempt {record.get('attempt', '?')}",
        "seats: " + ", ".join(f"{i}={bot}" for i, bot in enumerate(spec.seats)),
        f"seed {spec.seed}"
        + (
            "  deals " + ", ".join(f"{d.seed}/r{d.rotation}" for d in spec.deals)
            if spec.deals
            else ""
        ),
    ]
    hands = record.get("initial_hands", [])
    current_deal = -1
    for match, step, events in _applied_steps(record):
        if step.get("start"):
            continue
        deal = int(step.get("deal", 0))
        if deal != current_deal:
            current_deal = deal
            lines.append(f"\n== deal {deal + 1}")
            if deal < len(hands):
                for other, hand in enumerate(hands[deal]):
                    shown = " ".join(card_symbol(c) for c in hand)
                    if seat is not None and other != seat:
                        shown = f"({len(hand)} cards)"
                    lines.append(f"   hand {other} ({spec.seats[other]}): {shown}")
        if step.get("takeover"):
            lines.append(f"   seat {step['seat']}: autopilot takes over (strikes)")
            continue
        extra = ""
        if step["source"] == Source.BOT:
            extra = f"  [{step['think_ms']:.0f} ms"
            if step.get("reason"):
                extra += f", {step['reason']}"
            extra += "]"
        mark = ">" if seat is not None and int(step.get("seat", -1)) == seat else " "
        for event in events:
            text = _describe(event, spec.seats)
            if text:
                lines.append(f"  {mark}{text}{extra}")
                extra = ""
            if event.kind == EventKind.DEAL_END:
                results = match.deal_results()
                if results:
                    lines.append(f"   deal over: {_signed(results[-1].deltas, spec.seats)}")
        kinds = {e.kind for e in events}
        if EventKind.PLAY in kinds and EventKind.DEAL_END not in kinds:
            layout = _layout(match.observation(int(step["seat"])), spec.seats)
            if layout:
                lines.append(f"      {layout}")
    result = record["result"]
    winners = [_name(spec.seats, w) for w in result["winners"]]
    lines.append(
        f"\nresult: totals {_signed(result['totals'], spec.seats, result['unit'])}; "
        f"{'winners' if len(winners) > 1 else 'winner'} {', '.join(winners) or 'none'}"
    )
    return "\n".join(lines)
