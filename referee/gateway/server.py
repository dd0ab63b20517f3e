"""The referee process: one ``grpc.aio`` server with BotGateway, League, health and
reflection, plus the optional HTTP and seasons tasks of the other modules.

Keepalive (docs/PROTOCOL.md section 7; the SDK's numbers are in ``arena_sdk/sdk.py``):

* the server pings an idle connection every 30 s and drops it if no ack in 10 s;
* it accepts client pings as often as every 1 s (``min_ping_interval_without_data_ms``,
  :data:`MIN_CLIENT_PING_INTERVAL_MS`) and counts only more frequent ones as strikes; the
  SDK pings every 5 s and gives up after 5 s without the ack, so a bot notices a referee
  that vanished from the network within about 10 s and fails over to another;
* ``Welcome.keepalive_time_ms`` tells other clients the 5 s interval to use.

Shutdown (SIGTERM/SIGINT or :meth:`RefereeServer.stop`): health NOT_SERVING, new streams
UNAVAILABLE, new turns from hosts are answered DRAINED, sessions send a ``Notice``, held
requests get ``drain_grace_s`` to be answered, the rest go back to their hosts (DRAINED:
they send them to the bot's new referee), then the server stops.

Every step of it is bounded (an aio stream write can wait on flow control forever): each
write to a bot takes at most ``write_timeout_s``, else that bot's stream alone ends with
RESOURCE_EXHAUSTED; the wait for sessions to close and the server's own grace are fixed, so
a bot that never reads cannot hold SIGTERM or stall the other bots' streams.

Readiness (``/readyz`` on the HTTP port, :meth:`RefereeServer.readiness`): Redis answers,
the bots' gRPC port and the internal port accept a TCP connection, and the referee is not
draining; the HTTP port stays up while the referee drains, so a load balancer reads "not
ready: draining" rather than a refused connection.

A second ``grpc.aio`` server on the internal port (``link_host:link_port``) serves
``MatchRelay.Link`` to match hosts, authenticated by the cluster secret; the address hosts
dial (``link_advertise``) goes into the bot-streams directory.

Co-hosted matches (``matches`` > 0, ``arena referee --matches N``): the referee runs a
match host in its own event loop (``workers.host.MatchHost``, made by the ``cohost``
factory the caller passes: the gateway imports nothing of the workers), an RQ worker like
any ``arena worker`` host; a decision for a bot held by this referee is a call on its
``Hub``, never a message on the internal stream (docs/workers.md "Co-hosted matches").
On shutdown that host stops first (its matches finish within ``match_grace_s`` or are
handed back for a new attempt), then the referee drains.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import ipaddress
import logging
import os
import signal
import socket
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, cast

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis.asyncio
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from arena.v1 import bot_pb2, league_pb2, league_pb2_grpc
from referee import cluster, web
from referee.aio import stop_tasks
from referee.defaults import DEFAULT_GRACE_S, DEFAULT_STALE_S
from referee.errors import ConfigError
from referee.gateway.auth import BotAuthInterceptor, TokenWatch
from referee.gateway.hub import (
    FLOOD_COOLDOWN_S,
    HELLO_TIMEOUT_S,
    HOUSEKEEPING_S,
    JUNK_BURST,
    JUNK_PER_S,
    WRITE_TIMEOUT_S,
    Hub,
    HubConfig,
)
from referee.gateway.league import LeagueCore, make_league_servicer
from referee.gateway.notices import forward_season_notices
from referee.gateway.relay import BotGatewayServicer, MatchRelayServicer
from referee.hosting.cgroups import CgroupUnavailable, open_hierarchy
from referee.hosting.meter import CgroupMeter
from referee.limits import Limits
from referee.seasons import driver

log = logging.getLogger(__name__)

KEEPALIVE_TIME_MS = 30_000
"""The referee pings an idle connection this often (it notices a vanished bot)."""
KEEPALIVE_TIMEOUT_MS = 10_000
CLIENT_KEEPALIVE_TIME_MS = 5_000
"""How often clients should ping (``Welcome.keepalive_time_ms``; the SDK's default)."""
MIN_CLIENT_PING_INTERVAL_MS = 1_000
"""The server accepts client pings this often; anything more frequent earns strikes."""
MAX_MESSAGE_BYTES = 64 * 1024
"""Largest message a bot may send or receive (gRPC's default is 4 MiB; docs/PROTOCOL.md
section 7)."""

COMMAND_CONNECTIONS = 64
FEED_CONNECTIONS = 8
"""Connections that wait on pub/sub: the WatchEvents streams' one shared subscription
(referee.gateway.feed) and the season notices'."""
REDIS_SOCKET_TIMEOUT_S = 15.0
READY_CONNECT_TIMEOUT_S = 1.0
"""How long a readiness check waits for one of the referee's own ports to accept."""

STOP_TASK_S = 3.0
"""How long a stopping referee waits for a background task to end once told or cancelled."""
SERVICE_NAMES = (
    bot_pb2.DESCRIPTOR.services_by_name["BotGateway"].full_name,
    league_pb2.DESCRIPTOR.services_by_name["League"].full_name,
)


def server_options(max_message_bytes: int = MAX_MESSAGE_BYTES) -> list[tuple[str, int]]:
    return [
        ("grpc.keepalive_time_ms", KEEPALIVE_TIME_MS),
        ("grpc.keepalive_timeout_ms", KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        # gRPC core's GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS is spelled
        # "grpc.http2.min_ping_interval_without_data_ms" (a "min_recv_..." key is ignored)
        ("grpc.http2.min_ping_interval_without_data_ms", MIN_CLIENT_PING_INTERVAL_MS),
        ("grpc.http2.max_ping_strikes", 2),
        # Keep pinging a connection that carries no data (an idle bot between matches, a
        # frozen transport): gRPC's default stops after 2 pings, so a peer that vanished
        # without a FIN would never be noticed.
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", max_message_bytes),
        ("grpc.max_send_message_length", max_message_bytes),
        ("grpc.so_reuseport", 0),
    ]


@dataclass
class RefereeConfig:
    redis_url: str
    host: str = "127.0.0.1"
    port: int = 50051
    http_port: int = 8080  # 0 = no HTTP
    http_host: str = ""  # address of the HTTP port; "" = the same as host
    admin_token: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    max_streams_per_bot: int = HubConfig.max_streams_per_bot
    junk_per_s: float = JUNK_PER_S  # a bot stream's messages that answer nothing (gateway/hub.py)
    junk_burst: int = JUNK_BURST
    flood_cooldown_s: float = FLOOD_COOLDOWN_S  # a flooding bot's streams refused this long
    referee_id: str = ""
    max_concurrency: int = HubConfig.max_concurrency
    max_message_bytes: int = MAX_MESSAGE_BYTES
    drain_grace_s: float = 5.0
    housekeeping_s: float = HOUSEKEEPING_S  # stream refresh, revocation check
    hello_timeout_s: float = HELLO_TIMEOUT_S
    write_timeout_s: float = WRITE_TIMEOUT_S  # one write to a bot
    hooks: bool = True  # run referee.web (HTTP) and referee.seasons.driver (seasons)
    human_move_s: float = 60.0  # a person's clock per decision in /play matches (0 = off)
    casual_play: bool = True  # visitors may start casual matches on /play (joins stay on)
    cluster_secret: str = ""  # authenticates match hosts (never argv; "" = $ARENA_CLUSTER_SECRET)
    link_host: str = ""  # internal port's listen address ("" = the same as host)
    link_port: int = 0  # 0 = any free port
    link_advertise: str = ""  # HOST:PORT hosts dial ("" = link_host:the bound port)
    link_tls: bool = False  # serve the internal port with tls_cert/tls_key too
    link_insecure: bool = False  # allow a plaintext internal port on a non-loopback address
    matches: int = 0  # co-hosted matches at once (a match host in this process; 0 = none)
    casual_matches: int = 0  # co-hosted casual matches at once, on slots of their own
    match_stale_s: float = DEFAULT_STALE_S  # the co-hosted host's janitor (workers.host)
    match_grace_s: float = DEFAULT_GRACE_S  # on stop, co-hosted matches get this to finish
    link_tls_ca: str | None = None  # CA of other referees' TLS internal ports (co-hosted)
    limits: Limits = field(default_factory=Limits)  # per client and in total (--limit)
    hosted_socket: str = ""  # a Unix socket for hosted bots' sandboxes ("" = none)
    hosted_freeze: bool = True  # freeze hosted bots between their turns (referee.hosting)
    hosted_cgroup_parent: str = "arena"  # where the bot supervisor makes their groups
    hosting_dir: str = ""  # data dir keeping hosted bots' code ("" = no submissions here)

    def hub_fields(self) -> dict[str, Any]:
        """This config's values of the :class:`HubConfig` fields it shares by name (all but
        ``referee_id``, which the server resolves)."""
        shared = {f.name for f in fields(HubConfig)} - {"referee_id"}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name in shared}

    def resolved_link_host(self) -> str:
        return self.link_host or self.host

    def link_plaintext_problem(self) -> str:
        """Why the internal port may not listen as configured ("" if it may): match hosts
        send the cluster secret on it, so plaintext is for loopback only unless asked."""
        host = self.resolved_link_host()
        if (self.link_tls and self.tls_cert) or self.link_insecure or is_loopback(host):
            return ""
        return (
            f"the internal port for match hosts would serve plaintext on {host} (not "
            "loopback), and hosts send the cluster secret on it: serve it with TLS "
            "(--link-tls, with --tls-cert/--tls-key; hosts then need --link-tls-ca), keep it "
            "on this machine (--link-host 127.0.0.1), or pass --link-insecure to accept "
            "plaintext on a network you trust"
        )

    def resolved_referee_id(self) -> str:
        return self.referee_id or f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:4]}"


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) listens on this machine only."""
    if host.lower() == "localhost":
        return True
    with contextlib.suppress(ValueError):
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    return False


def _loopback(host: str) -> str:
    """Where this process reaches its own gRPC port (the web's human seats connect there)."""
    return {"0.0.0.0": "127.0.0.1", "::": "[::1]", "": "127.0.0.1"}.get(host, host)


async def _accepts(what: str, server: grpc.aio.Server | None, host: str, port: int) -> str:
    """``"ok"`` when ``host:port`` (a port of ``server``) accepts a TCP connection."""
    if server is None or not port:
        return f"{what} is not serving yet"
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port), READY_CONNECT_TIMEOUT_S
        )
    except (OSError, TimeoutError) as exc:
        return f"{what} ({host}:{port}) does not accept connections: {exc or 'timed out'}"
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return "ok"


