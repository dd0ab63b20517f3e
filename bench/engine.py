"""Engine benchmark: random legal play through the public Match API, one core.

For every game in ``referee.games.registry.GAMES`` and every preset (4 players where the
preset allows it, else its smallest table), one-deal matches are played with uniformly
random legal actions: ``legal_actions()`` then ``apply()`` until ``is_over()``, the way
a worker drives the engine. Beside them, in the same run, a minimal single-function
Sevens loop (plain lists, no API, no events) gives the baseline the ratios refer to.

A second table measures the search API (referee/games/search.py, docs/ladder.md): from
one mid-deal position (12 random decisions into a 4-player deal), playouts per second of
``determinize`` + play to the end of the deal, with the heuristic for every seat (what
the old mc and ismcts bots did) beside uniformly random legal play; for the Sevens family
also with the search engine the bots use now (referee/games/sevens/fast.py: a world
sampled from referee/games/sevens/belief.py, then heuristic play on masks and integer
moves), measured beside the search API's heuristic playouts: the ratio is the speed-up.

    .venv/bin/python bench/engine.py            # about 1 s per row
    .venv/bin/python bench/engine.py --seconds 3 --json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from referee.games.base import DealSpec, Game
from referee.games.registry import GAMES
from referee.games.search import Position, position
from referee.games.sevens.belief import SevensBelief
from referee.games.sevens.fast import heuristic_move
from referee.games.sevens.search import SevensPosition


def minimal_sevens_deal(rng: random.Random) -> int:
    """One random 4-player Sevens deal (7D opens, must play, one card a turn) in the most
    direct pure-Python form; returns the number of decisions. The baseline."""
    deck = [(s, r) for s in range(4) for r in range(1, 14)]
    rng.shuffle(deck)
    hands = [deck[i::4] for i in range(4)]
    low = [0] * 4  # lowest rank on the table per suit (0: row not open)
    high = [0] * 4
    seat = next(i for i, h in enumerate(hands) if (1, 7) in h)
    decisions = 0
    while True:
        hand = hands[seat]
        if low[1] == 0:
            legal = [(1, 7)] if (1, 7) in hand else []
        else:
            legal = [
                (s, r)
                for (s, r) in hand
                if (low[s] == 0 and r == 7) or (low[s] and (r == low[s] - 1 or r == high[s] + 1))
            ]
        decisions += 1
        if legal:
            card = legal[rng.randrange(len(legal))]
            hand.remove(card)
            s, r = card
            if low[s] == 0:
                low[s] = high[s] = 7
            elif r < low[s]:
                low[s] = r
            else:
                high[s] = r
            if not hand:
                return decisions
        seat = (seat + 1) % 4


def api_deal(game: Game, preset: str, players: int) -> Callable[[random.Random], int]:
    rules = game.preset(preset)

    def play(rng: random.Random) -> int:
        match = game.new_match(rules, players, rng.getrandbits(63), [DealSpec(rng.getrandbits(63))])
        decisions = 0
        while not match.is_over():
            legal = match.legal_actions()
            match.apply(legal[rng.randrange(len(legal))])
            decisions += 1
        return decisions

    return play


def mid_deal_position(game: Game, preset: str, players: int, seed: int) -> Position:
    """The position of the seat to act after 12 random decisions of a deal."""
    rng = random.Random(seed)
    match = game.new_match(game.preset(preset), players, seed, [DealSpec(seed)])
    for _ in range(12):
        legal = match.legal_actions()
        match.apply(legal[rng.randrange(len(legal))])
    return position(match.observation(match.to_act()))


def playouts(pos: Position, heuristic: bool) -> Callable[[random.Random], int]:
    """Determinize ``pos`` and play to the end of the deal (heuristic or random play)."""

    def play(rng: random.Random) -> int:
        state = pos.determinize(rng)
        decisions = 0
        while not state.is_terminal():
            if heuristic:
                state.apply(state.rollout_action(rng))
            else:
                legal = state.legal_actions()
                state.apply(legal[rng.randrange(len(legal))])
            decisions += 1
        return decisions

    return play


def fast_playouts(pos: Position) -> Callable[[random.Random], int]:
    """Sample a world of ``pos`` from the belief and play it to the end of the deal with
    the heuristic on the fast engine (Sevens family)."""
    assert isinstance(pos, SevensPosition)
    belief = SevensBelief(pos._obs, pos)

    def play(rng: random.Random) -> int:
        deal = belief.deal(belief.sample(rng))
        decisions = 0
        while deal.winner < 0:
            deal.play(heuristic_move(deal, rng))
            decisions += 1
        return decisions

    return play


def rates_in_slice(
    play: Callable[[random.Random], int], rng: random.Random, seconds: float
) -> tuple[float, float]:
    """Play for about ``seconds``; deals per second and decisions per second."""
    deals = decisions = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(5):
            decisions += play(rng)
        deals += 5
        now = time.perf_counter()
        if now >= deadline:
            break
    return deals / (now - start), decisions / (now - start)


def measure_beside(
    play: Callable[[random.Random], int],
    baseline: Callable[[random.Random], int],
    seconds: float,
    seed: int,
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Best-of-slices rates of ``play`` and of ``baseline``, measured in alternating
    0.1 s slices so that load from other processes hits both alike."""
    rng_a, rng_b = random.Random(seed), random.Random(seed)
    for _ in range(20):  # warm the caches
        play(rng_a)
        baseline(rng_b)
    best_a = best_b = (0.0, 0.0)
    for _ in range(max(1, round(seconds / 0.2))):
        best_a = max(best_a, rates_in_slice(play, rng_a, 0.1))
        best_b = max(best_b, rates_in_slice(baseline, rng_b, 0.1))
    return best_a, best_b


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per row (default 1)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)

    rows: list[dict[str, object]] = []
    base_rates: list[tuple[float, float]] = []
    for name in sorted(GAMES):
        game = GAMES[name]
        for preset, rules in game.presets().items():
            counts = list(game.player_counts(rules))
            players = 4 if 4 in counts else counts[0]
            (deals, decisions), base = measure_beside(
                api_deal(game, preset, players), minimal_sevens_deal, args.seconds, args.seed
            )
            base_rates.append(base)
            rows.append(
                {
                    "game": name,
                    "preset": preset,
                    "players": players,
                    "deals_per_s": deals,
                    "decisions_per_s": decisions,
                    "ratio": deals / base[0],
                }
            )
    best_base = max(base_rates)
    rows.insert(
        0,
        {
            "game": "baseline",
            "preset": "minimal loop",
            "players": 4,
            "deals_per_s": best_base[0],
            "decisions_per_s": best_base[1],
            "ratio": 1.0,
        },
    )
    search_rows: list[dict[str, object]] = []
    for name, preset in (("sevens", "sevens"), ("sevens", "fan-tan"), ("sedma", "sedma")):
        pos = mid_deal_position(GAMES[name], preset, 4, args.seed)
        (heur, heur_dec), (rand, rand_dec) = measure_beside(
            playouts(pos, heuristic=True), playouts(pos, heuristic=False), args.seconds, args.seed
        )
        row: dict[str, object] = {
            "game": name,
            "preset": preset,
            "players": 4,
            "heuristic_playouts_per_s": heur,
            "random_playouts_per_s": rand,
            "heuristic_decisions_per_s": heur_dec,
            "random_decisions_per_s": rand_dec,
        }
        if name == "sevens":
            (fast, _), (beside, _) = measure_beside(
                fast_playouts(pos), playouts(pos, heuristic=True), args.seconds, args.seed
            )
            row["fast_playouts_per_s"] = fast
            row["fast_ratio"] = fast / beside
        search_rows.append(row)
    if args.json:
        print(json.dumps({"engine": rows, "search": search_rows}, indent=2))
        return 0
    print(f"engine benchmark: random legal play, one core, {args.seconds:g} s per row")
    print(f"{'game':<9} {'preset':<15} {'players':>7} {'deals/s':>9} {'decisions/s':>12} ratio")
    for row in rows:
        print(
            f"{row['game']:<9} {row['preset']:<15} {row['players']:>7} "
            f"{row['deals_per_s']:>9,.0f} {row['decisions_per_s']:>12,.0f} "
            f"{row['ratio']:.2f}"
        )
    print(
        "ratio = deals/s of the row / deals/s of the minimal 4-player Sevens loop, "
        "measured in alternating slices beside it (best slice of each)"
    )
    print()
    print("search API: determinize a mid-deal position, then play to the end of the deal")
    print(
        f"{'game':<9} {'preset':<15} {'heuristic playouts/s':>21} {'random playouts/s':>18} "
        f"{'fast engine playouts/s':>23} {'ratio':>6}"
    )
    for row in search_rows:
        fast_rate = row.get("fast_playouts_per_s")
        fast_text = "-" if fast_rate is None else f"{fast_rate:,.0f}"
        ratio = row.get("fast_ratio")
        ratio_text = "-" if ratio is None else f"{ratio:.1f}"
        print(
            f"{row['game']:<9} {row['preset']:<15} {row['heuristic_playouts_per_s']:>21,.0f} "
            f"{row['random_playouts_per_s']:>18,.0f} {fast_text:>23} {ratio_text:>6}"
        )
    print(
        "fast engine: a world from the belief, heuristic play on masks (what mc and ismcts "
        "run in the Sevens family); ratio = its rate / the heuristic playouts' rate, "
        "measured beside it"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
