"""What one client, and every client together, may hold or ask of one referee.

Every default lives in :class:`Limits`, one line of why each. An operator changes one with
``arena referee --limit NAME=VALUE`` (repeatable; ``0`` turns that limit off);
docs/SECURITY.md "Anonymous surfaces and their limits" is the table. A *client* is the
peer's address without its port (:func:`client_of_peer`): behind a reverse proxy every
visitor is the proxy, so limit per visitor there and raise these.

The two tools the surfaces share:

* :class:`RateLimiter`: a token bucket per client (``reads_per_s`` refill,
  ``reads_burst`` capacity); a refused request learns when to try again;
* :class:`Slots`: open streams per client and in total (WatchEvents, server-sent events).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from referee.errors import ConfigError, LimitExceeded


@dataclass(frozen=True)
class Limits:
    """Per-referee limits; 0 means no limit (off)."""

    outbox_bytes: int = 1 << 20
    """Bytes queued for one bot stream and not yet written (a bot reading slower than it
    makes the referee write ends its stream rather than growing the referee)."""
    outbox_messages: int = 4096
    """Messages queued for one bot stream (the same, counted in messages)."""
    watch_streams_per_client: int = 8
    """Open ``League.WatchEvents`` streams of one client (a dashboard needs one or two)."""
    watch_streams: int = 1000
    """Open ``WatchEvents`` streams of everyone (they share one Redis subscription)."""
    sse_per_client: int = 8
    """Open ``/events`` (server-sent events) streams of one client (one per open tab)."""
    sse_streams: int = 256
    """Open ``/events`` streams of everyone (each holds an HTTP connection)."""
    page_redis_connections: int = 32
    """Redis connections the web pages share (health and readiness have their own)."""
    page_wait_s: float = 2.0
    """How long a page waits for one of them before answering 503 with Retry-After."""
    reads_per_s: float = 10.0
    """Anonymous reads one client makes per second, sustained (League API reads,
    GetReplay, web pages and replays): a token bucket's refill."""
    reads_burst: int = 40
    """The same bucket's capacity: a page and its follow-ups, a CLI listing."""
    replay_cache: int = 256
    """Rendered replays of finished, unsealed matches kept in memory (they never change)."""

    @classmethod
    def names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]

    def with_settings(self, settings: Iterable[str]) -> Limits:
        """These limits with ``NAME=VALUE`` settings applied (``--limit``); a ConfigError
        says what is wrong and what would be right."""
        changes: dict[str, int | float] = {}
        kinds = {f.name: f.type for f in dataclasses.fields(self)}
        for item in settings:
            name, sep, raw = item.partition("=")
            name = name.strip().replace("-", "_")
            if not sep or name not in kinds:
                raise ConfigError(
                    f"--limit {item!r} is not NAME=VALUE with a known NAME: the names are "
                    + ", ".join(self.names())
                )
            try:
                value: int | float = float(raw) if kinds[name] in ("float", float) else int(raw)
            except ValueError:
                whole = "a number" if kinds[name] in ("float", float) else "a whole number"
                raise ConfigError(
                    f"--limit {name}={raw!r}: the value must be {whole} (0 turns it off)"
                ) from None
            if value < 0 or not math.isfinite(value):
                raise ConfigError(f"--limit {name}={raw}: the value must be 0 (off) or more")
            changes[name] = value
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]


def client_of_peer(peer: str) -> str:
    """The client of a gRPC peer string: its address without the port
    (``ipv4:10.0.0.5:4711`` -> ``10.0.0.5``, ``ipv6:[::1]:4711`` -> ``::1``)."""
    kind, _, rest = peer.partition(":")
    if kind == "ipv6" and rest.startswith("["):
        return rest[1:].partition("]")[0]
    if kind == "ipv4":
        return rest.rpartition(":")[0] or rest
    return peer or "unknown"


class RateLimiter:
    """A token bucket per client. ``rate`` 0 turns it off. Memory stays bounded: a bucket
    that has refilled is worth forgetting, and past ``max_clients`` the full ones go."""

    def __init__(
        self,
        rate: float,
        burst: int,
        *,
        what: str = "reads",
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self.burst = max(1, burst)
        self.what = what
        self.max_clients = max_clients
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, stamp)

    def take(self, client: str, cost: float = 1.0) -> float:
        """0.0 when ``client`` may go ahead (its bucket pays ``cost``); else the seconds
        until it may (nothing is taken)."""
        if self.rate <= 0:
            return 0.0
        now = self._clock()
        tokens, stamp = self._buckets.get(client, (float(self.burst), now))
        tokens = min(float(self.burst), tokens + (now - stamp) * self.rate)
        if tokens >= cost:
            self._buckets[client] = (tokens - cost, now)
            if len(self._buckets) > self.max_clients:
                self._forget_full(now)
            return 0.0
        self._buckets[client] = (tokens, now)
        return (cost - tokens) / self.rate

    def check(self, client: str, where: str) -> None:
        """Raise :class:`~referee.errors.LimitExceeded` when ``client`` is over its rate."""
        wait = self.take(client)
        if wait > 0:
            raise LimitExceeded(
                f"{where}: too many {self.what} from {client} (at most {self.rate:g} per "
                f"second, bursts of {self.burst}: --limit reads_per_s, reads_burst); try "
                f"again in {math.ceil(wait)} s",
                retry_after_s=wait,
            )

    def _forget_full(self, now: float) -> None:
        for client, (tokens, stamp) in list(self._buckets.items()):
            if tokens + (now - stamp) * self.rate >= self.burst:
                del self._buckets[client]


class Slots:
    """Open streams per client and in total; 0 turns either cap off. ``names`` are the
    two limits' names (``--limit NAME=...``), for the refusal's message."""

    def __init__(self, per_client: int, total: int, what: str, names: tuple[str, str]) -> None:
        self.per_client = per_client
        self.total = total
        self.what = what
        self.names = names
        self.held: dict[str, int] = {}
        self.count = 0

    def acquire(self, client: str) -> None:
        """Take one slot for ``client`` or raise :class:`~referee.errors.LimitExceeded`
        saying which cap is full; pair with :meth:`release`."""
        if self.total and self.count >= self.total:
            raise LimitExceeded(
                f"this referee serves at most {self.total} open {self.what} "
                f"(--limit {self.names[1]}) and all are taken; try again later",
                retry_after_s=10.0,
            )
        mine = self.held.get(client, 0)
        if self.per_client and mine >= self.per_client:
            raise LimitExceeded(
                f"{client} already holds {mine} open {self.what}, the most one client may "
                f"(--limit {self.names[0]}): close one first",
                retry_after_s=10.0,
            )
        self.held[client] = mine + 1
        self.count += 1

    def release(self, client: str) -> None:
        mine = self.held.get(client, 0) - 1
        if mine > 0:
            self.held[client] = mine
        else:
            self.held.pop(client, None)
        self.count = max(0, self.count - 1)


class RenderCache:
    """The last ``size`` renderings of finished matches' replays (a committed record never
    changes, so neither does its rendering): key -> ``(season, rendering)``. The caller
    still checks the seal on every read; only the rendering is saved. ``size`` 0: off."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[tuple[str, str], tuple[str, Any]] = OrderedDict()
        self._lock = threading.Lock()  # renderings are made in threads

    def get(self, key: tuple[str, str]) -> tuple[str, Any] | None:
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], season: str, rendering: Any) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = (season, rendering)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
