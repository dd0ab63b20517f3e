"""Full matches with bots in other languages: a real referee process, real worker processes,
the Node.js bot, and stdio programs (POSIX sh, Perl, a flaky Python script) behind
`arena bridge`, playing Sevens and Sedma against Python SDK bots."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from referee import bots, keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl
from referee.procs import stop_process
from sample_bots.first_legal import FirstLegalBot
from tests.platform_fixtures import Platform, bots_in_threads, running_platform
from tests.polyglot.helpers import BROKEN_DIR, STDIO_DIR, node_ready

pytestmark = pytest.mark.slow

CLI = [sys.executable, "-m", "referee.cli.main"]


@pytest.fixture(scope="module")
def platform(embedded_redis: EmbeddedRedis) -> Iterator[Platform]:
    with running_platform(embedded_redis.url) as running:
        yield running


def python_bots(
    platform: Platform, names: Sequence[str]
) -> contextlib.AbstractContextManager[dict[str, threading.Event]]:
    """First-legal SDK bots in threads, stopped afterwards."""
    return bots_in_threads(platform, {name: FirstLegalBot() for name in names})


@contextlib.contextmanager
def process_bot(argv: Sequence[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A bot process (Node, or `arena bridge`), its output in ``log``; stopped afterwards."""
    with log.open("wb") as out:
        proc = subprocess.Popen(list(argv), stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            stop_process(proc, 15)


def bridge_argv(
    platform: Platform, name: str, report: Path, *command: str, notify: bool = False
) -> list[str]:
    token = bots.register(platform.conn, name)
    options = ["--report-file", str(report), *(["--notify"] if notify else [])]
    return [*CLI, "bridge", "--server", platform.server, "--token", token, *options, "--", *command]


def spec(match_id: str, game: str, preset: str, seats: list[str], **kw: Any) -> MatchSpec:
    return MatchSpec(
        match_id=match_id,
        game=game,
        rules=get_game(game).preset(preset).to_dict(),
        seats=tuple(seats),
        seed=kw.pop("seed", 5),
        deals=(DealSpec(seed=kw.pop("deal_seed", 1234)),),
        season="polyglot",
        **kw,
    )


def play(platform: Platform, *specs: MatchSpec, timeout: float = 90.0) -> list[dict[str, Any]]:
    """Wait until every bot of the matches holds a stream (a bot with none is judged
    absent within its clock plus ``absent_ms``: a bot process still starting would lose
    its first decisions), enqueue the matches, wait for every one to be committed, return
    the results."""
    deadline = time.monotonic() + 60
    for bot in {seat for match in specs for seat in match.seats}:
        while not platform.conn.hlen(keys.bot_streams(bot)):
            assert time.monotonic() < deadline, f"{bot} did not connect within 60 s"
            time.sleep(0.05)
    for match in specs:
        assert queue.enqueue_match(platform.conn, match)
    deadline = time.monotonic() + timeout
    pending = {m.match_id for m in specs}
    while pending and time.monotonic() < deadline:
        for match_id in list(pending):
            state = queue.match_status(platform.conn, match_id)
            assert state.get("state") != "failed", state
            if state.get("state") == "done":
                pending.discard(match_id)
        time.sleep(0.1)
    assert not pending, {m: queue.match_status(platform.conn, m) for m in pending}
    results = []
    for match in specs:
        result = queue.get_result(platform.conn, match.match_id)
        assert result is not None
        results.append(dict(result))
    return results


def declines_accepted_results(platform: Platform, bot: str) -> bool:
    """What the bot's stream declared in Hello (``skip_accepted_results``, docs/PROTOCOL.md
    section 4), from its bot-streams directory record."""
    records = [json.loads(v) for v in platform.conn.hgetall(keys.bot_streams(bot)).values()]
    assert len(records) == 1, records
    return bool(records[0]["skip_accepted_results"])


def assert_clean_play(result: dict[str, Any], bot: str) -> None:
    """Every seat of ``bot`` decided by itself, legally and in time."""
    seats = [s for s in result["stats"] if s["bot"] == bot]
    assert seats, f"{bot} did not sit at {result['match_id']}"
    for stats in seats:
        assert stats["decisions"] > 0, stats
        assert stats["timeouts"] == 0, stats
        assert stats["invalid_actions"] == 0, stats
        assert stats["illegal_passes"] == 0, stats  # SV-18: never passes while able to play
        assert not stats["autopilot"], stats
        if not bot.endswith("flaky"):  # its own code chose every action
            assert stats["fallbacks"] == 0, stats


@pytest.mark.node
def test_node_bot_plays_sevens_and_sedma_against_python_bots(
    platform: Platform, tmp_path: Path
) -> None:
    node_dir = node_ready()
    token = bots.register(platform.conn, "node-js")
    argv = ["node", str(node_dir / "bot.js"), "--server", platform.server, "--token", token]
    with process_bot(argv, tmp_path / "node.log"), python_bots(platform, ["py-a", "py-b", "py-c"]):
        sevens, sedma = play(
            platform,
            spec("poly-node-sevens", "sevens", "sevens", ["node-js", "py-a", "py-b", "py-c"]),
            # SD-1: partners opposite; one bot may hold both seats of a partnership
            spec("poly-node-sedma", "sedma", "sedma", ["node-js", "py-a", "node-js", "py-a"]),
        )
        assert declines_accepted_results(platform, "node-js")  # it logs only the others
    assert_clean_play(sevens, "node-js")
    assert_clean_play(sedma, "node-js")
    if sevens["result"]["unit"] == "chips":
        assert sum(sevens["result"]["totals"]) == 0  # SV-31: chips only change hands
    assert sevens["result"]["winners"] and sedma["result"]["winners"]
    log = (tmp_path / "node.log").read_text()
    assert "connected as node-js" in log


def test_sh_and_perl_programs_play_through_the_bridge(platform: Platform, tmp_path: Path) -> None:
    sh = bridge_argv(
        platform, "stdio-sh", tmp_path / "sh.jsonl", "sh", str(STDIO_DIR / "firstlegal.sh")
    )
    perl = bridge_argv(
        platform, "stdio-perl", tmp_path / "perl.jsonl", "perl", str(STDIO_DIR / "smart.pl")
    )
    notes = bridge_argv(
        platform,
        "stdio-notes",
        tmp_path / "notes.jsonl",
        sys.executable,
        str(BROKEN_DIR / "notes.py"),
        notify=True,
    )
    with (
        process_bot(sh, tmp_path / "sh.log"),
        process_bot(perl, tmp_path / "perl.log"),
        process_bot(notes, tmp_path / "notes.log"),
        python_bots(platform, ["py-d"]),
    ):
        seats = ["stdio-sh", "stdio-perl", "py-d", "stdio-notes"]
        sevens, sedma = play(
            platform,
            spec("poly-stdio-sevens", "sevens", "sevens", seats),
            spec("poly-stdio-sedma", "sedma", "sedma", ["stdio-sh", "stdio-perl"] * 2),
        )
        # without --notify the bridge passes no result on: it declines the accepted ones
        assert declines_accepted_results(platform, "stdio-sh")
        assert not declines_accepted_results(platform, "stdio-notes")
        assert declines_accepted_results(platform, "py-d")  # on_result not overridden
    for result in (sevens, sedma):
        assert_clean_play(result, "stdio-sh")
        assert_clean_play(result, "stdio-perl")
    assert_clean_play(sevens, "stdio-notes")
    # --notify: the program also got the match notifications, and answered none of them
    log = (tmp_path / "notes.log").read_text()
    for note in ("note match_start", "note result accepted", "note deal_end", "note match_end"):
        assert f"[bot] {note}" in log, log[-2000:]
    # the bridge never had to step in for these programs
    assert not (tmp_path / "sh.jsonl").exists()
    assert not (tmp_path / "perl.jsonl").exists()


def test_bridge_answers_for_a_program_that_crashes_or_is_too_slow(
    platform: Platform, tmp_path: Path
) -> None:
    report = tmp_path / "flaky.jsonl"
    flaky = bridge_argv(
        platform, "stdio-flaky", report, sys.executable, str(BROKEN_DIR / "flaky.py")
    )
    flaky[flaky.index("--") : flaky.index("--")] = ["--margin-ms", "400"]
    # The program gets 1000 - 400 ms; the referee's limit is 1000 + 100 ms of grace: the
    # bridge's own answers have 500 ms to arrive, room enough on a loaded machine.
    time_control = TimeControl(move_ms=1000, bank_ms=0, grace_ms=100)
    with process_bot(flaky, tmp_path / "flaky.log"), python_bots(platform, ["py-f", "py-g"]):
        (result,) = play(
            platform,
            spec(
                "poly-flaky",
                "sevens",
                "sevens",
                ["stdio-flaky", "py-f", "py-g"],
                time_control=time_control,
            ),
        )
    # The program crashed once and overslept once; the bridge answered both decisions
    # itself within the clock, so the referee saw neither a timeout nor an invalid action,
    # but it counted them as fallbacks (Action.fallback): the program failed there.
    assert_clean_play(result, "stdio-flaky")
    (flaky_stats,) = [s for s in result["stats"] if s["bot"] == "stdio-flaky"]
    assert flaky_stats["fallbacks"] >= 2, flaky_stats
    events = [json.loads(line) for line in report.read_text().splitlines()]
    rescues = [e for e in events if e["event"] == "rescue"]
    assert {e["problem"] for e in rescues} >= {"exited", "timeout"}, events
    assert any(e["event"] == "exited" and e["exit_code"] == 5 for e in events)
    log = (tmp_path / "flaky.log").read_text()
    assert "(first legal action) for it" in log
    assert "[bot] flaky: crashing on purpose" in log
