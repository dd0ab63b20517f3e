"""Seasons end to end: a real referee (League API + season driver), real worker processes
and six SDK bot processes over gRPC, on the test session's embedded Redis."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import league_pb2, league_pb2_grpc
from referee import keys, queue
from referee.match.spec import MatchSpec
from referee.seasons import store
from referee.seasons.platform import Platform
from referee.seasons.verify import verify_season
from tests.redeal import redealt_as_revealed

pytestmark = pytest.mark.slow

BOTS = [
    ("fl-1", "first-legal"),
    ("fl-2", "first-legal"),
    ("rnd-1", "det-random"),
    ("rnd-2", "det-random"),
    ("hs-1", "det-hold-sevens"),
    ("hs-2", "det-hold-sevens"),
]
SEED = 4242
# Fields that depend on the order results were committed in (incremental ratings).
ORDER_DEPENDENT = {"live_elo", "openskill_mu", "openskill_sigma", "openskill_ordinal"}


def season_toml(name: str) -> str:
    bots = ", ".join(f'"{n}"' for n, _ in BOTS)
    return f"""
name = "{name}"
game = "sevens"
preset = "fan-tan"
bots = [{bots}]
table_size = 4
deals_per_match = 4
seed = {SEED}

[time_control]
move_ms = 3000
bank_ms = 10000

[options]
window = 4
"""


@pytest.fixture
def platform(redis_url: str, tmp_path: Path) -> Iterator[Platform]:
    with Platform(tmp_path / "platform", redis_url=redis_url) as p:
        p.start_redis()
        p.start_referee()
        p.register_bots([n for n, _ in BOTS])
        for i, (name, kind) in enumerate(BOTS):
            p.start_bot(name, kind, seed=100 + i % 2)
        p.wait_bots_connected()
        yield p


@contextlib.contextmanager
def league(p: Platform) -> Iterator[Any]:
    channel = grpc.insecure_channel(f"127.0.0.1:{p.port}")
    try:
        yield league_pb2_grpc.LeagueStub(channel)
    finally:
        channel.close()


def wait_finished(conn: redis.Redis, season: str, timeout: float = 150.0) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        info = store.get_season(conn, season)
        if info["state"] in store.ENDED:
            return info
        time.sleep(0.2)
    raise AssertionError(f"season {season} not finished: {store.get_season(conn, season)}")


def wait_done(conn: redis.Redis, season: str, at_least: int, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while int(store.get_season(conn, season)["matches_done"]) < at_least:
        assert time.monotonic() < deadline, f"fewer than {at_least} matches done"
        time.sleep(0.1)


def kill_a_busy_worker(conn: redis.Redis, season: str | Callable[[], str]) -> None:
    """SIGKILL the match-host process running a match of ``season`` that has shown the bots
    its deals (with every match it runs); the pool starts a new host and the janitor
    re-enqueues the matches. ``season`` may be a function, asked again on each look: a
    ladder's current batch can end, and the next begin, while this looks."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        name = season() if callable(season) else season
        for match_id, state in store.match_states(conn, name).items():
            if state != "running" or conn.hget(keys.match_state(match_id), "revealed") is None:
                continue
            worker = str(conn.hget(keys.match_state(match_id), "worker") or "")
            pool_pid = worker.rsplit("-", 2)[-2] if worker.count("-") >= 2 else ""
            children = Path(f"/proc/{pool_pid}/task/{pool_pid}/children")
            if pool_pid.isdigit() and children.exists():
                for pid in children.read_text().split():
                    os.kill(int(pid), signal.SIGKILL)
                return
        time.sleep(0.05)
    raise AssertionError("no running match to disturb")


def comparable(standings: dict[str, Any]) -> list[dict[str, Any]]:
    return [{k: v for k, v in row.items() if k not in ORDER_DEPENDENT} for row in standings["rows"]]


def results_by_index(conn: redis.Redis, season: str) -> dict[str, Any]:
    out = {}
    for r in store.committed_results(conn, season):
        out[r["match_id"].rsplit("-", 1)[-1]] = (r["seats"], r["result"])
    return out


