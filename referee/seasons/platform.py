"""A whole local platform as child processes: embedded Redis, referees, workers, SDK bots.

``arena demo`` and the end-to-end tests use it. Every child gets ``PR_SET_PDEATHSIG`` (it
dies with this process) and its output goes to a log file in ``<data_dir>/logs``; the
:class:`Platform` stops everything it started, in reverse order, on :meth:`stop` or at
the end of its ``with`` block.
"""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import redis

from referee import bots, keys
from referee.embedded_redis import EmbeddedRedis, free_port, private_dir
from referee.errors import ArenaError
from referee.procs import die_with_parent, stop_process
from referee.records import RECORDS_ENV, store_url

BOT_MODULES = {
    "random": ["-m", "sample_bots.random_bot"],
    "first-legal": ["-m", "sample_bots.first_legal"],
    "hold-sevens": ["-m", "referee.cli.policy_bot", "--policy", "hold-sevens"],
    # deterministic per turn: the same match is played the same way on every run
    "det-random": ["-m", "referee.cli.policy_bot", "--policy", "random", "--per-turn-seed"],
    "det-hold-sevens": [
        "-m",
        "referee.cli.policy_bot",
        "--policy",
        "hold-sevens",
        "--per-turn-seed",
    ],
    # the reference bots of the strength ladder (docs/ladder.md)
    **{
        name: ["-m", "referee.cli.policy_bot", "--policy", name, "--per-turn-seed"]
        for name in ("heuristic", "mc", "ismcts")
    },
}


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    die_with_parent(signal.SIGTERM)


class Platform:
    """Start and stop the pieces of a local platform (all on loopback)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        *,
        redis_url: str | None = None,
        own_records: bool = False,
    ):
        """``own_records``: the children write records under ``data_dir`` whatever
        ``$ARENA_RECORDS`` says (a throwaway demo)."""
        self.data_dir = private_dir(Path(data_dir).resolve())
        self.records_url = (
            store_url(self.data_dir)
            if own_records
            else os.environ.get(RECORDS_ENV) or store_url(self.data_dir)
        )
        self.logs = private_dir(self.data_dir / "logs")
        self._redis: EmbeddedRedis | None = None
        self.redis_url = redis_url or ""
        self.admin_token = secrets.token_urlsafe(18)
        self.cluster_secret = secrets.token_urlsafe(32)  # referee <-> match hosts
        self.port = 0
        self.http_port = 0
        self.referee: subprocess.Popen[bytes] | None = None
        self.workers: list[subprocess.Popen[bytes]] = []
        self.bots: dict[str, subprocess.Popen[bytes]] = {}
        self.tokens: dict[str, str] = {}

    # --- pieces -------------------------------------------------------------------------

    def start_redis(self) -> str:
        if not self.redis_url:
            self._redis = EmbeddedRedis(self.data_dir / "redis")
            self.redis_url = self._redis.start()
        return self.redis_url

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.redis_url, decode_responses=True)

    def _spawn(
        self, name: str, argv: list[str], env_secrets: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``python ARGV``; its Redis URL and tokens (``secrets``) go in its
        environment (``env_secrets``), never its command line (``ps`` shows it to every user)."""
        log = open(self.logs / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        try:
            return subprocess.Popen(
                [sys.executable, *argv],
                env={
                    **os.environ,
                    "ARENA_REDIS_URL": self.redis_url,
                    RECORDS_ENV: self.records_url,
                    **(env_secrets or {}),
                },
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                preexec_fn=_die_with_parent,
                cwd=str(Path(__file__).resolve().parents[2]),
            )
        finally:
            log.close()

    def start_referee(
        self, timeout: float = 30.0, matches: int = 0, extra: Sequence[str] = ()
    ) -> None:
        """Start (or restart, on the same ports) the referee and wait until it listens;
        with ``matches`` it also runs that many matches at once itself (co-hosted,
        ``arena referee --matches``; docs/workers.md); ``extra``: more of its flags."""
        if not self.port:
            self.port, self.http_port = free_port(), free_port()
        log_path = self.logs / "referee.log"
        offset = log_path.stat().st_size if log_path.exists() else 0
        self.referee = self._spawn(
            "referee",
            [
                "-m",
                "referee.cli.main",
                "referee",
                "--port",
                str(self.port),
                "--http-port",
                str(self.http_port),
                *(("--matches", str(matches), "--stale-s", "3") if matches else ()),
                *extra,
            ],
            {"ARENA_ADMIN_TOKEN": self.admin_token, "ARENA_CLUSTER_SECRET": self.cluster_secret},
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with open(log_path, "rb") as f:
                f.seek(offset)
                if b"listening on" in f.read():
                    return
            if self.referee.poll() is not None:
                break
            time.sleep(0.05)
        tail = log_path.read_text(errors="replace")[-1500:]
        raise ArenaError(f"the referee did not start listening on port {self.port}:\n{tail}")

    def stop_referee(self, sig: int = signal.SIGTERM) -> None:
        if self.referee is not None:
            stop_process(self.referee, sig=sig)
            self.referee = None

    def start_workers(self, processes: int = 1, per_process: int = 2) -> None:
        """``processes`` times ``arena worker -n per_process`` (each host process runs up to
        16 matches at once)."""
        for _ in range(processes):
            index = len(self.workers)
            self.workers.append(
                self._spawn(
                    f"worker{index}",
                    [
                        "-m",
                        "referee.cli.main",
                        "worker",
                        "-n",
                        str(per_process),
                        "--matches",
                        "16",
                        "--stale-s",
                        "3",
                        "--log-level",
                        "WARNING",
                    ],
                    {"ARENA_CLUSTER_SECRET": self.cluster_secret},
                )
            )

    def register_bots(self, names: list[str], owner: str = "") -> None:
        with self.client() as conn:
            for name in names:
                if name in self.tokens:
                    continue
                if conn.sismember(keys.BOTS, name):
                    self.tokens[name] = bots.rotate_token(conn, name)
                else:
                    self.tokens[name] = bots.register(conn, name, owner or name)

    def start_bot(self, name: str, kind: str, seed: int | None = None) -> None:
        argv = [*BOT_MODULES[kind], "--server", f"127.0.0.1:{self.port}"]
        argv += ["--name", name, "--log-level", "WARNING"]
        if seed is not None and kind != "first-legal":  # the only one without randomness
            argv += ["--seed", str(seed)]
        self.bots[name] = self._spawn(f"bot-{name}", argv, {"ARENA_TOKEN": self.tokens[name]})

    def wait_bots_connected(self, timeout: float = 30.0) -> None:
        """Wait until every started bot has an open stream (the gateway records them)."""
        deadline = time.monotonic() + timeout
        with self.client() as conn:
            while time.monotonic() < deadline:
                missing = [n for n in self.bots if not conn.hlen(keys.bot_streams(n))]
                if not missing:
                    return
                dead = [n for n, p in self.bots.items() if p.poll() is not None]
                if dead:
                    raise ArenaError(f"bot process(es) exited: {', '.join(dead)} (see {self.logs})")
                time.sleep(0.1)
        raise ArenaError(f"bots not connected after {timeout}s: {', '.join(missing)}")

    # --- lifecycle ------------------------------------------------------------------------

    def stop(self) -> None:
        for proc in self.bots.values():
            stop_process(proc)
        self.bots.clear()
        for proc in self.workers:
            stop_process(proc)
        self.workers.clear()
        self.stop_referee()
        if self._redis is not None:
            self._redis.stop()
            self._redis = None

    def __enter__(self) -> Platform:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
