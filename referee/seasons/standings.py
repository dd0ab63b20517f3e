"""Standings of a season: a pure function of its committed results.

:func:`compute_standings` takes the season's bots and every :class:`CommittedResult` and
returns the standings JSON stored at ``keys.season_standings(id)`` (the schema other parts
read, see docs/seasons.md). The results are sorted first (by match id for the
Bradley-Terry fit; by commit time, then match id, for the incremental ratings), so the
same set of results gives byte-identical standings whatever order they arrived in.

A deal's finishing order is turned into an order of *bots*: in Sedma head-to-head one bot
holds both seats of a partnership, so the order is side against side. Void deals (SD-16)
are skipped.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.match.spec import CommittedResult
from referee.seasons.ratings import (
    ELO_MEAN,
    Placing,
    bradley_terry,
    live_elo,
    openskill_ratings,
)

ROW_FIELDS = (
    "bot",
    "rank",
    "matches",
    "deals",
    "deals_won",
    "avg_place",
    "score",
    "illegal_passes",
    "invalid_actions",
    "timeouts",
    "autopilot_seats",
    "fallbacks",
    "elo",
    "elo_low",
    "elo_high",
    "live_elo",
    "openskill_mu",
    "openskill_sigma",
    "openskill_ordinal",
    "dup_score",
    "dup_hands",
)


@dataclass(slots=True)
class _Tally:
    matches: int = 0
    deals: int = 0
    deals_won: int = 0
    place_sum: float = 0.0
    score: float = 0.0
    illegal_passes: int = 0
    invalid_actions: int = 0
    timeouts: int = 0
    autopilot_seats: int = 0
    fallbacks: int = 0
    seen: set[str] = field(default_factory=set)
    dup_score: float = 0.0
    dup_hands: int = 0


Boards = Mapping[str, Sequence[tuple[str, int]]]
"""Field duplicate: per match id, the (board label, rotation) of each of its deals."""


def duplicate_scores(results: Sequence[CommittedResult], boards: Boards) -> dict[str, list[float]]:
    """Across tables (as duplicate bridge scores a board): every hand of a board played at
    two or more tables is scored against the hand's average there. A bot's entry per hand
    it held: its score change in that deal minus the average of everyone who held that
    hand (0 when it did as well as the field). Card luck cancels; skill stays."""
    held: dict[tuple[str, int], list[tuple[str, float]]] = {}
    for result in results:
        labels = boards.get(result["match_id"])
        if not labels:
            continue
        seats = result["seats"]
        k = len(seats)
        for j, deal in enumerate(result["result"].get("deals", [])):
            if deal.get("void") or j >= len(labels):
                continue
            label, rotation = labels[j]
            deltas = deal.get("deltas", [])
            for seat, name in enumerate(seats):
                if seat < len(deltas):
                    hand = (seat - rotation) % k
                    held.setdefault((label, hand), []).append((name, float(deltas[seat])))
    out: dict[str, list[float]] = {}
    for entries in held.values():
        if len({name for name, _ in entries}) < 2:
            continue
        mean = sum(d for _, d in entries) / len(entries)
        for name, delta in entries:
            out.setdefault(name, []).append(delta - mean)
    return out


def bot_order(seats: Sequence[str], order: Iterable[Iterable[int]]) -> tuple[tuple[str, ...], ...]:
    """A finishing order of seats as an order of bots (a bot counted at its best place)."""
    placed: set[str] = set()
    out: list[tuple[str, ...]] = []
    for group in order:
        names = sorted({seats[s] for s in group} - placed)
        if names:
            out.append(tuple(names))
            placed.update(names)
    return tuple(out)


def placings_of(result: CommittedResult) -> list[Placing]:
    """The non-void deals of one committed result as bot finishing orders."""
    seats = result["seats"]
    out: list[Placing] = []
    for deal in result["result"].get("deals", []):
        if deal.get("void"):
            continue
        order = bot_order(seats, deal["order"])
        if len(order) >= 2 or (order and len(order[0]) >= 2):
            out.append(Placing(cluster=result["match_id"], order=order))
    return out


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 3)


def compute_standings(
    season: str,
    game: str,
    bots: Sequence[str],
    results: Iterable[CommittedResult],
    *,
    matches_total: int = 0,
    now_ms: float | None = None,
    boards: Boards | None = None,
    rank_by: str = "elo",
) -> dict[str, Any]:
    """The standings JSON of a season from all its committed results (``boards``: the
    field-duplicate boards of its matches, for ``dup_score``), ranked by ``rank_by``
    (:func:`rank_key`)."""
    by_id: dict[str, CommittedResult] = {}
    for r in results:
        by_id.setdefault(r["match_id"], r)  # a result counts once, whatever arrives twice
    ordered = [by_id[k] for k in sorted(by_id)]
    tallies = {b: _Tally() for b in bots}
    unit = ""
    for result in ordered:
        seats = result["seats"]
        match = result["result"]
        unit = unit or str(match.get("unit", ""))
        seat_of: dict[str, list[int]] = {}
        for seat, name in enumerate(seats):
            seat_of.setdefault(name, []).append(seat)
        totals = match.get("totals", [])
        for name, held in seat_of.items():
            tally = tallies.setdefault(name, _Tally())
            tally.matches += 1
            if totals:
                tally.score += sum(totals[s] for s in held) / len(held)
        for stats in result.get("stats", []):
            tally = tallies.setdefault(stats["bot"], _Tally())
            tally.illegal_passes += int(stats.get("illegal_passes", 0))
            tally.invalid_actions += int(stats.get("invalid_actions", 0))
            tally.timeouts += int(stats.get("timeouts", 0))
            tally.autopilot_seats += 1 if stats.get("autopilot") else 0
            tally.fallbacks += int(stats.get("fallbacks", 0))
        for placing in placings_of(result):
            ahead = 0
            for place_group in placing.order:
                for name in place_group:
                    tally = tallies.setdefault(name, _Tally())
                    tally.deals += 1
                    tally.place_sum += 1 + ahead
                    if ahead == 0:
                        tally.deals_won += 1
                ahead += len(place_group)
    for name, diffs in duplicate_scores(ordered, boards or {}).items():
        tally = tallies.setdefault(name, _Tally())
        tally.dup_score = sum(diffs)
        tally.dup_hands = len(diffs)
    names = list(tallies)
    placings = [p for r in ordered for p in placings_of(r)]
    fit = bradley_terry(names, placings)
    by_time = sorted(ordered, key=lambda r: (float(r.get("finished_ms", 0.0)), r["match_id"]))
    timed = [p for r in by_time for p in placings_of(r)]
    live = live_elo(names, timed)
    skill = openskill_ratings(names, timed)
    rows: list[dict[str, Any]] = []
    for name in names:
        t = tallies[name]
        rows.append(
            {
                "bot": name,
                "rank": 0,
                "matches": t.matches,
                "deals": t.deals,
                "deals_won": t.deals_won,
                "avg_place": round(t.place_sum / t.deals, 4) if t.deals else 0.0,
                "score": _number(t.score),
                "illegal_passes": t.illegal_passes,
                "invalid_actions": t.invalid_actions,
                "timeouts": t.timeouts,
                "autopilot_seats": t.autopilot_seats,
                "fallbacks": t.fallbacks,
                "elo": round(fit.elo.get(name, ELO_MEAN), 2),
                "elo_low": round(fit.low.get(name, ELO_MEAN), 2),
                "elo_high": round(fit.high.get(name, ELO_MEAN), 2),
                "live_elo": round(live.get(name, ELO_MEAN), 2),
                "openskill_mu": round(skill[name].mu, 4),
                "openskill_sigma": round(skill[name].sigma, 4),
                "openskill_ordinal": round(skill[name].ordinal, 4),
                "dup_score": round(t.dup_score, 3),
                "dup_hands": t.dup_hands,
            }
        )
    rows.sort(key=rank_key(rank_by, unit))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return {
        "season": season,
        "game": game,
        "unit": unit,
        "matches_done": len(ordered),
        "matches_total": matches_total,
        "updated_ms": int(time.time() * 1000) if now_ms is None else int(now_ms),
        "rank_by": rank_by,
        "rows": rows,
        # how the Elo intervals were made (docs/seasons.md): matches = clusters, the
        # Student-t quantile on matches - 1 df, and a warning when they are too few
        "elo_interval": {
            "matches": fit.matches,
            "quantile": round(fit.quantile, 4),
            "warning": fit.warning,
        },
    }


LOWER_IS_BETTER = frozenset({"penalty_points"})
"""Score units where less is better (a Sevens penalty-points season)."""


def rank_key(rank_by: str, unit: str) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """The sort key of standings rows for ``rank_by`` (``options.rank_by``, docs/seasons.md).

    ``elo``: Elo, then average place. ``score``: the game's score *per match played* (a bot
    one match ahead mid-season is not ranked on its extra match), best first: higher, or
    lower for penalty points (a bot with no match last); then Elo. ``place``: average
    place, lower first (a bot with no deal last); then Elo. The bot's name breaks every
    remaining tie."""
    sign = 1.0 if unit in LOWER_IS_BETTER else -1.0

    def place(row: Mapping[str, Any]) -> float:
        return float(row["avg_place"]) if row["deals"] else 99.0

    if rank_by == "score":
        return lambda r: (
            not r["matches"],
            sign * float(r["score"]) / r["matches"] if r["matches"] else 0.0,
            -r["elo"],
            r["bot"],
        )
    if rank_by == "place":
        return lambda r: (place(r), -r["elo"], r["bot"])
    return lambda r: (-r["elo"], place(r), r["bot"])


def ranking_words(standings: Mapping[str, Any] | None, unit_words: str) -> str:
    """What orders ``standings``, in words: ``Elo``, ``<unit_words> per match`` or
    ``average place`` (standings stored before ``rank_by`` existed were ranked by Elo)."""
    rank_by = str((standings or {}).get("rank_by") or "elo")
    if rank_by == "score":
        return f"{unit_words or 'score'} per match"
    return {"elo": "Elo", "place": "average place"}.get(rank_by, rank_by)
