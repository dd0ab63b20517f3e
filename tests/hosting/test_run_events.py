"""A hosted bot's sandbox events reach its author: kept in Redis, counted in the metrics,
published as a ``hosted`` notice, listed by ``arena bot events`` and shown on the bot's page
(real Redis, real HTTP server; no sandbox needed)."""

from __future__ import annotations

import json

import pytest
import redis

from referee import bots, keys
from referee.cli.main import main as arena_main
from referee.hosting.supervisor import RunEvent, read_events, record_event
from referee.metrics_store import read_counters
from tests.metrics.http_helpers import get, running_server


def test_an_event_is_kept_counted_told_and_shown(
    redis_url: str, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    bots.register(redis_client, "hog")
    listener = redis_client.pubsub()  # type: ignore[no-untyped-call]
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
