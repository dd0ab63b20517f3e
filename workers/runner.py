"""One match attempt on a match host, from its stored spec to its result (workers/host.py;
docs/workers.md "The life of a match").

:class:`MatchRun` plays the match; read :meth:`MatchRun.play` top to bottom. It walks
the one match loop (``referee.games.loop.Walk``): each step is an action the platform
applies (a forced move, the autopilot's: :meth:`MatchRun.unasked`) or a decision asked of
the seat's bot (:mod:`workers.ask`), judged by the clock, applied, tallied
(``referee.match.spec.tally_decision``), told to the bot (:mod:`workers.notices`) and
recorded (:mod:`workers.record`). Before and after, the attempt ledger
(:mod:`workers.attempts`) fences what the attempt may show and commit.
"""

from __future__ import annotations

import time
from typing import Any, Final, Protocol

from referee.games.base import Event, Match, Source
from referee.games.loop import Walk
from referee.games.registry import get_game
from referee.match.clock import MatchClock
from referee.match.messages import TurnMessage, now_ms
from referee.match.spec import (
    CommittedResult,
    FallbackMode,
    MatchSpec,
    SeatStats,
    seat_stats,
    tally_decision,
)
from workers import metrics, record
from workers.ask import Asker, Reply
from workers.attempts import Superseded
from workers.link import Router
from workers.notices import Notices

SAFETY_STRIKES: Final = 25
"""Failures in a row after which the autopilot takes a seat over even when the spec says
``strikes=0`` (no autopilot): a Sevens seat that never plays blocks its suits, and the
deal would never end."""
REFUSED_FALLBACK: Final = "fallback()"
"""The text a season with ``fallback = "invalid"`` applies for a fallback answer: no card
or pass, so every engine refuses it as an invalid action with the rules' consequence (and
its record replays to the same refusal)."""


class Host(Protocol):
    """What a match needs from the process that runs it (workers/host.py)."""

    router: Router
    metrics: metrics.HostMetrics


