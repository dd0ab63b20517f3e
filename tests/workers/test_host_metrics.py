"""``workers.metrics.HostMetrics``: the per-decision histograms summed in a host write the
same Redis fields, with the same totals, as ``referee.metrics_store.observe`` of every
observation would (docs/workers.md "Metrics"); ``fields()`` (a host's totals hash) says the
same numbers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from referee import keys
from referee.metrics_store import DEFAULT_BUCKETS_S, HISTOGRAM_FIELD, observe
from workers import metrics

HISTOGRAMS = (
    keys.metrics_histogram(metrics.THINK_SECONDS),
    keys.metrics_histogram(metrics.OVERHEAD_SECONDS),
)


class _Pipe:
    """What a Redis pipeline would add to each hash field (a unit test of one module)."""

    def __init__(self) -> None:
        self.ints: Counter[tuple[str, str]] = Counter()
        self.floats: dict[tuple[str, str], float] = {}

    def hincrby(self, key: str, field: str, n: int) -> None:
        self.ints[(key, field)] += n

    def hincrbyfloat(self, key: str, field: str, value: float) -> None:
        self.floats[(key, field)] = self.floats.get((key, field), 0.0) + value

    def histogram_ints(self) -> dict[tuple[str, str], int]:
        return {k: n for k, n in self.ints.items() if k[0] in HISTOGRAMS}


def _values() -> list[float]:
    """Every bucket bound exactly, zero, values past the last bound, and random ones."""
    rng = random.Random(12)
    return [*DEFAULT_BUCKETS_S, 0.0, 1e-9, 11.0, 1e6] + [rng.random() ** 4 * 12 for _ in range(500)]


def _expected(pairs: list[tuple[float, float]], game: str) -> _Pipe:
    pipe = _Pipe()
    for think, overhead in pairs:
        observe(pipe, metrics.THINK_SECONDS, {"game": game}, think)
        observe(pipe, metrics.OVERHEAD_SECONDS, {"game": game}, overhead)
    return pipe


def test_the_flush_writes_what_observing_each_value_writes() -> None:
    values = _values()
    pairs = [(v, values[-1 - i] / 100) for i, v in enumerate(values)]
    host = metrics.HostMetrics()
    for think, overhead in pairs:
        host.decision("s1", "sevens", "bot-a", think, overhead)
    flushed = _Pipe()
    host.take().flush(flushed)
    expected = _expected(pairs, "sevens")
    assert flushed.histogram_ints() == expected.histogram_ints()
    sums = {k: v for k, v in flushed.floats.items() if k[0] in HISTOGRAMS}
    assert sums.keys() == expected.floats.keys()
    for key, total in expected.floats.items():
        assert flushed.floats[key] == pytest.approx(total)


def test_totals_added_back_are_flushed_whole() -> None:
    values = _values()
    pairs = [(v, v / 10) for v in values]
    host = metrics.HostMetrics()
    for think, overhead in pairs[:300]:
        host.decision("s1", "sedma", "bot-b", think, overhead)
    taken = host.take()
    for think, overhead in pairs[300:]:
        host.decision("s1", "sedma", "bot-b", think, overhead)
    host.add(taken)  # the totals of ``taken`` added back
    flushed = _Pipe()
    host.take().flush(flushed)
    assert flushed.histogram_ints() == _expected(pairs, "sedma").histogram_ints()
    assert not host.take().hists


def test_the_totals_hash_holds_the_same_cumulative_counts() -> None:
    values = _values()
    host = metrics.HostMetrics()
    for value in values:
        host.decision("s1", "sevens", "bot-a", value, 0.0)
    expected = _expected([(v, 0.0) for v in values], "sevens").histogram_ints()
    fields = host.fields()
    think = keys.metrics_histogram(metrics.THINK_SECONDS)
    for (key, field), n in expected.items():
        if key == think:
            assert float(fields[f"{HISTOGRAM_FIELD}{metrics.THINK_SECONDS}|{field}"]) == n
