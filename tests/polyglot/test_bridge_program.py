"""The bridge's child-program handling, with real child processes (no referee needed)."""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Iterator
from typing import Any

import pytest

from sample_bots.bridge import Program, TurnKey, parse_answer_line

ECHO_FIRST = textwrap.dedent(
    """
    import json, sys
    for line in sys.stdin:
        turn = json.loads(line)
        print(turn["legal"][0], flush=True)
    """
)


def _program(source: str) -> tuple[Program, list[dict[str, Any]], list[str]]:
    events: list[dict[str, Any]] = []
    stderr: list[str] = []
    program = Program(
        [sys.executable, "-c", source], stderr_sink=stderr.append, report=events.append
    )
    return program, events, stderr


@pytest.fixture
def cleanup() -> Iterator[list[Program]]:
    programs: list[Program] = []
    yield programs
    for program in programs:
        program.stop()


def _line(legal: list[str], seq: int) -> str:
    import json

    return json.dumps({"type": "turn", "seq": seq, "legal": legal})


def test_parse_answer_line_reads_text_and_json() -> None:
    assert parse_answer_line("7D\n") == ("7D", None, "")
    assert parse_answer_line('{"action": "8D+9D", "match_id": "m", "attempt": 2, "seq": 4}') == (
        "8D+9D",
        TurnKey("m", 2, 4),
        "",
    )
    assert parse_answer_line('{"action": "pass", "seq": 9}') == ("pass", TurnKey("", -1, 9), "")
    action, key, error = parse_answer_line("{not json")
    assert action is None and key is None and "not valid JSON" in error
    action, _key, error = parse_answer_line('{"move": "7D"}')
    assert action is None and '"action"' in error


def test_program_answers_each_turn_in_order(cleanup: list[Program]) -> None:
    program, events, _ = _program(ECHO_FIRST)
    cleanup.append(program)
    for seq, legal in enumerate((["7D", "pass"], ["8H"], ["pass"]), start=1):
        answer = program.ask(_line(legal, seq), TurnKey("m", 1, seq), timeout_s=10)
        assert answer.action == legal[0]
    assert events == []
    assert program.starts == 1


def test_slow_answer_times_out_and_is_dropped_when_it_comes_late(
    cleanup: list[Program],
) -> None:
    source = textwrap.dedent(
        """
        import json, sys, time
        for line in sys.stdin:
            turn = json.loads(line)
            if turn["seq"] == 1:
                time.sleep(0.6)
                print("LATE", flush=True)
            else:
                print(turn["legal"][0], flush=True)
        """
    )
    program, events, _ = _program(source)
    cleanup.append(program)
    first = program.ask(_line(["7D"], 1), TurnKey("m", 1, 1), timeout_s=0.2)
    assert first.action is None and first.problem == "timeout"
    # The late "LATE" line belongs to seq 1: it must not be taken as the answer to seq 2.
    second = program.ask(_line(["9S"], 2), TurnKey("m", 1, 2), timeout_s=10)
    assert second.action == "9S"
    assert [e["event"] for e in events] == ["late_answer"]
    assert events[0]["turn"] == "m#1.1"


def test_json_answer_echoing_an_old_seq_is_dropped(cleanup: list[Program]) -> None:
    source = textwrap.dedent(
        """
        import json, sys
        for line in sys.stdin:
            turn = json.loads(line)
            print(json.dumps({"action": "OLD", "match_id": "m", "attempt": 1, "seq": 99}))
            print(json.dumps({"action": turn["legal"][0], "match_id": "m", "attempt": 1,
                              "seq": turn["seq"]}), flush=True)
        """
    )
    program, events, _ = _program(source)
    cleanup.append(program)
    answer = program.ask(_line(["QC"], 3), TurnKey("m", 1, 3), timeout_s=10)
    assert answer.action == "QC"
    assert [e["event"] for e in events] == ["late_answer"]


