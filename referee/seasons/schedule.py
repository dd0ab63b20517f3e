"""The schedule of a season: which bots meet at which table, in which seats, on which deals.

* Tables: every k-subset of the bots when there are at most ``max_subsets`` of them, else a
  balanced design in which every pair of bots shares a table equally often (+-1) and every
  bot plays equally often (+-1), found by a seeded local search over bot swaps.
* Seats: each bot sits in each seat equally often (+-1), by a seeded local search over
  seat swaps within a table.
* Deals: with duplicate deals every shuffle is played once per rotation, hand ``i`` going
  to seat ``(i + r) % k`` and the dealer rotating with the hands, so every bot at the table
  plays every hand from the same position (``DealSpec(seed, rotation, dealer)``). In Sedma
  head-to-head (seats ``[A, B, A, B]``) the two rotations swap the sides.

Everything is deterministic from the season seed: the random generators are seeded with
seeds derived through SHA-256 (:func:`referee.seasons.model.derive_seed`).
"""

from __future__ import annotations

import itertools
import math
import random
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from referee.errors import ConfigError
from referee.games.base import DealSpec
from referee.seasons.model import SeasonSpec, derive_seed

Pair = tuple[int, int]
_NO_TABLE = (
    "no table of {k} keeps every owner's bots apart: add bots of other owners or set "
    "separate_owners = false"
)


@dataclass(frozen=True, slots=True)
class ScheduledMatch:
    """One match of a season: its index, id, the bot in each seat and its deals."""

    index: int
    match_id: str
    seats: tuple[str, ...]
    seed: int
    deals: tuple[DealSpec, ...] | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "match_id": self.match_id,
            "seats": list(self.seats),
            "seed": self.seed,
            "deals": None if self.deals is None else [d.to_dict() for d in self.deals],
        }


def match_id(season: str, index: int) -> str:
    return f"{season}-m{index:04d}"


def _pair(a: int, b: int) -> Pair:
    return (a, b) if a < b else (b, a)


def pair_counts(tables: Sequence[Sequence[int]]) -> Counter[Pair]:
    """How often each pair of bots shares a table."""
    counts: Counter[Pair] = Counter()
    for table in tables:
        for a, b in itertools.combinations(table, 2):
            counts[_pair(a, b)] += 1
    return counts


def seat_counts(seatings: Sequence[Sequence[int]]) -> dict[int, Counter[int]]:
    """Per bot: how often it sat in each seat."""
    out: dict[int, Counter[int]] = {}
    for seating in seatings:
        for seat, bot in enumerate(seating):
            out.setdefault(bot, Counter())[seat] += 1
    return out


# --- tables -------------------------------------------------------------------------------


def all_subsets(n: int, k: int, forbidden: Collection[Pair] = ()) -> list[tuple[int, ...]]:
    """Every k-subset of ``range(n)`` that holds no forbidden pair."""
    bad = set(forbidden)
    return [
        combo
        for combo in itertools.combinations(range(n), k)
        if not any(p in bad for p in itertools.combinations(combo, 2))
    ]


def _is_balanced(n: int, tables: Sequence[Sequence[int]], forbidden: set[Pair]) -> bool:
    counts = pair_counts(tables)
    if any(counts[p] for p in forbidden):
        return False
    values = [counts[p] for p in itertools.combinations(range(n), 2) if p not in forbidden]
    return not values or max(values) - min(values) <= 1


def balanced_tables(
    n: int, k: int, rng: random.Random, forbidden: Collection[Pair] = ()
) -> list[tuple[int, ...]]:
    """Tables of ``k`` of ``n`` bots where every allowed pair meets equally often (+-1).

    Tries the smallest number of tables that can cover every pair and lets every bot play
    equally often, then others. Within a table count, bots are dealt round-robin from
    shuffled orders (so appearances differ by at most one) and improved by swapping bots
    between tables, which keeps appearances fixed and minimises the sum of squared pair
    counts.
    """
    if not 2 <= k <= n:
        raise ConfigError(f"tables of {k} need at least {k} bots, not {n}")
    bad = {_pair(a, b) for a, b in forbidden}
    if bad and math.comb(n, k) <= 5000 and not all_subsets(n, k, bad):
        raise ConfigError(_NO_TABLE.format(k=k))
    allowed_pairs = n * (n - 1) // 2 - len(bad)
    per_table = k * (k - 1) // 2
    first = max(1, math.ceil(allowed_pairs / per_table))
    # Table counts where every bot plays equally often first (fairer, and found quickly).
    candidates = sorted(range(first, first + 4 * n), key=lambda t: ((t * k) % n != 0, t))
    for total in candidates:
        if not bad and not _may_balance(n, k, total):
            continue
        for _restart in range(3):
            tables = _search_tables(n, k, total, rng, bad)
            if _is_balanced(n, tables, bad):
                return [tuple(sorted(t)) for t in tables]
    raise ConfigError(
        f"no balanced design of tables of {k} for {n} bots was found"
        + (" with owners kept apart; set separate_owners = false" if bad else "")
        + f"; raise max_subsets to {math.comb(n, k)} to play every table instead"
    )


