"""Standings that grow with the work: per-bot tallies folded once per counted result, and
the ratings refitted from a compact per-match log.

Counting a result (:func:`referee.seasons.store.count_done`, one Lua script) also folds it,
in the same atomic step, so a result counted twice never folds twice:

* ``keys.season_tallies(id)`` (hash): per bot, ``<field>:<bot>`` = matches, deals, deals
  won, the sum of places, score, illegal passes, invalid actions, timeouts, autopilot
  seats, fallbacks (whole or half numbers, so their sums are exact in any order); ``n``
  (results folded) and ``unit``;
* ``keys.season_tally_log(id)`` (list): one compact JSON entry per counted match
  (:class:`Fold`): its id, finish time, each deal's finishing order by bot, its pairwise
  outcomes aggregated by pair, and its hands for the duplicate comparison.

The ratings (:class:`Ratings`) are refitted from the log on a timer and at the end, never
per result: the Bradley-Terry fit and ``dup_score`` over every entry (sorted by match id);
the live Elo and OpenSkill, which follow finish order, folded forward from where the last
refit stopped, rewinding to a checkpoint when a result arrives that finished before the
last one folded. :func:`standings_of` then builds the standings JSON from the tallies and
the ratings. :func:`referee.seasons.standings.compute_standings` goes through the same
functions from the results, so the incremental standings equal the pure ones after a refit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.match.season_row import StandingRow, Standings
from referee.match.spec import CommittedResult
from referee.seasons.ratings import (
    ELO_MEAN,
    EloFit,
    Placing,
    Table,
    bradley_terry_cells,
    live_elo,
    openskill_ratings,
    pair_counts,
    table_of,
)

COUNTERS = (
    "matches",
    "deals",
    "deals_won",
    "place_sum",
    "score",
    "illegal_passes",
    "invalid_actions",
    "timeouts",
    "autopilot_seats",
    "fallbacks",
)
"""The per-bot tallies, each a sum of one increment per counted result."""

MARK_EVERY = 256
"""Results (in finish order) between two checkpoints of the live Elo and OpenSkill."""
MARKS_KEPT = 16
"""Checkpoints kept: a result may arrive up to about MARK_EVERY * MARKS_KEPT results after
later-finished ones before a rewind has to replay from the start (still correct, slower)."""

Key = tuple[float, str]
"""The order the live ratings follow: (finished_ms, match id)."""
BEFORE_ALL: Key = (-1.0, "")


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


@dataclass(frozen=True, slots=True)
class Fold:
    """What one counted result adds: per-bot increments, the season's unit, and its log
    entry (:func:`fold_of`)."""

    counts: dict[str, dict[str, float]]
    unit: str
    entry: list[Any]

    def lua_args(self) -> list[str]:
        """``field:bot``, increment pairs (nonzero only) for the counting script."""
        out: list[str] = []
        for bot, counts in self.counts.items():
            for name, value in counts.items():
                if value:
                    out += [f"{name}:{bot}", repr(float(value))]
        return out

    def entry_text(self) -> str:
        return json.dumps(self.entry, separators=(",", ":"))


POSITIONS = "0123456789abcdefghijklmnopqrstuvwxyz"
"""A bot's position in its log entry's table, one character each in the deal orders."""


def _whole(value: float) -> float | int:
    return int(value) if float(value).is_integer() else value


def fold_of(
    result: CommittedResult,
    labels: Sequence[tuple[str, int]] | None = None,
    bots: Sequence[str] = (),
) -> Fold:
    """The :class:`Fold` of one committed result (``labels``: the (board, rotation) of each
    of its deals in a field-duplicate season; ``bots``: the season's bots, which the log
    entry names by index).

    The log entry is the JSON array ``[match id, finished_ms, table, cells, orders]``, plus
    ``hands`` in a field-duplicate season: ``table`` the match's bots (an index into
    ``bots``, or a name for a bot not in it), ``cells`` its pairwise outcomes aggregated by
    pair as a flat ``[p, q, games, 2 * p's score, ...]`` (``p``, ``q`` positions in
    ``table``), ``orders`` each deal's finishing order as positions (:data:`POSITIONS`;
    groups split by ``,``, deals by ``;``), ``hands`` ``[board/hand, position, score
    change]``. Refits parse it in one pass, with few objects per match (a log entry used
    to be an object with bot names, ``m t o p d``: still read)."""
    seats = result["seats"]
    match = result["result"]
    counts: dict[str, dict[str, float]] = {}

    def bump(bot: str, name: str, value: float) -> None:
        row = counts.setdefault(bot, {})
        row[name] = row.get(name, 0) + value

    seat_of: dict[str, list[int]] = {}
    for seat, name in enumerate(seats):
        seat_of.setdefault(name, []).append(seat)
    totals = match.get("totals", [])
    for name, held in seat_of.items():
        bump(name, "matches", 1)
        if totals:
            bump(name, "score", sum(totals[s] for s in held) / len(held))
    for stats in result.get("stats", []):
        bot = stats["bot"]
        bump(bot, "illegal_passes", int(stats.get("illegal_passes", 0)))
        bump(bot, "invalid_actions", int(stats.get("invalid_actions", 0)))
        bump(bot, "timeouts", int(stats.get("timeouts", 0)))
        bump(bot, "autopilot_seats", 1 if stats.get("autopilot") else 0)
        bump(bot, "fallbacks", int(stats.get("fallbacks", 0)))
    placings = placings_of(result)
    for placing in placings:
        ahead = 0
        for group in placing.order:
            for name in group:
                bump(name, "deals", 1)
                bump(name, "place_sum", 1 + ahead)
                bump(name, "deals_won", 1 if ahead == 0 else 0)
            ahead += len(group)
    table = list(seat_of)
    if len(table) > len(POSITIONS):
        raise ValueError(f"a table of {len(table)} bots: at most {len(POSITIONS)}")
    pos = {name: i for i, name in enumerate(table)}
    index = {name: i for i, name in enumerate(bots)}
    cells: list[float | int] = []
    for a, b, g, w in pair_counts(placings):
        cells += [pos[a], pos[b], _whole(g), _whole(2 * w)]
    orders = ";".join(
        ",".join("".join(POSITIONS[pos[n]] for n in group) for group in p.order) for p in placings
    )
    entry: list[Any] = [
        result["match_id"],
        float(result.get("finished_ms", 0.0)),
        [index.get(name, name) for name in table],
        cells,
        orders,
    ]
    hands: list[list[Any]] = []
    k = len(seats)
    for j, deal in enumerate(match.get("deals", [])):
        if not labels or deal.get("void") or j >= len(labels):
            continue
        label, rotation = labels[j]
        deltas = deal.get("deltas", [])
        for seat, name in enumerate(seats):
            if seat < len(deltas):
                hands.append([f"{label}/{(seat - rotation) % k}", pos[name], deltas[seat]])
    if hands:
        entry.append(hands)
    return Fold(counts, str(match.get("unit", "")), entry)


def empty_entry(match_id: str) -> list[Any]:
    """The log entry of a result that adds nothing."""
    return [match_id, 0.0, [], [], ""]


@dataclass(slots=True)
class Tallies:
    """The per-bot sums of every folded result, the season's unit and how many results."""

    bots: dict[str, dict[str, float]] = field(default_factory=dict)
    unit: str = ""
    n: int = 0

    def add(self, fold: Fold) -> None:
        for bot, counts in fold.counts.items():
            row = self.bots.setdefault(bot, {})
            for name, value in counts.items():
                row[name] = row.get(name, 0) + value
        self.unit = self.unit or fold.unit
        self.n += 1

    @classmethod
    def from_hash(cls, data: Mapping[str, str]) -> Tallies:
        """The tallies stored by the counting script."""
        out = cls(unit=data.get("unit", ""), n=int(data.get("n", 0)))
        for key, value in data.items():
            name, sep, bot = key.partition(":")
            if sep and name in COUNTERS:
                out.bots.setdefault(bot, {})[name] = float(value)
        return out


