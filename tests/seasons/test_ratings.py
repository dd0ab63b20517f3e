"""Bradley-Terry Elo, its 95% interval, the live Elo and OpenSkill on synthetic results."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from referee.seasons.ratings import (
    ELO_MEAN,
    ELO_SCALE,
    FEW_MATCHES_WARNING,
    LIVE_K,
    PRIOR_SD,
    Z95,
    Placing,
    bradley_terry,
    live_elo,
    openskill_ratings,
    student_t_cdf,
    student_t_quantile,
)

BOTS = [f"b{i}" for i in range(6)]


def _plackett_luce(rng: random.Random, table: list[str], strength: dict[str, float]) -> Placing:
    """A finishing order drawn from the Plackett-Luce model (best first)."""
    left = list(table)
    order: list[tuple[str, ...]] = []
    while left:
        weights = [math.exp(strength[b]) for b in left]
        pick = rng.choices(left, weights)[0]
        left.remove(pick)
        order.append((pick,))
    return Placing(cluster="", order=tuple(order))


def _league(rng: random.Random, strength: dict[str, float], matches: int) -> list[Placing]:
    out: list[Placing] = []
    for m in range(matches):
        table = rng.sample(BOTS, 4)
        for _ in range(4):
            out.append(Placing(f"m{m}", _plackett_luce(rng, table, strength).order))
    return out


def _true_elo(strength: dict[str, float]) -> dict[str, float]:
    mean = sum(strength.values()) / len(strength)
    return {b: 1500 + (s - mean) * ELO_SCALE for b, s in strength.items()}


def test_elo_recovers_known_strengths_within_its_interval() -> None:
    """Five leagues of 600 deals: the fitted Elo orders the bots right, the truth lies in
    the stated 95% interval for (nearly) every bot, and never beyond 1.6 half-widths
    (a 99.8% interval)."""
    strength = {b: 0.35 * i for i, b in enumerate(BOTS)}
    truth = _true_elo(strength)
    covered = 0
    for seed in range(5):
        fit = bradley_terry(BOTS, _league(random.Random(seed), strength, 150))
        assert sorted(BOTS, key=fit.elo.__getitem__) == BOTS
        assert abs(sum(fit.elo.values()) / len(BOTS) - 1500) < 1e-6
        for b in BOTS:
            half = (fit.high[b] - fit.low[b]) / 2
            assert 0 < half < 60  # 600 deals pin each rating down
            assert abs(fit.elo[b] - truth[b]) <= 1.6 * half, (b, fit.elo[b], truth[b])
            covered += fit.low[b] <= truth[b] <= fit.high[b]
    assert covered >= 27, covered


def test_interval_coverage_on_simulated_leagues() -> None:
    """The nominal 95% intervals cover the true rating in about 95% of simulated leagues."""
    rng = random.Random(2024)
    hits = total = 0
    for _ in range(150):
        strength = {b: rng.gauss(0.0, 0.5) for b in BOTS}
        truth = _true_elo(strength)
        fit = bradley_terry(BOTS, _league(rng, strength, 20))
        for b in BOTS:
            total += 1
            hits += fit.low[b] <= truth[b] <= fit.high[b]
    coverage = hits / total
    assert 0.90 <= coverage <= 0.995, coverage


def test_undefeated_bot_stays_finite_and_ties_are_draws() -> None:
    placings = [Placing("m", (("a",), ("b",), ("c",))) for _ in range(10)]
    fit = bradley_terry(["a", "b", "c"], placings)
    assert math.isfinite(fit.elo["a"]) and fit.elo["a"] > fit.elo["b"] > fit.elo["c"]
    assert math.isfinite(fit.high["a"])
    tied = bradley_terry(["a", "b"], [Placing("m", (("a", "b"),))] * 5)
    assert abs(tied.elo["a"] - tied.elo["b"]) < 1e-9


def test_fit_is_independent_of_the_order_of_results() -> None:
    rng = random.Random(5)
    placings = _league(rng, {b: 0.2 * i for i, b in enumerate(BOTS)}, 30)
    shuffled = list(placings)
    rng.shuffle(shuffled)
    a, b = bradley_terry(BOTS, placings), bradley_terry(BOTS, shuffled)
    for bot in BOTS:
        assert math.isclose(a.elo[bot], b.elo[bot], abs_tol=1e-6)
        assert math.isclose(a.high[bot], b.high[bot], abs_tol=1e-6)


def test_live_elo_and_openskill_move_the_winner_up() -> None:
    placings = [Placing("m", (("a",), ("b", "c"), ("d",)))] * 3
    live = live_elo(["a", "b", "c", "d"], placings)
    assert live["a"] > live["b"] == live["c"] > live["d"]
    assert abs(sum(live.values()) - 4 * 1500) < 1e-6
    skill = openskill_ratings(["a", "b", "c", "d"], placings)
    assert skill["a"].mu > skill["b"].mu > skill["d"].mu
    assert skill["a"].ordinal > skill["d"].ordinal


def test_student_t_quantile_matches_the_tables() -> None:
    assert math.isclose(student_t_quantile(0.975, 1), 12.7062, abs_tol=1e-4)
    assert math.isclose(student_t_quantile(0.975, 10), 2.2281, abs_tol=1e-4)
    assert math.isclose(student_t_quantile(0.975, 29), 2.0452, abs_tol=1e-4)
    assert math.isclose(student_t_quantile(0.025, 5), -2.5706, abs_tol=1e-4)
    assert math.isclose(student_t_quantile(0.975, 1e7), 1.96, abs_tol=1e-3)
    assert math.isclose(student_t_cdf(2.2281388519863867, 10), 0.975, abs_tol=1e-9)


def test_interval_uses_t_on_matches_minus_one_and_warns_below_two_matches() -> None:
    """G matches feed the clustered variance: the half-width is t(0.975, G - 1) standard
    errors. One match gives no clustered variance: the fit says so."""
    rng = random.Random(9)
    strength = {b: 0.3 * i for i, b in enumerate(BOTS)}
    placings = _league(rng, strength, 12)
    fit = bradley_terry(BOTS, placings)
    assert fit.matches == 12 and not fit.warning
    assert math.isclose(fit.quantile, student_t_quantile(0.975, 11))
    # a bot whose interval rests on the clustered variance gets t on its own matches - 1
    for bot in BOTS:
        own = len({p.cluster for p in placings if any(bot in g for g in p.order)})
        assert fit.quantiles[bot] in (fit.quantile, student_t_quantile(0.975, own - 1))
        half = (fit.high[bot] - fit.low[bot]) / 2
        assert half > 0
    one = [p for p in placings if p.cluster == placings[0].cluster]
    single = bradley_terry(BOTS, one)
    assert single.matches == 1 and "fewer than two matches" in single.warning
    assert single.quantile == Z95


def test_live_elo_scales_each_pair_by_one_over_players_minus_one() -> None:
    """Pins the 1 / (players - 1) scale: three equal bots, one deal a > b > c. Each of the
    three pairwise games is expected 0.5, so a gains 2 * (K / 2) * 0.5 = K / 2, b nothing,
    c loses K / 2 (without the scale: K, a mutation the order-only test let through)."""
    bots = ["a", "b", "c"]
    rating = live_elo(bots, [Placing("m0", (("a",), ("b",), ("c",)))])
    assert rating["a"] == pytest.approx(ELO_MEAN + LIVE_K / 2, abs=1e-9)
    assert rating["b"] == pytest.approx(ELO_MEAN, abs=1e-9)
    assert rating["c"] == pytest.approx(ELO_MEAN - LIVE_K / 2, abs=1e-9)
    four = live_elo([*bots, "d"], [Placing("m0", (("a",), ("b",), ("c",), ("d",)))])
    assert four["a"] == pytest.approx(ELO_MEAN + 3 * (LIVE_K / 3) * 0.5, abs=1e-9)


def _two_bot_fit(wins: list[float], prior_sd: float) -> tuple[float, float, float]:
    """A naive reference for two bots with one game per match: the MAP strength difference
    by bisection, then the model and the clustered (G / (G - 1) corrected) variances of
    a's centred Elo."""
    games = len(wins)
    score = sum(wins)

    def gradient(d: float) -> float:  # d = theta_a - theta_b = 2 * theta_a
        p = 1.0 / (1.0 + math.exp(-d))
        return score - games * p - (d / 2) / prior_sd**2

    low, high = -50.0, 50.0
    for _ in range(200):
        mid = (low + high) / 2
        low, high = (mid, high) if gradient(mid) > 0 else (low, mid)
    d = (low + high) / 2
    p = 1.0 / (1.0 + math.exp(-d))
    w = games * p * (1 - p)
    prior = 1.0 / prior_sd**2
    # Hessian of the negative log posterior, [[w + prior, -w], [-w, w + prior]]; the
    # contrast (1/2, -1/2) picks the difference: var = (1/4) * v' C v with v = (1, -1).
    det = (w + prior) ** 2 - w**2
    cov = [[(w + prior) / det, w / det], [w / det, (w + prior) / det]]
    model = 0.25 * (cov[0][0] - 2 * cov[0][1] + cov[1][1])
    meat_sum = sum((s - p) ** 2 for s in wins) * games / (games - 1)
    meat = [[meat_sum, -meat_sum], [-meat_sum, meat_sum]]
    c = [cov[0][0] - cov[0][1], cov[1][0] - cov[1][1]]  # C v, v = (1, -1)
    robust = 0.25 * (
        c[0] * (meat[0][0] * c[0] + meat[0][1] * c[1])
        + c[1] * (meat[1][0] * c[0] + meat[1][1] * c[1])
    )
    return d, model, robust


