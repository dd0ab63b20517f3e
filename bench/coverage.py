"""How often the standings' 95% Elo interval covers the truth, by simulation.

Leagues of N bots (6 and 12) play matches of 4 seats drawn at random, 4 deals per match
(a match is one cluster of the interval's sandwich variance), until every bot has played
about D deals (40, 120, 400). True strengths are drawn per league, s ~ N(0, 0.5^2). Two
models of a deal's finishing order:

* ``plackett-luce``: the order is drawn from Plackett-Luce with weights exp(s); the
  pairwise marginals are then exactly Bradley-Terry, so the target is s itself;
* ``noisy``: each bot's performance in a deal is s + u + e, with a per-match form
  u ~ N(0, 0.5^2) shared by the deals of the match and a per-deal e ~ N(0, 1); the order
  is by performance. The pairwise win rate is Phi((s_i - s_j) / sqrt(2.5)), not logistic,
  so the target is the *win-rate Elo*: the Bradley-Terry fit (same prior) to the expected
  pairwise results of the league's own schedule, which shrinks the latent gap.

For every league the interval of ``referee.seasons.ratings.bradley_terry`` (a Student-t
quantile: on matches - 1 df, or on the bot's own matches - 1 when the clustered variance
is the one used) is checked for every bot, and so is the same interval with 1.96 instead
(the old rule); a last row shows one-match leagues, where no clustered variance exists
(the fit warns). Deterministic in ``--seed``.

    .venv/bin/python bench/coverage.py                 # 500 leagues per row, ~10 min
    .venv/bin/python bench/coverage.py --leagues 100   # quicker, noisier
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.seasons.ratings import (
    ELO_SCALE,
    PRIOR_SD,
    Z95,
    Placing,
    _solve,
    bradley_terry,
)

DEALS_PER_MATCH = 4
TABLE = 4
SKILL_SD = 0.5
FORM_SD = 0.5
NOISE_SD = 1.0


def _plackett_luce(rng: random.Random, table: list[int], s: list[float]) -> list[int]:
    left = list(table)
    order = []
    while left:
        weights = [math.exp(s[b]) for b in left]
        pick = rng.choices(left, weights)[0]
        left.remove(pick)
        order.append(pick)
    return order


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def league(
    rng: random.Random, n: int, deals_per_bot: int, model: str, matches: int | None = None
) -> tuple[list[float], list[Placing], list[list[float]]]:
    """True strengths, the placings, and the pair counts of the schedule."""
    s = [rng.gauss(0.0, SKILL_SD) for _ in range(n)]
    if matches is None:
        matches = max(1, round(deals_per_bot * n / (TABLE * DEALS_PER_MATCH)))
    games = [[0.0] * n for _ in range(n)]
    placings: list[Placing] = []
    for m in range(matches):
        table = rng.sample(range(n), TABLE)
        form = {b: rng.gauss(0.0, FORM_SD) for b in table}
        for _ in range(DEALS_PER_MATCH):
            if model == "plackett-luce":
                order = _plackett_luce(rng, table, s)
            else:
                perf = {b: s[b] + form[b] + rng.gauss(0.0, NOISE_SD) for b in table}
                order = sorted(table, key=lambda b: -perf[b])
            placings.append(Placing(f"m{m}", tuple((f"b{b}",) for b in order)))
            for i in table:
                for j in table:
                    if i != j:
                        games[i][j] += 0.5
    return s, placings, games


def win_rate_target(s: list[float], games: list[list[float]], model: str) -> list[float]:
    """The centred Elo the fit estimates: s itself under Plackett-Luce; else the
    Bradley-Terry fit (with the ratings' prior) to the expected pairwise results."""
    n = len(s)
    if model == "plackett-luce":
        theta = list(s)
    else:
        scale = math.sqrt(2.0 * (FORM_SD**2 + NOISE_SD**2))
        wins = [[games[i][j] * _phi((s[i] - s[j]) / scale) for j in range(n)] for i in range(n)]
        prior = 1.0 / PRIOR_SD**2
        theta = [0.0] * n
        for _ in range(100):
            grad = [-prior * theta[i] for i in range(n)]
            neg_h = [[prior if i == j else 0.0 for j in range(n)] for i in range(n)]
            for i in range(n):
                for j in range(n):
                    if i == j or not games[i][j]:
                        continue
                    p = 1.0 / (1.0 + math.exp(theta[j] - theta[i]))
                    grad[i] += wins[i][j] - games[i][j] * p
                    w = games[i][j] * p * (1.0 - p)
                    neg_h[i][i] += w
                    neg_h[i][j] -= w
            step = _solve(neg_h, grad)
            theta = [t + d for t, d in zip(theta, step, strict=True)]
            if max(abs(d) for d in step) < 1e-10:
                break
    mean = sum(theta) / n
    return [1500.0 + (t - mean) * ELO_SCALE for t in theta]


def coverage_row(
    n: int, deals_per_bot: int, model: str, leagues: int, seed: int, matches: int | None = None
) -> dict[str, object]:
    rng = random.Random(f"{seed}:{n}:{deals_per_bot}:{model}:{matches}")
    hits_t = hits_z = total = 0
    width = 0.0
    warned = 0
    quantiles: list[float] = []
    for _ in range(leagues):
        s, placings, games = league(rng, n, deals_per_bot, model, matches)
        target = win_rate_target(s, games, model)
        names = [f"b{i}" for i in range(n)]
        fit = bradley_terry(names, placings)
        warned += bool(fit.warning)
        quantiles.extend(fit.quantiles.values())
        for i, name in enumerate(names):
            half = (fit.high[name] - fit.low[name]) / 2.0
            centre = fit.elo[name]
            half_z = half * Z95 / fit.quantiles[name]
            total += 1
            hits_t += abs(target[i] - centre) <= half
            hits_z += abs(target[i] - centre) <= half_z
            width += 2.0 * half
    se = math.sqrt(0.95 * 0.05 / total)
    return {
        "model": model,
        "bots": n,
        "deals_per_bot": deals_per_bot,
        "matches": matches or max(1, round(deals_per_bot * n / (TABLE * DEALS_PER_MATCH))),
        "leagues": leagues,
        "coverage_t": hits_t / total,
        "coverage_z": hits_z / total,
        "mc_se": se,
        "mean_width_elo": width / total,
        "quantile": sum(quantiles) / len(quantiles),
        "warned": warned,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--leagues", type=int, default=500, help="leagues per row (500)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    rows = []
    started = time.perf_counter()
    for model in ("plackett-luce", "noisy"):
        for n in (6, 12):
            for deals in (40, 120, 400):
                rows.append(coverage_row(n, deals, model, args.leagues, args.seed))
        rows.append(coverage_row(4, 0, model, args.leagues, args.seed, matches=1))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(
        f"95% Elo interval coverage, {args.leagues} leagues per row, seed {args.seed} "
        f"({time.perf_counter() - started:.0f} s)"
    )
    print(
        f"{'model':<14} {'bots':>4} {'deals/bot':>9} {'matches':>7} {'mean t':>10} "
        f"{'coverage (t)':>12} {'coverage (1.96)':>15} {'width Elo':>9}"
    )
    for r in rows:
        label = "1 match" if r["deals_per_bot"] == 0 else str(r["deals_per_bot"])
        print(
            f"{r['model']:<14} {r['bots']:>4} {label:>9} {r['matches']:>7} "
            f"{r['quantile']:>10.3f} {r['coverage_t']:>12.1%} {r['coverage_z']:>15.1%} "
            f"{r['mean_width_elo']:>9.0f}"
        )
    print(
        f"Monte Carlo standard error of a coverage near 95%: about "
        f"{rows[0]['mc_se']:.1%} (6 bots) per row; one-match rows: the fit warns "
        "(no clustered variance) and falls back to the model variance with 1.96"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