Entry = list[Any] | Mapping[str, Any]
"""A log entry: the array :func:`fold_of` makes, or an object of an older log."""


def entry_id(entry: Entry) -> str:
    return str(entry[0] if isinstance(entry, list) else entry["m"])


def entry_key(entry: Entry) -> Key:
    if isinstance(entry, list):
        return (float(entry[1]), str(entry[0]))
    return (float(entry["t"]), str(entry["m"]))


def entry_table(entry: list[Any], names: Sequence[str]) -> list[str]:
    """The bots of an array entry by name (``names`` starts with the season's bots)."""
    return [names[b] if isinstance(b, int) else str(b) for b in entry[2]]


def entry_placings(entry: Entry, names: Sequence[str] = ()) -> list[Placing]:
    if not isinstance(entry, list):
        return [
            Placing(cluster=entry["m"], order=tuple(tuple(g) for g in order))
            for order in entry["o"]
        ]
    if not entry[4]:
        return []
    table = entry_table(entry, names)
    return [
        Placing(
            cluster=entry[0],
            order=tuple(
                tuple(sorted(table[POSITIONS.index(c)] for c in group)) for group in deal.split(",")
            ),
        )
        for deal in entry[4].split(";")
    ]


def entry_hands(entry: Entry, names: Sequence[str] = ()) -> list[tuple[str, str, float]]:
    """The duplicate hands of an entry: ``(board/hand, bot, score change)``."""
    if not isinstance(entry, list):
        return [(str(h), str(n), float(d)) for h, n, d in entry.get("d", ())]
    if len(entry) < 6:
        return []
    table = entry_table(entry, names)
    return [(str(h), table[p], float(d)) for h, p, d in entry[5]]


