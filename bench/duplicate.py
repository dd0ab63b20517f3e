"""Deals needed to tell two bots apart at 95%: plain deals against field duplicate.

Simulated with the sample policies in-process (the engine the workers run). Two bots A and
B of different strength each play against three ``random`` fillers at a 4-player
``fan-tan`` table (chips: each deal's score change is the measure):

* plain: A and B at one table, every deal a new shuffle, seats rotating; per deal the
  difference d = chips(A) - chips(B);
* field duplicate (docs/seasons.md): each shuffle (board) is played at two tables, A at one
  and B at the other, each holding the same hand from the same seat against the same
  fillers (seeded alike); per board d = chips(A, hand) - chips(B, same hand).

Deals needed for a 95% interval of the mean difference to exclude 0: n = (1.96 s / mean)^2
per deal each bot plays (one deal per bot per board in both formats), with the mean pooled
over both formats (they estimate the same difference; only the spread differs). Printed per pair,
with the ratio plain / duplicate (how much card luck the field duplicate removes).

    .venv/bin/python bench/duplicate.py                      # ~1 min on one core
    .venv/bin/python bench/duplicate.py --deals 4000 --pairs hold-sevens:random
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.base import DealSpec
from referee.games.loop import play_out, policies_chooser, seat_rng
from referee.games.policies import get_policy
from referee.games.registry import get_game
from referee.seasons.model import derive_seed

Z95 = 1.96


def play(preset: str, names: list[str], spec: DealSpec, seed: int) -> list[int]:
    """One deal; each seat's chips change."""
    game = get_game("sevens")
    match = game.new_match(game.preset(preset), len(names), seed, [spec])
    policies = [get_policy(n) for n in names]
    rngs = [seat_rng(seed, seat, names[seat]) for seat in range(len(names))]
    play_out(match, policies_chooser(policies, rngs))
    return list(match.deal_results()[0].deltas)


def measure(a: str, b: str, deals: int, preset: str, seed: int) -> dict[str, float]:
    plain: list[float] = []
    dup: list[float] = []
    for j in range(deals):
        board = derive_seed(seed, "bench", a, b, j)
        # plain: A at seat j % 4, B opposite, random fillers; a new shuffle every deal
        seats = ["random"] * 4
        sa, sb = j % 4, (j + 2) % 4
        seats[sa], seats[sb] = a, b
        deltas = play(preset, seats, DealSpec(seed=board, dealer=j % 4), board)
        plain.append(deltas[sa] - deltas[sb])
        # field duplicate: the same board at two tables, A and B each in seat j % 4 with
        # the same hand, the fillers seeded alike
        s = j % 4
        ta, tb = ["random"] * 4, ["random"] * 4
        ta[s], tb[s] = a, b
        da = play(preset, ta, DealSpec(seed=board, dealer=0), board)
        db = play(preset, tb, DealSpec(seed=board, dealer=0), board)
        dup.append(da[s] - db[s])

    # Both formats estimate the same difference; its best estimate is the pooled mean.
    # What differs is the spread, so the deals needed scale with each format's variance.
    pooled = (statistics.fmean(plain) + statistics.fmean(dup)) / 2

    def need(xs: list[float]) -> float:
        sd = statistics.stdev(xs)
        return math.inf if pooled == 0 else (Z95 * sd / pooled) ** 2

    return {
        "mean": pooled,
        "mean_plain": statistics.fmean(plain),
        "sd_plain": statistics.stdev(plain),
        "mean_dup": statistics.fmean(dup),
        "sd_dup": statistics.stdev(dup),
        "need_plain": need(plain),
        "need_dup": need(dup),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deals", type=int, default=1500, help="boards per pair")
    parser.add_argument("--preset", default="fan-tan")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument(
        "--pairs",
        default="hold-sevens:random,hold-sevens:first-legal,first-legal:random",
        help="A:B,... (sample policies; A should be the stronger)",
    )
    args = parser.parse_args(argv)
    print(f"{args.preset}, 4 seats, 3 random fillers, {args.deals} boards per pair")
    print(
        f"{'A':<12} {'B':<12} {'mean d':>7} {'(plain':>7} {'dup)':>6} "
        f"{'sd plain':>8} {'sd dup':>7} "
        f"{'deals plain':>11} {'deals dup':>9} {'ratio':>6}"
    )
    for pair in args.pairs.split(","):
        a, b = pair.split(":")
        r = measure(a, b, args.deals, args.preset, args.seed)
        ratio = r["need_plain"] / r["need_dup"] if r["need_dup"] else math.inf
        print(
            f"{a:<12} {b:<12} {r['mean']:>7.2f} {r['mean_plain']:>7.2f} {r['mean_dup']:>6.2f} "
            f"{r['sd_plain']:>8.2f} "
            f"{r['sd_dup']:>7.2f} {r['need_plain']:>11.0f} {r['need_dup']:>9.0f} {ratio:>6.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
