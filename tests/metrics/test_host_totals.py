"""A match host's per-decision metrics: one HSET of running totals a second, summed by readers.

A host writes its totals whole into its own hash (``keys.host_metrics``) instead of adding
each series and bucket to the shared hashes (one HINCRBY each: the largest time-based share of
a match's Redis commands). Readers
(``referee.metrics_store``) add every host's hash to the shared ones; a host that stops folds
its totals into the shared hashes in one transaction, and a host that reuses the name of a
killed one folds the dead one's totals first. These tests use a real Redis and the real
``MatchHost`` (RQ registration included).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from referee import keys
from referee.metrics_store import read_counters, read_stored
from workers.host import MatchHost
from workers.metrics import DECISIONS, THINK_SECONDS, HostMetrics


def _decisions(bots: list[str], games: list[str], each: int) -> HostMetrics:
    made = HostMetrics()
    for bot in bots:
        for game in games:
            for i in range(each):
                made.decision("s1", game, bot, think_s=0.004 * (i + 1), overhead_s=0.0007)
    return made


def _season_decisions(conn: redis.Redis) -> float:
    return sum(read_counters(conn).get(DECISIONS, {}).values())


def _think_count(conn: redis.Redis, game: str) -> float:
    histograms = read_stored(conn, (THINK_SECONDS,)).histograms.get(THINK_SECONDS, {})
    return histograms.get(f"game={game}", {}).get("count", 0.0)


def _commands(conn: redis.Redis) -> dict[str, int]:
    stats = conn.info("commandstats")
    return {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in stats.items()}


@pytest.fixture
def host(redis_url: str) -> Iterator[MatchHost]:
    made = MatchHost(redis_url, "host-a", "secret")
    made._birth()
    yield made
    for pool in (made.executor, made.beat_executor, made.dequeue_executor):
        pool.shutdown(wait=False)
    made.conn.close()


def test_a_tick_writes_the_totals_in_one_command_whatever_the_series(
    host: MatchHost, redis_client: redis.Redis
) -> None:
    """Eight decision series and two histograms of two games: the tick adds no HINCRBY, and
    its HSETs are two (the host's liveness and its totals), not one per series and bucket."""
    host.tick(host.conn, {}, HostMetrics())  # the first tick also beats for RQ
    before = _commands(redis_client)
    host.tick(host.conn, {}, _decisions(["a", "b", "c", "d"], ["sevens", "sedma"], 3))
    after = _commands(redis_client)
    assert after.get("hincrby", 0) == before.get("hincrby", 0)
    assert after.get("hincrbyfloat", 0) == before.get("hincrbyfloat", 0)
    assert after["hset"] - before.get("hset", 0) == 2
    assert _season_decisions(redis_client) == 24
    assert _think_count(redis_client, "sevens") == 12


def test_totals_are_absolute_so_ticks_never_count_twice(
    host: MatchHost, redis_client: redis.Redis
) -> None:
    host.tick(host.conn, {}, _decisions(["a", "b"], ["sevens"], 3))
    host.tick(host.conn, {}, HostMetrics())  # nothing new: the totals stay
    host.tick(host.conn, {}, _decisions(["a"], ["sevens"], 2))
    assert _season_decisions(redis_client) == 8
    think = read_stored(redis_client, (THINK_SECONDS,)).histograms[THINK_SECONDS]["game=sevens"]
    assert think["count"] == 8 and think["+Inf"] == 8
    assert think["0.005"] == 3  # 0.004 s of the first decision of each run: cumulative buckets
    assert think["sum"] == pytest.approx(0.004 * (1 + 2 + 3) * 2 + 0.004 * (1 + 2))


def test_a_stopping_host_folds_its_totals_into_the_shared_hashes_once(
    host: MatchHost, redis_client: redis.Redis
) -> None:
    redis_client.hincrbyfloat(keys.METRICS_COUNTERS, f"{DECISIONS}|bot=z,game=sevens,season=s1", 5)
    host.tick(host.conn, {}, _decisions(["a", "b"], ["sevens"], 3))
    host.metrics.decision("s1", "sevens", "a", 0.001, 0.0001)  # after the last tick
    before = read_stored(redis_client, (THINK_SECONDS,))
    assert _season_decisions(redis_client) == 5 + 6

    host._goodbye()

    assert not redis_client.exists(keys.host_metrics("host-a"))
    assert not redis_client.sismember(keys.METRICS_HOSTS, "host-a")
    assert _season_decisions(redis_client) == 5 + 6 + 1
    after = read_stored(redis_client, (THINK_SECONDS,))
    assert after.histograms[THINK_SECONDS]["game=sevens"]["count"] == (
        before.histograms[THINK_SECONDS]["game=sevens"]["count"] + 1
    )


def test_a_host_reusing_a_dead_hosts_name_keeps_the_dead_ones_totals(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """A killed host's hash stays and is summed; a new host of the same name (a fixed
    ARENA_WORKER_NAME) folds it at birth instead of overwriting it with its own totals."""
    dead = MatchHost(redis_url, "host-b", "secret")
    dead._birth()
    dead.tick(dead.conn, {}, _decisions(["a"], ["sevens"], 4))
    dead.worker.register_death()  # type: ignore[no-untyped-call]  # killed: no goodbye
    assert _season_decisions(redis_client) == 4  # still counted, from its own hash

    reborn = MatchHost(redis_url, "host-b", "secret")
    reborn._birth()
    assert _season_decisions(redis_client) == 4
    reborn.tick(reborn.conn, {}, _decisions(["a"], ["sevens"], 1))
    assert _season_decisions(redis_client) == 5
    assert _think_count(redis_client, "sevens") == 5
    for made in (dead, reborn):
        for pool in (made.executor, made.beat_executor, made.dequeue_executor):
            pool.shutdown(wait=False)
