"""The continuous ladder's state and matchmaker, pure: the state is a fold of the ladder's
log (entries joining, batches of tables and their results), and each batch's tables are a
function of that state and a seed derived from the ladder's seed and the batch number. So
the decisions are reproducible from the seed and the log (:func:`replay`).

Matchmaking (after Halite's): each table starts from a *seed* entry, drawn 25% of the time
among provisional entries (fewer than ``provisional`` matches), 65% among those with the
fewest matches, 10% among the least recently played; its opponents are drawn among entries
whose OpenSkill mu lies within a window of random width around the seed's (widened until
enough fit), never two of one owner at a table, nobody twice in a batch. Seats go to
whoever has sat there least; the table size is the allowed size used least so far.
Ratings: OpenSkill Plackett-Luce, each deal one game, in the log's order.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.seasons.model import derive_seed

DEFAULT_PROVISIONAL = 10
WINDOWS = (2.0, 4.0, 8.0)
"""Widths of the mu window a table's opponents are drawn from (OpenSkill mu starts at 25,
sigma at 25/3): one drawn per table, doubled until enough entries fit."""


@dataclass
class EntryState:
    name: str
    owner: str
    prev: str = ""
    """The entry this one is a new version of (its history's link), or empty."""
    retired: bool = False
    mu: float = 25.0
    sigma: float = 25.0 / 3.0
    matches: int = 0
    deals: int = 0
    last_batch: int = -1
    seats: dict[str, int] = field(default_factory=dict)

    @property
    def ordinal(self) -> float:
        return self.mu - 3.0 * self.sigma

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "owner": self.owner,
            "prev": self.prev,
            "retired": self.retired,
            "mu": self.mu,
            "sigma": self.sigma,
            "matches": self.matches,
            "deals": self.deals,
            "last_batch": self.last_batch,
            "seats": dict(self.seats),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EntryState:
        return cls(**{**data, "seats": dict(data.get("seats", {}))})


@dataclass
class LadderState:
    """Everything the matchmaker knows: the fold of the log up to ``upto`` records."""

    entries: dict[str, EntryState] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)
    batches: int = 0
    upto: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "entries": {n: e.to_dict() for n, e in self.entries.items()},
            "sizes": dict(self.sizes),
            "batches": self.batches,
            "upto": self.upto,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LadderState:
        return cls(
            entries={n: EntryState.from_dict(e) for n, e in data.get("entries", {}).items()},
            sizes=dict(data.get("sizes", {})),
            batches=int(data.get("batches", 0)),
            upto=int(data.get("upto", 0)),
        )

    def active(self) -> list[EntryState]:
        return [e for e in self.entries.values() if not e.retired]


# --- the fold ---------------------------------------------------------------------------


def apply_join(state: LadderState, record: Mapping[str, Any]) -> None:
    """``{"kind": "join", "bot", "owner", "prev"}``: a new entry; a new version retires
    the entry it replaces (which keeps its rating and history)."""
    name = str(record["bot"])
    prev = str(record.get("prev") or "")
    if name not in state.entries:
        state.entries[name] = EntryState(
            name=name, owner=str(record.get("owner") or name), prev=prev
        )
    else:
        state.entries[name].retired = False
    if prev and prev in state.entries:
        state.entries[prev].retired = True


def apply_leave(state: LadderState, record: Mapping[str, Any]) -> None:
    entry = state.entries.get(str(record["bot"]))
    if entry is not None:
        entry.retired = True


def apply_results(state: LadderState, batch: int, results: Sequence[Mapping[str, Any]]) -> None:
    """Rate one batch's committed results (in match order): OpenSkill per deal."""
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    for result in results:
        seats = [str(s) for s in result["seats"]]
        for seat, name in enumerate(seats):
            entry = state.entries.get(name)
            if entry is None:
                continue
            if seats.index(name) == seat:
                entry.matches += 1
                entry.last_batch = batch
            entry.seats[str(seat)] = entry.seats.get(str(seat), 0) + 1
        for deal in result["result"].get("deals", []):
            if deal.get("void"):
                continue
            names: list[str] = []
            ranks: list[float] = []
            for place, group in enumerate(deal["order"]):
                for seat in group:
                    name = seats[seat]
                    if name in state.entries and name not in names:
                        names.append(name)
                        ranks.append(float(place + 1))
            if len(names) < 2:
                continue
            teams = [
                [model.rating(mu=state.entries[n].mu, sigma=state.entries[n].sigma, name=n)]
                for n in names
            ]
            rated = model.rate(teams, ranks=ranks)
            for n, team in zip(names, rated, strict=True):
                state.entries[n].mu = float(team[0].mu)
                state.entries[n].sigma = float(team[0].sigma)
                state.entries[n].deals += 1


