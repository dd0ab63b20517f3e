"""What the hidden hands cost a Sevens bot against three ``random`` seats.

Shown the true hands, an exact solve wins about two thirds of ``sevens`` deals against
three random players (``bench/sevens_heuristic.py --policies exact``); the bots, which
see only their own hand, the table and the history, win a little over half. This bench
measures where the difference goes, at the decisions of the heuristic (seat ``hero`` of
``--sets`` deals, the other seats random), with at most ``--cards`` cards in the hands:

* **what the belief knows**: for each card the seat has not seen, the share of the
  belief's worlds (``SevensBelief`` weighted as the search bots draw them) that give it to
  its true holder, beside the share a world dealt in proportion to the hand sizes gives
  it (knowing nothing but the sizes);
* **what a decision is worth**: the exact value (probability of winning, playing on
  perfectly with the true hands, ``exact.py``) of the heuristic's card, of the best card,
  and of the ``solver`` rung's card (``--worlds`` worlds from the belief), averaged over
  the decisions.

    .venv/bin/python bench/sevens_information.py --sets 40 --cards 28
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.base import DealSpec, derive_seed
from referee.games.policies import POLICIES
from referee.games.sevens import bots, exact
from referee.games.sevens.belief import SevensBelief
from referee.games.sevens.fast import FastDeal, text_move
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import preset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="sevens")
    parser.add_argument("--sets", type=int, default=40, help="deals (one hero seat each)")
    parser.add_argument("--cards", type=int, default=28, help="decisions from this many cards")
    parser.add_argument("--worlds", type=int, default=32, help="the solver's worlds (32)")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    rules = preset(args.preset)
    hits: dict[int, list[float]] = {}
    variants: dict[str, dict[str, object]] = {
        "solver": {},
        "solver z=1": {"confidence": 1.0},
        "solver z=2": {"confidence": 2.0},
        "solver 4x": {"worlds": 4 * args.worlds},
        "solver 4x z=1": {"worlds": 4 * args.worlds, "confidence": 1.0},
    }
    values = {"heuristic": 0.0, "best": 0.0, **dict.fromkeys(variants, 0.0)}
    decisions = 0
    started = time.perf_counter()
    for i in range(args.sets):
        seed = derive_seed(args.seed, args.preset, i, bits=63)
        hero = i % 4
        match = SevensMatch(rules, 4, seed, [DealSpec(seed, 0, 0)])
        rng = random.Random(seed)
        while not match.is_over() and not match.deal_results():
            seat = match.to_act()
            legal = match.legal_actions()
            obs = match.observation(seat)
            action = POLICIES["heuristic" if seat == hero else "random"](obs, legal, rng)
            deal = FastDeal.from_match(match)
            left = sum(h.bit_count() for h in deal.hands)
            if seat == hero and len(legal) > 1 and left <= args.cards and exact.qualifies(deal):
                true = deal.hands
                belief = SevensBelief(obs)
                worlds: list[list[int]] = []
                while len(worlds) < 64:
                    worlds.extend(h for h, _ in bots._resample(belief, rng, 16))
                others = sum(true[s].bit_count() for s in range(4) if s != hero)
                got = base = 0.0
                unseen = [c for c in range(52) for s in range(4) if s != hero and true[s] >> c & 1]
                for c in unseen:
                    owner = next(s for s in range(4) if true[s] >> c & 1)
                    got += sum(w[owner] >> c & 1 for w in worlds) / len(worlds)
                    base += true[owner].bit_count() / others
                row = hits.setdefault(left // 8 * 8, [0.0, 0.0, 0.0])
                row[0] += got / len(unseen)
                row[1] += base / len(unseen)
                row[2] += 1
                q = exact.solve(deal.fr, true, deal.table, hero, [0.0] * 4, 10**8)
                assert q is not None
                values["heuristic"] += q[text_move(action)]
                values["best"] += max(q.values())
                for name, kw in variants.items():
                    choice = bots.solver(
                        obs,
                        legal,
                        random.Random(seed + left),
                        int(kw.get("worlds", args.worlds)),  # type: ignore[call-overload]
                        52,
                        10**7,
                        time.perf_counter() + 60,
                        0,
                        confidence=kw.get("confidence"),  # type: ignore[arg-type]
                    )
                    values[name] += q[text_move(choice)]
                decisions += 1
            match.apply(action)
    print(f"{args.preset}, {args.sets} deals, heuristic decisions with <= {args.cards} cards")
    print(f"{'cards in hands':<15} {'belief':>7} {'sizes only':>10} {'decisions':>9}")
    for left in sorted(hits):
        got, base, count = hits[left]
        label = f"{left}-{left + 7}"
        print(f"{label:<15} {got / count:>7.3f} {base / count:>10.3f} {int(count):>9}")
    print(f"exact value of the card played, mean over {decisions} decisions:")
    for name, total in values.items():
        print(f"  {name:<10} {total / max(1, decisions):.4f}")
    print(f"{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
