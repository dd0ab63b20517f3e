"""Pieces shared by the command modules: the command registry and finding Redis."""

from __future__ import annotations

import argparse
import os
import sys
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from referee.errors import ConfigError

DEFAULT_DATA_DIR = ".arena"
REDIS_URL_FILE = "redis.url"
"""``arena up`` (and other commands that start the embedded Redis) write its URL here."""

Handler = Callable[[argparse.Namespace], int]


class Commands:
    """Where command modules add their subcommands.

    ``commands.add("presets", handler, help=...)`` adds a top-level command;
    ``commands.add("register", handler, group="bot")`` adds ``arena bot register``.
    """

    def __init__(self, top: argparse._SubParsersAction[argparse.ArgumentParser]):
        self._top = top
        self._groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}

    def add(
        self, name: str, handler: Handler, *, help: str, group: str | None = None, **kw: Any
    ) -> argparse.ArgumentParser:
        subparsers = self._top if group is None else self._group(group)
        parser = subparsers.add_parser(name, help=help, description=help, **kw)
        parser.set_defaults(handler=handler)
        return parser

    def _group(self, name: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        if name not in self._groups:
            helps = {"bot": "register and manage bots", "season": "run league seasons"}
            group_parser = self._top.add_parser(name, help=helps.get(name, name))
            group_parser.set_defaults(handler=lambda _args, p=group_parser: _usage(p))
            self._groups[name] = group_parser.add_subparsers(dest=f"{name}_command")
        return self._groups[name]


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def add_redis_options(parser: argparse.ArgumentParser) -> None:
    """``--redis-url`` and ``--data-dir``, shared by every command that needs Redis."""
    parser.add_argument(
        "--redis-url",
        default=os.environ.get("ARENA_REDIS_URL"),
        help="use this Redis (default: $ARENA_REDIS_URL, else the embedded one in --data-dir)",
    )
    parser.add_argument(
        "--data-dir",
        default=os.environ.get("ARENA_DATA_DIR", DEFAULT_DATA_DIR),
        help="folder of the embedded Redis and local state (default: ./.arena)",
    )


def resolve_redis_url(args: argparse.Namespace) -> str:
    """The Redis to talk to: ``--redis-url``, else the embedded one that is running now."""
    if getattr(args, "redis_url", None):
        return str(args.redis_url)
    url_file = Path(getattr(args, "data_dir", DEFAULT_DATA_DIR)) / REDIS_URL_FILE
    if url_file.exists():
        url = url_file.read_text().strip()
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
            client.ping()
            client.close()
            return url
        except redis.RedisError:
            pass
    raise ConfigError(
        "no Redis to talk to: start the platform with `arena up` (it writes "
        f"{url_file}), or pass --redis-url redis://HOST:PORT/0"
    )


def redacted_url(url: str) -> str:
    """``url`` fit for output and logs: a password in it (``:PASSWORD@`` or a ``password``
    query parameter) is replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):
        hidden = [(k, "***" if k == "password" else v) for k, v in query]
        parts = parts._replace(query=urllib.parse.urlencode(hidden, safe="/*"))
    query_part = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{parts.path}{query_part}"


def fail(message: str, code: int = 1) -> int:
    """Print an error for a person and return the exit code."""
    print(f"arena: error: {message}", file=sys.stderr)
    return code