class CoHost(Protocol):
    """A match host run inside the referee's process (``workers.host.MatchHost``)."""

    async def run(self) -> None: ...

    def request_stop(self) -> None: ...


class CoHostFactory(Protocol):
    """Makes the co-hosted match host: the config, its RQ worker name, the cluster secret,
    the CA of other referees' internal ports, and this referee's :class:`Hub` (the narrow
    interface the host calls, ``workers.link.LocalHub``)."""

    def __call__(
        self, config: RefereeConfig, name: str, secret: str, roots: bytes | None, hub: Hub
    ) -> CoHost: ...


class RefereeServer:
    """Start with :meth:`start` (returns the bound port), end with :meth:`stop`."""

    def __init__(self, config: RefereeConfig, cohost: CoHostFactory | None = None) -> None:
        if (config.matches > 0 or config.casual_matches > 0) and cohost is None:
            raise ConfigError(
                "co-hosted matches (matches > 0) need a match host factory: pass cohost= "
                "(arena referee passes workers.host's)"
            )
        self.cohost = cohost
        self.config = config
        self.referee_id = config.resolved_referee_id()
        self.port = 0
        self.stop_event = asyncio.Event()
        # Commands share a bounded pool (callers wait for a free connection).
        common: dict[str, Any] = {
            "decode_responses": True,
            "socket_timeout": REDIS_SOCKET_TIMEOUT_S,
            "socket_connect_timeout": 5.0,
        }
        self.redis = redis.asyncio.Redis(
            connection_pool=redis.asyncio.BlockingConnectionPool.from_url(
                config.redis_url, max_connections=COMMAND_CONNECTIONS, timeout=20, **common
            )
        )
        # Pub/sub (WatchEvents' shared feed, season notices) waits on its own connections.
        self.pop_redis = redis.asyncio.Redis.from_url(
            config.redis_url, max_connections=FEED_CONNECTIONS, **common
        )
        self.hub = Hub(
            self.redis,
            HubConfig(
                **config.hub_fields(),
                referee_id=self.referee_id,
                keepalive_time_ms=CLIENT_KEEPALIVE_TIME_MS,
                outbox_bytes=config.limits.outbox_bytes,
                outbox_messages=config.limits.outbox_messages,
            ),
        )
        self.health = health.aio.HealthServicer()
        self.league: LeagueCore | None = None
        self.server: grpc.aio.Server | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.meter: CgroupMeter | None = None  # hosted bots' freezer and CPU meter
        self._sweeper: asyncio.Future[None] | None = None
        self._notices: asyncio.Future[None] | None = None
        self.token_watch = TokenWatch(self.redis)
        self._watcher: asyncio.Future[None] | None = None
        # pub/sub waits for messages: a connection of its own, no socket timeout
        self._watch_redis = redis.asyncio.Redis.from_url(
            config.redis_url, decode_responses=True, socket_connect_timeout=5.0
        )
        self.link_server: grpc.aio.Server | None = None
        self.link_port = 0
        self._stopped = False
        self._http_stop = asyncio.Event()  # set once drained: /readyz answers meanwhile
        self.secret = ""
        self.match_host: CoHost | None = None
        self._matches: asyncio.Future[None] | None = None

    async def start(self) -> int:
        """Listen and serve; returns the port. On failure nothing is left open."""
        try:
            return await self._start()
        except BaseException:
            await self._close_clients()
            raise

    async def _close_clients(self) -> None:
        await stop_tasks((self._watcher,), STOP_TASK_S, log)
        with contextlib.suppress(Exception):
            await self._watch_redis.aclose()
        if self.link_server is not None:
            await self.link_server.stop(None)
            self.link_server = None
        if self.league is not None:
            await self.league.feed.close()
            self.league.close()
        await self.redis.aclose(close_connection_pool=True)  # our own BlockingConnectionPool
        await self.pop_redis.aclose()

    async def _start(self) -> int:
        await self.redis.ping()
        # Taken ports are refused here in one line, before grpc's C core logs its own bind
        # error or aiohttp its traceback (a last-moment race still fails below, as before).
        ensure_free(self.config.host, self.config.port, "--port")
        if self.config.http_port:
            http_host = self.config.http_host or self.config.host
            ensure_free(http_host, self.config.http_port, "--http-port")
        await self._start_link_server()
        server = grpc.aio.server(
            interceptors=[BotAuthInterceptor(self.redis, self.token_watch)],
            options=server_options(self.config.max_message_bytes),
        )
        server.add_generic_rpc_handlers([BotGatewayServicer(self.hub).handler()])
        self.league = make_league_servicer(
            self.redis,
            self.config.redis_url,
            self.config.admin_token,
            self.pop_redis,
            self.config.limits,
            Path(self.config.hosting_dir) if self.config.hosting_dir else None,
        )
        league_pb2_grpc.add_LeagueServicer_to_server(cast(Any, self.league), server)
        health_pb2_grpc.add_HealthServicer_to_server(self.health, server)
        reflection.enable_server_reflection(
            (*SERVICE_NAMES, health.SERVICE_NAME, reflection.SERVICE_NAME), server
        )
        address = f"{self.config.host}:{self.config.port}"
        try:
            self.port = self._add_port(server, address)
        except RuntimeError:  # grpc's way of saying the address is taken
            await server.stop(None)
            raise OSError(
                f"could not listen on {address}: the address is in use or not this machine's"
            ) from None
        if self.port == 0:
            await server.stop(None)
            raise OSError(f"could not listen on {address}")
        if self.config.hosted_socket:
            self._listen_hosted(server)
        await server.start()
        self.server = server
        for name in ("", *SERVICE_NAMES):
            await self.health.set(name, health_pb2.HealthCheckResponse.SERVING)
        self._sweeper = asyncio.ensure_future(self.hub.sweep_forever())
        # Season start/end notices on the bots' streams (best effort, pub/sub).
        self._notices = asyncio.ensure_future(
            forward_season_notices(self.hub, self.pop_redis, self.redis)
        )
        self._watcher = asyncio.ensure_future(self.token_watch.run(self._watch_redis))
        if self.config.hooks:
            await self._start_hooks()
        if self.config.matches > 0 or self.config.casual_matches > 0:
            self._matches = asyncio.ensure_future(self._host_matches())
        return self.port

    async def _host_matches(self) -> None:
        """The co-hosted match host, until :meth:`stop`; one that fails (Redis away at its
        start...) is started again under a new RQ name, as ``arena worker`` restarts a host
        process."""
        ca = self.config.link_tls_ca
        roots = Path(ca).read_bytes() if ca else None
        generation = 0
        while not self.stop_event.is_set():
            generation += 1
            name = f"{self.referee_id}-matches" + (f".{generation}" if generation > 1 else "")
            assert self.cohost is not None  # checked in __init__
            self.match_host = self.cohost(self.config, name, self.secret, roots, self.hub)
            try:
                await self.match_host.run()
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("co-hosted match host %s failed; starting it again in 1 s", name)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stop_event.wait(), 1.0)

    async def _stop_matches(self) -> None:
        """Stop the co-hosted host as ``arena worker`` stops on SIGTERM: no new matches,
        the running ones finish within ``match_grace_s``, the rest are handed back. Bounded:
        past the grace and a margin for its Redis calls, its task is cancelled."""
        task = self._matches
        if task is None or task.done():
            return
        if self.match_host is not None:
            self.match_host.request_stop()
        await asyncio.wait({task}, timeout=self.config.match_grace_s + 15.0)
        if not task.done():
            log.error("the co-hosted match host did not stop in time; cancelling it")
            task.cancel()
            await asyncio.wait({task}, timeout=5.0)

    async def _start_link_server(self) -> None:
        """The internal port: ``MatchRelay.Link`` for match hosts, authenticated by the
        cluster secret; its address goes into every bot-streams directory entry."""
        problem = self.config.link_plaintext_problem()
        if problem:
            raise ConfigError(problem)
        if self.config.link_insecure and not self.config.link_tls:
            log.warning(
                "--link-insecure: the internal port serves plaintext on %s; match hosts send "
                "the cluster secret in the clear",
                self.config.resolved_link_host(),
            )
        secret = self.config.cluster_secret or cluster.resolve_secret()  # else $ARENA_...
        self.secret = secret
        server = grpc.aio.server(options=cluster.link_server_options())
        server.add_generic_rpc_handlers([MatchRelayServicer(self.hub, secret).handler()])
        address = f"{self.config.resolved_link_host()}:{self.config.link_port}"
        try:
            if self.config.link_tls:
                port = self._add_port(server, address)
            else:
                port = server.add_insecure_port(address)
        except RuntimeError:
            port = 0
        if port == 0:
            await server.stop(None)
            raise OSError(f"could not listen on {address} (the internal port for match hosts)")
        await server.start()
        self.link_server = server
        self.link_port = port
        self.hub.config.link_address = self.config.link_advertise or (
            f"{self.config.resolved_link_host()}:{port}"
        )

    def _listen_hosted(self, server: grpc.aio.Server) -> None:
        """The Unix socket bound into hosted bots' sandboxes (gRPC's ``unix:`` target; the
        bots authenticate with their tokens as on the TCP port), and the meter that
        freezes them between turns and reads their CPU time (referee.hosting.meter)."""
        path = Path(self.config.hosted_socket)
        # Its folder is the data dir's (0700 like every folder there): the sandboxes reach
        # the socket through a bind mount of the file itself, never through this path.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        if server.add_insecure_port(f"unix:{path}") == 0:
            raise OSError(f"could not listen on the hosted bots' socket {path}")
        # Each hosted bot runs as a user id of its own: any of them may connect (and then
        # authenticate with its token, as on the TCP port).
        path.chmod(0o666)
        try:
            hierarchy = open_hierarchy(self.config.hosted_cgroup_parent)
        except CgroupUnavailable as exc:
            log.warning("hosted bots are not frozen or metered here: %s", exc)
            return
        self.meter = CgroupMeter(hierarchy, freeze=self.config.hosted_freeze)
        self.hub.meter = self.meter
        if self.config.hosted_freeze:
            self._tasks.append(asyncio.ensure_future(self.meter.breathe_forever(self.stop_event)))

    def _add_port(self, server: grpc.aio.Server, address: str) -> int:
        if not (self.config.tls_cert or self.config.tls_key):
            port: int = server.add_insecure_port(address)
            return port
        if not (self.config.tls_cert and self.config.tls_key):
            raise ValueError("TLS needs both --tls-cert and --tls-key")
        credentials = grpc.ssl_server_credentials(
            [(Path(self.config.tls_key).read_bytes(), Path(self.config.tls_cert).read_bytes())]
        )
        secure: int = server.add_secure_port(address, credentials)
        return secure

    async def _start_hooks(self) -> None:
        """The referee's other duties: the HTTP server and the season driver. Returns once
        the HTTP port listens; an HTTP port that cannot be served (taken by another
        process...) is an OSError, so the referee never announces itself half up."""
        if self.config.http_port:
            http_host = self.config.http_host or self.config.host
            ready: asyncio.Future[int] = asyncio.get_running_loop().create_future()

            def on_ready(port: int) -> None:
                if not ready.done():
                    ready.set_result(port)

            task = self._run_guarded(
                "referee.web.serve_http",
                web.serve_http(
                    self.config.redis_url,
                    http_host,
                    self.config.http_port,
                    self._http_stop,
                    on_ready=on_ready,
                    readiness=self.readiness,
                    # The web's human seats are SDK clients of this port (plain gRPC only).
                    grpc_target=None
                    if self.config.tls_cert
                    else f"{_loopback(self.config.host)}:{self.port}",
                    human_move_s=self.config.human_move_s,
                    admin_token=self.config.admin_token,
                    casual_play=self.config.casual_play,
                    limits=self.config.limits,
                    hosting_dir=self.config.hosting_dir,
                ),
            )
            waiting: set[asyncio.Future[Any]] = {ready, task}
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            if not ready.done():
                if self.server is not None:
                    await self.server.stop(None)
                raise OSError(
                    f"could not serve HTTP on {http_host}:{self.config.http_port} (the log "
                    "above says why; the port may be another process's): pick a free "
                    "--http-port, or 0 for none"
                )
        self._run_guarded(
            "referee.seasons.driver.run_driver",
            driver.run_driver(self.config.redis_url, self.stop_event),
        )

    async def readiness(self) -> dict[str, str]:
        """``/readyz``'s checks besides Redis: check name -> ``"ok"`` or why not."""
        grpc_host = _loopback(self.config.host)
        link_host = _loopback(self.config.resolved_link_host())
        return {
            "grpc": await _accepts("the bots' gRPC port", self.server, grpc_host, self.port),
            "link": await _accepts(
                "the internal port for match hosts", self.link_server, link_host, self.link_port
            ),
            "draining": "draining: the referee is shutting down and hands its bots to "
            "other referees"
            if self._stopped or self.stop_event.is_set()
            else "ok",
        }

    def _run_guarded(self, name: str, coroutine: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        """Run ``coroutine`` as a task whose failure is logged and never stops the referee."""

        async def guarded() -> None:
            try:
                await coroutine
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("%s failed", name)

        task = asyncio.ensure_future(guarded())
        self._tasks.append(task)
        return task

    async def stop(self) -> None:
        """Drain and stop (idempotent). Every step is bounded, and its duration logged: a
        SIGTERM must end the process even when a stream, a task or a library hangs."""
        if self._stopped:
            return
        self._stopped = True
        self.stop_event.set()
        steps: list[str] = []
        began = step_began = time.monotonic()

        def took(step: str) -> None:
            nonlocal step_began
            now = time.monotonic()
            steps.append(f"{step} {now - step_began:.1f} s")
            step_began = now

        if self._matches is not None:
            await self._stop_matches()  # before the drain: its matches need the bots here
            took("matches")
        await self.health.enter_graceful_shutdown()
        await self.hub.drain(self.config.drain_grace_s)
        took("bots")
        if self.server is not None:
            # Bounded too: grpc's stop waits for every handler to end after the grace, and
            # a handler stuck in a library that swallows its cancellation never would.
            stopping = asyncio.ensure_future(self.server.stop(grace=1.0))
            await stop_tasks((stopping,), 1.0 + STOP_TASK_S, log, cancel=False)
        took("gRPC")
        self._http_stop.set()
        await stop_tasks((self._sweeper, self._notices), STOP_TASK_S, log)
        # The HTTP server and the season driver end on their own once told (stop_event,
        # _http_stop); those that do not are cancelled.
        if await stop_tasks(self._tasks, STOP_TASK_S, log, cancel=False):
            await stop_tasks(self._tasks, STOP_TASK_S, log)
        took("tasks")
        if self.meter is not None:
            self.meter.thaw_all()
        await self._close_clients()
        took("clients")
        log.info(
            "referee %s stopped in %.1f s (%s)",
            self.referee_id,
            time.monotonic() - began,
            ", ".join(steps),
        )

    async def wait(self) -> None:
        await self.stop_event.wait()


def ensure_free(host: str, port: int, flag: str) -> None:
    """Raise ``OSError`` in one line when ``host:port`` cannot be listened on because another
    socket holds it (port 0, or a host that does not resolve, is left to the real bind)."""
    if not port:
        return
    try:
        infos = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except OSError:
        return
    for family, kind, proto, _name, address in infos:
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # TIME_WAIT is free
            try:
                probe.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRINUSE:
                    return  # not this machine's address...: the real bind says so
                raise OSError(
                    f"could not listen on {host}:{port}: the port is in use by another process; "
                    f"pick a free {flag} (0 for any free port)"
                ) from None


async def run_referee(
    config: RefereeConfig, *, cohost: CoHostFactory | None = None, announce: bool = True
) -> None:
    """Serve until SIGTERM/SIGINT, then drain. Prints ``referee listening on HOST:PORT``."""
    referee = RefereeServer(config, cohost)
    port = await referee.start()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, referee.stop_event.set)
    if announce:
        print(f"referee listening on {config.host}:{port}", flush=True)
    log.info(
        "referee %s serving on %s:%d; match hosts reach it at %s",
        referee.referee_id,
        config.host,
        port,
        referee.hub.config.link_address,
    )
    try:
        await referee.wait()
    finally:
        log.info("referee %s draining", referee.referee_id)
        await referee.stop()
        await _end_leftover_tasks()


async def _end_leftover_tasks() -> None:
    """End the tasks a stopped referee still has (streams' handlers, closers) within a
    bound. ``asyncio.run`` would cancel them too, but then await them with no bound: a task
    that swallows its cancellation would keep a SIGTERMed referee alive forever. Such a
    task is logged by name, and the process exits without it."""
    current = asyncio.current_task()
    others = [t for t in asyncio.all_tasks() if t is not current]
    if await stop_tasks(others, STOP_TASK_S, log):
        logging.shutdown()
        os._exit(0)
