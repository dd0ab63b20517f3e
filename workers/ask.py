"""One decision asked of a bot: the turn sent to the bot's referee over the internal
stream (``workers.link``), routed again when the bot's stream moved, its referee died or
drained, and one reply taken back, with a guard for a referee that never replies.

Nothing per decision touches Redis. ``workers.runner.MatchRun`` judges the reply by the
clock; this module only says what came back and when.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Final, Literal

from arena.v1 import internal_pb2
from referee.match.messages import ClockInfo, TurnMessage, now_ms
from referee.match.spec import MatchSpec
from referee.protocol import convert
from workers.link import LinkLost, Router, TurnReply, cpu_ms_of

log = logging.getLogger("workers.ask")

Kind = internal_pb2.Reply

MAX_FALLBACK_CHARS: Final = 40
"""Longest ``Action.fallback`` code kept (the record and the bot's ActionResult)."""
REPLY_SLACK_MS: Final = 5_000.0
"""How long past a turn's own bounds (slot wait + limit) the host waits for the referee's
reply before it judges the decision itself (a referee that lost a turn: never expected)."""


@dataclass(slots=True)
class Reply:
    """What came back for one request: the action and think time, or why nothing did."""

    action: str | None
    think_ms: float
    failure: Literal["", "timeout", "disconnected"]
    wait_ms: float = 0.0  # request ready -> referee's send stamp (diagnostics only)
    fallback: str = ""  # Action.fallback: why the bot's SDK or bridge answered for it
    cpu_clock: bool = False  # think_ms is the bot's sandbox CPU time (TimeControl.clock)


def left_clock(clock: ClockInfo, first_sent_ms: float, now: float) -> ClockInfo:
    """The clock a request sent again with its clock running shows: move time first, then
    bank, minus the time since its first send."""
    elapsed = max(0.0, now - first_sent_ms)
    move = float(clock["move_ms"]) - elapsed
    bank = float(clock["bank_ms"])
    if move < 0:
        bank += move
        move = 0.0
    return {"move_ms": int(move), "bank_ms": int(max(0.0, bank)), "grace_ms": clock["grace_ms"]}


class Asker:
    """Asks the bots of one match attempt for their decisions, one at a time."""

    def __init__(self, router: Router, spec: MatchSpec) -> None:
        self.router = router
        self.spec = spec
        self.encoder: convert.TurnEncoder | None = None  # this match's TurnRequest bytes
        self.resent = 0  # requests sent again because their referee died or drained
        self.reached: set[str] = set()  # bots this match found a stream of
        # The reply awaited and the loop time after which it is given up (REPLY_SLACK_MS),
        # checked by one timer per match (see watch).
        self.waiting: tuple[asyncio.Future[TurnReply], float] | None = None
        self.guard: asyncio.TimerHandle | None = None
        self.guard_at = 0.0

    async def ask(self, turn: TurnMessage, limit: float) -> Reply:
        """Send the turn to the bot's referee and wait for its one reply (``limit``: the
        referee's TIMEOUT, ms); route again (the directory) when the bot's stream ended,
        the referee drained or its link broke."""
        tc = self.spec.time_control
        bot = turn["bot"]
        key = (turn["match_id"], turn["attempt"], turn["seq"])
        encoder = self.encoder
        if encoder is None:
            rules = convert.rules_json(turn["observation"])
            encoder = self.encoder = convert.TurnEncoder(key[0], key[1], turn["season"], rules)
        payload = encoder.encode(turn)
        ready = now_ms()
        since = ready  # the bot's clock (or its absence) counts from here
        first_sent = 0.0
        while True:
            # A bot with no stream anywhere is judged absent_ms past its clock, whether it
            # left or never came (docs/workers.md; `season create`/`start` name such bots);
            # one whose referee failed or drained lately is reconnecting: queue_ms.
            fault = self.router.excused(bot, tc.queue_ms)
            absent = tc.queue_ms if fault else tc.absent_ms
            link = await self.router.route(bot, (first_sent or since) + limit + absent)
            if link is None:
                waited = now_ms() - (first_sent or since)
                if first_sent:  # it held the request, left and never came back in time
                    return Reply(None, waited, "timeout")
                return Reply(None, 0.0, "disconnected")
            self.reached.add(bot)
            now = now_ms()
            expires = now + limit + tc.queue_ms
            future = link.turn(bot, key, payload, limit, expires, first_sent)
            self.watch(future, (expires - now + limit + REPLY_SLACK_MS) / 1000.0)
            try:
                reply = await future
            except LinkLost:
                reply = None
            except TimeoutError:
                link.forget(key)
                log.error("match %s seq %d: no reply from referee %s", key[0], key[2], link.referee)
                return Reply(None, limit, "timeout")
            finally:
                self.waiting = None
            if reply is None or reply.kind == Kind.DRAINED:
                # The referee died or is draining (docs/workers.md "Exactly once, retries,
                # failures"): the same request goes to the bot's new referee with this
                # decision's clock restarted.
                if reply is not None:
                    self.router.avoid(link.referee)
                self.resent += 1
                first_sent = 0.0
                since = now_ms()
                payload = encoder.encode(turn)
                log.warning(
                    "match %s seq %d: referee %s %s holding the request; sending it to the "
                    "bot's new referee with a new clock",
                    key[0],
                    key[2],
                    link.referee,
                    "drained" if reply is not None else "died",
                )
                continue
            kind = reply.kind
            if kind == Kind.ANSWER:
                think = max(0.0, reply.received_ms - reply.sent_ms)
                wait = max(0.0, reply.sent_ms - ready)
                cpu = cpu_ms_of(reply) if tc.clock == "cpu" else None
                return Reply(
                    reply.action,
                    think if cpu is None else cpu,
                    "",
                    wait,
                    reply.fallback[:MAX_FALLBACK_CHARS],
                    cpu_clock=cpu is not None,
                )
            if kind == Kind.TIMEOUT:
                return Reply(None, max(limit, now_ms() - reply.sent_ms), "timeout")
            if kind == Kind.EXPIRED:
                return Reply(None, 0.0, "disconnected")
            # NOT_HERE or BOT_LEFT: the bot's stream is elsewhere now (or nowhere yet).
            self.router.forget(bot)
            if kind == Kind.BOT_LEFT and reply.sent_ms > 0:
                first_sent = first_sent or reply.sent_ms
                left = left_clock(turn["clock"], first_sent, now_ms())
                clock_left = {name: int(value) for name, value in left.items()}  # type: ignore[call-overload]
                payload = encoder.encode(turn, clock_left)
            await asyncio.sleep(0)

    def watch(self, future: asyncio.Future[TurnReply], within_s: float) -> None:
        """Fail ``future`` with ``TimeoutError`` if it is still awaited ``within_s`` from
        now. Not a timer per decision (nor ``asyncio.wait_for``, a task per decision: see
        referee/aio.py): one timer per match, armed when none is, that re-arms itself for
        the reply awaited when it fires (a decision takes milliseconds, a deadline is
        seconds away: it fires about once per deadline, not once per decision)."""
        loop = future.get_loop()
        deadline = loop.time() + within_s
        self.waiting = (future, deadline)
        if self.guard is not None and self.guard_at > deadline:  # a shorter limit now
            self.guard.cancel()
            self.guard = None
        if self.guard is None:
            self.guard_at = deadline
            self.guard = loop.call_at(deadline, self._check_reply)

    def _check_reply(self) -> None:
        self.guard = None
        if self.waiting is None:
            return
        future, deadline = self.waiting
        loop = future.get_loop()
        if future.done():
            self.waiting = None
        elif loop.time() >= deadline:
            self.waiting = None
            future.set_exception(TimeoutError("no reply from the referee"))
        else:
            self.guard_at = deadline
            self.guard = loop.call_at(deadline, self._check_reply)

    def close(self) -> None:
        """Cancel the reply guard (the match is over or abandoned)."""
        if self.guard is not None:
            self.guard.cancel()
            self.guard = None
