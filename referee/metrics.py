"""The referee's Prometheus collector: everything is read from Redis at scrape time.

Every referee must serve the same numbers, and the match hosts are other processes (often
on other machines), so the numbers live in Redis (docs/metrics.md): each host keeps its
per-decision totals in memory and writes them whole into a hash of its own once a second,
commits add their counters to shared hashes (:mod:`referee.metrics_store`); the seasons
write standings JSON; the gateway records open bot streams. :class:`ArenaCollector`
reads all of that on every scrape and keeps nothing between scrapes except a Redis client.

Names follow Prometheus practice: ``arena_`` prefix, base units (seconds, ratios), ``_total``
only on counters. Labels are ``season``, ``bot``, ``game`` and ``kind`` only, never a match id.
Where a metric is a set of states, ``kind`` names the state (``arena_season_matches{kind=
"running"}``, ``arena_queue_jobs{kind="queued"}``).

Metrics (see ``docs/metrics.md`` for the full table):

* standings, per season and bot: ``arena_standings_elo`` with ``_elo_lower``/``_elo_upper``
  (95% interval), ``_live_elo``, ``_rank``, ``_matches``, ``_deals``, ``_deals_won``,
  ``_average_place``, the score in the season's unit (``_chips``, ``_penalty_points`` or
  ``_match_points``), ``_penalties{kind}``, ``_openskill_mu``/``_sigma``/``_ordinal``;
* seasons: ``arena_season_info{season,game,kind=state}``, ``arena_season_matches{kind}``,
  ``arena_season_matches_scheduled``, ``arena_season_progress_ratio``;
* operations: ``arena_match_states{kind}``, ``arena_matches_running``, ``arena_bots_registered``,
  ``arena_bots_connected``, ``arena_bot_streams{bot}``, ``arena_workers_alive``,
  ``arena_queue_jobs{kind}``, ``arena_redis_up``, ``arena_collector_duration_seconds``,
  and every counter and histogram the workers wrote (``arena_decisions_total``,
  ``arena_bot_think_seconds``, ...).
"""

from __future__ import annotations

import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import redis
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector, CollectorRegistry

from referee import keys, metrics_store
from referee.defaults import QUEUE_NAME
from referee.match.season_row import BadSeasonRow, SeasonRow, Standings
from referee.queue import RunningMatches

log = logging.getLogger(__name__)


WORKER_STALE_S = 60.0
"""A worker whose last heartbeat is older than this is not counted as alive."""

FINAL_SEASON_STATES = frozenset({"finished", "cancelled"})
"""Season states after which nothing changes (``referee.seasons.store``)."""

_METRIC_NAME = re.compile(r"^arena_[a-z0-9_]+$")

# Counters the workers write, with their help text and the labels that a bot in a season's
# standings gets initialised with (a zero series lets rate() and increase() work from the
# first failure on, and lets dashboards show "0" rather than "no data").
COUNTER_HELP: dict[str, str] = {
    "arena_hosted_bot_events_total": (
        "What happened to hosted bots' sandboxes (by bot and kind: started, exited, "
        "oom_kill, pids_limit, disk_limit, cpu_limit, crash_loop, start_failed)."
    ),
    "arena_decisions_total": "Decisions asked of bots (by season, bot and game).",
    "arena_timeouts_total": "Decisions a bot did not answer in time (docs/workers.md).",
    "arena_invalid_actions_total": "Actions refused as not held, not legal or malformed (SV-21).",
    "arena_illegal_passes_total": "Passes made while able to play (SV-18, SV-19).",
    "arena_autopilot_seats_total": "Seats the autopilot took over after the strikes ran out.",
    "arena_fallbacks_total": (
        "Answers a bot's SDK or stdio bridge sent for it because the bot's code failed "
        "(Action.fallback)."
    ),
    "arena_matches_total": "Match jobs that ended, by game and kind (committed/failed/retried).",
    "arena_bot_floods_total": "Bot streams a referee ended for flooding it (by bot).",
    "arena_hosted_builds_total": "Builds of hosted bots' versions, by bot and kind (ok/failed).",
}
_PER_BOT_COUNTERS = (
    "arena_timeouts_total",
    "arena_invalid_actions_total",
    "arena_illegal_passes_total",
    "arena_autopilot_seats_total",
    "arena_fallbacks_total",
)
MATCH_OUTCOMES = ("committed", "failed", "retried")

