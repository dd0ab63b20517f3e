"""The league event feed that every ``League.WatchEvents`` stream of a referee shares.

One Redis subscription to ``keys.EVENTS_CHANNEL`` per referee, opened when the first
watcher comes and closed when the last leaves, fans each event out in process to every
watcher's queue (a viewer filters by season). A viewer therefore costs a queue, never a
Redis connection; :class:`~referee.limits.Slots` caps viewers per client and in total.

Pub/sub is at-most-once (a message published while the subscription reconnects is gone),
and so is the feed: a watcher that does not keep up loses the oldest events past
:data:`QUEUE_EVENTS`, not the referee's memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

import redis.asyncio
from redis.exceptions import RedisError

from referee import keys
from referee.aio import raise_if_cancelling

log = logging.getLogger(__name__)

QUEUE_EVENTS = 1000
"""Events one watcher may have waiting; past it its oldest are dropped."""
RETRY_S = 1.0
"""Pause before subscribing again after Redis failed."""


class EventFeed:
    """One subscription, many watchers: ``async with feed.watch() as queue``."""

    def __init__(self, client: redis.asyncio.Redis) -> None:
        self.client = client
        self.watchers: set[asyncio.Queue[Any]] = set()
        self._task: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def watch(self) -> AsyncIterator[asyncio.Queue[Any]]:
        """A queue of raw event payloads (``bytes`` or ``str``) until the block ends."""
        queue: asyncio.Queue[Any] = asyncio.Queue(maxsize=QUEUE_EVENTS)
        self.watchers.add(queue)
        if self._task is None or self._task.done():
            self._task = asyncio.ensure_future(self._listen())
        try:
            yield queue
        finally:
            self.watchers.discard(queue)
            if not self.watchers and self._task is not None:
                self._task.cancel()
                self._task = None

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(task, 3.0)

    def _fan_out(self, data: Any) -> None:
        for queue in list(self.watchers):
            if queue.full():
                with contextlib.suppress(asyncio.QueueEmpty):
                    queue.get_nowait()  # a watcher that does not keep up loses the oldest
            queue.put_nowait(data)

    async def _listen(self) -> None:
        while self.watchers:
            pubsub = self.client.pubsub(ignore_subscribe_messages=True)
            try:
                await pubsub.subscribe(keys.EVENTS_CHANNEL)
                raise_if_cancelling()
                while self.watchers:
                    message = await pubsub.get_message(timeout=1.0)
                    raise_if_cancelling()
                    if message is not None:
                        self._fan_out(message.get("data"))
            except RedisError as exc:
                log.warning("the league event feed lost Redis (%s); subscribing again", exc)
            except Exception:  # never leave the watchers waiting on a dead task
                log.exception("the league event feed failed; subscribing again")
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
            await asyncio.sleep(RETRY_S)
