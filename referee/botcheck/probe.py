"""Ask a connected bot one question through its mailbox, as a worker would.

The probe ``RPUSH``es a :class:`~referee.mailbox.TurnMessage` onto the bot's inbox, then
waits on the decision's reply list for the referee's ``sent`` stamp and the bot's
``answer`` (referee/mailbox.py). The think time it reports is the referee's measurement.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import redis

from referee import keys, mailbox
from referee.mailbox import ClockInfo, InboxMessage, TurnMessage

ANSWER_SLACK_S = 2.0
"""How long past the clock the probe keeps waiting, to tell a late answer from none."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What came back for one request.

    ``sent`` is False when no referee took the request from the inbox in time (the bot is
    not connected, or its concurrency slots are full). ``action`` is None when the bot did
    not answer before the probe gave up.
    """

    sent: bool
    action: str | None
    think_ms: float | None
    waited_ms: float

    def describe(self, clock: ClockInfo) -> str:
        """The reply in words, for a failure message."""
        if not self.sent:
            return (
                "the request was never sent to the bot: is it connected, and did it declare "
                "this game?"
            )
        if self.action is None:
            limit = clock["move_ms"] + clock["bank_ms"] + clock["grace_ms"]
            return f"no answer within {self.waited_ms:.0f} ms (the clock allowed {limit} ms)"
        return f"answered {self.action!r} after {self.think_ms or 0:.0f} ms"


class Probe:
    """Pushes requests into one bot's inbox and reads the answers."""

    def __init__(
        self,
        client: redis.Redis,
        bot: str,
        *,
        send_timeout_s: float = 10.0,
        answer_slack_s: float = ANSWER_SLACK_S,
    ):
        self.client = client
        self.bot = bot
        self.send_timeout_s = send_timeout_s
        self.answer_slack_s = answer_slack_s

    def notify(self, message: InboxMessage) -> None:
        """Push a notification (action result, deal end, ...) into the inbox."""
        self.client.rpush(keys.inbox(self.bot), mailbox.encode(message))

    def notice(self, fields: dict[str, Any]) -> int:
        """Send a ``Notice`` (its JSON form: code, message, season, ...) to the bot's streams
        through ``keys.BOT_NOTICES_CHANNEL`` (referee.gateway.notices forwards it); returns
        how many referees listened."""
        payload = json.dumps({"bot": self.bot, "notice": fields}, separators=(",", ":"))
        return int(self.client.publish(keys.BOT_NOTICES_CHANNEL, payload))

    def push_turn(
        self,
        *,
        match_id: str,
        attempt: int,
        seq: int,
        seat: int,
        observation: dict[str, Any],
        legal_actions: list[str],
        clock: ClockInfo,
        season: str = "",
    ) -> TurnMessage:
        now = mailbox.now_ms()
        turn: TurnMessage = {
            "type": "turn",
            "bot": self.bot,
            "match_id": match_id,
            "attempt": attempt,
            "seq": seq,
            "seat": seat,
            "season": season,
            "observation": observation,
            "legal_actions": legal_actions,
            "clock": clock,
            "reply_key": keys.reply(match_id, attempt, seq),
            "enqueued_ms": now,
            "expires_ms": now + self.send_timeout_s * 1000.0,
        }
        self.client.rpush(keys.inbox(self.bot), mailbox.encode(turn))
        return turn

    def wait(self, turn: TurnMessage) -> Reply:
        """Wait for the ``sent`` stamp and the answer of a pushed turn."""
        start = time.monotonic()
        reply_key = turn["reply_key"]
        clock = turn["clock"]
        budget_s = (clock["move_ms"] + clock["bank_ms"] + clock["grace_ms"]) / 1000.0
        deadline = start + self.send_timeout_s
        sent = False
        try:
            while True:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                # Short pops: the client's socket timeout may be short (PITFALLS 9).
                popped = self.client.blpop([reply_key], timeout=min(1.0, max(0.01, remaining)))
                if popped is None:
                    continue
                message = mailbox.decode_reply(popped[1])
                if message["type"] == "sent":
                    sent = True
                    deadline = time.monotonic() + budget_s + self.answer_slack_s
                    continue
                waited = (time.monotonic() - start) * 1000.0
                return Reply(True, message["action"], message["think_ms"], waited)
        finally:
            if not sent:  # nobody took it: do not leave it for a bot that connects later
                self.client.lrem(keys.inbox(self.bot), 1, mailbox.encode(turn))
            self.client.delete(reply_key)
        return Reply(sent, None, None, (time.monotonic() - start) * 1000.0)

    def ask(self, **fields: Any) -> tuple[TurnMessage, Reply]:
        """Push a turn (the keyword arguments of :meth:`push_turn`) and wait for it."""
        turn = self.push_turn(**fields)
        return turn, self.wait(turn)


def declared_games(client: redis.Redis, bot: str) -> list[str] | None:
    """The games the bot's open streams declared in Hello (None: every game, or unknown).

    The referee keeps each stream's Hello in ``keys.bot_streams(bot)`` as JSON with a
    ``games`` list; an empty list means every game.
    """
    games: set[str] = set()
    for raw in client.hvals(keys.bot_streams(bot)):
        try:
            entry = json.loads(raw)
        except (TypeError, ValueError):
            continue
        declared = entry.get("games") if isinstance(entry, dict) else None
        if not declared:
            return None
        games.update(str(g) for g in declared)
    return sorted(games) or None