def test_the_clustered_interval_has_the_small_sample_correction() -> None:
    """Pins the G / (G - 1) factor of the cluster-robust variance: two bots, four matches of
    one game (a wins three), compared with a naive two-bot reference. Without the factor
    the half-width is sqrt(3/4) of this one."""
    wins = [1.0, 1.0, 1.0, 0.0]
    placings = [
        Placing(f"m{i}", (("a",), ("b",)) if s else (("b",), ("a",))) for i, s in enumerate(wins)
    ]
    fit = bradley_terry(["a", "b"], placings)
    d, model, robust = _two_bot_fit(wins, PRIOR_SD)
    assert robust > model, "the clustered variance decides the interval in this case"
    half = student_t_quantile(0.975, len(wins) - 1) * math.sqrt(robust) * ELO_SCALE
    assert fit.elo["a"] == pytest.approx(ELO_MEAN + d / 2 * ELO_SCALE, rel=1e-6)
    assert fit.high["a"] - fit.elo["a"] == pytest.approx(half, rel=1e-6)


def test_live_elo_is_classic_elo_for_two_players() -> None:
    """Pins live Elo against a naive reference (found by ``make mutate``): two bots, a beats
    b twice. A pair of two players is scaled by K / 1; the expected score is the classic
    1 / (1 + 10 ** ((Rb - Ra) / 400)), so the second win gains less than the first. A
    placing naming a bot outside the season moves no rated bot by a pair with it. A
    tie in one group scores 0.5 for each."""
    k = LIVE_K
    a, b = ELO_MEAN + k * 0.5, ELO_MEAN - k * 0.5  # after the first deal (expected 0.5)
    expected = 1.0 / (1.0 + 10 ** ((b - a) / 400.0))
    a, b = a + k * (1 - expected), b - k * (1 - expected)
    win = Placing("m0", (("a",), ("b",)))
    rating = live_elo(["a", "b"], [win, win])
    assert rating["a"] == pytest.approx(a, abs=1e-9)
    assert rating["b"] == pytest.approx(b, abs=1e-9)
    tie = Placing("m2", (("a", "b"),))  # a tie scores 0.5 each: the leader loses a little
    expected = 1.0 / (1.0 + 10 ** ((b - a) / 400.0))
    rating = live_elo(["a", "b"], [win, win, tie])
    assert rating["a"] == pytest.approx(a + k * (0.5 - expected), abs=1e-9)
    outsider = live_elo(["a", "b"], [Placing("m0", (("x",), ("a",)))])
    assert outsider == {"a": ELO_MEAN, "b": ELO_MEAN}


