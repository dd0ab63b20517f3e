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

The search bots run on their work limit (``--budget-ms`` is a safety cap, 5 s by default,
so that a loaded machine does not change the results); on the platform they also stop at a
third of their move clock.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.policies import POLICIES, Policy
from referee.match.spec import CommittedResult
from referee.seasons.inprocess import play_season
from referee.seasons.model import SeasonOptions, SeasonSpec
from referee.seasons.ratings import Z95, student_t_quantile
from referee.seasons.standings import bot_order, compute_standings

RUNGS = ("random", "first-legal", "heuristic", "mc", "ismcts")

FAMILIES: dict[str, dict[str, Any]] = {
    "sevens": {"game": "sevens", "preset": "fan-tan", "table_size": 4, "deals_per_match": 4},
    "sedma": {"game": "sedma", "preset": "sedma", "table_size": 4, "deals_per_match": 4},
}


def policies(budget_ms: int) -> dict[str, Policy]:
    out: dict[str, Policy] = {}
    for name in RUNGS:
        policy = POLICIES[name]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--family", choices=[*FAMILIES, "both"], default="both")
    parser.add_argument("--rounds", type=int, default=10, help="schedule rounds (10)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--budget-ms", type=int, default=5000, help="search bots' cap")
    parser.add_argument("--json", metavar="PATH", help="also write the tables as JSON")
    args = parser.parse_args(argv)
    families = list(FAMILIES) if args.family == "both" else [args.family]
    pols = policies(args.budget_ms)
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
