"""``arena bot register|list|revoke|rotate-token|check``: the bot registry, straight over
Redis, and the conformance check of a bot (docs/bots.md)."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import logging
import sys
import time
from collections.abc import Iterator

import redis

from referee import bots, keys
from referee.botcheck.probe import Probe, declared_games
from referee.botcheck.report import CheckResult, Report
from referee.botcheck.scenarios import CheckContext, run_all
from referee.botcheck.states import available_games
from referee.cli.common import (
    BOT_TOKEN_ENV,
    Commands,
    add_redis_options,
    add_secret_file_option,
    comma_list,
    connect,
    connection,
    program_of,
    read_secret,
    redacted_url,
    terminal_safe,
)
from referee.errors import ArenaError, ConfigError

CONNECT_TIMEOUT_S = 30.0


def register(commands: Commands) -> None:
    p = commands.add("register", _register, group="bot", help="register a bot; prints its token")
    p.add_argument("name", help="1-40 letters, digits, '-', '_' or '.'")
    p.add_argument(
        "--owner",
        default="",
        help="person or team (kept apart in seasons unless separate_owners is turned off)",
    )
    p.add_argument("--description", default="")
    add_redis_options(p)
    p = commands.add("list", _list, group="bot", help="list registered bots")
    add_redis_options(p)
    p = commands.add("revoke", _revoke, group="bot", help="revoke a bot's token")
    p.add_argument("name")
    add_redis_options(p)
    p = commands.add(
        "rotate-token", _rotate, group="bot", help="issue a new token (re-admits a revoked bot)"
    )
    p.add_argument("name")
    add_redis_options(p)
    _register_check(commands)


def _register(args: argparse.Namespace) -> int:
    with connection(args) as client:
        token = bots.register(client, args.name, args.owner, args.description)
    print(token)
    print(
        f"registered bot {args.name}; the line above is its token, shown only this once",
        file=sys.stderr,
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    with connection(args) as client:
        records = bots.list_bots(client)
    if not records:
        print("no bots registered (arena bot register NAME)")
        return 0
    print(f"{'name':<24} {'owner':<16} {'state':<8} {'streams':>7}  registered")
    for r in records:
        when = dt.datetime.fromtimestamp(r.created_at, dt.UTC).strftime("%Y-%m-%d %H:%M")
        state = "revoked" if r.revoked else "active"
        owner = terminal_safe(r.owner)
        print(f"{r.name:<24} {owner:<16} {state:<8} {r.connected_streams:>7}  {when}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with connection(args) as client:
        bots.revoke(client, args.name)
    print(f"revoked bot {args.name}")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    with connection(args) as client:
        token = bots.rotate_token(client, args.name)
    print(token)
    return 0


# --- arena bot check ----------------------------------------------------------------------


def _check_games(args: argparse.Namespace) -> list[str]:
    games = comma_list(args.games) or available_games()
    unknown = [g for g in games if g not in available_games()]
    if unknown:
        raise ConfigError(f"unknown game {', '.join(unknown)}: use {', '.join(available_games())}")
    return games


def _games_to_check(
    args: argparse.Namespace, games: list[str], client: redis.Redis, bot: str
) -> tuple[list[str], str]:
    """``--games`` when given, else the games the bot declared in Hello; and a note."""
    if comma_list(args.games):
        return games, f"checking {', '.join(games)}"
    declared = declared_games(client, bot)
    if declared is None:
        return games, "declared every game"
    known = [g for g in declared if g in games]
    note = f"declared {', '.join(declared)}"
    if not known:
        return games, note + " (none known here: checking every game)"
    return known, note


PLATFORM_LOGGERS = ("workers", "referee")
"""The loggers of the platform code the checker runs in its own process (the probe's link
to the referee, ``workers.link``): their warnings are expected (the reconnect scenario
kills the link on purpose) and say nothing about the bot."""


@contextlib.contextmanager
def _checker_logs(verbose: bool) -> Iterator[None]:
    """Keep the checker's own expected errors out of the author's view: the platform's
    loggers go nowhere (to stderr with ``--verbose``); grpc's core says only errors
    (``referee.cli``). The report says what matters."""
    handler: logging.Handler = (
        logging.StreamHandler(sys.stderr) if verbose else logging.NullHandler()
    )
    handler.setFormatter(logging.Formatter("[checker] %(name)s: %(message)s"))
    saved = []
    for name in PLATFORM_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.propagate))
        logger.addHandler(handler)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, propagate in saved:
            logger.removeHandler(handler)
            logger.propagate = propagate


def check(args: argparse.Namespace) -> int:
    command = program_of(args)
    games = _check_games(args)
    with _checker_logs(args.verbose):
        return _check(args, command, games)


def _check(args: argparse.Namespace, command: list[str], games: list[str]) -> int:
    if command:
        return _check_command(args, command, games)
    token = read_secret(args, "token", BOT_TOKEN_ENV)
    if not args.server or not token:
        raise ConfigError(
            "say which bot to check: `arena bot check -- ./mybot` (the checker runs it), or "
            f"`{BOT_TOKEN_ENV}=TOKEN arena bot check --server HOST:PORT` (or --token-file) "
            "for a bot already connected"
        )
    return _check_connected(args, games, token)


def _check_connected(args: argparse.Namespace, games: list[str], token: str) -> int:
    client = connect(args)
    url = redacted_url(args.connected_redis_url)
    try:
        try:
            name = bots.authenticate(client, token)
        except ArenaError as exc:
            raise type(exc)(f"{exc} (looked up in the Redis at {url})") from None
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
                only=comma_list(args.only),
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
        platform = ScratchPlatform(command, grpc=args.grpc, games=comma_list(args.games), log=log)
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
                    only=comma_list(args.only),
                )
                run_all(ctx, report)
    except HarnessError as exc:
        raise ConfigError(str(exc)) from None
    report.print(sys.stdout)
    return report.exit_code()


def _register_check(commands: Commands) -> None:
    parser = commands.add(
        "check",
        check,
        group="bot",
        help="run a bot through conformance scenarios and report what fails",
        usage=(
            "arena bot check [--games G] [--grpc] -- COMMAND [ARGS]\n"
            f"       {BOT_TOKEN_ENV}=TOKEN arena bot check --server HOST:PORT [--redis-url URL]"
        ),
    )
    parser.add_argument("--server", help="referee the bot is connected to (HOST:PORT)")
    add_secret_file_option(parser, "token", BOT_TOKEN_ENV, "bot's token, to check a connected bot")
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
