"""``arena presets`` and ``arena selfplay``: the engines without any servers.

Both are generic over ``referee.games.registry``: every game there (Sevens, Sedma, …)
is listed and can be self-played by the sample policies in ``referee.games.policies``.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from referee.cli.common import Commands, fail
from referee.games.base import DealResult, DealSpec, Game, Match, derive_seed
from referee.games.errors import RulesError
from referee.games.loop import play_out, policies_chooser, seat_rng
from referee.games.policies import POLICIES, get_policy
from referee.games.registry import GAMES, get_game


def register(commands: Commands) -> None:
    """Add ``presets`` and ``selfplay``."""
    presets = commands.add("presets", presets_command, help="list the rules presets of every game")
    presets.add_argument("--game", choices=sorted(GAMES), help="only this game")
    presets.add_argument("--json", action="store_true", help="print every option as JSON")

    selfplay = commands.add(
        "selfplay",
        selfplay_command,
        help="play an in-process match with the sample policies and print it",
    )
    selfplay.add_argument("--game", default="sevens", help="game (default: sevens)")
    selfplay.add_argument("--preset", help="rules preset (default: the game's first)")
    selfplay.add_argument("--players", type=int, help="table size (default: the smallest)")
    selfplay.add_argument(
        "--deals", type=int, help="number of deals (default: the rules' match length)"
    )
    selfplay.add_argument("--seed", type=int, default=0, help="match seed (default: 0)")
    selfplay.add_argument(
        "--bots",
        default="random",
        help=f"comma-separated policies, cycled over the seats ({', '.join(POLICIES)})",
    )
    selfplay.add_argument("--json", action="store_true", help="print the serialized match")


def _defaults(game: Game) -> dict[str, Any] | None:
    try:
        return dict(game.rules_from_dict({}).to_dict())
    except RulesError:
        return None


def presets_command(args: argparse.Namespace) -> int:
    names = [args.game] if args.game else sorted(GAMES)
    data = {
        name: {key: dict(rules.to_dict()) for key, rules in GAMES[name].presets().items()}
        for name in names
    }
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    for name in names:
        game = GAMES[name]
        defaults = _defaults(game)
        print(f"{name}:")
        for key, options in data[name].items():
            counts = game.player_counts(game.preset(key))
            shown = {
                k: v
                for k, v in options.items()
                if k != "name" and (defaults is None or defaults.get(k) != v)
            }
            text = " ".join(f"{k}={_fmt(v)}" for k, v in shown.items()) or "(the defaults)"
            print(f"  {key:<16} players {min(counts)}-{max(counts)}  {text}")
    return 0


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def deal_seed(seed: int, deal: int) -> int:
    """The seed of deal ``deal`` of a self-play match with ``--deals`` (the low 63 bits,
    as a Sevens match's own deals, D-11)."""
    return derive_seed("selfplay", seed, deal, keep="low")


def play_match(
    game: Game,
    preset: str | None,
    players: int | None,
    deals: int | None,
    seed: int,
    bots: list[str],
) -> Match:
    """Play one whole match in-process with the named policies; deterministic in ``seed``."""
    rules = game.preset(preset) if preset else next(iter(game.presets().values()))
    counts = list(game.player_counts(rules))
    n = players if players is not None else min(counts)
    if n not in counts:
        raise RulesError(
            f"{game.name} preset {rules.name} plays with {', '.join(map(str, counts))} "
            f"players, not {n}"
        )
    if deals is not None and deals < 1:
        raise RulesError(f"--deals must be 1 or more, not {deals}")
    specs = None if deals is None else [DealSpec(deal_seed(seed, d)) for d in range(deals)]
    policies = [get_policy(bots[i % len(bots)]) for i in range(n)]
    rngs = [seat_rng(seed, "selfplay", seat) for seat in range(n)]
    match = game.new_match(rules, n, seed, specs)
    play_out(match, policies_chooser(policies, rngs))
    return match


def selfplay_command(args: argparse.Namespace) -> int:
    game = get_game(args.game)
    bots = [b.strip() for b in args.bots.split(",") if b.strip()]
    if not bots:
        return fail("--bots needs at least one policy name")
    match = play_match(game, args.preset, args.players, args.deals, args.seed, bots)
    if args.json:
        print(match.to_json())
        return 0
    result = match.result()
    n = match.num_players
    seats = ", ".join(f"{s}={bots[s % len(bots)]}" for s in range(n))
    print(f"{game.name} {match.rules.name}: {n} players, seed {args.seed}; seats {seats}")
    names = [f"seat {s} ({bots[s % len(bots)]})" for s in range(n)]
    for deal in result.deals:
        print(_deal_line(deal, result.unit, names))
    unit = result.unit.replace("_", " ")
    print(f"final ({unit}, {'higher' if result.higher_is_better else 'lower'} is better):")
    place = 1
    for group in result.order:
        for seat in group:
            print(f"  {place}. seat {seat} ({bots[seat % len(bots)]}): {result.totals[seat]}")
        place += len(group)
    print(
        f"winner{'s' if len(result.winners) > 1 else ''}: "
        + ", ".join(names[w] for w in result.winners)
    )
    return 0


def _deal_line(deal: DealResult, unit: str, names: list[str]) -> str:
    """One deal in words: who won, the cards left and the score change of each seat."""
    parts = [f"deal {deal.deal + 1}:"]
    winner = "" if deal.winner is None else f"won by {names[deal.winner]}"
    parts.append("void" if deal.void else winner or "no winner")
    left = deal.detail.get("cards_left")
    if left is not None:
        parts.append(f"cards left {', '.join(map(str, left))}")
    parts.append(f"{unit.replace('_', ' ')} " + ", ".join(f"{d:+d}" for d in deal.deltas))
    if deal.penalties:
        reasons = sorted({p.reason.replace("_", " ") for p in deal.penalties})
        parts.append(f"penalties: {', '.join(reasons)}")
    tiebreak = deal.detail.get("tiebreak")
    if tiebreak:
        parts.append(f"({tiebreak})")
    return parts[0] + " " + "; ".join(parts[1:])
