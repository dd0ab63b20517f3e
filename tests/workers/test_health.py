"""``arena worker --health-port``: /healthz while the pool runs, /readyz when its worker
processes are alive and it reaches Redis (real pool, real Redis, real HTTP)."""

from __future__ import annotations

import json
import os
import threading
import time
import urllib.error
import urllib.request
from typing import Any

from workers.health import HealthServer
from workers.pool import WorkerPool


def get(port: int, path: str) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def wait_status(port: int, path: str, status: int, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        got, body = get(port, path)
        if got == status:
            return body
        assert time.monotonic() < deadline, (got, body)
        time.sleep(0.1)


def test_ready_once_the_workers_run_and_reach_redis_not_while_stopping(redis_url: str) -> None:
    pool = WorkerPool(
        redis_url, 1, secret=os.environ["ARENA_CLUSTER_SECRET"], interval_s=0.2, level="WARNING"
    )
    server = HealthServer("127.0.0.1", 0, pool.readiness)
    runner = threading.Thread(target=pool.run, daemon=True)
    try:
        assert get(server.port, "/healthz") == (200, {"status": "ok"})
        status, body = get(server.port, "/readyz")
        assert status == 503 and "Redis not reached yet" in body["problems"], body
        runner.start()
        body = wait_status(server.port, "/readyz", 200)
        assert body == {"ready": True, "workers_alive": 1, "workers": 1, "problems": []}
        pool.stop()
        body = wait_status(server.port, "/readyz", 503)
        assert "shutting down" in body["problems"]
        assert get(server.port, "/nope")[0] == 404
    finally:
        pool.stop()
        runner.join(30)
        server.close()
    assert not runner.is_alive()
