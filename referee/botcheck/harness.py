"""The scratch platform of ``arena bot check -- COMMAND``.

It starts everything the check needs and owns every process it starts: an embedded Redis
in a temporary folder, a bot registered there, a referee process (``arena referee``) on a
free loopback port, and the bot: COMMAND behind the stdio bridge (``arena bridge``), or,
with ``grpc=True``, COMMAND itself as a gRPC bot given ``--server``/``--token`` (or the
``{server}``/``{token}`` placeholders in its arguments). :meth:`ScratchPlatform.close`
stops them all, in reverse order.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import redis

from referee import cluster, keys
from referee.embedded_redis import EmbeddedRedis, free_port
from referee.procs import arena_command, stop_process

BOT_NAME = "bot-under-check"
READY_TIMEOUT_S = 30.0


class HarnessError(RuntimeError):
    """The scratch platform could not be set up (says which part and why)."""


def _pump(stream: IO[str], sink: Callable[[str], None], lines: list[str]) -> None:
    with contextlib.suppress(OSError, ValueError):
        for line in stream:
            text = line.rstrip("\n")
            lines.append(text)
            sink(text)


class _Child:
    """A child process whose output lines are kept and passed to a sink."""

    def __init__(self, argv: Sequence[str], sink: Callable[[str], None], env: dict[str, str]):
        self.lines: list[str] = []
        self.proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        self.thread = threading.Thread(
            target=_pump, args=(self.proc.stdout, sink, self.lines), daemon=True
        )
        self.thread.start()

    def wait_for(self, text: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return True
            if self.proc.poll() is not None:
                self.thread.join(timeout=1.0)
                return any(text in line for line in self.lines)
            time.sleep(0.02)
        return False

    def stop(self, timeout_s: float = 5.0) -> None:
        stop_process(self.proc, timeout_s)
        self.thread.join(timeout=2.0)


class ScratchPlatform:
    """Embedded Redis + referee + the bot under check; use as a context manager."""

    def __init__(
        self,
        command: Sequence[str],
        *,
        grpc: bool = False,
        games: Sequence[str] = (),
        log: Callable[[str], None] | None = None,
        workdir: str | os.PathLike[str] | None = None,
    ) -> None:
        if not command:
            raise HarnessError("no bot command: give it after `--`, e.g. -- ./mybot")
        self.command = list(command)
        self.grpc = grpc
        self.games = list(games)
        self.log = log or (lambda text: None)
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="arena-check-")
            workdir = self._tmp.name
        self.workdir = Path(workdir)
        self.report_file = self.workdir / "bridge-incidents.jsonl"
        self.redis: EmbeddedRedis | None = None
        self.client: redis.Redis | None = None
        self.port = 0
        self.token = ""
        self._admin = secrets.token_hex(8)
        self._referee: _Child | None = None
        self._bot: _Child | None = None
        self._incidents_read = 0
        # The scratch referee and the probe (in this process) share the cluster secret.
        os.environ.setdefault(cluster.SECRET_ENV, secrets.token_urlsafe(32))
        self._env = dict(os.environ)

    @property
    def server(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def redis_url(self) -> str:
        if self.redis is None:
            raise HarnessError("the scratch platform is not started")
        return self.redis.url

    def __enter__(self) -> ScratchPlatform:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def start(self) -> None:
        from referee import bots  # the registry (gateway engineer)

        self.redis = EmbeddedRedis(self.workdir / "redis")
        self.redis.start()
        self.client = redis.Redis.from_url(self.redis.url, decode_responses=True)
        self.token = bots.register(self.client, BOT_NAME, description="arena bot check")
        self.port = free_port()
        self.start_referee()
        self.start_bot()

    # -- referee ----------------------------------------------------------------------------
    def start_referee(self) -> None:
        argv = arena_command("referee", "--port", str(self.port), "--http-port", "0")
        # the Redis URL (with its password) and the admin token: environment, not argv
        env = {**self._env, "ARENA_REDIS_URL": self.redis_url, "ARENA_ADMIN_TOKEN": self._admin}
        self._referee = _Child(argv, lambda text: self.log(f"[referee] {text}"), env)
        if not self._referee.wait_for("listening on", READY_TIMEOUT_S):
            tail = "\n".join(self._referee.lines[-10:])
            self._referee.stop()
            raise HarnessError(f"the scratch referee did not start on {self.server}:\n{tail}")

    def stop_referee(self, *, crash: bool = False) -> None:
        if self._referee is not None:
            if crash:
                self._referee.proc.kill()
            self._referee.stop()
            self._referee = None

    def restart_referee(self) -> None:
        """Kill the referee (every bot stream breaks at once, as in a crash) and start a new
        one on the same port: the bot must notice and connect again."""
        self.stop_referee(crash=True)
        self.start_referee()

    # -- the bot ----------------------------------------------------------------------------
    def bot_argv(self) -> list[str]:
        if not self.grpc:
            argv = arena_command(
                "bridge",
                "--server",
                self.server,
                "--report-file",
                str(self.report_file),
            )
            if self.games:
                argv += ["--games", ",".join(self.games)]
            return [*argv, "--", *self.command]
        filled = [
            part.replace("{server}", self.server).replace("{token}", self.token)
            for part in self.command
        ]
        if filled == self.command:
            filled += ["--server", self.server, "--token", self.token]
        return filled

    def start_bot(self) -> None:
        env = {**self._env, "ARENA_SERVER": self.server, "ARENA_TOKEN": self.token}
        self._bot = _Child(self.bot_argv(), lambda text: self.log(f"[bot] {text}"), env)

    def bot_output(self) -> list[str]:
        return list(self._bot.lines) if self._bot is not None else []

    def wait_connected(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """True once the bot holds a stream on the referee."""
        assert self.client is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.client.hlen(keys.bot_streams(BOT_NAME)) > 0:
                return True
            if self._bot is not None and self._bot.proc.poll() is not None:
                return False
            time.sleep(0.05)
        return False

    def incidents(self) -> list[dict[str, Any]]:
        """Bridge incidents reported since the last call."""
        if not self.report_file.exists():
            return []
        lines = self.report_file.read_text(encoding="utf-8").splitlines()
        new, self._incidents_read = lines[self._incidents_read :], len(lines)
        out: list[dict[str, Any]] = []
        for line in new:
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out

    def close(self) -> None:
        if self._bot is not None:
            self._bot.stop()
            self._bot = None
        self.stop_referee()
        if self.client is not None:
            self.client.close()
            self.client = None
        if self.redis is not None:
            self.redis.stop()
            self.redis = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
