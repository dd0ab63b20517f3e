"""The referee's pub/sub loops end when cancelled, at any moment of their subscription.

redis-py's asyncio pub/sub loses the ``CancelledError`` of a task cancelled inside
``subscribe``/``get_message`` about one time in three (measured with redis-py 8.1), and a
``while True`` loop around it then runs forever: ``arena up`` with its HTTP port taken hung
until killed instead of exiting with "could not serve HTTP on ..." (``tests/cli/test_up.py``,
seen on main). Each loop calls :func:`referee.aio.raise_if_cancelling` after those awaits.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from typing import Any

import pytest
import redis.asyncio

from referee.gateway.auth import TokenWatch
from referee.gateway.hub import Hub, HubConfig
from referee.gateway.notices import forward_season_notices

TRIALS = 60
"""Cancellations per loop, each a little later into the subscription (0-6 ms)."""


def _token_watch(client: redis.asyncio.Redis) -> Coroutine[Any, Any, None]:
    return TokenWatch(client).run(client)


def _season_notices(client: redis.asyncio.Redis) -> Coroutine[Any, Any, None]:
    return forward_season_notices(Hub(client, HubConfig(referee_id="test")), client, client)


@pytest.mark.parametrize("loop", [_token_watch, _season_notices], ids=["tokens", "notices"])
def test_a_pubsub_loop_cancelled_during_its_subscription_ends(
    redis_url: str, loop: Callable[[redis.asyncio.Redis], Coroutine[Any, Any, None]]
) -> None:
    async def trials() -> list[int]:
        stuck: list[int] = []
        for trial in range(TRIALS):
            client = redis.asyncio.Redis.from_url(redis_url)
            task = asyncio.ensure_future(loop(client))
            await asyncio.sleep(trial * 0.0001)
            task.cancel()
            done, _ = await asyncio.wait({task}, timeout=3.0)
            if not done:
                stuck.append(trial)
                task.cancel()
                await asyncio.wait({task}, timeout=3.0)
            await client.aclose()
        return stuck

    assert asyncio.run(trials()) == []


def test_stop_tasks_goes_on_without_a_task_that_swallows_its_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A referee's stop never awaits a task unbounded (``referee.aio.stop_tasks``): a task
    that swallows its cancellation, as the pub/sub above can, is named in the log and left
    behind; a well-behaved task ends; the call returns within its bound. (A SIGTERMed
    referee once failed to finish its drain: tests/adversarial/test_slow_reader.py.)"""
    import logging

    from referee.aio import stop_tasks

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue  # swallowed, as a buggy library does

    async def polite() -> None:
        await asyncio.sleep(10)

    async def scenario() -> tuple[list[str], bool, float]:
        bad = asyncio.create_task(stubborn(), name="stubborn")
        good = asyncio.create_task(polite(), name="polite")
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        began = loop.time()
        left = await stop_tasks([good, bad, None], 0.3, logging.getLogger("test.stop"))
        took = loop.time() - began
        names = [t.get_name() for t in left if isinstance(t, asyncio.Task)]
        good_cancelled = good.cancelled()
        bad.cancel()  # let the test's loop end: the stubborn task ignores this one too...
        bad_frame = bad.get_coro()
        assert bad_frame is not None
        bad_frame.close()  # ...so close its coroutine by hand
        return names, good_cancelled, took

    with caplog.at_level(logging.ERROR, logger="test.stop"):
        names, good_cancelled, took = asyncio.run(scenario())
    assert names == ["stubborn"]
    assert good_cancelled
    assert took < 5.0  # the bound is 0.3 s; this only says it did not wait forever
    assert "task stubborn did not end within 0.3 s" in caplog.text
