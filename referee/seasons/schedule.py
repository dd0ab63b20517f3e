"""The schedule of a season: which bots meet at which table, in which seats, on which deals.

* Tables: every k-subset of the bots when there are at most ``max_subsets`` of them, else a
  balanced design in which every pair of bots shares a table equally often (+-1) and every
  bot plays equally often (+-1), found by a seeded local search over bot swaps.
* Seats: each bot sits in each seat equally often (+-1), by a seeded local search over
  seat swaps within a table.
* Deals, field duplicate (the default, as in duplicate bridge): the tables come in
  *flights* of ``m`` tables with no bot in two of them (and, with ``separate_owners``, no
  two bots of one owner in one flight). Every table of a flight plays the same *boards*
  (shuffles), table ``p`` with rotation ``r = p * k // m``: hand ``i`` goes to seat
  ``(i + r) % k`` and the dealer moves with the hands (``DealSpec(seed, rotation,
  dealer)``). So each hand of a board is held by ``m`` different bots, the standings
  compare them across tables, and no bot is ever dealt or shown a shuffle twice (a bot
  that remembered its hand would otherwise know its neighbour's on the next rotation).
  ``m = min(k, bots // k)`` (``k`` distinct bots a table; owners count once with
  ``separate_owners``); below 2 the field is too small and the deals are plain, which
  :func:`duplicate_plan` says in words. The tables are the balanced design above (so pairs,
  appearances and seats stay balanced), grouped into flights by :func:`group_flights`; a
  table that fits no flight plays boards of its own. A flight's tables are adjacent in
  play order (they run together).
* Deals, ``same_table_leaks_hands`` (explicit opt-in for trusted bots): every shuffle is
  played once per rotation at one table, by the same bots, in consecutive deals. It leaks:
  after rotation ``r`` a bot that remembers its hand knows what the next seat holds in
  rotation ``r + 1``. In Sedma head-to-head (seats ``[A, B, A, B]``) the two rotations swap
  the sides.

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
from referee.seasons.model import (
    DUPLICATE_FIELD,
    DUPLICATE_SAME_TABLE,
    MAX_SEASON_MATCHES,
    SeasonSpec,
    derive_seed,
)

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
    boards: tuple[str, ...] | None = None
    """Field duplicate: the board (shuffle) label of each deal; every table of a flight
    plays the same labels, so the standings compare hands across tables."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "match_id": self.match_id,
            "seats": list(self.seats),
            "seed": self.seed,
            "deals": None if self.deals is None else [d.to_dict() for d in self.deals],
            "boards": None if self.boards is None else list(self.boards),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ScheduledMatch:
        """The inverse of :meth:`to_dict` (a stored schedule's entry)."""
        deals, boards = data.get("deals"), data.get("boards")
        return cls(
            index=int(data["index"]),
            match_id=str(data["match_id"]),
            seats=tuple(data["seats"]),
            seed=int(data["seed"]),
            deals=None if deals is None else tuple(DealSpec.from_dict(d) for d in deals),
            boards=None if boards is None else tuple(boards),
        )


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


def _swap_change(tx: Sequence[int], ty: Sequence[int], a: int, b: int) -> Counter[Pair]:
    """How the meetings of each pair change when ``a`` of table ``tx`` and ``b`` of table
    ``ty`` swap seats."""
    change: Counter[Pair] = Counter()
    for other in tx:
        if other != a:
            change[_pair(a, other)] -= 1
            change[_pair(b, other)] += 1
    for other in ty:
        if other != b:
            change[_pair(b, other)] -= 1
            change[_pair(a, other)] += 1
    return change


def _draw_distinct(stream: list[int], size: int, n: int, rng: random.Random) -> list[int]:
    """``size`` different bots of ``range(n)`` taken from the front of ``stream`` (a queue of
    shuffled rounds of every bot, refilled with a new shuffled round when it runs dry or
    holds only bots already drawn): each bot is drawn about as often as every other."""
    drawn: list[int] = []
    while len(drawn) < size:
        if not stream:
            stream.extend(range(n))
            rng.shuffle(stream)
        # the next bot of the stream that is not drawn yet
        for i, bot in enumerate(stream):
            if bot not in drawn:
                drawn.append(stream.pop(i))
                break
        else:
            refill = list(range(n))
            rng.shuffle(refill)
            stream.extend(refill)
    return drawn


def _initial_tables(n: int, k: int, total: int, rng: random.Random) -> list[list[int]]:
    stream: list[int] = []
    return [_draw_distinct(stream, k, n, rng) for _ in range(total)]


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
        change = _swap_change(tx, ty, a, b)
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


