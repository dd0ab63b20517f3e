"""`arena up` end to end: one foreground command, a match through it, SIGTERM, no orphans."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis

from referee import bots
from referee.cli.common import redacted_url
from referee.procs import stop_process
from sample_bots.first_legal import FirstLegalBot

pytestmark = pytest.mark.slow


def descendants(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (Linux /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            try:
                children = [int(c) for c in task.read_text().split()]
            except OSError:
                continue
            for child in children:
                if child not in found:
                    found.add(child)
                    todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_arena_up_runs_a_match_and_stops_without_orphans(tmp_path: Path) -> None:
    data = tmp_path / "data"
    up = subprocess.Popen(
        [sys.executable, "-m", "referee.cli.main", "up", "-n", "1", "--port", "0",
         "--http-port", "0", "--data-dir", str(data), "--log-level", "WARNING"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )  # fmt: skip
    output: list[str] = []
    server = ""
    try:
        assert up.stdout is not None
        for raw in iter(up.stdout.readline, b""):
            output.append(raw.decode())
            found = re.search(r"referee grpc (\S+)", output[-1])
            if found:
                server = found.group(1)
                break
        assert server and not server.endswith(":0"), output
        stream = up.stdout
        threading.Thread(
            target=lambda: output.extend(line.decode() for line in stream), daemon=True
        ).start()
        url = (data / "redis.url").read_text().strip()
        conn = redis.Redis.from_url(url, decode_responses=True)
        stops = []
        for name in ("u1", "u2", "u3"):
            token = bots.register(conn, name)
            bot, stop = FirstLegalBot(), threading.Event()
            bot.name = name
            stops.append(stop)
            threading.Thread(
                target=bot.run, args=(server,), kwargs={"token": token, "stop": stop}, daemon=True
            ).start()
        run = subprocess.run(
            [sys.executable, "-m", "referee.cli.main", "match", "run", "--data-dir", str(data),
             "--game", "sevens", "--preset", "fan-tan", "--bots", "u1,u2,u3", "--seed", "4",
             "--deals", "1", "--wait", "--timeout", "60"],
            capture_output=True, text=True, timeout=90,
        )  # fmt: skip
        for stop in stops:
            stop.set()
        assert run.returncode == 0, run.stdout + run.stderr
        assert "result of run-" in run.stdout and "decisions" in run.stdout
        conn.close()
        children = descendants(up.pid)
        assert len(children) >= 3  # redis-server, referee, a worker
    finally:
        stop_process(up, 30)
    assert up.returncode == 0, "".join(output)
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in children) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in children if alive(pid)], "orphans left behind"
    assert not (data / "redis.url").exists()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
        (
            "rediss://:s3cret@198.18.17.2:6379/0?ssl_ca_certs=/etc/arena/ca.pem",
            "rediss://:***@198.18.17.2:6379/0?ssl_ca_certs=/etc/arena/ca.pem",
        ),
        ("redis://arena:s3cret@h:1/0", "redis://arena:***@h:1/0"),
        ("unix:///run/redis.sock?password=s3cret&db=0", "unix:///run/redis.sock?password=***&db=0"),
    ],
)
def test_printed_redis_urls_hide_the_password(url: str, shown: str) -> None:
    assert redacted_url(url) == shown
