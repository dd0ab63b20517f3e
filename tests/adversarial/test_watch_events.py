"""Anonymous ``WatchEvents`` streams are bounded per client and share one
Redis subscription.

Each stream used to hold a Redis connection of its own, with no cap: 5,500 from one TCP
connection in two minutes, against Redis' ``maxclients`` of 10,000. On a real referee
process started with ``--limit watch_streams_per_client=3``, three streams of one client
cost at most one Redis connection together and all receive every event; the fourth is
refused with RESOURCE_EXHAUSTED naming the limit; a closed stream frees its slot.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import league_pb2, league_pb2_grpc
from referee import keys
from referee.embedded_redis import EmbeddedRedis
from referee.procs import start_referee, stop_process

pytestmark = pytest.mark.slow

PER_CLIENT = 3


def _watch(stub: Any, into: list[Any]) -> Any:
    call = stub.WatchEvents(league_pb2.WatchEventsRequest(season="s1"))

    def read() -> None:
        with contextlib.suppress(grpc.RpcError):  # cancelled at the end
            for event in call:
                into.append(event)

    threading.Thread(target=read, daemon=True).start()
    return call


def _clients(conn: redis.Redis) -> int:
    return len(conn.client_list())


def test_watch_streams_share_one_subscription_and_are_capped_per_client(
    embedded_redis: EmbeddedRedis,
) -> None:
    conn = redis.Redis.from_url(embedded_redis.url, decode_responses=True)
    conn.flushall()
    with contextlib.ExitStack() as stack:
        stack.callback(conn.close)
        referee, server = start_referee(
            embedded_redis.url, "--limit", f"watch_streams_per_client={PER_CLIENT}"
        )
        stack.callback(stop_process, referee, 15)
        channel = grpc.insecure_channel(server)
        stack.callback(channel.close)
        stub = league_pb2_grpc.LeagueStub(channel)
        stub.ListSeasons(league_pb2.ListSeasonsRequest(), timeout=10)  # the channel is up
        time.sleep(1.0)
        before = _clients(conn)

        received: list[list[Any]] = [[] for _ in range(PER_CLIENT)]
        calls = [_watch(stub, into) for into in received]
        for call in calls:
            stack.callback(call.cancel)
        seq = 0
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not all(received):
            seq += 1  # pub/sub keeps nothing: publish until every stream has subscribed
            event = {"kind": "match_committed", "season": "s1", "match_id": f"m{seq}"}
            conn.publish(keys.EVENTS_CHANNEL, json.dumps(event))
            time.sleep(0.2)
        assert all(received), f"events reached {[len(r) for r in received]} of the streams"
        during = _clients(conn)
        assert during - before <= 1, (
            f"{PER_CLIENT} WatchEvents streams took {during - before} Redis connections: "
            "they must share one subscription"
        )

        # the next stream of the same client is refused, saying which limit
        extra = stub.WatchEvents(league_pb2.WatchEventsRequest(season="s1"))
        with pytest.raises(grpc.RpcError) as refused:
            next(extra)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "watch_streams_per_client" in refused.value.details()

        # a stream that ends frees its slot
        calls[0].cancel()
        deadline = time.monotonic() + 10
        opened: list[Any] = []
        while time.monotonic() < deadline:
            again = _watch(stub, opened)
            stack.callback(again.cancel)
            time.sleep(0.5)
            if not again.done():  # a refused one ends at once
                break
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not opened:
            conn.publish(keys.EVENTS_CHANNEL, json.dumps({"kind": "x", "season": "s1"}))
            time.sleep(0.2)
        assert opened, "a slot freed by a cancelled stream was not given to a new one"
