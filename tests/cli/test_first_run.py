"""The small rough edges a first-time user met."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import redis

from referee import keys
from referee.cli.main import main as arena_main
from referee.games.base import Event, EventKind, Source
from referee.match.replay import _describe

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_each_group_once_with_a_description(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        arena_main(["--help"])
    out = capsys.readouterr().out
    assert "match match" not in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.startswith("    ")}
    for group in ("bot", "match", "season"):
        assert len(lines[group].split()) > 2, lines[group]  # a description follows the name


def test_replays_say_one_chip_not_one_chips() -> None:
    seats = ("a", "b", "c")
    forced = Event(EventKind.PASS, 1, 0, "pass", "forced", Source.BOT, {"chips": 1})
    assert _describe(forced, seats) == "seat 1 (b) passes (forced, 1 chip)"
    two = Event(EventKind.PASS, 1, 0, "pass", "voluntary", Source.BOT, {"chips": 2})
    assert _describe(two, seats) == "seat 1 (b) passes (voluntary, 2 chips)"
    illegal = Event(EventKind.ILLEGAL_PASS, 0, 0, "pass", "illegal_pass", Source.BOT, {"chips": 1})
    assert _describe(illegal, seats) == "seat 0 (a) ILLEGAL PASS (1 chip)"


@pytest.mark.slow
def test_the_proto_check_only_checks_and_says_nothing_of_writing() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/gen_proto.py", "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Writing" not in done.stdout + done.stderr


def test_match_run_wait_shows_the_queue_position(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``match run --wait`` said nothing while its match was queued; with no worker running
    it now says how many matches are ahead, then gives up with the hint to start one."""
    base = ["match", "run", "--game", "sevens", "--preset", "sevens", "--bots", "a,b,c",
            "--redis-url", redis_url]  # fmt: skip
    for n in range(2):
        assert arena_main([*base, "--match-id", f"ahead-{n}"]) == 0
    capsys.readouterr()
    code = arena_main([*base, "--match-id", "mine", "--wait", "--timeout", "1"])
    captured = capsys.readouterr()
    assert code == 1
    assert "mine: queued, 2 match(es) ahead of it (3 in the queue)" in captured.out
    assert "is a worker running" in captured.err


def test_match_run_names_the_bots_with_no_stream(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """As for ``season create``: ``match run`` with bots that hold no stream said
    nothing, and the match then judged them absent. It names them on stderr (a bot with
    a stream in the bot-streams directory is not named)."""
    conn = redis.Redis.from_url(redis_url, decode_responses=True)
    conn.hset(keys.bot_streams("nsa"), "referee-1:stream-1", "{}")
    base = ["match", "run", "--game", "sevens", "--preset", "sevens", "--bots", "nsa,nsb,nsc",
            "--redis-url", redis_url]  # fmt: skip
    assert arena_main([*base, "--match-id", "no-stream"]) == 0
    err = capsys.readouterr().err
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1, err
    assert "have no stream connected to any referee: nsb, nsc." in warnings[0]
    assert "match no-stream" in warnings[0] and "absent_ms" in warnings[0]
    conn.close()
