"""Protocol fuzzing and connection floods against a real referee.

One referee (in-process on a thread of its own: real gRPC on loopback, the session's real
Redis) serves every example. ``hypothesis`` generates streams of bot messages over the
proto fields (wrong types as raw bytes, huge values, unknown fields, any interleaving of
Hello, Action and Ping) and a witness bot, connected throughout, must keep answering a
relayed turn request after each: the referee stays up, the other bot is unaffected, and
its request is neither lost nor duplicated. A flood of idle TCP connections and of streams
that never say Hello, bounded in count and time and on loopback only, leaves the witness
served too.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arena.v1 import bot_pb2, bot_pb2_grpc, internal_pb2
from referee.gateway.server import RefereeConfig, RefereeServer
from sample_bots.sdk import channel_options
from tests.gateway.helpers import FakeHost, register, turn_message

UINT32 = st.integers(min_value=0, max_value=2**32 - 1)
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
TEXT = st.one_of(st.text(max_size=40), st.text(min_size=300, max_size=2000))


def _hello() -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda v, bv, games, c: bot_pb2.BotMessage(
            hello=bot_pb2.Hello(
                protocol_version=v, bot_version=bv, games=games, max_concurrent_matches=c
            )
        ).SerializeToString(),
        st.one_of(st.just(1), UINT32),
        TEXT,
        st.lists(TEXT, max_size=5),
        st.one_of(st.integers(0, 8), UINT32),
    )


def _action() -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda m, a, s, act: bot_pb2.BotMessage(
            action=bot_pb2.Action(match_id=m, attempt=a, seq=s, action=act)
        ).SerializeToString(),
        TEXT,
        st.one_of(st.integers(0, 3), UINT32),
        st.one_of(st.integers(0, 50), UINT32),
        TEXT,
    )


def _ping() -> st.SearchStrategy[bytes]:
    return st.builds(
        lambda n: bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=n)).SerializeToString(),
        st.one_of(st.integers(0, 100), INT64.map(lambda x: x & (2**63 - 1))),
    )


UNKNOWN_FIELD = bytes([0xF8, 0x06, 0x2A])  # field 111, varint 42: unknown to BotMessage
MESSAGE = st.one_of(
    _hello(),
    _action(),
    _ping(),
    st.binary(max_size=64),  # wrong types, truncated varints, garbage
    st.tuples(st.one_of(_hello(), _ping(), _action()), st.just(UNKNOWN_FIELD)).map(
        lambda t: t[0] + t[1]
    ),
    st.just(b""),  # an empty BotMessage
    st.just(b"\x0a" + b"\xff" * 10),  # a length that never ends
)


class RefereeThread:
    """A referee on an event loop of its own thread (so sync test code can drive it)."""

    def __init__(self, redis_url: str, **options: Any) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        config = RefereeConfig(redis_url=redis_url, port=0, http_port=0, hooks=False, **options)
        self.server = RefereeServer(config)
        self.port = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(30)

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(60)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)
        self.loop.close()


class Witness:
    """A well-behaved bot on its own stream: answers every turn with its first action."""

    def __init__(self, port: int, token: str) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=channel_options())
        self.outbox: list[Any] = []
        self.cond = threading.Condition()
        self.answered: list[tuple[str, int]] = []
        hello = bot_pb2.BotMessage(
            hello=bot_pb2.Hello(protocol_version=1, games=["sevens"], max_concurrent_matches=2)
        )
        self.outbox.append(hello)
        self.closed = False
        self.call = bot_pb2_grpc.BotGatewayStub(self.channel).Play(
            self._requests(), metadata=(("authorization", f"Bearer {token}"),)
        )
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _requests(self) -> Iterator[Any]:
        while True:
            with self.cond:
                while not self.outbox and not self.closed:
                    self.cond.wait()
                if self.closed:
                    return
                message = self.outbox.pop(0)
            yield message

    def _read(self) -> None:
        with contextlib.suppress(grpc.RpcError):
            for message in self.call:
                if message.WhichOneof("msg") == "turn":
                    turn = message.turn
                    answer = bot_pb2.BotMessage(
                        action=bot_pb2.Action(
                            match_id=turn.match_id,
                            attempt=turn.attempt,
                            seq=turn.seq,
                            action=turn.legal_actions[0],
                        )
                    )
                    with self.cond:
                        self.outbox.append(answer)
                        self.answered.append((turn.match_id, turn.seq))
                        self.cond.notify_all()

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify_all()
        self.call.cancel()
        self.channel.close()


def _served(client: redis.Redis, bot: str, match_id: str, seq: int) -> None:
    """Send a turn for the witness as a match host does; its answer must come back (the
    referee answers each turn exactly once)."""
    kwargs = client.connection_pool.connection_kwargs
    auth = f":{kwargs['password']}@" if kwargs.get("password") else ""
    url = f"redis://{auth}{kwargs.get('host', '127.0.0.1')}:{kwargs.get('port', 6379)}/0"

    async def ask() -> Any:
        host = FakeHost(url)
        try:
            return await host.ask(turn_message(bot, match_id, seq), timeout=20, route_s=20)
        finally:
            await host.close()

    reply = asyncio.run(ask())
    assert reply.kind == internal_pb2.Reply.ANSWER, reply


@pytest.fixture
def arena(redis_url: str, redis_client: redis.Redis) -> Iterator[tuple[RefereeThread, Witness]]:
    referee = RefereeThread(redis_url, hello_timeout_s=1.0, drain_grace_s=0.5)
    witness = Witness(referee.port, register(redis_client, "witness"))
    try:
        yield referee, witness
    finally:
        witness.close()
        referee.close()


def test_fuzzed_streams_leave_the_referee_and_other_bots_alone(
    arena: tuple[RefereeThread, Witness], redis_client: redis.Redis
) -> None:
    referee, witness = arena
    token = register(redis_client, "fuzzer")
    channel = grpc.insecure_channel(f"127.0.0.1:{referee.port}", options=channel_options())
    play = channel.stream_stream("/arena.v1.BotGateway/Play")  # raw bytes both ways
    counter = iter(range(10**6))

    @settings(
        max_examples=25,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(messages=st.lists(MESSAGE, min_size=1, max_size=8))
    def one_stream(messages: list[bytes]) -> None:
        call = play(iter(messages), metadata=(("authorization", f"Bearer {token}"),), timeout=3)
        with contextlib.suppress(grpc.RpcError):
            for _reply in call:
                pass  # whatever the referee answers; the stream ends by itself or by timeout
        n = next(counter)
        _served(redis_client, "witness", f"fz-{n}", n)

    try:
        one_stream()
    finally:
        channel.close()
    assert len(witness.answered) == len(set(witness.answered)) >= 25


def test_a_bounded_flood_of_idle_connections_and_silent_streams(
    arena: tuple[RefereeThread, Witness], redis_client: redis.Redis
) -> None:
    referee, witness = arena
    token = register(redis_client, "flooder")
    sockets = [socket.create_connection(("127.0.0.1", referee.port)) for _ in range(100)]
    channels = [grpc.insecure_channel(f"127.0.0.1:{referee.port}") for _ in range(4)]
    silent = [
        ch.stream_stream("/arena.v1.BotGateway/Play")(
            iter(()), metadata=(("authorization", f"Bearer {token}"),), timeout=10
        )
        for ch in channels
    ]
    try:
        _served(redis_client, "witness", "flood", 1)
        for call in silent:  # no Hello within hello_timeout_s: each is ended, alone
            with contextlib.suppress(grpc.RpcError):
                for _reply in call:
                    pass
            assert call.code() in (grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.OK)
        _served(redis_client, "witness", "flood", 2)
    finally:
        for sock in sockets:
            sock.close()
        for ch in channels:
            ch.close()
    assert sorted(witness.answered) == [("flood", 1), ("flood", 2)]
