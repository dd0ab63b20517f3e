"""``arena demo``: what users run first. It must finish, print real standings, verify the
seed, and leave nothing running."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import redis

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("game", ["sevens", "sedma"])
def test_arena_demo_runs_a_season_and_stops_everything(tmp_path: Path, game: str) -> None:
    env = {**os.environ, "COLUMNS": "130"}
    env.pop("ARENA_REDIS_URL", None)
    argv = ["demo", "--game", game, "--data-dir", str(tmp_path / "d")]
    out = subprocess.run(
        [sys.executable, "-m", "referee.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=240,
        env=env,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text
    assert "6 SDK bots connected over gRPC" in text
    assert re.search(r"15/15 matches", text)
    assert (f"{game}/fan-tan" if game == "sevens" else "sedma/sedma") in text
    for bot in ("random-1", "first-legal-2", "hold-sevens-1"):
        assert re.search(rf"│ \d │ {bot} +│ +1\d\d\d │", text), text
    assert "all match the published commitment" in text
    # everything it started is gone: the embedded Redis no longer answers
    url = re.search(r"embedded Redis at (redis://\S+)", text)
    assert url is not None
    client = redis.Redis.from_url(url.group(1), socket_connect_timeout=0.5)
    with pytest.raises(redis.ConnectionError):
        client.ping()
    client.close()
    assert not (tmp_path / "d" / "redis.url").exists()
