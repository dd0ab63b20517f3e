"""One match, from its stored spec to its committed result, as an asyncio task of a match
host (workers/host.py; docs/workers.md "The life of a match").

Read top to bottom: :func:`start_attempt` loads the spec and takes a new attempt number,
:func:`reveal` records that the attempt is about to show the bots its deals (fenced: a
superseded attempt shows nothing), :class:`MatchRun` plays the match (each decision goes
to the bot's referee over the
internal stream, :mod:`workers.link`; nothing per decision touches Redis), and
:func:`commit` writes the result once, atomically, fenced by the attempt number.

Exactly once: every run takes a fresh attempt number (INCR). A run whose attempt is no
longer the latest stops (``Superseded``, seen by the host's heartbeat) and its commit is
refused: the commit is one MULTI/EXEC under WATCH of the attempt and the result, and
writes only if the attempt is still the latest and no result exists.

A retried match is re-dealt from fresh seeds derived from its seed and the attempt
(``MatchSpec.for_attempt``, recorded in the match record) when an earlier attempt showed
the bots anything (:func:`reveal`, fenced, before an attempt's first message to a bot):
replaying those deals would hand a bot that remembers them its opponents' cards. An
earlier attempt that showed nothing (its host gone before the first message, or superseded
before it) leaves the scheduled deals to the next one. A start is one script named by a
token, so a try retried through a Redis outage never takes two numbers.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, NamedTuple, Protocol, TypeVar

import redis

from arena.v1 import internal_pb2
from referee import keys, lua
from referee.games.base import PASS, Event, EventKind, Match, Source
from referee.games.registry import get_game
from referee.match.clock import MatchClock
from referee.match.messages import (
    ActionResultMessage,
    ClockInfo,
    DealEndMessage,
    MatchEndMessage,
    MatchStartMessage,
    Notification,
    TurnMessage,
    now_ms,
)
from referee.match.row import row_text
from referee.match.spec import CommittedResult, FallbackMode, MatchSpec, SeatStats, seat_stats
from referee.protocol import convert
from referee.queue import MatchState, RunningMatches, season_state
from referee.records import RecordRef
from workers import metrics
from workers.link import LinkLost, Router, cpu_ms_of

log = logging.getLogger("workers.runner")

_T = TypeVar("_T")

Kind = internal_pb2.Reply

RECORD_VERSION: Final = 3
SAFETY_STRIKES: Final = 25
"""Failures in a row after which the autopilot takes a seat over even when the spec says
``strikes=0`` (no autopilot): a Sevens seat that never plays blocks its suits, and the
deal would never end."""
MAX_FALLBACK_CHARS: Final = 40
"""Longest ``Action.fallback`` code kept (the record and the bot's ActionResult)."""
REFUSED_FALLBACK: Final = "fallback()"
"""The text a season with ``fallback = "invalid"`` applies for a fallback answer: no card
or pass, so every engine refuses it as an invalid action with the rules' consequence (and
its record replays to the same refusal)."""
REPLY_SLACK_MS: Final = 5_000.0
"""How long past a turn's own bounds (slot wait + limit) the host waits for the referee's
reply before it judges the decision itself (a referee that lost a turn: never expected)."""


class Superseded(Exception):
    """A newer attempt of this match has started; this run must stop and commit nothing."""


def worker_name() -> str:
    return os.environ.get("ARENA_WORKER_NAME") or f"{socket.gethostname()}:{os.getpid()}"


BEGIN_PATIENCE_S = 60.0
"""How long a dequeued match waits for Redis before its attempt starts (and before it shows
the bots anything, :func:`reveal`). Until the match is marked running, no heartbeat exists
for the janitor to find lapsed: a job that failed here would leave the match queued with
no job (a host whose network comes back may not reach Redis for a moment yet)."""

REVEALED: Final = "revealed"
"""Field of ``keys.match_state``: the first attempt that showed the bots its deals."""


class Started(NamedTuple):
    """An attempt just begun: the stored spec, its number, and whether it must be re-dealt
    (an earlier attempt showed the bots its deals)."""

    spec: MatchSpec
    attempt: int
    redeal: bool


def _patiently(call: Callable[[], _T], match_id: str) -> _T:
    """``call()``, retried through a Redis outage of up to ``BEGIN_PATIENCE_S``."""
    deadline = time.monotonic() + BEGIN_PATIENCE_S
    delay = 0.2
    while True:
        try:
            return call()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if time.monotonic() + delay > deadline:
                raise
            log.warning(
                "match %s: cannot reach Redis (%s); retrying in %.1f s", match_id, exc, delay
            )
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def start_attempt(conn: redis.Redis, match_id: str, worker: str) -> Started | None:
    """Load the spec, take a new attempt number and mark the match running; None if the
    match already has a result or its season was cancelled. Raises ``LookupError`` without
    a spec. Waits out a Redis outage of up to ``BEGIN_PATIENCE_S``: every try names the
    same start (a random token), so a try whose reply was lost, or whose request the
    network delivers late, after a later try went through, takes no second number."""
    token = os.urandom(8).hex()
    return _patiently(lambda: _start_attempt(conn, match_id, worker, token), match_id)


def _start_attempt(conn: redis.Redis, match_id: str, worker: str, token: str) -> Started | None:
    raw = conn.get(keys.match_spec(match_id))
    if raw is None:
        if conn.exists(
            keys.match_result(match_id)
        ):  # the commit drops the spec (the record has it)
            log.info("match %s is already committed; nothing to do", match_id)
            return None
        raise LookupError(f"match {match_id!r} has no spec at {keys.match_spec(match_id)}")
    spec = MatchSpec.from_json(raw)
    season = keys.season_matches(spec.season) if spec.season else keys.match_state(match_id)
    now = f"{now_ms():.0f}"
    got = lua.START(
        conn,
        [
            keys.match_attempt(match_id),
            keys.match_state(match_id),
            keys.match_result(match_id),
            RunningMatches.key,
            season,
        ],
        [token, worker or worker_name(), now, match_id, "1" if spec.season else "0", REVEALED],
    )
    if got == 0:
        log.info("match %s is already committed; nothing to do", match_id)
        return None
    if got == -1:  # referee.seasons.store.cancel_season: a match not running then never starts
        log.info("match %s: season %s was cancelled; not played", match_id, spec.season)
        return None
    attempt, redeal = got
    return Started(spec, int(attempt), bool(int(redeal)))


def reveal(conn: redis.Redis, match_id: str, attempt: int) -> bool:
    """Record, before ``attempt`` shows the bots anything, that it is about to (so any later
    attempt is re-dealt); False if a newer attempt has started (this one must then show
    nothing: the newer one may be playing the same deals). One atomic script, retried
    through an outage like ``start_attempt`` (a retry after a lost reply finds the field
    set and sets nothing)."""
    script = (keys.match_attempt(match_id), keys.match_state(match_id))
    args = (attempt, REVEALED)

    def call() -> bool:
        return bool(lua.REVEAL(conn, script, args))

    return _patiently(call, match_id)


def mark_failed(conn: redis.Redis, spec: MatchSpec, attempt: int, error: str) -> None:
    """Keep the error in the match state, unless a newer attempt or a result exists (a
    ``WatchError``, which a dropped connection raises too, checks again: ``commit``)."""
    key = keys.match_state(spec.match_id)
    while True:
        try:
            _mark_failed_once(conn, spec, attempt, error, key)
            return
        except redis.WatchError:
            continue


def _mark_failed_once(
    conn: redis.Redis, spec: MatchSpec, attempt: int, error: str, key: str
) -> None:
    with conn.pipeline() as pipe:
        pipe.watch(key, keys.match_result(spec.match_id))  # type: ignore[no-untyped-call]
        current = pipe.hget(key, "attempt")
        if pipe.exists(keys.match_result(spec.match_id)) or int(current or 0) != attempt:
            return
        pipe.multi()
        pipe.hset(
            key,
            mapping={"state": MatchState.FAILED, "error": error, "failed_ms": int(now_ms())},
        )
        RunningMatches(pipe).remove(spec.match_id)
        season_state(pipe, spec.season, spec.match_id, MatchState.FAILED)
        metrics.match_counter(pipe, spec.game, "failed")
        pipe.execute()
    log.error("match %s attempt %d failed: %s", spec.match_id, attempt, error)


def commit(
    conn: redis.Redis,
    spec: MatchSpec,
    attempt: int,
    result: CommittedResult,
    record: RecordRef | dict[str, Any],
) -> bool:
    """Commit ``result`` and its record's pointer (``referee.records``: written durably
    before this call; a dict is kept inline, as before the record store) atomically if
    ``attempt`` is still the match's latest and no result exists yet; True if this did it.

    A ``WatchError`` is not taken for a newer attempt: redis-py raises it too when the
    connection drops while it watches (a Redis restart, a network cut), whether or not
    EXEC reached Redis. So the commit reads the fencing state again and tries again: False
    only when another attempt or another commit's result is there, True when the result
    stored is this call's (``COMMITTED_BY``: an EXEC whose reply was lost). A Redis still
    away raises ``ConnectionError`` from WATCH, which the caller retries (``workers.host``)."""
    token = os.urandom(8).hex()
    while True:
        try:
            return _commit_once(conn, spec, attempt, result, record, token)
        except redis.WatchError:
            log.info(
                "match %s attempt %d: commit interrupted; checking again", spec.match_id, attempt
            )


COMMITTED_BY: Final = "commit"
"""Field of ``keys.match_state``: the random token of the commit call that wrote the result
(so a retry knows its own EXEC went through when only its reply was lost)."""


def _commit_once(
    conn: redis.Redis,
    spec: MatchSpec,
    attempt: int,
    result: CommittedResult,
    record: RecordRef | dict[str, Any],
    token: str,
) -> bool:
    mid = spec.match_id
    with conn.pipeline() as pipe:
        pipe.watch(keys.match_result(mid), keys.match_attempt(mid))  # type: ignore[no-untyped-call]
        if pipe.exists(keys.match_result(mid)):
            return _str(pipe.hget(keys.match_state(mid), COMMITTED_BY)) == token
        latest = pipe.get(keys.match_attempt(mid))
        if latest is not None and int(latest) != attempt:
            return False
        pipe.multi()
        pipe.set(keys.match_result(mid), row_text(result))
        pipe.set(
            keys.match_record(mid),
            record.to_json()
            if isinstance(record, RecordRef)
            else json.dumps(record, separators=(",", ":")),
        )
        pipe.xadd(keys.RESULTS_STREAM, {"match_id": mid, "season": spec.season})
        pipe.hset(
            keys.match_state(mid),
            mapping={
                "state": MatchState.DONE,
                "attempt": attempt,
                "error": "",
                "finished_ms": f"{result['finished_ms']:.0f}",
                COMMITTED_BY: token,
            },
        )
        pipe.delete(keys.match_spec(mid))  # the record keeps it: nothing per match but pointers
        RunningMatches(pipe).remove(mid)
        pipe.zadd(keys.MATCHES_RECENT, {mid: result["finished_ms"]})
        season_state(pipe, spec.season, mid, MatchState.DONE)
        metrics.commit_counters(pipe, spec.season, spec.game, result["stats"])
        pipe.execute()
    return True


def _str(value: Any) -> str | None:
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


class Host(Protocol):
    """What a match needs from the process that runs it (workers/host.py)."""

    router: Router
    metrics: metrics.HostMetrics


@dataclass(slots=True)
class Reply:
    """What came back for one request: the action and think time, or why nothing did."""

    action: str | None
    think_ms: float
    failure: Literal["", "timeout", "disconnected"]
    wait_ms: float = 0.0  # request ready -> referee's send stamp (diagnostics only)
    fallback: str = ""  # Action.fallback: why the bot's SDK or bridge answered for it
    cpu_clock: bool = False  # think_ms is the bot's sandbox CPU time (TimeControl.clock)


FAILURE_KINDS: Final = frozenset(
    {EventKind.TIMEOUT, EventKind.INVALID_ACTION, EventKind.ILLEGAL_PASS}
)


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


class MatchRun:
    """One attempt at one match: the decision loop, the clock, the record."""

    def __init__(self, host: Host, spec: MatchSpec, attempt: int, redeal: bool | None = None):
        """``redeal``: whether an earlier attempt showed the bots its deals (``Started``);
        None assumes so for any attempt after the first."""
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
        self.steps: list[dict[str, Any]] = []
        self.resent = 0  # requests sent again because their referee died or drained
        self.deals_reported = 0
        self.totals = [0] * self.n
        self.finished_ms = 0.0
        self.superseded = False
        self.encoder: convert.TurnEncoder | None = None  # this match's TurnRequest bytes
        self.results = convert.ResultEncoder(spec.match_id, attempt)  # its ActionResults
        self.reached: set[str] = set()  # bots this match found a stream of
        # The reply awaited and the loop time after which it is given up (REPLY_SLACK_MS),
        # checked by one timer per match (see watch).
        self.waiting: tuple[asyncio.Future[Any], float] | None = None
        self.guard: asyncio.TimerHandle | None = None
        self.guard_at = 0.0

    # --- the match loop ---------------------------------------------------------------

    async def play(self) -> None:
        try:
            await self.notify_match_start()
            while not self.match.is_over():
                if self.superseded:
                    raise Superseded("a newer attempt has started")
                seat = self.match.to_act()
                legal = self.match.legal_actions()
                if self.autopilot[seat]:
                    self.auto_step(seat, self.match.fallback_action(), Source.AUTOPILOT)
                elif self.spec.autoplay_forced and len(legal) == 1:
                    self.auto_step(seat, legal[0], Source.FORCED)
                else:
                    await self.ask_step(seat, legal)
            self.finished_ms = now_ms()
        finally:
            if self.guard is not None:
                self.guard.cancel()
                self.guard = None

    def auto_step(self, seat: int, action: str, source: str) -> None:
        """Apply an action the platform chose, without asking the bot."""
        deal = self.match.deal_index()
        events = self.match.apply(action, source)
        self.steps.append(
            {
                "deal": deal,
                "seat": seat,
                "source": source,
                "action": action,
                "events": _dicts(events),
            }
        )
        self.after_events(events)

    async def ask_step(self, seat: int, legal: list[str]) -> None:
        """Ask the seat's bot, judge its answer by the clock, apply, tell it the outcome."""
        bot = self.spec.seats[seat]
        deal = self.match.deal_index()
        self.seq += 1
        clock = self.clock.info(seat)
        observation = self.match.observation(seat)
        turn: TurnMessage = {
            "type": "turn",
            "bot": bot,
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "seq": self.seq,
            "seat": seat,
            "season": self.spec.season,
            "observation": observation,
            "legal_actions": legal,
            "clock": clock,
        }
        start = time.perf_counter()
        reply = await self.ask(turn)
        wall_ms = (time.perf_counter() - start) * 1000.0

        events = self.judge_and_apply(seat, reply)
        mine = [e for e in events if e.seat == seat]
        failed = self.count(seat, reply, mine, wall_ms)
        self.strikes[seat] = self.strikes[seat] + 1 if failed else 0
        took_over = failed and self.strikes[seat] >= self.strike_limit
        status, reason, message = _outcome(reply, mine)
        result: ActionResultMessage = {
            "type": "action_result",
            "bot": bot,
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "seq": self.seq,
            "status": status,
            "reason": reason,
            "message": message + (_AUTOPILOT_NOTE % self.strikes[seat] if took_over else ""),
            "penalty": _penalty(mine),
            "applied_action": _applied(mine),
            "think_ms": reply.think_ms,  # whole ms on the wire: rounded once, by the encoder
            "autopilot": took_over,
        }
        # A plain acceptance: streams that declined those (Hello.skip_accepted_results) drop it
        plain = status == "accepted" and not reason and not result["penalty"] and not took_over
        self.send(result, accepted=plain)
        self.steps.append(
            {
                "deal": deal,
                "seat": seat,
                "source": Source.BOT,
                "seq": self.seq,
                "request": {
                    "observation": _recorded(observation),
                    "history_entries": len(observation.get("history", ())),
                    "legal_actions": legal,
                    "clock": clock,
                },
                "answer": reply.action,
                **({"fallback": reply.fallback} if reply.fallback else {}),
                "timeout": bool(reply.failure),
                "status": status,
                "reason": reason,
                "think_ms": round(reply.think_ms, 3),
                **({"cpu_clock": True} if reply.cpu_clock else {}),
                "wall_ms": round(wall_ms, 3),
                "wait_ms": round(reply.wait_ms, 3),
                "bank_left_ms": round(self.clock.bank_left_ms[seat], 3),
                "events": _dicts(events),
            }
        )
        if took_over:
            self.autopilot[seat] = True
            self.stats[seat]["autopilot"] = True
            self.steps.append(
                {"deal": deal, "seat": seat, "source": Source.AUTOPILOT, "takeover": True}
            )
        self.after_events(events)

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
        """Update the seat's stats and the decision metrics; True if the seat failed."""
        kinds = [e.kind for e in mine]
        stats = self.stats[seat]
        stats["decisions"] += 1
        stats["timeouts"] += int(bool(reply.failure))
        stats["invalid_actions"] += kinds.count(EventKind.INVALID_ACTION)
        stats["illegal_passes"] += kinds.count(EventKind.ILLEGAL_PASS)
        stats["fallbacks"] += int(bool(reply.fallback) and not reply.failure)
        stats["think_ms_total"] += reply.think_ms
        # Overhead is only meaningful when the bot answered: wall time minus think time.
        overhead_ms = 0.0 if reply.failure else max(0.0, wall_ms - reply.think_ms)
        self.metrics.decision(
            self.spec.season,
            self.spec.game,
            stats["bot"],
            reply.think_ms / 1000.0,
            overhead_ms / 1000.0,
        )
        return bool(reply.failure) or not FAILURE_KINDS.isdisjoint(kinds)

    def after_events(self, events: list[Event]) -> None:
        """Report finished deals to the bots."""
        if any(e.kind in (EventKind.DEAL_END, EventKind.VOID_DEAL) for e in events):
            results = self.match.deal_results()
            for deal in results[self.deals_reported :]:
                self.totals = [t + x for t, x in zip(self.totals, deal.deltas, strict=True)]
                totals = list(self.totals)
                for bot in dict.fromkeys(self.spec.seats):
                    msg: DealEndMessage = {
                        "type": "deal_end",
                        "bot": bot,
                        "match_id": self.spec.match_id,
                        "attempt": self.attempt,
                        "deal_index": deal.deal,
                        "winner": -1 if deal.winner is None else deal.winner,
                        "deltas": list(deal.deltas),
                        "totals": totals,
                        "result": deal.to_dict(),
                    }
                    self.send(msg)
            self.deals_reported = len(results)

    # --- the decision path ------------------------------------------------------------

    def send(self, message: Notification, accepted: bool = False) -> None:
        """A notification for a bot: encoded once, best effort through its referee
        (``accepted``: a plain ACCEPTED ActionResult, docs/PROTOCOL.md section 4)."""
        try:
            if message["type"] == "action_result":  # one per decision: the outcomes memoized
                payload = self.results.encode(message)
            else:
                payload = convert.notification_to_proto(message).SerializeToString()
        except (ValueError, KeyError, TypeError) as exc:
            log.error("match %s: cannot encode a %s: %r", self.spec.match_id, message["type"], exc)
            return
        self.router.notify(message["bot"], self.spec.match_id, payload, accepted)

    async def ask(self, turn: TurnMessage) -> Reply:
        """Send the turn to the bot's referee and wait for its one reply; route again (the
        directory) when the bot's stream ended, the referee drained or its link broke."""
        tc = self.spec.time_control
        seat = turn["seat"]
        bot = turn["bot"]
        key = (turn["match_id"], turn["attempt"], turn["seq"])
        limit = tc.wall_limit_ms(self.clock.limit_ms(seat))  # the referee's TIMEOUT
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

    def watch(self, future: asyncio.Future[Any], within_s: float) -> None:
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

    # --- notifications and the result ---------------------------------------------------

    def bots(self) -> dict[str, list[int]]:
        """Each distinct bot and the seats it holds."""
        out: dict[str, list[int]] = {}
        for seat, bot in enumerate(self.spec.seats):
            out.setdefault(bot, []).append(seat)
        return out

    async def notify_match_start(self) -> None:
        obs = self.match.observation(0)
        for bot, seats in self.bots().items():
            if await self.router.route(bot, now_ms()) is not None:  # one directory read
                self.reached.add(bot)
            msg: MatchStartMessage = {
                "type": "match_start",
                "bot": bot,
                "match_id": self.spec.match_id,
                "attempt": self.attempt,
                "game": self.spec.game,
                "preset": self.rules.name,
                "rules": self.rules.to_dict(),
                "seats": seats,
                "players": list(self.spec.seats),
                "num_deals": int(obs.get("num_deals", 0)),
                "season": self.spec.season,
            }
            self.send(msg)

    def notify_match_end(self) -> None:
        result = self.match.result()
        for bot in self.bots():
            msg: MatchEndMessage = {
                "type": "match_end",
                "bot": bot,
                "match_id": self.spec.match_id,
                "attempt": self.attempt,
                "totals": list(result.totals),
                "unit": result.unit,
                "winners": list(result.winners),
                "result": result.to_dict(),
            }
            self.send(msg)

    def committed_result(self) -> CommittedResult:
        return {
            "match_id": self.spec.match_id,
            "season": self.spec.season,
            "game": self.spec.game,
            "seats": list(self.spec.seats),
            "attempt": self.attempt,
            "result": self.match.result().to_dict(),
            "stats": self.stats,
            "finished_ms": self.finished_ms,
        }

    def record(self) -> dict[str, Any]:
        """Everything needed to audit and replay the match (docs/workers.md)."""
        engine = json.loads(self.match.to_json())
        # The engine's record holds the events as Event.to_dict() made them (the Match
        # contract, referee/games/base.py): the same list, not made a second time.
        events = engine.get("events")
        record = {
            "version": RECORD_VERSION,
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "spec": self.spec.to_dict(),
            "rules": self.rules.to_dict(),
            "initial_hands": self.match.initial_hands(),
            "steps": self.steps,
            "events": events if isinstance(events, list) else _dicts(self.match.events()),
            "engine": engine,
            "result": self.match.result().to_dict(),
            "stats": self.stats,
            "finished_ms": self.finished_ms,
            "resent": self.resent,
        }
        if self.spec is not self.original:
            record["redealt"] = {
                "attempt": self.attempt,
                "scheduled_seed": self.original.seed,
                "scheduled_deals": None
                if self.original.deals is None
                else [d.to_dict() for d in self.original.deals],
            }
        return record


_AUTOPILOT_NOTE = "; %d failures in a row: the autopilot plays this seat to the end of the match"


_NOT_RECORDED: Final = frozenset({"rules", "history"})


def _recorded(observation: Mapping[str, Any]) -> dict[str, Any]:
    """A request's observation as the match record keeps it: without the rules (the
    record's own ``rules``) and the deal's history (the record's ``events`` of the deal up
    to this step; ``history_entries`` says how many the seat was shown), which every step
    would repeat (docs/workers.md "Match record")."""
    return {k: v for k, v in observation.items() if k not in _NOT_RECORDED}


def _dicts(events: list[Event]) -> list[dict[str, Any]]:
    return [e.to_dict() for e in events]


def _penalty(events: list[Event]) -> int:
    """Chips or points the seat paid in these events (summed from penalty details)."""
    total = 0
    for e in events:
        if e.kind == EventKind.PENALTY:
            for name in ("amount", "chips", "points"):
                value = e.detail.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    total += value
                    break
    return total


def _applied(events: list[Event]) -> str:
    """The action that took effect for the seat: its card(s), or ``pass``; "" if none."""
    for e in reversed(events):
        if e.kind == EventKind.PLAY and e.action:
            return e.action
        if e.kind in (EventKind.PASS, EventKind.ILLEGAL_PASS, EventKind.TIMEOUT):
            return PASS
    return ""


def _outcome(
    reply: Reply, events: list[Event]
) -> tuple[Literal["accepted", "refused", "timed_out"], str, str]:
    """Status, reason code and a sentence for the bot about what happened to its answer."""
    if reply.failure == "disconnected":
        return (
            "timed_out",
            "disconnected",
            "the request was never sent: no stream of this bot was connected (or none had a "
            "free slot) before its deadline",
        )
    if reply.failure == "timeout":
        return (
            "timed_out",
            "timeout",
            f"no answer within the time limit (think time {reply.think_ms:.0f} ms); "
            "the rules' timeout consequence was applied",
        )
    if reply.fallback:
        for e in events:
            if e.kind == EventKind.INVALID_ACTION:
                return (
                    "refused",
                    "fallback",
                    f"{reply.action!r} was a fallback answer ({reply.fallback}: your bot's "
                    "code did not choose it, its SDK or bridge did) and this season refuses "
                    'fallbacks as invalid actions (fallback = "invalid"): the rules\' '
                    "consequence of an invalid action was applied",
                )
    for e in events:
        if e.kind == EventKind.INVALID_ACTION:
            words = str(e.detail.get("message") or e.reason or "not a legal action")
            return "refused", e.reason or "invalid_action", f"{reply.action!r} refused: {words}"
    for e in events:
        if e.kind == EventKind.ILLEGAL_PASS:
            words = str(e.detail.get("message") or "you passed while holding a legal play")
            return "accepted", "illegal_pass", f"illegal pass (SV-18): {words}"
    if reply.fallback:
        return (
            "accepted",
            "fallback",
            f"{reply.action!r} accepted as a fallback answer ({reply.fallback}: your bot's "
            "code did not choose it, its SDK or bridge did); counted in your fallbacks",
        )
    return "accepted", "", ""