HISTOGRAM_HELP: dict[str, str] = {
    "arena_bot_think_seconds": "Time a decision request spent in the bot's hands.",
    "arena_platform_overhead_seconds": "Per-decision time spent in the platform, not the bot.",
}

# Standings row field -> (metric suffix, help). The score field gets its name from the unit.
_ROW_GAUGES: tuple[tuple[str, str, str], ...] = (
    ("elo", "elo", "Elo rating (Bradley-Terry fit of deal finishing orders, mean 1500)."),
    ("elo_low", "elo_lower", "Lower bound of the Elo rating's 95% confidence interval."),
    ("elo_high", "elo_upper", "Upper bound of the Elo rating's 95% confidence interval."),
    ("live_elo", "live_elo", "Incremental Elo, updated in the order results arrived."),
    ("rank", "rank", "Place in the season's standings (1 is best)."),
    ("matches", "matches", "Matches played in the season."),
    ("deals", "deals", "Deals played in the season."),
    ("deals_won", "deals_won", "Deals won in the season."),
    ("avg_place", "average_place", "Average finishing place per deal (1 is best)."),
    ("openskill_mu", "openskill_mu", "OpenSkill (Plackett-Luce) mean skill."),
    ("openskill_sigma", "openskill_sigma", "OpenSkill (Plackett-Luce) skill uncertainty."),
    ("openskill_ordinal", "openskill_ordinal", "OpenSkill ordinal (mu - 3 sigma)."),
)
SCORE_UNITS: dict[str, str] = {
    "chips": "Net chips won in the season (chip games sum to zero, SV-31).",
    "penalty_points": "Penalty points in the season (lower is better).",
    "match_points": "Match points in the season (Sedma).",
}
# Standings row field -> penalty kind.
PENALTY_FIELDS: dict[str, str] = {
    "illegal_passes": "illegal_pass",
    "invalid_actions": "invalid_action",
    "timeouts": "timeout",
    "autopilot_seats": "autopilot_seat",
    "fallbacks": "fallback",
}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _number(value: Any) -> float | None:
    """A finite float, or None for missing or malformed values."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(_text(value)) if isinstance(value, (str, bytes)) else float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


@dataclass(slots=True)
class _Season:
    """A season as one scrape reads it: its row, its standings, its matches by state."""

    row: SeasonRow
    standings: Standings | None
    match_counts: dict[str, int] = field(default_factory=dict)


@dataclass
class _Families:
    """Gauge families of one scrape, created on first use so that empty ones are not sent."""

    gauges: dict[str, GaugeMetricFamily] = field(default_factory=dict)

    def gauge(self, name: str, help_text: str, labels: Mapping[str, str], value: float) -> None:
        family = self.gauges.get(name)
        if family is None:
            family = self.gauges[name] = GaugeMetricFamily(name, help_text, labels=list(labels))
        family.add_metric(list(labels.values()), value)


class ArenaCollector(Collector):
    """Reads the league's state from Redis on every ``collect()``.

    ``conn`` is a synchronous Redis client (thread safe; the web server calls ``collect``
    from a worker thread). If Redis cannot be reached the scrape still succeeds with
    ``arena_redis_up 0`` and nothing else, so the alert is on the data, not a failed scrape.
    """

    def __init__(
        self,
        conn: redis.Redis,
        *,
        queue_name: str = QUEUE_NAME,
        worker_stale_s: float = WORKER_STALE_S,
        clock_ms: Callable[[], float] | None = None,
    ) -> None:
        self._conn = conn
        self._queue_name = queue_name
        self._worker_stale_s = worker_stale_s
        self._clock_ms = clock_ms or (lambda: time.time() * 1000.0)

    def describe(self) -> Iterable[Metric]:
        # No fixed set of metrics: returning nothing keeps registration from calling
        # collect() (and Redis) at registration time.
        return []

    def collect(self) -> Iterator[Metric]:
        started = time.perf_counter()
        try:
            metrics = list(self._collect_all())
            up = 1.0
        except redis.RedisError as exc:
            log.warning("metrics scrape could not read Redis: %s", exc)
            metrics, up = [], 0.0
        yield from metrics
        yield GaugeMetricFamily(
            "arena_redis_up", "1 if the collector could read Redis at this scrape.", value=up
        )
        yield GaugeMetricFamily(
            "arena_collector_duration_seconds",
            "Time this scrape spent reading Redis.",
            value=time.perf_counter() - started,
        )

    # --- the parts -------------------------------------------------------------------------

    def _collect_all(self) -> Iterator[Metric]:
        fam = _Families()
        seasons = self._seasons()
        zero_counters: dict[str, set[tuple[tuple[str, str], ...]]] = {}
        for season_id, info in seasons.items():
            self._season_metrics(fam, season_id, info, zero_counters)
        self._all_match_metrics(fam, seasons)
        self._bot_metrics(fam)
        self._worker_metrics(fam)
        self._queue_metrics(fam)
        yield from fam.gauges.values()
        yield from self._counters(zero_counters)
        yield from self._histograms()

    def _seasons(self) -> dict[str, _Season]:
        """Every readable season by id: its row, standings and match counts. A hash with no
        state or an unknown one (:class:`BadSeasonRow`) is skipped with a log line.

        Match states of a season in progress come from its ``season_matches`` hash (the
        workers update it in the same transaction as the match's own state hash); a
        finished or cancelled season's come from its counters, so old seasons cost two reads
        per scrape however many matches they had.
        """
        ids = [_text(s) for s in self._conn.zrange(keys.SEASONS, 0, -1)]
        if not ids:
            return {}
        pipe = self._conn.pipeline(transaction=False)
        for season_id in ids:
            pipe.hgetall(keys.season(season_id))
            pipe.get(keys.season_standings(season_id))
        replies = pipe.execute()
        out: dict[str, _Season] = {}
        for i, season_id in enumerate(ids):
            raw_hash, raw_standings = replies[2 * i : 2 * i + 2]
            if not raw_hash:
                continue  # being deleted
            try:
                row = SeasonRow.parse(season_id, raw_hash)
            except (BadSeasonRow, ValueError) as exc:
                log.warning("season %s skipped: %s", season_id, exc)
                continue
            standings: Standings | None = None
            if raw_standings:
                try:
                    loaded = json.loads(raw_standings)
                    standings = cast(Standings, loaded) if isinstance(loaded, dict) else None
                except ValueError:
                    log.warning("standings of season %s are not JSON; skipped", season_id)
            out[season_id] = _Season(row, standings)
        live = [s for s in out if out[s].row.state not in FINAL_SEASON_STATES]
        pipe = self._conn.pipeline(transaction=False)
        for season_id in live:
            pipe.hvals(keys.season_matches(season_id))
        for season_id, states in zip(live, pipe.execute() if live else [], strict=True):
            counts: dict[str, int] = {}
            for raw in states:
                state = _text(raw) or "scheduled"
                counts[state] = counts.get(state, 0) + 1
            out[season_id].match_counts = counts
        for info in out.values():
            if info.row.state in FINAL_SEASON_STATES:
                info.match_counts = _final_counts(info.row)
        return out

    def _season_metrics(
        self,
        fam: _Families,
        season_id: str,
        info: _Season,
        zero_counters: dict[str, set[tuple[tuple[str, str], ...]]],
    ) -> None:
        row = info.row
        standings: Mapping[str, Any] | None = info.standings
        game = row.game or (standings or {}).get("game") or ""
        state = str(row.state)
        labels = {"season": season_id}
        fam.gauge(
            "arena_season_info",
            "Always 1: the season's game, and its state in kind.",
            {"season": season_id, "game": str(game), "kind": state},
            1.0,
        )
        total = float(row.matches_total)
        done = float(row.matches_done)
        fam.gauge(
            "arena_season_matches_scheduled",
            "Matches the season's schedule holds.",
            labels,
            total,
        )
        if total > 0:
            fam.gauge(
                "arena_season_progress_ratio",
                "Share of the season's matches that are done (0 to 1).",
                labels,
                min(1.0, done / total),
            )
        for match_state, count in sorted(info.match_counts.items()):
            fam.gauge(
                "arena_season_matches",
                "The season's matches by state (kind): scheduled, queued, running, done...",
                {"season": season_id, "kind": match_state},
                float(count),
            )
        if game:
            for outcome in MATCH_OUTCOMES:
                zero_counters.setdefault("arena_matches_total", set()).add(
                    (("game", str(game)), ("kind", outcome))
                )
        for bot in _season_bots(row):
            _add_bot_zero_counters(zero_counters, season_id, bot, str(game))
        if standings is None:
            return
        unit = str(standings.get("unit", ""))
        rows = standings.get("rows")
        if not isinstance(rows, list):
            return
        for row in rows:
            if not isinstance(row, dict) or not row.get("bot"):
                continue
            bot = str(row["bot"])
            row_labels = {"season": season_id, "bot": bot}
            for row_field, suffix, help_text in _ROW_GAUGES:
                value = _number(row.get(row_field))
                if value is not None:
                    fam.gauge(f"arena_standings_{suffix}", help_text, row_labels, value)
            score = _number(row.get("score"))
            if score is not None and unit in SCORE_UNITS:
                fam.gauge(f"arena_standings_{unit}", SCORE_UNITS[unit], row_labels, score)
            for row_field, kind in PENALTY_FIELDS.items():
                value = _number(row.get(row_field))
                if value is not None:
                    fam.gauge(
                        "arena_standings_penalties",
                        "Penalties in the season's standings, by kind.",
                        {"season": season_id, "bot": bot, "kind": kind},
                        value,
                    )
            _add_bot_zero_counters(zero_counters, season_id, bot, str(game))

    def _all_match_metrics(self, fam: _Families, seasons: Mapping[str, _Season]) -> None:
        """Matches of every season by state, and every running match (one-off ones too)."""
        counts: dict[str, int] = {}
        for info in seasons.values():
            for match_state, count in info.match_counts.items():
                counts[match_state] = counts.get(match_state, 0) + count
        for match_state, count in sorted(counts.items()):
            fam.gauge(
                "arena_match_states",
                "Matches of every season by state (kind): scheduled, queued, running, done...",
                {"kind": match_state},
                float(count),
            )
        fam.gauge(
            "arena_matches_running",
            "Matches a worker is running now (seasons and one-off matches).",
            {},
            float(RunningMatches(self._conn).count()),
        )

    def _bot_metrics(self, fam: _Families) -> None:
        bots = sorted(_text(b) for b in self._conn.smembers(keys.BOTS))
        fam.gauge("arena_bots_registered", "Bots registered with the league.", {}, len(bots))
        pipe = self._conn.pipeline(transaction=False)
        for bot in bots:
            pipe.hlen(keys.bot_streams(bot))
        connected = 0
        for bot, streams in zip(bots, pipe.execute() if bots else [], strict=True):
            fam.gauge(
                "arena_bot_streams", "Open Play streams of a bot.", {"bot": bot}, float(streams)
            )
            connected += 1 if streams else 0
        fam.gauge("arena_bots_connected", "Bots with at least one open Play stream.", {}, connected)

    def _worker_metrics(self, fam: _Families) -> None:
        now_ms = float(self._clock_ms())
        beats = self._conn.hvals(keys.WORKERS_ALIVE)
        alive = sum(
            1
            for beat in beats
            if (ms := _number(beat)) is not None and now_ms - ms <= self._worker_stale_s * 1000
        )
        fam.gauge(
            "arena_workers_alive",
            f"Workers whose last heartbeat is at most {self._worker_stale_s:g} s old.",
            {},
            float(alive),
        )

    def _queue_metrics(self, fam: _Families) -> None:
        name = self._queue_name
        # RQ's key layout (rq 2 and 3): a list of queued job ids, sorted sets for registries.
        pipe = self._conn.pipeline(transaction=False)
        pipe.llen(f"rq:queue:{name}")
        registries = ("started", "scheduled", "deferred", "failed")
        registry_keys = (f"rq:wip:{name}", f"rq:scheduled:{name}", f"rq:deferred:{name}")
        for key in (*registry_keys, f"rq:failed:{name}"):
            pipe.zcard(key)
        replies = pipe.execute(raise_on_error=False)
        help_text = "Jobs of the match queue by kind: queued, started, scheduled, deferred, failed."
        for kind, reply in zip(("queued", *registries), replies, strict=True):
            if isinstance(reply, Exception):  # a key of an unexpected type: skip, don't fail
                log.warning("queue metric %s: %s", kind, reply)
                continue
            fam.gauge("arena_queue_jobs", help_text, {"kind": kind}, float(reply))

    def _counters(
        self, zero_counters: Mapping[str, set[tuple[tuple[str, str], ...]]]
    ) -> Iterator[Metric]:
        stored = metrics_store.read_counters(self._conn)
        names = sorted(set(stored) | set(zero_counters))
        for name in names:
            if not _METRIC_NAME.match(name):
                log.warning("counter %r in Redis is not an arena_ metric name; skipped", name)
                continue
            series: dict[tuple[tuple[str, str], ...], float] = {
                labels: 0.0 for labels in zero_counters.get(name, ())
            }
            for label_text, value in stored.get(name, {}).items():
                labels = tuple(sorted(metrics_store.parse_labels(label_text).items()))
                if not {k for k, _ in labels} <= metrics_store.ALLOWED_LABELS:
                    log.warning("counter %s has labels outside the allowed set; skipped", name)
                    continue
                series[labels] = series.get(labels, 0.0) + value
            yield _counter_family(name, series)

    def _histograms(self) -> Iterator[Metric]:
        prefix = keys.metrics_histogram("")
        shared = sorted(
            _text(key)[len(prefix) :]
            for key in self._conn.scan_iter(match=prefix + "*", count=1000)
        )
        stored = metrics_store.read_stored(self._conn, shared).histograms
        for name in sorted(stored):
            if not _METRIC_NAME.match(name):
                log.warning("histogram %r in Redis is not an arena_ metric name; skipped", name)
                continue
            family = _histogram_family(name, stored[name])
            if family is not None:
                yield family


def _season_bots(row: SeasonRow) -> list[str]:
    """The bots of a season's stored spec: known from creation, before any result."""
    try:
        spec = json.loads(row.spec or "{}")
    except ValueError:
        return []
    bots = spec.get("bots") if isinstance(spec, dict) else None
    return [b for b in bots if isinstance(b, str) and b] if isinstance(bots, list) else []


def _add_bot_zero_counters(
    zero_counters: dict[str, set[tuple[tuple[str, str], ...]]],
    season_id: str,
    bot: str,
    game: str,
) -> None:
    """A zero series for each per-bot counter, so that ``rate()`` and ``increase()`` count a
    bot's first decisions: a counter first scraped mid-season loses what came before."""
    for name in _PER_BOT_COUNTERS:
        zero_counters.setdefault(name, set()).add((("bot", bot), ("season", season_id)))
    if game:
        zero_counters.setdefault("arena_decisions_total", set()).add(
            (("bot", bot), ("game", game), ("season", season_id))
        )


def _final_counts(row: SeasonRow) -> dict[str, int]:
    """Match states of a finished or cancelled season, from its counters."""
    counts = {"done": row.matches_done, "failed": row.matches_failed}
    rest = row.matches_total - row.settled
    if rest > 0:  # a cancelled season's matches that never ran
        counts[str(row.state)] = rest
    return counts


def _counter_family(name: str, series: Mapping[tuple[tuple[str, str], ...], float]) -> Metric:
    label_names = sorted({k for labels in series for k, _ in labels})
    family = CounterMetricFamily(
        name, COUNTER_HELP.get(name, f"Counter {name} written by the workers."), labels=label_names
    )
    for labels, value in sorted(series.items()):
        as_dict = dict(labels)
        family.add_metric([as_dict.get(k, "") for k in label_names], value)
    return family


def _bound(part: str) -> float | None:
    """The bucket bound of a histogram hash field part (None for sum, count, +Inf, junk)."""
    if part in ("sum", "count", "+Inf"):
        return None
    bound = _number(part)
    if bound is None:
        log.warning("histogram field part %r is not a bucket bound; ignored", part)
    return bound


def _histogram_family(name: str, stored: Mapping[str, Mapping[str, float]]) -> Metric | None:
    """Cumulative buckets as stored by ``metrics_store.observe``.

    ``observe`` writes a bucket field only once an observation falls at or below its bound,
    so a missing bound means a zero count. Every label set gets the same bounds: the default
    layout when every bound seen belongs to it, else the union of the bounds seen.
    """
    bounds = sorted(
        {
            bound
            for parts in stored.values()
            for part in parts
            if (bound := _bound(part)) is not None
        }
    )
    if set(bounds) <= set(metrics_store.DEFAULT_BUCKETS_S):
        # Written with the default layout: a default bound nobody reached still gets a 0
        # bucket, so the bucket set does not change from one scrape to the next.
        bounds = sorted(metrics_store.DEFAULT_BUCKETS_S)
    label_sets: list[tuple[dict[str, str], Mapping[str, float]]] = []
    for label_text, parts in sorted(stored.items()):
        labels = metrics_store.parse_labels(label_text)
        if not set(labels) <= metrics_store.ALLOWED_LABELS:
            log.warning("histogram %s has labels outside the allowed set; skipped", name)
            continue
        label_sets.append((labels, parts))
    if not label_sets:
        return None
    label_names = sorted({k for labels, _ in label_sets for k in labels})
    base = name.removesuffix("_seconds")
    help_text = HISTOGRAM_HELP.get(name, f"Histogram {name} ({base}) written by the workers.")
    family = HistogramMetricFamily(name, help_text, labels=label_names)
    for labels, parts in label_sets:
        by_bound = {b: v for k, v in parts.items() if (b := _bound(k)) is not None}
        total = parts.get("+Inf", parts.get("count", 0.0))
        buckets: list[tuple[str, float]] = []
        running = 0.0
        for bound in bounds:
            # Cumulative counts never fall; max() guards against a torn read.
            running = min(total, max(running, by_bound.get(bound, 0.0)))
            buckets.append((repr(bound), running))
        buckets.append(("+Inf", total))
        family.add_metric(
            [labels.get(k, "") for k in label_names], buckets, sum_value=parts.get("sum", 0.0)
        )
    return family


def make_registry(conn: redis.Redis, **options: Any) -> CollectorRegistry:
    """A fresh registry holding only an :class:`ArenaCollector` over ``conn``."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ArenaCollector(conn, **options))
    return registry
