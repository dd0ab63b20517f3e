"""Entry point of the ``arena`` command.

Each command module exposes ``register(commands: Commands)`` and adds its subcommands;
a subcommand's handler takes the parsed arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from referee import __version__
from referee.cli.common import Commands, record_store_env, run_handler

COMMAND_MODULES = (
    "referee.cli.games",  # presets, selfplay
    "referee.cli.referee_cmd",  # referee
    "referee.cli.bots",  # bot register/list/revoke/rotate-token/check
    "referee.cli.hosting_cmd",  # bot submit/versions/builds
    "referee.cli.bot_test",  # bot test
    "referee.cli.hosted_run_cmd",  # bots run, bot events
    "referee.cli.up",  # up
    "referee.cli.workers_cmd",  # worker, replay, match
    "referee.cli.seasons",  # season ..., standings
    "referee.cli.demo",  # demo
    "referee.cli.polyglot",  # bridge
    "referee.cli.ladder_cmd",  # ladder serve, ladder gauntlet
    "referee.cli.ladder_live",  # ladder start/join/pause/resume/status/standings/replay
    "referee.cli.play",  # play (a person against bots, in the terminal)
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arena",
        description="Sevens Arena: bot leagues for the Sevens family and Sedma.",
    )
    parser.add_argument("--version", action="version", version=f"arena {__version__}")
    commands = Commands(parser.add_subparsers(dest="command", metavar="COMMAND"))
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler: Callable[[argparse.Namespace], int] | None = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    if hasattr(args, "data_dir"):
        with record_store_env(args):
            return run_handler(handler, args)
    return run_handler(handler, args)


if __name__ == "__main__":
    sys.exit(main())
