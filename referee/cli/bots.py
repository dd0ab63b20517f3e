"""``arena bot register|list|revoke|rotate-token``: the bot registry, straight over Redis."""

from __future__ import annotations

import argparse
import datetime as dt
import sys

import redis

from referee import bots
from referee.cli.common import Commands, add_redis_options, fail, resolve_redis_url
from referee.errors import ArenaError


def register(commands: Commands) -> None:
    p = commands.add("register", _register, group="bot", help="register a bot; prints its token")
    p.add_argument("name", help="1-40 letters, digits, '-', '_' or '.'")
    p.add_argument("--owner", default="", help="person or team (kept apart in seasons)")
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


def _client(args: argparse.Namespace) -> redis.Redis:
    return redis.Redis.from_url(resolve_redis_url(args), decode_responses=True)


def _register(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            token = bots.register(client, args.name, args.owner, args.description)
    except ArenaError as exc:
        return fail(str(exc))
    except redis.RedisError as exc:
        return fail(f"cannot talk to Redis ({exc}): is the platform running? (arena up)")
    print(token)
    print(
        f"registered bot {args.name}; the line above is its token, shown only this once",
        file=sys.stderr,
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            records = bots.list_bots(client)
    except ArenaError as exc:
        return fail(str(exc))
    except redis.RedisError as exc:
        return fail(f"cannot talk to Redis ({exc}): is the platform running? (arena up)")
    if not records:
        print("no bots registered (arena bot register NAME)")
        return 0
    print(f"{'name':<24} {'owner':<16} {'state':<8} {'streams':>7}  registered")
    for r in records:
        when = dt.datetime.fromtimestamp(r.created_at, dt.UTC).strftime("%Y-%m-%d %H:%M")
        state = "revoked" if r.revoked else "active"
        print(f"{r.name:<24} {r.owner:<16} {state:<8} {r.connected_streams:>7}  {when}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            bots.revoke(client, args.name)
    except ArenaError as exc:
        return fail(str(exc))
    except redis.RedisError as exc:
        return fail(f"cannot talk to Redis ({exc}): is the platform running? (arena up)")
    print(f"revoked bot {args.name}")
    return 0


def _rotate(args: argparse.Namespace) -> int:
    try:
        with _client(args) as client:
            token = bots.rotate_token(client, args.name)
    except ArenaError as exc:
        return fail(str(exc))
    except redis.RedisError as exc:
        return fail(f"cannot talk to Redis ({exc}): is the platform running? (arena up)")
    print(token)
    return 0
