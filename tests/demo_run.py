"""``arena demo`` run as a user runs it, for the tests of its variants."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import redis


def run_demo(data_dir: Path, *flags: str, timeout: float) -> tuple[int, str]:
    """``arena demo FLAGS --data-dir DATA_DIR`` in a wide terminal; its exit code and its
    whole output."""
    env = {**os.environ, "COLUMNS": "130"}
    env.pop("ARENA_REDIS_URL", None)
    argv = ["demo", *flags, "--data-dir", str(data_dir)]
    out = subprocess.run(
        [sys.executable, "-m", "referee.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    return out.returncode, out.stdout + out.stderr


def assert_everything_stopped(text: str) -> None:
    """The embedded Redis the demo named in ``text`` no longer answers."""
    url = re.search(r"embedded Redis at (redis://\S+)", text)
    assert url is not None, text
    client = redis.Redis.from_url(url.group(1), socket_connect_timeout=0.5)
    with pytest.raises(redis.ConnectionError):
        client.ping()
    client.close()
