"""Enqueue match jobs and read their state, results and records.

A match moves through ``keys.match_state(match_id)["state"]`` (:class:`MatchState`):

``queued`` → ``running`` → ``done`` (result committed exactly once) or ``failed`` (the
error is kept in the ``error`` field); every move is one of
``referee.match.spec.MATCH_MOVES``, written through :func:`write_state`. A match whose
host stopped heartbeating (it was killed) goes back to ``queued`` with a new RQ job
(:func:`janitor_pass`, run by every match host). :class:`RunningMatches` owns the set of
running matches and their heartbeats.

Everything here takes a ``redis.Redis`` connection; both ``decode_responses=True`` and
``False`` connections work.
"""

from __future__ import annotations

import logging
import weakref
from typing import Any, Final

import redis
from rq import Queue
from rq.exceptions import DuplicateJobError, NoSuchJobError
from rq.job import Job, JobStatus

from referee import keys, metrics_store
from referee.defaults import CASUAL_QUEUE_NAME, QUEUE_NAME
from referee.match.messages import now_ms
from referee.match.row import parse_row
from referee.match.spec import CommittedResult, MatchSpec
from referee.match.spec import (
    MatchState as MatchState,  # its home; re-exported for the queue's users
)

log = logging.getLogger(__name__)

CASUAL_PREFIX: Final = "casual-"
"""Match ids of casual matches start so; their jobs go to :data:`CASUAL_QUEUE_NAME`."""
JOB_FUNC: Final = "workers.host.match_job"
RESULT_TTL_S: Final = 24 * 3600
"""RQ keeps a finished job's return value this long (the result itself lives in our key)."""
FAILURE_TTL_S: Final = 7 * 24 * 3600
"""RQ keeps a failed job (with its traceback) this long."""


QUEUED: Final = MatchState.QUEUED
RUNNING: Final = MatchState.RUNNING
DONE: Final = MatchState.DONE
FAILED: Final = MatchState.FAILED
ACTIVE_STATES: Final = frozenset({QUEUED, RUNNING, DONE})


def write_state(
    pipe: Any,
    match_id: str,
    season: str,
    state: MatchState,
    fields: dict[str, str | int | float] | None = None,
) -> None:
    """The one Python writer of a match's state (``MatchState``, moves allowed by
    ``referee.match.spec.MATCH_MOVES``): ``state`` and ``fields`` into
    ``keys.match_state``, and the state mirrored into its season's match hash (a one-off
    match has none). ``pipe``: a client or a pipeline (inside the caller's transaction)."""
    pipe.hset(keys.match_state(match_id), mapping={"state": str(state), **(fields or {})})
    if season:
        pipe.hset(keys.season_matches(season), match_id, str(state))


class RunningMatches:
    """The one owner of ``keys.MATCHES_RUNNING``: match id -> its host's last heartbeat (ms).

    Written on start (``beat``), by each host's batched heartbeat (``beat`` with ``xx``),
    and on commit, failure or abandonment (``remove``); read by the janitor (``stale``) and
    the metrics (``count``). ``conn`` may be a client or a pipeline."""

    key: Final = keys.MATCHES_RUNNING

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def beat(self, beats: dict[str, float], *, only_existing: bool = False) -> Any:
        if not beats:
            return None
        return self.conn.zadd(self.key, beats, xx=only_existing)

    def remove(self, *match_ids: str) -> Any:
        return self.conn.zrem(self.key, *match_ids) if match_ids else None

    def stale(self, before_ms: float) -> list[str]:
        return [_text(m) for m in self.conn.zrangebyscore(self.key, "-inf", before_ms)]

    def heartbeat_of(self, match_id: str) -> float | None:
        score = self.conn.zscore(self.key, match_id)
        return None if score is None else float(score)

    def count(self) -> int:
        return int(self.conn.zcard(self.key))


MAX_RETRIES: Final = 5
"""Abandoned attempts re-enqueued before a match is marked failed."""
ESTIMATED_DECISIONS_PER_DEAL: Final = 120
"""Generous: a 4-player Sevens deal has 52 plays plus passes; Sedma hands have 32."""
DEFAULT_DEALS: Final = 10
"""Deals assumed for the job timeout when the rules decide the match length."""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def job_id(match_id: str, retry: int = 0) -> str:
    """The RQ job id of a match (``retry`` > 0: the job that re-runs an abandoned attempt).

    Deterministic, so the same match (or the same retry) can never be enqueued twice.
    """
    return f"arena-match-{match_id}" if retry == 0 else f"arena-match-{match_id}-retry{retry}"


