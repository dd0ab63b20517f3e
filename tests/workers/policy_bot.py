"""SDK bots whose answers come from a policy, for tests of the match runner: each runs in a
thread against a real referee and keeps every message it receives as a dict."""

from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import redis

from referee import bots, keys
from sample_bots.sdk import ActionOutcome, Bot, Turn

Policy = Callable[[dict[str, Any]], tuple[str | None, float]]
"""turn (dict) -> (action to send, or None to never answer; seconds to think first)."""


def first_legal(turn: dict[str, Any]) -> tuple[str | None, float]:
    return turn["legal_actions"][0], 0.0


class PolicyBot(Bot):
    def __init__(self, name: str, policy: Policy = first_legal, concurrency: int = 4) -> None:
        self.name = name
        self.policy = policy
        self.max_concurrent_matches = concurrency
        self.received: list[dict[str, Any]] = []
        self.stop = threading.Event()

    def choose(self, turn: Turn) -> str:
        as_dict = dataclasses.asdict(turn)
        self.received.append({"type": "turn", **as_dict})
        action, delay = self.policy(as_dict)
        if action is None:
            self.stop.wait(60)  # never answers
            return "pass"
        if delay:
            time.sleep(delay)
        return action

    def on_result(self, result: ActionOutcome) -> None:
        self.received.append({"type": "action_result", **dataclasses.asdict(result)})

    def on_match_start(self, msg: dict[str, Any]) -> None:
        self.received.append({"type": "match_start", **msg})

    def on_deal_end(self, msg: dict[str, Any]) -> None:
        self.received.append({"type": "deal_end", **msg})

    def on_match_end(self, msg: dict[str, Any]) -> None:
        self.received.append({"type": "match_end", **msg})

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["type"] == kind]

    def wait_for(self, kind: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not self.of_type(kind):
            if time.monotonic() > deadline:
                raise AssertionError(f"bot {self.name} got no {kind} within {timeout}s")
            time.sleep(0.01)


@contextlib.contextmanager
def policy_bots(
    conn: redis.Redis, server: str, *named: PolicyBot, timeout: float = 20.0
) -> Iterator[None]:
    """Register and run each bot against ``server`` until the block ends; waits until each
    is in the bot-streams directory."""
    threads = []
    for bot in named:
        token = bots.register(conn, bot.name)
        thread = threading.Thread(
            target=bot.run, args=(server, token), kwargs={"stop": bot.stop}, daemon=True
        )
        thread.start()
        threads.append(thread)
    deadline = time.monotonic() + timeout
    for bot in named:
        while not conn.hlen(keys.bot_streams(bot.name)):
            assert time.monotonic() < deadline, f"{bot.name} did not connect"
            time.sleep(0.02)
    try:
        yield
    finally:
        for bot in named:
            bot.stop.set()
        for thread in threads:
            thread.join(10)
