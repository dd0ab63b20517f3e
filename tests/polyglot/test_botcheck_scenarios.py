"""The checker's scenarios against a scripted bot (a unit test of referee.botcheck).

An SDK bot answers with an action chosen by a policy, through a real referee process; the
probe reaches it over the internal stream as a match host would. The full path (bridge and
bot processes, a referee the checker restarts) is tested in test_botcheck_e2e.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from referee.botcheck.probe import Probe
from referee.botcheck.report import FAIL, PASS, SKIP, Report
from referee.botcheck.scenarios import CheckContext, run_all
from referee.botcheck.states import available_games
from referee.match.messages import ClockInfo
from tests.workers.policy_bot import PolicyBot, policy_bots

BOT = "relay-bot"
TurnMessage = dict[str, Any]
Policy = Callable[[TurnMessage], str | None]


def first_legal(turn: TurnMessage) -> str:
    return str(turn["legal_actions"][0])


QUICK_CLOCK: ClockInfo = {"move_ms": 800, "bank_ms": 0, "grace_ms": 50}


def _no_delay(_turn: TurnMessage) -> float:
    return 0.0


def _check(
    where: tuple[str, str],
    policy: Policy,
    delay_s: Callable[[TurnMessage], float] = _no_delay,
    **ctx: Any,
) -> Report:
    url, server = where
    client = redis.Redis.from_url(url, decode_responses=True)
    report = Report(BOT)

    def answer(turn: TurnMessage) -> tuple[str | None, float]:
        action = policy(turn)
        return action, (0.0 if action is None else delay_s(turn))

    probe = None
    try:
        with policy_bots(client, server, PolicyBot(BOT, answer)):
            probe = Probe(client, BOT, send_timeout_s=2.0, answer_slack_s=0.3)
            context = CheckContext(probe=probe, games=available_games(), clock=QUICK_CLOCK, **ctx)
            run_all(context, report)
    finally:
        if probe is not None:
            probe.close()
        client.close()
    return report


@pytest.fixture
def url(redis_url: str, referee_address: str) -> Iterator[tuple[str, str]]:
    yield redis_url, referee_address


def test_a_correct_bot_passes_every_scenario(url: tuple[str, str]) -> None:
    report = _check(url, first_legal)
    statuses = {r.name: r.status for r in report}
    assert report.passed, statuses
    assert all(status in (PASS, SKIP) for status in statuses.values())
    # Reconnect needs a referee the checker controls; here there is none.
    assert report.get("reconnect after the referee restarts").status == SKIP


def test_an_always_pass_bot_fails_where_it_must_play(url: tuple[str, str]) -> None:
    report = _check(url, lambda _turn: "pass")
    assert not report.passed
    failed = report.failures[0]
    assert failed.status == FAIL
    assert "answered 'pass', which is not legal here" in failed.reason
    # In Sevens a pass while able is priced (SV-19), but a seat that only passes is handed
    # to the autopilot on the platform: three strikes in a row.
    deal = report.get("sevens: plays a deal (sevens)")
    assert deal.status == FAIL and "3 times in a row" in deal.reason, deal


def test_a_pass_while_able_that_the_rules_price_is_reported_not_failed(
    url: tuple[str, str],
) -> None:
    """SV-18, SV-19: ``sevens`` prices an illegal pass with a lost turn; a bot that makes
    one now and then (the ladder's priced-pass does) passes the deal, and is told what it
    costs."""

    asked: dict[int, int] = {}  # per seat, its decisions so far

    def sometimes_pass(turn: TurnMessage) -> str:
        legal = turn["legal_actions"]
        seat = int(turn["seat"])
        asked[seat] = asked.get(seat, 0) + 1
        if turn["observation"]["game"] == "sevens" and "pass" not in legal and asked[seat] % 3 == 0:
            return "pass"  # every third decision of a seat: never twice in a row
        return str(legal[0])

    report = _check(url, sometimes_pass)
    deal = report.get("sevens: plays a deal (sevens)")
    assert deal.status == PASS, deal
    assert "a pass while able: an illegal pass, priced by these rules" in deal.reason, deal


def test_a_bot_that_never_answers_is_reported_with_the_clock(url: tuple[str, str]) -> None:
    report = _check(url, lambda _turn: None, only=["plays a deal", "clock"])
    assert not report.passed
    assert len(report.failures) == len(report.results) == len(available_games()) + 1
    assert "no answer within" in report.failures[0].reason
    assert "the clock allowed 850 ms" in report.failures[0].reason


def test_a_slow_bot_fails_only_the_tight_clock(url: tuple[str, str]) -> None:
    def thinks_900_ms_when_short_of_time(turn: TurnMessage) -> float:
        # Slow only when the clock is short, so the test does not wait on every decision.
        return 0.9 if turn["clock"]["move_ms"] < QUICK_CLOCK["move_ms"] else 0.0

    report = _check(url, first_legal, delay_s=thinks_900_ms_when_short_of_time)
    failures = {r.name for r in report.failures}
    assert failures == {"clock near its limit (700 ms, no bank)"}
    assert "over the clock" in report.failures[0].reason


def test_a_bot_that_answers_the_old_attempt_fails_the_retry(url: tuple[str, str]) -> None:
    first_answers: dict[str, str] = {}

    def sticky(turn: TurnMessage) -> str:
        # A bot that caches its first answer per match: wrong once the match is retried.
        return first_answers.setdefault(turn["match_id"], turn["legal_actions"][0])

    report = _check(url, sticky)
    stale = report.get("stale request and retry")
    assert stale.status == FAIL
    assert "attempt 2" in stale.reason


def test_reconnect_scenario_uses_the_restart_hook(url: tuple[str, str]) -> None:
    restarts: list[float] = []
    report = _check(url, first_legal, restart_referee=lambda: restarts.append(time.time()))
    assert restarts and report.get("reconnect after the referee restarts").status == PASS


def test_bridge_incidents_fail_the_scenario_they_happened_in(url: tuple[str, str]) -> None:
    incidents = [
        [],
        [
            {
                "event": "exited",
                "exit_code": 3,
                "stderr_tail": ["Traceback ...", "KeyError: 'trick'"],
            }
        ],
    ]

    def next_incidents() -> list[dict[str, Any]]:
        return incidents.pop(0) if incidents else []

    report = _check(url, first_legal, incidents=next_incidents)
    failed = report.failures
    assert len(failed) == 1
    text = " ".join((failed[0].reason, *failed[0].details))
    assert "exited with code 3" in text
    assert "KeyError: 'trick'" in text


def test_a_bot_that_mixes_up_concurrent_requests_fails_the_interleaved_check(
    url: tuple[str, str],
) -> None:
    previous: list[str] = []

    def mixed_up(turn: TurnMessage) -> str:
        # Answers each request with what it chose for the one before (a shared variable).
        chosen = previous[-1] if previous else turn["legal_actions"][0]
        previous.append(turn["legal_actions"][0])
        return chosen

    report = _check(url, mixed_up, only=["interleaved"])
    (result,) = report.results
    assert result.status == FAIL
    assert "which is not legal here" in result.reason
