"""``arena play``: a person in a terminal plays a whole casual match against SDK bots on a
real platform (referee and worker processes); their seat goes through the public bot
protocol like any bot's."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from typing import Any

import pytest

from referee import keys, queue
from referee.cli.play import parse_choice, render_turn
from referee.games.cards import action_symbols
from referee.procs import arena_command
from referee.web.records import read_record
from sample_bots.first_legal import FirstLegalBot
from tests.platform_fixtures import Platform, bots_in_threads, running_platform

pytestmark = pytest.mark.slow


def arena_play(platform: Platform, **options: str) -> list[str]:
    base = {"--redis-url": platform.url, "--server": platform.server, "--name": "tess"}
    return arena_command("play", *(f"{k}={v}" for k, v in {**base, **options}.items()))


def match_of(out: str) -> str:
    return out.split(" of ", 1)[1].split(";", 1)[0]


def told_before_each_turn(out: str) -> list[str]:
    """The lines printed between two of the person's answers (before each turn's table)."""
    return [chunk.split("\n  ♣ ")[0] for chunk in out.split("your turn (")[1:]]


def test_a_person_plays_a_whole_match_from_the_terminal_and_is_told_who_did_what(
    redis_url: str,
) -> None:
    """Item 8: between the person's turns the terminal names each opponent's move (as the
    play page does), and a deal's end names its winner and each player's change."""
    with (
        running_platform(redis_url, workers=1) as platform,
        bots_in_threads(platform, {n: FirstLegalBot() for n in ("fl-a", "fl-b", "fl-c")}),
    ):
        # A person who types a wrong answer once, then always the first legal action.
        answers = "nonsense\n" + "1\n" * 60
        options = {"--game": "sevens", "--preset": "fan-tan", "--against": "fl-a,fl-b,fl-c"}
        run = subprocess.run(
            arena_play(platform, **options, **{"--deals": "1", "--seed": "7"}),
            input=answers,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        out = run.stdout
        assert "match over: " in out and "your hand:" in out
        assert "choose 1-" in out  # the wrong answer was explained, not sent
        match_id = match_of(out)
        record = queue.get_record(platform.conn, match_id) or {}
        seats = record["spec"]["seats"]
        assert seats[0] == "human-tess" and not record["spec"]["season"]
        mine = [s for s in record["steps"] if s["seat"] == 0 and s["source"] == "bot"]
        assert mine and all(s["status"] == "accepted" for s in mine)
        assert out.count("your choice> ") == len(mine) + 1  # one retry after "nonsense"
    # Every move an opponent made before the person's last turn is told, by name, in order,
    # before the person's next turn.
    told = told_before_each_turn(out)
    assert len(told) == len(mine)
    turn = 0
    for step in record["steps"]:
        if step["seat"] == 0 and step["source"] == "bot":
            turn += 1
            if turn == len(mine):
                break
            continue
        if turn == 0:
            continue  # before the person's first turn: told in the first chunk
        action = step.get("answer") or step.get("action")
        said = "passed" if action == "pass" else f"played {action_symbols(action)}"
        assert f"{seats[step['seat']]} {said}" in told[turn], (turn, step, told[turn])
    assert any("fl-a played" in t for t in told) and any("passed" in t for t in told)
    # The deal's end: its winner and every player's change, by name; the match's winner.
    deal = record["result"]["deals"][0]
    deltas = deal["deltas"]
    names = ["you", "fl-a", "fl-b", "fl-c"]
    changes = ", ".join(f"{n} {d:+d}" for n, d in zip(names, deltas, strict=True))
    winner = names[deal["winner"]]
    assert f"deal 1 over: won by {winner}; changes {changes}; totals " in out, out[-800:]
    winners = " and ".join(names[w] for w in record["result"]["winners"])
    assert f"Winner: {winners}." in out


def test_a_sedma_player_is_told_their_partner_the_trick_and_who_took_it(
    redis_url: str,
) -> None:
    """Item 9 (terminal): the partner is named, the trick's cards say who played them,
    tricks and points are given per side with the person's side first, and after each
    trick the person is told who took it."""
    with (
        running_platform(redis_url, workers=1) as platform,
        bots_in_threads(platform, {n: FirstLegalBot() for n in ("fl-a", "fl-b", "fl-c")}),
    ):
        options = {"--game": "sedma", "--preset": "sedma", "--against": "fl-a,fl-b,fl-c"}
        run = subprocess.run(
            arena_play(platform, **options, **{"--deals": "1", "--seed": "3"}),
            input="1\n" * 40,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
        out = run.stdout
        record = queue.get_record(platform.conn, match_of(out)) or {}
    assert record["spec"]["seats"] == ["human-tess", "fl-a", "fl-b", "fl-c"]
    assert "your partner: fl-b (seat 2)" in out
    assert re.search(r"tricks won: you and fl-b \d+, fl-a and fl-c \d+", out), out[:1500]
    assert re.search(r"card points: you and fl-b \d+, fl-a and fl-c \d+", out)
    # A trick in progress names who played each card (fl-a sits after the person).
    assert re.search(r"trick: fl-a (?:10|[7-9JQKA])[♣♦♥♠]", out) or re.search(
        r"trick: fl-b \(your partner\) ", out
    ), out[:3000]
    # Who took each trick: the record's trick winners, told before the person's next turn.
    view = read_record(record)
    takers = [
        "you" if e.seat == 0 else view.seats[e.seat] + (" (your partner)" if e.seat == 2 else "")
        for _m, _s, events in view.applied()
        for e in events
        if e.kind == "trick" and e.seat is not None
    ]
    told = re.findall(r"^  (.+) took the trick$", out, flags=re.M)
    assert len(takers) == 8 and told == takers[: len(told)] and len(told) >= 7, (told, takers)
    assert re.search(r"deal 1 over: won by (you and fl-b|fl-a and fl-c); changes you ", out)


def test_ctrl_c_says_what_happens_to_the_match_and_leaves_the_terminal_clean(
    redis_url: str,
) -> None:
    """Ctrl-C at the prompt: one clear explanation (the match goes on; the seat's turns
    time out after its clock plus absent_ms, then the autopilot plays it to the end), no
    traceback, and the platform does exactly that: the match ends and is recorded with
    the autopilot in the person's seat."""
    with (
        running_platform(redis_url, workers=1) as platform,
        bots_in_threads(platform, {n: FirstLegalBot() for n in ("fl-a", "fl-b", "fl-c")}),
    ):
        options = {
            "--game": "sevens",
            "--preset": "fan-tan",
            "--against": "fl-a,fl-b,fl-c",
            "--deals": "1",
            "--move-s": "1",
            "--bank-s": "1",
        }
        proc = subprocess.Popen(
            arena_play(platform, **options),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        seen = ""
        while "your choice> " not in seen:
            char = proc.stdout.read(1)
            assert char, "arena play ended before the first turn"
            seen += char
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
        out = seen + rest
        assert proc.returncode == 130, (proc.returncode, out[-1500:], err[-1500:])
        assert "Traceback" not in err and "Traceback" not in out, err[-2000:]
        match_id = match_of(out)
        said = out.split("your choice> ", 1)[1]
        assert said.startswith("\nYou left the table (Ctrl-C). "), said
        assert f"Match {match_id} goes on without you" in said
        assert "1 s a move plus what is left of your 1 s reserve) and 3 s more" in said
        assert "After 3 in a row the autopilot plays your seat to the end" in said
        assert out.endswith(f"arena replay {match_id}\n"), out[-300:]
        # What was said is what happens: the match ends, the autopilot took the seat.
        deadline = time.monotonic() + 120
        while not platform.conn.exists(keys.match_result(match_id)):
            assert time.monotonic() < deadline, "the match did not end without the person"
            time.sleep(0.2)
        record = queue.get_record(platform.conn, match_id) or {}
    left = [s for s in record["steps"] if s["seat"] == 0]
    assert [s.get("timeout") for s in left[:3]] == [True, True, True], left[:4]
    assert any(s.get("takeover") for s in left), "the autopilot took the person's seat"


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
    assert action_symbols("TS") == "10♠"


def test_a_table_of_the_wrong_size_is_refused_with_the_counts_before_connecting() -> None:
    """``--game sedma`` alone plays the game's own preset (not Sevens' fan-tan), and a
    table it cannot seat is refused in one line naming the count, before any connection
    (nothing listens at the address given)."""
    run = subprocess.run(
        arena_command(
            "play",
            "--redis-url=redis://127.0.0.1:9/0",
            "--game=sedma",
            "--against=fl-a,fl-b",
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode != 0 and "Traceback" not in run.stderr, run.stderr
    assert (
        run.stderr.strip()
        .splitlines()[-1]
        .endswith(
            "--against: sedma sedma is played by 4 players: choose exactly 3 opponents, not 2"
        )
    ), run.stderr
