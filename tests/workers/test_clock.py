"""MatchClock: the clock policy of docs/workers.md, clause by clause (no timing involved)."""

from __future__ import annotations

from referee.match.clock import MatchClock, Verdict
from referee.match.spec import TimeControl

TC = TimeControl(move_ms=1000, bank_ms=500, grace_ms=50)


def test_limit_is_move_plus_bank_left_plus_grace() -> None:
    clock = MatchClock(TC, 2)
    assert clock.limit_ms(0) == 1550
    assert clock.info(1) == {"move_ms": 1000, "bank_ms": 500, "grace_ms": 50}


def test_inside_move_time_costs_nothing() -> None:
    clock = MatchClock(TC, 1)
    verdict = clock.judge(0, 999.9)
    assert verdict.in_time and verdict.bank_charged_ms == 0 and clock.bank_left_ms[0] == 500


def test_overrun_comes_out_of_the_bank_until_it_is_empty() -> None:
    clock = MatchClock(TC, 1)
    assert clock.judge(0, 1200).bank_charged_ms == 200
    assert clock.bank_left_ms[0] == 300
    assert clock.limit_ms(0) == 1350
    # past move + bank but inside the grace: in time, the bank is emptied, no more
    verdict = clock.judge(0, 1340)
    assert verdict.in_time and verdict.bank_charged_ms == 300 and clock.bank_left_ms[0] == 0
    assert clock.limit_ms(0) == 1050


def test_exactly_the_limit_is_in_time_a_hair_over_is_not() -> None:
    clock = MatchClock(TC, 2)
    assert clock.judge(0, 1550).in_time
    late = clock.judge(1, 1550.001)
    assert not late.in_time and late.bank_left_ms == 0 and clock.bank_left_ms[1] == 0


def test_no_answer_spends_the_bank() -> None:
    clock = MatchClock(TimeControl(move_ms=100, bank_ms=200, grace_ms=50, queue_ms=1000), 1)
    assert not clock.timed_out(0).in_time
    assert clock.bank_left_ms[0] == 0


def test_every_verdict_says_what_it_charged_and_what_is_left() -> None:
    """Pins the whole Verdict (the record's bank_left_ms and the charge reported come from
    it), not only ``in_time``: mutants returning None or a wrong figure survived before."""
    clock = MatchClock(TC, 3)
    assert clock.judge(0, 1200) == Verdict(True, 200, 300)
    assert clock.judge(1, 1550.001) == Verdict(False, 500, 0.0)
    assert clock.judge(1, 10) == Verdict(True, 0, 0.0)
    assert clock.timed_out(2) == Verdict(False, 500, 0.0)
    assert clock.timed_out(2) == Verdict(False, 0.0, 0.0)  # nothing left to spend
    for verdict in (clock.judge(0, 10), clock.timed_out(0)):
        assert type(verdict.in_time) is bool
        assert isinstance(verdict.bank_charged_ms, float | int)
