"""The continuous ladder's commands (docs/ladder.md, "The continuous ladder"):
``arena ladder start|join|leave|pause|resume|status|standings|replay|list``.

(``arena ladder serve`` and ``arena ladder gauntlet``, the reference bots, are in
:mod:`referee.cli.ladder_cmd`.)
"""

from __future__ import annotations

import argparse
import json

from referee import keys
from referee.cli.common import Commands, add_redis_options, connect, fail
from referee.errors import ArenaError, ConfigError
from referee.ladder import store as ladders

PRESETS = {"sevens": "fan-tan", "sedma": "sedma"}


def register(commands: Commands) -> None:
    p = commands.add(
        "start", _start, group="ladder", help="start a continuous ladder (bots join it)"
    )
    p.add_argument("--game", choices=sorted(PRESETS), default="sevens")
    p.add_argument("--preset", help="rules preset (fan-tan for sevens, sedma for sedma)")
    p.add_argument("--name", default="", help="ladder id (default: generated)")
    p.add_argument("--bots", default="", help="registered bots that join at once (a,b,c)")
    p.add_argument("--sizes", default="4", help="table sizes, balanced over time (4)")
    p.add_argument("--tables", type=int, default=2, help="tables per batch (2)")
    p.add_argument("--deals", type=int, default=2, help="deals per match (2)")
    p.add_argument("--provisional", type=int, default=10, help="matches before a rating counts")
    p.add_argument("--seed", type=int)
    add_redis_options(p)
    for name, handler, text in (
        ("pause", _pause, "pause a ladder (the batch in flight pauses too)"),
        ("resume", _resume, "resume a paused ladder"),
        ("status", _status, "a ladder's state and current batch"),
        ("replay", _replay, "re-decide every batch from the seed and the log"),
    ):
        p = commands.add(name, handler, group="ladder", help=text)
        p.add_argument("ladder")
        add_redis_options(p)
    p = commands.add("standings", _standings, group="ladder", help="a ladder's ratings")
    p.add_argument("ladder")
    p.add_argument("--json", action="store_true")
    add_redis_options(p)
    p = commands.add("join", _join, group="ladder", help="a bot (or new version) joins a ladder")
    p.add_argument("ladder")
    p.add_argument("bot")
    p.add_argument("--replaces", default="", help="the entry this bot is a new version of")
    add_redis_options(p)
    p = commands.add("leave", _leave, group="ladder", help="a bot leaves a ladder")
    p.add_argument("ladder")
    p.add_argument("bot")
    add_redis_options(p)
    p = commands.add("list", _list, group="ladder", help="every continuous ladder")
    add_redis_options(p)


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        sizes = []
    if not sizes:
        raise ConfigError(f"--sizes {text!r}: use table sizes such as 4 or 3,4,5")
    return sizes


def _start(args: argparse.Namespace) -> int:
    try:
        with connect(args, socket_timeout=30) as conn:
            names = [b.strip() for b in args.bots.split(",") if b.strip()]
            unknown = [b for b in names if not conn.sismember(keys.BOTS, b)]
            if unknown:
                raise ConfigError(
                    f"--bots: {', '.join(unknown)} not registered: `arena bot register NAME` "
                    "first (`arena bot list` shows the registered bots)"
                )
            info = ladders.create_ladder(
                conn,
                args.name,
                args.game,
                args.preset or PRESETS[args.game],
                sizes=_sizes(args.sizes),
                tables=args.tables,
                deals=args.deals,
                seed=args.seed,
                provisional=args.provisional,
            )
            for bot in names:
                ladders.join(conn, info["ladder"], bot)
    except ArenaError as exc:
        return fail(str(exc))
    ladder = info["ladder"]
    print(f"ladder {ladder}: {info['game']}/{info['preset']}, tables of {info['sizes']}, running")
    print(
        f"bots join with: arena ladder join {ladder} BOT; "
        f"standings: arena ladder standings {ladder}"
    )
    return 0


def _simple(args: argparse.Namespace, action: str) -> int:
    try:
        with connect(args, socket_timeout=30) as conn:
            if action == "pause":
                info = ladders.set_state(conn, args.ladder, ladders.PAUSED)
            elif action == "resume":
                info = ladders.set_state(conn, args.ladder, ladders.RUNNING)
            else:
                info = ladders.get_ladder(conn, args.ladder)
            entries = ladders.ladder_entries(conn, args.ladder)
            batches = ladders.load_state(conn, args.ladder).batches
    except ArenaError as exc:
        return fail(str(exc))
    active = sum(1 for e in entries.values() if not e["retired"])
    print(
        f"ladder {args.ladder}: {info['state']}, {info['game']}/{info['preset']}, "
        f"{active} entries, {batches} batches rated, current batch {info.get('current') or '-'}"
    )
    return 0


def _pause(args: argparse.Namespace) -> int:
    return _simple(args, "pause")


def _resume(args: argparse.Namespace) -> int:
    return _simple(args, "resume")


def _status(args: argparse.Namespace) -> int:
    return _simple(args, "status")


def _join(args: argparse.Namespace) -> int:
    try:
        with connect(args, socket_timeout=30) as conn:
            ladders.join(conn, args.ladder, args.bot, replaces=args.replaces)
    except ArenaError as exc:
        return fail(str(exc))
    link = f" (a new version of {args.replaces})" if args.replaces else ""
    print(f"{args.bot} joins ladder {args.ladder}{link} from its next batch")
    return 0


def _leave(args: argparse.Namespace) -> int:
    try:
        with connect(args, socket_timeout=30) as conn:
            ladders.leave(conn, args.ladder, args.bot)
    except ArenaError as exc:
        return fail(str(exc))
    print(f"{args.bot} leaves ladder {args.ladder} after the batch in flight")
    return 0


def _list(args: argparse.Namespace) -> int:
    with connect(args, socket_timeout=30) as conn:
        for ladder in ladders.list_ladders(conn):
            info = ladders.get_ladder(conn, ladder)
            print(f"{ladder}  {info['state']}  {info['game']}/{info['preset']}")
    return 0


def _standings(args: argparse.Namespace) -> int:
    try:
        with connect(args, socket_timeout=30) as conn:
            table = ladders.standings(conn, args.ladder)
    except ArenaError as exc:
        return fail(str(exc))
    if args.json:
        print(json.dumps(table, indent=1))
        return 0
    print(
        f"ladder {table['ladder']} ({table['game']}/{table['preset']}, {table['state']}): "
        f"{table['batches']} batches; rank by mu - 3 sigma; ? = provisional"
    )
    print(f"{'#':>3} {'bot':<24} {'mu':>7} {'sigma':>6} {'ordinal':>8} {'M':>5} {'deals':>6}")
    for row in table["rows"]:
        mark = "?" if row["provisional"] else " "
        name = row["bot"] + (f" (v. of {row['prev']})" if row["prev"] else "")
        name += " [retired]" if row["retired"] else ""
        print(
            f"{row['rank']:>3} {name:<24} {row['mu']:>7.2f} {row['sigma']:>6.2f} "
            f"{row['ordinal']:>7.2f}{mark} {row['matches']:>5} {row['deals']:>6}"
        )
    return 0


def _replay(args: argparse.Namespace) -> int:
    try:
        with connect(args, socket_timeout=30) as conn:
            batches, problems = ladders.replay_ladder(conn, args.ladder)
    except ArenaError as exc:
        return fail(str(exc))
    if problems:
        for problem in problems:
            print(problem)
        return 1
    print(
        f"ladder {args.ladder}: {batches} batches re-decided from the seed and the log: "
        "every table and rating matches"
    )
    return 0
