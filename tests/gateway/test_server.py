"""The referee process: health, reflection, TLS, drain on shutdown, the League API."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import pytest
import redis
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from arena.v1 import internal_pb2, league_pb2, league_pb2_grpc
from referee import bots, cluster, keys
from referee.gateway.server import RefereeConfig, RefereeServer
from sample_bots.first_legal import FirstLegalBot
from sample_bots.sdk import BotRefused
from tests.gateway.helpers import (
    FakeHost,
    LeakChecker,
    RawBot,
    action,
    register,
    running_referee,
)


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


@contextlib.asynccontextmanager
async def referee_channel(redis_url: str, **options: Any) -> AsyncIterator[tuple[Any, Any]]:
    """A running referee and a plain channel to it."""
    async with (
        running_referee(redis_url, **options) as ref,
        grpc.aio.insecure_channel(f"127.0.0.1:{ref.port}") as channel,
    ):
        yield ref, channel


def test_health_and_reflection(redis_url: str) -> None:
    async def scenario() -> None:
        async with referee_channel(redis_url) as (_ref, channel):
            health = health_pb2_grpc.HealthStub(channel)
            for service in ("", "arena.v1.BotGateway", "arena.v1.League"):
                reply = await health.Check(health_pb2.HealthCheckRequest(service=service))
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
            stub = reflection_pb2_grpc.ServerReflectionStub(channel)
            request = reflection_pb2.ServerReflectionRequest(list_services="")
            names: set[str] = set()
            async for response in stub.ServerReflectionInfo(iter([request])):
                names |= {s.name for s in response.list_services_response.service}
            assert {"arena.v1.BotGateway", "arena.v1.League", "grpc.health.v1.Health"} <= names

    _run(scenario())


def test_drain_tells_bots_hands_requests_back_and_goes_not_serving(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            held = await host.send(leaks.turn("alice", "m1", 1))
            await bot.read_kind("turn")
            async with grpc.aio.insecure_channel(f"127.0.0.1:{ref.port}") as channel:
                health = health_pb2_grpc.HealthStub(channel)
                stopping = asyncio.ensure_future(ref.stop())
                notice = await bot.read_kind("notice")
                assert notice.code == "draining"
                reply = await health.Check(health_pb2.HealthCheckRequest(service=""))
                assert reply.status == health_pb2.HealthCheckResponse.NOT_SERVING
                late = RawBot(ref.port, token)
                assert await late.status() == grpc.StatusCode.UNAVAILABLE
                await late.close()
                assert await bot.status() == grpc.StatusCode.UNAVAILABLE
                reply = await asyncio.wait_for(held, 10)
                assert reply.kind == internal_pb2.Reply.DRAINED  # for the bot's next referee
                await stopping
            await bot.close()
            await host.close()
        assert not redis_client.hlen(keys.bot_streams("alice"))

    _run(scenario())


def test_sdk_reconnects_to_a_restarted_referee(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    from referee.embedded_redis import free_port

    port = free_port()

    async def scenario() -> None:
        stop = asyncio.Event()
        bot = FirstLegalBot()
        task = asyncio.ensure_future(bot.run_async(f"127.0.0.1:{port}", token, stop=stop))
        try:
            for match in ("m1", "m2"):  # one referee, then a new one on the same port
                async with running_referee(redis_url, port=port):
                    host = FakeHost(redis_url)
                    turn = LeakChecker().turn("alice", match, 1)
                    reply = await host.ask(turn, timeout=20, route_s=20)
                    assert reply.kind == internal_pb2.Reply.ANSWER
                    await host.close()
        finally:
            stop.set()
            await asyncio.wait_for(task, 10)

    _run(scenario())


def test_sdk_gives_up_on_a_bad_token(redis_url: str) -> None:
    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            with pytest.raises(BotRefused) as info:
                await asyncio.wait_for(
                    FirstLegalBot().run_async(f"127.0.0.1:{ref.port}", "arena_wrong"), 10
                )
            assert info.value.code == grpc.StatusCode.UNAUTHENTICATED

    _run(scenario())


def make_certificate(folder: Path) -> tuple[Path, Path]:
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    return key, cert


def test_tls(redis_url: str, redis_client: redis.Redis, tmp_path: Path) -> None:
    key, cert = make_certificate(tmp_path)
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(
            redis_url, tls_cert=str(cert), tls_key=str(key), link_tls=True
        ) as ref:
            host = FakeHost(redis_url, root_certificates=cert.read_bytes())  # TLS there too
            credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
            bot = RawBot(ref.port, token, credentials=credentials, checker=leaks)
            assert (await bot.connect()).bot == "alice"
            pending = await host.send(leaks.turn("alice", "m1", 1))
            request = await bot.read_kind("turn")
            await bot.send(action("m1", 1, request.legal_actions[0]))
            assert (await asyncio.wait_for(pending, 10)).kind == internal_pb2.Reply.ANSWER
            await bot.close()
            host.router.forget("alice")
            plain = RawBot(ref.port, token)  # a plaintext client cannot talk to it
            with pytest.raises(grpc.aio.AioRpcError):
                await plain.connect()
            await plain.close()
            # The SDK with --tls-ca.
            stop = asyncio.Event()
            sdk_bot = FirstLegalBot()
            task = asyncio.ensure_future(
                sdk_bot.run_async(f"localhost:{ref.port}", token, tls_ca=str(cert), stop=stop)
            )
            reply = await host.ask(leaks.turn("alice", "m2", 1), route_s=10)
            stop.set()
            await asyncio.wait_for(task, 10)
            assert reply.kind == internal_pb2.Reply.ANSWER
            await host.close()

    _run(scenario())


def test_league_registry_needs_the_admin_token(redis_url: str, redis_client: redis.Redis) -> None:
    async def scenario() -> None:
        async with referee_channel(redis_url, admin_token="s3cret") as (ref, channel):
            league = league_pb2_grpc.LeagueStub(channel)
            admin = (("authorization", "Bearer s3cret"),)
            request = league_pb2.RegisterBotRequest(name="alice", owner="team-a")
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await league.RegisterBot(request)
            assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await league.RegisterBot(request, metadata=(("authorization", "Bearer x"),))
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
            made = await league.RegisterBot(request, metadata=admin)
            assert made.name == "alice" and made.token.startswith("arena_")
            assert bots.authenticate(redis_client, made.token) == "alice"
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await league.RegisterBot(request, metadata=admin)
            assert info.value.code() == grpc.StatusCode.ALREADY_EXISTS
            bad = league_pb2.RegisterBotRequest(name="no spaces")
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await league.RegisterBot(bad, metadata=admin)
            assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            bot = RawBot(ref.port, made.token)
            await bot.connect()
            listed = await league.ListBots(league_pb2.ListBotsRequest())
            (info_row,) = listed.bots
            assert (info_row.name, info_row.owner, info_row.connected_streams) == (
                "alice",
                "team-a",
                1,
            )
            await bot.close()
            rotated = await league.RotateToken(
                league_pb2.RotateTokenRequest(name="alice"), metadata=admin
            )
            assert rotated.token != made.token
            revoked = await league.RevokeBot(
                league_pb2.RevokeBotRequest(name="alice"), metadata=admin
            )
            assert revoked.revoked
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await league.RevokeBot(league_pb2.RevokeBotRequest(name="nobody"), metadata=admin)
            assert info.value.code() == grpc.StatusCode.NOT_FOUND
            listed = await league.ListBots(league_pb2.ListBotsRequest())
            assert listed.bots[0].revoked

    _run(scenario())


def test_admin_calls_are_off_without_an_admin_token(redis_url: str) -> None:
    async def scenario() -> None:
        async with referee_channel(redis_url) as (_ref, channel):
            league = league_pb2_grpc.LeagueStub(channel)
            with pytest.raises(grpc.aio.AioRpcError) as info:
                await league.RegisterBot(
                    league_pb2.RegisterBotRequest(name="alice"),
                    metadata=(("authorization", "Bearer anything"),),
                )
            assert info.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "ARENA_ADMIN_TOKEN" in (info.value.details() or "")

    _run(scenario())


def test_watch_events_streams_the_feed(redis_url: str, redis_client: redis.Redis) -> None:
    async def scenario() -> None:
        async with referee_channel(redis_url) as (_ref, channel):
            league = league_pb2_grpc.LeagueStub(channel)
            call = league.WatchEvents(league_pb2.WatchEventsRequest(season="s1"))
            events = [
                {"kind": "match_end", "season": "s2", "match_id": "x", "data": {}, "at_ms": 1},
                {"kind": "not json at all"},
                {"kind": "match_end", "season": "s1", "match_id": "m1", "data": {"a": 1},
                 "at_ms": 5},
            ]  # fmt: skip
            got: list[Any] = []

            async def publish_until_seen() -> None:
                while not got:  # the subscription starts asynchronously: publish again
                    for event in events:
                        redis_client.publish(keys.EVENTS_CHANNEL, json.dumps(event))
                    redis_client.publish(keys.EVENTS_CHANNEL, "{broken")
                    await asyncio.sleep(0.2)

            publisher = asyncio.ensure_future(publish_until_seen())
            got.append(await asyncio.wait_for(call.read(), 10))
            await publisher
            call.cancel()
            event = got[0]
            assert (event.kind, event.season, event.match_id, event.at_ms) == (
                "match_end",
                "s1",
                "m1",
                5,
            )
            assert json.loads(event.data_json) == {"a": 1}

    _run(scenario())


def test_hooks_run_and_a_failing_hook_does_not_stop_the_referee(
    redis_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """referee.web.serve_http and referee.seasons.driver.run_driver are started (fakes here)."""
    from referee import web
    from referee.seasons import driver

    calls: list[tuple[Any, ...]] = []
    ports: list[int] = []

    async def serve_http(
        url: str, host: str, port: int, stop: asyncio.Event, **options: Any
    ) -> None:
        calls.append(("web", url, host, port))
        calls.append(("web grpc", options.get("grpc_target")))
        options["on_ready"](port)  # the referee announces itself once HTTP listens
        await stop.wait()
        calls.append(("web stopped",))

    async def run_driver(url: str, stop: asyncio.Event) -> None:
        calls.append(("driver", url))
        raise RuntimeError("driver bug")

    monkeypatch.setattr(web, "serve_http", serve_http)
    monkeypatch.setattr(driver, "run_driver", run_driver)

    async def scenario() -> None:
        server = RefereeServer(
            RefereeConfig(redis_url=redis_url, port=0, http_port=18080, drain_grace_s=0.1)
        )
        ports.append(await server.start())
        try:
            await asyncio.sleep(0.2)
            async with grpc.aio.insecure_channel(f"127.0.0.1:{server.port}") as channel:
                reply = await health_pb2_grpc.HealthStub(channel).Check(
                    health_pb2.HealthCheckRequest(service="")
                )
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
        finally:
            await server.stop()

    with caplog.at_level("ERROR"):
        _run(scenario())
    assert ("web", redis_url, "127.0.0.1", 18080) in calls
    assert ("web grpc", f"127.0.0.1:{ports[0]}") in calls  # people's seats connect there
    assert ("driver", redis_url) in calls
    assert ("web stopped",) in calls
    assert any("run_driver failed" in r.getMessage() for r in caplog.records)


def test_a_drained_referees_requests_reach_the_bot_through_another(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Referee A drains while the bot holds a request: the host hears DRAINED; the SDK
    moves to referee B and the request, sent again there, is answered (a new clock)."""
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    class Waiter(FirstLegalBot):
        max_concurrent_matches = 2

        def __init__(self) -> None:
            self.seen: list[str] = []

        def choose(self, turn: Any) -> str:
            self.seen.append(turn.match_id)
            if len(self.seen) == 1:
                time.sleep(1.5)  # still thinking when referee A drains (grace 0.5 s)
            return str(turn.legal_actions[0])

    async def scenario() -> None:
        async with running_referee(redis_url, referee_id="B") as ref_b:
            ref_a = RefereeServer(
                RefereeConfig(
                    redis_url=redis_url, port=0, http_port=0, hooks=False, referee_id="A",
                    drain_grace_s=0.5, cluster_secret=os.environ[cluster.SECRET_ENV],
                )
            )  # fmt: skip
            await ref_a.start()
            stop = asyncio.Event()
            bot = Waiter()
            servers = f"127.0.0.1:{ref_a.port},127.0.0.1:{ref_b.port}"
            task = asyncio.ensure_future(bot.run_async(servers, token, stop=stop))
            host = FakeHost(redis_url)
            try:
                while not redis_client.hlen(keys.bot_streams("alice")):
                    await asyncio.sleep(0.02)
                turn = leaks.turn("alice", "m1", 1)
                first = await host.send(turn)
                link = host.router.cached("alice")
                assert link is not None and link.referee == "A"
                while not bot.seen:
                    await asyncio.sleep(0.02)
                await ref_a.stop()  # drains: the request comes back to the host
                drained = await asyncio.wait_for(first, 10)
                assert drained.kind == internal_pb2.Reply.DRAINED
                host.router.avoid("A", 60_000.0)
                answer = await host.ask(turn, timeout=20, route_s=20)
                assert answer.kind == internal_pb2.Reply.ANSWER
                assert answer.sent_ms > drained.sent_ms  # sent again: a new clock
                again = host.router.cached("alice")
                assert again is not None and again.referee == "B"
                assert bot.seen == ["m1", "m1"]
            finally:
                await host.close()
                stop.set()
                await asyncio.wait_for(task, 10)
                await ref_a.stop()

    _run(scenario())


def test_a_taken_port_is_a_clear_error(redis_url: str) -> None:
    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            with pytest.raises(OSError, match="in use"):
                async with running_referee(redis_url, port=ref.port):
                    pass

    _run(scenario())
