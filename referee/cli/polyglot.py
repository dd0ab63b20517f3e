"""``arena bridge``: any program as a bot, over stdio (docs/STDIO.md, docs/bots.md).

``arena bot check`` lives with the other bot commands in :mod:`referee.cli.bots`.
"""

from __future__ import annotations

import argparse
import os

from referee.cli.common import (
    BOT_TOKEN_ENV,
    Commands,
    comma_list,
    program_of,
    warn_token_flag,
)
from referee.errors import ConfigError

DEFAULT_MARGIN_MS = 50  # arena_sdk.bridge.DEFAULT_MARGIN_MS


def bridge(args: argparse.Namespace) -> int:
    from arena_sdk.bridge import BridgeOptions, run_bridge

    if args.token:
        warn_token_flag()
    command = program_of(args)
    if not command:
        raise ConfigError("no program to run: arena bridge --server HOST:PORT -- ./mybot")
    token = args.token or os.environ.get(BOT_TOKEN_ENV)
    if not token:
        raise ConfigError(
            f"no token: set ${BOT_TOKEN_ENV} to the token `arena bot register NAME` printed"
        )
    options = BridgeOptions(
        margin_ms=args.margin_ms,
        use_bank=args.use_bank,
        report_file=args.report_file,
        games=comma_list(args.games),
        notify=args.notify,
        exit_after_season=args.exit_after_season,
    )
    return run_bridge(args.server, token, command, options)


def register(commands: Commands) -> None:
    """Add ``arena bridge``."""
    parser = commands.add(
        "bridge",
        bridge,
        help="run any program as a bot: JSON lines on its stdin/stdout (docs/STDIO.md)",
        usage=f"{BOT_TOKEN_ENV}=TOKEN arena bridge --server HOST:PORT [options] -- COMMAND [ARGS]",
    )
    parser.add_argument("--server", required=True, help="referee address HOST:PORT")
    parser.add_argument(
        "--token",
        help=f"the bot's token; better ${BOT_TOKEN_ENV}, since a flag shows in `ps` (warned)",
    )
    parser.add_argument(
        "--margin-ms",
        type=int,
        default=DEFAULT_MARGIN_MS,
        help=f"time kept back from the program's budget (default {DEFAULT_MARGIN_MS})",
    )
    parser.add_argument(
        "--use-bank",
        action="store_true",
        help="let the program spend the match's bank too (default: move_ms only)",
    )
    parser.add_argument(
        "--games", default="", help="games to declare, comma separated (default: every game)"
    )
    parser.add_argument(
        "--notify",
        action="store_true",
        help="also send the program result, match_start, deal_end, match_end and notice lines "
        "(they want no answer)",
    )
    parser.add_argument(
        "--exit-after-season",
        metavar="SEASON",
        help="stop the bridge (exit 0) when this season ends ('*': any season the bot is in)",
    )
    parser.add_argument("--report-file", help="append one JSON line per incident to this file")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the program and its args")
