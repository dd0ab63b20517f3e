"""The strength ladder: the reference bots against each other, per game family.

For each family a season of the rungs (random, first-legal, heuristic, mc, ismcts) is
played in-process (referee/seasons/inprocess.py: the platform's own schedule, engine and
per-turn seeds, shown equal to a platform season by tests/ladder/test_reference_bots_grpc.py)
with duplicate deals:

* Sevens family: ``fan-tan`` (chips), tables of 4 (every 4 of the 5 rungs), one shuffle
  played in the 4 rotations per match;
* Sedma: ``sedma`` for four, head-to-head (one rung holds both seats of a partnership),
  every pair of rungs, 2 shuffles x 2 rotations (the sides swap) per match.

Printed per family: Elo with its 95% interval (the standings' fit,
referee/seasons/ratings.py), pairwise win rate (share of the other bots at the table
finished ahead of, ties half), score per deal in the game's unit, and for each pair of
adjacent rungs the upper rung's head-to-head win rate with a 95% interval (clustered by
match, Student t), and the deals needed to separate the two at 95% with plain deals and
with duplicate deals (docs/seasons.md "How many deals").

    .venv/bin/python bench/strength.py                     # both families, ~1 h on 1 core
    .venv/bin/python bench/strength.py --family sedma --rounds 4 --json out.json

``--targets`` runs the evaluation protocol of the reference bots instead (one protocol for
every figure; docs/ladder.md "Evaluation protocol"): duplicate deal sets, each one shuffle
dealt by a fixed dealer and played once per rotation of the seats, so every seat of the
shuffle is held by the bot under test once; the statistic is averaged per set, and its 95%
interval is a bootstrap over sets (sets are independent, deals within a set are not).

* ``vs-random``: the bot in one seat (Sevens: ``sevens`` and ``fan-tan``, 4 players) against
  three ``random``: share of deals won, chips per deal; Sedma (``sedma``, 4 players): the
  bot holds one partnership against two ``random``, share of hands won;
* ``head-to-head``: each rung against the one below it: the upper rung in one seat against
  three of the lower (Sevens; the statistic is the share of the other seats it finishes
  ahead of, ties half, 0.5 when equal), or holding one partnership against the lower
  (Sedma; hands won). A rung is separated when the interval lies above 0.5.

    .venv/bin/python bench/strength.py --targets      # the README's table: every row, ~40 min
    .venv/bin/python bench/strength.py --targets --sets 100 --budget-ms 200
    .venv/bin/python bench/strength.py --targets --family sevens --protocols head-to-head \
        --pairs mc:heuristic --sets 60          # one row (rows run in parallel processes)

The search bots run on their work limit (``--budget-ms`` is a safety cap, 5 s by default,
so that a loaded machine does not change the results); on the platform they also stop at a
third of their move clock.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.base import DealSpec, Match, derive_seed
from referee.games.ladder import Solver
from referee.games.loop import After, Chooser, Turn, play_out
from referee.games.policies import POLICIES, Policy
from referee.games.registry import get_game
from referee.games.sevens.bots import OPPONENT_MODELS
from referee.match.spec import CommittedResult
from referee.seasons.inprocess import play_season
from referee.seasons.model import SeasonOptions, SeasonSpec
from referee.seasons.ratings import Z95, student_t_quantile
from referee.seasons.standings import bot_order, compute_standings

RUNGS = ("random", "first-legal", "heuristic", "mc", "ismcts", "solver", "priced-pass")

LADDERS: dict[str, tuple[str, ...]] = {
    "sevens": ("random", "heuristic", "solver", "priced-pass"),
    "sedma": ("random", "heuristic", "mc"),
}
"""Per family, the rungs that each beat the one below head to head (docs/ladder.md "The
rungs"): the head-to-head rows of ``--targets`` and, last, the top rung that plays
``random`` for the targets. ``first-legal`` is no better than ``random`` in either family;
in Sevens ``mc`` and ``ismcts`` do not beat ``heuristic`` (``solver`` does: 0.507,
0.503-0.512 over 6,000 deals), in Sedma ``ismcts`` does not beat ``mc`` (README "Strength
ladder"), so they are not rungs of that family's ladder (``--bot`` and ``--pairs`` still
measure them)."""

FAMILIES: dict[str, dict[str, Any]] = {
    "sevens": {"game": "sevens", "preset": "fan-tan", "table_size": 4, "deals_per_match": 4},
    "sedma": {"game": "sedma", "preset": "sedma", "table_size": 4, "deals_per_match": 4},
}


def policies(
    budget_ms: int, solver_opponents: str = "belief", solver_argmax: bool = False
) -> dict[str, Policy]:
    """The rungs' policies at ``budget_ms`` a move; ``solver`` with its other seats modelled
    by ``solver_opponents`` (``sevens.bots.OPPONENT_MODELS``) and, with ``solver_argmax``,
    playing the best mean over its worlds instead of keeping the heuristic's card unless
    another beats it by a standard error."""
    out: dict[str, Policy] = {}
    for name in RUNGS:
        policy = POLICIES[name]
        if isinstance(policy, Solver):
            policy = dataclasses.replace(
                policy,
                opponents=solver_opponents,
                confidence=None if solver_argmax else policy.confidence,
            )
        with_budget = getattr(policy, "with_budget", None)
        out[name] = with_budget(budget_ms) if with_budget is not None else policy
    return out


def spec_for(family: str, rounds: int, duplicate: bool = True) -> SeasonSpec:
    f = FAMILIES[family]
    return SeasonSpec(
        name=f"ladder-{family}",
        game=f["game"],
        preset=f["preset"],
        bots=RUNGS,
        table_size=f["table_size"],
        deals_per_match=f["deals_per_match"],
        options=SeasonOptions(duplicate=duplicate, rounds=rounds),
    )


def _deal_scores(
    results: Sequence[CommittedResult],
) -> tuple[dict[str, list[float]], dict[tuple[str, str], dict[str, list[float]]]]:
    """Per bot its score change per deal; per ordered pair (a, b) and match, a's pairwise
    score against b in each deal both played (1 ahead, 0.5 tied, 0 behind)."""
    per_deal: dict[str, list[float]] = {}
    pairs: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in results:
        seats = r["seats"]
        for deal in r["result"]["deals"]:
            if deal.get("void"):
                continue
            seen: set[str] = set()
            for seat, name in enumerate(seats):
                if name not in seen:
                    seen.add(name)
                    per_deal.setdefault(name, []).append(float(deal["deltas"][seat]))
            order = bot_order(seats, deal["order"])
            place = {b: i for i, group in enumerate(order) for b in group}
            for a in place:
                for b in place:
                    if a != b:
                        score = 1.0 if place[a] < place[b] else 0.5 if place[a] == place[b] else 0.0
                        pairs.setdefault((a, b), {}).setdefault(r["match_id"], []).append(score)
    return per_deal, pairs


def _separation(clusters: Mapping[str, list[float]]) -> dict[str, float]:
    """Win rate of a over b with a 95% interval clustered by match (t on matches - 1 df),
    and the deals needed for the interval to exclude 0.5 with plain deals (every deal an
    independent draw: the per-deal variance) and with duplicate deals (the variance of a
    match's mean, the match being whole duplicate sets, times its deals)."""
    scores = [s for values in clusters.values() for s in values]
    n = len(scores)
    mean = sum(scores) / n
    var_deal = sum((s - mean) ** 2 for s in scores) / max(1, n - 1)
    g = len(clusters)
    sums = [(sum(v) - mean * len(v)) for v in clusters.values()]
    var_mean = sum(x * x for x in sums) / n**2 * (g / (g - 1)) if g > 1 else float("nan")
    q = student_t_quantile(0.975, g - 1) if g > 1 else float("nan")
    half = q * math.sqrt(var_mean) if g > 1 else float("nan")
    gap = abs(mean - 0.5)
    var_dup = var_mean * n  # per-deal variance of the match-clustered mean
    need_plain = (Z95**2) * var_deal / gap**2 if gap else math.inf
    need_dup = (Z95**2) * var_dup / gap**2 if gap else math.inf
    return {
        "deals": n,
        "matches": g,
        "win_rate": mean,
        "low": mean - half,
        "high": mean + half,
        "deals_plain": need_plain,
        "deals_duplicate": need_dup,
    }


def table(family: str, results: Sequence[CommittedResult], spec: SeasonSpec) -> dict[str, Any]:
    standings = compute_standings(spec.name, spec.game, list(spec.bots), results)
    per_deal, pairs = _deal_scores(results)
    rows = []
    for row in standings["rows"]:
        bot = row["bot"]
        wins = [s for (a, _b), by in pairs.items() if a == bot for v in by.values() for s in v]
        deltas = per_deal.get(bot, [])
        rows.append(
            {
                "bot": bot,
                "elo": row["elo"],
                "elo_low": row["elo_low"],
                "elo_high": row["elo_high"],
                "win_rate": sum(wins) / len(wins) if wins else 0.0,
                "score_per_deal": sum(deltas) / len(deltas) if deltas else 0.0,
                "deals": len(deltas),
            }
        )
    adjacent = []
    for lower, upper in itertools.pairwise(RUNGS):
        sep = _separation(pairs.get((upper, lower), {}))
        adjacent.append({"upper": upper, "lower": lower, **sep})
    return {
        "family": family,
        "preset": spec.preset,
        "unit": standings["unit"],
        "matches": len(results),
        "elo_interval": standings["elo_interval"],
        "rows": rows,
        "adjacent": adjacent,
    }


def print_table(t: Mapping[str, Any]) -> None:
    print(
        f"\n{t['family']} ({t['preset']}, {t['matches']} matches, duplicate deals; "
        f"score in {t['unit']} per deal)"
    )
    print(f"{'bot':<12} {'Elo':>6} {'95% interval':>15} {'win rate':>9} {'score/deal':>10}")
    for r in t["rows"]:
        interval = f"{r['elo_low']:.0f}-{r['elo_high']:.0f}"
        print(
            f"{r['bot']:<12} {r['elo']:>6.0f} {interval:>15} {r['win_rate']:>9.3f} "
            f"{r['score_per_deal']:>10.3f}"
        )
    print(
        f"{'upper vs lower':<26} {'win rate':>8} {'95% interval':>15} {'separated':>9} "
        f"{'deals plain':>11} {'deals dup':>9}"
    )
    for a in t["adjacent"]:
        pair = f"{a['upper']} vs {a['lower']}"
        interval = f"{a['low']:.3f}-{a['high']:.3f}"
        separated = "yes" if a["low"] > 0.5 or a["high"] < 0.5 else "NO"
        print(
            f"{pair:<26} {a['win_rate']:>8.3f} {interval:>15} {separated:>9} "
            f"{a['deals_plain']:>11.0f} {a['deals_duplicate']:>9.0f}"
        )


TARGET_SETS = {"sevens": 1500, "sedma": 30}
"""``--targets``' duplicate sets per row by default, per family: what separates each Sevens
rung from the one below (``solver`` beats ``heuristic`` by 0.507: 1,500 sets) and what the
Sedma rows need (``mc`` plays about a second a hand)."""

TARGETS = {
    ("sevens", "won"): 0.60,
    ("fan-tan", "won"): 0.55,
    ("sedma", "won"): 0.85,
}
"""The targets of the top rung against ``random`` (docs/ladder.md)."""


def set_chooser(
    pols: Mapping[str, Policy], seats: Sequence[str], set_seed: int, rotation: int
) -> Chooser:
    """Seat ``s`` answers with the policy of ``seats[s]``, its generator seeded per
    decision from the set, the rotation and the decision's number."""

    def choose(match: Match, turn: Turn) -> str:
        rng = random.Random(derive_seed(set_seed, rotation, turn.seq, bits=64))
        return pols[seats[turn.seat]](match.observation(turn.seat), turn.legal, rng)

    return choose


def deal_ended(match: Match) -> After:
    """Stop the loop once the match's first deal has a result (a set is one deal)."""
    return lambda _turn, _events: bool(match.deal_results())


def play_set(
    game_name: str,
    preset: str,
    seats_of: Sequence[Sequence[str]],
    pols: Mapping[str, Policy],
    set_seed: int,
    hero: str,
    ask_forced: bool = False,
) -> list[dict[str, float]]:
    """One duplicate set: the shuffle ``set_seed`` with dealer 0, played once per seat
    list of ``seats_of``; per deal, whether ``hero``'s first seat won, its score change and
    the share of the other bots' seats it finished ahead of (ties half). A decision with
    one legal action is played without asking the bot unless ``ask_forced``."""
    game = get_game(game_name)
    rules = game.preset(preset)
    out = []
    for k, seats in enumerate(seats_of):
        match = game.new_match(rules, len(seats), set_seed, [DealSpec(set_seed, 0, 0)])
        play_out(
            match,
            set_chooser(pols, seats, set_seed, k),
            autoplay_forced=not ask_forced,
            after=deal_ended(match),
        )
        deal = match.deal_results()[0]
        me = seats.index(hero)
        place = {s: i for i, group in enumerate(deal.order) for s in group}
        others = [s for s in range(len(seats)) if seats[s] != hero]
        ahead = sum(
            1.0 if place[me] < place[s] else 0.5 if place[me] == place[s] else 0.0 for s in others
        )
        out.append(
            {
                "won": 1.0 if me in deal.order[0] else 0.0,
                "score": float(deal.deltas[me]),
                "ahead": ahead / len(others) if others else 0.0,
            }
        )
    return out


def bootstrap(per_set: Sequence[float], reps: int = 2000, seed: int = 1) -> tuple[float, float]:
    """A 95% percentile bootstrap interval of the mean over sets."""
    rng = random.Random(seed)
    n = len(per_set)
    means = sorted(sum(per_set[rng.randrange(n)] for _ in range(n)) / n for _ in range(reps))
    return means[int(0.025 * reps)], means[int(0.975 * reps) - 1]


def rotations(family: str, hero: str, field: str) -> list[list[str]]:
    """The seat lists of one set: Sevens, ``hero`` in each of 4 seats among ``field``;
    Sedma, ``hero`` holding seats 0 and 2, then 1 and 3."""
    if family == "sedma":
        return [[hero, field, hero, field], [field, hero, field, hero]]
    return [[hero if s == k else field for s in range(4)] for k in range(4)]


def evaluate(
    family: str,
    preset: str,
    hero: str,
    field: str,
    pols: Mapping[str, Policy],
    sets: int,
    seed: int,
    stat: str,
    ask_forced: bool = False,
) -> dict[str, Any]:
    """``hero`` against ``field`` over ``sets`` duplicate sets: the mean of ``stat`` per
    deal with its bootstrap interval, and the score per deal."""
    game = "sedma" if family == "sedma" else "sevens"
    per_set: list[float] = []
    scores: list[float] = []
    started = time.perf_counter()
    for i in range(sets):
        set_seed = derive_seed(seed, preset, i, bits=63)
        seats_of = rotations(family, hero, field)
        deals = play_set(game, preset, seats_of, pols, set_seed, hero, ask_forced)
        per_set.append(sum(d[stat] for d in deals) / len(deals))
        scores.extend(d["score"] for d in deals)
    low, high = bootstrap(per_set)
    mean = sum(per_set) / len(per_set)
    sd = math.sqrt(sum((x - mean) ** 2 for x in per_set) / max(1, len(per_set) - 1))
    gap = abs(mean - 0.5) if stat == "ahead" or field != "random" else 0.0
    # Sets for the interval to exclude 0.5 (head to head): (1.96 sd / gap)^2.
    need = math.ceil((Z95 * sd / gap) ** 2) if gap else None
    return {
        "preset": preset,
        "hero": hero,
        "field": field,
        "stat": stat,
        "sets": sets,
        "deals": len(scores),
        "mean": mean,
        "low": low,
        "high": high,
        "score_per_deal": sum(scores) / len(scores),
        "sets_needed": need,
        "seconds": round(time.perf_counter() - started, 1),
    }


def run_targets(args: argparse.Namespace) -> list[dict[str, Any]]:
    pols = policies(args.budget_ms, args.solver_opponents, args.solver_argmax)
    rows = []
    jobs: list[tuple[str, str, str, str, str]] = []
    families = ["sevens", "sedma"] if args.family == "both" else [args.family]
    for family in families:
        presets = ["sevens", "fan-tan"] if family == "sevens" else ["sedma"]
        top = args.bot or LADDERS[family][-1]
        if "vs-random" in args.protocols:
            jobs.extend((family, p, top, "random", "won") for p in presets)
        if "head-to-head" in args.protocols:
            stat = "won" if family == "sedma" else "ahead"
            if args.pairs:
                chosen = [tuple(pair.split(":")[::-1]) for pair in sorted(args.pairs)]
            else:
                chosen = list(itertools.pairwise(LADDERS[family]))
            jobs.extend((family, presets[0], upper, lower, stat) for lower, upper in chosen)
    for family, preset, hero, field, stat in jobs:
        row = evaluate(
            family,
            preset,
            hero,
            field,
            pols,
            args.sets or TARGET_SETS[family],
            args.seed,
            stat,
            args.ask_forced,
        )
        row["target"] = TARGETS.get((preset, stat)) if field == "random" else 0.5
        rows.append(row)
        print_target_row(row)
    return rows


def print_target_row(r: Mapping[str, Any]) -> None:
    interval = f"{r['low']:.3f}-{r['high']:.3f}"
    target = r["target"]
    if r["field"] == "random" and r["stat"] == "won":
        met = "yes" if r["mean"] >= target else "NO"
        goal = f">= {target:.2f}"
    else:
        met = "yes" if r["low"] > 0.5 else "NO"
        goal = "low > 0.5"
    need = "-" if r["sets_needed"] is None else str(r["sets_needed"])
    print(
        f"{r['preset']:<8} {r['hero']:>9} vs {r['field']:<9} {r['stat']:<6} {r['mean']:>6.3f} "
        f"{interval:>13} {goal:>10} {met:>4} {r['score_per_deal']:>8.2f} {r['deals']:>6} "
        f"{need:>6} {r['seconds']:>7.0f}",
        flush=True,
    )


TARGET_HEADER = (
    f"{'preset':<8} {'bot':>9} vs {'field':<9} {'stat':<6} {'mean':>6} {'95% interval':>13} "
    f"{'target':>10} {'met':>4} {'score/dl':>8} {'deals':>6} {'sets*':>6} {'seconds':>7}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=[*FAMILIES, "both"], default="both")
    parser.add_argument("--rounds", type=int, default=10, help="schedule rounds (10)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--budget-ms", type=int, default=5000, help="search bots' cap")
    parser.add_argument("--json", metavar="PATH", help="also write the tables as JSON")
    parser.add_argument(
        "--targets", action="store_true", help="run the evaluation protocol, not the season"
    )
    parser.add_argument(
        "--sets",
        type=int,
        help="duplicate sets per row (by default with --targets: "
        + ", ".join(f"{n} for {family}" for family, n in TARGET_SETS.items())
        + ")",
    )
    parser.add_argument(
        "--bot",
        choices=RUNGS,
        help="with --targets: the bot against random (the family's top rung, LADDERS)",
    )
    parser.add_argument(
        "--protocols",
        default="vs-random,head-to-head",
        help="with --targets: vs-random, head-to-head or both (comma-separated)",
    )
    parser.add_argument(
        "--pairs",
        type=lambda text: set(text.split(",")),
        default=set(),
        help="with --targets: these head-to-head rows, as UPPER:LOWER (e.g. solver:heuristic), "
        "in place of the family ladder's adjacent pairs",
    )
    parser.add_argument(
        "--solver-opponents",
        choices=OPPONENT_MODELS,
        default="belief",
        help="how solver models the other seats: belief (its default: each the heuristic "
        "with its posterior share, else random) or random (as they are against random)",
    )
    parser.add_argument(
        "--solver-argmax",
        action="store_true",
        help="solver plays the best mean over its worlds (not the heuristic's card unless "
        "another beats it by a standard error)",
    )
    parser.add_argument(
        "--ask-forced",
        action="store_true",
        help="with --targets: ask the bots every decision, one legal action included (a "
        "season's default, autoplay_forced off; priced-pass may pass instead); by default "
        "such decisions are played without asking",
    )
    args = parser.parse_args(argv)
    if args.targets:
        print(
            f"evaluation protocol: seed {args.seed}, "
            f"{args.sets or ', '.join(f'{n} ({f})' for f, n in TARGET_SETS.items())} "
            "duplicate sets per row, "
            f"search bots {args.budget_ms} ms a move at most"
            + (", every decision asked" if args.ask_forced else "")
        )
        print(TARGET_HEADER)
        rows = run_targets(args)
        print(
            "stat: won = share of deals (Sedma: hands) won; ahead = share of the other seats "
            "finished ahead of (ties half). Interval: bootstrap over sets. sets* = sets needed "
            "for the interval to exclude 0.5 at the measured gap"
        )
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
        return 0
    families = list(FAMILIES) if args.family == "both" else [args.family]
    pols = policies(args.budget_ms, args.solver_opponents, args.solver_argmax)
    tables = []
    print(f"strength ladder: seed {args.seed}, {args.rounds} rounds per family")
    for family in families:
        spec = spec_for(family, args.rounds)
        started = time.perf_counter()

        def progress(done: int, total: int, family: str = family, started: float = started) -> None:
            if done % 10 == 0 or done == total:
                print(
                    f"  {family}: {done}/{total} matches, {time.perf_counter() - started:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )

        results = play_season(spec, args.seed, pols, progress=progress)
        t = table(family, results, spec)
        t["seconds"] = round(time.perf_counter() - started, 1)
        tables.append(t)
        print_table(t)
    if args.json:
        Path(args.json).write_text(json.dumps(tables, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
