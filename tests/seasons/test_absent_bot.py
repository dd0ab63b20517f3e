"""A registered bot that never connects: ``season create`` and ``season
start`` name it (the CLI on stderr, the League API in ``SeasonInfo``), and each of its
decisions is judged ``disconnected`` within its clock plus ``absent_ms``, as
examples/season.toml and docs/workers.md say, not after ``queue_ms``.

Real stack: ``arena referee`` (League API, season driver) and ``arena worker`` processes on
the session's embedded Redis, three SDK bots over gRPC, and one bot that is only registered.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest

from arena.v1 import league_pb2, league_pb2_grpc
from referee import bots, keys, queue
from referee.cli.main import main
from referee.embedded_redis import EmbeddedRedis
from referee.seasons import store
from sample_bots.first_legal import FirstLegalBot
from tests.platform_fixtures import bots_in_threads, running_platform

pytestmark = pytest.mark.slow

PRESENT = ["ab-1", "ab-2", "ab-3"]
GHOST = "ab-ghost"
MOVE, BANK, GRACE, ABSENT, QUEUE = 300, 400, 50, 1500, 30_000


def season_toml(name: str) -> str:
    entrants = ", ".join(f'"{b}"' for b in [*PRESENT, GHOST])
    return f"""
name = "{name}"
game = "sevens"
preset = "sevens"
bots = [{entrants}]
table_size = 4
deals_per_match = 1
seed = 5

[time_control]
move_ms = {MOVE}
bank_ms = {BANK}
grace_ms = {GRACE}
queue_ms = {QUEUE}
absent_ms = {ABSENT}

[options]
duplicate = false
"""


def test_a_bot_that_never_connects_is_named_and_judged_within_its_clock_plus_absent_ms(
    embedded_redis: EmbeddedRedis, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = embedded_redis.url
    admin = secrets.token_urlsafe(12)
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(
            running_platform(url, referee_env={"ARENA_ADMIN_TOKEN": admin})
        )
        conn = platform.conn
        stack.enter_context(bots_in_threads(platform, {b: FirstLegalBot() for b in PRESENT}))
        bots.register(conn, GHOST)
        deadline = time.monotonic() + 30
        while not all(conn.hlen(keys.bot_streams(b)) for b in PRESENT):
            assert time.monotonic() < deadline, "the SDK bots did not connect"
            time.sleep(0.05)

        # The CLI: create names the bot with no stream (stderr), and so does start.
        toml = tmp_path / "cli.toml"
        toml.write_text(season_toml("ab-cli"))
        assert main(["season", "create", str(toml), "--redis-url", url]) == 0
        out = capsys.readouterr()
        assert "season ab-cli: created" in out.out
        warning = [line for line in out.err.splitlines() if line.startswith("warning:")]
        assert len(warning) == 1 and GHOST in warning[0], out.err
        assert not any(b in warning[0] for b in PRESENT), warning
        assert "absent_ms" in warning[0]
        assert main(["season", "start", "ab-cli", "--redis-url", url]) == 0
        started = capsys.readouterr()
        assert "warning:" in started.err and GHOST in started.err, started.err

        # The League API: the answer names it too.
        channel = grpc.insecure_channel(platform.server)
        stack.callback(channel.close)
        stub = league_pb2_grpc.LeagueStub(channel)
        auth = [("authorization", f"Bearer {admin}")]
        created = stub.CreateSeason(
            league_pb2.CreateSeasonRequest(toml=season_toml("ab-api")), metadata=auth
        )
        assert list(created.bots_without_stream) == [GHOST]
        assert GHOST in created.warning and "absent_ms" in created.warning
        begun = stub.StartSeason(league_pb2.SeasonRef(season="ab-api"), metadata=auth)
        assert list(begun.bots_without_stream) == [GHOST] and GHOST in begun.warning

        deadline = time.monotonic() + 150
        for season in ("ab-cli", "ab-api"):
            while store.get_season(conn, season)["state"] not in store.ENDED:
                assert time.monotonic() < deadline, store.match_states(conn, season)
                time.sleep(0.2)

        # Each decision asked of the ghost was judged within clock + absent_ms (its bank is
        # untouched: nothing was in its hands), far from the 30 s of queue_ms.
        judged_in = MOVE + BANK + GRACE + ABSENT
        for season in ("ab-cli", "ab-api"):
            for result in store.committed_results(conn, season):
                record = queue.get_record(conn, result["match_id"])
                assert record is not None
                ghost_seat = result["seats"].index(GHOST)
                asked = [
                    s
                    for s in record["steps"]
                    if s.get("seat") == ghost_seat and "request" in s and s["source"] == "bot"
                ]
                assert len(asked) == 3, asked  # strikes = 3, then the autopilot
                for step in asked:
                    assert step["reason"] == "disconnected", step
                    assert step["bank_left_ms"] == BANK
                    # a loaded machine may be late by seconds, never by queue_ms
                    assert 0.9 * judged_in <= step["wall_ms"] <= judged_in + 8_000, step
                stats = result["stats"][ghost_seat]
                assert stats["timeouts"] == 3 and stats["autopilot"]
