"""HumanSeat (one module, fakes only): it hands a turn to the person, returns their answer,
and stops waiting when the turn's clock ran out, so a late person never blocks the seat's
next turn."""

from __future__ import annotations

import threading
import time
from typing import Any, cast

import pytest

from referee.web import human
from sample_bots.sdk import ActionOutcome, Clock, Fallback, Observation, Turn


def turn(seq: int, move_ms: int = 60_000) -> Turn:
    return Turn(
        match_id="m",
        attempt=1,
        seq=seq,
        seat=0,
        game="sevens",
        observation=cast(Observation, {"hand": ["7D", "8D"]}),  # partial: what the seat reads
        legal_actions=["7D", "pass"],
        clock=Clock(move_ms=move_ms, bank_ms=0, grace_ms=0),
        season="",
    )


def outcome(seq: int, status: str) -> ActionOutcome:
    return ActionOutcome("m", 1, seq, status, "timeout", "too late", 0, "pass", 0, False)


def test_the_persons_answer_to_that_turn_is_returned_and_only_the_turn_is_shown() -> None:
    shown: list[tuple[str, dict[str, Any]]] = []
    seat = human.HumanSeat("human-x", lambda kind, payload: shown.append((kind, payload)))
    seat.answer(1, "pass")  # an answer to an older turn is ignored
    threading.Timer(0.2, seat.answer, args=(2, "7D")).start()
    assert seat.choose(turn(2)) == "7D"
    assert shown[0][0] == "turn"
    assert set(shown[0][1]) == {
        "match_id", "attempt", "seq", "seat", "game", "season", "observation",
        "legal_actions", "clock",
    }  # fmt: skip


def test_a_person_who_does_not_answer_in_time_does_not_block_the_seat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(human, "GIVE_UP_MARGIN_S", 0.0)
    seat = human.HumanSeat("human-x", lambda kind, payload: None)
    started = time.monotonic()
    # the clock ran out: the first legal action, marked as not the person's choice
    assert seat.choose(turn(1, move_ms=300)) == Fallback("7D", "no_answer")
    assert time.monotonic() - started < 5
    # The referee's timed_out result releases a waiting choose at once.
    threading.Timer(0.2, seat.on_result, args=(outcome(2, "timed_out"),)).start()
    started = time.monotonic()
    assert seat.choose(turn(2)) == Fallback("7D", "no_answer")
    assert time.monotonic() - started < 30
