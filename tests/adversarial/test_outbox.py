"""A bot session's outbox is bounded.

A raw HTTP/2 bot (``h2``) opens its flow-control window by a few bytes a second, enough
for every write to complete (the write bound never trips), and asks for pongs (five a
second) faster than that. Without a bound the referee queues the rest for ever (+134 MB
in 60 s was measured); with ``--limit outbox_bytes=...`` its stream alone ends with
RESOURCE_EXHAUSTED saying why, while an honest bot on the same referee keeps its stream.
"""

from __future__ import annotations

import contextlib
import time

import pytest
import redis

from arena.v1 import bot_pb2
from referee import bots
from referee.embedded_redis import EmbeddedRedis
from referee.procs import start_referee, stop_process
from sample_bots.sdk import Bot, Turn
from tests.adversarial.h2client import SlowReader
from tests.platform_fixtures import bots_on

pytestmark = pytest.mark.slow

OUTBOX_BYTES = 200
PINGS_PER_S = 5  # an SDK pings every 5 s: this is a modest flood, not a junk storm
GRANT_PER_S = 15  # about one pong and a half a second get written (10 bytes each)
RESOURCE_EXHAUSTED = "8"


class FirstLegal(Bot):
    choose_inline = True

    def choose(self, turn: Turn) -> str:
        return turn.legal_actions[0]


def _connected(conn: redis.Redis, name: str) -> int:
    return next(b.connected_streams for b in bots.list_bots(conn) if b.name == name)


def test_a_reader_slower_than_its_requests_loses_its_stream_alone(
    embedded_redis: EmbeddedRedis,
) -> None:
    conn = redis.Redis.from_url(embedded_redis.url, decode_responses=True)
    conn.flushall()
    lines: list[str] = []
    with contextlib.ExitStack() as stack:
        stack.callback(conn.close)
        referee, server = start_referee(
            embedded_redis.url,
            "--limit",
            f"outbox_bytes={OUTBOX_BYTES}",
            on_line=lines.append,
        )
        stack.callback(stop_process, referee, 15)
        stack.enter_context(bots_on(conn, server, {"honest": FirstLegal()}))
        host, port = server.rsplit(":", 1)
        trickle = SlowReader(host, int(port), bots.register(conn, "trickle"), window=200)
        stack.callback(trickle.close)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
            _connected(conn, "honest") and _connected(conn, "trickle")
        ):
            time.sleep(0.1)
        assert _connected(conn, "honest") and _connected(conn, "trickle")

        began = time.monotonic()
        nonce = 0
        granted_at = began
        while not trickle.ended.is_set() and time.monotonic() - began < 90:
            nonce += 1
            trickle.send(bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=nonce)))
            if time.monotonic() - granted_at >= 1.0:
                trickle.grant(GRANT_PER_S)
                granted_at = time.monotonic()
            time.sleep(1.0 / PINGS_PER_S)
        for _ in range(40):  # the last pong and the trailers, through the trickle
            if trickle.ended.wait(0.25):
                break
            trickle.grant(GRANT_PER_S)

        tail = "\n".join(lines[-20:])
        assert trickle.ended.is_set(), (
            f"{nonce} pings in {time.monotonic() - began:.0f} s, {trickle.received} bytes "
            f"read: the referee still queues for the trickle reader:\n{tail}"
        )
        ending = [line for line in lines if "ending the stream of trickle" in line]
        assert ending and "the most one stream may have queued" in ending[0], tail
        assert trickle.grpc_status == RESOURCE_EXHAUSTED, trickle.grpc_status
        # the honest bot on the same referee kept its stream
        assert _connected(conn, "honest") == 1
        assert not any("bot honest disconnected" in line for line in lines), tail
