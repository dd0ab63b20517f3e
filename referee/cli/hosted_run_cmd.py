"""``arena bots run`` (the bot supervisor, for a machine of its own) and ``arena bot events
NAME`` (what happened to a hosted bot's sandbox); docs/HOSTING.md. ``arena up`` runs the
same supervisor beside its referee (:func:`start_supervisor`)."""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import threading
from pathlib import Path

import redis

from referee.cli.common import Commands, add_redis_options, connect, connection, data_dir_of
from referee.errors import ConfigError
from referee.hosting.cgroups import CgroupUnavailable
from referee.hosting.errors import SandboxUnavailable
from referee.hosting.supervisor import RunLimits, Supervisor, read_events
from referee.hosting.versions import VersionStore

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
MAX_SOCKET_PATH = 100
"""Longest Unix socket path used (the kernel's limit is 107 bytes)."""


def hosted_socket(data_dir: Path) -> Path:
    """Where ``arena up``'s referee listens for the hosted bots of ``data_dir``."""
    return data_dir / "run" / "referee.sock"


def register(commands: Commands) -> None:
    p = commands.add(
        "run",
        _run,
        group="bots",
        help="keep every active hosted bot of the created, running and paused seasons "
        "alive, each in its sandbox (for a machine besides `arena up`'s; it needs a referee "
        "here started with --hosted-socket)",
    )
    add_redis_options(p)
    p.add_argument(
        "--socket",
        type=Path,
        default=None,
        help="the Unix socket of this machine's referee (its --hosted-socket; default: "
        "<data-dir>/run/referee.sock, where `arena up` puts it)",
    )
    p.add_argument(
        "--bot",
        action="append",
        default=[],
        metavar="NAME",
        help="run only these hosted bots (repeatable; default: those the seasons need)",
    )
    add_limit_options(p)
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ...")
    p = commands.add(
        "events",
        _events,
        group="bot",
        help="what happened to a hosted bot's sandbox: starts, exits, out-of-memory kills, "
        "limit hits (newest first)",
    )
    p.add_argument("name")
    p.add_argument("--limit", type=int, default=20, help="how many (20)")
    add_redis_options(p)


def add_limit_options(p: argparse.ArgumentParser) -> None:
    """Every hosted bot's equal share (docs/HOSTING.md, "Limits")."""
    d = RunLimits()
    p.add_argument("--bot-cpus", type=float, default=d.cpus, help=f"CPU cores per bot ({d.cpus:g})")
    p.add_argument(
        "--bot-memory-mb", type=int, default=d.memory_mb, help=f"memory per bot ({d.memory_mb})"
    )
    p.add_argument(
        "--bot-pids", type=int, default=d.pids, help=f"processes and threads per bot ({d.pids})"
    )
    p.add_argument(
        "--bot-disk-mb", type=int, default=d.disk_mb, help=f"scratch disk per bot ({d.disk_mb})"
    )


def limits_of(args: argparse.Namespace) -> RunLimits:
    if args.bot_cpus <= 0 or args.bot_memory_mb < 16 or args.bot_pids < 4 or args.bot_disk_mb < 1:
        raise ConfigError(
            "--bot-cpus must be above 0, --bot-memory-mb at least 16, --bot-pids at least 4 "
            "and --bot-disk-mb at least 1"
        )
    return RunLimits(
        cpus=args.bot_cpus,
        memory_mb=args.bot_memory_mb,
        pids=args.bot_pids,
        disk_mb=args.bot_disk_mb,
    )


def make_supervisor(
    client: redis.Redis,
    data_dir: Path,
    socket: Path,
    limits: RunLimits,
    only: list[str] | None = None,
) -> Supervisor:
    """The supervisor for ``data_dir``'s hosted bots; :class:`SandboxUnavailable` or
    :class:`CgroupUnavailable` (both saying what is missing) where none can run here."""
    store = VersionStore(client, data_dir)
    chosen = sorted(set(only or ()))
    return Supervisor(
        client,
        store,
        socket,
        data_dir / "hosted-run",
        limits=limits,
        bots_to_run=(lambda: chosen) if chosen else None,
    )


def start_supervisor(
    url: str, data_dir: Path, limits: RunLimits, stop: threading.Event
) -> threading.Thread | None:
    """``arena up``'s supervisor in a thread, or None (with one line saying why) where no
    sandbox can be had: hosted bots are then not run at all, never unsandboxed."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        supervisor = make_supervisor(client, data_dir, hosted_socket(data_dir), limits)
    except (SandboxUnavailable, CgroupUnavailable) as exc:
        print(f"arena up: hosted bots are not run here: {exc}", flush=True)
        client.close()
        return None
    thread = threading.Thread(target=supervisor.run, args=(stop,), name="bots", daemon=True)
    thread.start()
    return thread


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=str(args.log_level).upper(), format=LOG_FORMAT)
    data_dir = data_dir_of(args)
    socket = args.socket or hosted_socket(data_dir)
    if not socket.exists():
        raise ConfigError(
            f"no referee socket at {socket}: start `arena referee --hosted-socket {socket}` "
            "on this machine (or `arena up`), or give --socket"
        )
    limits = limits_of(args)
    client = connect(args)
    try:
        client.ping()  # a Redis that is not there is one error line, not a retry loop
        try:
            supervisor = make_supervisor(client, data_dir, socket, limits, args.bot)
        except (SandboxUnavailable, CgroupUnavailable) as exc:
            raise ConfigError(f"hosted bots cannot run here: {exc}") from None
        stop = threading.Event()
        from referee.cli.up import install_stop

        install_stop(stop)
        print(f"arena bots run: supervising hosted bots (socket {socket}); Ctrl-C stops them")
        supervisor.run(stop)
    finally:
        client.close()
    return 0


def _events(args: argparse.Namespace) -> int:
    if args.limit < 1:
        raise ConfigError(f"--limit {args.limit}: give 1 or more")
    with connection(args) as client:
        events = read_events(client, args.name, args.limit)
    if not events:
        print(f"no run events for {args.name} (not a hosted bot, or never started)")
        return 0
    for event in events:
        when = dt.datetime.fromtimestamp(int(event["ts_ms"]) / 1000, dt.UTC)
        print(f"{when:%Y-%m-%d %H:%M:%S}  {event['event']:<13} {event['detail']}")
    return 0
