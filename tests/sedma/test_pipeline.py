"""Sedma through the real match runner: real Redis, a referee, SDK bots, commit and replay.

The runner is generic over the registry; this checks that the Sedma engine meets its
contract there (refusals answered by the autopilot, timeouts, partnership totals, a record
that re-simulates to the committed result).
"""

from __future__ import annotations

import random
from typing import Any

import redis

from referee import queue
from referee.games.base import DealSpec
from referee.match.replay import render_replay, verify_record
from referee.match.row import lean_result
from referee.match.spec import MatchSpec, TimeControl
from tests.workers.policy_bot import PolicyBot, policy_bots
from workers.host import run_match

# Generous limits: the bots answer at once, and a loaded machine must not turn that into timeouts.
FAST = TimeControl(move_ms=2000, bank_ms=2000, grace_ms=50, queue_ms=2000)


def sometimes_wrong(turn: dict[str, Any]) -> tuple[str | None, float]:
    """A bot that sends a card it does not hold on every fifth decision."""
    rng = random.Random(turn["seq"])
    if turn["seq"] % 5 == 0:
        return "9Z" if turn["seq"] % 10 else "2C", 0.0
    return rng.choice(turn["legal_actions"]), 0.0


def random_bot(turn: dict[str, Any]) -> tuple[str | None, float]:
    return random.Random(turn["seq"]).choice(turn["legal_actions"]), 0.0


def test_sedma_match_runs_commits_and_replays(
    redis_url: str, redis_client: redis.Redis, referee_address: str
) -> None:
    deals = (DealSpec(seed=41, rotation=0, dealer=0), DealSpec(seed=41, rotation=1, dealer=1))
    spec = MatchSpec(
        match_id="sedma-1",
        game="sedma",
        rules={"name": "sedma"},
        seats=("a", "b", "a", "b"),  # head to head: one bot holds both seats of a side
        seed=5,
        deals=deals,
        time_control=FAST,
        season="s1",
        strikes=0,
    )
    assert queue.enqueue_match(redis_client, spec)
    a, b = PolicyBot("a", sometimes_wrong), PolicyBot("b", random_bot)
    with policy_bots(redis_client, referee_address, a, b):
        assert run_match("sedma-1", conn=redis_client) == "committed"
    result = queue.get_result(redis_client, "sedma-1")
    record = queue.get_record(redis_client, "sedma-1")
    assert result is not None and record is not None
    totals = result["result"]["totals"]
    assert totals[0] == totals[2] and totals[1] == totals[3]  # SD-1: partners score alike
    assert result["result"]["unit"] == "match_points"
    assert len(result["result"]["deals"]) == 2
    refused = [r for r in a.of_type("action_result") if r["status"] == "refused"]
    assert refused and {r["reason"] for r in refused} <= {"malformed", "not_held"}
    assert sum(s["invalid_actions"] for s in result["stats"]) == len(refused)
    assert lean_result(verify_record(record)) == result["result"]  # referee/match/row.py
    assert "REFUSED" in render_replay(record)
    for turn in a.of_type("turn"):  # no turn ever shows another seat's hand
        obs = turn["observation"]
        assert obs["seat"] == turn["seat"] and len(obs["hand"]) == obs["hand_sizes"][obs["seat"]]
