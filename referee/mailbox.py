"""The mailbox contract between workers and referees (DESIGN section 3).

Workers never speak gRPC; referees never run matches. They meet in Redis:

1. A worker reaches a decision and ``RPUSH``es a :class:`TurnMessage` onto the bot's
   inbox (``keys.inbox(bot)``), then ``BLPOP``s the decision's reply list
   (``keys.reply(match_id, attempt, seq)``).
2. A referee holding a stream of that bot pops the inbox (only while the stream has a
   free concurrency slot), drops the request if ``expires_ms`` has passed, writes it to
   the stream and ``RPUSH``es a :class:`SentStamp` onto the reply list.
3. The bot answers; the referee ``RPUSH``es an :class:`AnswerMessage` with the measured
   think time (its own receive stamp minus its send stamp) onto the reply list.
4. The worker judges the clock from those stamps, applies the action, and ``RPUSH``es
   an :class:`ActionResultMessage` onto the same inbox, which the referee forwards.

Notifications (``match_start``, ``action_result``, ``deal_end``, ``match_end``) travel in
the same inbox as turns so that a bot sees them in order; they take no concurrency slot.
Everything is JSON. Times are Unix epoch milliseconds (``now_ms``); durations are
milliseconds as floats.
"""

from __future__ import annotations

import json
import time
from typing import Any, Literal, NotRequired, TypedDict, cast

from referee import keys

REPLY_TTL_S = 600
"""Reply lists expire after this long, so abandoned decisions leave nothing behind."""

INBOX_MAX_LEN = 10_000
"""Inboxes are trimmed to this many entries so a bot that never connects cannot fill Redis."""

REFEREE_BEAT_S = 0.5
"""How often a referee refreshes ``keys.referee_alive`` (its liveness for the workers)."""

REFEREE_ALIVE_TTL_MS = 1500
"""TTL of ``keys.referee_alive``: three missed beats and the key is gone (the referee died,
and every request it had sent died with it: the worker sends them again)."""

REFEREE_DRAINED = "drained"
"""Value of ``keys.referee_alive`` after a graceful drain: the referee pushed the requests
it held back to their inboxes, so the workers must not send them again."""

REFEREE_DRAINED_TTL_S = 600


def now_ms() -> float:
    return time.time() * 1000.0


class ClockInfo(TypedDict):
    move_ms: int
    bank_ms: int
    grace_ms: int


class TurnMessage(TypedDict):
    type: Literal["turn"]
    bot: str
    match_id: str
    attempt: int
    seq: int
    seat: int
    season: str
    observation: dict[str, Any]
    legal_actions: list[str]
    clock: ClockInfo
    reply_key: str
    enqueued_ms: float
    expires_ms: float  # after this the worker no longer waits for it to be sent: drop it


class SentStamp(TypedDict):
    type: Literal["sent"]
    referee: str
    sent_ms: float


class AnswerMessage(TypedDict):
    type: Literal["answer"]
    referee: str
    action: str
    sent_ms: float
    received_ms: float
    think_ms: float


class ActionResultMessage(TypedDict):
    type: Literal["action_result"]
    bot: str
    match_id: str
    attempt: int
    seq: int
    status: Literal["accepted", "refused", "timed_out"]
    reason: str
    message: str
    penalty: int
    applied_action: str
    think_ms: float
    autopilot: bool


class MatchStartMessage(TypedDict):
    type: Literal["match_start"]
    bot: str
    match_id: str
    attempt: int
    game: str
    preset: str
    rules: dict[str, Any]
    seats: list[int]
    players: list[str]
    num_deals: int
    season: str


class DealEndMessage(TypedDict):
    type: Literal["deal_end"]
    bot: str
    match_id: str
    attempt: int
    deal_index: int
    winner: int
    deltas: list[int]
    totals: list[int]
    result: dict[str, Any]


class MatchEndMessage(TypedDict):
    type: Literal["match_end"]
    bot: str
    match_id: str
    attempt: int
    totals: list[int]
    unit: str
    winners: list[int]
    result: dict[str, Any]
    error: NotRequired[str]


InboxMessage = (
    TurnMessage | ActionResultMessage | MatchStartMessage | DealEndMessage | MatchEndMessage
)
ReplyMessage = SentStamp | AnswerMessage


def encode(message: InboxMessage | ReplyMessage) -> str:
    return json.dumps(message, separators=(",", ":"))


def decode_inbox(raw: str | bytes) -> InboxMessage:
    """Parse an inbox entry; raises ``ValueError`` on anything that is not one."""
    data = json.loads(raw)
    if not isinstance(data, dict) or data.get("type") not in (
        "turn",
        "action_result",
        "match_start",
        "deal_end",
        "match_end",
    ):
        raise ValueError(f"not an inbox message: {str(raw)[:80]!r}")
    return cast(InboxMessage, data)


def decode_reply(raw: str | bytes) -> ReplyMessage:
    """Parse a reply-list entry; raises ``ValueError`` on anything that is not one."""
    data = json.loads(raw)
    if not isinstance(data, dict) or data.get("type") not in ("sent", "answer"):
        raise ValueError(f"not a reply message: {str(raw)[:80]!r}")
    return cast(ReplyMessage, data)


def inbox_key(bot_name: str) -> str:
    return keys.inbox(bot_name)
