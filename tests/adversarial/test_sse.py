"""The web's server-sent events (``/events``) are capped per client and in
total, and every viewer of a season shares that season's one poller.

On the real web server and Redis with ``sse_per_client=2`` and ``sse_streams=3``: a client's
third stream is refused with 429, ``Retry-After`` and the limit's name; another client
(127.0.0.2) still gets the last free stream, then 503 once every stream is taken; the open
streams all receive the live updates, from one poller (Redis connections do not grow with
viewers).
"""

from __future__ import annotations

import contextlib
import http.client
import json

import pytest
import redis

from referee.limits import Limits
from tests.metrics import league_data
from tests.metrics.http_helpers import running_server

pytestmark = pytest.mark.slow

LIMITS = Limits(sse_per_client=2, sse_streams=3, reads_per_s=0)


def _open(port: int, source: str) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=20, source_address=(source, 0))
    conn.request("GET", "/events?season=s1")
    return conn, conn.getresponse()


def _first_live_event(response: http.client.HTTPResponse) -> bool:
    for _ in range(50):
        line = response.readline()
        if line.startswith(b"event: live"):
            return True
    return False


def test_event_streams_are_capped_per_client_and_in_total(
    redis_url: str, redis_client: redis.Redis
) -> None:
    league_data.write_league(redis_client)
    with contextlib.ExitStack() as stack, running_server(redis_url, limits=LIMITS) as port:
        before = len(redis_client.client_list())
        viewers = []
        for _ in range(2):
            conn, response = _open(port, "127.0.0.1")
            stack.callback(conn.close)
            assert response.status == 200
            viewers.append(response)

        conn, third = _open(port, "127.0.0.1")
        stack.callback(conn.close)
        assert third.status == 429, third.status
        assert third.getheader("Retry-After", "").isdigit()
        message = json.loads(third.read())["error"]
        assert "sse_per_client" in message and "127.0.0.1" in message, message

        conn, other = _open(port, "127.0.0.2")
        stack.callback(conn.close)
        assert other.status == 200, "another client gets the last free stream"
        viewers.append(other)

        conn, full = _open(port, "127.0.0.2")
        stack.callback(conn.close)
        assert full.status == 503, full.status
        assert full.getheader("Retry-After", "").isdigit()
        assert "sse_streams" in json.loads(full.read())["error"]

        assert all(_first_live_event(v) for v in viewers)
        during = len(redis_client.client_list())
        assert during - before <= 3, f"3 viewers of one season took {during - before} connections"