# --- the matchmaker -----------------------------------------------------------------------


def _seat_order(table: list[EntryState], rng: random.Random) -> tuple[str, ...]:
    """Seats to whoever has sat in them least (in a random order of the entries)."""
    k = len(table)
    free = list(range(k))
    seats: list[str] = [""] * k
    order = list(table)
    rng.shuffle(order)
    for entry in order:
        best = min(free, key=lambda s: (entry.seats.get(str(s), 0), rng.random()))
        free.remove(best)
        seats[best] = entry.name
    return tuple(seats)


def choose_size(state: LadderState, sizes: Sequence[int], rng: random.Random, players: int) -> int:
    fits = [s for s in sizes if s <= players]
    if not fits:
        return 0
    return min(fits, key=lambda s: (state.sizes.get(str(s), 0), rng.random()))


def pick_batch(
    state: LadderState,
    sizes: Sequence[int],
    tables: int,
    seed: int,
    batch: int,
    provisional: int = DEFAULT_PROVISIONAL,
) -> tuple[int, list[tuple[str, ...]]]:
    """The next batch: (table size, tables as seat tuples). Empty when too few entries."""
    rng = random.Random(derive_seed(seed, "ladder-batch", batch))
    pool = sorted(state.active(), key=lambda e: e.name)
    size = choose_size(state, sizes, rng, len(pool))
    out: list[tuple[str, ...]] = []
    used: set[str] = set()
    while size and len(out) < tables:
        free = [e for e in pool if e.name not in used]
        if len(free) < size:
            break
        table = _one_table(free, size, rng, provisional)
        if table is None:
            break
        used.update(e.name for e in table)
        out.append(_seat_order(table, rng))
    return size, out


def _one_table(
    free: list[EntryState], size: int, rng: random.Random, provisional: int
) -> list[EntryState] | None:
    draw = rng.random()
    new = [e for e in free if e.matches < provisional]
    if draw < 0.25 and new:
        candidates = new
    elif draw < 0.90:
        fewest = min(e.matches for e in free)
        candidates = [e for e in free if e.matches == fewest]
    else:
        oldest = min(e.last_batch for e in free)
        candidates = [e for e in free if e.last_batch == oldest]
    # a seed that cannot fill a table with owners apart is skipped
    rng.shuffle(candidates)
    width = rng.choice(WINDOWS)
    for first in candidates:
        table = _fill(first, free, size, width, rng)
        if table is not None:
            return table
    return None


def _fill(
    first: EntryState, free: list[EntryState], size: int, width: float, rng: random.Random
) -> list[EntryState] | None:
    table = [first]
    owners = {first.owner}
    w = width
    while len(table) < size:
        near = [
            e
            for e in free
            if e.owner not in owners and e not in table and abs(e.mu - first.mu) <= w
        ]
        if not near:
            if w > 1000:
                return None
            w *= 2
            continue
        pick = rng.choice(near)
        table.append(pick)
        owners.add(pick.owner)
    return table


def apply_batch(state: LadderState, size: int, tables: Sequence[Sequence[str]]) -> None:
    """Count a decided batch (sizes used) before its results arrive."""
    state.sizes[str(size)] = state.sizes.get(str(size), 0) + len(tables)
    state.batches += 1


def replay(
    seed: int,
    log: Sequence[Mapping[str, Any]],
    results: Mapping[int, Sequence[Mapping[str, Any]]],
    sizes: Sequence[int],
    tables: int,
    provisional: int = DEFAULT_PROVISIONAL,
) -> tuple[LadderState, list[str]]:
    """Fold the whole log from nothing, re-deciding every batch: the state, and every
    batch whose logged tables differ from the re-decided ones (none when reproducible)."""
    state = LadderState()
    problems: list[str] = []
    for record in log:
        kind = record.get("kind")
        if kind == "join":
            apply_join(state, record)
        elif kind == "leave":
            apply_leave(state, record)
        elif kind == "batch":
            n = int(record["n"])
            size, picked = pick_batch(state, sizes, tables, seed, n, provisional)
            logged = [tuple(t) for t in record["tables"]]
            if (size, picked) != (int(record["size"]), logged):
                problems.append(f"batch {n}: re-decided {size} {picked}, logged {logged}")
            apply_batch(state, int(record["size"]), logged)
            apply_results(state, n, results.get(n, []))
        state.upto += 1
    return state, problems
