"""The result row (referee/match/row.py): the committed result less each deal's penalties
and detail, stored compact, read back in the committed result's shape."""

from __future__ import annotations

import json
import random
from typing import Any

from referee.match.row import ROW_VERSION, full_result, lean, lean_result, parse_row, row_text
from referee.match.spec import CommittedResult


def _result(rng: random.Random, seats: list[str]) -> CommittedResult:
    deals = []
    for d in range(4):
        order = list(range(len(seats)))
        rng.shuffle(order)
        deals.append(
            {
                "deal": d,
                "winner": order[0],
                "order": [[order[0]], order[1:3], order[3:]],
                "deltas": [rng.randint(-9, 9) for _ in seats],
                "penalties": [{"seat": 1, "reason": "card_penalty", "amount": 2}],
                "void": d == 2,
                "detail": {"cards_left": [0, 2, 1, 1], "end": "out", "pot": 8},
            }
        )
    return {
        "match_id": "s-m0001",
        "season": "s",
        "game": "sevens",
        "seats": seats,
        "attempt": 2,
        "result": {
            "totals": [rng.randint(-20, 20) for _ in seats],
            "unit": "chips",
            "higher_is_better": True,
            "order": [[0], [1, 2], [3]],
            "winners": [0],
            "deals": deals,
        },
        "stats": [
            {
                "bot": b,
                "decisions": rng.randint(0, 60),
                "timeouts": rng.randint(0, 2),
                "invalid_actions": rng.randint(0, 2),
                "illegal_passes": rng.randint(0, 2),
                "fallbacks": rng.randint(0, 2),
                "autopilot": rng.random() < 0.5,
                "think_ms_total": rng.random() * 1000,
            }
            for b in seats
        ],
        "finished_ms": 1796397042615.6208,
    }


def test_the_row_round_trips_all_but_penalties_and_detail() -> None:
    rng = random.Random(5)
    for _ in range(50):
        result = _result(rng, ["ann", "bob", "cat", "dan"])
        text = row_text(result)
        assert json.loads(text)["v"] == ROW_VERSION
        back = parse_row(text)
        assert back == lean(result)
        assert json.loads(json.dumps(back)) == back
        assert all(isinstance(s["autopilot"], bool) for s in back["stats"])
        assert back["result"]["deals"][2]["void"] is True
        assert len(text) * 3 < len(json.dumps(result, separators=(",", ":")))
    # lean_result is idempotent: a full result and a row compare on what the row keeps
    assert lean_result(lean_result(result["result"])) == lean_result(result["result"])
    assert lean_result(result["result"]) == parse_row(row_text(result))["result"]


def test_shapes_the_row_does_not_know_are_kept_as_they_are() -> None:
    """A seat whose bot is not the seat's, a deal numbered out of place or with a field of
    its own, and extra fields of the result or the row round-trip unchanged."""
    result: Any = _result(random.Random(1), ["ann", "ann", "bob", "bob"])  # partnerships
    result["result"]["deals"][1]["deal"] = 7
    result["result"]["deals"][3]["extra"] = {"k": 1}
    result["result"]["talon"] = [1, 2]
    result["redealt"] = {"attempt": 2}
    result["stats"][0]["bot"] = "zed"
    result["stats"][1]["new_counter"] = 3
    back = parse_row(row_text(result))
    assert back == lean(result)
    assert back["result"]["deals"][1]["deal"] == 7


def test_a_row_written_before_reads_as_it_is_and_the_record_completes_a_row() -> None:
    result = _result(random.Random(2), ["ann", "bob", "cat", "dan"])
    old = json.dumps(result)
    assert parse_row(old) == result
    assert parse_row(old.encode()) == result
    row = parse_row(row_text(result))
    record = {"result": result["result"], "stats": result["stats"]}
    assert full_result(row, record) == result
    assert full_result(row, None) == row


def test_a_result_without_a_match_result_is_kept_as_its_json() -> None:
    odd = {"match_id": "m1", "season": "s1", "finished_ms": 1.0, "stats": []}
    assert row_text(odd) == json.dumps(odd, separators=(",", ":"))
    assert parse_row(row_text(odd)) == odd == lean(odd)
