"""Fixtures shared by every test: a real embedded Redis started by the code itself."""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from referee.embedded_redis import EmbeddedRedis
from tests.children import point_children_at_tree

# The platform's default data dir is the user's state dir (~/.local/state/arena): no test
# may use it. Every command (and every child it starts) of this session finds its data dir
# here instead, unless a test passes its own --data-dir.
_SESSION_DATA_DIR = tempfile.mkdtemp(prefix="arena-test-data-")
os.environ["ARENA_DATA_DIR"] = _SESSION_DATA_DIR
atexit.register(shutil.rmtree, _SESSION_DATA_DIR, True)
os.environ.pop("ARENA_REDIS_URL", None)
os.environ.pop("ARENA_ADMIN_TOKEN", None)
os.environ.pop("ARENA_TOKEN", None)

# Children (referees, hosts, bots, CLI runs) import this tree's code whatever their working
# folder, even where the venv's editable install points at another checkout of the project.
point_children_at_tree()

# The secret of the referee <-> match host stream, for every referee and worker a test
# starts (children inherit it): never a file in the working tree, never argv.
os.environ["ARENA_CLUSTER_SECRET"] = secrets.token_urlsafe(32)


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


@pytest.fixture(scope="module")
def referee_address(embedded_redis: EmbeddedRedis) -> Iterator[str]:
    """An ``arena referee`` process on the session's Redis for one test module (its
    address, HOST:PORT); bots register per test (``redis_url`` empties Redis)."""
    from referee.procs import start_referee, stop_process

    referee, address = start_referee(embedded_redis.url)
    yield address
    stop_process(referee, 15)
