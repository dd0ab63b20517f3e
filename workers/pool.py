"""``arena worker -n PROCESSES --matches PER_PROCESS``: match-host processes in one
foreground command (docs/workers.md "Match hosts").

Each child is a :class:`workers.host.MatchHost` (up to PER_PROCESS matches at once, as
asyncio tasks). The parent only looks after them: it restarts a host that died (under a
new name: RQ refuses a name whose dead registration has not expired yet) and on SIGTERM
passes SIGTERM on (each host finishes its matches within its grace period or hands them
back), then SIGKILLs what is left.

The parent creates no gRPC object before it forks (gRPC objects do not survive a fork): the
hosts open their channels themselves, and a host never forks.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
import socket
import threading
import time
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any, Final

import redis

from referee import keys
from referee.defaults import (
    DEFAULT_CASUAL_MATCHES,
    DEFAULT_GRACE_S,
    DEFAULT_MATCHES,
    DEFAULT_STALE_S,
)
from referee.procs import die_with_parent
from workers.host import run_host

log = logging.getLogger("workers.pool")

SHUTDOWN_SLACK_S: Final = 10.0

__all__ = ["WorkerPool"]


def _host_main(
    redis_url: str,
    name: str,
    level: str,
    secret: str,
    matches: int,
    stale_s: float,
    grace_s: float,
    link_tls_ca: str | None,
    casual_matches: int = DEFAULT_CASUAL_MATCHES,
) -> None:
    """Body of one host child process."""
    die_with_parent(signal.SIGTERM)
    logging.basicConfig(
        level=level, format=f"%(asctime)s {name} %(name)s %(levelname)s %(message)s", force=True
    )
    os.environ["ARENA_WORKER_NAME"] = name
    run_host(
        redis_url,
        name,
        secret,
        max_matches=matches,
        casual_matches=casual_matches,
        stale_s=stale_s,
        grace_s=grace_s,
        root_certificates=Path(link_tls_ca).read_bytes() if link_tls_ca else None,
    )


class WorkerPool:
    """N match-host processes, run in the foreground by :meth:`run`."""

    def __init__(
        self,
        redis_url: str,
        num_workers: int = 1,
        *,
        secret: str,
        matches: int = DEFAULT_MATCHES,
        casual_matches: int = DEFAULT_CASUAL_MATCHES,
        stale_s: float = DEFAULT_STALE_S,
        grace_s: float = DEFAULT_GRACE_S,
        interval_s: float = 1.0,
        level: str = "INFO",
        name_prefix: str | None = None,
        link_tls_ca: str | None = None,
    ):
        self.link_tls_ca = link_tls_ca
        self.redis_url = redis_url
        self.num_workers = num_workers
        self.secret = secret
        self.matches = matches
        self.casual_matches = casual_matches
        self.stale_s = stale_s
        self.grace_s = grace_s
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
        self.generation += 1
        name = f"{self.prefix}-w{slot}" + (f".{self.generation}" if self.generation > 1 else "")
        proc = self._ctx.Process(
            target=_host_main,
            args=(
                self.redis_url,
                name,
                self.level,
                self.secret,
                self.matches,
                self.stale_s,
                self.grace_s,
                self.link_tls_ca,
                self.casual_matches,
            ),
            name=name,
            daemon=False,
        )
        proc.start()
        self.procs[name] = proc
        self.slots[name] = slot
        log.info("match host %s started (pid %s, %d matches)", name, proc.pid, self.matches)

    def start(self) -> None:
        for slot in range(self.num_workers):
            self._spawn(slot)

    def tick(self, conn: redis.Redis) -> None:
        """Restart hosts that died; check that Redis answers (for ``readiness``)."""
        for name, proc in list(self.procs.items()):
            if not proc.is_alive() and not self.stopping.is_set():
                log.warning("match host %s exited (code %s); restarting it", name, proc.exitcode)
                proc.join(0)
                with contextlib.suppress(redis.RedisError):
                    conn.hdel(keys.WORKERS_ALIVE, name)
                del self.procs[name]
                self._spawn(self.slots.pop(name))
        try:
            conn.ping()
            self.last_round_ok = time.monotonic()
        except redis.RedisError as exc:
            log.warning("pool: Redis out of reach (%s)", exc)

    def run(self) -> None:
        """Start the hosts and look after them until :meth:`stop` (or SIGTERM/SIGINT)."""
        conn = redis.Redis.from_url(self.redis_url, socket_timeout=5.0)
        self.start()
        try:
            while not self.stopping.wait(self.interval_s):
                self.tick(conn)
        finally:
            self.shutdown(conn)
            conn.close()

    def stop(self, *_: Any) -> None:
        self.stopping.set()

    def readiness(self) -> tuple[bool, dict[str, Any]]:
        """Ready: not stopping, every host process alive, and Redis answered in the last
        three intervals (for ``arena worker --health-port``'s ``/readyz``)."""
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

    def shutdown(self, conn: redis.Redis) -> None:
        """SIGTERM every host (it finishes or hands back its matches), then SIGKILL."""
        self.stopping.set()
        for proc in self.procs.values():
            if proc.is_alive() and proc.pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s + SHUTDOWN_SLACK_S
        for proc in self.procs.values():
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                proc.kill()
                proc.join()
        with contextlib.suppress(redis.RedisError):
            if self.procs:
                conn.hdel(keys.WORKERS_ALIVE, *self.procs)
        log.info("match hosts stopped")
