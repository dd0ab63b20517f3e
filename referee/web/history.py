"""A season over time: Elo with its 95% interval, and each bot's running score.

The league page draws them from the season's stored checkpoints (:func:`from_checkpoints`):
one point per refit of the standings' ratings (``referee.seasons.store.store_checkpoint``,
on the driver's timer and at the end, so the last point is the standings' Elo), read in
one call whatever the season's size. A season counted before checkpoints existed is drawn
from its counted results in finish order (:func:`elo_over_time`, :func:`score_over_time`:
the same functions the standings use, refitted at up to :data:`CHECKPOINTS` evenly spaced
points), up to ``referee.web.live.RESULTS_CHART_MAX`` results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from referee.seasons.ratings import bradley_terry
from referee.seasons.standings import placings_of
from referee.web.charts import Series

CHECKPOINTS = 12


def elo_over_time(bots: Sequence[str], results: Sequence[Mapping[str, Any]]) -> list[Series]:
    """One series per bot: x = matches counted, y = Elo, band = 95% interval."""
    if not results:
        return []
    n = len(results)
    marks = sorted({max(1, round(n * (i + 1) / CHECKPOINTS)) for i in range(CHECKPOINTS)})
    names = list(dict.fromkeys([*bots, *(s for r in results for s in r.get("seats", []))]))
    played: dict[str, int] = dict.fromkeys(names, 0)
    points: dict[str, list[tuple[float, float]]] = {b: [] for b in names}
    bands: dict[str, list[tuple[float, float, float]]] = {b: [] for b in names}
    placings = []
    done = 0
    for mark in marks:
        while done < mark:
            result = results[done]
            placings.extend(placings_of(result))  # type: ignore[arg-type]
            for seat in set(result.get("seats", [])):
                played[seat] = played.get(seat, 0) + 1
            done += 1
        fit = bradley_terry(names, placings)
        for bot in names:
            if played.get(bot, 0) == 0 or bot not in fit.elo:
                continue
            points[bot].append((mark, fit.elo[bot]))
            bands[bot].append((mark, fit.low[bot], fit.high[bot]))
    return [Series(b, points[b], bands[b]) for b in names if points[b]]


def from_checkpoints(
    bots: Sequence[str], points: Sequence[Mapping[str, Any]]
) -> tuple[list[Series], list[Series]]:
    """The Elo series (with 95% bands) and the score series of stored checkpoints
    (``{n, elo: {bot: [elo, low, high]}, score: {bot: sum}}``, oldest first)."""
    seen = (b for p in points for b in (*p.get("elo", {}), *p.get("score", {})))
    names = list(dict.fromkeys([*bots, *seen]))
    elo: dict[str, list[tuple[float, float]]] = {b: [] for b in names}
    bands: dict[str, list[tuple[float, float, float]]] = {b: [] for b in names}
    score: dict[str, list[tuple[float, float]]] = {b: [(0, 0.0)] for b in names}
    for point in points:
        n = float(point["n"])
        for bot, (value, low, high) in point.get("elo", {}).items():
            elo[bot].append((n, float(value)))
            bands[bot].append((n, float(low), float(high)))
        for bot, value in point.get("score", {}).items():
            score[bot].append((n, float(value)))
    return (
        [Series(b, elo[b], bands[b]) for b in names if elo[b]],
        [Series(b, score[b]) for b in names if len(score[b]) > 1],
    )


def score_over_time(bots: Sequence[str], results: Sequence[Mapping[str, Any]]) -> list[Series]:
    """One series per bot: x = matches counted, y = its running score (chips, points...)."""
    names = list(dict.fromkeys([*bots, *(s for r in results for s in r.get("seats", []))]))
    running: dict[str, float] = dict.fromkeys(names, 0.0)
    points: dict[str, list[tuple[float, float]]] = {b: [(0, 0.0)] for b in names}
    for i, result in enumerate(results, start=1):
        seats = list(result.get("seats", []))
        totals = (result.get("result") or {}).get("totals", [])
        held: dict[str, list[int]] = {}
        for seat, name in enumerate(seats):
            held.setdefault(name, []).append(seat)
        for name, seat_list in held.items():
            if totals:
                running[name] = running.get(name, 0.0) + sum(
                    float(totals[s]) for s in seat_list if s < len(totals)
                ) / len(seat_list)
            points.setdefault(name, [(0, 0.0)]).append((i, running[name]))
    return [Series(b, points[b]) for b in names if len(points[b]) > 1]