def _may_balance(n: int, k: int, total: int) -> bool:
    """A necessary condition for ``total`` tables to balance pairs (+-1) with appearances
    +-1: every bot's ``appearances * (k - 1)`` partner slots must fit between ``lam`` and
    ``lam + 1`` meetings with each of the ``n - 1`` others."""
    pairs = n * (n - 1) // 2
    lam = total * k * (k - 1) // 2 // pairs
    low, high = total * k // n, -(-total * k // n)
    appearances = {low, high} if (total * k) % n else {low}
    return all((n - 1) * lam <= r * (k - 1) <= (n - 1) * (lam + 1) for r in appearances)


def _initial_tables(n: int, k: int, total: int, rng: random.Random) -> list[list[int]]:
    stream: list[int] = []
    tables: list[list[int]] = []
    for _ in range(total):
        table: list[int] = []
        while len(table) < k:
            if not stream:
                stream = list(range(n))
                rng.shuffle(stream)
            # the next bot of the stream that is not at this table yet
            for i, bot in enumerate(stream):
                if bot not in table:
                    table.append(stream.pop(i))
                    break
            else:
                refill = list(range(n))
                rng.shuffle(refill)
                stream.extend(refill)
        tables.append(table)
    return tables


def _search_tables(
    n: int, k: int, total: int, rng: random.Random, bad: set[Pair]
) -> list[list[int]]:
    tables = _initial_tables(n, k, total, rng)
    counts = pair_counts(tables)
    penalty = 1000

    def cost(p: Pair, c: int) -> int:
        return c * c * (penalty if p in bad else 1)

    iterations = 4000 + 400 * total * k
    for step in range(iterations):
        if step % 64 == 0 and _is_balanced(n, tables, bad):
            break
        x, y = rng.randrange(total), rng.randrange(total)
        if x == y:
            continue
        tx, ty = tables[x], tables[y]
        ia, ib = rng.randrange(k), rng.randrange(k)
        a, b = tx[ia], ty[ib]
        if a == b or a in ty or b in tx:
            continue
        change: Counter[Pair] = Counter()
        for other in tx:
            if other != a:
                change[_pair(a, other)] -= 1
                change[_pair(b, other)] += 1
        for other in ty:
            if other != b:
                change[_pair(b, other)] -= 1
                change[_pair(a, other)] += 1
        delta = sum(cost(p, counts[p] + d) - cost(p, counts[p]) for p, d in change.items() if d)
        if delta <= 0:
            tx[ia], ty[ib] = b, a
            for p, d in change.items():
                counts[p] += d
    return tables


def choose_tables(
    n: int, k: int, rng: random.Random, max_subsets: int, forbidden: Collection[Pair] = ()
) -> list[tuple[int, ...]]:
    """All k-subsets when there are at most ``max_subsets``, else a balanced design."""
    if math.comb(n, k) <= max_subsets:
        tables = all_subsets(n, k, forbidden)
        if not tables:
            raise ConfigError(_NO_TABLE.format(k=k))
        return tables
    return balanced_tables(n, k, rng, forbidden)


# --- seats --------------------------------------------------------------------------------


def _seats_balanced(seatings: Sequence[Sequence[int]], k: int) -> bool:
    for counter in seat_counts(seatings).values():
        values = [counter[s] for s in range(k)]
        if max(values) - min(values) > 1:
            return False
    return True


