"""Fixtures shared by every test: a real embedded Redis started by the code itself."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from referee.embedded_redis import EmbeddedRedis


@pytest.fixture(scope="session")
def embedded_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """One real redis-server for the whole test session (AOF on, loopback port)."""
    server = EmbeddedRedis(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.stop()


@pytest.fixture
def redis_url(embedded_redis: EmbeddedRedis) -> Iterator[str]:
    """The URL of the session's Redis, emptied before each test."""
    client = redis.Redis.from_url(embedded_redis.url)
    client.flushall()
    client.close()
    yield embedded_redis.url


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    yield client
    client.close()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "arena-data"
