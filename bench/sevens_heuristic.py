"""The Sevens heuristic against three ``random`` seats on the fast engine, over many deals.

The search rungs take seconds per deal; the heuristic takes a fraction of a millisecond
per deal on the fast engine (``referee/games/sevens/fast.py``), so its strength (and any
change to it, ``referee/games/sevens/heuristic.py``) is measured over thousands of deals.
Protocol as ``bench/strength.py --targets``: duplicate sets, each one shuffle (dealer 0)
played once per seat of the bot under test, the other three seats ``random``; the share
of deals won and the chips per deal with 95% intervals over sets (normal: the sets are
independent, and there are thousands).

``oracle`` is a bound, not a bot: Perfect Information Monte Carlo shown the true hands
(``--playouts`` playouts per legal move, the same seeds for every move, the heuristic for
itself and random play for the others, as the others really play; the win as utility).
What it wins is roughly what a search could win if the belief were exact.

``exact`` is the exact bound: shown the true hands, once at most ``--exact-cards`` cards
are in the hands it plays the card of the highest probability of winning by expectimax
(``referee/games/sevens/exact.py``: itself maximising, the others modelled as uniformly
random, as they are here), the heuristic before. With ``--exact-cards 52`` it is the
perfect-information optimum against three random players.

    .venv/bin/python bench/sevens_heuristic.py --sets 5000    # ~1 min a preset on one core
    .venv/bin/python bench/sevens_heuristic.py --policies oracle --sets 300 --playouts 60
    .venv/bin/python bench/sevens_heuristic.py --policies heuristic,exact --sets 100
    .venv/bin/python bench/sevens_heuristic.py --weights-grid --sets 2000   # ~6 min a preset

``--weights-grid`` plays the heuristic again with each weighting of :data:`WEIGHTS_GRID`
(``heuristic.DEPENDENCY``, ``GAP``, ``RELEASE``) and each priority of
:data:`LEADS_ON_GRID` (``heuristic.LEADS_ON``; 0: a card leading to the seat's own cards
is no longer played before every blocker) on the same sets, each beside the shipped
weights: how much the heuristic's strength against random players depends on them.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import random
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.base import DealSpec, derive_seed
from referee.games.sevens import exact, heuristic
from referee.games.sevens.fast import FastDeal, heuristic_move, random_move
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import preset
from referee.seasons.ratings import Z95

Move = Callable[[FastDeal, random.Random], int]


def oracle(playouts: int) -> Move:
    """The perfect-information bound of the module docstring, ``playouts`` per move."""

    def move(deal: FastDeal, rng: random.Random) -> int:
        moves = deal.legal_moves()
        if len(moves) == 1:
            return moves[0]
        seat = deal.to_act
        seeds = [rng.getrandbits(32) for _ in range(playouts)]
        best, best_wins = moves[0], -1
        for m in moves:
            wins = 0
            for seed in seeds:
                sim = deal.clone()
                sim.play(m)
                r = random.Random(seed)
                while sim.winner < 0:
                    sim.play((heuristic_move if sim.to_act == seat else random_move)(sim, r))
                wins += sim.winner == seat
            if wins > best_wins:
                best, best_wins = m, wins
        return best

    return move


def exact_policy(exact_cards: int) -> Move:
    """The exact bound of the module docstring (the heuristic above ``exact_cards``)."""

    def move(deal: FastDeal, rng: random.Random) -> int:
        moves = deal.legal_moves()
        if len(moves) == 1:
            return moves[0]
        if sum(h.bit_count() for h in deal.hands) <= exact_cards and exact.qualifies(deal):
            shares = [0.0] * deal.n
            values = exact.solve(deal.fr, deal.hands, deal.table, deal.to_act, shares, 10**8)
            if values:
                return max(values, key=lambda m: (values[m], -m))
        return heuristic_move(deal, rng)

    return move


def play_sets(
    policy: Move, preset_name: str, sets: int, seed: int, per_set: list[float] | None = None
) -> dict[str, float]:
    """``policy`` in each seat of ``sets`` shuffles against three ``random`` seats (each
    set's share of deals won appended to ``per_set`` when given)."""
    rules = preset(preset_name)
    won: list[float] = []
    chips: list[float] = []
    for k in range(sets):
        set_seed = derive_seed(seed, preset_name, k, bits=63)
        start = FastDeal.from_match(SevensMatch(rules, 4, set_seed, [DealSpec(set_seed, 0, 0)]))
        wins = 0
        score = 0
        for hero in range(4):
            deal = start.clone()
            rng = random.Random(derive_seed(set_seed, hero, bits=64))
            while deal.winner < 0:
                move = policy if deal.to_act == hero else random_move
                deal.play(move(deal, rng))
            wins += deal.winner == hero
            if rules.scoring != "winner_only":
                score += deal.deltas()[hero]
        won.append(wins / 4)
        chips.append(score / 4)
    if per_set is not None:
        per_set.extend(won)
    out: dict[str, float] = {"sets": sets, "deals": 4 * sets}
    for name, values in (("won", won), ("score", chips)):
        mean = statistics.fmean(values)
        half = Z95 * statistics.stdev(values) / math.sqrt(len(values))
        out[name], out[f"{name}_half"] = mean, half
    return out


WEIGHTS_GRID = tuple(
    (dependency, gap, release)
    for dependency in (0.0, 0.5, 1.0, 2.0)
    for gap in (0.0, 0.5, 1.0)
    for release in (0.5, 1.0, 2.0)
)
"""``--weights-grid``: (DEPENDENCY, GAP, RELEASE) weightings of the heuristic's scores."""

LEADS_ON_GRID = (10.0, 3.0, 1.0, 0.0)
"""``--weights-grid``: priorities of a card that leads to more of the seat's own cards."""


Weights = tuple[float, float, float, float]
"""(DEPENDENCY, GAP, RELEASE, LEADS_ON) of ``heuristic``."""


@contextlib.contextmanager
def heuristic_weights(weights: Weights) -> Iterator[None]:
    """``heuristic`` plays with ``weights`` inside the block; its own are restored after."""
    shipped = (heuristic.DEPENDENCY, heuristic.GAP, heuristic.RELEASE, heuristic.LEADS_ON)
    heuristic.DEPENDENCY, heuristic.GAP, heuristic.RELEASE, heuristic.LEADS_ON = weights
    try:
        yield
    finally:
        heuristic.DEPENDENCY, heuristic.GAP, heuristic.RELEASE, heuristic.LEADS_ON = shipped


def weights_grid(presets: list[str], sets: int, seed: int) -> None:
    """The heuristic with each weighting of the grids, on the same sets as the shipped
    weights (module docstring), with the paired difference from them."""
    shipped = (heuristic.DEPENDENCY, heuristic.GAP, heuristic.RELEASE, heuristic.LEADS_ON)
    rows: list[Weights] = [shipped]
    rows += [(d, g, r, shipped[3]) for d, g, r in WEIGHTS_GRID if (d, g, r) != shipped[:3]]
    rows += [(*shipped[:3], lead) for lead in LEADS_ON_GRID]
    print(
        f"{'preset':<8} {'dependency':>10} {'gap':>4} {'release':>7} {'leads_on':>8} "
        f"{'won':>6} {'95%':>6} {'vs shipped':>10} {'95%':>6} {'score/deal':>10}"
    )
    for preset_name in presets:
        base: list[float] = []
        for weights in rows:
            won: list[float] = []
            with heuristic_weights(weights):
                got = play_sets(heuristic_move, preset_name, sets, seed, won)
            base = base or won
            diffs = [a - b for a, b in zip(won, base, strict=True)]
            half = Z95 * statistics.stdev(diffs) / math.sqrt(len(diffs))
            d, g, r, lead = weights
            print(
                f"{preset_name:<8} {d:>10g} {g:>4g} {r:>7g} {lead:>8g} {got['won']:>6.4f} "
                f"{got['won_half']:>6.4f} {statistics.fmean(diffs):>+10.4f} {half:>6.4f} "
                f"{got['score']:>10.2f}" + ("  (shipped)" if weights is shipped else ""),
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, default=5000, help="duplicate sets (5000)")
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--presets", default="sevens,fan-tan")
    parser.add_argument("--policies", default="heuristic,random", help="and oracle, exact")
    parser.add_argument("--playouts", type=int, default=60, help="oracle's per move (60)")
    parser.add_argument(
        "--exact-cards", type=int, default=52, help="exact: solve from this many cards (52)"
    )
    parser.add_argument(
        "--weights-grid",
        action="store_true",
        help="the heuristic under each weighting of WEIGHTS_GRID and LEADS_ON_GRID",
    )
    args = parser.parse_args(argv)
    if args.weights_grid:
        print(f"fast engine, seed {args.seed}, {args.sets} sets of 4 deals, vs 3 random")
        weights_grid(args.presets.split(","), args.sets, args.seed)
        return 0
    policies = {
        "heuristic": heuristic_move,
        "random": random_move,
        "oracle": oracle(args.playouts),
        "exact": exact_policy(args.exact_cards),
    }
    print(f"fast engine, seed {args.seed}, {args.sets} sets of 4 deals, vs 3 random")
    print(f"{'preset':<8} {'bot':<10} {'won':>6} {'95%':>7} {'score/deal':>10} {'95%':>6} {'s':>5}")
    for preset_name in args.presets.split(","):
        for name in args.policies.split(","):
            started = time.perf_counter()
            r = play_sets(policies[name], preset_name, args.sets, args.seed)
            print(
                f"{preset_name:<8} {name:<10} {r['won']:>6.3f} {r['won_half']:>7.3f} "
                f"{r['score']:>10.2f} {r['score_half']:>6.2f} "
                f"{time.perf_counter() - started:>5.0f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