def test_openskill_rates_two_player_deals_ties_and_each_bot_once() -> None:
    """Pins ``openskill_ratings``' use of each deal (found by ``make mutate``): a one-bot
    deal is skipped but the deals after it count; a two-bot deal is rated; tied bots get
    the same rating (their ranks are equal); a bot placed twice in a deal is rated once;
    sigma shrinks from OpenSkill's default as games are rated."""
    from openskill.models import PlackettLuce

    default = PlackettLuce().rating()
    placings = [
        Placing("m0", (("a",),)),
        Placing("m1", (("a",), ("b",))),
        Placing("m2", (("c", "d"), ("a",))),
    ]
    skill = openskill_ratings(["a", "b", "c", "d"], placings)
    assert skill["a"].mu != default.mu and skill["b"].mu < default.mu
    assert skill["c"].mu == skill["d"].mu > default.mu
    assert all(r.sigma < default.sigma for r in skill.values())
    # a bot holding two seats of a deal (self-play) is rated once, at its best place
    twice = openskill_ratings(["a", "b"], [Placing("m0", (("a",), ("b",), ("a",)))])
    once = openskill_ratings(["a", "b"], [Placing("m0", (("a",), ("b",)))])
    assert twice == once


def _naive_bradley_terry(
    bots: list[str], placings: list[Placing]
) -> tuple[dict[str, float], dict[str, float], dict[str, float], int, float, dict[str, float]]:
    """A slow, independent Bradley-Terry fit for small cases: every pair of a deal's order
    (1 to the better place, 0.5 each in a tie), MAP under the N(0, PRIOR_SD^2) prior by
    plain gradient ascent, the model covariance from a numerically differentiated
    gradient, Gauss-Jordan inverses, and the sandwich covariance clustered by match with
    the G / (G - 1) factor (docs: referee/seasons/ratings.py's docstring)."""
    n = len(bots)
    pos = {b: i for i, b in enumerate(bots)}
    outcomes: list[tuple[str, int, int, float]] = []  # (match, i, j, score of i)
    for p in placings:
        places = [(place, b) for place, group in enumerate(p.order) for b in set(group)]
        for (pa, a), (pb, b) in itertools.combinations(places, 2):
            if a in pos and b in pos and a != b:
                score = 0.5 if pa == pb else (1.0 if pa < pb else 0.0)
                outcomes.append((p.cluster, pos[a], pos[b], score))

    def sig(x: float) -> float:
        return 1.0 / (1.0 + math.exp(-x))

    def gradient(theta: list[float]) -> list[float]:
        g = [-t / PRIOR_SD**2 for t in theta]
        for _, i, j, s in outcomes:
            r = s - sig(theta[i] - theta[j])
            g[i] += r
            g[j] -= r
        return g

    theta = [0.0] * n
    for _ in range(200_000):
        g = gradient(theta)
        if max(abs(v) for v in g) < 1e-13:
            break
        theta = [t + 0.2 * v for t, v in zip(theta, g, strict=True)]

    def inverse(m: list[list[float]]) -> list[list[float]]:
        a = [[*row, *(1.0 if i == j else 0.0 for j in range(n))] for i, row in enumerate(m)]
        for c in range(n):
            p = max(range(c, n), key=lambda r: abs(a[r][c]))
            a[c], a[p] = a[p], a[c]
            a[c] = [v / a[c][c] for v in a[c]]
            for r in range(n):
                if r != c:
                    a[r] = [v - a[r][c] * w for v, w in zip(a[r], a[c], strict=True)]
        return [row[n:] for row in a]

    h = 1e-5
    neg_hessian = [[0.0] * n for _ in range(n)]
    for j in range(n):
        up = gradient([t + (h if k == j else 0.0) for k, t in enumerate(theta)])
        down = gradient([t - (h if k == j else 0.0) for k, t in enumerate(theta)])
        for i in range(n):
            neg_hessian[i][j] = -(up[i] - down[i]) / (2 * h)
    cov = inverse(neg_hessian)
    matches = sorted({m for m, _, _, _ in outcomes})
    g_count = len(matches)
    meat = [[0.0] * n for _ in range(n)]
    for match in matches:
        u = [0.0] * n
        for m, i, j, s in outcomes:
            if m == match:
                u[i] += s - sig(theta[i] - theta[j])
                u[j] -= s - sig(theta[i] - theta[j])
        for i in range(n):
            for j in range(n):
                meat[i][j] += u[i] * u[j] * (g_count / (g_count - 1) if g_count > 1 else 1.0)
    robust = [
        [sum(cov[i][k] * meat[k][kk] * cov[kk][j] for k in range(n) for kk in range(n))
         for j in range(n)]
        for i in range(n)
    ]  # fmt: skip
    quantile = student_t_quantile(0.975, g_count - 1) if g_count > 1 else Z95
    mean = sum(theta) / n
    elo, low, high, quantiles = {}, {}, {}, {}
    for i, b in enumerate(bots):
        c = [(1.0 if k == i else 0.0) - 1.0 / n for k in range(n)]
        v_model = sum(c[k] * cov[k][kk] * c[kk] for k in range(n) for kk in range(n))
        v_robust = sum(c[k] * robust[k][kk] * c[kk] for k in range(n) for kk in range(n))
        q = quantile
        if g_count > 1 and v_robust > v_model:
            played = len({m for m, x, y, _ in outcomes if i in (x, y)})
            q = student_t_quantile(0.975, max(1, played - 1))
        half = q * math.sqrt(max(v_model, v_robust)) * ELO_SCALE
        elo[b] = ELO_MEAN + (theta[i] - mean) * ELO_SCALE
        low[b], high[b], quantiles[b] = elo[b] - half, elo[b] + half, q
    return elo, low, high, g_count, quantile, quantiles


