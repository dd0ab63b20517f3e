"""A bot whose code fails must not look healthy: a stdio program that
exits on every question (the bridge answers for it) and an SDK bot whose ``choose`` raises
(the SDK answers for it) play a real season on a real referee and real match hosts. Their
answers say they were fallbacks (``Action.fallback``), and the match record, the standings
(data, CSV, the League API's rows), the metrics and the bot page count them; a season with
``fallback = "invalid"`` refuses them as invalid actions."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from referee import bots, keys, queue
from referee.cli.seasons import standings_csv
from referee.embedded_redis import EmbeddedRedis
from referee.match.season_row import StandingRow
from referee.match.spec import TimeControl
from referee.metrics_store import read_counters
from referee.procs import stop_process
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from sample_bots.first_legal import FirstLegalBot
from sample_bots.sdk import Bot, Turn
from tests.metrics.http_helpers import get, running_server
from tests.platform_fixtures import Platform, bots_in_threads, running_platform
from tests.polyglot.helpers import BROKEN_DIR

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "referee.cli.main"]
SEATS = ["fb-stdio", "fb-raises", "fb-ok-1", "fb-ok-2"]


class Raises(Bot):
    """An SDK bot whose code fails on every turn."""

    def choose(self, turn: Turn) -> str:
        raise RuntimeError("this bot's choose is broken")


@contextlib.contextmanager
def stdio_bot(platform: Platform, log: Path) -> Iterator[None]:
    token = bots.register(platform.conn, "fb-stdio")
    argv = [*CLI, "bridge", "--server", platform.server, "--token", token, "--"]
    argv += [sys.executable, str(BROKEN_DIR / "gives_up.py")]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 30
            while not platform.conn.hlen(keys.bot_streams("fb-stdio")):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            yield
        finally:
            stop_process(proc, 15)


def season(name: str, fallback: str) -> SeasonSpec:
    return SeasonSpec(
        name=name,
        game="sevens",
        preset="sevens",
        bots=tuple(SEATS),
        table_size=4,
        deals_per_match=2,
        seed=77,
        # The bridge's restarts of the crashing program back off to 2 s, past the program's
        # budget: from then on the bridge answers at once.
        time_control=TimeControl(move_ms=1000, bank_ms=0, grace_ms=300),
        options=SeasonOptions(duplicate=False, fallback=fallback),
    )


def wait_finished(platform: Platform, names: list[str], timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while any(store.get_season(platform.conn, n)["state"] not in store.ENDED for n in names):
        assert time.monotonic() < deadline, [store.get_season(platform.conn, n) for n in names]
        time.sleep(0.2)


def rows(platform: Platform, name: str) -> dict[str, StandingRow]:
    standings = store.get_standings(platform.conn, name)
    assert standings is not None
    return {r["bot"]: r for r in standings["rows"]}


def test_fallback_answers_are_counted_everywhere_and_can_be_refused(
    embedded_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(running_platform(embedded_redis.url))
        stack.enter_context(stdio_bot(platform, tmp_path / "stdio.log"))
        healthy = {"fb-ok-1": FirstLegalBot(), "fb-ok-2": FirstLegalBot(), "fb-raises": Raises()}
        stack.enter_context(bots_in_threads(platform, healthy))
        for spec in (season("fb-count", "count"), season("fb-invalid", "invalid")):
            store.create_season(platform.conn, spec)
            store.start_season(platform.conn, spec.name)
        wait_finished(platform, ["fb-count", "fb-invalid"])
        conn = platform.conn

        # fallback = "count": every answer of the failing bots is a counted fallback,
        # applied as their move (no invalid action, no timeout).
        results = store.committed_results(conn, "fb-count")
        assert results
        for result in results:
            for stats in result["stats"]:
                if stats["bot"] in ("fb-stdio", "fb-raises"):
                    assert stats["decisions"] > 0, stats
                    assert stats["fallbacks"] == stats["decisions"], stats
                    assert stats["invalid_actions"] == 0 and stats["timeouts"] == 0, stats
                else:
                    assert stats["fallbacks"] == 0, stats
            record = queue.get_record(conn, result["match_id"]) or {}
            seat_of = {bot: seat for seat, bot in enumerate(result["seats"])}
            reasons = {
                step.get("fallback")
                for step in record["steps"]
                if step.get("seat") == seat_of["fb-raises"] and step.get("source") == "bot"
            }
            assert reasons == {"choose_raised"}, reasons
            stdio = [
                s
                for s in record["steps"]
                if s.get("seat") == seat_of["fb-stdio"] and s.get("source") == "bot"
            ]
            assert stdio and all(s.get("fallback") for s in stdio), stdio[:3]
            assert all(s["reason"] == "fallback" for s in stdio), stdio[:3]
        counted = rows(platform, "fb-count")
        assert counted["fb-raises"]["fallbacks"] > 0
        assert counted["fb-stdio"]["fallbacks"] > 0
        assert counted["fb-ok-1"]["fallbacks"] == 0
        assert counted["fb-raises"]["invalid_actions"] == 0
        standings = store.get_standings(conn, "fb-count")
        assert standings is not None
        csv_text = standings_csv(standings)
        assert "fallbacks" in csv_text.splitlines()[0].split(",")

        # fallback = "invalid": the same answers are refused as invalid actions (failures:
        # after `strikes` of them the autopilot plays the seat).
        refused = rows(platform, "fb-invalid")
        for bot in ("fb-raises", "fb-stdio"):
            assert refused[bot]["fallbacks"] > 0, refused[bot]
            assert refused[bot]["invalid_actions"] == refused[bot]["fallbacks"], refused[bot]
            assert refused[bot]["autopilot_seats"] == 1, refused[bot]
        assert refused["fb-ok-1"]["invalid_actions"] == 0

        # metrics: one counter per season and bot, as the standings say
        counters = read_counters(conn)["arena_fallbacks_total"]
        for name in ("fb-count", "fb-invalid"):
            for bot in ("fb-raises", "fb-stdio"):
                assert (
                    counters[f"bot={bot},season={name}"] == rows(platform, name)[bot]["fallbacks"]
                )

        # the bot page shows them, with the reason
        with running_server(embedded_redis.url) as port:
            page = get(port, "/bot/fb-raises").text
            assert "fallbacks" in page and "choose_raised" in page, page[-3000:]
            exposition = get(port, "/metrics").text
            assert 'arena_fallbacks_total{bot="fb-raises",season="fb-count"}' in exposition
    assert "marked as a fallback" in (tmp_path / "stdio.log").read_text()
