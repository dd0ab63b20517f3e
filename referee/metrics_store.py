"""Counters and histograms kept in Redis, so that every referee serves the same numbers.

Two places hold them, and a reader sums both:

* the shared hashes (``keys.METRICS_COUNTERS``, ``keys.metrics_histogram``), to which
  commits and one-off writers *add* (HINCRBY inside their own pipelines);
* one hash per match host (``keys.host_metrics``, listed in ``keys.METRICS_HOSTS``) holding
  that host's running totals of its per-decision metrics, written whole, as absolute values,
  in one HSET a second: a flush costs one command however many series changed (adding them
  cost one command per series and bucket, the largest time-based share of a match's Redis
  commands), and a flush that failed is simply written again by the next one. A host that
  stops cleanly folds its totals into the shared hashes and deletes its own in one
  transaction; a killed host's hash stays (its totals are final) and is still summed.

The referee's collector reads them at scrape time. Labels are a small sorted mapping; only
``season``, ``bot``, ``game`` and ``kind`` are allowed (never a match id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from referee import keys

ALLOWED_LABELS = frozenset({"season", "bot", "game", "kind"})

DEFAULT_BUCKETS_S: tuple[float, ...] = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip


def label_text(labels: Mapping[str, str]) -> str:
    """``{"bot": "a", "game": "sevens"}`` → ``bot=a,game=sevens`` (sorted; validated)."""
    bad = set(labels) - ALLOWED_LABELS
    if bad:
        raise ValueError(
            f"metric labels {sorted(bad)} are not allowed: use {sorted(ALLOWED_LABELS)}"
        )
    return ",".join(f"{k}={labels[k]}" for k in sorted(labels))


def parse_labels(text: str) -> dict[str, str]:
    if not text:
        return {}
    return dict(part.split("=", 1) for part in text.split(","))


def incr_counter(pipe: Any, name: str, labels: Mapping[str, str], amount: float = 1) -> None:
    """Add ``amount`` to counter ``name`` (a redis client or pipeline)."""
    pipe.hincrbyfloat(keys.METRICS_COUNTERS, f"{name}|{label_text(labels)}", amount)


MATCHES = "arena_matches_total"
"""``{game,kind}``: kind is ``committed``, ``failed`` or ``retried`` (the queue and the
hosts count them)."""


def match_counter(pipe: Any, game: str, kind: str) -> None:
    """``arena_matches_total{game,kind}`` += 1 (kind: committed, failed, retried)."""
    incr_counter(pipe, MATCHES, {"game": game, "kind": kind})


def observe(
    pipe: Any,
    name: str,
    labels: Mapping[str, str],
    value: float,
    buckets: Sequence[float] = DEFAULT_BUCKETS_S,
) -> None:
    """Record one observation of histogram ``name`` (cumulative buckets, like Prometheus)."""
    key = keys.metrics_histogram(name)
    lt = label_text(labels)
    for bound in buckets:
        if value <= bound:
            pipe.hincrby(key, f"{lt}|{bound!r}", 1)
    pipe.hincrby(key, f"{lt}|+Inf", 1)
    pipe.hincrbyfloat(key, f"{lt}|sum", value)
    pipe.hincrby(key, f"{lt}|count", 1)


COUNTER_FIELD = "c|"
HISTOGRAM_FIELD = "h|"
"""Prefixes of the fields of a host's totals hash: ``c|name|labels`` (a counter) and
``h|name|labels|part`` (``part`` a bucket bound, ``+Inf``, ``sum`` or ``count``)."""


@dataclass
class Stored:
    """Every stored metric at one moment: counters ``{name: {labels: value}}`` and
    histograms ``{name: {labels: {part: value}}}``, the shared hashes and every host's
    totals summed."""

    counters: dict[str, dict[str, float]] = field(default_factory=dict)
    histograms: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    def add_counter(self, name: str, labels: str, value: float) -> None:
        series = self.counters.setdefault(name, {})
        series[labels] = series.get(labels, 0.0) + value

    def add_histogram(self, name: str, labels: str, part: str, value: float) -> None:
        parts = self.histograms.setdefault(name, {}).setdefault(labels, {})
        parts[part] = parts.get(part, 0.0) + value

    def add_host(self, totals: Mapping[Any, Any]) -> None:
        """Add one host's totals hash (``keys.host_metrics``)."""
        for raw, value in totals.items():
            text = _text(raw)
            if text.startswith(COUNTER_FIELD):
                name, _, labels = text[len(COUNTER_FIELD) :].partition("|")
                self.add_counter(name, labels, float(value))
            elif text.startswith(HISTOGRAM_FIELD):
                name, _, rest = text[len(HISTOGRAM_FIELD) :].partition("|")
                labels, _, part = rest.rpartition("|")
                self.add_histogram(name, labels, part, float(value))


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_stored(conn: Any, histograms: Sequence[str] = ()) -> Stored:
    """The counters and the named histograms, shared and per host, read in one consistent
    snapshot: a host that folds its totals into the shared hashes meanwhile (a change of
    ``keys.METRICS_HOSTS``) makes the read start again, so nothing is counted twice or
    missed."""
    while True:
        with conn.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(keys.METRICS_HOSTS)
                hosts = pipe.smembers(keys.METRICS_HOSTS)
                pipe.multi()
                _queue_reads(pipe, histograms, hosts)
                return _stored_from(pipe.execute(), histograms)
            except redis.WatchError:
                continue


