"""``arena up``: the whole platform in the foreground: Redis, a referee that runs
``--matches`` matches itself (co-hosted, docs/workers.md "Co-hosted matches") and ``-n``
separate match-host processes; without ``-n`` / ``--matches`` sized to the machine
(:mod:`workers.sizing`: one process per core less a quarter left for bots, matches as
memory allows).

The referee is a child process; it gets its Redis URL and the admin token through its
environment (``$ARENA_REDIS_URL``, ``$ARENA_ADMIN_TOKEN``), never its command line, which
every user of the host can read in ``ps``. ``arena up`` reports success only after the
referee printed its own ``referee listening on HOST:PORT`` line; a referee that fails
(a port in use...) fails ``arena up`` with the referee's error.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import sys
import threading
from typing import Any

from referee import cluster
from referee.cli import hosted_run_cmd, workers_cmd
from referee.cli.common import (
    ADMIN_TOKEN_ENV,
    Commands,
    add_redis_options,
    add_secret_file_option,
    child_env,
    data_dir_of,
    read_secret,
    redacted_url,
    resolve_redis_url,
    running_or_embedded_redis,
)
from referee.errors import ConfigError
from referee.procs import (
    ERROR_PREFIX,
    RefereeStartError,
    die_with_parent,
    start_referee,
    stop_process,
)
from workers.pool import WorkerPool

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REFEREE_START_S = 60.0


def register(commands: Commands) -> None:
    p = commands.add(
        "up",
        up,
        help="run everything in the foreground: Redis, a referee running matches, and "
        "separate match hosts (by default sized to the machine's cores and memory)",
    )
    add_redis_options(p)
    # the referee co-hosts --matches matches; -n adds separate hosts of --matches each
    workers_cmd.add_host_options(p, referee_runs_matches=True)
    p.add_argument("--host", default="127.0.0.1", help="address the referee listens on")
    p.add_argument("--port", type=int, default=50051, help="referee gRPC port (50051)")
    p.add_argument("--http-port", type=int, default=8080, help="referee HTTP port (8080)")
    add_secret_file_option(
        p, "admin-token", ADMIN_TOKEN_ENV, "League admin token (none: a new one, printed)"
    )
    p.add_argument(
        "--no-casual-play",
        dest="casual_play",
        action="store_false",
        help="refuse casual matches started from the web's /play page (people still join "
        "their seasons' seats there); for public deployments",
    )
    p.add_argument(
        "--hosted",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run the seasons' hosted bots, each in its sandbox (default on where a sandbox "
        "can be had; where not, one line says why and none run)",
    )
    p.add_argument(
        "--hosted-freeze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="freeze hosted bots between their turns (default on)",
    )
    hosted_run_cmd.add_limit_options(p)
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ...")
    p.add_argument(
        "--join",
        action="store_true",
        help="when a platform already runs in the data dir, add this referee to it (with a "
        "free --port and --http-port, and an admin token of its own) instead of refusing",
    )


def install_stop(pool: WorkerPool | threading.Event) -> None:
    """SIGTERM and SIGINT stop the pool (which ends ``pool.run()``) or set the event."""

    def handler(signum: int, _frame: Any) -> None:
        if isinstance(pool, threading.Event):
            pool.set()
        else:
            pool.stop()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


class _Echo:
    """Prints the referee's output lines, ``referee | `` first. Until the referee has
    started, its own error line is left out: ``arena up`` says it once, as its error."""

    def __init__(self) -> None:
        self.started = False

    def __call__(self, line: str) -> None:
        if not self.started and line.startswith(ERROR_PREFIX):
            return
        sys.stdout.write(f"referee | {line}\n")
        sys.stdout.flush()


def _refuse_a_second_platform(args: argparse.Namespace) -> None:
    """A data dir whose embedded Redis runs belongs to a running platform: a second ``arena
    up`` there would join it silently (as another referee, with another admin token).
    Refused unless ``--join`` asks for just that."""
    if getattr(args, "redis_url", None) or args.join:
        return
    try:
        url = resolve_redis_url(args)
    except ConfigError:
        return  # nothing runs there: this one starts the platform
    raise ConfigError(
        f"the data dir {data_dir_of(args)} is in use: a platform runs there (its Redis at "
        f"{redacted_url(url)}). Stop it (Ctrl-C where `arena up` runs), give this one "
        "another --data-dir, or pass --join to add one more referee to it (with a free "
        "--port and --http-port)"
    )


def up(args: argparse.Namespace) -> int:
    level = str(args.log_level).upper()
    logging.basicConfig(level=level, format=LOG_FORMAT)
    plan = workers_cmd.resolve_sizing(args, referee_runs_matches=True)
    if args.num_workers < 0:
        raise ConfigError("-n must be 0 (the referee runs the matches alone) or more")
    if args.matches < 1:
        raise ConfigError("--matches must be at least 1")
    workers_cmd.check_casual_matches(args.casual_matches)
    token = read_secret(args, "admin-token", ADMIN_TOKEN_ENV) or secrets.token_urlsafe(24)
    # The referee and the hosts share the internal stream's secret: the given one, or a new
    # one for this run (the referee gets it in its environment).
    given = os.environ.get(cluster.SECRET_ENV) or args.cluster_secret_file
    secret = (
        cluster.resolve_secret(args.cluster_secret_file) if given else secrets.token_urlsafe(32)
    )
    _refuse_a_second_platform(args)
    joined = bool(args.join and not getattr(args, "redis_url", None))
    hosted = args.hosted and not joined  # the platform joined runs them already
    socket = hosted_run_cmd.hosted_socket(data_dir_of(args))
    if hosted and len(str(socket)) > hosted_run_cmd.MAX_SOCKET_PATH:
        print(
            f"arena up: hosted bots are not run here: the socket path {socket} is longer than "
            f"{hosted_run_cmd.MAX_SOCKET_PATH} characters (a Unix socket's limit); use a "
            "shorter --data-dir",
            flush=True,
        )
        hosted = False
    echo = _Echo()
    with running_or_embedded_redis(args) as url:
        try:
            referee, grpc_addr = start_referee(
                url,
                "--host",
                args.host,
                # the match hosts run on this machine: the internal port stays on loopback
                *("--link-host", "127.0.0.1"),
                "--port",
                str(args.port),
                "--http-port",
                str(args.http_port),
                "--log-level",
                level,
                *("--matches", str(args.matches), "--stale-s", str(args.stale_s)),
                *("--casual-matches", str(args.casual_matches)),
                *(() if args.casual_play else ("--no-casual-play",)),
                *("--grace-s", str(args.grace_s)),
                *(("--link-tls-ca", args.link_tls_ca) if args.link_tls_ca else ()),
                # hosted bots' code (arena bot submit, the upload form) lives in the data dir
                *("--data-dir", str(data_dir_of(args))),
                *(("--hosted-socket", str(socket)) if hosted else ()),
                *(() if args.hosted_freeze else ("--no-hosted-freeze",)),
                timeout=REFEREE_START_S,
                on_line=echo,
                env=child_env(**{ADMIN_TOKEN_ENV: token, cluster.SECRET_ENV: secret}),
                preexec_fn=die_with_parent,
            )
        except RefereeStartError as exc:
            raise ConfigError(f"arena up: the referee did not start: {exc}") from None
        echo.started = True
        pool = workers_cmd.make_pool(args, url, secret) if args.num_workers else None
        stop = threading.Event()
        bots_stop = threading.Event()
        supervisor = (
            hosted_run_cmd.start_supervisor(
                url, data_dir_of(args), hosted_run_cmd.limits_of(args), bots_stop
            )
            if hosted
            else None
        )
        install_stop(pool or stop)
        try:
            if joined:
                print(
                    f"arena up: joined the platform already running in {data_dir_of(args)} "
                    "as one more referee (--join); the admin token below is this referee's "
                    "own",
                    flush=True,
                )
            print(
                f"arena up: redis {redacted_url(url)} (data dir {data_dir_of(args)})\n"
                f"          referee grpc {grpc_addr}"
                + (f"  http http://{args.host}:{args.http_port}/" if args.http_port else "")
                + f"\n          admin token {token}\n"
                f"          the referee runs {args.matches} matches at once"
                + (
                    f", and {args.num_workers} match host(s) x {args.matches} more"
                    if args.num_workers
                    else ""
                )
                + f"\n          (machine: {plan.describe()})"
                + "; Ctrl-C stops everything",
                flush=True,
            )
            if pool is not None:
                pool.run()
            else:
                while not stop.is_set() and referee.poll() is None:
                    stop.wait(0.5)
        finally:
            if pool is not None:
                pool.stop()
            bots_stop.set()
            if supervisor is not None:
                supervisor.join(30)
            # the referee's matches get --grace-s to finish, then it drains (~5 s)
            stop_process(referee, args.grace_s + 20.0)
    print("arena up: stopped", flush=True)
    return 0
