"""Put league data into a real Redis the way the other parts of the platform write it.

The workers, seasons and gateway engineers write these keys; this module mirrors their
documented formats (``referee/keys.py``, ``referee/match/spec.py``, the issue #5 brief) so that the
collector and the web page can be tested before, and independently of, those parts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import redis

from referee import keys, metrics_store

BOTS = ("alpha", "bravo", "charlie")


def standings_row(bot: str, rank: int, **overrides: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "bot": bot,
        "rank": rank,
        "matches": 4,
        "deals": 16,
        "deals_won": 10 - 3 * rank,
        "avg_place": 1.0 + 0.5 * rank,
        "score": 30 - 20 * rank,
        "illegal_passes": rank - 1,
        "invalid_actions": 2 * (rank - 1),
        "timeouts": 3 * (rank - 1),
        "autopilot_seats": 0,
        "elo": 1600.0 - 100 * rank,
        "elo_low": 1550.0 - 100 * rank,
        "elo_high": 1650.0 - 100 * rank,
        "live_elo": 1590.0 - 100 * rank,
        "openskill_mu": 27.0 - rank,
        "openskill_sigma": 5.0,
        "openskill_ordinal": 12.0 - rank,
    }
    row.update(overrides)
    return row


def write_season(
    conn: redis.Redis,
    season_id: str = "s1",
    *,
    game: str = "sevens",
    unit: str = "chips",
    bots: Sequence[str] = BOTS,
    state: str = "running",
    matches_total: int = 6,
    matches_done: int = 4,
    match_states: dict[str, str] | None = None,
    rows: list[dict[str, Any]] | None = None,
) -> None:
    """A season hash, its standings JSON and its schedule of matches (with match states)."""
    now_ms = int(time.time() * 1000)
    spec = {"game": game, "preset": "sevens", "bots": list(bots), "table_size": 3}
    conn.zadd(keys.SEASONS, {season_id: now_ms})
    conn.hset(
        keys.season(season_id),
        mapping={
            "spec": json.dumps(spec),
            "state": state,
            "game": game,
            "preset": game,
            "seed_sha256": "ab" * 32,
            "matches_total": matches_total,
            "matches_done": matches_done,
            "matches_failed": 0,
            "created_ms": now_ms,
        },
    )
    if rows is None:
        rows = [standings_row(bot, i + 1) for i, bot in enumerate(bots)]
    standings = {
        "season": season_id,
        "game": game,
        "unit": unit,
        "matches_done": matches_done,
        "matches_total": matches_total,
        "updated_ms": now_ms,
        "rows": rows,
    }
    conn.set(keys.season_standings(season_id), json.dumps(standings))
    if match_states is None:
        match_states = {f"{season_id}-m{i}": "done" for i in range(matches_done)}
        match_states.update(
            {f"{season_id}-m{i}": "queued" for i in range(matches_done, matches_total)}
        )
    for match_id, match_state in match_states.items():
        # The workers write both in one transaction (referee/queue.py, workers/runner.py).
        conn.hset(keys.season_matches(season_id), match_id, match_state)
        conn.hset(keys.match_state(match_id), mapping={"state": match_state, "attempt": 1})
        conn.zadd(keys.MATCHES_INDEX, {match_id: now_ms})
        if match_state == "done":
            write_result(conn, match_id, season_id, game, list(bots)[:3], now_ms)
            conn.sadd(keys.season_counted(season_id), match_id)  # the driver counted it


def write_result(
    conn: redis.Redis, match_id: str, season_id: str, game: str, seats: list[str], now_ms: int
) -> None:
    """A committed result (``referee.match.spec.CommittedResult``) and its match record."""
    result = {
        "match_id": match_id,
        "season": season_id,
        "game": game,
        "seats": seats,
        "attempt": 1,
        "result": {
            "totals": [12, -5, -7][: len(seats)],
            "unit": "chips",
            "higher_is_better": True,
            "order": [[0], [1], [2]][: len(seats)],
            "winners": [0],
        },
        "stats": [],
        "finished_ms": now_ms,
    }
    conn.set(keys.match_result(match_id), json.dumps(result))
    conn.set(keys.match_record(match_id), json.dumps({"match_id": match_id, "events": []}))
    conn.zadd(keys.MATCHES_RECENT, {match_id: now_ms})


def write_worker_metrics(
    conn: redis.Redis, season_id: str = "s1", game: str = "sevens", decisions: int = 10
) -> None:
    """What the workers add per match: counters and think/overhead histograms."""
    pipe = conn.pipeline()
    for i, bot in enumerate(BOTS):
        labels = {"season": season_id, "bot": bot, "game": game}
        metrics_store.incr_counter(pipe, "arena_decisions_total", labels, decisions)
        if i == 2:
            metrics_store.incr_counter(
                pipe, "arena_timeouts_total", {"season": season_id, "bot": bot}, 2
            )
        for d in range(decisions):
            metrics_store.observe(
                pipe, "arena_bot_think_seconds", {"game": game}, 0.002 * (d + 1) * (i + 1)
            )
            metrics_store.observe(pipe, "arena_platform_overhead_seconds", {"game": game}, 0.0004)
    metrics_store.incr_counter(pipe, "arena_matches_total", {"game": game, "kind": "committed"})
    pipe.execute()


def write_platform(conn: redis.Redis, *, connected: Sequence[str] = BOTS[:2]) -> None:
    """Registered bots, open streams, worker heartbeats and a queued job."""
    now_ms = int(time.time() * 1000)
    conn.sadd(keys.BOTS, *BOTS)
    for bot in connected:
        conn.hset(
            keys.bot_streams(bot),
            "stream-1",
            json.dumps({"referee": "r1", "since_ms": now_ms, "concurrency": 2}),
        )
    conn.hset(keys.WORKERS_ALIVE, mapping={"w1": now_ms, "w2": now_ms - 500, "old": 1000})
    conn.rpush("rq:queue:arena", "job-a", "job-b")


def write_league(conn: redis.Redis) -> None:
    write_platform(conn)
    write_season(conn)
    write_worker_metrics(conn)
