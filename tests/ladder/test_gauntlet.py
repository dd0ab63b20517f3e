"""``arena ladder serve`` and ``arena ladder gauntlet``: a bot's season against the
reference bots, end to end (referee with its season driver, workers, bot processes)."""

from __future__ import annotations

import contextlib
import io
import subprocess
import time
from pathlib import Path

import pytest

from referee import keys
from referee.cli.ladder_cmd import gauntlet_spec
from referee.cli.main import main as arena_main
from referee.errors import ConfigError
from referee.procs import arena_command, stop_process
from referee.seasons import store
from referee.seasons.platform import Platform

pytestmark = pytest.mark.slow

RUNGS = "random,first-legal,heuristic"


def test_gauntlet_spec_seats_the_bot_against_the_rungs() -> None:
    spec = gauntlet_spec("mybot", "sedma", rungs=("heuristic", "mc"), rounds=2, seed=3)
    assert spec.bots == ("mybot", "ladder-heuristic", "ladder-mc")
    assert spec.head_to_head and spec.options.duplicate and spec.preset == "sedma"
    with pytest.raises(ConfigError):
        gauntlet_spec("ladder-mc", "sevens")
    with pytest.raises(ConfigError):
        gauntlet_spec("mybot", "chess")


def test_gauntlet_season_reports_where_the_bot_lands(redis_url: str, tmp_path: Path) -> None:
    url = ["--redis-url", redis_url]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):  # the reference bots are not registered yet
        assert arena_main(["ladder", "gauntlet", "mybot", "--rungs", RUNGS, *url]) == 1
    assert "arena ladder serve" in err.getvalue()
    with Platform(tmp_path / "p", redis_url=redis_url) as p:
        p.start_redis()
        p.start_referee()
        p.start_workers(processes=1, per_process=2)
        p.register_bots(["mybot"])
        p.start_bot("mybot", "heuristic", seed=1)
        serve = subprocess.Popen(
            arena_command(
                "ladder", "serve", "--server", f"127.0.0.1:{p.port}", "--rungs", RUNGS, *url
            ),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            conn = store.connect(redis_url)
            deadline = time.monotonic() + 30
            names = ["mybot", "ladder-random", "ladder-first-legal", "ladder-heuristic"]
            while not all(conn.sismember(keys.BOTS, n) for n in names):
                assert time.monotonic() < deadline and serve.poll() is None
                time.sleep(0.1)
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                argv = ["ladder", "gauntlet", "mybot", "--rungs", RUNGS, "--rounds", "1"]
                assert arena_main([*argv, "--name", "g1", "--seed", "9", "--start", *url]) == 0
            assert "arena standings g1" in out.getvalue()
            deadline = time.monotonic() + 120
            while store.get_season(conn, "g1")["state"] not in store.ENDED:
                assert time.monotonic() < deadline, store.get_season(conn, "g1")
                time.sleep(0.2)
            assert store.get_season(conn, "g1")["state"] == "finished"
            standings = store.get_standings(conn, "g1")
            assert standings is not None
            rows = {r["bot"]: r for r in standings["rows"]}
            assert set(rows) == set(names)
            for row in rows.values():
                assert row["deals"] == 4 and row["timeouts"] == 0 and row["invalid_actions"] == 0
        finally:
            stop_process(serve)
