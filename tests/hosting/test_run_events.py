"""A hosted bot's sandbox events reach its author: kept in Redis, counted in the metrics,
published as a ``hosted`` notice, listed by ``arena bot events`` and shown on the bot's page
(real Redis, real HTTP server; no sandbox needed)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import redis

from referee import bots, keys
from referee.cli.hosted_run_cmd import start_supervisor
from referee.cli.main import main as arena_main
from referee.hosting import supervisor
from referee.hosting.errors import SandboxUnavailable
from referee.hosting.supervisor import RunEvent, RunLimits, read_events, record_event
from referee.metrics_store import read_counters
from tests.metrics.http_helpers import get, running_server


def test_an_event_is_kept_counted_told_and_shown(
    redis_url: str, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    bots.register(redis_client, "hog")
    listener = redis_client.pubsub()
    listener.subscribe(keys.BOT_NOTICES_CHANNEL)
    listener.get_message(timeout=1)  # the subscription's confirmation
    record_event(redis_client, "hog", RunEvent.OOM_KILL, "1 process(es) killed at 512 MB")

    assert read_events(redis_client, "hog")[0]["event"] == "oom_kill"
    counters = read_counters(redis_client)["arena_hosted_bot_events_total"]
    assert list(counters.values()) == [1.0]
    message = listener.get_message(timeout=2)
    assert message is not None
    sent = json.loads(message["data"])
    assert sent["bot"] == "hog" and sent["notice"]["code"] == "hosted"
    assert "oom_kill" in sent["notice"]["message"]
    listener.close()

    assert arena_main(["bot", "events", "hog", "--redis-url", redis_url]) == 0
    assert "oom_kill      1 process(es) killed at 512 MB" in capsys.readouterr().out
    with running_server(redis_url) as port:
        page = get(port, "/bot/hog").body.decode()
    assert "Sandbox events" in page and "killed at 512 MB" in page


WHY = "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`"


def test_without_a_sandbox_hosted_bots_are_refused_in_one_line_and_never_run(
    redis_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    def missing() -> None:
        raise SandboxUnavailable(
            "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap`"
        )

    monkeypatch.setattr(supervisor, "require_sandbox", missing)
    stop = threading.Event()
    assert start_supervisor(redis_url, tmp_path, RunLimits(), stop) is None
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"arena up: hosted bots are not run here: {WHY}"]
    socket = tmp_path / "referee.sock"
    socket.touch()
    code = arena_main(["bots", "run", "--socket", str(socket), "--redis-url", redis_url])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "hosted bots cannot run here: bubblewrap" in err[0]


def test_bots_run_without_a_referee_socket_says_how_to_get_one(
    redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = arena_main(
        ["bots", "run", "--socket", str(tmp_path / "none.sock"), "--redis-url", redis_url]
    )
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and "no referee socket at" in line and "--hosted-socket" in line
