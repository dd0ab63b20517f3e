"""``arena ladder serve`` and ``arena ladder gauntlet``: a new bot against the reference
bots of the strength ladder (docs/ladder.md).

* ``arena ladder serve --server HOST:PORT`` registers the reference bots
  (``ladder-random`` … ``ladder-solver``; an existing one gets a new token) and plays them
  over gRPC in this process until interrupted.
* ``arena ladder gauntlet mybot --game sevens`` creates a season of ``mybot`` against the
  reference bots, with duplicate deals, so that ``arena standings SEASON`` shows where it
  lands among rungs of known strength (the ladder's own table: README, "Strength ladder").
"""

from __future__ import annotations

import argparse
import threading
import time

from referee import bots
from referee.cli.common import Commands, add_redis_options, connect, fail
from referee.cli.policy_bot import PolicyBot
from referee.errors import ArenaError, ConfigError
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec

RUNGS = ("random", "first-legal", "heuristic", "mc", "ismcts", "solver", "priced-pass")
PREFIX = "ladder-"
GAUNTLET_PRESETS = {"sevens": "fan-tan", "sedma": "sedma"}


def ladder_bot_names(rungs: tuple[str, ...] = RUNGS) -> list[str]:
    return [PREFIX + r for r in rungs]


def register(commands: Commands) -> None:
    p = commands.add(
        "serve",
        _serve,
        group="ladder",
        help="register the ladder's reference bots and play them over gRPC until stopped",
    )
    p.add_argument("--server", required=True, help="the referee's gRPC address HOST:PORT")
    p.add_argument("--tls-ca", help="CA certificate (PEM) when the referee uses TLS")
    p.add_argument("--rungs", default=",".join(RUNGS), help="which rungs (all seven)")
    p.add_argument("--budget-ms", type=int, default=None, help="search bots' think time cap")
    add_redis_options(p)
    p = commands.add(
        "gauntlet",
        _gauntlet,
        group="ladder",
        help="create a season of one bot against the ladder's reference bots",
    )
    p.add_argument("bot", help="the registered bot to measure")
    p.add_argument("--game", choices=sorted(GAUNTLET_PRESETS), default="sevens")
    p.add_argument("--preset", help="rules preset (fan-tan for sevens, sedma for sedma)")
    p.add_argument("--rungs", default=",".join(RUNGS), help="which rungs (all seven)")
    p.add_argument("--rounds", type=int, default=4, help="times the schedule is played (4)")
    p.add_argument("--deals", type=int, default=4, help="deals per match (4)")
    p.add_argument("--name", help="season id (default: gauntlet-BOT-GAME-time)")
    p.add_argument("--seed", type=int)
    p.add_argument("--start", action="store_true", help="start it right away")
    add_redis_options(p)


def _rungs(text: str) -> tuple[str, ...]:
    rungs = tuple(r.strip() for r in text.split(",") if r.strip())
    unknown = [r for r in rungs if r not in RUNGS]
    if unknown or not rungs:
        raise ConfigError(f"--rungs {text!r}: use some of {', '.join(RUNGS)}")
    return rungs


def gauntlet_spec(
    bot: str,
    game: str,
    *,
    preset: str | None = None,
    rungs: tuple[str, ...] = RUNGS,
    rounds: int = 4,
    deals: int = 4,
    name: str | None = None,
    seed: int | None = None,
) -> SeasonSpec:
    """The season of ``bot`` against the reference bots: Sevens at tables of 4 (every 4 of
    the bots), Sedma head-to-head for four (every pair); duplicate deals."""
    if game not in GAUNTLET_PRESETS:
        raise ConfigError(f"--game {game!r}: use sevens or sedma")
    field = [bot, *ladder_bot_names(rungs)]
    if bot in field[1:]:
        raise ConfigError(f"{bot} is a reference bot: name the bot you want to measure")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return SeasonSpec(
        name=name or f"gauntlet-{bot}-{game}-{stamp}"[:64],
        game=game,
        preset=preset or GAUNTLET_PRESETS[game],
        bots=tuple(field),
        table_size=4,
        deals_per_match=deals,
        seed=seed,
        # the reference bots share one owner (the platform) and pool nothing: owners
        # apart would leave no table of four
        options=SeasonOptions(duplicate=True, rounds=rounds, separate_owners=False),
    )


def _gauntlet(args: argparse.Namespace) -> int:
    try:
        spec = gauntlet_spec(
            args.bot,
            args.game,
            preset=args.preset,
            rungs=_rungs(args.rungs),
            rounds=args.rounds,
            deals=args.deals,
            name=args.name,
            seed=args.seed,
        )
        with connect(args, socket_timeout=30) as conn:
            info = store.create_season(conn, spec)
            if args.start:
                info = store.start_season(conn, info.season)
    except ArenaError as exc:
        if "unknown bot" in str(exc) and PREFIX in str(exc):
            return fail(f"{exc}. The reference bots register with `arena ladder serve`")
        return fail(str(exc))
    print(f"gauntlet season {info.season}: {info.state}, {info.matches_total} matches")
    print(f"{args.bot} against {', '.join(spec.bots[1:])} ({spec.game}, {spec.preset})")
    print("the reference bots must be connected: arena ladder serve --server HOST:PORT")
    if not args.start:
        print(f"start it with: arena season start {info.season}")
    print(f"where it lands: arena standings {info.season}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    rungs = _rungs(args.rungs)
    with connect(args, socket_timeout=30) as conn:
        tokens = {}
        for rung in rungs:
            name = PREFIX + rung
            try:
                tokens[name] = bots.register(conn, name, owner="ladder")
            except ArenaError:
                tokens[name] = bots.rotate_token(conn, name)
    stop = threading.Event()
    threads = []
    for rung in rungs:
        name = PREFIX + rung
        bot = PolicyBot(rung, per_turn_seed=True, budget_ms=args.budget_ms)
        bot.name = name
        thread = threading.Thread(
            target=bot.run,
            args=(args.server, tokens[name]),
            kwargs={"stop": stop, "tls_ca": args.tls_ca},
            daemon=True,
        )
        thread.start()
        threads.append(thread)
    print(f"serving {', '.join(tokens)} on {args.server} (Ctrl-C stops)", flush=True)
    try:
        while any(t.is_alive() for t in threads):
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        for thread in threads:
            thread.join(10)
    return 0
