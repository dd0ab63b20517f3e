"""Page traffic never starves ``/healthz`` and ``/readyz``.

About 150 concurrent page requests used to take every connection of the web's Redis pool,
so the health probes answered 503 ("Too many connections") and a load balancer took a
healthy referee out. On the real web server and Redis, with ``page_redis_connections=8``
and ``page_wait_s=1``, a burst of 150 page requests from one client leaves every probe at
200; each page is served, or refused with 503, ``Retry-After`` and a message saying the
pages are busy, never a pool error.
"""

from __future__ import annotations

import http.client
import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis

from referee.limits import Limits
from tests.metrics import league_data
from tests.metrics.http_helpers import Reply, get, running_server

pytestmark = pytest.mark.slow

BURST = 150
LIMITS = Limits(page_redis_connections=8, page_wait_s=1.0, reads_per_s=0)


def _page(port: int, start: threading.Barrier) -> Reply:
    start.wait(30)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        return get(port, "/", conn=conn)
    finally:
        conn.close()


def test_a_burst_of_pages_leaves_health_and_readiness_answering(
    redis_url: str, redis_client: redis.Redis
) -> None:
    league_data.write_league(redis_client)
    with running_server(redis_url, limits=LIMITS) as port:
        assert get(port, "/").status == 200
        probes: list[tuple[str, int, str]] = []
        done = threading.Event()

        def probe() -> None:
            while not done.is_set():
                for path in ("/healthz", "/readyz"):
                    reply = get(port, path)
                    probes.append((path, reply.status, reply.text))
                done.wait(0.05)

        prober = threading.Thread(target=probe, daemon=True)
        prober.start()
        start = threading.Barrier(BURST)
        with ThreadPoolExecutor(BURST) as pool:
            replies = list(pool.map(lambda _: _page(port, start), range(BURST)))
        done.set()
        prober.join(30)

    failed_probes = [p for p in probes if p[1] != 200]
    assert probes and not failed_probes, failed_probes[:5]
    statuses = sorted({r.status for r in replies})
    assert set(statuses) <= {200, 503}, statuses
    for reply in replies:
        if reply.status == 503:
            assert reply.headers.get("retry-after", "").isdigit(), reply.headers
            message = json.loads(reply.body)["error"]
            assert "the pages are busy" in message and "page_wait_s" in message, message
    print(f"{BURST} pages: {sum(r.status == 200 for r in replies)} served, {len(probes)} probes")
