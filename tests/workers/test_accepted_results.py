"""Bots that decline ActionResults of plain accepted answers (``Hello.skip_accepted_results``,
docs/PROTOCOL.md section 4): the real Sevens engine, the match runner in-process, a real
referee process and SDK bots in threads.

A bot that declined them gets every other result (a refusal, SV-21; a timeout) and no
accepted one; a bot that did not (the flag unset, as every bot written before it) still
gets one result per decision.
"""

from __future__ import annotations

import json
from typing import Any

import redis

from referee import keys, queue
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl
from sample_bots.sdk import ActionOutcome, Bot
from tests.workers.policy_bot import PolicyBot, first_legal, policy_bots
from workers.host import run_match

TC = TimeControl(move_ms=1000, bank_ms=0, grace_ms=50, queue_ms=5000)
DECK = [rank + suit for suit in "CDHS" for rank in "A23456789TJQK"]


class MisbehaveTwice:
    """Decision 1: a card the seat does not hold (refused, SV-21); decision 2: the first
    legal action after the limit (timed out); then the first legal action at once."""

    def __init__(self) -> None:
        self.asked = 0

    def __call__(self, turn: dict[str, Any]) -> tuple[str | None, float]:
        self.asked += 1
        if self.asked == 1:
            return next(card for card in DECK if card not in turn["observation"]["hand"]), 0.0
        if self.asked == 2:
            return turn["legal_actions"][0], 1.3  # past the limit: 1000 + 0 + 50 ms
        return turn["legal_actions"][0], 0.0


class PlainBot(PolicyBot):
    """A bot that does not override ``on_result`` (the SDK's own hook, so the SDK declines
    accepted results by itself); each instance records its results through an instance
    attribute, which the SDK's look at the class does not see."""

    on_result = Bot.on_result

    def __init__(self, name: str, policy: Any) -> None:
        super().__init__(name, policy)
        self.on_result = self.record  # type: ignore[method-assign]

    def record(self, result: ActionOutcome) -> None:
        PolicyBot.on_result(self, result)


def stream_records(conn: redis.Redis, bot: str) -> list[dict[str, Any]]:
    return [json.loads(v) for v in conn.hgetall(keys.bot_streams(bot)).values()]


def test_declined_accepted_results_are_dropped_but_refusals_and_timeouts_arrive(
    redis_client: redis.Redis, referee_address: str
) -> None:
    """SV-21: the refused card still reaches the bot that declined accepted results."""
    quiet = PlainBot("quiet", MisbehaveTwice())
    old = PolicyBot("old", first_legal)  # overrides on_result: wants every result
    third = PolicyBot("third", first_legal)
    third.accepted_results = False  # declared explicitly
    assert quiet.wants_accepted_results() is False
    assert old.wants_accepted_results() is True
    assert third.wants_accepted_results() is False
    rules = get_game("sevens").preset("sevens").to_dict()
    spec = MatchSpec(
        match_id="acc1",
        game="sevens",
        rules=rules,
        seats=("quiet", "old", "third"),
        seed=5,
        season="s-acc",
        time_control=TC,
        strikes=3,
    )
    with policy_bots(redis_client, referee_address, quiet, old, third):
        assert [r["skip_accepted_results"] for r in stream_records(redis_client, "quiet")] == [True]
        assert [r["skip_accepted_results"] for r in stream_records(redis_client, "old")] == [False]
        assert queue.enqueue_match(redis_client, spec)
        assert run_match("acc1", conn=redis_client) == "committed"
        for bot in (quiet, old, third):
            bot.wait_for("match_end")
    record = queue.get_record(redis_client, "acc1")
    assert record is not None
    asked = [s for s in record["steps"] if "request" in s]

    def statuses(seat: int) -> list[str]:
        return [s["status"] for s in asked if s["seat"] == seat]

    # what the platform judged: seat 0 refused (not held), then timed out, then accepted
    # (a loaded machine may add a timeout anywhere: every non-accepted result is sent)
    assert statuses(0)[:2] == ["refused", "timed_out"] and "accepted" in statuses(0)
    assert "accepted" in statuses(1) and statuses(2)

    def told(bot: PolicyBot) -> list[tuple[str, str]]:
        """The results the host sent (the referee's own STALE/DUPLICATE answers apart)."""
        return [
            (r["status"], r["reason"])
            for r in bot.of_type("action_result")
            if r["status"] not in ("stale", "duplicate")
        ]

    got = told(quiet)
    assert got[:2] == [("refused", "not_held"), ("timed_out", "timeout")], got
    assert [status for status, _ in got] == [s for s in statuses(0) if s != "accepted"]
    assert quiet.of_type("action_result")[0]["applied_action"] == "pass"
    # the late answer itself is also told STALE by the referee
    assert ("stale", "stale") in [
        (r["status"], r["reason"]) for r in quiet.of_type("action_result")
    ]
    # the old-style bot: one result per decision, the accepted ones included
    assert [status for status, _ in told(old)] == statuses(1)
    # declared explicitly: no accepted result (it only played legal actions)
    assert [status for status, _ in told(third)] == [s for s in statuses(2) if s != "accepted"]
    # the other notifications still arrive to the bots that declined
    for bot in (quiet, third):
        assert bot.of_type("match_start") and bot.of_type("deal_end")
