"""Keepalive between bots and the referee (docs/PROTOCOL.md section 7): the SDK's pings,
as often as it allows them, are accepted by the referee; faster ones are refused with
``too_many_pings``; and an SDK bot notices a referee that went silent (no FIN, no RST)
within about its keepalive interval plus timeout, then plays on at the next referee."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time

import h2.errors
import h2.exceptions
import pytest
import redis

from arena.v1 import bot_pb2
from arena_sdk import sdk
from referee import keys
from referee.gateway import server
from referee.procs import stop_process
from tests.adversarial.h2client import SlowReader
from tests.adversarial.proxy import FreezableProxy
from tests.gateway.helpers import RawBot, register, running_referee


def test_the_sdk_pings_faster_than_the_referee_checks_with_room_to_spare() -> None:
    assert sdk.MIN_KEEPALIVE_TIME_MS >= 2 * server.MIN_CLIENT_PING_INTERVAL_MS
    assert sdk.KEEPALIVE_TIME_MS >= sdk.MIN_KEEPALIVE_TIME_MS
    options = dict(server.server_options())
    assert options["grpc.http2.min_ping_interval_without_data_ms"] == (
        server.MIN_CLIENT_PING_INTERVAL_MS
    )
    assert options["grpc.keepalive_permit_without_calls"] == 1
    with pytest.raises(ValueError, match="more often than the referee accepts"):
        sdk.channel_options(sdk.MIN_KEEPALIVE_TIME_MS - 1)
    with pytest.raises(ValueError, match="at least"):
        sdk.channel_options(sdk.MIN_KEEPALIVE_TIME_MS, sdk.MIN_KEEPALIVE_TIMEOUT_MS - 1)


def test_an_idle_stream_pinged_at_the_sdks_minimum_stays_open(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")
    fastest = sdk.channel_options(sdk.MIN_KEEPALIVE_TIME_MS, sdk.MIN_KEEPALIVE_TIMEOUT_MS)

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, options=fastest)
            welcome = await bot.connect()
            assert welcome.keepalive_time_ms == sdk.KEEPALIVE_TIME_MS
            # nothing but pings for 4+ intervals: more than max_ping_strikes (2) would be
            # counted if the referee found them too frequent, and it would send GOAWAY
            # (a read stays pending meanwhile: cancelling one would cancel the call)
            reading = asyncio.ensure_future(bot.call.read())
            await asyncio.sleep(4.5 * sdk.MIN_KEEPALIVE_TIME_MS / 1000)
            assert not reading.done(), reading
            await bot.send(bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=7)))
            answer = await asyncio.wait_for(reading, 10)
            assert answer.pong.nonce == 7, answer  # the same stream, alive
            await bot.close()

    asyncio.run(scenario())


def test_pings_faster_than_the_referee_accepts_end_the_connection(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """The control of the test above: the referee's limit is enforced, so the pings there
    really were frequent enough to be judged. gRPC's own clients never ping more than once
    a second (a floor in gRPC core), so a raw HTTP/2 client pings 4 times as often as the
    referee accepts: GOAWAY ENHANCE_YOUR_CALM too_many_pings."""
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            client = SlowReader("127.0.0.1", ref.port, token, window=65_535)
            try:
                for _ in range(20):
                    if client.ended.is_set():
                        break
                    with contextlib.suppress(h2.exceptions.ProtocolError, OSError):
                        client.ping()  # fails once the referee closed the connection
                    await asyncio.sleep(server.MIN_CLIENT_PING_INTERVAL_MS / 4000)
                await asyncio.to_thread(client.ended.wait, 10)
                goaway = client.goaway
                assert goaway is not None, "the referee took pings 4 times too frequent"
                assert goaway.error_code == h2.errors.ErrorCodes.ENHANCE_YOUR_CALM
                assert goaway.additional_data == b"too_many_pings"
            finally:
                await asyncio.to_thread(client.close)

    asyncio.run(scenario())


@pytest.mark.slow
def test_an_sdk_bot_leaves_a_silent_referee_within_its_keepalive(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Referee A's connection freezes (a proxy that forwards nothing and closes nothing:
    a host cut off); the bot (``sample_bots.first_legal`` with ``--keepalive-ms 2000
    --keepalive-timeout-ms 1000``), given A (through the proxy) and B, is on B within a
    bound tied to those settings (interval + timeout, times 3 for scheduling on a loaded
    machine, plus 5 s to reconnect); the old keepalive (30 s + 10 s) could not meet it."""
    token = register(redis_client, "alice")
    keepalive_ms, timeout_ms = 2_000, 1_000
    bound_s = 3 * (keepalive_ms + timeout_ms) / 1000 + 5

    def referees() -> set[str]:
        entries = redis_client.hvals(keys.bot_streams("alice"))
        return {json.loads(e)["referee"] for e in entries}

    async def scenario() -> None:
        async with (
            running_referee(redis_url, referee_id="ref-a") as a,
            running_referee(redis_url, referee_id="ref-b") as b,
        ):
            proxy = FreezableProxy("127.0.0.1", a.port)
            servers = f"127.0.0.1:{proxy.port},127.0.0.1:{b.port}"
            argv = [sys.executable, "-m", "sample_bots.first_legal", "--server", servers,
                    "--keepalive-ms", str(keepalive_ms), "--keepalive-timeout-ms",
                    str(timeout_ms), "--name", "alice"]  # fmt: skip
            env = {**os.environ, "ARENA_TOKEN": token}
            bot = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            try:
                deadline = time.monotonic() + 60
                while referees() != {"ref-a"}:
                    assert time.monotonic() < deadline and bot.poll() is None, referees()
                    await asyncio.sleep(0.05)
                proxy.freeze()
                frozen = time.monotonic()
                while "ref-b" not in referees():
                    if time.monotonic() - frozen > bound_s:
                        stop_process(bot, 10)
                        output = bot.stdout.read().decode() if bot.stdout else ""
                        raise AssertionError(
                            f"the bot was not on referee B {bound_s:g} s after A went "
                            f"silent; its output:\n{output[-3000:]}"
                        )
                    await asyncio.sleep(0.05)
            finally:
                proxy.close()
                stop_process(bot, 10)

    asyncio.run(scenario())
