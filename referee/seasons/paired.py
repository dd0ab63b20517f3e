"""Paired statistics of a version test: NEW against OLD on the same duplicate sets.

A *duplicate set* is one board (shuffle) played twice: once by NEW and once by OLD, in the
same seat, with the same hand, against the same field. Its difference
``d = score(NEW) - score(OLD)`` (chips in Sevens, match points in Sedma) carries no luck of
NEW's own cards; the sets are independent of each other, so the paired unit is the set.

* :func:`paired_interval`: the mean of ``d`` with a Student-t 95% interval on ``n - 1``
  degrees of freedom (the per-set differences are not normal, but their mean is; the
  bench, ``bench/sprt.py``, measures how often the interval covers).
* :class:`Sprt`: a sequential probability ratio test on the per-set differences, the
  generalized SPRT of fishtest in *normalized Elo*: ``nElo = mean(d) / sd(d) * 800 / ln 10``
  (docs/VERSIONTEST.md says why this model and not a win/draw/loss one). The log-likelihood
  ratio of H1 (``nElo = elo1``) against H0 (``nElo = elo0``) under a normal model of ``d``
  with the sample's variance is ``n (t1 - t0) (mean/sd - (t0 + t1) / 2)`` with
  ``t = nElo * ln 10 / 800``; the test stops at the first crossing of Wald's bounds
  ``ln(beta / (1 - alpha))`` (H0: no better than elo0) and ``ln((1 - beta) / alpha)`` (H1).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from referee.seasons.ratings import student_t_quantile

NELO_PER_T = 800.0 / math.log(10.0)
"""Normalized Elo per unit of standardized mean (mean / sd): for a game with no draws near
50% it equals logistic Elo (fishtest's normalized Elo)."""

MIN_SETS = 20
"""The SPRT decides from this many sets on: with fewer the sample sd is too rough."""

H0 = "H0"
H1 = "H1"


@dataclass(frozen=True, slots=True)
class PairedSummary:
    """Mean per-set difference with its interval; ``nelo`` is ``mean / sd`` in nElo."""

    sets: int
    mean: float
    sd: float
    low: float
    high: float
    level: float = 0.95

    @property
    def nelo(self) -> float:
        return nelo(self.mean, self.sd)

    @property
    def nelo_low(self) -> float:
        return nelo(self.low, self.sd)

    @property
    def nelo_high(self) -> float:
        return nelo(self.high, self.sd)

    @property
    def excludes_zero(self) -> bool:
        return self.low > 0 or self.high < 0


def nelo(mean: float, sd: float) -> float:
    """Normalized Elo of a standardized mean (0 when the sd is 0 and the mean too)."""
    if sd > 0:
        return mean / sd * NELO_PER_T
    return 0.0 if mean == 0 else math.copysign(math.inf, mean)


def paired_interval(diffs: Sequence[float], level: float = 0.95) -> PairedSummary:
    """Student-t interval of the mean per-set difference (needs two sets or more)."""
    n = len(diffs)
    if n < 2:
        raise ValueError(f"a paired interval needs at least 2 sets, got {n}")
    mean = statistics.fmean(diffs)
    sd = statistics.stdev(diffs)
    half = student_t_quantile(0.5 + level / 2, n - 1) * sd / math.sqrt(n)
    return PairedSummary(n, mean, sd, mean - half, mean + half, level)


def sprt_bounds(alpha: float, beta: float) -> tuple[float, float]:
    """Wald's bounds on the log-likelihood ratio: (accept H0 below, accept H1 above)."""
    if not (0 < alpha < 0.5 and 0 < beta < 0.5):
        raise ValueError(f"alpha and beta must lie in (0, 0.5), got {alpha}, {beta}")
    return math.log(beta / (1 - alpha)), math.log((1 - beta) / alpha)


def llr(n: int, mean: float, sd: float, elo0: float, elo1: float) -> float:
    """Log-likelihood ratio of nElo = elo1 against nElo = elo0 after ``n`` sets."""
    t0, t1 = elo0 / NELO_PER_T, elo1 / NELO_PER_T
    if sd > 0:
        z = mean / sd
    elif mean == 0:
        z = 0.0  # every set tied: no sign of a difference
    else:
        z = math.copysign(1e9, mean)
    return n * (t1 - t0) * (z - (t0 + t1) / 2)


@dataclass(slots=True)
class Sprt:
    """A sequential test fed one set difference at a time (:meth:`add`)."""

    elo0: float
    elo1: float
    alpha: float = 0.05
    beta: float = 0.05
    min_sets: int = MIN_SETS
    diffs: list[float] = field(default_factory=list)
    _sum: float = 0.0
    _sumsq: float = 0.0
    decision: str = ""
    """``""`` while running, then :data:`H0` or :data:`H1` (fixed once reached)."""

    def __post_init__(self) -> None:
        if not self.elo1 > self.elo0:
            raise ValueError(f"--sprt ELO0 ELO1 needs ELO1 > ELO0, got {self.elo0} {self.elo1}")
        sprt_bounds(self.alpha, self.beta)

    @property
    def bounds(self) -> tuple[float, float]:
        return sprt_bounds(self.alpha, self.beta)

    @property
    def llr(self) -> float:
        n = len(self.diffs)
        if n < 2:
            return 0.0
        mean = self._sum / n
        sd = math.sqrt(max(0.0, self._sumsq / n - mean * mean))
        if sd < 1e-12 * max(1.0, abs(mean)):  # rounding of equal values
            sd = 0.0
        return llr(n, mean, sd, self.elo0, self.elo1)

    def add(self, diff: float) -> str:
        """Count one set; returns the decision (``""`` while undecided)."""
        self.diffs.append(diff)
        self._sum += diff
        self._sumsq += diff * diff
        if not self.decision and len(self.diffs) >= self.min_sets:
            lower, upper = self.bounds
            value = self.llr
            if value <= lower:
                self.decision = H0
            elif value >= upper:
                self.decision = H1
        return self.decision

    def verdict(self) -> str:
        """One line for people."""
        lower, upper = self.bounds
        where = f"LLR {self.llr:.2f} in [{lower:.2f}, {upper:.2f}] after {len(self.diffs)} sets"
        if self.decision == H1:
            return f"H1 accepted: NEW is better (nElo >= {self.elo1:g}); {where}"
        if self.decision == H0:
            return f"H0 accepted: no difference (nElo <= {self.elo0:g}); {where}"
        return f"undecided; {where}"
