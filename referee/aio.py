"""Small asyncio helpers for the hot paths of the referee and the match hosts.

:func:`bounded` bounds one awaited stream write (an aio write waits on
HTTP/2 flow control and may never return) like ``asyncio.wait_for`` does, without its
cost: ``wait_for`` wraps the awaitable in a new Task per call (plus a waiter future and
their callbacks), which measured a few percent of the referee's CPU per decision
(docs/workers.md "Benchmark"). Here one timer handle per write cancels the *calling* task
if the write outlives its bound, and the cancellation comes out as ``TimeoutError``.

:func:`raise_if_cancelling` re-raises a cancellation that a library swallowed: redis-py's
asyncio pub/sub (8.x) loses the ``CancelledError`` of a task cancelled inside ``subscribe``
or ``get_message`` about one time in three, and a ``while True`` loop around it then runs
forever (a referee that failed to start hung instead of exiting with its error).

:func:`stop_tasks` ends background tasks at shutdown without ever awaiting one unbounded:
a task that swallows its cancellation (the library above) would otherwise hold a drain
forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Iterable
from typing import Any, TypeVar

T = TypeVar("T")


async def bounded(awaitable: Awaitable[T], timeout_s: float) -> T:
    """Await ``awaitable`` in the current task; raise ``TimeoutError`` if it takes longer
    than ``timeout_s`` (it is cancelled then, as with ``asyncio.wait_for``). A cancellation
    from outside is re-raised as it is."""
    task = asyncio.current_task()
    if task is None:  # not in a task: nothing to cancel, fall back on wait_for
        return await asyncio.wait_for(awaitable, timeout_s)
    loop = asyncio.get_running_loop()
    fired = False

    def stall() -> None:
        nonlocal fired
        fired = True
        task.cancel()

    handle = loop.call_at(loop.time() + timeout_s, stall)
    try:
        return await awaitable
    except asyncio.CancelledError:
        if fired and task.uncancel() == 0:
            raise TimeoutError(f"not done within {timeout_s:g} s") from None
        raise
    finally:
        handle.cancel()


def raise_if_cancelling() -> None:
    """Raise ``CancelledError`` if the current task has a cancellation pending.

    Call it after each await on a library that may swallow cancellation (redis-py's pub/sub),
    so that the task still ends when cancelled."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        raise asyncio.CancelledError


async def stop_tasks(
    tasks: Iterable[asyncio.Future[Any] | None],
    timeout_s: float,
    log: logging.Logger,
    *,
    cancel: bool = True,
) -> list[asyncio.Future[Any]]:
    """Cancel ``tasks`` (unless ``cancel`` is false: then they are only waited for) and wait
    at most ``timeout_s`` for them all to end. Returns the ones still running, each logged
    by name: the caller goes on (a shutdown must finish) instead of hanging on them."""
    pending = [t for t in tasks if t is not None and not t.done()]
    if not pending:
        return []
    if cancel:
        for task in pending:
            task.cancel()
    done, left = await asyncio.wait(pending, timeout=timeout_s)
    for task in done:  # retrieved here: a failure was logged by the task's own guard
        if not task.cancelled():
            task.exception()
    for task in left:
        name = task.get_name() if isinstance(task, asyncio.Task) else repr(task)
        log.error(
            "task %s did not end within %.1f s of being %s; going on without it",
            name,
            timeout_s,
            "cancelled" if cancel else "told to stop",
        )
    return list(left)
