"""Ask a connected bot one question through its referee, as a match host would.

The probe is a small match host (:mod:`workers.link`): it sends a ``TurnRequest`` on the
internal stream to the referee that the bot-streams directory names for the bot, and gets
back the bot's answer with the referee's send and receive stamps. The think time it
reports is the referee's measurement.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from dataclasses import dataclass
from typing import Any

import redis

from arena.v1 import internal_pb2
from arena_sdk.observation import Observation
from referee import cluster, keys
from referee.match.messages import ClockInfo, Notification, TurnMessage, now_ms
from referee.protocol import convert

ANSWER_SLACK_S = 2.0
"""How long past the clock the probe keeps waiting, to tell a late answer from none."""


@dataclass(frozen=True, slots=True)
class Reply:
    """What came back for one request.

    ``sent`` is False when no referee sent the request in time (the bot is not connected,
    or its concurrency slots are full). ``action`` is None when the bot did not answer
    before the probe gave up.
    """

    sent: bool
    action: str | None
    think_ms: float | None
    waited_ms: float
    fallback: str = ""
    """``Action.fallback``: why the bot's SDK or bridge answered for it ('' when the bot's
    own code chose)."""

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
        if self.fallback:
            return (
                f"answered {self.action!r} as a fallback ({self.fallback}): the bot's code "
                "failed and its SDK or bridge answered for it (see the bot's log)"
            )
        return f"answered {self.action!r} after {self.think_ms or 0:.0f} ms"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Probe:
    """Sends requests to one bot through its referee and reads the answers (an event loop
    of its own runs in a daemon thread; :meth:`close` stops it)."""

    def __init__(
        self,
        client: redis.Redis,
        bot: str,
        *,
        send_timeout_s: float = 10.0,
        answer_slack_s: float = ANSWER_SLACK_S,
        secret: str | None = None,
    ):
        from workers.link import Router

        self.client = client
        self.bot = bot
        self.send_timeout_s = send_timeout_s
        self.answer_slack_s = answer_slack_s
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._router = Router(secret or cluster.resolve_secret(), self._lookup)
        self._waiting: dict[tuple[str, int, int], concurrent.futures.Future[Reply]] = {}
        self.fallbacks = 0
        """Answers so far that were fallbacks (``Reply.fallback``)."""

    async def _lookup(self, bot: str) -> dict[str, str]:
        raw = await asyncio.get_running_loop().run_in_executor(
            None, self.client.hgetall, keys.bot_streams(bot)
        )
        return {_text(k): _text(v) for k, v in raw.items()}

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self._router.close(), self._loop).result(5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def notify(self, message: Notification) -> None:
        """Send a notification (action result, deal end, ...) to the bot."""
        payload = convert.notification_to_proto(message).SerializeToString()

        async def send() -> None:
            if await self._router.route(self.bot, now_ms()) is not None:
                self._router.notify(self.bot, message["match_id"], payload)

        asyncio.run_coroutine_threadsafe(send(), self._loop).result(self.send_timeout_s + 5)

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
        observation: Observation,
        legal_actions: list[str],
        clock: ClockInfo,
        season: str = "",
    ) -> TurnMessage:
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
        }
        payload = convert.turn_to_proto(turn).SerializeToString()
        budget_ms = clock["move_ms"] + clock["bank_ms"] + clock["grace_ms"]
        self._waiting[(match_id, attempt, seq)] = asyncio.run_coroutine_threadsafe(
            self._ask(turn, payload, budget_ms + self.answer_slack_s * 1000.0), self._loop
        )
        return turn

    async def _ask(self, turn: TurnMessage, payload: bytes, limit_ms: float) -> Reply:
        from workers.link import LinkLost

        start = now_ms()
        until = start + self.send_timeout_s * 1000.0
        key = (turn["match_id"], turn["attempt"], turn["seq"])
        while True:
            link = await self._router.route(self.bot, until)
            if link is None:
                return Reply(False, None, None, now_ms() - start)
            try:
                reply = await link.turn(self.bot, key, payload, limit_ms, until)
            except LinkLost:
                continue
            kind = reply.kind
            waited = now_ms() - start
            if kind == internal_pb2.Reply.ANSWER:
                self.fallbacks += bool(reply.fallback)
                think = reply.received_ms - reply.sent_ms
                return Reply(True, reply.action, think, waited, reply.fallback)
            if kind == internal_pb2.Reply.TIMEOUT:
                return Reply(True, None, None, waited)
            if kind == internal_pb2.Reply.EXPIRED or now_ms() >= until:
                return Reply(False, None, None, waited)
            self._router.forget(self.bot)  # NOT_HERE, BOT_LEFT, DRAINED: ask again
            await asyncio.sleep(0.05)

    def wait(self, turn: TurnMessage) -> Reply:
        """Wait for the answer to a pushed turn."""
        future = self._waiting.pop((turn["match_id"], turn["attempt"], turn["seq"]))
        clock = turn["clock"]
        budget_s = (clock["move_ms"] + clock["bank_ms"] + clock["grace_ms"]) / 1000.0
        return future.result(self.send_timeout_s + budget_s + self.answer_slack_s + 10.0)

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
