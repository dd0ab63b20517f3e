"""A version test: NEW and OLD play the same duplicate deals against the same field.

The schedule is a season's (stored, enqueued, committed and verified by the season
machinery): match ``2p`` seats NEW with the field, match ``2p + 1`` seats OLD in NEW's seat
with the same field in the same seats, and both play the same deals (same seeds, same
rotation, same dealer). Each deal of such a pair is one *duplicate set*; its difference
``score(NEW) - score(OLD)`` is the paired unit of ``referee/seasons/paired.py``. NEW's seat
moves round the table from pair to pair (in Sedma head-to-head, its side), so seats are
balanced. Neither NEW nor OLD sees a shuffle twice; only the field (reference bots, which
remember nothing) does.

Bots: ``spec.bots = (NEW, OLD, *field)``; Sevens needs ``table_size - 1`` field bots (the
field rotates when there are more), Sedma head-to-head one or more (one per pair, in turn).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from referee.errors import ConfigError
from referee.games.base import DealSpec
from referee.games.policies import Policy
from referee.match.spec import CommittedResult
from referee.seasons.inprocess import play_scheduled
from referee.seasons.model import DUPLICATE_FIELD, SeasonOptions, SeasonSpec, derive_seed
from referee.seasons.paired import Sprt
from referee.seasons.schedule import ScheduledMatch, match_id

SCHEDULE_KIND = "versus"
"""The season hash's ``schedule`` field for a version test (verify rebuilds with it)."""
VERSUS_NOTE = (
    "version test: NEW and OLD play the same deals in the same seats against the same field "
    "(one duplicate set per deal)"
)

DEFAULT_FIELD = {"sevens": ("heuristic", "heuristic", "heuristic"), "sedma": ("heuristic",)}
"""The default field, by policy (the platform's reference bots, docs/ladder.md)."""


def field_needed(spec: SeasonSpec) -> int:
    return 1 if spec.head_to_head else spec.table_size - 1


def check_versus(spec: SeasonSpec) -> None:
    """One clear line when the bots cannot make a version test."""
    if len(spec.bots) < 3:
        raise ConfigError("a version test needs NEW, OLD and at least one field bot")
    new, old, field = spec.bots[0], spec.bots[1], spec.bots[2:]
    if new == old:
        raise ConfigError(f"NEW and OLD are both {new!r}: name two different entries")
    if {new, old} & set(field):
        raise ConfigError("NEW and OLD cannot also play in the field: name other field bots")
    if len(set(field)) < field_needed(spec):
        raise ConfigError(
            f"{spec.game} at tables of {spec.table_size} needs {field_needed(spec)} distinct "
            f"field bots, got {len(set(field))}: name more with --field"
        )
    if spec.deals_per_match < 1:
        raise ConfigError("a version test needs deals_per_match >= 1 (each deal is one set)")


def versus_schedule(spec: SeasonSpec, seed: int, pairs: int) -> list[ScheduledMatch]:
    """The ``2 * pairs`` matches of a version test, deterministic from ``seed``."""
    check_versus(spec)
    new, old, field = spec.bots[0], spec.bots[1], spec.bots[2:]
    k = spec.table_size
    out: list[ScheduledMatch] = []
    for p in range(pairs):
        if spec.head_to_head:
            f = field[p % len(field)]
            seats: list[str] = [new, f, new, f] if p % 2 == 0 else [f, new, f, new]
        else:
            others = [field[(p + i) % len(field)] for i in range(k - 1)]
            where = p % k
            seats = [*others[:where], new, *others[where:]]
        deals = tuple(
            DealSpec(seed=derive_seed(seed, "board", p, j), rotation=0, dealer=(p + j) % k)
            for j in range(spec.deals_per_match)
        )
        boards = tuple(f"s{p}b{j}" for j in range(spec.deals_per_match))
        match_seed = derive_seed(seed, p, "match")
        for side, bot in enumerate((new, old)):
            index = 2 * p + side
            named = tuple(bot if s == new else s for s in seats)
            out.append(
                ScheduledMatch(index, match_id(spec.name, index), named, match_seed, deals, boards)
            )
    return out


