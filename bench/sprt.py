"""Does the version test keep its promises? SPRT error rates, lengths, interval coverage.

1. **Calibrate on real play.** For each game family the version test
   (``referee/seasons/versiontest.py``) is played in-process with the engine and the
   reference policies: ``heuristic`` against ``random`` and two copies of ``random``, each
   against a field of ``heuristic`` bots (Sevens ``fan-tan`` at tables of 4, Sedma
   head-to-head). Each duplicate set gives NEW's and OLD's score (chips, match points) and
   placing (share of the other seats beaten).
2. **SPRT.** Bots of a *known* strength difference are simulated by resampling the real
   per-set differences of ``heuristic`` against ``random``, centred and shifted to a chosen
   true normalized Elo (so the shape, the ties and the tails are those of real play).
   For bounds [ELO0, ELO1] the test is run ``--runs`` times with the truth at ELO0 (how
   often it accepts H1: the false-positive rate, nominal alpha), at ELO1 (how often it
   accepts H0: the false-negative rate, nominal beta) and at 0; it prints the rates with
   their binomial standard error and the mean number of sets.
3. **Coverage.** The 95% Student-t interval of the mean per-set difference, for a fixed
   number of sets drawn from each real pool: how often it holds the pool's mean.
4. **What deals buy.** For the platform's Elo (logistic, on the share of seats beaten per
   deal), the deals a fixed test (alpha = beta = 0.05, one-sided) needs to detect a 20- and
   a 50-Elo change, from the measured per-set spread with duplicate sets (paired) and
   without (NEW and OLD on independent shuffles: the variances add).

    .venv/bin/python bench/sprt.py                 # ~3 min on one core
    .venv/bin/python bench/sprt.py --pairs 100 --runs 500   # quicker, rougher
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.ladder import heuristic_policy
from referee.games.policies import Policy, get_policy
from referee.seasons.inprocess import play_scheduled
from referee.seasons.paired import NELO_PER_T, Sprt, paired_interval
from referee.seasons.versiontest import set_rows, versus_schedule, versus_spec

FAMILIES = {"sevens": ("fan-tan", ("f1", "f2", "f3")), "sedma": ("sedma", ("f1",))}
Z95_ONE_SIDED = 1.6448536269514722

Row = tuple[float, float, float, float]


def policy(name: str) -> Policy:
    return heuristic_policy if name == "heuristic" else get_policy(name)


def calibrate(game: str, new: str, old: str, pairs: int, deals: int, seed: int) -> list[Row]:
    preset, field = FAMILIES[game]
    spec = versus_spec("NEW", "OLD", field, game, preset=preset, deals=deals, seed=seed, name="b")
    policies = {"NEW": policy(new), "OLD": policy(old), **dict.fromkeys(field, heuristic_policy)}
    rules = spec.validate_with_engine()
    results = {
        m.match_id: play_scheduled(spec, rules, m, policies)
        for m in versus_schedule(spec, seed, pairs)
    }
    return set_rows(spec, results, pairs)


def simulate_sprt(
    pool: list[float],
    truth: float,
    elo0: float,
    elo1: float,
    runs: int,
    rng: random.Random,
    cap: int,
) -> tuple[float, float, float]:
    """(share accepting H1, share accepting H0, mean sets) with the truth at ``truth`` nElo."""
    mean = statistics.fmean(pool)
    sd = statistics.pstdev(pool)
    shift = truth / NELO_PER_T * sd - mean
    shifted = [x + shift for x in pool]
    h1 = h0 = 0
    lengths = 0
    for _ in range(runs):
        test = Sprt(elo0, elo1)
        while not test.decision and len(test.diffs) < cap:
            test.add(rng.choice(shifted))
        h1 += test.decision == "H1"
        h0 += test.decision == "H0"
        lengths += len(test.diffs)
    return h1 / runs, h0 / runs, lengths / runs


def coverage(pool: list[float], sets: int, runs: int, rng: random.Random) -> float:
    truth = statistics.fmean(pool)
    hit = 0
    for _ in range(runs):
        s = paired_interval([rng.choice(pool) for _ in range(sets)])
        hit += s.low <= truth <= s.high
    return hit / runs


def deals_needed(sd: float, elo: float) -> float:
    """Deals (sets) of a one-sided fixed test at alpha = beta = 0.05 for an Elo change."""
    dp = 1 / (1 + 10 ** (-elo / 400)) - 0.5
    return (2 * Z95_ONE_SIDED * sd / dp) ** 2


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=250, help="match pairs per calibration")
    parser.add_argument("--deals", type=int, default=4, help="deals (sets) per match pair")
    parser.add_argument("--runs", type=int, default=2000, help="simulated tests per cell")
    parser.add_argument("--bounds", default="0:20,0:50", help="SPRT bounds ELO0:ELO1,...")
    parser.add_argument("--seed", type=int, default=20261203)
    parser.add_argument("--games", default="sevens,sedma")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    bounds = [tuple(float(x) for x in b.split(":")) for b in args.bounds.split(",")]
    started = time.monotonic()
    for game in args.games.split(","):
        strong = calibrate(game, "heuristic", "random", args.pairs, args.deals, args.seed)
        null = calibrate(game, "random", "random", args.pairs, args.deals, args.seed + 1)
        other = calibrate(game, "heuristic", "first-legal", args.pairs, args.deals, args.seed + 2)
        d_strong = [a - b for a, b, _, _ in strong]
        d_null = [a - b for a, b, _, _ in null]
        s = paired_interval(d_strong)
        n = paired_interval(d_null)
        print(f"\n== {game} ({FAMILIES[game][0]}), field of heuristic, {len(strong)} sets per pool")
        print(
            f"real play: heuristic - random {s.mean:+.3f} per set [{s.low:+.3f}, {s.high:+.3f}] "
            f"sd {s.sd:.3f} = {s.nelo:.0f} nElo; random - random {n.mean:+.3f} "
            f"[{n.low:+.3f}, {n.high:+.3f}] sd {n.sd:.3f}; "
            f"ties (d = 0): {sum(d == 0 for d in d_strong) / len(d_strong):.0%}"
        )
        print("SPRT (alpha = beta = 0.05), resampled real differences shifted to the truth:")
        print(f"{'bounds':>9} {'truth':>6} {'P(H1)':>7} {'P(H0)':>7} {'+-se':>5} {'mean sets':>9}")
        for elo0, elo1 in bounds:
            cap = int(40 * (2 * 2.944 / ((elo1 - elo0) / NELO_PER_T) ** 2)) + 100
            for truth in sorted({elo0, elo1, 0.0}):
                p1, p0, length = simulate_sprt(d_strong, truth, elo0, elo1, args.runs, rng, cap)
                se = math.sqrt(0.05 * 0.95 / args.runs)
                print(
                    f"{f'[{elo0:g},{elo1:g}]':>9} {truth:>6g} {p1:>7.1%} {p0:>7.1%} "
                    f"{se:>5.1%} {length:>9.0f}"
                )
        print("95% interval coverage (Student t over sets), resampling each real pool:")
        for name, pool in (("heuristic-random", d_strong), ("random-random", d_null)):
            cells = [
                f"{k} sets {coverage(pool, k, args.runs, rng):.1%}" for k in (10, 30, 100, 400)
            ]
            print(f"  {name:<17} " + ", ".join(cells))
        print("deals to detect an Elo change (platform Elo: share of seats beaten per deal):")
        for name, rows in (("heuristic-random", strong), ("heuristic-first-legal", other)):
            paired = statistics.stdev([c - d for _, _, c, d in rows])
            plain = math.sqrt(
                statistics.variance([c for _, _, c, _ in rows])
                + statistics.variance([d for _, _, _, d in rows])
            )
            cells = [
                f"{elo:g} Elo: {deals_needed(plain, elo):,.0f} plain / "
                f"{deals_needed(paired, elo):,.0f} duplicate"
                for elo in (20, 50)
            ]
            print(f"  sd {plain:.3f} plain, {paired:.3f} paired ({name}): " + "; ".join(cells))
    print(f"\nbench took {time.monotonic() - started:.0f}s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