def job_timeout_s(spec: MatchSpec) -> int:
    """An upper bound of a match's wall time, from its time control.

    Every decision may take ``move_ms + grace_ms``; each seat may in total overrun by
    its bank, and each seat waits at most ``strikes`` times ``queue_ms`` for a bot that is
    not there before the autopilot takes over. Plus five minutes of slack.
    """
    tc = spec.time_control
    deals = len(spec.deals) if spec.deals is not None else DEFAULT_DEALS
    decisions = deals * ESTIMATED_DECISIONS_PER_DEAL
    seats = len(spec.seats)
    total_ms = (
        decisions * (tc.move_ms + tc.grace_ms)
        + seats * tc.bank_ms
        + seats * max(1, spec.strikes) * (tc.queue_ms + tc.move_ms + tc.bank_ms)
    )
    return 300 + total_ms // 1000


_binary: weakref.WeakKeyDictionary[redis.ConnectionPool, redis.Redis] = weakref.WeakKeyDictionary()


def rq_connection(conn: redis.Redis) -> redis.Redis:
    """``conn`` itself if it returns bytes, else a bytes twin on the same server (RQ
    stores compressed and pickled data that a ``decode_responses=True`` client cannot read)."""
    pool = conn.connection_pool
    if not pool.connection_kwargs.get("decode_responses"):
        return conn
    twin = _binary.get(pool)
    if twin is None:
        kwargs = {**pool.connection_kwargs, "decode_responses": False}
        twin = redis.Redis(
            connection_pool=redis.ConnectionPool(connection_class=pool.connection_class, **kwargs)
        )
        _binary[pool] = twin
    return twin


def queue_name(match_id: str) -> str:
    """The RQ queue of a match: casual matches have their own (:data:`CASUAL_QUEUE_NAME`)."""
    return CASUAL_QUEUE_NAME if match_id.startswith(CASUAL_PREFIX) else QUEUE_NAME


def get_queue(conn: redis.Redis, name: str = QUEUE_NAME) -> Queue:
    """The RQ queue ``name`` ("arena" by default) on ``conn``'s server."""
    return Queue(name, connection=rq_connection(conn))


def _enqueue_job(conn: redis.Redis, spec: MatchSpec, retry: int) -> bool:
    """Create the RQ job of ``spec`` (id from ``job_id``); False if it already exists."""
    queue = get_queue(conn, queue_name(spec.match_id))
    jid = job_id(spec.match_id, retry)
    for _ in range(2):
        try:
            queue.enqueue_call(
                JOB_FUNC,
                args=(spec.match_id,),
                job_id=jid,
                timeout=job_timeout_s(spec),
                result_ttl=RESULT_TTL_S,
                failure_ttl=FAILURE_TTL_S,
                description=f"match {spec.match_id} ({spec.game}, {len(spec.seats)} seats)",
                unique=True,
            )
            return True
        except DuplicateJobError:
            # A finished or failed job of an earlier run (a failed match enqueued again)
            # may linger until its TTL: replace it. A queued or started one is a duplicate.
            try:
                old = Job.fetch(jid, connection=rq_connection(conn))
            except NoSuchJobError:
                continue
            status = old.get_status()
            if status in (JobStatus.FINISHED, JobStatus.FAILED, JobStatus.CANCELED):
                old.delete()
                continue
            # Still waiting to run: it will run this match (the caller won the state
            # transition, so nobody else is enqueueing it).
            return status in (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.DEFERRED)
    return False


def enqueue_match(conn: redis.Redis, spec: MatchSpec) -> bool:
    """Store ``spec``, mark the match queued and enqueue its ``run_match`` job.

    Returns False (and changes nothing) when the match is already queued, running or
    committed. A ``failed`` match may be enqueued again; it keeps its attempt counter.
    """
    state_key = keys.match_state(spec.match_id)
    result_key = keys.match_result(spec.match_id)
    with conn.pipeline() as pipe:
        while True:
            try:
                pipe.watch(state_key, result_key)  # type: ignore[no-untyped-call]
                if pipe.exists(result_key):
                    return False
                state = pipe.hget(state_key, "state")
                if state is not None and _text(state) in ACTIVE_STATES:
                    return False
                now = now_ms()
                pipe.multi()
                pipe.set(keys.match_spec(spec.match_id), spec.to_json())
                fields: dict[str, str | int | float] = {
                    "match_id": spec.match_id,
                    "season": spec.season,
                    "game": spec.game,
                    "seats": ",".join(spec.seats),
                    "queued_ms": f"{now:.0f}",
                    "error": "",
                    "retries": 0,
                }
                write_state(pipe, spec.match_id, spec.season, QUEUED, fields)
                pipe.zadd(keys.MATCHES_INDEX, {spec.match_id: now}, nx=True)
                pipe.execute()
                break
            except redis.WatchError:
                continue
    if not _enqueue_job(conn, spec, retry=0):
        # Only when an earlier run's job is still executing (a failed match enqueued again
        # before its work horse exited): put the state back so nothing waits for a job.
        error = f"not enqueued: job {job_id(spec.match_id)} of an earlier run is still running"
        with conn.pipeline() as pipe:
            write_state(pipe, spec.match_id, spec.season, FAILED, {"error": error})
            pipe.execute()
        log.warning("match %s: %s; try again when it has ended", spec.match_id, error)
        return False
    return True


