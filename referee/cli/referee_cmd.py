"""``arena referee``: serve BotGateway and the League API (referee.gateway.server)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os

from referee import cluster
from referee.cli.common import (
    ADMIN_TOKEN_ENV,
    Commands,
    add_cluster_secret_option,
    add_redis_options,
    add_secret_file_option,
    data_dir_of,
    read_secret,
    resolve_redis_url,
)
from referee.cli.workers_cmd import check_casual_matches
from referee.defaults import DEFAULT_CASUAL_MATCHES, DEFAULT_GRACE_S, DEFAULT_STALE_S
from referee.errors import ConfigError
from referee.gateway.hub import FLOOD_COOLDOWN_S, JUNK_BURST, JUNK_PER_S, Hub
from referee.gateway.server import RefereeConfig, run_referee
from referee.limits import Limits
from referee.procs import settle_garbage_collector
from workers.host import MatchHost


def register(commands: Commands) -> None:
    parser = commands.add(
        "referee", _run, help="run a referee: the bots' gRPC gateway and the League API"
    )
    add_redis_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on")
    parser.add_argument(
        "--port", type=int, default=50051, help="gRPC port (0 = any free port, printed)"
    )
    parser.add_argument(
        "--http-port", type=int, default=8080, help="HTTP port of /metrics and / (0 = off)"
    )
    parser.add_argument(
        "--http-host", default="", help="address of the HTTP port (default: the same as --host)"
    )
    add_secret_file_option(
        parser, "admin-token", ADMIN_TOKEN_ENV, "bearer token of League admin calls (none: off)"
    )
    parser.add_argument("--tls-cert", help="PEM certificate chain (with --tls-key) to serve TLS")
    parser.add_argument("--tls-key", help="PEM private key of --tls-cert")
    parser.add_argument(
        "--max-streams-per-bot", type=int, default=4, help="open streams one bot may hold"
    )
    parser.add_argument(
        "--junk-per-s",
        type=float,
        default=JUNK_PER_S,
        help="messages a bot stream may send that answer nothing (pings, actions for no "
        f"request it holds), per second, after a burst of --junk-burst (default {JUNK_PER_S:g}"
        "; 0 = no limit); past it the stream ends RESOURCE_EXHAUSTED",
    )
    parser.add_argument(
        "--junk-burst",
        type=int,
        default=JUNK_BURST,
        help=f"such messages a stream may send at once (default {JUNK_BURST})",
    )
    parser.add_argument(
        "--flood-cooldown-s",
        type=float,
        default=FLOOD_COOLDOWN_S,
        help="seconds a bot whose stream was ended for flooding may open no stream on this "
        f"referee (default {FLOOD_COOLDOWN_S:g})",
    )
    parser.add_argument("--referee-id", default="", help="name of this referee in logs/records")
    parser.add_argument(
        "--drain-grace", type=float, default=5.0, help="seconds bots get to answer on shutdown"
    )
    parser.add_argument(
        "--human-move-s",
        type=float,
        default=60.0,
        help="a person's seconds per decision in the web's casual matches (/play; 0 = off)",
    )
    parser.add_argument(
        "--link-host", default="", help="address of the internal port for match hosts (--host)"
    )
    parser.add_argument(
        "--link-port", type=int, default=0, help="internal port for match hosts (0 = any free)"
    )
    parser.add_argument(
        "--link-advertise",
        default="",
        help="HOST:PORT match hosts dial to reach the internal port (default: where it listens)",
    )
    parser.add_argument(
        "--link-tls",
        action="store_true",
        help="serve the internal port with --tls-cert/--tls-key too (hosts then need "
        "--link-tls-ca)",
    )
    parser.add_argument(
        "--link-insecure",
        action="store_true",
        help="let the internal port serve plaintext on a non-loopback address (hosts send the "
        "cluster secret on it: only on a network you trust; refused without this)",
    )
    parser.add_argument(
        "--matches",
        type=int,
        default=0,
        help="matches this process runs at once as a match host of its own (co-hosted: its "
        "bots' decisions skip the internal stream; 0 = none, run `arena worker` hosts)",
    )
    parser.add_argument(
        "--casual-matches",
        type=int,
        default=None,
        help="casual matches (a person against bots: /play, `arena play`) this process runs "
        "at once on slots of their own, never the seasons' (default: "
        f"{DEFAULT_CASUAL_MATCHES} with --matches, else 0)",
    )
    parser.add_argument(
        "--no-casual-play",
        dest="casual_play",
        action="store_false",
        help="refuse casual matches started from the web's /play page (people still join "
        "their seasons' seats there); for public deployments",
    )
    parser.add_argument(
        "--stale-s",
        type=float,
        default=DEFAULT_STALE_S,
        help="co-hosted host: re-run a running match whose host has not heartbeaten for "
        "this many seconds",
    )
    parser.add_argument(
        "--grace-s",
        type=float,
        default=DEFAULT_GRACE_S,
        help="on SIGTERM, seconds co-hosted matches get to finish before they are handed "
        "back (then the referee drains)",
    )
    parser.add_argument(
        "--link-tls-ca",
        default=os.environ.get("ARENA_LINK_TLS_CA"),
        help="co-hosted host: CA certificate (PEM) of other referees' TLS internal ports",
    )
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="change one per-client or total limit (repeatable; 0 turns it off): "
        + ", ".join(f"{n} ({getattr(Limits(), n)})" for n in Limits.names())
        + " (docs/SECURITY.md)",
    )
    parser.add_argument(
        "--hosted-socket",
        default="",
        metavar="PATH",
        help="also listen on this Unix socket for hosted bots (bound into their sandboxes by "
        "`arena bots run`; docs/HOSTING.md)",
    )
    parser.add_argument(
        "--hosted-freeze",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="freeze hosted bots between their turns (default on)",
    )
    parser.add_argument(
        "--hosted-cgroup-parent",
        default="arena",
        help="the cgroup under which `arena bots run` makes hosted bots' groups (default arena)",
    )
    add_cluster_secret_option(parser)
    parser.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ...")


def _run(args: argparse.Namespace) -> int:
    logging.basicConfig(
        level=str(args.log_level).upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    admin_token = read_secret(args, "admin-token", ADMIN_TOKEN_ENV)
    url = resolve_redis_url(args)
    if args.matches < 0:
        raise ConfigError("--matches must be 0 (no co-hosted matches) or more")
    casual = args.casual_matches
    if casual is None:
        casual = DEFAULT_CASUAL_MATCHES if args.matches else 0
    check_casual_matches(casual)
    if args.max_streams_per_bot < 1:
        raise ConfigError("--max-streams-per-bot must be at least 1")
    if args.flood_cooldown_s < 0:
        raise ConfigError(f"--flood-cooldown-s {args.flood_cooldown_s:g}: give 0 or more seconds")
    if args.junk_per_s < 0 or args.junk_burst < 1:
        raise ConfigError(
            f"--junk-per-s {args.junk_per_s:g} / --junk-burst {args.junk_burst}: give a rate "
            "of 0 (no limit) or more and a burst of at least 1"
        )
    if bool(args.tls_cert) != bool(args.tls_key):
        raise ConfigError("TLS needs both --tls-cert and --tls-key")
    if args.link_tls and not args.tls_cert:
        raise ConfigError(
            "--link-tls serves the internal port with --tls-cert/--tls-key: give both"
        )
    limits = Limits().with_settings(args.limit)
    secret = cluster.resolve_secret(args.cluster_secret_file, str(data_dir_of(args)))
    config = RefereeConfig(
        redis_url=url,
        host=args.host,
        port=args.port,
        http_port=args.http_port,
        http_host=args.http_host,
        admin_token=admin_token,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        max_streams_per_bot=args.max_streams_per_bot,
        junk_per_s=args.junk_per_s,
        junk_burst=args.junk_burst,
        flood_cooldown_s=args.flood_cooldown_s,
        referee_id=args.referee_id,
        drain_grace_s=args.drain_grace,
        human_move_s=args.human_move_s,
        casual_play=args.casual_play,
        cluster_secret=secret,
        link_host=args.link_host,
        link_port=args.link_port,
        link_advertise=args.link_advertise,
        link_tls=args.link_tls,
        link_insecure=args.link_insecure,
        matches=args.matches,
        casual_matches=casual,
        match_stale_s=args.stale_s,
        match_grace_s=args.grace_s,
        link_tls_ca=args.link_tls_ca,
        limits=limits,
        hosted_socket=args.hosted_socket,
        hosted_freeze=args.hosted_freeze,
        hosted_cgroup_parent=args.hosted_cgroup_parent,
        hosting_dir=str(data_dir_of(args)),
    )
    problem = config.link_plaintext_problem()
    if problem:
        raise ConfigError(problem)
    settle_garbage_collector()
    try:
        asyncio.run(run_referee(config, cohost=cohost))
    except OSError as exc:  # the port is taken, a TLS file is missing...
        raise ConfigError(str(exc)) from None
    return 0


def cohost(
    config: RefereeConfig, name: str, secret: str, roots: bytes | None, hub: Hub
) -> MatchHost:
    """The match host ``arena referee --matches N`` runs in its own process: the CLI is
    where the gateway and the workers meet (neither imports the other)."""
    return MatchHost(
        config.redis_url,
        name,
        secret,
        max_matches=config.matches,
        casual_matches=config.casual_matches,
        stale_s=config.match_stale_s,
        grace_s=config.match_grace_s,
        root_certificates=roots,
        hub=hub,
    )
