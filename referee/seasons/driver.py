"""The season driver that every referee runs: ``await run_driver(redis_url, stop)``.

One step (in a worker thread, with a synchronous Redis client):

1. every running season gets its window of matches in flight topped up
   (:func:`referee.seasons.store.top_up`, under a per-season lock);
2. matches the workers marked ``failed`` are counted as failed (once); every
   ``RESCUE_EVERY_S``, a match left ``queued`` without an RQ job (a referee killed inside
   ``enqueue_match``) is enqueued again (:func:`store.rescue_lost`);
3. committed results are read from ``keys.RESULTS_STREAM`` through the consumer group
   ``arena-seasons`` (each referee is one consumer), counted once per match id
   (:func:`store.count_done`, a set-if-absent), and only then acknowledged; entries that a
   dead referee read but never acknowledged are claimed after ``CLAIM_IDLE_MS``. A result
   whose boards another table may still play waits in ``keys.MATCHES_HELD`` and is counted
   on the first step after that table has stopped (:func:`embargo.counters_held`);
4. the standings of seasons with new results are rebuilt from their stored tallies
   (which counting folded each result into, :mod:`referee.seasons.tallies`) at most every
   ``STANDINGS_EVERY_S``, and their ratings refitted from the tally log at most every
   ``REFIT_EVERY_S`` per season, or five times the last refit's duration if longer (and
   always at the end); a season whose
   matches are all settled is finished (its seed revealed); a cancelled season's seed is
   revealed once none of its matches is queued or running any more;
5. every ``LADDER_EVERY_S`` each continuous ladder takes a step (``referee/ladder/store.py``:
   rate the batch that ended, decide and start the next one as a season).

Because counting is idempotent and every transition is a compare-and-set, several
referees may run the driver at once, and a referee killed at any point loses nothing: its
unacknowledged entries are re-read and counted at most once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import time
from typing import Any, cast

import redis

from referee import keys
from referee.match.spec import MatchState
from referee.seasons import embargo, store
from referee.seasons.tallies import fold_of

log = logging.getLogger(__name__)

GROUP = "arena-seasons"
CLAIM_IDLE_MS = 15_000
CLAIM_EVERY_S = 5.0
CONSUMER_FORGET_MS = 3_600_000
RESCUE_EVERY_S = 30.0
RESCUE_AFTER_MS = 60_000
STANDINGS_EVERY_S = 0.5
REFIT_EVERY_S = 2.0
READ_BLOCK_MS = 300
LADDER_EVERY_S = 0.5


class SeasonDriver:
    """The driver's state in one referee; :meth:`step` does one round of work."""

    def __init__(self, conn: redis.Redis, consumer: str | None = None) -> None:
        self.conn = conn
        self.consumer = consumer or (f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}")
        self.dirty: set[str] = set()
        self.last_standings: dict[str, float] = {}
        self.last_refit: dict[str, float] = {}
        self.refit_cost: dict[str, float] = {}
        self.boards: dict[str, dict[str, list[tuple[str, int]]]] = {}
        self.bots: dict[str, tuple[str, ...]] = {}  # the season bots its log entries index
        self.last_claim = 0.0
        self.last_rescue = 0.0
        self.last_ladders = 0.0
        self._group_ready = False

    def ensure_group(self) -> None:
        try:
            self.conn.xgroup_create(keys.RESULTS_STREAM, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        self._group_ready = True
        # After a restart, make sure every season's stored standings are current.
        self.dirty.update(store.running_seasons(self.conn))

    def step(self, block_ms: int = READ_BLOCK_MS) -> int:
        """One round; returns the number of results newly counted."""
        if not self._group_ready:
            self.ensure_group()
        active = store.running_seasons(self.conn)
        rescue = time.monotonic() - self.last_rescue >= RESCUE_EVERY_S
        if rescue:
            self.last_rescue = time.monotonic()
        for season_id in active:
            self._settle_failed(season_id)
            if rescue:
                for match_id in store.rescue_lost(self.conn, season_id, RESCUE_AFTER_MS):
                    log.warning("match %s was queued without a job; enqueued again", match_id)
            store.top_up(self.conn, season_id)
        counted = self._consume(block_ms)
        counted += self._release_held()
        now = time.monotonic()
        for season_id in sorted(self.dirty):
            if now - self.last_standings.get(season_id, 0.0) < STANDINGS_EVERY_S:
                continue
            # a refit reads the season's whole tally log: at most every REFIT_EVERY_S, and
            # never more than a sixth of the time
            every = max(REFIT_EVERY_S, 5 * self.refit_cost.get(season_id, 0.0))
            refit = now - self.last_refit.get(season_id, 0.0) >= every
            began = time.monotonic()
            store.recompute_standings(self.conn, season_id, refit=refit)
            if refit:
                self.refit_cost[season_id] = time.monotonic() - began
                self.last_refit[season_id] = now
            self.last_standings[season_id] = now
            self.dirty.discard(season_id)
        for season_id in active:
            store.finish_if_complete(self.conn, season_id)
        for season_id in store.cancelled_unrevealed(self.conn):
            self._settle_failed(season_id)
            if store.reveal_if_settled(self.conn, season_id):
                log.info("season %s: cancelled and settled; its seed is revealed", season_id)
        if time.monotonic() - self.last_ladders >= LADDER_EVERY_S:
            self.last_ladders = time.monotonic()
            from referee.ladder.store import step_all  # the ladder builds on the seasons

            step_all(self.conn, self.consumer)
        return counted

    def _settle_failed(self, season_id: str) -> None:
        for match_id, state in store.match_states(self.conn, season_id).items():
            if state == MatchState.FAILED and store.count_failed(self.conn, season_id, match_id):
                store.publish(self.conn, "match_failed", season_id, match_id)

    def _consume(self, block_ms: int) -> int:
        entries: list[tuple[str, dict[str, str]]] = []
        now = time.monotonic()
        if now - self.last_claim > CLAIM_EVERY_S:
            self.last_claim = now
            claimed = self.conn.xautoclaim(
                keys.RESULTS_STREAM, GROUP, self.consumer, CLAIM_IDLE_MS, start_id="0-0"
            )
            entries.extend(cast(Any, claimed)[1])
            self._forget_idle_consumers()
        if not entries:
            reply = self.conn.xreadgroup(
                GROUP, self.consumer, {keys.RESULTS_STREAM: ">"}, count=200, block=block_ms
            )
            for _stream, items in cast(Any, reply) or []:
                entries.extend(items)
        counted = 0
        for entry_id, fields in entries:
            if fields:  # a claimed entry that was trimmed meanwhile has no fields
                counted += self._apply(fields.get("season", ""), fields.get("match_id", ""))
            self.conn.xack(keys.RESULTS_STREAM, GROUP, entry_id)
        return counted

    def _forget_idle_consumers(self) -> None:
        """Drop consumers of referees long gone (nothing pending, idle an hour), so the
        group does not grow with every referee restart."""
        for consumer in self.conn.xinfo_consumers(keys.RESULTS_STREAM, GROUP):
            if (
                consumer["name"] != self.consumer
                and int(consumer["pending"]) == 0
                and int(consumer["idle"]) > CONSUMER_FORGET_MS
            ):
                self.conn.xgroup_delconsumer(keys.RESULTS_STREAM, GROUP, consumer["name"])

    def _apply(self, season_id: str, match_id: str) -> int:
        if not season_id or not match_id or not self.conn.exists(keys.season(season_id)):
            return 0
        if embargo.counters_held(self.conn, match_id, season_id):
            # another table still plays these boards: counted when it has stopped
            self.conn.hset(keys.MATCHES_HELD, match_id, season_id)
            return 0
        return self._count(season_id, match_id)

    def _release_held(self) -> int:
        """Count the held results whose boards no table plays any more."""
        counted = 0
        held = cast(dict[str, str], self.conn.hgetall(keys.MATCHES_HELD))
        for match_id, season_id in sorted(held.items()):
            if not self.conn.exists(keys.season(season_id)):
                self.conn.hdel(keys.MATCHES_HELD, match_id)
            elif not embargo.counters_held(self.conn, match_id, season_id):
                # (the table whose result released it announced replays_opened)
                counted += self._count(season_id, match_id, announce=False)
                self.conn.hdel(keys.MATCHES_HELD, match_id)
        return counted

    def _count(self, season_id: str, match_id: str, announce: bool = True) -> int:
        from referee.queue import get_result

        result = get_result(self.conn, match_id)
        if result is None:
            log.warning("results stream names %s but it has no committed result", match_id)
            return 0
        decisions = sum(int(s.get("decisions", 0)) for s in result.get("stats", []))
        if season_id not in self.boards:
            self.boards[season_id] = store.season_boards(self.conn, season_id)
            self.bots[season_id] = store.get_spec(self.conn, season_id).bots
        fold = fold_of(result, self.boards[season_id].get(match_id), self.bots[season_id])
        if not store.count_done(self.conn, season_id, match_id, decisions, fold):
            return 0
        self.dirty.add(season_id)
        order = result["result"].get("order", [])
        store.publish(
            self.conn,
            "match_committed",
            season_id,
            match_id,
            {
                "seats": result["seats"],
                "totals": result["result"].get("totals", []),
                "winners": [result["seats"][s] for s in (order[0] if order else [])],
                "decisions": decisions,
                "sealed": embargo.seal_of(self.conn, match_id, season_id).sealed,
            },
        )
        opened = embargo.opened_by(self.conn, season_id, match_id) if announce else []
        if opened:  # the last table of these boards is done: their replays open now
            store.publish(self.conn, "replays_opened", season_id, data={"matches": opened})
        return 1


async def run_driver(redis_url: str, stop: asyncio.Event) -> None:
    """Drive every season in Redis until ``stop`` is set (the referee runs this)."""
    conn = store.connect(redis_url)
    driver = SeasonDriver(conn)
    try:
        while not stop.is_set():
            try:
                await asyncio.to_thread(driver.step)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                log.warning("season driver: Redis unavailable (%s); retrying", exc)
                await _sleep_or_stop(stop, 1.0)
            except Exception:
                log.exception("season driver step failed; retrying")
                await _sleep_or_stop(stop, 1.0)
    finally:
        conn.close()


async def _sleep_or_stop(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), seconds)
