"""A "mailbox bot" for tests: answers turns straight from Redis, as a referee would.

It pops ``keys.inbox(bot)``, pushes a ``SentStamp`` then (after the policy's delay) an
``AnswerMessage`` with the measured think time onto the request's reply list, exactly as
the referee does for a real bot, and keeps every notification it receives.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from referee import keys, mailbox
from referee.mailbox import AnswerMessage, SentStamp, TurnMessage

Policy = Callable[[TurnMessage], tuple[str | None, float]]
"""turn -> (action to send, or None to never answer; seconds to think first)."""


def first_legal(turn: TurnMessage) -> tuple[str | None, float]:
    return turn["legal_actions"][0], 0.0


class MailboxBot:
    def __init__(self, redis_url: str, name: str, policy: Policy = first_legal):
        self.conn = redis.Redis.from_url(redis_url, decode_responses=True)
        self.name = name
        self.policy = policy
        self.received: list[dict[str, Any]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"mailbox-bot-{name}", daemon=True)

    def __enter__(self) -> MailboxBot:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self.conn.close()

    def wait_for(self, kind: str, timeout: float = 10.0) -> None:
        """Wait until a message of ``kind`` has arrived (notifications follow the commit)."""
        deadline = time.monotonic() + timeout
        while not self.of_type(kind):
            if time.monotonic() > deadline:
                raise AssertionError(f"bot {self.name} got no {kind} within {timeout}s")
            time.sleep(0.01)

    def of_type(self, kind: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["type"] == kind]

    def _run(self) -> None:
        while not self._stop.is_set():
            popped = self.conn.blpop([keys.inbox(self.name)], timeout=0.1)
            if popped is None:
                continue
            message = mailbox.decode_inbox(popped[1])
            self.received.append(dict(message))
            if message["type"] != "turn":
                continue
            turn: TurnMessage = message
            sent = mailbox.now_ms()
            stamp: SentStamp = {"type": "sent", "referee": "test", "sent_ms": sent}
            self.conn.rpush(turn["reply_key"], mailbox.encode(stamp))
            action, delay = self.policy(turn)
            if action is None:
                continue
            if delay:
                time.sleep(delay)
            received = mailbox.now_ms()
            answer: AnswerMessage = {
                "type": "answer",
                "referee": "test",
                "action": action,
                "sent_ms": sent,
                "received_ms": received,
                "think_ms": received - sent,
            }
            self.conn.rpush(turn["reply_key"], mailbox.encode(answer))
