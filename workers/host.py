"""A match host: one process, up to ``max_matches`` matches at once as asyncio tasks
(docs/workers.md "Match hosts and RQ").

RQ stays the queue of record, through its public API (never a fork of RQ: its internals
change between releases): the host is an
``rq.Worker`` (``register_birth``/``register_death``, so ``rq info`` lists it) that never
calls ``work()``; it dequeues with ``Queue.dequeue_any`` while it has a free slot, opens an
``Execution`` per match (``prepare_execution``, ``prepare_job_execution``: the job is in
the ``StartedJobRegistry``), keeps the worker, executions and jobs heartbeating, and ends
each one with ``handle_job_success`` or ``handle_job_failure`` (the failed registry keeps
the reason).

Redis is never touched per decision. Once a second (:meth:`MatchHost.tick`, in a thread)
one pipeline carries the heartbeats of every running match (``RunningMatches``), the
summed decision metrics and the check for newer attempts; the janitor
(``queue.janitor_pass``) runs in the same tick, so a host killed with its matches in flight
is noticed within ``stale_s`` by any other host. A commit is one fenced transaction per
match (``attempts.commit``).

SIGTERM: take no new matches, let the running ones finish within ``grace_s``, then hand
the rest back (each is re-enqueued at once for a new attempt) and exit.

A host may also run inside a referee's process (``arena referee --matches N``, given the
referee's ``Hub``): it then installs no signal handlers (the referee stops it, the same
way, before it drains) and reaches that referee's bots without the internal stream
(``workers.link.LocalLink``; docs/workers.md "Co-hosted matches").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Final

import redis
from rq import Queue, Worker
from rq.exceptions import DequeueTimeout
from rq.executions import Execution
from rq.intermediate_queue import IntermediateQueue
from rq.job import Job
from rq.registry import clean_registries
from rq.utils import now as rq_now
from rq.worker import WorkerStatus

from referee import keys, metrics_store, queue, records
from referee.defaults import (
    CASUAL_QUEUE_NAME,
    DEFAULT_CASUAL_MATCHES,
    DEFAULT_GRACE_S,
    DEFAULT_MATCHES,
    DEFAULT_STALE_S,
    QUEUE_NAME,
)
from referee.errors import RecordStoreError
from referee.match.messages import now_ms
from referee.procs import settle_garbage_collector
from referee.queue import RunningMatches
from workers import metrics
from workers.attempts import (
    Started,
    Superseded,
    commit,
    mark_failed,
    reveal,
    start_attempt,
)
from workers.link import LocalHub, Router
from workers.runner import MatchRun

log = logging.getLogger("workers.host")

TICK_S: Final = 1.0
OUTAGE_SLACK_S: Final = 10.0
"""After a Redis outage this host's janitor judges no heartbeat for ``stale_s`` plus this
long: every host saw the same outage, and some take a while to reconnect (a connect or
socket timeout) before their heartbeats flow again."""
OUT_OF_TOUCH_S: Final = 3.0
"""A host whose own successful beats come further apart than this (its tick held up by a
stalled call, its loop or its machine, with no error to say so) waits as after an outage
before it judges anyone's heartbeat: what kept it out of touch may have kept the others
too: a host whose tick never failed through a Redis cut would otherwise judge every
match lost the moment Redis came back, and re-run them all."""
REDIS_SOCKET_TIMEOUT_S: Final = 4.0
"""Socket timeout of the host's Redis client: above the 1 s blocking dequeue (a socket timeout
below a blocking call's own wait turns every idle dequeue into a TimeoutError),
short enough that a dead connection is given up quickly."""
RQ_BEAT_EVERY: Final = 30
"""RQ's own heartbeats (worker, executions, jobs) every this many ticks: RQ only needs
them within its heartbeat TTL (its 30 s monitoring interval + 60 s), and they cost
commands per running match each time (every 10 s instead: ~7 more of the ~150 Redis
commands of an 8-deal match). A host's own liveness is the 1 s tick, not these."""
GIVE_BACK_EVERY: Final = 10
"""The check for jobs a dead host dequeued but never started, every this many ticks."""
CLEAN_EVERY: Final = 30
"""RQ's registry cleanup every this many ticks (RQ alone runs it every 10 min, so jobs of dead
workers would wait that long)."""
DEQUEUE_WAIT_S: Final = 1
START_AT_ONCE: Final = 8
"""Matches a host starts at once after a dequeue found one waiting: each start is
about ten Redis round trips in a thread, which wait for the interpreter lock while the loop
plays the matches already started; one at a time, the last of 256 queued matches started
1.7-4.4 s after the first, 8 at a time 1.6-3.0 s (docs/performance.md)."""
COMMIT_RETRY_S: Final = 0.5
COMMIT_GIVE_UP_S: Final = 120.0
"""A commit that cannot reach Redis for this long is given up (the janitor re-runs the
match once Redis is back: the fenced commit keeps it exactly once)."""


