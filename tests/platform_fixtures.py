"""A whole platform for end-to-end tests: ``arena referee`` and ``arena worker`` as real
processes on the session's embedded Redis, and SDK bots in threads.

Test modules build their module-scoped ``platform`` fixture from :func:`running_platform`
(each with its own worker options) and run bots with :func:`bots_in_threads`.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import redis

from referee import bots
from referee.procs import arena_command, start_referee, stop_process
from sample_bots.sdk import Bot


@dataclass
class Platform:
    url: str
    server: str  # the referee's gRPC address, HOST:PORT
    conn: redis.Redis
    workers: subprocess.Popen[bytes]
    referee: subprocess.Popen[bytes]


@contextlib.contextmanager
def running_platform(
    url: str,
    *worker_args: str,
    workers: int = 2,
    on_line: Callable[[str], None] | None = None,
    referee_args: Sequence[str] = (),
    referee_env: Mapping[str, str] | None = None,
) -> Iterator[Platform]:
    """Empty the Redis at ``url``, start a referee (any free ports; each of its output lines
    to ``on_line``; ``referee_env``: extra environment, e.g. ``ARENA_ADMIN_TOKEN``) and
    ``arena worker -n workers --redis-url url *worker_args``; stop both (and close the
    client) afterwards."""
    with contextlib.ExitStack() as stack:  # stopped in reverse: workers, referee, client
        conn = redis.Redis.from_url(url, decode_responses=True)
        stack.callback(conn.close)
        conn.flushall()
        env = {**os.environ, **(referee_env or {})}
        referee, server = start_referee(url, *referee_args, on_line=on_line, env=env)
        stack.callback(stop_process, referee, 15)
        pool = subprocess.Popen(
            arena_command("worker", "-n", str(workers), "--redis-url", url, *worker_args),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(stop_process, pool, 15)
        yield Platform(url, server, conn, pool, referee)


@contextlib.contextmanager
def bots_in_threads(
    platform: Platform, named: Mapping[str, Bot]
) -> Iterator[dict[str, threading.Event]]:
    """Register each bot under its name and run it in a thread; yields each bot's stop
    event. Stops them all afterwards."""
    with bots_on(platform.conn, platform.server, named) as stops:
        yield stops


@contextlib.contextmanager
def bots_on(
    conn: redis.Redis, server: str, named: Mapping[str, Bot]
) -> Iterator[dict[str, threading.Event]]:
    """:func:`bots_in_threads` for any Redis and referee address (``server`` may list
    several, ``HOST:PORT,HOST:PORT``, tried in order)."""
    stops: dict[str, threading.Event] = {}
    threads = []
    for name, bot in named.items():
        token = bots.register(conn, name)
        bot.name = name
        stop = stops[name] = threading.Event()
        thread = threading.Thread(
            target=bot.run, args=(server, token), kwargs={"stop": stop}, daemon=True
        )
        thread.start()
        threads.append(thread)
    try:
        yield stops
    finally:
        for stop in stops.values():
            stop.set()
        for thread in threads:
            thread.join(10)
