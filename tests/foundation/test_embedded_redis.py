"""The embedded Redis starts, keeps data with AOF, and leaves no server behind."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from referee.embedded_redis import EmbeddedRedis


def test_start_stop_and_aof_survives_restart(tmp_path: Path) -> None:
    server = EmbeddedRedis(tmp_path / "data")
    server.start()
    pid = server.pid
    assert pid is not None
    client = redis.Redis.from_url(server.url)
    client.set("arena:test", "kept")
    assert client.config_get("appendonly")["appendonly"] == "yes"
    client.close()
    server.stop()
    # The process is gone: no orphaned server.
    try:
        os.kill(pid, 0)
        alive = True
    except ProcessLookupError:
        alive = False
    assert not alive
    with EmbeddedRedis(tmp_path / "data") as again:
        client = redis.Redis.from_url(again.url)
        assert client.get("arena:test") == b"kept"
        client.close()