def placing(order: Sequence[Sequence[int]], seat: int, seats: int) -> float:
    """The share of the other seats ``seat`` finished ahead of in a deal (a tie counts
    half): the per-deal score behind the platform's Elo (docs/seasons.md, Standings)."""
    ahead = 0.0
    for group in order:
        if seat in group:
            return (seats - ahead - len(group) + (len(group) - 1) / 2) / max(1, seats - 1)
        ahead += len(group)
    return 0.0


def set_rows(
    spec: SeasonSpec, results: Mapping[str, CommittedResult], pairs: int
) -> list[tuple[float, float, float, float]]:
    """Per duplicate set, in schedule order: (NEW's score, OLD's score, NEW's placing,
    OLD's placing), for every pair whose two matches both committed (void deals skipped).
    Scores are signed so that more is better (a penalty-points preset counts against); in
    Sedma head-to-head the placing is side against side (1, 0 or a half)."""
    new, old = spec.bots[0], spec.bots[1]
    out: list[tuple[float, float, float, float]] = []
    for p in range(pairs):
        a = results.get(match_id(spec.name, 2 * p))
        b = results.get(match_id(spec.name, 2 * p + 1))
        if a is None or b is None:
            continue
        sa, sb = list(a["seats"]).index(new), list(b["seats"]).index(old)
        k = 2 if spec.head_to_head else len(a["seats"])
        sign = 1.0 if a["result"].get("higher_is_better", True) else -1.0
        for da, db in zip(a["result"].get("deals", []), b["result"].get("deals", []), strict=False):
            if da.get("void") or db.get("void"):
                continue
            oa, ob = da["order"], db["order"]
            if spec.head_to_head:  # seats of a side as one entry
                oa = [sorted({s % 2 for s in g}) for g in oa]
                ob = [sorted({s % 2 for s in g}) for g in ob]
            out.append(
                (
                    sign * float(da["deltas"][sa]),
                    sign * float(db["deltas"][sb]),
                    placing(oa, sa % k if spec.head_to_head else sa, k),
                    placing(ob, sb % k if spec.head_to_head else sb, k),
                )
            )
    return out


def set_differences(
    spec: SeasonSpec, results: Mapping[str, CommittedResult], pairs: int
) -> list[float]:
    """Per duplicate set, in schedule order, ``score(NEW) - score(OLD)``."""
    return [a - b for a, b, _, _ in set_rows(spec, results, pairs)]


def done_prefix(spec: SeasonSpec, results: Mapping[str, CommittedResult], pairs: int) -> int:
    """How many pairs from the first have both matches committed: the sequential test
    reads only these, in schedule order, so its decision depends on the seed and the
    results, never on which match happened to finish first."""
    for p in range(pairs):
        if not all(match_id(spec.name, 2 * p + s) in results for s in (0, 1)):
            return p
    return pairs


def versus_spec(
    new: str,
    old: str,
    field: Sequence[str],
    game: str,
    *,
    preset: str = "",
    deals: int = 4,
    name: str = "",
    seed: int | None = None,
    table_size: int = 4,
) -> SeasonSpec:
    spec = SeasonSpec(
        name=name,
        game=game,
        preset=preset,
        bots=(new, old, *field),
        table_size=table_size,
        deals_per_match=deals,
        seed=seed,
        # the field plays both tables of a pair (it is the yardstick); NEW and OLD may be
        # one author's: the version test compares them, it never seats them together
        options=SeasonOptions(duplicate=DUPLICATE_FIELD, separate_owners=False, window=8),
    )
    check_versus(spec)
    return spec


def run_inprocess(
    spec: SeasonSpec,
    policies: Mapping[str, Policy],
    *,
    pairs: int,
    sprt: Sprt | None = None,
    progress: Callable[[list[float]], None] | None = None,
) -> list[float]:
    """Play the test in this process, pair by pair, until ``pairs`` or the SPRT decides."""
    assert spec.seed is not None, "an in-process version test needs a seed"
    rules = spec.validate_with_engine()
    schedule = versus_schedule(spec, spec.seed, pairs)
    diffs: list[float] = []
    for p in range(pairs):
        got = {
            m.match_id: play_scheduled(spec, rules, m, policies)
            for m in schedule[2 * p : 2 * p + 2]
        }
        for d in set_differences(spec, got, pairs):
            diffs.append(d)
            if sprt is not None:
                sprt.add(d)
        if progress is not None:
            progress(diffs)
        if sprt is not None and sprt.decision:
            break
    return diffs
