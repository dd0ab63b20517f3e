"""Unit tests of the metrics collector against a real Redis and a fresh registry each time."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterator

import pytest
import redis
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from referee import bots, keys, metrics_store
from referee.metrics import ArenaCollector, make_registry
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from tests.metrics import league_data


def scrape(conn: redis.Redis) -> str:
    return generate_latest(make_registry(conn)).decode()


def samples(text: str) -> list[Sample]:
    return [s for family in text_string_to_metric_families(text) for s in family.samples]


def value(text: str, name: str, **labels: str) -> float:
    found = [s.value for s in samples(text) if s.name == name and s.labels == labels]
    assert len(found) == 1, f"{name}{labels}: {len(found)} samples in\n{text}"
    return found[0]


def names(text: str) -> set[str]:
    return {s.name for s in samples(text)}


@pytest.fixture
def conn(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    yield client
    client.close()


def test_standings_gauges_per_season_and_bot(conn: redis.Redis) -> None:
    league_data.write_league(conn)
    text = scrape(conn)
    assert value(text, "arena_standings_elo", season="s1", bot="alpha") == 1500.0
    assert value(text, "arena_standings_elo_lower", season="s1", bot="bravo") == 1350.0
    assert value(text, "arena_standings_elo_upper", season="s1", bot="bravo") == 1450.0
    assert value(text, "arena_standings_live_elo", season="s1", bot="charlie") == 1290.0
    assert value(text, "arena_standings_chips", season="s1", bot="alpha") == 10.0
    assert value(text, "arena_standings_deals_won", season="s1", bot="alpha") == 7.0
    assert value(text, "arena_standings_rank", season="s1", bot="charlie") == 3.0
    assert value(text, "arena_standings_average_place", season="s1", bot="bravo") == 2.0
    assert value(text, "arena_standings_openskill_ordinal", season="s1", bot="alpha") == 11.0
    # Penalties by kind (SV-18, SV-19 illegal passes; SV-21 invalid actions).
    assert value(text, "arena_standings_penalties", season="s1", bot="charlie", kind="timeout")
    assert (
        value(text, "arena_standings_penalties", season="s1", bot="charlie", kind="illegal_pass")
        == 2.0
    )
    assert (
        value(text, "arena_standings_penalties", season="s1", bot="bravo", kind="invalid_action")
        == 2.0
    )
    assert "arena_standings_penalty_points" not in names(text)


def test_score_metric_is_named_after_the_season_unit(conn: redis.Redis) -> None:
    league_data.write_season(conn, "pp", unit="penalty_points", game="sevens")
    league_data.write_season(conn, "sd", unit="match_points", game="sedma", bots=("x", "y"))
    text = scrape(conn)
    assert value(text, "arena_standings_penalty_points", season="pp", bot="alpha") == 10.0
    assert value(text, "arena_standings_match_points", season="sd", bot="y") == -10.0
    assert "arena_standings_chips" not in names(text)
    assert value(text, "arena_season_info", season="sd", game="sedma", kind="running") == 1.0


def test_season_progress_and_matches_by_state(conn: redis.Redis) -> None:
    league_data.write_season(
        conn,
        matches_total=4,
        matches_done=1,
        match_states={"m0": "done", "m1": "running", "m2": "queued"},
    )
    text = scrape(conn)
    assert value(text, "arena_season_progress_ratio", season="s1") == 0.25
    assert value(text, "arena_season_matches_scheduled", season="s1") == 4.0
    assert value(text, "arena_season_matches", season="s1", kind="running") == 1.0
    assert value(text, "arena_season_matches", season="s1", kind="done") == 1.0
    assert value(text, "arena_match_states", kind="queued") == 1.0
    # Scheduled but not yet enqueued (the season driver hands out a window at a time).
    conn.hset(keys.season_matches("s1"), "m3", "scheduled")
    text = scrape(conn)
    assert value(text, "arena_season_matches", season="s1", kind="scheduled") == 1.0
    assert value(text, "arena_match_states", kind="scheduled") == 1.0
    # Running matches come from the runners' heartbeat set (one-off matches too).
    conn.zadd(keys.MATCHES_RUNNING, {"m1": 1, "adhoc": 1})
    assert value(scrape(conn), "arena_matches_running") == 2.0


def test_finished_seasons_count_matches_from_their_counters(conn: redis.Redis) -> None:
    league_data.write_season(conn, "old", state="finished", matches_total=6, matches_done=5)
    conn.hset(keys.season("old"), "matches_failed", 1)
    league_data.write_season(conn, "gone", state="cancelled", matches_total=6, matches_done=2)
    # The per-match hash is not read for final seasons (it may be large, it cannot change).
    conn.hset(keys.season_matches("old"), "stray", "running")
    text = scrape(conn)
    assert value(text, "arena_season_matches", season="old", kind="done") == 5.0
    assert value(text, "arena_season_matches", season="old", kind="failed") == 1.0
    assert value(text, "arena_season_matches", season="gone", kind="cancelled") == 4.0
    assert value(text, "arena_match_states", kind="done") == 7.0
    assert "running" not in {s.labels.get("kind") for s in samples(text)}


def test_operations_gauges(conn: redis.Redis) -> None:
    league_data.write_platform(conn)
    text = scrape(conn)
    assert value(text, "arena_bots_registered") == 3.0
    assert value(text, "arena_bots_connected") == 2.0
    assert value(text, "arena_bot_streams", bot="charlie") == 0.0
    assert value(text, "arena_workers_alive") == 2.0  # "old" last beat at 1970
    assert value(text, "arena_queue_jobs", kind="queued") == 2.0
    assert value(text, "arena_queue_jobs", kind="started") == 0.0
    assert value(text, "arena_redis_up") == 1.0


def test_worker_counters_pass_through_and_zero_series_for_season_bots(
    conn: redis.Redis,
) -> None:
    league_data.write_league(conn)
    text = scrape(conn)
    assert value(text, "arena_decisions_total", season="s1", bot="bravo", game="sevens") == 10.0
    assert value(text, "arena_timeouts_total", season="s1", bot="charlie") == 2.0
    # Bots of the season's standings get zero series, so rate() works from the start.
    assert value(text, "arena_timeouts_total", season="s1", bot="alpha") == 0.0
    assert value(text, "arena_illegal_passes_total", season="s1", bot="alpha") == 0.0
    assert value(text, "arena_matches_total", game="sevens", kind="committed") == 1.0
    assert value(text, "arena_matches_total", game="sevens", kind="failed") == 0.0
    assert "# TYPE arena_decisions_total counter" in text


def test_a_created_season_has_zero_series_for_its_bots_before_any_result(
    conn: redis.Redis,
) -> None:
    # A counter first scraped mid-season loses the increase before its first sample, so the
    # zero series must exist from creation (from the spec), not from the first standings.
    for bot in ("ann", "ben", "cy"):
        bots.register(conn, bot)
    spec = SeasonSpec(
        name="fresh",
        game="sevens",
        preset="sevens",
        bots=("ann", "ben", "cy"),
        table_size=3,
        deals_per_match=1,
    )
    store.create_season(conn, spec)
    assert conn.get(keys.season_standings("fresh")) is None
    text = scrape(conn)
    for bot in ("ann", "ben", "cy"):
        assert value(text, "arena_decisions_total", season="fresh", bot=bot, game="sevens") == 0
        assert value(text, "arena_timeouts_total", season="fresh", bot=bot) == 0.0
        assert value(text, "arena_fallbacks_total", season="fresh", bot=bot) == 0.0


def test_histograms_are_cumulative_with_count_and_sum(conn: redis.Redis) -> None:
    league_data.write_worker_metrics(conn, decisions=10)
    text = scrape(conn)
    count = value(text, "arena_bot_think_seconds_count", game="sevens")
    assert count == 30.0
    assert value(text, "arena_bot_think_seconds_bucket", game="sevens", le="+Inf") == count
    # 2 ms steps for bot 1, 4 ms for bot 2, 6 ms for bot 3: <= 10 ms are 5 + 2 + 1 values.
    assert value(text, "arena_bot_think_seconds_bucket", game="sevens", le="0.01") == 8.0
    assert value(text, "arena_bot_think_seconds_bucket", game="sevens", le="0.001") == 0.0
    expected_sum = sum(0.002 * (d + 1) * (i + 1) for i in range(3) for d in range(10))
    assert value(text, "arena_bot_think_seconds_sum", game="sevens") == pytest.approx(expected_sum)
    buckets = [
        s
        for s in samples(text)
        if s.name == "arena_platform_overhead_seconds_bucket" and s.labels["game"] == "sevens"
    ]
    values = [s.value for s in buckets]
    assert values == sorted(values), "cumulative bucket counts must never fall"


def test_union_of_bounds_gives_every_label_set_the_same_buckets(conn: redis.Redis) -> None:
    metrics_store.observe(conn, "arena_bot_think_seconds", {"game": "sevens"}, 0.0001)
    metrics_store.observe(conn, "arena_bot_think_seconds", {"game": "sedma"}, 7.0)
    text = scrape(conn)
    les = {
        g: sorted(
            s.labels["le"]
            for s in samples(text)
            if s.name == "arena_bot_think_seconds_bucket" and s.labels["game"] == g
        )
        for g in ("sevens", "sedma")
    }
    assert les["sevens"] == les["sedma"]
    assert value(text, "arena_bot_think_seconds_bucket", game="sedma", le="5.0") == 0.0
    assert value(text, "arena_bot_think_seconds_bucket", game="sevens", le="0.0005") == 1.0


def test_junk_histogram_fields_do_not_break_the_scrape(conn: redis.Redis) -> None:
    metrics_store.observe(conn, "arena_bot_think_seconds", {"game": "sevens"}, 0.02)
    conn.hset(keys.metrics_histogram("arena_bot_think_seconds"), "game=sevens|oops", 3)
    text = scrape(conn)
    assert value(text, "arena_bot_think_seconds_count", game="sevens") == 1.0
    assert value(text, "arena_bot_think_seconds_bucket", game="sevens", le="0.025") == 1.0


def test_only_allowed_labels_and_no_match_ids(conn: redis.Redis) -> None:
    league_data.write_league(conn)
    # A stray counter with a match id label must not reach Prometheus.
    conn.hincrbyfloat(keys.METRICS_COUNTERS, "arena_decisions_total|match=m1", 1)
    conn.hincrbyfloat(keys.METRICS_COUNTERS, "not a name|bot=x", 1)
    text = scrape(conn)
    for sample in samples(text):
        assert sample.name.startswith("arena_"), sample
        assert set(sample.labels) - {"le"} <= metrics_store.ALLOWED_LABELS, sample
        assert "s1-m" not in str(sample.labels), sample


def test_scrapes_read_redis_each_time(conn: redis.Redis) -> None:
    registry = make_registry(conn)
    assert "arena_standings_elo" not in generate_latest(registry).decode()
    league_data.write_season(conn)
    assert "arena_standings_elo" in generate_latest(registry).decode()
    conn.delete(keys.season_standings("s1"))
    assert "arena_standings_elo" not in generate_latest(registry).decode()


def test_malformed_standings_and_values_are_skipped(conn: redis.Redis) -> None:
    league_data.write_season(conn, "good")
    league_data.write_season(conn, "bad")
    conn.set(keys.season_standings("bad"), "{not json")
    league_data.write_season(
        conn, "odd", rows=[league_data.standings_row("alpha", 1, elo="NaN", score=None), {}]
    )
    text = scrape(conn)
    assert value(text, "arena_standings_elo", season="good", bot="alpha") == 1500.0
    assert not [
        s for s in samples(text) if s.labels.get("season") == "bad" and "standings" in s.name
    ]
    odd = {s.name for s in samples(text) if s.labels.get("season") == "odd"}
    assert "arena_standings_elo" not in odd and "arena_standings_chips" not in odd
    assert "arena_standings_elo_lower" in odd


def test_redis_down_reports_redis_up_zero() -> None:
    # A port nobody listens on: the scrape still answers, with arena_redis_up 0.
    from referee.embedded_redis import free_port

    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.2)
    registry = make_registry(dead)
    text = generate_latest(registry).decode()
    assert value(text, "arena_redis_up") == 0.0
    assert "arena_standings_elo" not in text
    dead.close()


def test_collector_describes_nothing_so_registration_does_not_touch_redis() -> None:
    class Exploding(redis.Redis):
        def execute_command(self, *args: object, **options: object) -> object:
            raise AssertionError("Redis was called at registration")

    assert list(ArenaCollector(Exploding()).describe()) == []
    make_registry(Exploding())


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool is not installed")
def test_promtool_check_metrics_is_clean(conn: redis.Redis) -> None:
    league_data.write_league(conn)
    league_data.write_season(conn, "pp", unit="penalty_points")
    text = scrape(conn)
    done = subprocess.run(
        ["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30
    )
    assert done.returncode == 0 and not done.stdout.strip() and not done.stderr.strip(), (
        done.stdout.decode() + done.stderr.decode()
    )


def test_works_with_a_decoding_client_too(conn: redis.Redis, redis_client: redis.Redis) -> None:
    league_data.write_league(conn)

    def stable(text: str) -> set[tuple[str, str, float]]:
        return {
            (s.name, str(sorted(s.labels.items())), s.value)
            for s in samples(text)
            if s.name != "arena_collector_duration_seconds"
        }

    decoded, raw = stable(scrape(redis_client)), stable(scrape(conn))
    assert decoded == raw and len(raw) > 100


def test_a_season_hash_with_no_state_or_an_unknown_one_is_skipped(
    conn: redis.Redis, caplog: pytest.LogCaptureFixture
) -> None:
    league_data.write_season(conn, "fine")
    league_data.write_season(conn, "odd", state="archiving")
    league_data.write_season(conn, "bare")
    conn.hdel(keys.season("bare"), "state")
    with caplog.at_level(logging.WARNING, logger="referee.metrics"):
        text = scrape(conn)
    seasons = {s.labels["season"] for s in samples(text) if s.name == "arena_season_info"}
    assert seasons == {"fine"}
    logged = " ".join(r.getMessage() for r in caplog.records)
    assert "odd" in logged and "bare" in logged and "skipped" in logged
