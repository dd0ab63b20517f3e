"""Anonymous reads are rate-limited per client, and finished replays are
rendered once.

An anonymous ``GetReplay`` loop took the referee to 97% CPU and a season from 108 to 23
matches per 20 s. Now every anonymous read (League API reads, web pages, replays) pays a
token of its client's bucket: on a real referee process started with
``--limit reads_per_s=2 --limit reads_burst=5`` a tight loop gets RESOURCE_EXHAUSTED (gRPC)
and 429 with ``Retry-After`` (HTTP) saying which limit and when to come back, and is let in
again once its bucket refills. A finished match's replay never changes: reading it again
does not render it again (on the League API and the web).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import urllib.error
import urllib.request
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import league_pb2, league_pb2_grpc
from referee import keys
from referee.embedded_redis import EmbeddedRedis, free_port
from referee.limits import Limits
from referee.procs import start_referee, stop_process
from tests.gateway.helpers import running_referee
from tests.metrics.http_helpers import get, running_server
from tests.web.test_replay_frames import played_record

RATE = 2
BURST = 5
MATCH = "m-sevens"


def _store_record(conn: redis.Redis) -> None:
    conn.set(keys.match_record(MATCH), json.dumps(played_record("sevens", "fan-tan", 4, 7)))


def _http(port: int, path: str) -> tuple[int, dict[str, str], str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as reply:
            return reply.status, dict(reply.headers), reply.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read().decode()


@pytest.mark.slow
def test_a_read_loop_is_refused_with_when_to_retry_then_let_in_again(
    embedded_redis: EmbeddedRedis,
) -> None:
    conn = redis.Redis.from_url(embedded_redis.url, decode_responses=True)
    conn.flushall()
    _store_record(conn)
    http_port = free_port()
    with contextlib.ExitStack() as stack:
        stack.callback(conn.close)
        referee, server = start_referee(
            embedded_redis.url,
            "--http-port",
            str(http_port),
            "--limit",
            f"reads_per_s={RATE}",
            "--limit",
            f"reads_burst={BURST}",
        )
        stack.callback(stop_process, referee, 15)
        channel = grpc.insecure_channel(server)
        stack.callback(channel.close)
        stub = league_pb2_grpc.LeagueStub(channel)

        served, refused = 0, []
        for _ in range(20):
            try:
                stub.GetReplay(league_pb2.MatchRef(match_id=MATCH), timeout=30)
                served += 1
            except grpc.RpcError as exc:
                refused.append(exc)
        assert refused, f"20 GetReplay calls in a row were all served ({served})"
        assert served <= BURST + 2, served
        assert {e.code() for e in refused} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        details = refused[0].details()
        assert "reads_per_s" in details and re.search(r"try again in \d+ s", details), details
        time.sleep(1.5 / RATE)  # the bucket refills
        assert stub.GetReplay(league_pb2.MatchRef(match_id=MATCH), timeout=30).text

        # the web: its own buckets, the same limits
        answers = [_http(http_port, f"/replay/{MATCH}.txt") for _ in range(20)]
        codes = [a[0] for a in answers]
        assert 429 in codes and codes.count(200) <= BURST + 2, codes
        _, headers, body = next(a for a in answers if a[0] == 429)
        assert headers.get("Retry-After", "").isdigit(), headers
        assert "reads_per_s" in json.loads(body)["error"]
        # probes are never rate-limited
        assert all(_http(http_port, "/healthz")[0] == 200 for _ in range(10))
        time.sleep(1.5 / RATE)
        assert _http(http_port, f"/replay/{MATCH}.txt")[0] == 200


def test_a_finished_replay_is_rendered_once(
    redis_url: str, redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    import referee.match.replay
    import referee.web.replay

    _store_record(redis_client)
    renders: list[str] = []

    def counting(original: Any) -> Any:
        def render(record: Any, *args: Any, **kwargs: Any) -> Any:
            renders.append(original.__name__)
            return original(record, *args, **kwargs)

        return render

    monkeypatch.setattr(
        referee.match.replay, "render_replay", counting(referee.match.replay.render_replay)
    )
    web_replay = referee.web.replay
    monkeypatch.setattr("referee.web.pages.replay_text", counting(web_replay.replay_text))
    monkeypatch.setattr("referee.web.pages.replay_data", counting(web_replay.replay_data))
    unlimited = Limits(reads_per_s=0)

    async def league() -> list[str]:
        async with contextlib.AsyncExitStack() as stack:
            referee = await stack.enter_async_context(running_referee(redis_url, limits=unlimited))
            channel = grpc.aio.insecure_channel(f"127.0.0.1:{referee.port}")
            stack.push_async_callback(channel.close)
            stub = league_pb2_grpc.LeagueStub(channel)
            return [
                (await stub.GetReplay(league_pb2.MatchRef(match_id=MATCH))).text for _ in range(10)
            ]

    texts = asyncio.run(league())
    assert len(set(texts)) == 1 and MATCH in texts[0]
    assert renders == ["render_replay"], renders

    renders.clear()
    with running_server(redis_url, limits=unlimited) as port:
        for path in (f"/replay/{MATCH}.txt", f"/api/replay/{MATCH}"):
            bodies = {get(port, path).body for _ in range(10)}
            assert len(bodies) == 1
    assert renders.count("replay_text") == 1 and renders.count("replay_data") == 1, renders
