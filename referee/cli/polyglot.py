"""``arena bridge`` (any program as a bot, over stdio) and ``arena bot check`` (conformance).

See docs/STDIO.md for the bridge's line protocol and docs/bots.md for both commands.
"""

from __future__ import annotations

import argparse
import sys
import time

import redis

from referee import keys
from referee.botcheck.probe import Probe, declared_games
from referee.botcheck.report import CheckResult, Report
from referee.botcheck.scenarios import CheckContext, run_all
from referee.botcheck.states import available_games
from referee.cli.common import Commands, add_redis_options, fail, resolve_redis_url
from referee.errors import ConfigError

CONNECT_TIMEOUT_S = 30.0
DEFAULT_MARGIN_MS = 50  # sample_bots.bridge.DEFAULT_MARGIN_MS


def _command(args: argparse.Namespace) -> list[str]:
    command = list(args.command or [])
    if command and command[0] == "--":
        command = command[1:]
    return command


def _games(args: argparse.Namespace) -> list[str]:
    return [g for g in (args.games or "").split(",") if g]


def _only(args: argparse.Namespace) -> list[str]:
    return [word.strip() for word in (args.only or "").split(",") if word.strip()]


def bridge(args: argparse.Namespace) -> int:
    from sample_bots.bridge import BridgeOptions, run_bridge

    command = _command(args)
    if not command:
        return fail("no program to run: arena bridge --server HOST:PORT --token T -- ./mybot")
    options = BridgeOptions(
        margin_ms=args.margin_ms,
        use_bank=args.use_bank,
        report_file=args.report_file,
        games=_games(args),
        notify=args.notify,
        exit_after_season=args.exit_after_season,
    )
    return run_bridge(args.server, args.token, command, options)


def _check_games(args: argparse.Namespace) -> list[str]:
    games = _games(args) or available_games()
    unknown = [g for g in games if g not in available_games()]
    if unknown:
        raise ConfigError(f"unknown game {', '.join(unknown)}: use {', '.join(available_games())}")
    return games


def _games_to_check(
    args: argparse.Namespace, games: list[str], client: redis.Redis, bot: str
) -> tuple[list[str], str]:
    """``--games`` when given, else the games the bot declared in Hello; and a note."""
    if _games(args):
        return games, f"checking {', '.join(games)}"
    declared = declared_games(client, bot)
    if declared is None:
        return games, "declared every game"
    known = [g for g in declared if g in games]
    note = f"declared {', '.join(declared)}"
    if not known:
        return games, note + " (none known here: checking every game)"
    return known, note


def check(args: argparse.Namespace) -> int:
    command = _command(args)
    try:
        games = _check_games(args)
    except ConfigError as exc:
        return fail(str(exc))
    if command:
        return _check_command(args, command, games)
    if not args.server or not args.token:
        return fail(
            "say which bot to check: `arena bot check -- ./mybot` (the checker runs it), or "
            "`arena bot check --server HOST:PORT --token T` for a bot already connected"
        )
    return _check_connected(args, games)


def _check_connected(args: argparse.Namespace, games: list[str]) -> int:
    from referee import bots

    try:
        url = resolve_redis_url(args)
    except ConfigError as exc:
        return fail(str(exc))
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        try:
            name = bots.authenticate(client, args.token)
        except Exception as exc:
            return fail(f"{exc} (looked up in the Redis at {url})")
        report = Report(name)
        if not _wait_streams(client, name, args.connect_timeout):
            report.add(
                CheckResult.fail(
                    "connected",
                    f"bot {name!r} holds no stream on a referee sharing {url}: start it "
                    f"with --server {args.server} --token ... and run the check again",
                )
            )
        else:
            games, note = _games_to_check(args, games, client, name)
            report.add(CheckResult.ok("connected", f"via the referee at {args.server}; {note}"))
            ctx = CheckContext(
                probe=Probe(client, name),
                games=games,
                skip_reconnect_reason=(
                    "the checker does not control this referee; `arena bot check -- COMMAND` "
                    "restarts its own"
                ),
                only=_only(args),
            )
            run_all(ctx, report)
        report.print(sys.stdout)
        return report.exit_code()
    finally:
        client.close()


def _wait_streams(client: redis.Redis, name: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.hlen(keys.bot_streams(name)) > 0:
            return True
        time.sleep(0.1)
    return False


def _check_command(args: argparse.Namespace, command: list[str], games: list[str]) -> int:
    from referee.botcheck.harness import BOT_NAME, HarnessError, ScratchPlatform

    def log(text: str) -> None:
        if args.verbose:
            print(text, file=sys.stderr, flush=True)

    label = " ".join(command)
    try:
        platform = ScratchPlatform(command, grpc=args.grpc, games=_games(args), log=log)
        with platform:
            report = Report(label)
            if not platform.wait_connected(args.connect_timeout):
                tail = platform.bot_output()[-8:]
                report.add(
                    CheckResult.fail(
                        "connected",
                        f"the bot did not connect within {args.connect_timeout:.0f} s",
                        tuple(tail),
                    )
                )
            else:
                assert platform.client is not None
                games, note = _games_to_check(args, games, platform.client, BOT_NAME)
                report.add(
                    CheckResult.ok("connected", f"scratch referee {platform.server}; {note}")
                )
                ctx = CheckContext(
                    probe=Probe(platform.client, BOT_NAME),
                    games=games,
                    incidents=platform.incidents,
                    restart_referee=platform.restart_referee,
                    reconnect_timeout_s=args.reconnect_timeout,
                    only=_only(args),
                )
                run_all(ctx, report)
    except HarnessError as exc:
        return fail(str(exc))
    report.print(sys.stdout)
    return report.exit_code()


def register(commands: Commands) -> None:
    """Add ``arena bridge`` and ``arena bot check``."""
    parser = commands.add(
        "bridge",
        bridge,
        help="run any program as a bot: JSON lines on its stdin/stdout (docs/STDIO.md)",
        usage="arena bridge --server HOST:PORT --token TOKEN [options] -- COMMAND [ARGS]",
    )
    parser.add_argument("--server", required=True, help="referee address HOST:PORT")
    parser.add_argument("--token", required=True, help="the token `arena bot register` printed")
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

    parser = commands.add(
        "check",
        check,
        group="bot",
        help="run a bot through conformance scenarios and report what fails",
        usage=(
            "arena bot check [--games G] [--grpc] -- COMMAND [ARGS]\n"
            "       arena bot check --server HOST:PORT --token TOKEN [--redis-url URL]"
        ),
    )
    parser.add_argument("--server", help="referee the bot is connected to (HOST:PORT)")
    parser.add_argument("--token", help="the bot's token (identifies the bot)")
    add_redis_options(parser)
    parser.add_argument(
        "--games",
        default="",
        help="games to check, comma separated (default: those the bot declared in Hello)",
    )
    parser.add_argument(
        "--grpc",
        action="store_true",
        help="COMMAND is a gRPC bot: run it with --server/--token added (or filled into "
        "{server}/{token}) instead of behind the stdio bridge",
    )
    parser.add_argument(
        "--connect-timeout", type=float, default=CONNECT_TIMEOUT_S, help="seconds to connect"
    )
    parser.add_argument(
        "--only",
        default="",
        help="run only the scenarios whose name contains one of these words, comma separated "
        "(e.g. deal,clock)",
    )
    parser.add_argument(
        "--reconnect-timeout",
        type=float,
        default=30.0,
        help="seconds the bot has to reconnect after the scratch referee restarts",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="show the referee's and the bot's output"
    )
    parser.add_argument("command", nargs=argparse.REMAINDER, help="the bot to run")