# --- flights (field duplicate) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DuplicatePlan:
    """How a season's deals are duplicated: ``tables_per_board`` tables play each board
    (0: no duplicate), ``mode`` as configured, ``note`` the sentence a person reads."""

    mode: str
    tables_per_board: int
    note: str


def duplicate_plan(spec: SeasonSpec, owners: Mapping[str, str] | None = None) -> DuplicatePlan:
    """Whether the field is large enough for field duplicate, and how many tables a board."""
    mode = str(spec.options.duplicate)
    k = spec.players_per_match
    if mode == DUPLICATE_SAME_TABLE:
        return DuplicatePlan(
            mode,
            0,
            "same-table duplicate (same_table_leaks_hands): every shuffle is replayed with the "
            "hands rotated at one table by the same bots; a bot that remembers its hand knows "
            "its neighbours' cards on the next rotation (for trusted bots only)",
        )
    if mode != DUPLICATE_FIELD:
        return DuplicatePlan(mode, 0, "plain deals: every deal a new shuffle")
    units = len(spec.bots)
    if spec.options.separate_owners:
        owned = {owners.get(b, "") for b in spec.bots} if owners else set()
        ownerless = sum(1 for b in spec.bots if not (owners or {}).get(b, ""))
        units = len(owned - {""}) + ownerless
    m = min(spec.duplicate_rotations, units // k)
    if m < 2:
        who = "owners" if spec.options.separate_owners else "bots"
        return DuplicatePlan(
            mode,
            0,
            f"duplicate is off: field duplicate plays each shuffle at 2 or more tables with "
            f"no bot (no owner with separate_owners) at two of them, which needs at least "
            f"{2 * k} {who} for tables of {k}; this season has {units}: every deal is a "
            "new shuffle",
        )
    return DuplicatePlan(
        mode,
        m,
        f"field duplicate: each shuffle is played at {m} tables by different bots, each "
        f"hand held by {m} different bots, never twice by one bot; the standings compare "
        "them across tables (dup_score)",
    )


def group_flights(
    tables: Sequence[Sequence[int]],
    m: int,
    rng: random.Random,
    forbidden: Collection[Pair] = (),
) -> list[list[int]]:
    """Group table indices into flights of at most ``m`` tables with no bot in two tables
    of a flight and no forbidden pair (two bots of one owner) in one flight.

    Seeded greedy passes over shuffled orders; the pass with the most tables in large
    flights wins (a perfect grouping ends the search). A table no other table fits is a
    flight of one: its boards are played there only, still never twice by a bot."""
    bad = {_pair(a, b) for a, b in forbidden}
    sets = [frozenset(t) for t in tables]
    best: list[list[int]] = []
    best_score = -1
    tries = 64 if len(tables) <= 64 else 16
    for _ in range(tries):
        order = list(range(len(tables)))
        rng.shuffle(order)
        used: set[int] = set()
        flights: list[list[int]] = []
        for i in order:
            if i in used:
                continue
            flight, members = [i], set(sets[i])
            used.add(i)
            for j in order:
                if len(flight) == m:
                    break
                if j in used or not members.isdisjoint(sets[j]):
                    continue
                if bad and any(_pair(a, b) in bad for a in sets[j] for b in members):
                    continue
                flight.append(j)
                members |= sets[j]
                used.add(j)
            flights.append(flight)
        score = sum(len(f) ** 2 for f in flights)
        if score > best_score:
            best, best_score = flights, score
        if all(len(f) == m for f in flights):
            break
    return best


def field_flights(
    n: int, k: int, m: int, rng: random.Random, forbidden: Collection[Pair] = ()
) -> list[list[tuple[int, ...]]] | None:
    """Flights of ``m`` bot-disjoint tables of ``k`` in which every allowed pair shares a
    table equally often (+-1), every bot plays equally often (+-1) and no forbidden pair is
    in one flight; ``None`` when the seeded local search (moves that keep the tables of a
    flight disjoint, a bounded number of steps) finds none."""
    bad = {_pair(a, b) for a, b in forbidden}
    allowed_pairs = n * (n - 1) // 2 - len(bad)
    first = max(1, math.ceil(allowed_pairs / (m * k * (k - 1) // 2)))
    candidates = sorted(range(first, first + n), key=lambda f: ((f * m * k) % n != 0, f))
    # pairs +-1 where such flights exist; many (n, k, m) have none (10 bots in two tables
    # of 5: no set of bipartitions meets every pair equally often), then +-2
    for spread in (1, 2):
        for count in candidates:
            if spread == 1 and not bad and not _may_balance(n, k, count * m):
                continue
            flights = _search_flights(n, k, m, count, rng, bad, spread)
            if _flights_done(n, flights, bad, spread):
                return [[tuple(sorted(t)) for t in flight] for flight in flights]
    return None


def _flights_done(
    n: int, flights: Sequence[Sequence[Sequence[int]]], bad: set[Pair], spread: int = 1
) -> bool:
    tables = [t for flight in flights for t in flight]
    counts = pair_counts(tables)
    if any(counts[p] for p in bad):
        return False
    values = [counts[p] for p in itertools.combinations(range(n), 2) if p not in bad]
    if values and max(values) - min(values) > spread:
        return False
    appearances = Counter(b for t in tables for b in t)
    if max(appearances.values()) - min(appearances.get(b, 0) for b in range(n)) > 1:
        return False
    for flight in flights:
        members = sorted(b for t in flight for b in t)
        if any(p in bad for p in itertools.combinations(members, 2)):
            return False
    return True


def _search_flights(
    n: int, k: int, m: int, count: int, rng: random.Random, bad: set[Pair], spread: int
) -> list[list[list[int]]]:
    stream: list[int] = []
    flights: list[list[list[int]]] = []
    for _ in range(count):
        members = _draw_distinct(stream, m * k, n, rng)
        flights.append([members[t * k : (t + 1) * k] for t in range(m)])
    slots = [(f, t) for f in range(count) for t in range(m)]
    counts = pair_counts([t for flight in flights for t in flight])
    member_sets = [{b for t in flight for b in t} for flight in flights]
    penalty = 1000

    def cost(p: Pair, c: int) -> int:
        return c * c * (penalty if p in bad else 1)

    def bad_with(bot: int, others: Collection[int]) -> int:
        return sum(1 for o in others if o != bot and _pair(bot, o) in bad) if bad else 0

    iterations = 2000 + 100 * count * m * k
    for step in range(iterations):
        if step % 64 == 0 and _flights_done(n, flights, bad, spread):
            break
        (fx, x), (fy, y) = rng.choice(slots), rng.choice(slots)
        if (fx, x) == (fy, y):
            continue
        tx, ty = flights[fx][x], flights[fy][y]
        ia, ib = rng.randrange(k), rng.randrange(k)
        a, b = tx[ia], ty[ib]
        if a == b:
            continue
        flight_delta = 0
        if fx != fy:
            if b in member_sets[fx] or a in member_sets[fy]:
                continue
            flight_delta = (
                bad_with(b, member_sets[fx] - {a})
                - bad_with(a, member_sets[fx])
                + bad_with(a, member_sets[fy] - {b})
                - bad_with(b, member_sets[fy])
            )
        change = _swap_change(tx, ty, a, b)
        delta = sum(cost(p, counts[p] + d) - cost(p, counts[p]) for p, d in change.items() if d)
        if delta + penalty * flight_delta <= 0:
            tx[ia], ty[ib] = b, a
            for p, d in change.items():
                counts[p] += d
            if fx != fy:
                member_sets[fx] = (member_sets[fx] - {a}) | {b}
                member_sets[fy] = (member_sets[fy] - {b}) | {a}
    return flights


FLIGHT_SEARCH_MAX = 96
"""Above ``bots * table size`` of this the flight search is not tried (it takes minutes and
finds nothing for 14-16 bots at tables of 7-8); such tables keep boards of their own."""


def plan_flights(
    n: int,
    k: int,
    m: int,
    rng: random.Random,
    max_subsets: int,
    forbidden: Collection[Pair] = (),
    flight_forbidden: Collection[Pair] = (),
) -> tuple[list[tuple[int, ...]], list[list[int]]]:
    """The tables of one round and their flights (lists of table indices).

    First the usual design (every k-subset, or the balanced design) grouped by
    :func:`group_flights`; when more than a tenth of the tables is left out of full
    flights, a design built as flights (:func:`field_flights`, also balanced for pairs and
    appearances) is used if one is found."""
    tables = choose_tables(n, k, rng, max_subsets, forbidden)
    flights = group_flights(tables, m, rng, flight_forbidden)
    alone = sum(len(f) for f in flights if len(f) < m)
    if alone <= max(m - 1, len(tables) // 10) or n * k > FLIGHT_SEARCH_MAX:
        return tables, flights  # (a few tables always stay out when m doesn't divide)
    built = field_flights(n, k, m, rng, flight_forbidden)
    if built is None:
        return tables, flights
    out_tables = [t for flight in built for t in flight]
    out_flights = [list(range(i * m, (i + 1) * m)) for i in range(len(built))]
    return out_tables, out_flights


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
    if spec.options.duplicate != DUPLICATE_SAME_TABLE:
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


def owner_flights(
    bots: Sequence[str], owners: Mapping[str, str] | None, spec: SeasonSpec
) -> set[Pair]:
    """Pairs that may not share a flight: two bots of one owner with ``separate_owners``
    (they could pool what they saw of a board)."""
    return owner_pairs(bots, owners or {}) if spec.options.separate_owners else set()


def board_deals(
    spec: SeasonSpec, seed: int, flight: int, position: int, m: int
) -> tuple[tuple[DealSpec, ...], tuple[str, ...]]:
    """Field duplicate: the deals and board labels of table ``position`` of ``flight``.

    Board ``j`` of the flight is one shuffle (seed ``derive_seed(seed, "board", flight,
    j)``); the table plays it with rotation ``position * rotations // m`` and the dealer
    moved with the hands, so the ``m`` tables hold each hand with ``m`` different bots."""
    rotations = spec.duplicate_rotations
    rotation = position * rotations // m
    deals = tuple(
        DealSpec(
            seed=derive_seed(seed, "board", flight, j),
            rotation=rotation,
            dealer=(j + rotation) % spec.table_size,
        )
        for j in range(spec.deals_per_match)
    )
    return deals, tuple(f"f{flight}b{j}" for j in range(spec.deals_per_match))


def build_schedule(
    spec: SeasonSpec, seed: int, owners: Mapping[str, str] | None = None
) -> list[ScheduledMatch]:
    """Every match of the season, in play order, deterministic from ``seed``."""
    bots = list(spec.bots)
    rng = random.Random(derive_seed(seed, "schedule"))
    forbidden = owner_pairs(bots, owners or {}) if spec.options.separate_owners else set()
    per_table = spec.players_per_match
    m = duplicate_plan(spec, owners).tables_per_board if spec.deals_per_match else 0
    # field duplicate: (flight, size, position) of every table; a flight's tables are
    # adjacent in play order, so they are in flight together
    places: list[tuple[int, int, int]] = []
    if m >= 2:
        one_round, flights = plan_flights(
            len(bots),
            per_table,
            m,
            rng,
            spec.options.max_subsets,
            forbidden,
            owner_flights(bots, owners, spec),
        )
        tables: list[tuple[int, ...]] = []
        for r in range(spec.options.rounds):
            order = list(range(len(flights)))
            rng.shuffle(order)
            for j, f in enumerate(order):
                for p, t in enumerate(flights[f]):
                    tables.append(one_round[t])
                    places.append((r * len(order) + j, len(flights[f]), p))
    else:
        one_round = choose_tables(len(bots), per_table, rng, spec.options.max_subsets, forbidden)
        rounds: list[list[tuple[int, ...]]] = []
        for _ in range(spec.options.rounds):
            round_tables = list(one_round)
            rng.shuffle(round_tables)
            rounds.append(round_tables)
        tables = [t for r in rounds for t in r]
    if len(tables) > MAX_SEASON_MATCHES:
        raise ConfigError(
            f"this season would play {len(tables)} matches: at most {MAX_SEASON_MATCHES} "
            "(lower options.rounds or options.max_subsets, or list fewer bots)"
        )
    seatings = assign_seats(tables, rng)
    matches: list[ScheduledMatch] = []
    for index, seating in enumerate(seatings):
        names = tuple(bots[i] for i in seating)
        if spec.head_to_head:
            names = (names[0], names[1], names[0], names[1])  # partners opposite (SD-1)
        boards: tuple[str, ...] | None = None
        deals: tuple[DealSpec, ...] | None
        if places:
            flight, size, position = places[index]
            deals, boards = board_deals(spec, seed, flight, position, size)
        else:
            deals = deal_specs(spec, seed, index, spec.table_size)
        matches.append(
            ScheduledMatch(
                index=index,
                match_id=match_id(spec.name, index),
                seats=names,
                seed=derive_seed(seed, index, "match"),
                deals=deals,
                boards=boards,
            )
        )
    return matches


GIVEN_KIND = "given"
"""The season hash's ``schedule`` field when the tables were chosen outside the season (a
continuous ladder's batch, referee/ladder): verify rebuilds the deals from the seed."""


def given_schedule(
    spec: SeasonSpec, seed: int, tables: Sequence[Sequence[str]]
) -> list[ScheduledMatch]:
    """Matches at the ``tables`` given (seat order as given), plain deals from ``seed``."""
    return [
        ScheduledMatch(
            index=index,
            match_id=match_id(spec.name, index),
            seats=tuple(seats),
            seed=derive_seed(seed, index, "match"),
            deals=deal_specs(spec, seed, index, len(seats)),
        )
        for index, seats in enumerate(tables)
    ]
