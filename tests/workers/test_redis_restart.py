"""docs/workers.md "Exactly once": Redis restarted (AOF) mid-match; the match still
completes, exactly once, with the result of an undisturbed run. Nothing per decision
touches Redis: the match plays on while Redis is away, and its heartbeat and commit are
retried until it is back."""

from __future__ import annotations

import subprocess
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from referee import bots, keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.replay import verify_record
from referee.match.row import lean_result
from referee.match.spec import MatchSpec
from referee.procs import arena_command, start_referee, stop_process
from sample_bots.sdk import Bot, Turn

pytestmark = pytest.mark.slow


class SlowFirstLegal(Bot):
    def choose(self, turn: Turn) -> str:
        time.sleep(0.03)
        return turn.legal_actions[0]


def test_redis_restart_mid_match_commits_once_as_undisturbed(tmp_path: Path) -> None:
    first = EmbeddedRedis(tmp_path / "redis")
    url = first.start()
    second: EmbeddedRedis | None = None
    referee, server = start_referee(url)
    workers = subprocess.Popen(
        arena_command("worker", "-n", "1", "--redis-url", url, "--stale-s", "2"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stops: list[threading.Event] = []
    try:
        conn = redis.Redis.from_url(url, decode_responses=True)
        for name in ("rr1", "rr2", "rr3"):
            token = bots.register(conn, name)
            bot, stop = SlowFirstLegal(), threading.Event()
            bot.name = name
            stops.append(stop)
            threading.Thread(
                target=bot.run, args=(server, token), kwargs={"stop": stop}, daemon=True
            ).start()
        rules = get_game("sevens").preset("fan-tan").to_dict()
        spec = MatchSpec(
            match_id="restart",
            game="sevens",
            rules=rules,
            seats=("rr1", "rr2", "rr3"),
            seed=1,
            deals=(DealSpec(5), DealSpec(6, rotation=1)),
        )
        assert queue.enqueue_match(conn, spec)
        deadline = time.monotonic() + 20
        while queue.match_status(conn, "restart")["state"] != "running":
            assert time.monotonic() < deadline
            time.sleep(0.02)
        time.sleep(0.7)
        port = first.port
        first.stop()  # SHUTDOWN writes the AOF
        conn.close()
        time.sleep(0.5)
        second = EmbeddedRedis(tmp_path / "redis", port=port)
        second.start()
        conn = redis.Redis.from_url(url, decode_responses=True)
        assert conn.exists(keys.match_spec("restart"))  # survived through the AOF
        deadline = time.monotonic() + 60
        while queue.match_status(conn, "restart")["state"] not in ("done", "failed"):
            assert time.monotonic() < deadline, queue.match_status(conn, "restart")
            time.sleep(0.1)
        status = queue.match_status(conn, "restart")
        assert status["state"] == "done", status
        reference = replace(spec, match_id="restart-ref")
        assert queue.enqueue_match(conn, reference)
        deadline = time.monotonic() + 60
        while queue.match_status(conn, "restart-ref")["state"] != "done":
            assert time.monotonic() < deadline, queue.match_status(conn, "restart-ref")
            time.sleep(0.1)
        undisturbed = queue.get_result(conn, "restart-ref")
        record = queue.get_record(conn, "restart")
        result = queue.get_result(conn, "restart")
        assert record is not None and result is not None
        assert lean_result(verify_record(record)) == result["result"]  # referee/match/row.py
        assert undisturbed is not None and result["result"] == undisturbed["result"]
        assert result["attempt"] == 1  # played through the outage, never abandoned
        assert [st["timeouts"] for st in result["stats"]] == [0, 0, 0]
        entries: list[tuple[str, dict[str, str]]] = conn.xrange(keys.RESULTS_STREAM)  # type: ignore[assignment]
        assert [fields["match_id"] for _id, fields in entries] == ["restart", "restart-ref"]
        conn.close()
    finally:
        for stop in stops:
            stop.set()
        for proc in (workers, referee):
            stop_process(proc, 20)
        first.stop()
        if second is not None:
            second.stop()