REFERENCE_LEAGUES = {
    # four bots, five matches of two or three deals, ties, an outsider, d in two matches only
    "four bots": (
        ["a", "b", "c", "d"],
        [
            Placing("m1", (("a",), ("b",), ("c",))),
            Placing("m1", (("b",), ("a", "c"))),
            Placing("m2", (("c",), ("d",), ("a",), ("zz",))),
            Placing("m2", (("a",), ("c",), ("d",))),
            Placing("m2", (("d", "a"), ("c",))),
            Placing("m3", (("b",), ("c",))),
            Placing("m3", (("c",), ("b",))),
            Placing("m4", (("d",), ("b",), ("a",))),
            Placing("m4", (("b",), ("d",), ("a",))),
            Placing("m5", (("a",), ("b",))),
            Placing("m5", (("a",), ("c",), ("b",))),
        ],
    ),
    # two matches: the smallest case with the clustered interval and t on 1 df
    "two matches": (
        ["x", "y", "z"],
        [
            Placing("m1", (("x",), ("y",), ("z",))),
            Placing("m1", (("y",), ("x",), ("z",))),
            Placing("m2", (("z",), ("x",), ("y",))),
        ],
    ),
    # bots listed out of name order (ties then score the later-listed bot first) and a
    # pair that never met (w and x), after which the other pairs must still count
    "unsorted, a pair never met": (
        ["w", "x", "v", "u"],
        [
            Placing("m1", (("w", "v"), ("u",))),
            Placing("m1", (("u",), ("w",))),
            Placing("m2", (("x", "u"), ("v",))),
            Placing("m2", (("v",), ("x",), ("u",))),
            Placing("m3", (("u", "w"),)),
            Placing("m3", (("x",), ("v",))),
        ],
    ),
    # one match: model variance only, the normal quantile and the warning
    "one match": (
        ["x", "y", "z"],
        [Placing("m1", (("x",), ("y",), ("z",))), Placing("m1", (("y",), ("x", "z")))],
    ),
}


