"""Counters and histograms kept in Redis, so that forking workers need no metrics files.

Workers (one process per job) add to them inside their own pipelines; the
referee's collector reads them at scrape time. Labels are a small sorted mapping; only
``season``, ``bot``, ``game`` and ``kind`` are allowed (never a match id).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def read_counters(conn: Any) -> dict[str, dict[str, float]]:
    """``{name: {label_text: value}}`` of every counter."""
    out: dict[str, dict[str, float]] = {}
    for field, value in conn.hgetall(keys.METRICS_COUNTERS).items():
        field_s = field.decode() if isinstance(field, bytes) else field
        name, _, lt = field_s.partition("|")
        out.setdefault(name, {})[lt] = float(value)
    return out


def read_histogram(conn: Any, name: str) -> dict[str, dict[str, float]]:
    """``{label_text: {"0.001": n, …, "+Inf": n, "sum": s, "count": n}}`` of one histogram."""
    out: dict[str, dict[str, float]] = {}
    for field, value in conn.hgetall(keys.metrics_histogram(name)).items():
        field_s = field.decode() if isinstance(field, bytes) else field
        lt, _, part = field_s.rpartition("|")
        out.setdefault(lt, {})[part] = float(value)
    return out
