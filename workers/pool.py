"""``arena worker -n N``: N forking RQ workers in one foreground command, plus a janitor.

Each worker is an ``rq.Worker`` child process (it forks a work horse per job). The parent:

* heartbeats every live worker in ``keys.WORKERS_ALIVE`` (the metrics read it) and
  restarts workers that died;
* runs the janitor every ``interval_s``: a running match whose runner stopped
  heartbeating for ``stale_s`` is re-enqueued as a new attempt (PITFALLS 2: RQ alone would
  notice it after 60-90 s plus its 10-minute maintenance interval), and RQ's own registry
  cleanup runs too.

Work horses get ``PR_SET_PDEATHSIG`` so that a worker killed with SIGKILL takes its
match down with it instead of leaving an orphan that plays on (PITFALLS 1); the orphan
would be harmless (attempt fencing), but it would waste a bot's time.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from multiprocessing.process import BaseProcess
from typing import Any, Final

import redis
from rq import Queue, Worker
from rq.job import Job
from rq.registry import clean_registries

from referee import keys
from referee.mailbox import now_ms
from workers.queue import QUEUE_NAME, requeue_abandoned, rq_connection

log = logging.getLogger("workers.pool")

DEFAULT_STALE_S: Final = 10.0
"""A running match whose heartbeat is this old is taken as abandoned (the runner
heartbeats every second)."""

_PR_SET_PDEATHSIG: Final = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (no-op elsewhere)."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)


class ArenaWorker(Worker):
    """An RQ worker whose work horses die with it."""

    def main_work_horse(self, job: Job, queue: Queue) -> None:
        die_with_parent(signal.SIGKILL)
        os.environ["ARENA_WORKER_NAME"] = self.name
        super().main_work_horse(job, queue)


def _worker_main(redis_url: str, name: str, level: str) -> None:
    """Body of one worker child process."""
    die_with_parent(signal.SIGTERM)
    logging.basicConfig(
        level=level, format=f"%(asctime)s {name} %(name)s %(levelname)s %(message)s"
    )
    conn = redis.Redis.from_url(redis_url)
    worker = ArenaWorker([Queue(QUEUE_NAME, connection=conn)], connection=conn, name=name)
    worker.work(with_scheduler=False, logging_level=level)


def janitor_pass(conn: redis.Redis, stale_s: float = DEFAULT_STALE_S) -> list[str]:
    """Re-enqueue every running match whose heartbeat lapsed; return their ids."""
    stale_before = now_ms() - stale_s * 1000.0
    requeued = []
    for raw in conn.zrangebyscore(keys.MATCHES_RUNNING, "-inf", stale_before):
        match_id = raw.decode() if isinstance(raw, bytes) else str(raw)
        attempt = conn.hget(keys.match_state(match_id), "attempt")
        if attempt is None:
            conn.zrem(keys.MATCHES_RUNNING, match_id)
            continue
        if requeue_abandoned(conn, match_id, int(attempt), stale_before):
            log.warning("match %s: attempt %s abandoned; re-enqueued", match_id, int(attempt))
            requeued.append(match_id)
    clean_registries(Queue(QUEUE_NAME, connection=rq_connection(conn)))
    return requeued


class WorkerPool:
    """N worker processes and the janitor, run in the foreground by :meth:`run`."""

    def __init__(
        self,
        redis_url: str,
        num_workers: int = 1,
        *,
        stale_s: float = DEFAULT_STALE_S,
        interval_s: float = 1.0,
        level: str = "INFO",
        name_prefix: str | None = None,
    ):
        self.redis_url = redis_url
        self.num_workers = num_workers
        self.stale_s = stale_s
        self.interval_s = interval_s
        self.level = level
        self.prefix = name_prefix or f"arena-{socket.gethostname()}-{os.getpid()}"
        self.procs: dict[str, BaseProcess] = {}
        self.slots: dict[str, int] = {}
        self.generation = 0
        self.stopping = threading.Event()
        self._ctx = multiprocessing.get_context("fork")
        self.last_round_ok = 0.0  # time.monotonic() of the last round that reached Redis

    def _spawn(self, slot: int) -> None:
        # A new name per start: RQ refuses a name whose (dead) registration has not
        # expired yet, which is the case right after a worker was killed.
        self.generation += 1
        name = f"{self.prefix}-w{slot}" + (f".{self.generation}" if self.generation > 1 else "")
        proc = self._ctx.Process(
            target=_worker_main, args=(self.redis_url, name, self.level), name=name, daemon=False
        )
        proc.start()
        self.procs[name] = proc
        self.slots[name] = slot
        log.info("worker %s started (pid %s)", name, proc.pid)

    def start(self) -> None:
        for slot in range(self.num_workers):
            self._spawn(slot)

    def tick(self, conn: redis.Redis) -> None:
        """One round of the parent's duties: restart, heartbeat, janitor."""
        for name, proc in list(self.procs.items()):
            if not proc.is_alive() and not self.stopping.is_set():
                log.warning("worker %s exited (code %s); restarting it", name, proc.exitcode)
                proc.join(0)
                conn.hdel(keys.WORKERS_ALIVE, name)
                del self.procs[name]
                self._spawn(self.slots.pop(name))
        now = f"{now_ms():.0f}"
        conn.hset(keys.WORKERS_ALIVE, mapping=dict.fromkeys(self.procs, now))
        janitor_pass(conn, self.stale_s)

    def run(self) -> None:
        """Start the workers and look after them until :meth:`stop` (or SIGTERM/SIGINT)."""
        conn = redis.Redis.from_url(self.redis_url)
        self.start()
        try:
            while not self.stopping.wait(self.interval_s):
                try:
                    self.tick(conn)
                    self.last_round_ok = time.monotonic()
                except redis.RedisError as exc:
                    log.error("pool: Redis error (%s); retrying in %.0fs", exc, self.interval_s)
        finally:
            self.shutdown(conn)
            conn.close()

    def stop(self, *_: Any) -> None:
        self.stopping.set()

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready: not stopping, every worker process alive, and a round reached Redis in the
        last three intervals (for ``arena worker --health-port``'s ``/readyz``)."""
        alive = sum(1 for proc in list(self.procs.values()) if proc.is_alive())
        since = time.monotonic() - self.last_round_ok if self.last_round_ok else None
        problems = []
        if self.stopping.is_set():
            problems.append("shutting down")
        if alive < self.num_workers:
            problems.append(f"{alive} of {self.num_workers} worker processes alive")
        if since is None or since > 3 * self.interval_s + 1.0:
            problems.append(
                "Redis not reached " + ("yet" if since is None else f"for {since:.0f} s")
            )
        details = {"workers_alive": alive, "workers": self.num_workers, "problems": problems}
        return not problems, details

    def shutdown(self, conn: redis.Redis, timeout: float = 5.0) -> None:
        """Stop every worker: SIGTERM (RQ's warm then cold shutdown), then SIGKILL."""
        self.stopping.set()
        for proc in self.procs.values():
            if proc.is_alive() and proc.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
                    os.kill(proc.pid, signal.SIGTERM)  # second one: cold shutdown
        deadline = time.monotonic() + timeout
        for proc in self.procs.values():
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()
        with contextlib.suppress(redis.RedisError):
            if self.procs:
                conn.hdel(keys.WORKERS_ALIVE, *self.procs)
        log.info("workers stopped")
