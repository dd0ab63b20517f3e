"""``arena play``: a person in a terminal plays a whole casual match against SDK bots on a
real platform (referee and worker processes); their seat goes through the public bot
protocol like any bot's."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from referee import keys
from referee.cli.play import action_text, parse_choice, render_turn
from referee.procs import arena_command
from sample_bots.first_legal import FirstLegalBot
from tests.platform_fixtures import bots_in_threads, running_platform

pytestmark = pytest.mark.slow


def test_a_person_plays_a_whole_match_from_the_terminal(redis_url: str) -> None:
    with (
        running_platform(redis_url, workers=1) as platform,
        bots_in_threads(platform, {n: FirstLegalBot() for n in ("fl-a", "fl-b", "fl-c")}),
    ):
        # A person who types a wrong answer once, then always the first legal action.
        answers = "nonsense\n" + "1\n" * 60
        options = {
            "--redis-url": platform.url,
            "--server": platform.server,
            "--game": "sevens",
            "--preset": "fan-tan",
            "--against": "fl-a,fl-b,fl-c",
            "--name": "tess",
            "--deals": "1",
            "--seed": "7",
        }
        run = subprocess.run(
            arena_command("play", *(f"{k}={v}" for k, v in options.items())),
            input=answers,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        out = run.stdout
        assert "match over: totals" in out and "your hand:" in out
        assert "choose 1-" in out  # the wrong answer was explained, not sent
        match_id = out.split(" of ", 1)[1].split(";", 1)[0]
        record = json.loads(platform.conn.get(keys.match_record(match_id)) or "{}")
        assert record["spec"]["seats"][0] == "human-tess" and not record["spec"]["season"]
        mine = [s for s in record["steps"] if s["seat"] == 0 and s["source"] == "bot"]
        assert mine and all(s["status"] == "accepted" for s in mine)
        assert out.count("your choice> ") == len(mine) + 1  # one retry after "nonsense"


def test_turn_text_numbers_the_legal_actions_and_reads_numbers_or_actions() -> None:
    legal = ["6H", "8D+9D", "pass"]
    payload: dict[str, Any] = {
        "seat": 1,
        "legal_actions": legal,
        "clock": {"move_ms": 60000, "bank_ms": 300000, "grace_ms": 50},
        "observation": {
            "deal_index": 0,
            "table": {"C": [], "D": ["7D"], "H": ["7H"], "S": []},
            "pot": 3,
            "hand_sizes": [5, 4, 6],
            "hand": ["6H", "8D", "9D", "TS"],
        },
    }
    text = render_turn(payload, ["a", "me", "c"])
    assert "♦ diamonds 7♦" in text and "your hand: 6♥ 8♦ 9♦ 10♠" in text
    assert " 2) 8♦ 9♦   [8D+9D]" in text and "a 5 cards, c 6 cards" in text
    assert parse_choice("2", legal) == "8D+9D"
    assert parse_choice(" pass ", legal) == "pass"
    assert parse_choice("6h", legal) == "6H"
    assert parse_choice("9", legal) is None
    assert action_text("TS") == "10♠"
