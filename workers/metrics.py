"""The metrics a match runner writes (through referee.metrics_store), batched.

Per-decision numbers (decisions, think time, platform overhead) are summed for all the
matches of a host process (:class:`HostMetrics`); once a second the host writes its
running totals whole into its own hash (one HSET: ``HostMetrics.fields``,
``referee.metrics_store``), so a decision costs no Redis command and a flush one.
Penalty and match counters are written in the commit transaction instead
(``commit_counters``), so they count once per match.

Names (labels only from season, bot, game, kind):

* ``arena_decisions_total{season,bot,game}``: decisions a bot was asked to make
* ``arena_timeouts_total{season,bot}``, ``arena_invalid_actions_total{season,bot}``,
  ``arena_illegal_passes_total{season,bot}``, ``arena_autopilot_seats_total{season,bot}``,
  ``arena_fallbacks_total{season,bot}``
* ``arena_matches_total{game,kind}``: kind is ``committed``, ``failed`` or ``retried``
* histograms ``arena_bot_think_seconds{game}`` and ``arena_platform_overhead_seconds{game}``
  (wall time of a decision in the worker minus the bot's think time)
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter, defaultdict
from typing import Any

from referee import keys
from referee.match.spec import SeatStats
from referee.metrics_store import (
    COUNTER_FIELD,
    DEFAULT_BUCKETS_S,
    HISTOGRAM_FIELD,
    MATCHES,
    incr_counter,
    label_text,
)
from referee.metrics_store import match_counter as match_counter  # the queue's too

DECISIONS = "arena_decisions_total"
TIMEOUTS = "arena_timeouts_total"
INVALID_ACTIONS = "arena_invalid_actions_total"
ILLEGAL_PASSES = "arena_illegal_passes_total"
AUTOPILOT_SEATS = "arena_autopilot_seats_total"
FALLBACKS = "arena_fallbacks_total"
THINK_SECONDS = "arena_bot_think_seconds"
OVERHEAD_SECONDS = "arena_platform_overhead_seconds"


class _Histogram:
    """Bucket counts of many observations, written like ``metrics_store.observe`` would.

    An observation adds one to the count of the first bucket it fits (a bisection), not to
    every bucket it fits: the cumulative counts are summed when written (about once a
    second), not at every decision."""

    __slots__ = ("count", "counts", "total")

    def __init__(self) -> None:
        self.counts = [0] * (len(DEFAULT_BUCKETS_S) + 1)  # the last one: above every bound
        self.total = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(DEFAULT_BUCKETS_S, value)] += 1
        self.total += value
        self.count += 1

    def add(self, other: _Histogram) -> None:
        self.counts = [a + b for a, b in zip(self.counts, other.counts, strict=True)]
        self.total += other.total
        self.count += other.count

    def parts(self) -> list[tuple[str, float]]:
        """``(part, value)``: each bucket bound's cumulative count, ``+Inf``, ``sum``, ``count``."""
        out: list[tuple[str, float]] = []
        below = 0
        for bound, n in zip(DEFAULT_BUCKETS_S, self.counts, strict=False):
            below += n
            if below:  # a bound nothing fitted yet is left out, as observe() leaves it
                out.append((repr(bound), below))
        out += [("+Inf", self.count), ("sum", self.total), ("count", self.count)]
        return out

    def flush(self, pipe: Any, name: str, labels: dict[str, str]) -> None:
        key = keys.metrics_histogram(name)
        lt = label_text(labels)
        for part, value in self.parts():
            if part == "sum":
                pipe.hincrbyfloat(key, f"{lt}|{part}", value)
            else:
                pipe.hincrby(key, f"{lt}|{part}", int(value))


class HostMetrics:
    """The per-decision metrics of every match of one host process, summed until flushed."""

    def __init__(self) -> None:
        self.decisions: Counter[tuple[str, str, str]] = Counter()  # (season, bot, game)
        self.hists: defaultdict[tuple[str, str], _Histogram] = defaultdict(_Histogram)

    def decision(self, season: str, game: str, bot: str, think_s: float, overhead_s: float) -> None:
        self.decisions[(season, bot, game)] += 1
        self.hists[(THINK_SECONDS, game)].observe(think_s)
        self.hists[(OVERHEAD_SECONDS, game)].observe(overhead_s)

    def take(self) -> HostMetrics:
        """What was summed so far (to flush); this object starts over."""
        taken = HostMetrics()
        taken.decisions, self.decisions = self.decisions, Counter()
        taken.hists, self.hists = self.hists, defaultdict(_Histogram)
        return taken

    def add(self, taken: HostMetrics) -> None:
        """Add the numbers of ``taken`` to these."""
        self.decisions.update(taken.decisions)
        for key, hist in taken.hists.items():
            self.hists[key].add(hist)

    def fields(self) -> dict[str, str]:
        """These numbers as the fields of a host's totals hash (``keys.host_metrics``)."""
        out: dict[str, str] = {}
        for (season, bot, game), n in self.decisions.items():
            labels = label_text({"season": season, "bot": bot, "game": game})
            out[f"{COUNTER_FIELD}{DECISIONS}|{labels}"] = str(n)
        for (name, game), hist in self.hists.items():
            if hist.count:
                labels = label_text({"game": game})
                for part, value in hist.parts():
                    out[f"{HISTOGRAM_FIELD}{name}|{labels}|{part}"] = repr(value)
        return out

    def flush(self, pipe: Any) -> None:
        """Add these numbers to the shared hashes (a one-off run, or a host's final fold)."""
        for (season, bot, game), n in self.decisions.items():
            incr_counter(pipe, DECISIONS, {"season": season, "bot": bot, "game": game}, n)
        for (name, game), hist in self.hists.items():
            if hist.count:
                hist.flush(pipe, name, {"game": game})


def commit_counters(pipe: Any, season: str, game: str, stats: list[SeatStats]) -> None:
    """The counters that belong to a committed match (written once, in its transaction)."""
    for seat in stats:
        labels = {"season": season, "bot": seat["bot"]}
        for name, value in (
            (TIMEOUTS, seat["timeouts"]),
            (INVALID_ACTIONS, seat["invalid_actions"]),
            (ILLEGAL_PASSES, seat["illegal_passes"]),
            (AUTOPILOT_SEATS, int(seat["autopilot"])),
            (FALLBACKS, seat.get("fallbacks", 0)),
        ):
            if value:
                incr_counter(pipe, name, labels, value)
    incr_counter(pipe, MATCHES, {"game": game, "kind": "committed"})