@pytest.mark.parametrize("league", list(REFERENCE_LEAGUES))
def test_bradley_terry_equals_a_naive_reference(league: str) -> None:
    """Pins the whole fit (Elo, both interval ends, matches, quantiles, warning) against
    ``_naive_bradley_terry`` to 1e-6 Elo: the Newton steps and their stopping rule, the
    Hessian, the model and sandwich covariances, the contrast, the per-bot t quantile on
    its own matches - 1. Found by ``make mutate``: the other tests check the fit only
    statistically (strengths recovered within the interval, coverage), which let wrong
    Hessian entries, a lost outsider pair, a dropped cluster score or a wrong mean through."""
    bots, placings = REFERENCE_LEAGUES[league]
    fit = bradley_terry(bots, placings)
    elo, low, high, matches, quantile, quantiles = _naive_bradley_terry(bots, placings)
    assert fit.matches == matches
    assert fit.quantile == pytest.approx(quantile, abs=1e-9)
    assert fit.warning == ("" if matches > 1 else FEW_MATCHES_WARNING)
    for b in bots:
        assert fit.elo[b] == pytest.approx(elo[b], abs=1e-6), b
        assert fit.low[b] == pytest.approx(low[b], abs=1e-6), b
        assert fit.high[b] == pytest.approx(high[b], abs=1e-6), b
        assert fit.quantiles[b] == pytest.approx(quantiles[b], abs=1e-9), b


