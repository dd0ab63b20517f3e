"""``arena bot submit|build|versions|builds``: hosted bots' code, straight over Redis and the data
dir (docs/HOSTING.md). Submitting builds in the sandbox on this machine, so it needs what
the sandbox needs (bubblewrap, root)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

import redis

from referee.cli.common import Commands, add_redis_options, connection, data_dir_of
from referee.hosting.languages import LANGUAGES
from referee.hosting.versions import VersionInfo, VersionStore


def register(commands: Commands) -> None:
    names = ", ".join(lang.name for lang in LANGUAGES)
    p = commands.add(
        "submit",
        _submit,
        group="bot",
        help="store a new version of a hosted bot (a folder, .tar.gz or .zip) and build it",
    )
    p.add_argument("name", help="a registered bot (arena bot register NAME)")
    p.add_argument("path", type=Path, help="the bot's folder, or a .tar.gz / .zip of it")
    p.add_argument(
        "--language", default=None, help=f"one of {names} (default: recognised from its files)"
    )
    p.add_argument("--no-build", action="store_true", help="store the version only; build it later")
    add_redis_options(p)
    p = commands.add(
        "build",
        _build,
        group="bot",
        help="build a stored version that is not built (--no-build, or a failed build)",
    )
    p.add_argument("name")
    p.add_argument("version", type=int)
    add_redis_options(p)
    p = commands.add("versions", _versions, group="bot", help="list a hosted bot's versions")
    p.add_argument("name")
    add_redis_options(p)
    p = commands.add(
        "builds", _builds, group="bot", help="show a hosted bot's builds and their logs"
    )
    p.add_argument("name")
    p.add_argument(
        "--version", type=int, default=None, help="show this version's log (default: the last)"
    )
    add_redis_options(p)


def _store(args: argparse.Namespace, client: redis.Redis) -> VersionStore:
    return VersionStore(client, data_dir_of(args))


def _submit(args: argparse.Namespace) -> int:
    with connection(args) as client:
        store = _store(args, client)
        if args.no_build:
            info = store.submit(args.name, args.path, language=args.language)
            print(
                f"stored {args.name} v{info.version} ({_what(info)}); build it with "
                f"`arena bot build {args.name} {info.version}`"
            )
            return 0
        info = store.submit_and_build(args.name, args.path, language=args.language)
        active = store.active_version(args.name)
    return _report(args.name, info, active)


def _report(name: str, info: VersionInfo, active: int | None) -> int:
    """One line on the build: what is active from the next match, or why it failed."""
    if info.build == "ok":
        print(
            f"{name} v{info.version} ({_what(info)}) built in {info.build_seconds:.1f} s; "
            "active from the bot's next match"
        )
        return 0
    kept = f"v{active} stays active" if active else "no version is active"
    print(
        f"{name} v{info.version} did not build: {info.summary}\n{kept}; the whole log: "
        f"arena bot builds {name} --version {info.version}",
        file=sys.stderr,
    )
    return 1


def _build(args: argparse.Namespace) -> int:
    with connection(args) as client:
        store = _store(args, client)
        info = store.build(args.name, args.version)
        active = store.active_version(args.name)
    return _report(args.name, info, active)


def _what(info: VersionInfo) -> str:
    files = f"{info.files} file" + ("" if info.files == 1 else "s")
    return f"{info.language}, {info.protocol}, {files}, sha256 {info.sha256[:12]}"


def _versions(args: argparse.Namespace) -> int:
    with connection(args) as client:
        store = _store(args, client)
        versions = store.versions(args.name)
        active = store.active_version(args.name)
    if not versions:
        print(f"{args.name} has no hosted version (arena bot submit {args.name} PATH)")
        return 0
    print(f"{'version':<8} {'language':<8} {'protocol':<8} {'build':<8} {'sha256':<14} submitted")
    for v in versions:
        mark = "*" if v.version == active else " "
        print(
            f"{mark}v{v.version:<6} {v.language:<8} {v.protocol:<8} {v.build:<8} "
            f"{v.sha256[:12]:<14} {_when(v.created_at)}"
        )
    print("* active: the version the bot's next match runs")
    return 0


def _builds(args: argparse.Namespace) -> int:
    with connection(args) as client:
        store = _store(args, client)
        versions = store.versions(args.name)
        if not versions:
            print(f"{args.name} has no hosted version (arena bot submit {args.name} PATH)")
            return 0
        for v in versions:
            took = f" in {v.build_seconds:.1f} s" if v.built_at else ""
            why = f": {v.summary}" if v.summary else ""
            print(f"v{v.version} {v.build}{took}{why}")
        chosen = store.version(args.name, args.version or versions[-1].version)
        log = store.build_log(args.name, chosen.version)
    print(f"--- build log of v{chosen.version} (head and tail) ---")
    print(log.rstrip() or "(empty)")
    return 0


def _when(seconds: int) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).strftime("%Y-%m-%d %H:%M")
