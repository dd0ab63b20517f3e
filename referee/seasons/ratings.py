"""Ratings from deals' finishing orders: Bradley-Terry Elo (maximum likelihood with a 95%
interval), a live incremental Elo, and OpenSkill (Plackett-Luce).

Input is a list of :class:`Placing`: one deal's finishing order as groups of bot names
(best first, ties grouped) plus the cluster it belongs to (the match: duplicate deals of one
match share cards, so they are not independent).

Bradley-Terry: every pair of bots in different groups of a deal is one game won by the
better placed bot; a pair in one group is a draw (half a win each). Ratings ``theta``
(natural log-odds) maximise the log-likelihood plus a weak Gaussian prior
``theta ~ N(0, PRIOR_SD^2)`` (so a bot that never lost stays finite), by Newton's method on
the full Hessian. Elo = 1500 + theta * 400 / ln 10, centred so the mean is 1500.

The 95% interval of a bot's centred rating uses the larger of two variances: the model's
(inverse of the negative Hessian) and a sandwich estimate clustered by match, which accounts
for the pairwise outcomes of one finishing order (and the duplicate deals of one match) not
being independent games. The clustered variance is estimated from a handful of match
scores, so the half-width is a Student-t quantile times the standard error, not 1.96 (which
covered only 91.6-94.1% of simulated leagues of 40-120 deals per bot): on G - 1 degrees of
freedom, G the season's matches, when the model variance is the larger; on G_i - 1, G_i the
matches the bot played, when the clustered variance is the larger (it then rests on those
G_i match scores: with 12 bots at tables of 4 that is a third of G, and t on G - 1 still
covered only 92.8%). Coverage measured by ``bench/coverage.py`` (docs/seasons.md, "How much
the 95% interval covers"). With fewer than two matches there is no clustered variance at
all: the fit then uses the model variance with 1.96 and says so in ``EloFit.warning``
(such intervals are too narrow).

The interval is for the *win-rate Elo*: the Bradley-Terry rating that best explains the
pairwise results the season's schedule produced. When play is noisier than a logistic model
of the latent skills (most card games), that rating shrinks the latent skill gap, as it
should: it describes how often one bot finishes ahead of another.

The fit depends only on the multiset of placings: callers sort them (by match id) so the
floating-point sums are identical whatever order the results arrived in.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

ELO_SCALE = 400.0 / math.log(10.0)
ELO_MEAN = 1500.0
PRIOR_SD = 3.0  # natural units: about 1200 Elo, weak
Z95 = 1.959963984540054
LIVE_K = 24.0


@dataclass(frozen=True, slots=True)
class Placing:
    """One deal's finishing order by bot (best first, ties grouped), and its match."""

    cluster: str
    order: tuple[tuple[str, ...], ...]


FEW_MATCHES_WARNING = (
    "fewer than two matches: the 95% interval uses the model variance only and is too "
    "narrow (it ignores that the results of one match are not independent); play more matches"
)