def test_bradley_terry_of_no_bots_and_of_one_bot() -> None:
    """No bots: an empty fit. One bot: its Elo is the mean, whatever it played against."""
    empty = bradley_terry([], [Placing("m1", (("a",), ("b",)))])
    assert (empty.elo, empty.low, empty.high, empty.matches) == ({}, {}, {}, 0)
    alone = bradley_terry(["a"], [Placing("m1", (("a",), ("zz",)))])
    assert alone.elo == {"a": ELO_MEAN} and alone.matches == 0
    assert alone.low["a"] <= ELO_MEAN <= alone.high["a"]


@pytest.mark.parametrize("t", [-math.inf, -40.0, -3.0, -0.5, 0.0, 0.7, 2.5, 40.0, math.inf])
def test_student_t_cdf_has_the_closed_forms_of_one_and_two_degrees_of_freedom(t: float) -> None:
    """The t distribution's CDF (the interval's quantiles come from it) against its closed
    forms: 1/2 + atan(t)/pi on 1 degree of freedom (Cauchy), 1/2 + t / (2 sqrt(2 + t^2))
    on 2; 1/2 at t = 0 and 0 or 1 at the infinities (mutmut: the incomplete beta's ends,
    x = 1 at t = 0 and x = 0 at infinity, were unchecked: they crashed or answered 0)."""
    cauchy = 0.5 + math.atan(t) / math.pi
    two = 0.5 + (math.copysign(0.5, t) if math.isinf(t) else t / (2 * math.sqrt(2 + t * t)))
    assert student_t_cdf(t, 1) == pytest.approx(cauchy, abs=1e-12)
    assert student_t_cdf(t, 2) == pytest.approx(two, abs=1e-12)


def test_student_t_quantile_at_the_median_near_it_and_outside_its_domain() -> None:
    """The median is 0; a quantile below 1 is found (t(0.6, 10) = 0.260185, the bracket
    starts at 0); p outside (0, 1) or df <= 0 is refused in words, naming both (mutmut: the
    median recursed for ever, a bracket from 1 and the refusals were unchecked)."""
    assert student_t_quantile(0.5, 4) == pytest.approx(0.0, abs=1e-9)
    assert student_t_quantile(0.6, 10) == pytest.approx(0.2601848, abs=1e-6)
    assert student_t_cdf(student_t_quantile(0.6, 10), 10) == pytest.approx(0.6, abs=1e-10)
    for p, df in ((0.0, 3.0), (1.0, 3.0), (1.5, 3.0), (-0.1, 3.0), (0.9, 0.0), (0.9, -1.0)):
        with pytest.raises(ValueError) as refused:
            student_t_quantile(p, df)
        assert str(refused.value) == (
            f"student_t_quantile needs 0 < p < 1 and df > 0, got p={p}, df={df}"
        )
