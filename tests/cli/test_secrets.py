"""Secrets on a shared host, on the real stack:
``arena up`` with its embedded Redis, referee and worker processes.

What another user of the host could do is checked the way they would do it: read the data
dir (its modes: the tests may run as root, who reads anything), list the processes' command
lines (``/proc/PID/cmdline``, what ``ps`` shows) and talk to the Redis port without
credentials.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import redis

from referee.cli.common import connect
from referee.cli.main import main as arena_main
from referee.procs import arena_command, stop_process
from tests.workers.test_cli import descendants

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc"),
]

ROOT = Path(__file__).resolve().parents[2]
ADMIN_TOKEN = "-abcdef_leading_dash_admin_token"  # argparse took a leading '-' for a flag


def _modes(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): stat.S_IMODE(p.stat().st_mode)
        for p in [folder, *folder.rglob("*")]
        if not p.is_socket()
    }


def _cmdlines(pids: set[int]) -> list[str]:
    lines = []
    for pid in pids:
        try:
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode())
        except OSError:
            continue
    return lines


def test_arena_up_keeps_its_secrets_from_other_users(tmp_path: Path) -> None:
    data = tmp_path / "state" / "arena"
    elsewhere = tmp_path / "another-folder"
    elsewhere.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("ARENA_")},
        "ARENA_DATA_DIR": str(data),
        "ARENA_ADMIN_TOKEN": ADMIN_TOKEN,
        "PYTHONPATH": str(ROOT),
    }
    up = subprocess.Popen(
        arena_command("up", "-n", "1", "--port", "0", "--http-port", "0", "--log-level", "WARNING"),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ROOT,
    )
    output: list[str] = []
    try:
        assert up.stdout is not None
        for raw in iter(up.stdout.readline, b""):
            output.append(raw.decode())
            if "Ctrl-C stops everything" in output[-1]:
                break
        text = "".join(output)
        assert re.search(r"referee grpc 127\.0\.0\.1:[1-9]\d*", text), text  # it ran
        stream = up.stdout
        threading.Thread(target=lambda: output.extend(x.decode() for x in stream), daemon=True)
        url = (data / "redis.url").read_text().strip()
        password = (data / "redis.pass").read_text().strip()
        assert len(password) >= 24 and f":{password}@" in url
        assert password not in text  # the URL is printed without its password

        # Files: the data dir is 0700, every file in it 0600 (AOF, config, URL, password).
        modes = _modes(data)
        assert modes["."] == 0o700
        loose = {
            name: oct(mode)
            for name, mode in modes.items()
            if mode & 0o077 or (not (data / name).is_dir() and mode != 0o600)
        }
        assert not loose, loose
        assert {"redis.url", "redis.pass", "redis.conf"} <= set(modes)
        assert any(name.startswith("appendonly") for name in modes), modes

        # Redis without credentials: refused, even for one GET of a season's secret.
        port = int(re.search(r"@127\.0\.0\.1:(\d+)/", url).group(1))  # type: ignore[union-attr]
        stranger = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=5)
        with pytest.raises(redis.AuthenticationError):
            stranger.get("arena:season:s1:secret")
        stranger.close()

        # Command lines (ps): no admin token, no Redis password, anywhere in the tree.
        children = descendants(up.pid)
        assert len(children) >= 3  # redis-server, the referee, a worker
        for line in _cmdlines({up.pid, *children}):
            assert ADMIN_TOKEN not in line and password not in line, line

        # Item 11: another terminal, another folder, finds the platform by its data dir.
        listed = subprocess.run(
            arena_command("bot", "list"),
            capture_output=True,
            text=True,
            env={k: v for k, v in env.items() if k != "ARENA_ADMIN_TOKEN"},
            cwd=elsewhere,
            timeout=120,
        )
        assert listed.returncode == 0, listed.stderr
        assert "no bots registered" in listed.stdout
    finally:
        up.send_signal(signal.SIGINT)
        stop_process(up, 30)
    assert up.returncode == 0, "".join(output)
    assert not (data / "redis.url").exists()


def test_tokens_on_the_command_line_are_refused_with_what_to_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Item 5: ``arena up --admin-token=-abcdef`` failed as argparse's; now no token is
    taken from argv at all, and the message says where it goes instead."""
    assert arena_main(["up", "--admin-token=-abcdef"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("arena: error: --admin-token on the command line shows in `ps`")
    assert "ARENA_ADMIN_TOKEN" in err and "--admin-token-file" in err
    assert arena_main(["referee", "--admin-token", "x"]) == 1
    assert "ARENA_ADMIN_TOKEN" in capsys.readouterr().err


def test_redis_urls_with_a_password_or_tls_build_the_right_client(tmp_path: Path) -> None:
    """``--redis-url`` takes a password and ``rediss://`` (TLS, with its CA) as redis-py does."""
    import argparse

    args = argparse.Namespace(
        redis_url="rediss://:s3cret@198.18.0.1:6380/2?ssl_ca_certs=/etc/arena/ca.pem"
    )
    client = connect(args)
    kwargs = client.connection_pool.connection_kwargs
    assert client.connection_pool.connection_class is redis.SSLConnection
    assert (kwargs["password"], kwargs["port"], kwargs["db"]) == ("s3cret", 6380, 2)
    assert kwargs["ssl_ca_certs"] == "/etc/arena/ca.pem"
    client.close()
