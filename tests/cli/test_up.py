"""``arena up`` is up only when its own referee is."""

from __future__ import annotations

import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from referee.cli import up
from referee.procs import arena_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.parametrize("busy", ["grpc", "http"])
def test_arena_up_on_a_port_in_use_fails_with_the_referees_error(tmp_path: Path, busy: str) -> None:
    """The port belongs to someone else: no 'arena up: ... referee grpc' line, a non-zero
    exit and the referee's own reason, every time (it reported success 2 times in 8). The
    reason is one line, said once, as soon as the referee exits (a busy
    HTTP port printed a traceback first, a busy gRPC port grpc's bind error and "did not
    print 'referee listening' within 60 s" though the referee had failed in 2 s)."""
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
    flag = "--port" if busy == "grpc" else "--http-port"
    reason = (
        f"could not listen on 127.0.0.1:{port}: the port is in use by another process; "
        f"pick a free {flag}"
    )
    output = done.stdout + done.stderr
    assert output.count(reason) == 1, output
    errors = [line for line in done.stderr.splitlines() if line.startswith("arena: error:")]
    assert len(errors) == 1 and reason in errors[0], done.stderr
    match = re.search(r"the referee exited with code 1 after ([0-9.]+) s: ", errors[0])
    assert match and float(match.group(1)) < up.REFEREE_START_S, errors[0]
    for noise in ("Traceback", "add_port.cc", "within 60 s", "referee listening"):
        assert noise not in output, output
    assert not (tmp_path / "data" / "redis.url").exists()  # its Redis stopped and cleaned up


@pytest.mark.slow
def test_a_second_arena_up_on_a_data_dir_in_use_is_refused_unless_it_joins(
    tmp_path: Path,
) -> None:
    """A second ``arena up`` on the data dir of a running platform joined
    it silently, as another referee with a new admin token. It is refused in one line that
    says what to do, unless ``--join`` asks to add a referee; then it says so."""
    env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    ports = ["--port", "0", "--http-port", "0"]
    first = subprocess.Popen(
        arena_command("up", *ports),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        cwd=ROOT,
    )
    try:
        assert first.stdout is not None
        seen = []
        for line in first.stdout:  # up once its summary is printed
            seen.append(line)
            if line.startswith("arena up: redis"):
                break
        assert any(line.startswith("arena up: redis") for line in seen), "".join(seen)
        second = subprocess.run(
            arena_command("up", *ports),
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert second.returncode == 1, second.stdout + second.stderr
        errors = [line for line in second.stderr.splitlines() if line.startswith("arena:")]
        assert len(errors) == 1, second.stderr
        assert f"the data dir {tmp_path / 'data'} is in use" in errors[0]
        assert "--join" in errors[0] and "another --data-dir" in errors[0]
        assert "referee" not in second.stdout  # no referee was started
        joining = subprocess.Popen(
            arena_command("up", "--join", *ports),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=env,
            cwd=ROOT,
        )
        try:
            assert joining.stdout is not None
            said = []
            for line in joining.stdout:
                said.append(line)
                if line.startswith("arena up: redis"):
                    break
            text = "".join(said)
            assert "joined the platform already running in" in text, text
            assert "admin token below is this referee's own" in text
        finally:
            joining.terminate()
            joining.wait(60)
    finally:
        first.terminate()
        first.wait(60)
    assert not (tmp_path / "data" / "redis.url").exists()


@pytest.mark.slow
def test_arena_worker_on_a_health_port_in_use_fails_in_one_line(tmp_path: Path) -> None:
    """A taken --health-port fails in one line (it printed a whole traceback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            arena_command("worker", "-n", "1", "--health-port", str(port)),
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=180,
        )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("arena: error:")]
    assert len(errors) == 1, done.stderr
    assert f"could not serve health on 127.0.0.1:{port}" in errors[0]
    assert "pick a free --health-port" in errors[0]