async def read_stored_async(conn: Any, histograms: Sequence[str] = ()) -> Stored:
    """:func:`read_stored` for an asyncio client."""
    while True:
        async with conn.pipeline(transaction=True) as pipe:
            try:
                await pipe.watch(keys.METRICS_HOSTS)
                hosts = await pipe.smembers(keys.METRICS_HOSTS)
                pipe.multi()
                _queue_reads(pipe, histograms, hosts)
                return _stored_from(await pipe.execute(), histograms)
            except redis.WatchError:
                continue


def _queue_reads(pipe: Any, histograms: Sequence[str], hosts: Any) -> None:
    pipe.hgetall(keys.METRICS_COUNTERS)
    for name in histograms:
        pipe.hgetall(keys.metrics_histogram(name))
    for host in sorted(_text(h) for h in hosts):
        pipe.hgetall(keys.host_metrics(host))


def _stored_from(replies: list[Any], histograms: Sequence[str]) -> Stored:
    stored = Stored()
    for raw, value in replies[0].items():
        name, _, labels = _text(raw).partition("|")
        stored.add_counter(name, labels, float(value))
    for name, shared in zip(histograms, replies[1 : 1 + len(histograms)], strict=True):
        for raw, value in shared.items():
            labels, _, part = _text(raw).rpartition("|")
            stored.add_histogram(name, labels, part, float(value))
    for totals in replies[1 + len(histograms) :]:
        stored.add_host(totals)
    return stored


def add_host_fields(pipe: Any, totals: Mapping[Any, Any]) -> None:
    """Add a host's totals hash (``keys.host_metrics``) to the shared hashes."""
    for raw, value in totals.items():
        text = _text(raw)
        if text.startswith(COUNTER_FIELD):
            pipe.hincrbyfloat(keys.METRICS_COUNTERS, text[len(COUNTER_FIELD) :], float(value))
        elif text.startswith(HISTOGRAM_FIELD):
            name, _, rest = text[len(HISTOGRAM_FIELD) :].partition("|")
            pipe.hincrbyfloat(keys.metrics_histogram(name), rest, float(value))


def season_decisions(counters: Mapping[str, Mapping[str, float]], season_id: str) -> int:
    """``arena_decisions_total`` summed over the series of one season."""
    series = counters.get("arena_decisions_total", {})
    return int(sum(v for lt, v in series.items() if parse_labels(lt).get("season") == season_id))


def read_counters(conn: Any) -> dict[str, dict[str, float]]:
    """``{name: {label_text: value}}`` of every counter."""
    return read_stored(conn).counters
