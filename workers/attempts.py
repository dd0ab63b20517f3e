"""The attempt ledger of a match in Redis: who may play it, who may show its deals, and
who may commit its result.

:func:`start_attempt` loads the spec and takes a new attempt number, :func:`reveal`
records that the attempt is about to show the bots its deals (fenced: a superseded
attempt shows nothing), :func:`commit` writes the result once, atomically, fenced by the
attempt number, and :func:`mark_failed` keeps an attempt's error. The transitions of the
match's state are those of ``referee.match.spec.MatchState``.

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

import json
import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Final, NamedTuple, TypeVar

import redis

from referee import keys, lua
from referee.match.messages import now_ms
from referee.match.row import row_text
from referee.match.spec import CommittedResult, MatchSpec
from referee.queue import MatchState, RunningMatches, write_state
from referee.records import RecordRef
from workers import metrics

log = logging.getLogger("workers.attempts")

_T = TypeVar("_T")

InlineRecord = dict[str, object]
"""A match record kept in Redis itself (``commit`` of a record not in the record store)."""


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
        fields: dict[str, str | int | float] = {"error": error, "failed_ms": int(now_ms())}
        write_state(pipe, spec.match_id, spec.season, MatchState.FAILED, fields)
        RunningMatches(pipe).remove(spec.match_id)
        metrics.match_counter(pipe, spec.game, "failed")
        pipe.execute()
    log.error("match %s attempt %d failed: %s", spec.match_id, attempt, error)


def commit(
    conn: redis.Redis,
    spec: MatchSpec,
    attempt: int,
    result: CommittedResult,
    record: RecordRef | InlineRecord,
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
    record: RecordRef | InlineRecord,
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
        fields: dict[str, str | int | float] = {
            "attempt": attempt,
            "error": "",
            "finished_ms": f"{result['finished_ms']:.0f}",
            COMMITTED_BY: token,
        }
        write_state(pipe, mid, spec.season, MatchState.DONE, fields)  # the one place
        pipe.delete(keys.match_spec(mid))  # the record keeps it: nothing per match but pointers
        RunningMatches(pipe).remove(mid)
        pipe.zadd(keys.MATCHES_RECENT, {mid: result["finished_ms"]})
        metrics.commit_counters(pipe, spec.season, spec.game, result["stats"])
        pipe.execute()
    return True


def _str(value: object) -> str | None:
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)