@dataclass(frozen=True, slots=True)
class EloFit:
    """Elo per bot with its 95% interval ``[low, high]``; ``matches`` is the number of
    clusters, ``quantile`` the t quantile on ``matches - 1`` degrees of freedom and
    ``quantiles`` each bot's multiplier of its standard error (see the module's docstring),
    ``warning`` non-empty when the interval cannot be trusted (fewer than two matches)."""

    elo: dict[str, float]
    low: dict[str, float]
    high: dict[str, float]
    matches: int = 0
    quantile: float = Z95
    warning: str = ""
    quantiles: dict[str, float] = field(default_factory=dict)


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        for num in (
            m * (b - m) * x / ((a + m2 - 1.0) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def student_t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)
def student_t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` > 0 degrees of freedom (bisection to
    1e-12; t(0.975, 1) = 12.706, t(0.975, 10) = 2.228, t(0.975, inf) = 1.960)."""
    if not 0.0 < p < 1.0 or df <= 0:
        raise ValueError(f"student_t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while student_t_cdf(high, df) < p:
        high *= 2.0
    for _ in range(200):
        mid = (low + high) / 2.0
        if student_t_cdf(mid, df) < p:
            low = mid
        else:
            high = mid
        if high - low < 1e-12:
            break
    return (low + high) / 2.0


def _pair_outcomes(order: Sequence[Sequence[str]]) -> list[tuple[str, str, float]]:
    """(a, b, score of a) for every pair of distinct bots in a finishing order."""
    out: list[tuple[str, str, float]] = []
    groups = [sorted(set(g)) for g in order]
    for gi, group in enumerate(groups):
        for a, b in itertools.combinations(group, 2):
            out.append((a, b, 0.5))
        for later in groups[gi + 1 :]:
            for a in group:
                for b in later:
                    if a != b:
                        out.append((a, b, 1.0))
    return out


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float]:
    """Solve ``matrix @ x = vector`` by Gaussian elimination with partial pivoting."""
    n = len(vector)
    a = [[*row, vector[i]] for i, row in enumerate(matrix)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        p = a[col][col]
        for r in range(col + 1, n):
            f = a[r][col] / p
            if f:
                for c in range(col, n + 1):
                    a[r][c] -= f * a[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (a[r][n] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
    return x


def _inverse(matrix: list[list[float]]) -> list[list[float]]:
    """The inverse, column ``j`` solved as :func:`_solve` would solve ``e_j`` (the same
    pivots and the same operations, so the same bits), with one elimination for all."""
    n = len(matrix)
    a = [[*row, *(1.0 if i == j else 0.0 for j in range(n))] for i, row in enumerate(matrix)]
    width = 2 * n
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(a[r][col]))
        a[col], a[pivot] = a[pivot], a[col]
        p = a[col][col]
        top = a[col]
        for r in range(col + 1, n):
            row = a[r]
            f = row[col] / p
            if f:
                for c in range(col, width):
                    row[c] -= f * top[c]
    out = [[0.0] * n for _ in range(n)]
    for j in range(n):
        x = [0.0] * n
        for r in range(n - 1, -1, -1):
            x[r] = (a[r][n + j] - sum(a[r][c] * x[c] for c in range(r + 1, n))) / a[r][r]
        for i in range(n):
            out[i][j] = x[i]
    return out


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


PairCounts = tuple[tuple[str, str, float, float], ...]
"""One cluster's pairwise outcomes aggregated by pair: ``(a, b, games, a's score)`` with
``a < b``, sorted. Sums of whole and half games, so exact whatever order they were added."""


def pair_counts(placings: Sequence[Placing]) -> PairCounts:
    """The pairwise outcomes of ``placings`` (one cluster's deals) aggregated by pair."""
    agg: dict[tuple[str, str], list[float]] = {}
    for placing in placings:
        for a, b, s in _pair_outcomes(placing.order):
            if a > b:
                a, b, s = b, a, 1.0 - s
            cell = agg.setdefault((a, b), [0.0, 0.0])
            cell[0] += 1.0
            cell[1] += s
    return tuple((a, b, n, w) for (a, b), (n, w) in sorted(agg.items()))


def bradley_terry(bots: Sequence[str], placings: Sequence[Placing]) -> EloFit:
    """Maximum-likelihood Elo of ``bots`` from ``placings``, with 95% intervals (the
    clusters in the order they first appear)."""
    by_cluster: dict[str, list[Placing]] = {}
    for placing in placings:
        by_cluster.setdefault(placing.cluster, []).append(placing)
    return bradley_terry_counts(bots, [pair_counts(ps) for ps in by_cluster.values()])


def bradley_terry_counts(bots: Sequence[str], clusters: Sequence[PairCounts]) -> EloFit:
    """:func:`bradley_terry` from each cluster's :func:`pair_counts`."""
    index = {b: i for i, b in enumerate(bots)}
    everyone = range(len(index))
    tables: list[Table] = []
    for counts in clusters:
        cells: list[Any] = []
        for a, b, g, w in counts:
            i, j = index.get(a), index.get(b)
            if i is not None and j is not None:
                cells += [i, j, g, 2 * w]
        tables.append((everyone, cells))
    return bradley_terry_cells(bots, tables)


Table = tuple[Sequence[int], Sequence[Any]]
"""One cluster's :data:`PairCounts` by index, as the standings' tally log keeps them:
``(table, cells)``, ``table[p]`` the place in the list of bots of the cluster's bot ``p``,
``cells`` flat ``[p, q, games, 2 * p's score, ...]``."""


def bradley_terry_cells(bots: Sequence[str], clusters: Sequence[Table]) -> EloFit:
    """:func:`bradley_terry` from each cluster's :data:`Table` (what the standings' tally
    log stores per match, so a refit never re-reads the results). One pass sums the
    pairwise games and scores (whole and half numbers: exact in any order), a second the
    clustered scores at the fit."""
    names = list(bots)
    n = len(names)
    if n == 0:
        return EloFit({}, {}, {})
    games_flat = [0.0] * (n * n)  # [i * n + j]: games of i against j as counted in cells
    score2_flat = [0.0] * (n * n)  # and twice i's score in them
    compact: list[Table] = []
    played = [0] * n  # the matches of each bot
    for table, cells in clusters:
        if not cells:
            continue
        ps = cells[0::4]
        qs = cells[1::4]
        for p, q, g, s2 in zip(ps, qs, cells[2::4], cells[3::4], strict=True):
            ij = table[p] * n + table[q]
            games_flat[ij] += g
            score2_flat[ij] += s2
        compact.append((table, cells))
        for p in {*ps, *qs}:
            played[table[p]] += 1
    # games[i][j]: pairwise games between i and j; wins[i][j]: i's score against j.
    games = [[0.0] * n for _ in range(n)]
    wins = [[0.0] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            g = games_flat[i * n + j]
            if g:
                games[i][j] += g
                games[j][i] += g
                wins[i][j] += score2_flat[i * n + j] / 2
                wins[j][i] += g - score2_flat[i * n + j] / 2
    prior = 1.0 / PRIOR_SD**2
    theta = [0.0] * n
    hessian: list[list[float]] = []
    for _ in range(100):
        grad = [-prior * theta[i] for i in range(n)]
        hessian = [[0.0] * n for _ in range(n)]
        for i in range(n):
            hessian[i][i] = -prior
        for i in range(n):
            for j in range(i + 1, n):
                if not games[i][j]:
                    continue
                p = _sigmoid(theta[i] - theta[j])
                g = wins[i][j] - games[i][j] * p
                grad[i] += g
                grad[j] -= g
                w = games[i][j] * p * (1.0 - p)
                hessian[i][i] -= w
                hessian[j][j] -= w
                hessian[i][j] += w
                hessian[j][i] += w
        step = _solve([[-v for v in row] for row in hessian], grad)
        theta = [t + d for t, d in zip(theta, step, strict=True)]
        if max(abs(d) for d in step) < 1e-10:
            break
    cov_model = _inverse([[-v for v in row] for row in hessian])
    # Sandwich (robust) covariance clustered by match: H^-1 J H^-1.
    meat = [[0.0] * n for _ in range(n)]
    prob = [_sigmoid(theta[i] - theta[j]) for i in range(n) for j in range(n)]
    for table, cells in compact:
        score: dict[int, float] = {}
        for p, q, g, s2 in zip(cells[0::4], cells[1::4], cells[2::4], cells[3::4], strict=True):
            i = table[p]
            j = table[q]
            d = s2 / 2 - g * prob[i * n + j]
            score[i] = score.get(i, 0.0) + d
            score[j] = score.get(j, 0.0) - d
        nonzero = [(i, v) for i, v in score.items() if v]
        for i, si in nonzero:
            row = meat[i]
            for j, sj in nonzero:
                row[j] += si * sj
    groups = len(compact)
    if groups > 1:  # small-sample correction of the cluster-robust estimate
        meat = [[v * groups / (groups - 1) for v in row] for row in meat]
        quantile = student_t_quantile(0.975, groups - 1)
        warning = ""
    else:
        quantile = Z95
        warning = FEW_MATCHES_WARNING
    cov_robust = _matmul(_matmul(cov_model, meat), cov_model)
    mean = sum(theta) / n
    elo: dict[str, float] = {}
    low: dict[str, float] = {}
    high: dict[str, float] = {}
    quantiles: dict[str, float] = {}
    for i, name in enumerate(names):
        contrast = [(1.0 if k == i else 0.0) - 1.0 / n for k in range(n)]
        var_model, var_robust = _quad(cov_model, contrast), _quad(cov_robust, contrast)
        q = quantile
        if groups > 1 and var_robust > var_model:
            q = student_t_quantile(0.975, max(1, played[i] - 1))
        var = max(var_model, var_robust)
        half = q * math.sqrt(max(var, 0.0)) * ELO_SCALE
        value = ELO_MEAN + (theta[i] - mean) * ELO_SCALE
        elo[name], low[name], high[name] = value, value - half, value + half
        quantiles[name] = q
    return EloFit(elo, low, high, groups, quantile, warning, quantiles)


def _matmul(a: list[list[float]], b: list[list[float]]) -> list[list[float]]:
    columns = list(zip(*b, strict=True))
    return [[sum(map(operator.mul, row, col)) for col in columns] for row in a]


def _quad(matrix: list[list[float]], v: list[float]) -> float:
    return sum(
        vi * mij * vj
        for vi, row in zip(v, matrix, strict=True)
        for mij, vj in zip(row, v, strict=True)
    )


def live_elo(
    bots: Sequence[str],
    placings: Sequence[Placing],
    k: float = LIVE_K,
    start: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Classic incremental Elo over the placings in the order given (multiplayer deals as
    pairwise games, each pair's update scaled by ``1 / (players - 1)``), from ``start``
    (default: every bot at the mean)."""
    rating = {b: float((start or {}).get(b, ELO_MEAN)) for b in bots}
    for placing in placings:
        outcomes = [
            (a, b, s) for a, b, s in _pair_outcomes(placing.order) if a in rating and b in rating
        ]
        players = {x for group in placing.order for x in group}
        scale = k / max(1, len(players) - 1)
        delta = dict.fromkeys(players, 0.0)
        for a, b, s in outcomes:
            expected = 1.0 / (1.0 + 10 ** ((rating[b] - rating[a]) / 400.0))
            delta[a] += scale * (s - expected)
            delta[b] -= scale * (s - expected)
        for name, d in delta.items():
            if name in rating:
                rating[name] += d
    return rating


@dataclass(frozen=True, slots=True)
class SkillRating:
    mu: float
    sigma: float
    ordinal: float


def openskill_ratings(
    bots: Sequence[str],
    placings: Sequence[Placing],
    start: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, SkillRating]:
    """OpenSkill Plackett-Luce ratings, each deal rated as one free-for-all game, from
    ``start`` (``(mu, sigma)`` per bot; default: the model's new rating)."""
    from openskill.models import PlackettLuce, PlackettLuceRating

    model = PlackettLuce()
    begun = start or {}
    ratings = {
        b: model.rating(mu=begun[b][0], sigma=begun[b][1], name=b)
        if b in begun
        else model.rating(name=b)
        for b in bots
    }
    for placing in placings:
        teams: list[list[PlackettLuceRating]] = []
        ranks: list[float] = []
        names: list[str] = []
        seen: set[str] = set()
        for place, group in enumerate(placing.order):
            for name in sorted(set(group)):
                if name in ratings and name not in seen:
                    seen.add(name)
                    names.append(name)
                    teams.append([ratings[name]])
                    ranks.append(float(place + 1))
        if len(teams) < 2:
            continue
        rated = model.rate(teams, ranks=ranks)
        for name, team in zip(names, rated, strict=True):
            ratings[name] = team[0]
    return {
        b: SkillRating(mu=float(r.mu), sigma=float(r.sigma), ordinal=float(r.ordinal()))
        for b, r in ratings.items()
    }