def requeue_abandoned(
    conn: redis.Redis, match_id: str, attempt: int, stale_before_ms: float
) -> bool:
    """Re-enqueue a running match whose host (attempt ``attempt``) stopped heartbeating.

    Does nothing unless the match is still ``running`` that attempt and its heartbeat is
    older than ``stale_before_ms``, so several janitors can race on it safely. The new
    job id is derived from the abandoned attempt, so it too can exist only once.
    """
    state_key = keys.match_state(match_id)
    with conn.pipeline() as pipe:
        try:
            pipe.watch(state_key, keys.match_result(match_id), RunningMatches.key)  # type: ignore[no-untyped-call]
            state = {_text(k): _text(v) for k, v in pipe.hgetall(state_key).items()}
            beat = RunningMatches(pipe).heartbeat_of(match_id)
            if (
                state.get("state") != RUNNING
                or int(state.get("attempt", "0")) != attempt
                or beat is None
                or beat >= stale_before_ms
                or pipe.exists(keys.match_result(match_id))
            ):
                return False
            raw_spec = pipe.get(keys.match_spec(match_id))
            if raw_spec is None:
                return False
            spec = MatchSpec.from_json(raw_spec)
            retries = int(state.get("retries", "0")) + 1
            give_up = retries > MAX_RETRIES
            new_state = FAILED if give_up else QUEUED
            pipe.multi()
            error = f"attempt {attempt} abandoned (its host's heartbeat lapsed); " + (
                f"gave up after {MAX_RETRIES} retries" if give_up else "retried"
            )
            write_state(
                pipe, match_id, spec.season, new_state, {"retries": retries, "error": error}
            )
            RunningMatches(pipe).remove(match_id)
            metrics_store.match_counter(pipe, spec.game, "failed" if give_up else "retried")
            pipe.execute()
        except redis.WatchError:
            return False
    return not give_up and _enqueue_job(conn, spec, retry=attempt)


def match_status(conn: redis.Redis, match_id: str) -> dict[str, str]:
    """The match's state hash (``state``, ``attempt``, ``worker``, ``error``, times …);
    ``{"match_id": id, "state": "unknown"}`` if it was never enqueued."""
    raw = conn.hgetall(keys.match_state(match_id))
    if not raw:
        return {"match_id": match_id, "state": MatchState.UNKNOWN}
    out = {_text(k): _text(v) for k, v in raw.items()}
    out.setdefault("match_id", match_id)
    return out


def get_spec(conn: redis.Redis, match_id: str) -> MatchSpec | None:
    raw = conn.get(keys.match_spec(match_id))
    return None if raw is None else MatchSpec.from_json(raw)


def get_result(conn: redis.Redis, match_id: str) -> CommittedResult | None:
    """The committed result, or None while the match is not done."""
    raw = conn.get(keys.match_result(match_id))
    return None if raw is None else parse_row(raw)


def get_record(conn: redis.Redis, match_id: str) -> dict[str, Any] | None:
    """The committed match record (see docs/workers.md, "Match record"), or None: read
    through ``referee.records.load_record`` wherever it lives."""
    from referee.records import load_record

    return load_record(conn, match_id)


def list_matches(
    conn: redis.Redis, season: str | None = None, limit: int = 50
) -> list[dict[str, str]]:
    """The status of the newest ``limit`` matches (of one season, or of all), newest first."""
    if season:
        ids = [_text(m) for m in conn.hkeys(keys.season_matches(season))]
        scores = {m: conn.zscore(keys.MATCHES_INDEX, m) or 0.0 for m in ids}
        ids.sort(key=lambda m: (scores[m], m), reverse=True)
        ids = ids[:limit]
    else:
        ids = [_text(m) for m in conn.zrevrange(keys.MATCHES_INDEX, 0, max(0, limit - 1))]
    return [match_status(conn, m) for m in ids]


def janitor_pass(conn: redis.Redis, stale_s: float) -> list[str]:
    """Re-enqueue every running match whose heartbeat is older than ``stale_s``; return
    their ids (several hosts may run this at once: ``requeue_abandoned`` is race-safe)."""
    stale_before = now_ms() - stale_s * 1000.0
    requeued = []
    running = RunningMatches(conn)
    for match_id in running.stale(stale_before):
        attempt = conn.hget(keys.match_state(match_id), "attempt")
        if attempt is None:
            running.remove(match_id)
            continue
        if requeue_abandoned(conn, match_id, int(attempt), stale_before):
            log.warning("match %s: attempt %s abandoned; re-enqueued", match_id, int(attempt))
            requeued.append(match_id)
    return requeued
