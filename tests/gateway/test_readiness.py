"""A referee's ``/readyz`` (docs/DEPLOY.md "Health and readiness"): ready only when Redis
answers, the bots' gRPC port and the internal port accept connections and the referee is
not draining; ``503`` with the reason otherwise. Real referee, real HTTP, real Redis."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from referee import cluster
from referee.embedded_redis import free_port
from referee.gateway.server import RefereeConfig, RefereeServer
from tests.metrics.http_helpers import get, running_server


def _readyz(port: int) -> tuple[int, dict[str, Any]]:
    reply = get(port, "/readyz")
    return reply.status, json.loads(reply.body)


def test_a_referee_is_ready_until_a_port_stops_serving_or_it_drains(redis_url: str) -> None:
    http_port = free_port()

    async def scenario() -> None:
        server = RefereeServer(
            RefereeConfig(
                redis_url=redis_url,
                port=0,
                http_port=http_port,
                drain_grace_s=0.1,
                cluster_secret=os.environ[cluster.SECRET_ENV],
            )
        )
        await server.start()
        try:
            status, body = await asyncio.to_thread(_readyz, http_port)
            assert status == 200, body
            assert body == {
                "status": "ready",
                "checks": {"redis": "ok", "grpc": "ok", "link": "ok", "draining": "ok"},
            }
            # the internal port goes away: not ready, and it says which port
            assert server.link_server is not None
            await server.link_server.stop(None)
            status, body = await asyncio.to_thread(_readyz, http_port)
            assert status == 503 and body["status"] == "not ready", body
            assert body["checks"]["link"].startswith("the internal port for match hosts")
            assert f":{server.link_port}) does not accept connections" in body["checks"]["link"]
            assert body["reasons"] == [body["checks"]["link"]]
            assert body["checks"]["grpc"] == "ok"
            # SIGTERM (what run_referee's handler sets): draining, said while it drains
            server.stop_event.set()
            status, body = await asyncio.to_thread(_readyz, http_port)
            assert status == 503 and body["checks"]["draining"].startswith("draining"), body
        finally:
            await server.stop()
        # drained and stopped: the HTTP port is closed too
        with pytest.raises(OSError):
            await asyncio.to_thread(get, http_port, "/readyz")

    asyncio.run(scenario())


def test_a_tls_referee_checks_its_ports_without_a_handshake_error(
    redis_url: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """The TLS ports are probed with a bare TCP connect: ready, and gRPC logs nothing
    about the probe (a load balancer polls /readyz every few seconds)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    http_port = free_port()

    async def scenario() -> None:
        server = RefereeServer(
            RefereeConfig(
                redis_url=redis_url,
                port=0,
                http_port=http_port,
                tls_cert=str(cert),
                tls_key=str(key),
                link_tls=True,
                drain_grace_s=0.1,
                cluster_secret=os.environ[cluster.SECRET_ENV],
            )
        )
        await server.start()
        try:
            for _ in range(3):
                status, body = await asyncio.to_thread(_readyz, http_port)
                assert status == 200, body
            await asyncio.sleep(0.5)  # what gRPC would log about the closed probes
        finally:
            await server.stop()

    capfd.readouterr()
    asyncio.run(scenario())
    out, err = capfd.readouterr()
    assert "andshake" not in out + err, out + err


def test_readyz_says_redis_is_unreachable() -> None:
    async def ports_ok() -> dict[str, str]:
        return {"grpc": "ok"}

    with running_server(f"redis://127.0.0.1:{free_port()}/0", readiness=ports_ok) as port:
        status, body = _readyz(port)
    assert status == 503 and body["status"] == "not ready", body
    assert body["checks"]["grpc"] == "ok"
    assert body["checks"]["redis"].startswith("Redis is not reachable"), body
    assert body["reasons"] == [body["checks"]["redis"]]


def test_readyz_without_referee_checks_is_redis_alone(redis_url: str) -> None:
    with running_server(redis_url) as port:
        assert _readyz(port) == (200, {"status": "ready", "checks": {"redis": "ok"}})