class MatchRun:
    """One attempt at one match: the match loop, the clock, the seats' strikes and
    statistics; the asking, the notices and the record are its parts."""

    def __init__(self, host: Host, spec: MatchSpec, attempt: int, redeal: bool | None = None):
        """``redeal``: whether an earlier attempt showed the bots its deals
        (``workers.attempts.Started``); None assumes so for any attempt after the first."""
        self.router = host.router
        self.original = spec
        if redeal is None:
            redeal = attempt > 1
        self.spec = spec.for_attempt(attempt) if redeal else spec
        self.attempt = attempt
        self.n = len(spec.seats)
        game = get_game(spec.game)
        self.rules = game.rules_from_dict(spec.rules)
        self.match: Match = game.new_match(self.rules, self.n, self.spec.seed, self.spec.deals)
        self.clock = MatchClock(spec.time_control, self.n)
        self.metrics = host.metrics
        self.seq = 0
        self.strikes = [0] * self.n
        self.strike_limit = spec.strikes if spec.strikes > 0 else SAFETY_STRIKES
        self.autopilot = [False] * self.n
        self.stats: list[SeatStats] = [seat_stats(bot) for bot in spec.seats]
        self.steps: list[record.Step] = []
        self.finished_ms = 0.0
        self.superseded = False
        self.asker = Asker(self.router, self.spec)
        self.notices = Notices(self.router, self.spec, attempt, self.match)

    # --- the match loop ---------------------------------------------------------------

    async def play(self) -> None:
        walk = Walk(
            self.match,
            autoplay_forced=self.spec.autoplay_forced,
            autopilot=self.autopilot,
            unasked=self.unasked,
        )
        try:
            await self.notify_match_start()
            while True:
                if self.superseded and not self.match.is_over():
                    raise Superseded("a newer attempt has started")
                turn = walk.next_turn()  # applies forced and autopilot moves: unasked
                if turn is None:
                    break
                await self.ask_step(turn.seat, turn.legal)
            self.finished_ms = now_ms()
        finally:
            self.asker.close()

    def unasked(self, deal: int, seat: int, source: str, action: str, events: list[Event]) -> None:
        """An action the platform applied without asking the bot: recorded, deals told."""
        self.steps.append(record.auto_step(deal, seat, source, action, events))
        self.notices.deal_ends(events)

    async def ask_step(self, seat: int, legal: list[str]) -> None:
        """Ask the seat's bot, judge its answer by the clock, apply, tell it the outcome."""
        deal = self.match.deal_index()
        self.seq += 1
        clock = self.clock.info(seat)
        observation = self.match.observation(seat)
        turn: TurnMessage = {
            "type": "turn",
            "bot": self.spec.seats[seat],
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "seq": self.seq,
            "seat": seat,
            "season": self.spec.season,
            "observation": observation,
            "legal_actions": legal,
            "clock": clock,
        }
        limit = self.spec.time_control.wall_limit_ms(self.clock.limit_ms(seat))
        start = time.perf_counter()
        reply = await self.asker.ask(turn, limit)
        wall_ms = (time.perf_counter() - start) * 1000.0

        events = self.judge_and_apply(seat, reply)
        mine = [e for e in events if e.seat == seat]
        failed = self.count(seat, reply, mine, wall_ms)
        self.strikes[seat] = self.strikes[seat] + 1 if failed else 0
        took_over = failed and self.strikes[seat] >= self.strike_limit
        told = self.notices.action_result(
            self.seq, seat, reply, mine, self.strikes[seat] if took_over else None
        )
        self.steps.append(
            record.bot_step(
                deal,
                seat,
                self.seq,
                (observation, legal, clock),
                reply,
                told,
                wall_ms,
                self.clock.bank_left_ms[seat],
                events,
            )
        )
        if took_over:
            self.autopilot[seat] = True
            self.stats[seat]["autopilot"] = True
            self.steps.append(record.takeover_step(deal, seat, Source.AUTOPILOT))
        self.notices.deal_ends(events)

    def judge_and_apply(self, seat: int, reply: Reply) -> list[Event]:
        """Apply the answer if the clock says it came in time, else the timeout rule."""
        if reply.action is not None:
            if self.clock.judge(seat, reply.think_ms).in_time:
                if reply.fallback and self.spec.fallback == FallbackMode.INVALID:
                    return self.match.apply(REFUSED_FALLBACK, Source.BOT)
                return self.match.apply(reply.action, Source.BOT)
            reply.failure = "timeout"
        elif reply.failure == "timeout":
            self.clock.timed_out(seat)
        # "disconnected": nothing was in the bot's hands, so its bank is left alone
        return self.match.apply_timeout()

    def count(self, seat: int, reply: Reply, mine: list[Event], wall_ms: float) -> bool:
        """Tally the decision in the seat's stats and the decision metrics; True if the
        seat failed."""
        stats = self.stats[seat]
        failed = tally_decision(
            stats,
            mine,
            no_answer=bool(reply.failure),
            fallback=bool(reply.fallback),
            think_ms=reply.think_ms,
        )
        # Overhead is only meaningful when the bot answered: wall time minus think time.
        overhead_ms = 0.0 if reply.failure else max(0.0, wall_ms - reply.think_ms)
        self.metrics.decision(
            self.spec.season,
            self.spec.game,
            stats["bot"],
            reply.think_ms / 1000.0,
            overhead_ms / 1000.0,
        )
        return failed

    # --- the start, the end, the result -----------------------------------------------

    async def notify_match_start(self) -> None:
        num_deals = int(self.match.observation(0).get("num_deals", 0))
        for bot, seats in self.notices.bots().items():
            if await self.router.route(bot, now_ms()) is not None:  # one directory read
                self.asker.reached.add(bot)
            self.notices.match_start(bot, seats, self.rules, num_deals)

    def notify_match_end(self) -> None:
        self.notices.match_end()

    @property
    def reached(self) -> set[str]:
        """The bots this attempt found a stream of."""
        return self.asker.reached

    @property
    def resent(self) -> int:
        """Requests sent again because their referee died or drained."""
        return self.asker.resent

    def committed_result(self) -> CommittedResult:
        return record.committed_result(
            self.spec, self.attempt, self.match, self.stats, self.finished_ms
        )

    def record(self) -> dict[str, Any]:
        """Everything needed to audit and replay the match (docs/workers.md)."""
        return record.match_record(
            self.spec,
            self.original,
            self.attempt,
            self.rules,
            self.match,
            self.steps,
            self.stats,
            self.finished_ms,
            self.resent,
        )
