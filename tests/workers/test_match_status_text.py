"""``arena match status`` speaks to people: the state and attempt, the
season or "a one-off match", the seats by name, times as local time and durations; not
the runner's ``start:<token>`` bookkeeping or epoch milliseconds."""

from __future__ import annotations

import re
import time

import pytest
import redis

from referee import queue
from referee.cli.main import main
from referee.cli.workers_cmd import local_time
from referee.match.spec import MatchSpec
from workers.attempts import start_attempt

EPOCH_MS = re.compile(r"\b1\d{12}\b")


def test_a_running_one_off_match_reads_as_sentences(
    redis_url: str, redis_client: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = MatchSpec(
        match_id="one-off-1", game="sevens", rules={"name": "fan-tan"},
        seats=("ann", "bob", "cy"), seed=3,
    )  # fmt: skip
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "one-off-1", "host-a") is not None
    raw = queue.match_status(redis_client, "one-off-1")
    assert any(k.startswith("start:") for k in raw)  # what the old output printed as it was
    assert main(["match", "status", "one-off-1", "--redis-url", redis_url]) == 0
    out = capsys.readouterr().out
    assert "start:" not in out and not EPOCH_MS.search(out), out
    lines = out.splitlines()
    assert lines[0] == "match one-off-1: running (attempt 1)"
    assert lines[1] == "  a one-off match, sevens; seats: ann, bob, cy"
    started = local_time(raw["started_ms"])
    assert re.search(rf"started   {started} on host-a", out), out
    assert re.search(r"last heartbeat \d+\.\d s ago", out), out
    queued = float(raw["queued_ms"])
    assert local_time(queued) in out and time.strftime("%Y-%m-%d") in out


def test_an_unknown_match_says_so(redis_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["match", "status", "nope", "--redis-url", redis_url]) == 1
    assert capsys.readouterr().out.splitlines()[0] == "match nope: unknown"
