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
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.base import Match
from referee.games.collusion import (
    Decision,
    PlayedMatch,
    action_help,
    decision_help,
    pair_statistics,
)
from referee.games.ladder import heuristic_policy
from referee.games.registry import get_game

FAMILIES = {"sevens": ("sevens", "sevens", 4), "sedma": ("sedma", "sedma-3", 3)}
KINDS = {"none": 0.0, "soft": 1.0, "soft-30": 0.3}


@dataclass(frozen=True)
class SeasonOutcome:
    colluders_screened: bool
    colluders_acted: bool
    honest_pairs: int
    honest_screened: int
    honest_acted: int
    top_honest_z: float
    colluder_z: float


def _collusive(match: Match, legal: Sequence[str], partner: int, rng: random.Random) -> str:
    helps = action_help(match, legal)
    if helps is None or partner not in next(iter(helps.values())):
        return legal[rng.randrange(len(legal))]
    best = max(helps[a][partner] for a in legal)
    return next(a for a in legal if helps[a][partner] == best)


def play_season(
    family: str, bots: int, deals: int, strength: float, seed: int
) -> list[PlayedMatch]:
    """One season: ``bots`` bots (``b00``, ``b01`` collude with ``strength``), each in
    ``deals`` 1-deal matches on random tables."""
    game_name, preset, table = FAMILIES[family]
    game = get_game(game_name)
    rules = game.preset(preset)
    rng = random.Random(seed)
    names = [f"b{i:02d}" for i in range(bots)]
    noise = {name: 0.05 + 0.35 * i / max(bots - 1, 1) for i, name in enumerate(names)}
    played: list[PlayedMatch] = []
    for index in range(bots * deals // table):
        seats = rng.sample(names, table)
        match = game.new_match(rules, table, rng.getrandbits(63), None)
        decisions: list[Decision] = []
        while not match.is_over():
            seat = match.to_act()
            legal = match.legal_actions()
            me = seats[seat]
            mate = {"b00": "b01", "b01": "b00"}.get(me)
            if len(legal) == 1:
                action = legal[0]
            elif mate in seats and rng.random() < strength:
                action = _collusive(match, legal, seats.index(mate), rng)
            elif rng.random() < noise[me]:
                action = legal[rng.randrange(len(legal))]
            else:
                action = heuristic_policy(match.observation(seat), legal, rng)
            decision = decision_help(match, action)
            if decision is not None:
                decisions.append(decision)
            match.apply(action)
            if match.is_over() or match.deal_index() > 0:
                break
        played.append(PlayedMatch(f"m{index:05d}", seats, decisions))
    return played


def judge(played: list[PlayedMatch]) -> SeasonOutcome:
    stats, _ = pair_statistics(played)
    pair = {("b00", "b01"), ("b01", "b00")}
    colluders = [s for s in stats if (s.helper, s.helped) in pair]
    honest = [s for s in stats if (s.helper, s.helped) not in pair]
    return SeasonOutcome(
        colluders_screened=any(s.level for s in colluders),
        colluders_acted=any(s.level == "act" for s in colluders),
        honest_pairs=len(honest),
        honest_screened=sum(1 for s in honest if s.level),
        honest_acted=sum(1 for s in honest if s.level == "act"),
        top_honest_z=max((s.z for s in honest), default=0.0),
        colluder_z=max((s.z for s in colluders), default=0.0),
    )


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
