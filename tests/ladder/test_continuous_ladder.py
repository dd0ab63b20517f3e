"""The continuous ladder on the real platform (referee/ladder): Redis, a referee, a match
host pool and eight SDK bot processes (reference bots; two of one owner). It plays batch
after batch through a match host SIGKILLed mid-match and a referee SIGKILLed and
restarted; a new version of a bot enters without a restart; pause holds new batches; the
web page and API show the standings; every decision replays from the seed and the log."""

from __future__ import annotations

import contextlib
import io
import json
import signal
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee.cli.main import main as arena_main
from referee.ladder import store as ladders
from referee.seasons import store
from referee.seasons.platform import Platform
from tests.seasons.test_end_to_end import kill_a_busy_worker

pytestmark = pytest.mark.slow

BOTS = {
    "lad-random-1": "random",
    "lad-random-2": "det-random",
    "lad-first-1": "first-legal",
    "lad-first-2": "first-legal",
    "lad-hold-1": "hold-sevens",
    "lad-hold-2": "det-hold-sevens",
    "lad-heur-1": "heuristic",
    "lad-heur-2": "heuristic",
}
TEAM = ("lad-heur-1", "lad-heur-2")  # one owner: never at one table
NEW_VERSION = "lad-heur-v2"


@pytest.fixture
def platform(redis_url: str, tmp_path: Path) -> Iterator[Platform]:
    with Platform(tmp_path / "platform", redis_url=redis_url) as p:
        p.start_redis()
        p.start_referee()
        p.start_workers(1, 2)
        p.register_bots([n for n in BOTS if n not in TEAM])
        p.register_bots([*TEAM, NEW_VERSION], owner="team")
        for i, (name, kind) in enumerate(BOTS.items()):
            p.start_bot(name, kind, seed=10 + i)
        p.start_bot(NEW_VERSION, "heuristic")
        p.wait_bots_connected()
        yield p


def _arena(p: Platform, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = arena_main([*argv, "--redis-url", p.redis_url])
    return code, out.getvalue() + err.getvalue()


def _wait_batches(p: Platform, at_least: int, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    with p.client() as conn:
        while ladders.load_state(conn, "lad").batches < at_least:
            assert time.monotonic() < deadline, ladders.standings(conn, "lad")
            time.sleep(0.2)


def test_a_ladder_of_eight_bots_through_faults_and_a_new_version(platform: Platform) -> None:
    p = platform
    code, out = _arena(p, "ladder", "start", "--name", "bad", "--bots", "lad-random-1,nobody")
    assert code == 1 and "nobody not registered" in out and out.count("\n") == 1, out
    code, out = _arena(
        p, "ladder", "start", "--game", "sevens", "--name", "lad", "--bots", ",".join(BOTS),
        "--tables", "2", "--deals", "1", "--seed", "31", "--provisional", "4",
    )  # fmt: skip
    assert code == 0, out
    conn = p.client()
    _wait_batches(p, 1)
    # a match host dies mid-match (of the batch current when it is found): the season
    # machinery plays the match again
    kill_a_busy_worker(conn, lambda: str(ladders.get_ladder(conn, "lad")["current"]))
    _wait_batches(p, 2)
    # the referee (which steps the ladder) is SIGKILLed and restarted
    p.stop_referee(signal.SIGKILL)
    time.sleep(1.0)
    p.start_referee()
    _wait_batches(p, 4)
    # a new version enters without a restart and retires the old entry
    code, out = _arena(p, "ladder", "join", "lad", NEW_VERSION, "--replaces", "lad-heur-1")
    assert code == 0 and "a new version of lad-heur-1" in out, out
    deadline = time.monotonic() + 120
    while True:
        rows = {r["bot"]: r for r in ladders.standings(conn, "lad")["rows"]}
        if NEW_VERSION in rows and rows[NEW_VERSION]["matches"] >= 1:
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.2)
    assert rows["lad-heur-1"]["retired"] and rows[NEW_VERSION]["prev"] == "lad-heur-1"
    # pause: the batch in flight ends, no new one starts; resume: play goes on
    code, out = _arena(p, "ladder", "pause", "lad")
    assert code == 0 and "paused" in out, out
    time.sleep(1.0)
    held = conn.llen("arena:ladder:lad:log")
    time.sleep(3.0)
    assert conn.llen("arena:ladder:lad:log") == held
    code, out = _arena(p, "ladder", "resume", "lad")
    assert code == 0, out
    batches = ladders.load_state(conn, "lad").batches
    _wait_batches(p, batches + 1)

    # every batch: a season of exactly its tables, finished, each match counted once
    log = ladders.read_log(conn, "lad")
    batches_logged = [r for r in log if r["kind"] == "batch"]
    assert len(batches_logged) >= 6
    rated = ladders.load_state(conn, "lad").batches
    for record in batches_logged:
        info = store.get_season(conn, record["season"])
        if record["n"] >= rated:  # the batch in flight
            continue
        assert info["state"] == "finished", info
        assert info["matches_done"] == info["matches_total"] == str(len(record["tables"]))
        played = [tuple(m["seats"]) for m in store.get_schedule(conn, record["season"])]
        assert played == [tuple(t) for t in record["tables"]]
        for table in record["tables"]:
            assert not set(TEAM) <= set(table)  # owners apart
            assert len(table) == 4
    # reproducible: the matchmaker re-decides every batch and every rating from the log
    code, out = _arena(p, "ladder", "replay", "lad")
    assert code == 0 and "every table and rating matches" in out, out
    # standings: every entry, ratings with uncertainty, provisional marks
    code, out = _arena(p, "ladder", "standings", "lad")
    assert code == 0 and NEW_VERSION in out and "[retired]" in out, out
    table = ladders.standings(conn, "lad")
    assert len(table["rows"]) == 9
    assert all(r["sigma"] < 25 / 3 for r in table["rows"] if r["matches"])
    # the web page and its API (the page polls the API: it updates live)
    base = f"http://127.0.0.1:{p.http_port}"
    with urllib.request.urlopen(f"{base}/api/ladder/lad", timeout=10) as response:
        api = json.load(response)
    assert [r["bot"] for r in api["rows"]] == [r["bot"] for r in table["rows"]]
    with urllib.request.urlopen(f"{base}/ladder/lad", timeout=10) as response:
        page = response.read().decode()
    assert "new version of lad-heur-1" in page and "/static/ladder.js?v=" in page
    conn.close()