def match_job(match_id: str) -> str:
    """The RQ job function of a match. Match jobs are run by ``arena worker`` (this module),
    never by a plain ``rq worker``: it says so instead of playing the match."""
    raise RuntimeError(
        f"match {match_id} is a job for `arena worker` (a match host), not for `rq worker`"
    )


@dataclass(eq=False)
class Running:
    job: Job
    execution: Execution
    run: MatchRun | None = None
    task: asyncio.Task[None] | None = None

    @property
    def casual(self) -> bool:
        return bool(self.job.origin == CASUAL_QUEUE_NAME)


class MatchHost:
    """One host process; :meth:`run` until :meth:`request_stop` (or SIGTERM)."""

    def __init__(
        self,
        redis_url: str,
        name: str,
        secret: str,
        *,
        max_matches: int = DEFAULT_MATCHES,
        casual_matches: int = DEFAULT_CASUAL_MATCHES,
        stale_s: float = DEFAULT_STALE_S,
        grace_s: float = DEFAULT_GRACE_S,
        root_certificates: bytes | None = None,
        hub: LocalHub | None = None,
        record_store: records.RecordStore | None = None,
    ) -> None:
        """``record_store``: where records are written (default ``records.default_store()``:
        ``$ARENA_RECORDS``, else the data dir's)."""
        self.name = name
        self.records = record_store if record_store is not None else records.default_store()
        self.embedded = hub is not None  # runs inside that referee's process
        self.max_matches = max_matches
        self.casual_matches = casual_matches
        self.stale_s = stale_s
        self.grace_s = grace_s
        self.conn = redis.Redis.from_url(
            redis_url,
            decode_responses=True,
            socket_timeout=REDIS_SOCKET_TIMEOUT_S,
            socket_connect_timeout=3.0,
            max_connections=16,
        )
        self.rq_conn = queue.rq_connection(self.conn)
        self.queue = Queue(QUEUE_NAME, connection=self.rq_conn)
        self.casual_queue = Queue(CASUAL_QUEUE_NAME, connection=self.rq_conn)
        self.worker = Worker([self.queue, self.casual_queue], connection=self.rq_conn, name=name)
        self.executor = ThreadPoolExecutor(max_workers=4, thread_name_prefix="host-redis")
        # The heartbeat and the blocking dequeue have threads of their own: a busy pool
        # (directory reads, commits) must never delay a heartbeat into looking dead.
        self.beat_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="host-beat")
        self.dequeue_executor = ThreadPoolExecutor(  # the blocking one and START_AT_ONCE more
            max_workers=START_AT_ONCE + 1, thread_name_prefix="host-deq"
        )
        self.router = Router(secret, self._lookup, root_certificates, local=hub)
        self.runs: dict[str, Running] = {}
        self.metrics = metrics.HostMetrics()
        self.totals = metrics.HostMetrics()  # everything flushed so far (the beat thread's)
        self.stopping = asyncio.Event()
        self._slot_free = asyncio.Event()
        self._stop_at = 0.0  # when request_stop came: the grace counts from then
        self._ticks = 0
        self._unstarted_seen: dict[str, float] = {}
        self._judge_after_ms = 0.0  # the janitor waits after a Redis outage
        self._outage = False
        self._last_beat_ms = 0.0  # when the last tick's writes got through (0: none yet)
        self._listed = False  # in keys.METRICS_HOSTS
        self._totals_dirty = False  # totals changed since the last write of the hash

    # --- plumbing ----------------------------------------------------------------------
    def in_thread(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().run_in_executor(self.executor, fn, self.conn, *args)

    async def _lookup(self, bot: str) -> dict[str, str]:
        entries: dict[str, str] = await self.in_thread(
            lambda conn, b: conn.hgetall(keys.bot_streams(b)), bot
        )
        return entries

    def request_stop(self) -> None:
        if not self.stopping.is_set():
            self._stop_at = time.monotonic()
        self.stopping.set()
        self._slot_free.set()

    # --- the process ---------------------------------------------------------------------
    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        if not self.embedded:  # in a referee, the referee's own handlers stop it
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.add_signal_handler(sig, self.request_stop)
        try:
            await loop.run_in_executor(self.executor, self._birth)
        except BaseException:  # Redis away: a co-hosting referee starts a new host later
            for pool in (self.executor, self.beat_executor, self.dequeue_executor):
                pool.shutdown(wait=False)
            raise
        log.info(
            "match host %s: up to %d matches at once (and %d casual)",
            self.name,
            self.max_matches,
            self.casual_matches,
        )
        ticker = asyncio.ensure_future(self._tick_loop())
        try:
            await self._dequeue_loop()
            await self._finish(self.grace_s)
        finally:
            ticker.cancel()
            with contextlib.suppress(BaseException):
                await ticker
            await self.router.close()
            with contextlib.suppress(redis.RedisError):
                # On the beat thread: after any tick still in flight, so no tick writes the
                # totals hash again once it has been folded.
                await loop.run_in_executor(self.beat_executor, self._goodbye)
            for pool in (self.executor, self.beat_executor, self.dequeue_executor):
                pool.shutdown(wait=False)
            log.info("match host %s stopped", self.name)

    def _birth(self) -> None:
        self.worker.register_birth()  # type: ignore[no-untyped-call]
        self.worker.set_state(WorkerStatus.IDLE)
        # RQ refuses a name held by a live worker, so a totals hash under this name is a
        # dead predecessor's (ARENA_WORKER_NAME reused): fold it before writing ours.
        self._fold_totals(metrics.HostMetrics(), predecessor=True)

    def _idle_if_empty(self) -> None:
        if not self.worker.executions:
            self.worker.set_state(WorkerStatus.IDLE)

    def _goodbye(self) -> None:
        self.worker.register_death()  # type: ignore[no-untyped-call]
        self.totals.add(self.metrics.take())  # what the last ticks did not flush
        self._fold_totals(self.totals, predecessor=False)
        self.conn.hdel(keys.WORKERS_ALIVE, self.name)

    def _fold_totals(self, totals: metrics.HostMetrics, *, predecessor: bool) -> None:
        """Move metric totals into the shared hashes, in one transaction that also deletes
        this name's totals hash (``referee.metrics_store``): readers see them once.
        ``totals`` are this process's (the hash holds what its ticks wrote of them); with
        ``predecessor`` the hash is a dead process's of the same name, added as it is."""
        host_key = keys.host_metrics(self.name)
        # Only a process of this name writes the hash, and none other is alive: no WATCH.
        left = self.conn.hgetall(host_key) if predecessor else {}
        pipe = self.conn.pipeline(transaction=True)
        metrics_store.add_host_fields(pipe, left)
        totals.flush(pipe)
        pipe.delete(host_key)
        pipe.srem(keys.METRICS_HOSTS, self.name)
        pipe.execute()

    def _queue_of(self, job: Job) -> Queue:
        return self.casual_queue if job.origin == CASUAL_QUEUE_NAME else self.queue

    def _open_queues(self) -> list[Queue]:
        """The queues this host has a free slot for (casual matches have slots of their
        own, so they never take the seasons' ones)."""
        casual = sum(1 for r in self.runs.values() if r.casual)
        out = []
        if len(self.runs) - casual < self.max_matches:
            out.append(self.queue)
        if casual < self.casual_matches:
            out.append(self.casual_queue)
        return out

    async def _dequeue_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while not self.stopping.is_set():
            queues = self._open_queues()
            if not queues:
                self._slot_free.clear()
                await self._slot_free.wait()
                continue
            taking = loop.run_in_executor(self.dequeue_executor, self._dequeue, queues)
            if self.queue not in queues:
                # Every season slot is busy and this dequeue waits on the casual queue
                # alone, up to DEQUEUE_WAIT_S: a season slot freed meanwhile takes the next
                # season match now, not when that wait ends (a slot stood idle half a
                # second on average between two matches, docs/performance.md).
                await self._refill_while(taking)
            try:
                got = await taking
            except redis.RedisError as exc:
                log.warning("dequeue failed (%s); retrying in 1 s", exc)
                self._outage = True
                await asyncio.sleep(1.0)
                continue
            except Exception:
                log.exception("dequeue failed; retrying in 1 s")
                await asyncio.sleep(1.0)
                continue
            if got is None:
                continue
            self._begin(got)
            # A job came: more may be waiting. Start up to START_AT_ONCE more at once, each
            # from the seasons' queue without waiting (casual jobs keep the one dequeue
            # above, which counts their slots).
            await self._start_more()

    async def _refill_while(self, taking: asyncio.Future[Any]) -> None:
        """Until ``taking`` ends, start season matches (:meth:`_start_more`) whenever a slot
        is freed, unless the host is stopping."""
        while not taking.done():
            freed = asyncio.ensure_future(self._slot_free.wait())
            try:
                await asyncio.wait((taking, freed), return_when=asyncio.FIRST_COMPLETED)
            finally:
                freed.cancel()
            if self.stopping.is_set():
                return  # no new matches; the caller waits for the dequeue
            if not taking.done():
                # cleared before the starts: a slot freed while they run is seen next round
                self._slot_free.clear()
                await self._start_more()

    async def _start_more(self) -> None:
        """Start up to START_AT_ONCE season matches at once, as many as season slots are
        free and jobs wait in the seasons' queue, each taken without waiting."""
        more = min(START_AT_ONCE, self.max_matches - self._season_runs())
        if more <= 0:
            return
        loop = asyncio.get_running_loop()
        try:  # one LLEN rather than a dequeue per free slot that finds the queue empty
            waiting: int = await loop.run_in_executor(
                self.dequeue_executor, self.rq_conn.llen, self.queue.key
            )
        except redis.RedisError as exc:
            log.warning("queue length unknown (%s)", exc)
            return
        more = min(more, waiting)
        for extra in await asyncio.gather(
            *(
                loop.run_in_executor(self.dequeue_executor, self._dequeue, [self.queue], False)
                for _ in range(more)
            ),
            return_exceptions=True,
        ):
            if isinstance(extra, redis.RedisError):
                log.warning("dequeue failed (%s)", extra)
                self._outage = True
            elif isinstance(extra, BaseException):
                log.error("dequeue failed", exc_info=extra)
            elif extra is not None:
                self._begin(extra)

    def _season_runs(self) -> int:
        return sum(1 for r in self.runs.values() if not r.casual)

    def _begin(self, got: tuple[Running, Started | None]) -> None:
        """Play a match ``_dequeue`` started (none when it found it done or unknown)."""
        running, started = got
        if started is None:
            return
        self.runs[started.spec.match_id] = running
        running.task = asyncio.ensure_future(self._play(running, started))

    def _dequeue(
        self, queues: list[Queue] | None = None, wait: bool = True
    ) -> tuple[Running, Started | None] | None:
        """(thread) Take a job of ``queues`` (default: both) if one comes within
        ``DEQUEUE_WAIT_S`` (one waiting now, unless ``wait``); open its execution and a new
        attempt of its match."""
        queues = [self.queue, self.casual_queue] if queues is None else queues
        try:
            result = self._take(queues, wait)
        except DequeueTimeout:
            return None
        if result is None:
            return None
        job, _queue = result
        match_id = str(job.args[0]) if job.args else ""
        # The attempt starts first: from then on the match is in the running set, so if
        # this process dies the janitor of any host re-runs it within seconds. Every
        # Redis round trip before it widens the window in which a killed host leaves a
        # dequeued match 'queued' and seen by no janitor (RQ's own cleanup needs the
        # execution's heartbeat TTL, about 90 s, to notice).
        lookup_error: LookupError | None = None
        try:
            started = start_attempt(self.conn, match_id, self.name)
        except LookupError as exc:
            started, lookup_error = None, exc
        execution = self.worker.prepare_execution(job)
        self.worker.prepare_job_execution(job, remove_from_intermediate_queue=True)
        job.started_at = rq_now()
        running = Running(job, execution)
        if lookup_error is not None:
            self._fail_job(running, f"LookupError: {lookup_error}")
            return running, None
        if started is None:
            self._succeed_job(running, "already-done")
            return running, None
        return running, started

    def _take(self, queues: list[Queue], wait: bool = True) -> tuple[Job, Queue] | None:
        """(thread) The next job of ``queues``, always moved into its queue's intermediate
        list (LMOVE), where ``_give_back_unstarted_jobs`` finds it if this host dies before
        starting it: RQ's ``dequeue_any`` pops several queues with BLPOP, which would lose
        it. The later queues are tried without waiting, then the first is waited on (unless
        not ``wait``)."""
        for extra in queues[1:]:
            got = Queue.dequeue_any([extra], None, connection=self.rq_conn)
            if got is not None:
                return got
        return Queue.dequeue_any(
            queues[:1], DEQUEUE_WAIT_S if wait else None, connection=self.rq_conn
        )

    async def _play(self, running: Running, started: Started) -> None:
        spec, attempt = started.spec, started.attempt
        mid = spec.match_id
        log.info(
            "match %s attempt %d started (%s%s)",
            mid,
            attempt,
            spec.game,
            ", re-dealt" if started.redeal else "",
        )
        outcome = "committed"
        try:
            run = running.run = MatchRun(self, spec, attempt, started.redeal)
            # before the first message to a bot: a later attempt then knows to re-deal
            revealed = await self._reveal(mid, attempt)
            if revealed is False:
                raise Superseded("a newer attempt started before this one showed anything")
            committed = None
            if revealed:
                await run.play()
                committed = await self._commit(run)
            if committed is None:
                outcome = "left"  # Redis stayed away; the janitor re-runs it
            elif committed:
                run.notify_match_end()
                log.info("match %s attempt %d committed", mid, attempt)
            else:
                outcome = "duplicate"
                log.warning("match %s attempt %d commits nothing: superseded or done", mid, attempt)
        except Superseded as exc:
            outcome = "superseded"
            log.warning("match %s attempt %d stopped: %s; it commits nothing", mid, attempt, exc)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            log.exception("match %s attempt %d failed", mid, attempt)
            text = traceback.format_exc()
            with contextlib.suppress(redis.RedisError):
                await self.in_thread(mark_failed, spec, attempt, error)
                await self.in_thread(lambda _c: self._fail_job(running, text))
            self._done(mid)
            return
        with contextlib.suppress(redis.RedisError):
            await self.in_thread(lambda _c: self._succeed_job(running, outcome))
        self._done(mid)

    def _done(self, match_id: str) -> None:
        self.runs.pop(match_id, None)
        self._slot_free.set()

    async def _reveal(self, match_id: str, attempt: int) -> bool | None:
        """``attempts.reveal`` off the loop; None if Redis stayed away through its patience
        (nothing was shown: the janitor re-runs the match on its scheduled deals)."""
        try:
            shown: bool = await self.in_thread(reveal, match_id, attempt)
            return shown
        except redis.RedisError as exc:
            log.error(
                "match %s attempt %d: Redis away before its first message: %s",
                match_id,
                attempt,
                exc,
            )
            return None

    async def _commit(self, run: MatchRun) -> bool | None:
        """Write the record to the record store, then the fenced commit that names it; each
        retried while its store is away (None: given up, nothing committed). A commit that
        loses (superseded, or done by another attempt) deletes the record it wrote."""
        result = run.committed_result()
        deadline = now_ms() + COMMIT_GIVE_UP_S * 1000.0
        ref = await self._save_record(run, deadline)
        if ref is None:
            return None
        while True:
            try:
                ok: bool = await self.in_thread(commit, run.spec, run.attempt, result, ref)
                break
            except redis.RedisError as exc:
                if now_ms() > deadline:
                    log.error(
                        "match %s: commit gave up after Redis errors: %s", run.spec.match_id, exc
                    )
                    return None
                await asyncio.sleep(COMMIT_RETRY_S)
        if not ok:
            with contextlib.suppress(RecordStoreError):
                await self._off_loop(records.delete_record, ref, self.records)
        return ok

    async def _save_record(self, run: MatchRun, deadline: float) -> records.RecordRef | None:
        """The record written durably (``records.save_record``), retried while the store is
        away; None if it stayed away past ``deadline`` or a newer attempt took over."""
        record = run.record()
        warned = False
        while True:
            try:
                ref: records.RecordRef = await self._off_loop(
                    records.save_record, self.records, record
                )
                if warned:
                    log.warning("match %s: record store back; committing", run.spec.match_id)
                return ref
            except RecordStoreError as exc:
                if not warned:
                    log.warning("match %s: record store away, waiting: %s", run.spec.match_id, exc)
                    warned = True
                if now_ms() > deadline or run.superseded:
                    log.error(
                        "match %s: record not written (%s); the match is left to a retry",
                        run.spec.match_id,
                        exc,
                    )
                    return None
                await asyncio.sleep(COMMIT_RETRY_S)

    def _off_loop(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    def _succeed_job(self, running: Running, outcome: str) -> None:
        job = running.job
        job.ended_at = rq_now()
        job.meta["outcome"] = outcome  # committed, superseded... (Job.fetch(id).meta)
        job.save_meta()  # type: ignore[no-untyped-call]
        origin = self._queue_of(job)
        self.worker.handle_job_success(job, origin, origin.started_job_registry, running.execution)
        self._idle_if_empty()

    def _fail_job(self, running: Running, text: str) -> None:
        job = running.job
        job.ended_at = rq_now()
        origin = self._queue_of(job)
        self.worker.handle_job_failure(
            job,
            origin,
            started_job_registry=origin.started_job_registry,
            exc_string=text,
            execution=running.execution,
        )
        self._idle_if_empty()

    # --- shutdown --------------------------------------------------------------------
    async def _finish(self, grace_s: float) -> None:
        """Let running matches finish within ``grace_s`` of the stop request (a dequeue
        still waiting for a job when it came takes its time out of the grace, not on top
        of it); hand the rest back."""
        since = time.monotonic() - self._stop_at if self._stop_at else 0.0
        grace_s = max(0.0, grace_s - since)
        tasks = [r.task for r in self.runs.values() if r.task is not None]
        if tasks:
            log.info(
                "match host %s: %d match(es) finishing (%.1f s)", self.name, len(tasks), grace_s
            )
            await asyncio.wait(tasks, timeout=grace_s)
        left = list(self.runs.values())
        for running in left:
            if running.task is not None:
                running.task.cancel()
        for running in left:
            if running.task is not None:
                with contextlib.suppress(BaseException):
                    await running.task
        for running in left:
            if running.run is None:
                continue
            with contextlib.suppress(redis.RedisError):
                await self.in_thread(self._hand_back, running)
        self.runs.clear()

    def _hand_back(self, conn: redis.Redis, running: Running) -> None:
        run = running.run
        assert run is not None
        mid = run.spec.match_id
        requeued = queue.requeue_abandoned(conn, mid, run.attempt, float("inf"))
        log.warning(
            "match %s attempt %d handed back (%s)",
            mid,
            run.attempt,
            "re-enqueued" if requeued else "not re-enqueued",
        )
        self._fail_job(running, f"handed back by {self.name} on shutdown; re-enqueued: {requeued}")

    # --- the tick ----------------------------------------------------------------------
    async def _tick_loop(self) -> None:
        while True:
            await asyncio.sleep(TICK_S)
            beats = {mid: r for mid, r in self.runs.items() if r.run is not None}
            flush = self.metrics.take()
            try:
                stale = await asyncio.get_running_loop().run_in_executor(
                    self.beat_executor, self.tick, self.conn, beats, flush
                )
            except redis.RedisError as exc:
                # The totals keep what this tick took: the next tick writes them whole.
                log.warning("heartbeat failed (%s); matches play on", exc)
                self._outage = True
                continue
            for mid in stale:
                running = self.runs.get(mid)
                if running is not None and running.run is not None:
                    running.run.superseded = True

    def tick(
        self, conn: redis.Redis, runs: dict[str, Running], flush: metrics.HostMetrics
    ) -> list[str]:
        """(thread) One round: heartbeats, metrics, newer attempts, the janitor; returns
        the matches whose attempt was superseded."""
        self._ticks += 1
        now = now_ms()
        ids = list(runs)
        pipe = conn.pipeline(transaction=False)
        RunningMatches(pipe).beat(dict.fromkeys(ids, now), only_existing=True)
        pipe.hset(keys.WORKERS_ALIVE, self.name, f"{now:.0f}")
        self.totals.add(flush)
        self._totals_dirty = self._totals_dirty or bool(flush.decisions)
        written = self._totals_dirty
        if written:
            if not self._listed:  # once: the set of hosts whose totals readers add up
                pipe.sadd(keys.METRICS_HOSTS, self.name)
            fields: dict[Any, Any] = self.totals.fields()
            pipe.hset(keys.host_metrics(self.name), mapping=fields)
        if ids:
            pipe.mget([keys.match_attempt(mid) for mid in ids])
        rq_beat = self._ticks % RQ_BEAT_EVERY == 1
        if rq_beat:
            for mid in ids:
                pipe.hset(keys.match_state(mid), "heartbeat_ms", f"{now:.0f}")
        replies = pipe.execute()
        done = now_ms()
        if written:
            self._listed, self._totals_dirty = True, False
        # The first beat after an outage, or after this host was out of touch: give every
        # host time to beat again before judging them.
        gap = done - self._last_beat_ms if self._last_beat_ms else 0.0
        if self._outage or gap > OUT_OF_TOUCH_S * 1000.0:
            self._outage = False
            self._judge_after_ms = done + (self.stale_s + OUTAGE_SLACK_S) * 1000.0
        self._last_beat_ms = done
        superseded = []
        if ids:
            for mid, latest in zip(ids, replies[-1 - (len(ids) if rq_beat else 0)], strict=True):
                run = runs[mid].run
                if run is not None and latest is not None and int(latest) != run.attempt:
                    superseded.append(mid)
        if rq_beat:
            self._rq_heartbeats(list(runs.values()))
        if self._ticks % GIVE_BACK_EVERY == 1:
            self._give_back_unstarted_jobs()
        if done >= self._judge_after_ms:
            queue.janitor_pass(conn, self.stale_s)
        if self._ticks % CLEAN_EVERY == 1:
            clean_registries(self.queue)
            clean_registries(self.casual_queue)
        return superseded

    def _give_back_unstarted_jobs(self) -> None:
        """(thread) Put back on the queue a job that a dead host took off it but never
        started.

        RQ's dequeue moves the job id to an intermediate list; the host that took it removes
        it from there once the job's execution is open. A host killed in between leaves the
        match 'queued' and outside the running set, where no janitor sees it, and RQ's own
        cleanup would only fail the job a minute later. An id that stays there, not started,
        for ``stale_s`` is pushed back to the front of the queue by whichever host removes it
        first (LREM is atomic); a second run of it is fenced by its attempt number anyway.
        """
        now = time.monotonic()
        listed: list[str] = []
        for rq_queue in (self.queue, self.casual_queue):
            intermediate = IntermediateQueue(rq_queue.key, connection=self.rq_conn)
            ids = intermediate.get_job_ids()
            listed += ids
            for job_id in ids:
                first_seen = self._unstarted_seen.setdefault(job_id, now)
                if now - first_seen < self.stale_s or job_id in rq_queue.started_job_registry:
                    continue
                self._unstarted_seen.pop(job_id, None)
                if self.rq_conn.lrem(intermediate.key, 1, job_id):
                    rq_queue.push_job_id(job_id, at_front=True)
                    log.warning(
                        "job %s was taken off the queue by a host that died; queued again",
                        job_id,
                    )
        for job_id in set(self._unstarted_seen) - set(listed):
            del self._unstarted_seen[job_id]

    def _rq_heartbeats(self, runs: list[Running]) -> None:
        ttl_base = self.worker.job_monitoring_interval + 60
        with self.rq_conn.pipeline() as pipe:
            self.worker.heartbeat(ttl_base, pipeline=pipe)
            for running in runs:
                ttl = int(self.worker.get_heartbeat_ttl(running.job))
                registry = self._queue_of(running.job).started_job_registry
                running.execution.heartbeat(registry, ttl, pipeline=pipe)
                running.job.heartbeat(rq_now(), ttl, pipeline=pipe, xx=True)
            pipe.execute()


def run_host(
    redis_url: str,
    name: str,
    secret: str,
    *,
    max_matches: int = DEFAULT_MATCHES,
    casual_matches: int = DEFAULT_CASUAL_MATCHES,
    stale_s: float = DEFAULT_STALE_S,
    grace_s: float = DEFAULT_GRACE_S,
    root_certificates: bytes | None = None,
) -> None:
    """Body of one ``arena worker`` process."""
    host = MatchHost(
        redis_url,
        name,
        secret,
        max_matches=max_matches,
        casual_matches=casual_matches,
        stale_s=stale_s,
        grace_s=grace_s,
        root_certificates=root_certificates,
    )
    settle_garbage_collector()
    asyncio.run(host.run())


class _OneMatchHost:
    """Just enough of a host to play one match in this process (tests, scripts)."""

    def __init__(self, conn: redis.Redis, secret: str) -> None:
        self.conn = conn
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="one-match")
        self.router = Router(secret, self._lookup)
        self.metrics = metrics.HostMetrics()

    def in_thread(self, fn: Callable[..., Any], *args: Any) -> asyncio.Future[Any]:
        return asyncio.get_running_loop().run_in_executor(self.executor, fn, self.conn, *args)

    async def _lookup(self, bot: str) -> dict[str, str]:
        entries: dict[str, str] = await self.in_thread(
            lambda conn, b: conn.hgetall(keys.bot_streams(b)), bot
        )
        return entries


def run_match(match_id: str, conn: redis.Redis, secret: str | None = None) -> str:
    """Play match ``match_id`` in this process, outside RQ, and commit it; returns
    ``committed``, ``duplicate`` (superseded or already committed by another run),
    ``superseded`` or ``already-done``. The cluster secret defaults to
    ``referee.cluster.resolve_secret()``."""
    from referee import cluster

    key = secret or cluster.resolve_secret()
    started = start_attempt(conn, match_id, f"{socket.gethostname()}:{os.getpid()}:inline")
    if started is None:
        return "already-done"
    spec, attempt, redeal = started

    async def play() -> str:
        host = _OneMatchHost(conn, key)
        try:
            run = MatchRun(host, spec, attempt, redeal)
            if not reveal(conn, match_id, attempt):
                raise Superseded("a newer attempt started before this one showed anything")
            await run.play()
            ref = records.save_record(records.default_store(), run.record())
            ok = commit(conn, run.spec, attempt, run.committed_result(), ref)
            if not ok:
                records.delete_record(ref)
            if ok:
                run.notify_match_end()
                await asyncio.sleep(0.05)  # let the link write the notifications
            pipe = conn.pipeline(transaction=False)
            host.metrics.flush(pipe)
            pipe.execute()
            return "committed" if ok else "duplicate"
        except Superseded:
            return "superseded"
        except Exception as exc:
            mark_failed(conn, spec, attempt, f"{type(exc).__name__}: {exc}")
            raise
        finally:
            await host.router.close()
            host.executor.shutdown(wait=False)

    return asyncio.run(play())
