"""A season over time: Elo with its 95% interval, and each bot's running score.

Computed from the season's counted results in finish order with the same functions the
standings use (:func:`referee.seasons.standings.placings_of`,
:func:`referee.seasons.ratings.bradley_terry`), refitted at up to :data:`CHECKPOINTS`
evenly spaced points, so the last point equals the standings' Elo.
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