def assign_seats(tables: Sequence[Sequence[int]], rng: random.Random) -> list[tuple[int, ...]]:
    """Order each table's bots into seats so each bot sits in each seat equally often (+-1).

    Starts from a rotation of each table and improves it by swapping two bots' seats at
    one table when that lowers the sum of squared seat counts (sideways moves allowed).
    """
    if not tables:
        return []
    k = len(tables[0])
    seatings = [list(t) for t in tables]
    for i, seating in enumerate(seatings):
        rng.shuffle(seating)
        shift = i % k
        seatings[i] = seating[shift:] + seating[:shift]
    counts: dict[int, list[int]] = {}
    for seating in seatings:
        for seat, bot in enumerate(seating):
            counts.setdefault(bot, [0] * k)[seat] += 1
    iterations = 2000 + 200 * len(seatings) * k
    for step in range(iterations):
        if step % 64 == 0 and _seats_balanced(seatings, k):
            break
        seating = seatings[rng.randrange(len(seatings))]
        s1, s2 = rng.randrange(k), rng.randrange(k)
        if s1 == s2:
            continue
        a, b = seating[s1], seating[s2]
        ca, cb = counts[a], counts[b]
        before = ca[s1] ** 2 + ca[s2] ** 2 + cb[s1] ** 2 + cb[s2] ** 2
        after = (ca[s1] - 1) ** 2 + (ca[s2] + 1) ** 2 + (cb[s2] - 1) ** 2 + (cb[s1] + 1) ** 2
        if after <= before:
            seating[s1], seating[s2] = b, a
            ca[s1] -= 1
            ca[s2] += 1
            cb[s2] -= 1
            cb[s1] += 1
    return [tuple(s) for s in seatings]


# --- the whole schedule -------------------------------------------------------------------


def owner_pairs(bots: Sequence[str], owners: Mapping[str, str]) -> set[Pair]:
    """Pairs of bot indices that share a (non-empty) owner."""
    out: set[Pair] = set()
    for i, j in itertools.combinations(range(len(bots)), 2):
        oi, oj = owners.get(bots[i], ""), owners.get(bots[j], "")
        if oi and oi == oj:
            out.add((i, j))
    return out


def deal_specs(spec: SeasonSpec, seed: int, index: int, seats: int) -> tuple[DealSpec, ...] | None:
    """The deals of match ``index`` (``None``: the rules decide the match length)."""
    total = spec.deals_per_match
    if total == 0:
        return None
    if not spec.options.duplicate:
        return tuple(
            DealSpec(seed=derive_seed(seed, index, j), rotation=0, dealer=j % seats)
            for j in range(total)
        )
    rotations = spec.duplicate_rotations
    deals: list[DealSpec] = []
    for shuffle in range(total // rotations):
        deal_seed = derive_seed(seed, index, shuffle)
        for r in range(rotations):
            deals.append(DealSpec(seed=deal_seed, rotation=r, dealer=(shuffle + r) % seats))
    return tuple(deals)


def build_schedule(
    spec: SeasonSpec, seed: int, owners: Mapping[str, str] | None = None
) -> list[ScheduledMatch]:
    """Every match of the season, in play order, deterministic from ``seed``."""
    bots = list(spec.bots)
    rng = random.Random(derive_seed(seed, "schedule"))
    forbidden = owner_pairs(bots, owners or {}) if spec.options.separate_owners else set()
    per_table = spec.players_per_match
    one_round = choose_tables(len(bots), per_table, rng, spec.options.max_subsets, forbidden)
    rounds: list[list[tuple[int, ...]]] = []
    for _ in range(spec.options.rounds):
        round_tables = list(one_round)
        rng.shuffle(round_tables)
        rounds.append(round_tables)
    tables = [t for r in rounds for t in r]
    seatings = assign_seats(tables, rng)
    matches: list[ScheduledMatch] = []
    for index, seating in enumerate(seatings):
        names = tuple(bots[i] for i in seating)
        if spec.head_to_head:
            names = (names[0], names[1], names[0], names[1])  # partners opposite (SD-1)
        matches.append(
            ScheduledMatch(
                index=index,
                match_id=match_id(spec.name, index),
                seats=names,
                seed=derive_seed(seed, index, "match"),
                deals=deal_specs(spec, seed, index, spec.table_size),
            )
        )
    return matches