def test_season_through_the_league_api_then_disturbed_gives_the_same_standings(
    platform: Platform,
) -> None:
    conn = store.connect(platform.redis_url)
    admin = [("authorization", f"Bearer {platform.admin_token}")]
    platform.start_workers(processes=2, per_process=1)

    # --- undisturbed season, driven through the League API ---
    with league(platform) as stub:
        with pytest.raises(grpc.RpcError) as refused:
            stub.CreateSeason(league_pb2.CreateSeasonRequest(toml=season_toml("a")))
        assert refused.value.code() == grpc.StatusCode.UNAUTHENTICATED
        with pytest.raises(grpc.RpcError) as bad:
            stub.CreateSeason(
                league_pb2.CreateSeasonRequest(
                    toml=season_toml("a").replace("table_size = 4", "table_size = 9")
                ),
                metadata=admin,
            )
        assert bad.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        created = stub.CreateSeason(
            league_pb2.CreateSeasonRequest(toml=season_toml("a")), metadata=admin
        )
        assert created.state == "created" and created.matches_total == 15
        assert not created.seed_revealed and created.seed == 0
        started = stub.StartSeason(league_pb2.SeasonRef(season="a"), metadata=admin)
        assert started.state == "running" and len(started.seed_sha256) == 64
    info_a = wait_finished(conn, "a")
    assert info_a["state"] == "finished" and info_a["matches_done"] == "15"
    with league(platform) as stub:
        season = stub.GetSeason(league_pb2.SeasonRef(season="a"))
        assert season.seed_revealed and season.seed == SEED
        standings = stub.GetStandings(league_pb2.SeasonRef(season="a"))
        assert [r.bot for r in standings.rows] and len(standings.rows) == 6
        assert standings.matches_done == 15
        assert all(r.matches == 10 and r.deals == 40 for r in standings.rows)
        assert sum(r.deals_won for r in standings.rows) == 60
        assert sum(r.score for r in standings.rows) == 0  # chips sum to zero (SV-31)
        assert all(r.elo_low < r.elo < r.elo_high for r in standings.rows)
        matches = stub.ListMatches(league_pb2.ListMatchesRequest(season="a", limit=100))
        assert len(matches.matches) == 15 and {m.state for m in matches.matches} == {"done"}
        record = stub.GetMatch(league_pb2.MatchRef(match_id="a-m0003"))
        assert json.loads(record.record_json)["initial_hands"]
        replay = stub.GetReplay(league_pb2.MatchRef(match_id="a-m0003"))
        assert "a-m0003" in replay.text or replay.text
        names = {s.season for s in stub.ListSeasons(league_pb2.ListSeasonsRequest()).seasons}
        assert "a" in names
        with pytest.raises(grpc.RpcError) as missing:
            stub.GetSeason(league_pb2.SeasonRef(season="nope"))
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    report = verify_season(conn, "a")
    assert report.ok and report.deals_checked == 60, report.problems

    # --- state changes through the League API ---
    with league(platform) as stub:
        request = league_pb2.CreateSeasonRequest(
            name="c",
            game="sedma",
            preset="sedma",
            bots=["fl-1", "rnd-1", "hs-1"],
            table_size=4,
            deals_per_match=2,
            options_json='{"window": 1}',
        )
        created = stub.CreateSeason(request, metadata=admin)
        assert created.matches_total == 3 and created.deals_per_match == 2
        with pytest.raises(grpc.RpcError) as taken:
            stub.CreateSeason(request, metadata=admin)
        assert taken.value.code() == grpc.StatusCode.ALREADY_EXISTS
        with pytest.raises(grpc.RpcError) as not_now:
            stub.PauseSeason(league_pb2.SeasonRef(season="c"), metadata=admin)
        assert not_now.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "only when it is running" in not_now.value.details()
        with pytest.raises(grpc.RpcError) as no_token:
            stub.CancelSeason(league_pb2.SeasonRef(season="c"))
        assert no_token.value.code() == grpc.StatusCode.UNAUTHENTICATED
        stub.StartSeason(league_pb2.SeasonRef(season="c"), metadata=admin)
        paused = stub.PauseSeason(league_pb2.SeasonRef(season="c"), metadata=admin)
        assert paused.state == "paused" and not paused.seed_revealed
        resumed = stub.ResumeSeason(league_pb2.SeasonRef(season="c"), metadata=admin)
        assert resumed.state == "running"
        cancelled = stub.CancelSeason(league_pb2.SeasonRef(season="c"), metadata=admin)
        assert cancelled.state == "cancelled" and cancelled.seed_revealed

    # --- the same season (same seed) created by the CLI, disturbed in the middle ---
    toml = Path(platform.data_dir) / "b.toml"
    toml.write_text(season_toml("b"))
    cli = [sys.executable, "-m", "referee.cli.main"]
    out = subprocess.run(
        [*cli, "season", "create", str(toml), "--start", "--redis-url", platform.redis_url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "season b: running, 15 matches" in out.stdout
    wait_done(conn, "b", 3)
    platform.stop_referee(signal.SIGTERM)  # the referee restarts; results keep committing
    kill_a_busy_worker(conn, "b")  # SIGKILL a match host mid-match
    time.sleep(1.0)
    platform.start_referee()
    info_b = wait_finished(conn, "b")
    assert info_b["matches_done"] == "15" and info_b["matches_failed"] == "0"
    # the killed worker's match was retried from its seed (a new attempt) ...
    retried = [
        m
        for m in store.match_states(conn, "b")
        if int(conn.hget(keys.match_state(m), "retries") or 0) > 0
    ]
    assert retried, "the killed worker was running no match: the test disturbed nothing"
    # ... re-dealt (docs/DECISIONS.md, "A retried match is re-dealt": the killed attempt
    # showed the bots part of its deals; one killed before its first message is not),
    # and every match came out exactly as an undisturbed run of the deals it played: the
    # others as in season a, a re-dealt one as a one-off run of its recorded re-deal
    redealt = []
    for match_id in retried:
        record = queue.get_record(conn, match_id)
        assert record is not None and record["attempt"] >= 2
        if redealt_as_revealed(conn, match_id, record):
            redealt.append(match_id)
    assert redealt, "the killed host's match had shown its deals: its retry must be re-dealt"
    b_results, a_results = results_by_index(conn, "b"), results_by_index(conn, "a")
    redealt_idx = {m.rsplit("-", 1)[-1] for m in redealt}
    assert {k: v for k, v in b_results.items() if k not in redealt_idx} == {
        k: v for k, v in a_results.items() if k not in redealt_idx
    }
    for match_id in redealt:
        record = queue.get_record(conn, match_id)
        assert record is not None
        spec = MatchSpec.from_dict(record["spec"])
        reference = replace(spec, match_id=f"ref-{match_id}", season="")
        assert queue.enqueue_match(conn, reference)
    for match_id in redealt:
        deadline = time.monotonic() + 120
        while queue.get_result(conn, f"ref-{match_id}") is None:
            assert time.monotonic() < deadline, f"ref-{match_id} did not finish"
            time.sleep(0.1)
        ref_result = queue.get_result(conn, f"ref-{match_id}")
        assert ref_result is not None
        assert b_results[match_id.rsplit("-", 1)[-1]][1] == ref_result["result"]
    a, b = store.get_standings(conn, "a"), store.get_standings(conn, "b")
    assert a is not None and b is not None
    assert len(b["rows"]) == len(a["rows"]) and b["matches_done"] == 15
    # nothing was enqueued or counted twice
    assert conn.scard(store.counted_key("b")) == 15
    out = subprocess.run(
        [*cli, "season", "verify", "b", "--redis-url", platform.redis_url],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and "verified" in out.stdout, out.stdout + out.stderr
    # the tallies folded once per counted result, despite the kill and the retry
    assert "standings equal a recount" in out.stdout, out.stdout
    out = subprocess.run(
        [*cli, "standings", "b", "--csv", "--redis-url", platform.redis_url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.count("\n") == 7 and out.stdout.startswith("season,unit,bot,rank")
    export = Path(platform.data_dir) / "export"
    out = subprocess.run(
        [*cli, "season", "export", "b", str(export), "--redis-url", platform.redis_url],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "exported 15 matches" in out.stdout
    assert len(list((export / "replays").glob("b-m*.txt.gz"))) == 15
    assert len((export / "results.jsonl").read_text().splitlines()) == 15
    record = gzip.decompress((export / "matches" / "b-m0000.json.gz").read_bytes())
    assert json.loads(record)["initial_hands"]
    # compressed: each record several times smaller than its JSON
    assert (export / "matches" / "b-m0000.json.gz").stat().st_size * 4 < len(record)
    conn.close()
