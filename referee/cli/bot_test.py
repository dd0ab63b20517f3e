"""``arena bot test NEW --against OLD``: is NEW better than OLD? (docs/VERSIONTEST.md)

Both play the same duplicate deals in the same seats against the same field (the reference
bots of ``arena ladder serve`` by default), as a season on the platform; the command
follows it and prints the mean score difference per duplicate set with its 95% interval,
and with ``--sprt ELO0 ELO1`` stops at the first crossing of the SPRT's bounds.
"""

from __future__ import annotations

import argparse
import sys
import time

from referee.cli.common import Commands, add_redis_options, connect, data_dir_of, fail
from referee.cli.ladder_cmd import PREFIX
from referee.errors import ArenaError
from referee.hosting.versions import VersionStore
from referee.seasons.paired import H0, H1, Sprt
from referee.seasons.versusrun import VersusOutcome, describe, run_versus, start_versus

DEFAULT_FIELD = {
    "sevens": (PREFIX + "heuristic", PREFIX + "first-legal", PREFIX + "random"),
    "sedma": (PREFIX + "heuristic",),
}
PRESETS = {"sevens": "fan-tan", "sedma": "sedma"}
FEW_SETS = 30
PROGRESS_S = 15.0


def register(commands: Commands) -> None:
    p = commands.add(
        "test",
        _test,
        group="bot",
        help="is NEW better than OLD? both play the same duplicate deals against one field",
    )
    p.add_argument(
        "new", metavar="NEW", help="the bot under test, or version N of a hosted bot: NAME@vN"
    )
    p.add_argument("--against", required=True, metavar="OLD", help="the bot to beat (or NAME@vN)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--games", type=int, help="play this many duplicate sets (deals) (200)")
    how.add_argument(
        "--sprt",
        nargs=2,
        type=float,
        metavar=("ELO0", "ELO1"),
        help="sequential test of nElo <= ELO0 against nElo >= ELO1 (alpha = beta = 0.05)",
    )
    p.add_argument("--max-games", type=int, default=4000, help="cap of an SPRT, in sets (4000)")
    p.add_argument("--game", choices=sorted(PRESETS), default="sevens")
    p.add_argument("--preset", help="rules preset (fan-tan for sevens, sedma for sedma)")
    p.add_argument("--field", help="field bots, comma-separated (the ladder's reference bots)")
    p.add_argument("--deals", type=int, default=4, help="deals per match (4)")
    p.add_argument("--name", help="season id (default: generated)")
    p.add_argument("--seed", type=int)
    p.add_argument("--detach", action="store_true", help="start it and return")
    add_redis_options(p)


def _test(args: argparse.Namespace) -> int:
    if args.games is not None and args.games < 2:
        return fail(f"--games {args.games}: use 2 or more duplicate sets")
    field = (
        tuple(f.strip() for f in args.field.split(",") if f.strip())
        if args.field
        else DEFAULT_FIELD[args.game]
    )
    sets = args.games or (args.max_games if args.sprt else 200)
    try:
        sprt = Sprt(args.sprt[0], args.sprt[1]) if args.sprt else None
    except ValueError as exc:
        return fail(str(exc))
    with connect(args, socket_timeout=30) as conn:
        try:
            info = start_versus(
                conn,
                args.new,
                args.against,
                field,
                args.game,
                sets=sets,
                preset=args.preset or PRESETS[args.game],
                deals=args.deals,
                name=args.name
                or f"test-{args.new}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"[:64],
                seed=args.seed,
                versions=VersionStore(conn, data_dir_of(args)).version_entry,
            )
        except ArenaError as exc:
            text = str(exc)
            if PREFIX in text and not args.field:
                text += ". The default field registers and plays with `arena ladder serve`"
            return fail(text)
        season = info.season
        print(
            f"version test {season}: {args.new} against {args.against}, {args.game}/"
            f"{args.preset or PRESETS[args.game]}, field {', '.join(field)}, up to {sets} sets",
            flush=True,
        )
        if args.detach:
            print(f"follow it: arena season watch {season}; result: arena standings {season}")
            return 0
        last = [time.monotonic()]

        def progress(out: VersusOutcome) -> None:  # a line every PROGRESS_S
            if time.monotonic() - last[0] >= PROGRESS_S and len(out.sets) >= 2:
                last[0] = time.monotonic()
                print("  " + describe(out, args.game), flush=True)

        out = run_versus(conn, season, sprt=sprt, progress=progress)
    print(describe(out, args.game))
    if sprt is not None:
        print(f"result: {out.verdict}")
        return 0 if out.decision in (H0, H1) else 3
    summary = out.summary
    if summary is None:
        print("result: too few sets to compare", file=sys.stderr)
        return 3
    if summary.sets < FEW_SETS:
        print(
            f"note: {summary.sets} sets are few: the 95% interval covers less than 95% of the "
            f"time below about {FEW_SETS} sets (docs/VERSIONTEST.md)"
        )
    if summary.excludes_zero:
        better = "NEW is better" if summary.mean > 0 else "NEW is worse"
        print(f"result: {better} (the 95% interval excludes 0)")
    else:
        print("result: no difference shown (the 95% interval holds 0)")
    return 0
