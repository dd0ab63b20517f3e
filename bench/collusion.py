"""Collusion detection: measured power and false alarms (docs/SECURITY.md, "Fair play").

Simulated seasons of honest bots (the reference heuristic with per-bot noise: each bot
plays a uniformly random legal action with its own probability, 5-40%) with one
colluding pair, played in-process on the real engines. Every 1-deal match seats a random
table of the field, so each bot plays ``--deals`` deals. The pair shares what it holds
through a side channel (here: the simulation lets it see the partner's hand), as two bots
of one person could:

* ``soft``: whenever it has a choice, the colluder takes the action that opens the most
  of its partner's cards (Sevens) or moves the most card points to its partner (Sedma),
  breaking ties as the heuristic would;
* ``soft-30``: the same on 30% of its choices, the heuristic otherwise (a careful cheat);
* ``none``: no pair colludes (every flag is a false alarm).

Each season's decisions go through ``referee.games.collusion`` exactly as the platform's
report (``arena season collusion``) sends a season's records, and the bench prints, per
kind and season size, the share of seasons in which the colluding pair (in either order)
reached the screening and the act threshold, and the share of honest ordered pairs flagged.

    .venv/bin/python bench/collusion.py                        # the docs' table, ~25 min
    .venv/bin/python bench/collusion.py --seasons 4 --deals 250 --kinds soft none
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.collusion_sim import FAMILIES, KINDS, judge, play_season


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--family", choices=sorted(FAMILIES), nargs="+", default=["sevens"])
    parser.add_argument("--kinds", choices=sorted(KINDS), nargs="+", default=list(KINDS))
    parser.add_argument("--bots", type=int, default=12)
    parser.add_argument("--deals", type=int, nargs="+", default=[100, 500, 2000])
    parser.add_argument("--seasons", type=int, default=10, help="seasons per row")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(
        "family  kind     deals/bot  seasons  pair screened  pair act  honest pairs "
        "screened  (act)  seasons with an honest flag  median pair z  max honest z  s/season"
    )
    for family in args.family:
        for kind in args.kinds:
            for deals in args.deals:
                started = time.perf_counter()
                outcomes = [
                    judge(play_season(family, args.bots, deals, KINDS[kind], args.seed + i))
                    for i in range(args.seasons)
                ]
                took = (time.perf_counter() - started) / args.seasons
                n = len(outcomes)
                honest = sum(o.honest_pairs for o in outcomes)
                zs = sorted(o.colluder_z for o in outcomes)
                print(
                    f"{family:7} {kind:8} {deals:9}  {n:7}  "
                    f"{sum(o.colluders_screened for o in outcomes) / n:13.0%}  "
                    f"{sum(o.colluders_acted for o in outcomes) / n:8.0%}  "
                    f"{sum(o.honest_screened for o in outcomes) / honest:21.2%}  "
                    f"{sum(o.honest_acted for o in outcomes) / honest:5.2%}  "
                    f"{sum(o.honest_screened > 0 for o in outcomes) / n:27.0%}  "
                    f"{zs[n // 2]:13.1f}  {max(o.top_honest_z for o in outcomes):12.1f}  "
                    f"{took:8.1f}",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())
