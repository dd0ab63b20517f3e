"""``arena up`` is up only when its own referee is (issue 11 item 6)."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from referee.procs import arena_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("busy", ["grpc", "http"])
def test_arena_up_on_a_port_in_use_fails_with_the_referees_error(tmp_path: Path, busy: str) -> None:
    """The port belongs to someone else: no 'arena up: ... referee grpc' line, a non-zero
    exit and the referee's own reason, every time (it reported success 2 times in 8)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        ports = ["--port", str(port), "--http-port", "0"]
        if busy == "http":
            ports = ["--port", "0", "--http-port", str(port)]
        env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            arena_command("up", "-n", "1", *ports),
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=180,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "referee grpc" not in done.stdout
    assert "arena: error: arena up: the referee did not start" in done.stderr
    reason = "could not listen on" if busy == "grpc" else "could not serve HTTP on"
    assert f"{reason} 127.0.0.1:{port}" in done.stderr
    assert not (tmp_path / "data" / "redis.url").exists()  # its Redis stopped and cleaned up