def entry_cells(entry: Entry, index: Mapping[str, int]) -> Table:
    """The pairwise outcomes of an entry as a :data:`~referee.seasons.ratings.Table` of
    the bots' places in ``index``, which begins with the season's bots (pairs with a bot
    not in it left out)."""
    if isinstance(entry, list):
        table = entry[2]
        if all(isinstance(b, int) and b < len(index) for b in table):
            return table, entry[3]
        named = [b if isinstance(b, int) else index.get(b) for b in table]
        cells = entry[3]
        kept: list[Any] = []
        for k in range(0, len(cells), 4):
            if named[cells[k]] is not None and named[cells[k + 1]] is not None:
                kept += cells[k : k + 4]
        return [-1 if b is None else b for b in named], kept
    return table_of(index, entry["p"])


@dataclass(slots=True)
class Mark:
    """The live Elo and OpenSkill after the first ``applied`` results in finish order,
    the last of them at ``key``."""

    key: Key
    applied: int
    live: dict[str, float]
    skill: dict[str, tuple[float, float]]


@dataclass(slots=True)
class Ratings:
    """What a refit produces: the Bradley-Terry fit and duplicate scores over the first
    ``folded`` log entries, and the live Elo and OpenSkill folded in finish order."""

    folded: int = 0
    names: list[str] = field(default_factory=list)
    fit: EloFit = field(default_factory=lambda: EloFit({}, {}, {}))
    dup: dict[str, tuple[float, int]] = field(default_factory=dict)
    head: Mark = field(default_factory=lambda: Mark(BEFORE_ALL, 0, {}, {}))
    marks: list[Mark] = field(default_factory=list)

    def to_json(self) -> str:
        def mark(m: Mark) -> dict[str, Any]:
            return {
                "key": list(m.key),
                "applied": m.applied,
                "live": m.live,
                "skill": {b: list(v) for b, v in m.skill.items()},
            }

        f = self.fit
        return json.dumps(
            {
                "folded": self.folded,
                "names": self.names,
                "fit": [f.elo, f.low, f.high, f.matches, f.quantile, f.warning, f.quantiles],
                "dup": {b: list(v) for b, v in self.dup.items()},
                "head": mark(self.head),
                "marks": [mark(m) for m in self.marks],
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> Ratings:
        data = json.loads(text)

        def mark(m: Mapping[str, Any]) -> Mark:
            key = m["key"]
            return Mark(
                (float(key[0]), str(key[1])),
                int(m["applied"]),
                {b: float(v) for b, v in m["live"].items()},
                {b: (float(v[0]), float(v[1])) for b, v in m["skill"].items()},
            )

        elo, low, high, matches, quantile, warning, quantiles = data["fit"]
        return cls(
            folded=int(data["folded"]),
            names=list(data["names"]),
            fit=EloFit(elo, low, high, matches, quantile, warning, quantiles),
            dup={b: (float(v[0]), int(v[1])) for b, v in data["dup"].items()},
            head=mark(data["head"]),
            marks=[mark(m) for m in data["marks"]],
        )


def duplicate_diffs(entries: Sequence[Entry], names: Sequence[str] = ()) -> dict[str, list[float]]:
    """Across tables (as duplicate bridge scores a board): every hand of a board played at
    two or more tables is scored against the hand's average there. Per bot, per hand it
    held: its score change minus that average (0 when it did as well as the field)."""
    held: dict[str, list[tuple[str, float]]] = {}
    for entry in entries:
        for hand, name, delta in entry_hands(entry, names):
            held.setdefault(hand, []).append((name, delta))
    diffs: dict[str, list[float]] = {}
    for hands in held.values():
        if len({name for name, _ in hands}) < 2:
            continue
        mean = sum(d for _, d in hands) / len(hands)
        for name, delta in hands:
            diffs.setdefault(name, []).append(delta - mean)
    return diffs


def names_of(bots: Sequence[str], tallies: Tallies) -> list[str]:
    """The season's bots, then any other bot that played (sorted)."""
    return [*bots, *sorted(set(tallies.bots) - set(bots))]


def refit(names: Sequence[str], entries: Sequence[Entry], last: Ratings | None = None) -> Ratings:
    """The ratings of ``entries`` (the whole log, in the order counted; ``names`` starts
    with the season's bots, by which the entries name them); the live Elo and OpenSkill
    carry on from ``last`` (a previous refit of a prefix of the same log)."""
    by_id = sorted(entries, key=entry_id)
    index = {name: i for i, name in enumerate(names)}
    fit = bradley_terry_cells(names, [entry_cells(e, index) for e in by_id])
    dup = {name: (sum(d), len(d)) for name, d in duplicate_diffs(by_id, names).items()}
    ratings = Ratings(len(entries), list(names), fit, dup)
    usable = last is not None and list(last.names) == list(names) and last.folded <= len(entries)
    fresh = sorted(entries[last.folded :] if usable and last else entries, key=entry_key)
    start = Mark(BEFORE_ALL, 0, {}, {})
    marks: list[Mark] = []
    todo = fresh
    if usable and last is not None:
        if not fresh or entry_key(fresh[0]) > last.head.key:
            start, marks, todo = last.head, list(last.marks), fresh
        else:  # something finished before the last one folded: rewind to a checkpoint
            first = entry_key(fresh[0])
            marks = [m for m in last.marks if m.key < first]
            if marks:
                start = marks[-1]
            todo = sorted((e for e in entries if entry_key(e) > start.key), key=entry_key)
    live = dict(start.live)
    skill = dict(start.skill)
    applied = start.applied
    key = start.key
    for begin in range(0, len(todo), MARK_EVERY):
        chunk = todo[begin : begin + MARK_EVERY]
        # fold up to the next multiple of MARK_EVERY, so checkpoints fall on fixed counts
        room = MARK_EVERY - applied % MARK_EVERY
        for part in (chunk[:room], chunk[room:]):
            if not part:
                continue
            placings = [p for e in part for p in entry_placings(e, names)]
            live = live_elo(names, placings, start=live)
            rated = openskill_ratings(names, placings, start=skill)
            skill = {b: (r.mu, r.sigma) for b, r in rated.items()}
            applied += len(part)
            key = entry_key(part[-1])
            if applied % MARK_EVERY == 0:
                marks.append(Mark(key, applied, dict(live), dict(skill)))
    ratings.head = Mark(key, applied, live, skill)
    ratings.marks = marks[-MARKS_KEPT:]
    return ratings


def _number(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 3)


def standings_of(
    season: str,
    game: str,
    bots: Sequence[str],
    tallies: Tallies,
    ratings: Ratings,
    *,
    matches_total: int = 0,
    now_ms: float | None = None,
    rank_by: str = "elo",
) -> Standings:
    """The standings JSON (docs/seasons.md) from the tallies and the last refit."""
    from openskill.models import PlackettLuce

    from referee.seasons.standings import rank_key

    model = PlackettLuce()
    names = names_of(bots, tallies)
    fit = ratings.fit
    rows: list[StandingRow] = []
    for name in names:
        t = tallies.bots.get(name, {})
        deals = int(t.get("deals", 0))
        mu, sigma = ratings.head.skill.get(name, (model.mu, model.sigma))
        skill = model.rating(mu=mu, sigma=sigma)
        dup_score, dup_hands = ratings.dup.get(name, (0.0, 0))
        rows.append(
            {
                "bot": name,
                "rank": 0,
                "matches": int(t.get("matches", 0)),
                "deals": deals,
                "deals_won": int(t.get("deals_won", 0)),
                "avg_place": round(t.get("place_sum", 0.0) / deals, 4) if deals else 0.0,
                "score": _number(t.get("score", 0.0)),
                "illegal_passes": int(t.get("illegal_passes", 0)),
                "invalid_actions": int(t.get("invalid_actions", 0)),
                "timeouts": int(t.get("timeouts", 0)),
                "autopilot_seats": int(t.get("autopilot_seats", 0)),
                "fallbacks": int(t.get("fallbacks", 0)),
                "elo": round(fit.elo.get(name, ELO_MEAN), 2),
                "elo_low": round(fit.low.get(name, ELO_MEAN), 2),
                "elo_high": round(fit.high.get(name, ELO_MEAN), 2),
                "live_elo": round(ratings.head.live.get(name, ELO_MEAN), 2),
                "openskill_mu": round(float(skill.mu), 4),
                "openskill_sigma": round(float(skill.sigma), 4),
                "openskill_ordinal": round(float(skill.ordinal()), 4),
                "dup_score": round(dup_score, 3),
                "dup_hands": dup_hands,
            }
        )
    rows.sort(key=rank_key(rank_by, tallies.unit))
    for rank, row in enumerate(rows, start=1):
        row["rank"] = rank
    return {
        "season": season,
        "game": game,
        "unit": tallies.unit,
        "matches_done": tallies.n,
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