def test_json_answer_may_echo_only_the_seq(cleanup: list[Program]) -> None:
    source = textwrap.dedent(
        """
        import json, sys, time
        for line in sys.stdin:
            turn = json.loads(line)
            if turn["seq"] == 1:
                time.sleep(0.5)
            print(json.dumps({"action": turn["legal"][0], "seq": turn["seq"]}), flush=True)
        """
    )
    program, events, _ = _program(source)
    cleanup.append(program)
    assert program.ask(_line(["AS"], 1), TurnKey("m", 3, 1), timeout_s=0.1).problem == "timeout"
    answer = program.ask(_line(["KS"], 2), TurnKey("m", 3, 2), timeout_s=10)
    assert answer.action == "KS"
    assert [e["event"] for e in events] == ["late_answer"]
    assert events[0]["turn"] == "m#3.1"  # the seq-only echo was matched to the open turn


def test_crashing_program_is_reported_and_restarted(cleanup: list[Program]) -> None:
    source = textwrap.dedent(
        """
        import json, sys
        for line in sys.stdin:
            turn = json.loads(line)
            if turn["seq"] == 1:
                print("boom: cannot handle this turn", file=sys.stderr, flush=True)
                sys.exit(3)
            print(turn["legal"][0], flush=True)
        """
    )
    program, events, stderr = _program(source)
    cleanup.append(program)
    crashed = program.ask(_line(["7D"], 1), TurnKey("m", 1, 1), timeout_s=10)
    assert crashed.action is None and crashed.problem == "exited"
    assert "code 3" in crashed.detail and "boom" in crashed.detail
    assert "boom: cannot handle this turn" in stderr
    answer = None
    for seq in range(2, 40):  # the restart waits out a short backoff
        answer = program.ask(_line(["8D"], seq), TurnKey("m", 1, seq), timeout_s=10)
        if answer.action is not None:
            break
        assert answer.problem == "not_started"
        time.sleep(0.05)
    assert answer is not None and answer.action == "8D"
    assert program.starts == 2
    kinds = [e["event"] for e in events]
    assert kinds == ["exited", "restart"]
    assert events[0]["exit_code"] == 3


def test_hung_program_is_restarted_after_missing_several_answers(
    cleanup: list[Program],
) -> None:
    source = "import sys, time\nfor line in sys.stdin:\n    time.sleep(60)\n"
    program, events, _ = _program(source)
    cleanup.append(program)
    for seq in range(1, 4):
        answer = program.ask(_line(["7D"], seq), TurnKey("m", 1, seq), timeout_s=0.1)
        assert answer.problem == "timeout"
    assert [e["event"] for e in events] == ["hung"]
    assert not program.alive()


def test_missing_program_is_reported_not_raised(cleanup: list[Program]) -> None:
    program = Program(
        ["/nonexistent/bot-binary"], stderr_sink=lambda _t: None, report=lambda _e: None
    )
    cleanup.append(program)
    answer = program.ask("{}", TurnKey("m", 1, 1), timeout_s=1)
    assert answer.action is None and answer.problem == "not_started"
    assert "/nonexistent/bot-binary" in answer.detail


def test_bytes_that_are_not_utf8_do_not_break_the_reader(cleanup: list[Program]) -> None:
    source = textwrap.dedent(
        """
        import sys
        for line in sys.stdin:
            sys.stdout.buffer.write(b"\\xff\\xfe\\n")
            sys.stdout.flush()
        """
    )
    program, _events, _ = _program(source)
    cleanup.append(program)
    first = program.ask(_line(["7D"], 1), TurnKey("m", 1, 1), timeout_s=10)
    assert first.action == "\ufffd\ufffd"  # sent on as it is; the referee refuses it
    assert program.alive()


def test_stray_stdout_lines_do_not_shift_the_answers(cleanup: list[Program]) -> None:
    source = textwrap.dedent(
        """
        import json, sys, time
        for line in sys.stdin:
            turn = json.loads(line)
            print(turn["legal"][0], flush=True)
            print("debug: thinking done", flush=True)  # a mistake: logs belong on stderr
        """
    )
    program, events, _ = _program(source)
    cleanup.append(program)
    first = program.ask(_line(["7D"], 1), TurnKey("m", 1, 1), timeout_s=10)
    deadline = time.monotonic() + 10
    while program._lines.empty() and time.monotonic() < deadline:
        time.sleep(0.01)  # wait until the stray line is in before asking again
    second = program.ask(_line(["8D"], 2), TurnKey("m", 1, 2), timeout_s=10)
    assert (first.action, second.action) == ("7D", "8D")
    assert {"event": "extra_line", "line": "debug: thinking done"} in events
