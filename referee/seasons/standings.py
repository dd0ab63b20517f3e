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

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from referee.match.season_row import ROW_FIELDS, Standings
from referee.match.spec import CommittedResult
from referee.seasons.tallies import (
    Tallies,
    bot_order,
    duplicate_diffs,
    fold_of,
    names_of,
    placings_of,
    refit,
    standings_of,
)

__all__ = [
    "ROW_FIELDS",
    "Boards",
    "bot_order",
    "compute_standings",
    "duplicate_scores",
    "placings_of",
    "rank_key",
    "ranking_words",
    "standings_rows_equal",
]


Boards = Mapping[str, Sequence[tuple[str, int]]]
"""Field duplicate: per match id, the (board label, rotation) of each of its deals."""


def duplicate_scores(results: Sequence[CommittedResult], boards: Boards) -> dict[str, list[float]]:
    """Across tables (as duplicate bridge scores a board): every hand of a board played at
    two or more tables is scored against the hand's average there. A bot's entry per hand
    it held: its score change in that deal minus the average of everyone who held that
    hand (0 when it did as well as the field). Card luck cancels; skill stays."""
    return duplicate_diffs([fold_of(r, boards.get(r["match_id"])).entry for r in results])


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
) -> Standings:
    """The standings JSON of a season from all its committed results (``boards``: the
    field-duplicate boards of its matches, for ``dup_score``), ranked by ``rank_by``
    (:func:`rank_key`). The same fold and refit as the stored tallies
    (:mod:`referee.seasons.tallies`), from scratch."""
    by_id: dict[str, CommittedResult] = {}
    for r in results:
        by_id.setdefault(r["match_id"], r)  # a result counts once, whatever arrives twice
    tallies = Tallies()
    entries: list[list[Any]] = []
    for match_id in sorted(by_id):
        fold = fold_of(by_id[match_id], (boards or {}).get(match_id), bots)
        tallies.add(fold)
        entries.append(fold.entry)
    ratings = refit(names_of(bots, tallies), entries)
    return standings_of(
        season,
        game,
        bots,
        tallies,
        ratings,
        matches_total=matches_total,
        now_ms=now_ms,
        rank_by=rank_by,
    )


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


def standings_rows_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Two standings agree on everything but their ``updated_ms`` stamp."""
    return {k: v for k, v in a.items() if k != "updated_ms"} == {
        k: v for k, v in b.items() if k != "updated_ms"
    }
