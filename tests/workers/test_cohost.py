"""Co-hosted matches on the real stack (docs/workers.md "Co-hosted matches"): ``arena
referee --matches N`` runs a match host in the referee's process; a decision for a bot that
referee holds is a call on its Hub, one for a bot on another referee goes over the internal
stream as from any host.

* a co-hosted match whose bots sit on two referees: the co-hosting referee's own bots
  in-process, the other's over the link; the result equals an undisturbed run;
* the referee SIGKILLed with co-hosted matches in flight: a separate ``arena worker`` host's
  janitor re-runs every one of them (a new attempt, re-dealt), none lost or committed twice,
  each equal to an undisturbed run of the deals it played; SIGTERMed: its host stops first,
  hands back what did not finish within its grace, and a separate host plays them the same
  way;
* a season played by a referee's own host equals the same season on a separate host;
* ``rq info`` lists the co-hosted host as a worker.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from referee import bots, keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.match.replay import verify_record
from referee.match.row import lean_result
from referee.match.spec import MatchSpec
from referee.procs import arena_command, start_referee, stop_process
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from sample_bots.sdk import Bot, Turn
from tests.platform_fixtures import bots_on
from tests.redeal import redealt_as_revealed
from tests.workers.test_e2e import spec_of, stream_count, wait_done
from tests.workers.test_faults import SteadyBot, enqueue_rotated, run_reference, wait_running

pytestmark = pytest.mark.slow

STALE_S = 2.0


@contextlib.contextmanager
def client(url: str) -> Iterator[redis.Redis]:
    conn = redis.Redis.from_url(url, decode_responses=True)
    try:
        conn.flushall()
        yield conn
    finally:
        conn.close()


def referee_id_of(conn: redis.Redis, bot: str) -> str:
    entries = [json.loads(v) for v in conn.hvals(keys.bot_streams(bot))]
    assert entries, f"{bot} has no stream"
    return str(entries[0]["referee"])


def wait_streams(conn: redis.Redis, names: list[str], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    for name in names:
        while not conn.hlen(keys.bot_streams(name)):
            assert time.monotonic() < deadline, f"{name} did not connect"
            time.sleep(0.02)


def test_a_cohosted_match_reaches_a_bot_on_another_referee(
    embedded_redis: EmbeddedRedis,
) -> None:
    url = embedded_redis.url
    with client(url) as conn, contextlib.ExitStack() as stack:
        # B first, so that it is stopped last
        referee_b, server_b = start_referee(url)
        stack.callback(stop_process, referee_b, 20)
        lines: list[str] = []
        referee_a, server_a = start_referee(url, "--matches", "4", on_line=lines.append)
        stack.callback(stop_process, referee_a, 20)
        local: dict[str, Bot] = {f"co-a{i}": SteadyBot() for i in range(3)}
        remote: dict[str, Bot] = {"co-b0": SteadyBot()}
        with bots_on(conn, server_a, local), bots_on(conn, server_b, remote):
            wait_streams(conn, [*local, *remote])
            seats = ["co-a0", "co-b0", "co-a1", "co-a2"]
            deals = (DealSpec(seed=61), DealSpec(seed=62, rotation=1))
            spec = spec_of("co-split", "fan-tan", seats, deals=deals, season="")
            assert queue.enqueue_match(conn, spec)
            wait_done(conn, "co-split", timeout=60)
            # the co-hosted host ran it (no other host exists), in referee A's process
            worker = queue.match_status(conn, "co-split")["worker"]
            assert worker.startswith(referee_id_of(conn, "co-a0")), worker
            a_id, b_id = referee_id_of(conn, "co-a0"), referee_id_of(conn, "co-b0")
            assert a_id != b_id
            reference = run_reference(conn, spec, "co-split-ref")
        result = queue.get_result(conn, "co-split")
        record = queue.get_record(conn, "co-split")
        assert result is not None and record is not None
        assert [s["timeouts"] for s in result["stats"]] == [0, 0, 0, 0]
        assert all(s["decisions"] > 0 for s in result["stats"])  # co-b0 too, over the link
        assert result["result"] == reference["result"]
        assert lean_result(verify_record(record)) == result["result"]
        assert stream_count(conn, "co-split") == 1
        # A's own bots in-process, B's over the internal stream (workers.link.Router)
        assert any(f"link to referee {a_id}: in-process" in line for line in lines), lines
        assert any(f"link to referee {b_id}: 127.0.0.1:" in line for line in lines), lines


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_a_referee_stopped_with_cohosted_matches_loses_none(
    embedded_redis: EmbeddedRedis, how: signal.Signals
) -> None:
    """SIGKILL: the co-hosted matches die with the referee; a separate host's janitor
    re-runs them. SIGTERM: the referee stops its host first (matches finish within
    --grace-s, 1 s here, the rest are handed back at once), then drains and exits."""
    url = embedded_redis.url
    names = [f"ck-{i}" for i in range(4)]
    with client(url) as conn, contextlib.ExitStack() as stack:
        referee_b, server_b = start_referee(url)
        stack.callback(stop_process, referee_b, 20)
        referee_a, server_a = start_referee(
            url, "--matches", "8", "--stale-s", str(STALE_S), "--grace-s", "1"
        )
        stack.callback(stop_process, referee_a, 20)
        named: dict[str, Bot] = {n: SteadyBot(delay_s=0.02, concurrency=8) for n in names}
        with bots_on(conn, f"{server_a},{server_b}", named):  # A first, then B
            wait_streams(conn, names)
            deals = (DealSpec(seed=910), DealSpec(seed=911, rotation=1))
            ids = enqueue_rotated(conn, "ck-m", names, 8, deals)
            wait_running(conn, 8)  # all co-hosted at once
            # rq info lists the co-hosted host (an RQ worker in the referee's process)
            host = queue.match_status(conn, ids[0])["worker"]
            assert conn.hget(f"rq:worker:{host}", "pid") == str(referee_a.pid)
            rq = Path(sys.executable).with_name("rq")
            out = subprocess.run(
                [str(rq), "info", "--url", url], capture_output=True, text=True, timeout=30
            ).stdout
            assert host in out and "busy" in out, out
            # a separate host, whose janitor re-runs what the killed referee held
            pool = subprocess.Popen(
                arena_command("worker", "-n", "1", "--redis-url", url, "--stale-s", str(STALE_S)),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            stack.callback(stop_process, pool, 20)
            in_flight = [m for m in ids if queue.match_status(conn, m)["state"] == "running"]
            assert len(in_flight) >= 6
            referee_a.send_signal(how)
            killed_at = time.monotonic()
            # SIGTERM: grace 1 s, the drain's 5 s, a few bounded steps
            assert referee_a.wait(30) == (0 if how == signal.SIGTERM else -signal.SIGKILL)

            def moved_on(match_id: str) -> bool:
                """Handed back or re-run (a new attempt), or (SIGTERM) finished in the grace."""
                status = queue.match_status(conn, match_id)
                return status["state"] == "done" or int(status.get("attempt", 1)) >= 2

            while not all(moved_on(m) for m in in_flight):
                assert time.monotonic() < killed_at + STALE_S + 15, {
                    m: queue.match_status(conn, m) for m in ids
                }
                time.sleep(0.05)
            wait_done(conn, *ids, timeout=90)
            retried = []
            for match_id in ids:  # committed exactly once each
                assert stream_count(conn, match_id) == 1
                record = queue.get_record(conn, match_id)
                result = queue.get_result(conn, match_id)
                assert record is not None and result is not None
                assert lean_result(verify_record(record)) == result["result"]
                if result["attempt"] >= 2:
                    redealt_as_revealed(conn, match_id, record)
                    retried.append(match_id)
                assert all(s["timeouts"] == 0 for s in result["stats"])
            # the matches take seconds each: most were cut off mid-match, not finished
            assert len(retried) >= len(in_flight) // 2, (retried, in_flight)
            for match_id in retried[:1]:  # equal to an undisturbed run of its deals
                record = queue.get_record(conn, match_id)
                assert record is not None
                spec = MatchSpec.from_dict(record["spec"])
                reference = run_reference(conn, spec, f"ref-{match_id}")
                result = queue.get_result(conn, match_id)
                assert result is not None and result["result"] == reference["result"]


SEASON_BOTS = [f"cs-{i}" for i in range(5)]


@dataclass
class SeqBot(Bot):
    """Deterministic: the legal action the turn's ``seq`` picks (a pure function of the
    turn, so a bot with two streams plays the same on either)."""

    def choose(self, turn: Turn) -> str:
        return turn.legal_actions[turn.seq % len(turn.legal_actions)]


def _season(conn: redis.Redis, name: str) -> dict[str, Any]:
    spec = SeasonSpec.from_dict(
        {
            "name": name,
            "game": "sevens",
            "preset": "fan-tan",
            "bots": SEASON_BOTS,
            "table_size": 4,
            "deals_per_match": 2,
            "seed": 777,
            "time_control": {"move_ms": 3000, "bank_ms": 10000, "grace_ms": 100},
            "options": {"window": 5},
        }
    )
    store.create_season(conn, spec)
    store.start_season(conn, name)
    deadline = time.monotonic() + 90
    while (info := store.get_season(conn, name))["state"] not in store.ENDED:
        assert time.monotonic() < deadline, info
        time.sleep(0.1)
    assert info["state"] == store.FINISHED and info["matches_failed"] == "0", info
    out = {}
    for r in store.committed_results(conn, name):
        out[r["match_id"].rsplit("-", 1)[-1]] = (r["seats"], r["result"])
    return out


def _hosts(conn: redis.Redis, season: str) -> set[str]:
    return {str(conn.hget(keys.match_state(m), "worker")) for m in store.match_states(conn, season)}


def _start_bots(
    conn: redis.Redis, server: str, tokens: dict[str, str], stack: contextlib.ExitStack
) -> None:
    for name, token in tokens.items():
        bot = SeqBot()
        bot.name = name
        stop = threading.Event()
        thread = threading.Thread(
            target=bot.run, args=(server, token), kwargs={"stop": stop}, daemon=True
        )
        thread.start()
        stack.callback(thread.join, 10)
        stack.callback(stop.set)


def test_a_season_on_cohosted_matches_equals_one_on_separate_hosts(
    embedded_redis: EmbeddedRedis,
) -> None:
    """The season driver in the referee, SDK bots: a season played by a separate ``arena
    worker`` host, then the same season (same seed) played by a referee's own match host
    (the bots now also hold streams on that referee, which the host prefers: no internal
    stream); the results are the same, match by match."""
    url = embedded_redis.url
    with client(url) as conn, contextlib.ExitStack() as stack:
        tokens = {name: bots.register(conn, name) for name in SEASON_BOTS}
        referee_b, server_b = start_referee(url)
        stack.callback(stop_process, referee_b, 20)
        pool = subprocess.Popen(
            arena_command("worker", "-n", "1", "--redis-url", url),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _start_bots(conn, server_b, tokens, stack)
        wait_streams(conn, SEASON_BOTS)
        try:
            separate = _season(conn, "sep")
        finally:
            stop_process(pool, 20)
        assert not any(h.endswith("-matches") for h in _hosts(conn, "sep"))
        lines: list[str] = []
        referee_a, server_a = start_referee(url, "--matches", "4", on_line=lines.append)
        stack.callback(stop_process, referee_a, 20)
        _start_bots(conn, server_a, tokens, stack)
        deadline = time.monotonic() + 20
        while not all(conn.hlen(keys.bot_streams(n)) == 2 for n in SEASON_BOTS):
            assert time.monotonic() < deadline, "the bots did not connect to referee A"
            time.sleep(0.02)
        cohosted = _season(conn, "co")
        hosts = _hosts(conn, "co")
        assert len(hosts) == 1 and hosts.pop().endswith("-matches")
        # the bots' streams on A were preferred to those on B: no internal stream at all
        links = [line for line in lines if "link to referee" in line]
        assert links and all(line.endswith(": in-process") for line in links), links
    assert len(cohosted) == 5 and cohosted == separate
