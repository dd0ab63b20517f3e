"""Health and readiness of ``arena worker`` over HTTP (``--health-port``).

* ``GET /healthz``: ``200 {"status": "ok"}`` while the pool process runs (liveness: a
  supervisor restarts the process when this stops answering);
* ``GET /readyz``: ``200`` when every worker process is alive and the pool reached Redis
  within the last few rounds, else ``503`` with what is wrong (readiness: Redis out of
  reach, a worker restarting, shutting down).

A small threaded server in the pool's own process: it reads the pool's state and never
touches Redis itself, so a check costs nothing and cannot hang on Redis.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Readiness = Callable[[], tuple[bool, Mapping[str, Any]]]
"""Returns (ready, details): the pool's :meth:`workers.pool.WorkerPool.readiness`."""


class HealthServer:
    """Serves ``/healthz`` and ``/readyz`` on ``host:port`` (0 = any free port) in a
    daemon thread until :meth:`close`."""

    def __init__(self, host: str, port: int, readiness: Readiness) -> None:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path == "/healthz":
                    self._send(200, {"status": "ok"})
                elif self.path == "/readyz":
                    ready, details = readiness()
                    self._send(200 if ready else 503, {"ready": ready, **details})
                else:
                    self._send(404, {"error": f"no page at {self.path}: /healthz or /readyz"})

            def _send(self, status: int, body: Mapping[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # probes every few seconds would flood the log

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="worker-health", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        port: int = self._server.server_address[1]
        return port

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
