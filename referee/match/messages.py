"""The messages a match host sends a bot, as dicts (docs/workers.md "The decision path").

A host builds each notification as one of these ``TypedDict``s and turns it into its
``arena.v1.RefereeMessage`` with ``referee.protocol.convert``; the bytes travel to the bot
through the bot's referee on the internal stream (proto/arena/v1/internal.proto), which
forwards them without decoding. The record of a match keeps the dict form. Times are Unix
epoch milliseconds (``now_ms``); durations are milliseconds as floats.
"""

from __future__ import annotations

import time
from typing import Any, Literal, NotRequired, TypedDict

from arena_sdk.observation import Observation


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
    observation: Observation
    legal_actions: list[str]
    clock: ClockInfo


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


Notification = ActionResultMessage | MatchStartMessage | DealEndMessage | MatchEndMessage
