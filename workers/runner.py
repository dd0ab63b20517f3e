"""The ``run_match`` job: one match, from its stored spec to its committed result.

Read top to bottom: :func:`run_match` loads the spec, takes a new attempt number, plays
the match (:class:`MatchRun`), commits the result exactly once (:func:`commit`) and tells
the bots. Workers speak only Redis (referee/mailbox.py); the referee relays to the bots.

Exactly once: every run takes a fresh attempt number (INCR). Reply lists carry the
attempt, so answers for an older run are never read; a run that sees a newer attempt
stops (``Superseded``); the commit is one MULTI/EXEC under WATCH that writes the result
only if there is none. A second run of the same match therefore commits nothing.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final, Literal

import redis

from referee import keys, mailbox
from referee.games.base import PASS, Event, EventKind, Match, Source
from referee.games.registry import get_game
from referee.mailbox import (
    ActionResultMessage,
    DealEndMessage,
    InboxMessage,
    MatchEndMessage,
    MatchStartMessage,
    TurnMessage,
    now_ms,
)
from workers import metrics
from workers.clock import MatchClock
from workers.queue import DONE, FAILED, RUNNING
from workers.spec import CommittedResult, MatchSpec, SeatStats

log = logging.getLogger("workers.runner")

MIN_BLPOP_S: Final = 0.01
"""Shortest BLPOP wait sent to Redis: 6.2 reads 0.001 s as 0, i.e. block forever."""

HEARTBEAT_S: Final = 1.0
"""How often a running match refreshes its heartbeat (and flushes its metrics)."""
ANSWER_MARGIN_MS: Final = 500.0
"""How long past a decision's limit the worker still waits for the referee to deliver an
answer. It only delays the judgement of a late bot; the judgement itself uses stamps."""
RECORD_VERSION: Final = 1
SAFETY_STRIKES: Final = 25
"""Failures in a row after which the autopilot takes a seat over even when the spec says
``strikes=0`` (no autopilot): a Sevens seat that never plays blocks its suits, and the
deal would never end."""


class Superseded(Exception):
    """A newer attempt of this match has started; this run must stop and commit nothing."""


def worker_name() -> str:
    return os.environ.get("ARENA_WORKER_NAME") or f"{socket.gethostname()}:{os.getpid()}"


def job_connection() -> redis.Redis:
    """A text-mode connection to the Redis of the current RQ job, with no socket timeout
    (blocking pops must never be cut short by the client: PITFALLS 9).

    A single-connection client: a match runs in one thread, and plain commands then skip
    the pool's per-command checkout (a lock and a readiness poll of the socket, ~30 us on
    every BLPOP). Pipelines still take a connection from the pool."""
    from rq import get_current_job

    job = get_current_job()
    if job is None:
        url = os.environ.get("ARENA_REDIS_URL")
        if not url:
            raise RuntimeError("run_match outside an RQ job needs ARENA_REDIS_URL or conn=")
        return redis.Redis.from_url(url, decode_responses=True, single_connection_client=True)
    pool = job.connection.connection_pool
    kwargs = {**pool.connection_kwargs, "decode_responses": True, "socket_timeout": None}
    return redis.Redis(
        connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs),
        single_connection_client=True,
    )


def run_match(match_id: str, conn: redis.Redis | None = None) -> str:
    """Play match ``match_id`` and commit its result; returns what happened in one word:
    ``committed``, ``duplicate`` (another run committed first), ``superseded`` or
    ``already-done``. Failures are recorded in the match state, then re-raised."""
    begun = _begin(match_id, conn)
    if begun is None:
        return "already-done"
    conn, spec, attempt = begun
    log.info("match %s attempt %d started (%s)", match_id, attempt, spec.game)
    try:
        run = MatchRun(conn, spec, attempt)
        run.play()
    except Superseded as exc:
        log.warning("match %s attempt %d stopped: %s; it commits nothing", match_id, attempt, exc)
        return "superseded"
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        # Redis went away (restart, network): not the match's fault. The state stays
        # "running"; its heartbeat lapses and the janitor retries it from its seed.
        log.error("match %s attempt %d lost Redis (%s); left for a retry", match_id, attempt, exc)
        raise
    except Exception as exc:
        _mark_failed(conn, spec, attempt, f"{type(exc).__name__}: {exc}")
        raise
    if not commit(conn, spec, attempt, run.committed_result(), run.record()):
        log.warning(
            "match %s attempt %d commits nothing: a result was already committed", match_id, attempt
        )
        return "duplicate"
    run.notify_match_end()
    log.info("match %s attempt %d committed", match_id, attempt)
    return "committed"


BEGIN_PATIENCE_S = 60.0
"""How long a dequeued match waits for Redis before its attempt starts. Until the match is
marked running, no heartbeat exists for the janitor to find lapsed: a job that failed
here would leave the match queued with no job (seen in tests/multihost: a worker host
whose link came back could not reach Redis for a moment, "No route to host")."""


def _begin(match_id: str, conn: redis.Redis | None) -> tuple[redis.Redis, MatchSpec, int] | None:
    """Connect, load the spec and take a new attempt number; None when the match is
    already committed. Waits out a Redis outage of up to ``BEGIN_PATIENCE_S``."""
    deadline = time.monotonic() + BEGIN_PATIENCE_S
    delay = 0.2
    while True:
        client: redis.Redis | None = None
        try:
            client = conn if conn is not None else job_connection()
            raw = client.get(keys.match_spec(match_id))
            if raw is None:
                raise LookupError(f"match {match_id!r} has no spec at {keys.match_spec(match_id)}")
            spec = MatchSpec.from_json(raw)
            if client.exists(keys.match_result(match_id)):
                log.info("match %s is already committed; nothing to do", match_id)
                return None
            if spec.season and client.hget(keys.season_matches(spec.season), match_id) in (
                "cancelled",
                b"cancelled",
            ):  # referee.seasons.store.cancel_season: a match not running then never starts
                log.info("match %s: season %s was cancelled; not played", match_id, spec.season)
                return None
            # a retry after a lost INCR reply skips a number: attempts stay unique
            attempt = int(client.incr(keys.match_attempt(match_id)))
            _mark_running(client, spec, attempt)
            return client, spec, attempt
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            if conn is None and client is not None:
                client.close()
            if time.monotonic() + delay > deadline:
                raise
            log.warning(
                "match %s: cannot reach Redis (%s); retrying in %.1f s", match_id, exc, delay
            )
            time.sleep(delay)
            delay = min(delay * 2, 5.0)


def _mark_running(conn: redis.Redis, spec: MatchSpec, attempt: int) -> None:
    now = now_ms()
    pipe = conn.pipeline()
    pipe.hset(
        keys.match_state(spec.match_id),
        mapping={
            "state": RUNNING,
            "attempt": attempt,
            "worker": worker_name(),
            "started_ms": f"{now:.0f}",
            "heartbeat_ms": f"{now:.0f}",
        },
    )
    pipe.zadd(keys.MATCHES_RUNNING, {spec.match_id: now})
    if spec.season:
        pipe.hset(keys.season_matches(spec.season), spec.match_id, RUNNING)
    pipe.execute()


def _mark_failed(conn: redis.Redis, spec: MatchSpec, attempt: int, error: str) -> None:
    """Keep the error in the match state, unless a newer attempt or a result exists."""
    key = keys.match_state(spec.match_id)
    with conn.pipeline() as pipe:
        try:
            pipe.watch(key, keys.match_result(spec.match_id))  # type: ignore[no-untyped-call]
            current = pipe.hget(key, "attempt")
            if pipe.exists(keys.match_result(spec.match_id)) or int(current or 0) != attempt:
                return
            pipe.multi()
            pipe.hset(key, mapping={"state": FAILED, "error": error, "failed_ms": int(now_ms())})
            pipe.zrem(keys.MATCHES_RUNNING, spec.match_id)
            if spec.season:
                pipe.hset(keys.season_matches(spec.season), spec.match_id, FAILED)
            metrics.match_counter(pipe, spec.game, "failed")
            pipe.execute()
        except redis.WatchError:
            return
    log.error("match %s attempt %d failed: %s", spec.match_id, attempt, error)


def commit(
    conn: redis.Redis,
    spec: MatchSpec,
    attempt: int,
    result: CommittedResult,
    record: dict[str, Any],
) -> bool:
    """Commit ``result`` atomically, only if the match has none yet; True if this did it."""
    mid = spec.match_id
    with conn.pipeline() as pipe:
        try:
            pipe.watch(keys.match_result(mid))  # type: ignore[no-untyped-call]
            if pipe.exists(keys.match_result(mid)):
                return False
            pipe.multi()
            pipe.set(keys.match_result(mid), json.dumps(result, separators=(",", ":")))
            pipe.set(keys.match_record(mid), json.dumps(record, separators=(",", ":")))
            pipe.xadd(keys.RESULTS_STREAM, {"match_id": mid, "season": spec.season})
            pipe.hset(
                keys.match_state(mid),
                mapping={
                    "state": DONE,
                    "attempt": attempt,
                    "error": "",
                    "finished_ms": f"{result['finished_ms']:.0f}",
                },
            )
            pipe.zrem(keys.MATCHES_RUNNING, mid)
            pipe.zadd(keys.MATCHES_RECENT, {mid: result["finished_ms"]})
            if spec.season:
                pipe.hset(keys.season_matches(spec.season), mid, DONE)
            metrics.commit_counters(pipe, spec.season, spec.game, result["stats"])
            pipe.execute()
        except redis.WatchError:
            return False
    return True


@dataclass(slots=True)
class Reply:
    """What came back for one request: the action and think time, or why nothing did."""

    action: str | None
    think_ms: float
    failure: Literal["", "timeout", "disconnected"]
    inbox_ms: float = 0.0  # request enqueued -> referee's send stamp (diagnostics only)


FAILURE_KINDS: Final = frozenset(
    {EventKind.TIMEOUT, EventKind.INVALID_ACTION, EventKind.ILLEGAL_PASS}
)


class MatchRun:
    """One attempt at one match: the decision loop, the clock, the record."""

    def __init__(self, conn: redis.Redis, spec: MatchSpec, attempt: int):
        self.conn = conn
        self.spec = spec
        self.attempt = attempt
        self.n = len(spec.seats)
        game = get_game(spec.game)
        self.rules = game.rules_from_dict(spec.rules)
        self.match: Match = game.new_match(self.rules, self.n, spec.seed, spec.deals)
        self.clock = MatchClock(spec.time_control, self.n)
        self.metrics = metrics.DecisionMetrics(spec.season, spec.game)
        self.seq = 0
        self.strikes = [0] * self.n
        self.strike_limit = spec.strikes if spec.strikes > 0 else SAFETY_STRIKES
        self.autopilot = [False] * self.n
        self.stats: list[SeatStats] = [
            {
                "bot": bot,
                "decisions": 0,
                "timeouts": 0,
                "invalid_actions": 0,
                "illegal_passes": 0,
                "autopilot": False,
                "think_ms_total": 0.0,
            }
            for bot in spec.seats
        ]
        self.steps: list[dict[str, Any]] = []
        self.resent = 0  # requests sent again because their referee died holding them
        self.pending: list[tuple[str, str]] = []  # (inbox key, encoded message) not yet sent
        self.deals_reported = 0
        self.totals = [0] * self.n
        self.next_beat = time.monotonic() + HEARTBEAT_S
        self.finished_ms = 0.0

    # --- the match loop ---------------------------------------------------------------

    def play(self) -> None:
        self.notify_match_start()
        while not self.match.is_over():
            seat = self.match.to_act()
            legal = self.match.legal_actions()
            if self.autopilot[seat]:
                self.auto_step(seat, self.match.fallback_action(), Source.AUTOPILOT)
            elif self.spec.autoplay_forced and len(legal) == 1:
                self.auto_step(seat, legal[0], Source.FORCED)
            else:
                self.ask_step(seat, legal)
        self.finished_ms = now_ms()
        self.flush()

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

    def ask_step(self, seat: int, legal: list[str]) -> None:
        """Ask the seat's bot, judge its answer by the clock, apply, tell it the outcome."""
        bot = self.spec.seats[seat]
        deal = self.match.deal_index()
        self.seq += 1
        clock = self.clock.info(seat)
        observation = self.match.observation(seat)
        enqueued = now_ms()
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
            "reply_key": keys.reply(self.spec.match_id, self.attempt, self.seq),
            "enqueued_ms": enqueued,
            "expires_ms": self.clock.queue_deadline_ms(seat, enqueued),
        }
        start = time.perf_counter()
        reply = self.ask(turn)
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
            "think_ms": round(reply.think_ms, 3),
            "autopilot": took_over,
        }
        self.send(bot, result)
        self.steps.append(
            {
                "deal": deal,
                "seat": seat,
                "source": Source.BOT,
                "seq": self.seq,
                "request": {"observation": observation, "legal_actions": legal, "clock": clock},
                "answer": reply.action,
                "timeout": bool(reply.failure),
                "status": status,
                "reason": reason,
                "think_ms": round(reply.think_ms, 3),
                "wall_ms": round(wall_ms, 3),
                "inbox_ms": round(reply.inbox_ms, 3),
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
                return self.match.apply(reply.action, Source.BOT)
            reply.failure = "timeout"
        elif reply.failure == "timeout":
            self.clock.timed_out(seat)
        # "disconnected": nothing was in the bot's hands, so its bank is left alone
        return self.match.apply_timeout()

    def count(self, seat: int, reply: Reply, mine: list[Event], wall_ms: float) -> bool:
        """Update the seat's stats and the decision metrics; True if the seat failed."""
        kinds = Counter(e.kind for e in mine)
        stats = self.stats[seat]
        stats["decisions"] += 1
        stats["timeouts"] += int(bool(reply.failure))
        stats["invalid_actions"] += kinds[EventKind.INVALID_ACTION]
        stats["illegal_passes"] += kinds[EventKind.ILLEGAL_PASS]
        stats["think_ms_total"] += reply.think_ms
        # Overhead is only meaningful when the bot answered: wall time minus think time.
        overhead_ms = 0.0 if reply.failure else max(0.0, wall_ms - reply.think_ms)
        self.metrics.decision(stats["bot"], reply.think_ms / 1000.0, overhead_ms / 1000.0)
        return bool(reply.failure) or any(k in FAILURE_KINDS for k in kinds)

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
                    self.send(bot, msg)
            self.deals_reported = len(results)

    # --- the mailbox ----------------------------------------------------------------

    def send(self, bot: str, message: InboxMessage) -> None:
        """Queue a notification; it goes out with the next request (or at the end)."""
        self.pending.append((keys.inbox(bot), mailbox.encode(message)))

    def flush(self, pipe: Any | None = None) -> Any:
        """Put pending notifications (and, when due, heartbeat and metrics) on ``pipe``
        (executed here if not given; otherwise the caller executes it)."""
        own = pipe is None
        p = self.conn.pipeline(transaction=False) if pipe is None else pipe
        touched = set()
        for inbox, raw in self.pending:
            p.rpush(inbox, raw)
            touched.add(inbox)
        for inbox in touched:
            p.ltrim(inbox, -mailbox.INBOX_MAX_LEN, -1)
        self.pending.clear()
        if own or time.monotonic() >= self.next_beat:
            self.heartbeat(p)
        if own:
            p.execute()
        return p

    def heartbeat(self, pipe: Any) -> None:
        now = now_ms()
        self.next_beat = time.monotonic() + HEARTBEAT_S
        pipe.zadd(keys.MATCHES_RUNNING, {self.spec.match_id: now}, xx=True)
        pipe.hset(keys.match_state(self.spec.match_id), "heartbeat_ms", f"{now:.0f}")
        self.metrics.flush(pipe)

    def ask(self, turn: TurnMessage) -> Reply:
        """Push the request, wait for the referee's send stamp, then for the answer."""
        inbox = keys.inbox(turn["bot"])
        raw_turn = mailbox.encode(turn)
        pipe = self.flush(self.conn.pipeline(transaction=False))
        pipe.rpush(inbox, raw_turn)
        pipe.get(keys.match_attempt(self.spec.match_id))
        latest = pipe.execute()[-1]
        if latest is not None and int(latest) != self.attempt:
            raise Superseded(f"attempt {latest} has started")
        inbox_ms: float | None = None
        while True:
            answer = self.pop_until(turn["reply_key"], turn["expires_ms"])
            if answer is None:
                # Never picked up: the bot is busy elsewhere or not connected. Withdraw it.
                self.conn.lrem(inbox, 1, raw_turn)
                return Reply(None, 0.0, "disconnected")
            if answer["type"] == "answer":  # the stamp was consumed elsewhere; judge this one
                return Reply(answer["action"], float(answer["think_ms"]), "")
            if inbox_ms is None:
                inbox_ms = max(0.0, float(answer["sent_ms"]) - turn["enqueued_ms"])
            reply = self.await_answer(turn, answer, inbox_ms)
            if reply is not None:
                return reply
            # The referee that sent it died holding it (DESIGN section 8): send the same
            # request again, first in the inbox, with this decision's clock restarted.
            turn = {**turn, "expires_ms": self.clock.queue_deadline_ms(turn["seat"], now_ms())}
            raw_turn = mailbox.encode(turn)
            self.conn.lpush(inbox, raw_turn)
            self.resent += 1
            log.warning(
                "match %s seq %d: referee %s died holding the request; sent it again",
                self.spec.match_id,
                turn["seq"],
                answer["referee"],
            )

    def await_answer(
        self, turn: TurnMessage, stamp: mailbox.SentStamp, inbox_ms: float
    ) -> Reply | None:
        """Wait for the answer to a request that ``stamp``'s referee sent; None when that
        referee died holding it (its ``keys.referee_alive`` was there and is gone), else the
        answer or a timeout.

        The referee's liveness is read on every wake-up (at most ``REFEREE_BEAT_S`` apart).
        At the deadline a live referee must beat once more (or vanish) before the timeout
        is judged, so one that died just before the deadline is never taken for a bot that
        did not answer. An answer on the reply list is taken whenever it comes. A sender
        with no liveness key at all (one that does not beat) gets the plain timeout rule."""
        reply_key = turn["reply_key"]
        alive_key = keys.referee_alive(str(stamp.get("referee", "")))
        known = self.conn.exists(alive_key) > 0
        sent_local = now_ms()
        deadline = sent_local + self.clock.limit_ms(turn["seat"]) + ANSWER_MARGIN_MS
        beat_ms = mailbox.REFEREE_BEAT_S * 1000.0
        beat_at_deadline: str | None = None
        give_up = 0.0
        while True:
            now = now_ms()
            if not known:
                wake = deadline
            elif beat_at_deadline is None:
                wake = min(deadline, now + beat_ms)
            else:
                wake = now + 100.0
            answer = self.pop_until(reply_key, wake)
            if answer is not None:
                if answer["type"] == "answer":
                    return Reply(str(answer["action"]), float(answer["think_ms"]), "", inbox_ms)
                alive_key = keys.referee_alive(str(answer.get("referee", "")))  # a newer send
                known = self.conn.exists(alive_key) > 0
                beat_at_deadline = None
                continue
            beat = self.conn.get(alive_key) if known else None
            if known and beat is None:
                return None
            now = now_ms()
            if now < deadline:
                continue
            if beat is None or beat == mailbox.REFEREE_DRAINED:
                return Reply(None, now - sent_local, "timeout", inbox_ms)
            if beat_at_deadline is None:
                beat_at_deadline = str(beat)
                give_up = now + mailbox.REFEREE_ALIVE_TTL_MS + 1000.0
                continue
            if beat != beat_at_deadline or now >= give_up:
                return Reply(None, now - sent_local, "timeout", inbox_ms)

    def pop_until(self, key: str, deadline_ms: float) -> mailbox.ReplyMessage | None:
        """The next valid entry of reply list ``key``, or None at ``deadline_ms``."""
        raw: Any
        while True:
            left_s = (deadline_ms - now_ms()) / 1000.0
            if left_s <= 0:
                raw = self.conn.lpop(key)
                if raw is None:
                    return None
            else:
                # Redis 6.2 turns timeouts under 1 ms (0.001 s becomes 0.999 ms) into 0,
                # which means "block forever": never ask for less than MIN_BLPOP_S.
                wait_s = max(MIN_BLPOP_S, min(left_s, HEARTBEAT_S))
                popped = self.conn.blpop([key], timeout=wait_s)
                if popped is None:
                    if time.monotonic() >= self.next_beat:
                        self.flush()
                    continue
                raw = popped[1]
            try:
                return mailbox.decode_reply(raw)
            except ValueError:
                log.warning("match %s: ignoring a malformed reply entry %.80r", key, raw)

    # --- notifications and the result ---------------------------------------------------

    def bots(self) -> dict[str, list[int]]:
        """Each distinct bot and the seats it holds."""
        out: dict[str, list[int]] = {}
        for seat, bot in enumerate(self.spec.seats):
            out.setdefault(bot, []).append(seat)
        return out

    def notify_match_start(self) -> None:
        obs = self.match.observation(0)
        for bot, seats in self.bots().items():
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
            self.send(bot, msg)

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
            self.send(bot, msg)
        p = self.conn.pipeline(transaction=False)
        for inbox, raw in self.pending:
            p.rpush(inbox, raw)
            p.ltrim(inbox, -mailbox.INBOX_MAX_LEN, -1)
        self.pending.clear()
        p.execute()

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
        return {
            "version": RECORD_VERSION,
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "spec": self.spec.to_dict(),
            "rules": self.rules.to_dict(),
            "initial_hands": self.match.initial_hands(),
            "steps": self.steps,
            "events": _dicts(self.match.events()),
            "engine": json.loads(self.match.to_json()),
            "result": self.match.result().to_dict(),
            "stats": self.stats,
            "finished_ms": self.finished_ms,
        }


_AUTOPILOT_NOTE = "; %d failures in a row: the autopilot plays this seat to the end of the match"


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
            "the request waited in your inbox until its deadline without being sent: "
            "no connected stream of this bot had a free slot",
        )
    if reply.failure == "timeout":
        return (
            "timed_out",
            "timeout",
            f"no answer within the time limit (think time {reply.think_ms:.0f} ms); "
            "the rules' timeout consequence was applied",
        )
    for e in events:
        if e.kind == EventKind.INVALID_ACTION:
            words = str(e.detail.get("message") or e.reason or "not a legal action")
            return "refused", e.reason or "invalid_action", f"{reply.action!r} refused: {words}"
    for e in events:
        if e.kind == EventKind.ILLEGAL_PASS:
            words = str(e.detail.get("message") or "you passed while holding a legal play")
            return "accepted", "illegal_pass", f"illegal pass (SV-18): {words}"
    return "accepted", "", ""
