"""How long the referee's own event loop may have held a bot's answer before stamping it:
the platform's delay, which the clock never charges to a bot (docs/gateway.md "The clock
and the event loop").

The referee stamps an answer when its loop gets to it. Everything else on that loop (the
web, the League API, spectators, co-hosted matches, other bots' streams) can make an answer
that arrived in time wait: a handler that runs 0.3 s, or a flood that makes every pass of
the loop long. :class:`LoopLag` watches the loop's passes where they begin, at its
selector: an answer reaches the loop as a readable socket (gRPC's poller thread signals a
socket pair), the ``select`` of some pass collects it, and the reading task stamps it at
most ``HOPS`` passes later (the poller's callback resolves a future, the reading task
resumes, the stream's iterator hands the message on). So an answer stamped now arrived
after the earliest of these moments that still holds:

* the end of the ``select`` ``HOPS + 1`` passes ago (an answer that arrived before it would
  have been collected then and stamped by now);
* the start of the latest pass that found nothing ready to run (``select`` was allowed to
  wait): every answer that arrived before it was collected by that pass or earlier, and
  its reading was over before a pass could find nothing to run;
* the end of a ``select`` that actually waited (the loop was idle until then: nothing
  arrived while it waited but what woke it).

:meth:`LoopLag.credit_ms` is ``now`` minus that moment: on an idle machine a fraction of
a millisecond (the clock's promise, docs/workers.md "The clock", is untouched); behind a
0.3 s handler, the 0.3 s; under a flood that makes each pass take ``P``, at most about
``(HOPS + 1) * P``. It gives the bot the benefit of the doubt within that bound: an answer
that came just after the deadline during a stall is taken as in time. The relay's flood
limits and the web's off-loop work keep stalls short; the bound keeps the doubt small.

A loop whose selector cannot be watched (not a selector event loop) gets no credit, and a
warning once.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from typing import Any

log = logging.getLogger(__name__)

HOPS = 3
"""Passes of the loop from the ``select`` that collects an answer to the one that stamps it,
at most (gRPC aio's poller callback, the read's future, the servicer's iterator, the
session's task): a margin of one over what grpcio 1.85 takes."""
CAP_MS = 3000.0
"""Never credit more (a match host stops waiting for a reply 5 s past the limit)."""


class _WatchedSelector:
    """The loop's selector, with the time each ``select`` began and ended recorded."""

    def __init__(self, selector: Any, lag: LoopLag) -> None:
        self._selector = selector
        self._lag: LoopLag | None = lag  # None once stopped (another may wrap this one)

    def select(self, timeout: float | None = None) -> Any:
        began = time.monotonic()
        events = self._selector.select(timeout)
        if self._lag is not None:
            self._lag._passed(began, time.monotonic(), timeout != 0)
        return events

    def __getattr__(self, name: str) -> Any:
        return getattr(self._selector, name)


class LoopLag:
    """Install on the loop it measures with :meth:`start`."""

    def __init__(self, hops: int = HOPS) -> None:
        self.hops = hops
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ends: deque[float] = deque(maxlen=hops + 2)  # the last selects' ends
        self._settled = 0.0  # no answer stamped from now on arrived before this moment
        self._watched: _WatchedSelector | None = None
        self.worst_ms = 0.0  # the largest credit given (for logs and tests)

    @property
    def running(self) -> bool:
        return self._watched is not None

    def start(self) -> None:
        """Watch the running loop's selector (idempotent)."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        self._loop = loop
        selector = getattr(loop, "_selector", None)
        if selector is None or not hasattr(selector, "select"):
            log.warning(
                "the event loop %s has no selector to watch: the clock cannot tell the "
                "loop's own delays from a bot's (no credit is given)",
                type(loop).__name__,
            )
            return
        # (a second referee in the same loop, in tests, wraps the first one's watcher)
        self._watched = _WatchedSelector(selector, self)
        loop._selector = self._watched  # type: ignore[attr-defined]
        self._settled = time.monotonic()

    def stop(self) -> None:
        """Give the loop its own selector back."""
        loop, watched = self._loop, self._watched
        if watched is not None:
            watched._lag = None
            if loop is not None and getattr(loop, "_selector", None) is watched:
                loop._selector = watched._selector  # type: ignore[attr-defined,union-attr]
        self._watched = None
        self._loop = None
        self._ends.clear()

    def _passed(self, began: float, ended: float, could_wait: bool) -> None:
        """One ``select``: from ``began`` to ``ended``; ``could_wait`` when nothing was
        ready to run (the loop had caught up with everything collected before)."""
        if could_wait and self._ends:
            self._settled = max(self._settled, self._ends[-1])
        if could_wait and ended - began > 0.0005:  # it waited: idle until woken
            self._settled = max(self._settled, ended)
        self._ends.append(ended)

    def credit_ms(self) -> float:
        """How long an answer stamped now may have waited for this loop (0 unwatched)."""
        if self._watched is None:
            return 0.0
        now = time.monotonic()
        since = self._settled
        if len(self._ends) == self._ends.maxlen:
            since = max(since, self._ends[0])
        credit = min(max(0.0, (now - since) * 1000.0), CAP_MS)
        if credit > self.worst_ms:
            self.worst_ms = credit
        return credit
