"""Standings are a pure function of the committed results."""

from __future__ import annotations

import random
import time
from typing import Any

from referee.match.spec import CommittedResult, SeatStats
from referee.seasons.ratings import bradley_terry, live_elo, openskill_ratings
from referee.seasons.standings import (
    ROW_FIELDS,
    bot_order,
    compute_standings,
    duplicate_scores,
    placings_of,
    rank_key,
    ranking_words,
    standings_rows_equal,
)


def _stats(bot: str, **kw: Any) -> SeatStats:
    base: SeatStats = {
        "bot": bot,
        "decisions": 10,
        "timeouts": 0,
        "invalid_actions": 0,
        "illegal_passes": 0,
        "fallbacks": 0,
        "autopilot": False,
        "think_ms_total": 1.0,
    }
    base.update(kw)  # type: ignore[typeddict-item]
    return base


def _result(
    mid: str,
    seats: list[str],
    orders: list[list[list[int]]],
    finished: float,
    totals: list[int],
    stats: list[SeatStats] | None = None,
) -> CommittedResult:
    deals = [
        {
            "deal": i,
            "winner": o[0][0],
            "order": o,
            "deltas": [0] * len(seats),
            "penalties": [],
            "void": False,
            "detail": {},
        }
        for i, o in enumerate(orders)
    ]
    return {
        "match_id": mid,
        "season": "s",
        "game": "sevens",
        "seats": seats,
        "attempt": 1,
        "result": {
            "totals": totals,
            "unit": "chips",
            "higher_is_better": True,
            "order": orders[-1],
            "winners": [orders[-1][0][0]],
            "deals": deals,
        },
        "stats": stats or [_stats(b) for b in seats],
        "finished_ms": finished,
    }


def _results() -> list[CommittedResult]:
    rng = random.Random(3)
    bots = ["ann", "bob", "cat", "dan"]
    out = []
    for m in range(12):
        seats = rng.sample(bots, 3)
        orders = []
        for _ in range(3):
            perm = [0, 1, 2]
            rng.shuffle(perm)
            orders.append([[perm[0]], [perm[1]], [perm[2]]])
        out.append(_result(f"s-m{m:04d}", seats, orders, 1000.0 + m, [4, -1, -3]))
    return out


def test_same_results_in_any_order_give_identical_standings() -> None:
    results = _results()
    a = compute_standings("s", "sevens", ["ann", "bob", "cat", "dan"], results, now_ms=1)
    for seed in range(4):
        shuffled = list(results)
        random.Random(seed).shuffle(shuffled)
        shuffled.append(shuffled[0])  # a result delivered twice counts once
        b = compute_standings("s", "sevens", ["ann", "bob", "cat", "dan"], shuffled, now_ms=1)
        assert a == b
    assert a["matches_done"] == 12
    assert [r["rank"] for r in a["rows"]] == [1, 2, 3, 4]
    assert all(set(r) == set(ROW_FIELDS) for r in a["rows"])
    assert sum(r["deals"] for r in a["rows"]) == 12 * 3 * 3
    assert sum(r["deals_won"] for r in a["rows"]) == 12 * 3


def test_counters_places_and_scores() -> None:
    res = _result(
        "s-m0000",
        ["ann", "bob", "cat"],
        [[[0], [1], [2]], [[2], [0, 1]]],
        5.0,
        [7, -2, -5],
        [
            _stats("ann", timeouts=2),
            _stats("bob", illegal_passes=1, invalid_actions=3),
            _stats("cat", autopilot=True),
        ],
    )
    table = compute_standings("s", "sevens", ["ann", "bob", "cat"], [res], matches_total=3)
    rows = {r["bot"]: r for r in table["rows"]}
    assert rows["ann"]["deals_won"] == 1 and rows["cat"]["deals_won"] == 1
    assert rows["ann"]["avg_place"] == 1.5  # 1st, then tied 2nd
    assert rows["bob"]["avg_place"] == 2.0
    assert rows["cat"]["avg_place"] == 2.0
    assert rows["ann"]["score"] == 7 and rows["cat"]["score"] == -5
    assert rows["ann"]["timeouts"] == 2
    assert rows["bob"]["illegal_passes"] == 1 and rows["bob"]["invalid_actions"] == 3
    assert rows["cat"]["autopilot_seats"] == 1
    assert table["unit"] == "chips" and table["matches_total"] == 3
    # one match: no clustered variance, and the standings say so
    assert table["elo_interval"]["matches"] == 1
    assert "fewer than two matches" in table["elo_interval"]["warning"]


def test_head_to_head_order_is_side_against_side() -> None:
    # SD-1: one bot on seats 0 and 2, the other on 1 and 3; a deal's order is side vs side.
    assert bot_order(["a", "b", "a", "b"], [[1, 3], [0, 2]]) == (("b",), ("a",))
    res = _result("h-m0000", ["a", "b", "a", "b"], [[[1, 3], [0, 2]]] * 2, 1.0, [0, 2, 0, 2])
    table = compute_standings("h", "sedma", ["a", "b"], [res])
    rows = {r["bot"]: r for r in table["rows"]}
    assert rows["b"]["deals_won"] == 2 and rows["b"]["matches"] == 1
    assert rows["b"]["score"] == 2 and rows["a"]["score"] == 0
    assert rows["b"]["elo"] > rows["a"]["elo"]
    assert rows["b"]["rank"] == 1


def test_void_deals_are_skipped() -> None:
    res = _result("v-m0000", ["a", "b", "c"], [[[0], [1], [2]]], 1.0, [1, 0, -1])
    res["result"]["deals"][0]["void"] = True
    rows = {r["bot"]: r for r in compute_standings("v", "sedma", ["a", "b", "c"], [res])["rows"]}
    assert rows["a"]["deals"] == 0 and rows["a"]["matches"] == 1


def test_average_place_counts_the_seats_ahead_after_a_tie_in_the_middle() -> None:
    """Pins competition ranks ("1224"), not dense ranks ("1223"): after two bots tie for
    second, the next bot is fourth (a mutation counting one place per tied group gave 3)."""
    seats = ["a", "b", "c", "d"]
    result = _result("m0", seats, [[[0], [1, 2], [3]]], 1.0, [3, 0, 0, -3])
    rows = {r["bot"]: r for r in compute_standings("s", "sevens", seats, [result])["rows"]}
    assert rows["a"]["avg_place"] == 1.0
    assert rows["b"]["avg_place"] == rows["c"]["avg_place"] == 2.0
    assert rows["d"]["avg_place"] == 4.0
    assert rows["a"]["deals_won"] == 1 and rows["b"]["deals_won"] == 0


def test_counters_add_up_over_matches_and_the_rows_carry_the_fits() -> None:
    """Pins accumulation over several matches (each counter adds, none is overwritten by
    the last match), a void deal before a scored one (skipped, not the end of the match),
    an all-tied deal (counted: one group of several bots), and the rows' published
    precision of the fits (mutmut survivors of standings.py)."""
    seats = ["a", "b", "c"]
    first = _result(
        "m0",
        seats,
        [[[0], [1], [2]], [[0], [1], [2]], [[0, 1, 2]]],
        2.0,
        [5, 1, -6],
        [
            _stats("a", timeouts=1),
            _stats("b", illegal_passes=2, invalid_actions=1),
            _stats("c", autopilot=True),
        ],
    )
    first["result"]["deals"][0]["void"] = True
    second = _result(
        "m1",
        seats,
        [[[1], [0], [2]]],
        1.0,
        [2, 4, -6],
        [
            _stats("a", timeouts=3),
            _stats("b", illegal_passes=1, invalid_actions=4),
            _stats("c", autopilot=True, invalid_actions=1),
        ],
    )
    table = compute_standings("s", "sevens", seats, [first, second], now_ms=123.0)
    rows = {r["bot"]: r for r in table["rows"]}
    assert [rows[b]["matches"] for b in seats] == [2, 2, 2]
    assert [rows[b]["deals"] for b in seats] == [3, 3, 3]  # the void deal skipped, the tie kept
    assert [rows[b]["deals_won"] for b in seats] == [2, 2, 1]  # the tie: all share first
    assert [rows[b]["score"] for b in seats] == [7, 5, -12]
    assert [rows[b]["timeouts"] for b in seats] == [4, 0, 0]
    assert [rows[b]["illegal_passes"] for b in seats] == [0, 3, 0]
    assert [rows[b]["invalid_actions"] for b in seats] == [0, 5, 1]
    assert [rows[b]["autopilot_seats"] for b in seats] == [0, 0, 2]
    assert table["updated_ms"] == 123 and table["matches_done"] == 2
    placings = [p for r in (first, second) for p in placings_of(r)]
    assert [p.cluster for p in placings] == ["m0", "m0", "m1"]
    fit = bradley_terry(seats, placings)
    live = live_elo(seats, [*placings_of(second), *placings_of(first)])
    for b in seats:
        assert rows[b]["elo"] == round(fit.elo[b], 2)
        assert rows[b]["elo_low"] == round(fit.low[b], 2)
        assert rows[b]["elo_high"] == round(fit.high[b], 2)
        assert rows[b]["live_elo"] == round(live[b], 2)  # oldest match first (finished_ms)
    assert table["elo_interval"]["quantile"] == round(fit.quantile, 4)
    assert [r["rank"] for r in table["rows"]] == [1, 2, 3]
    skill = openskill_ratings(seats, [*placings_of(second), *placings_of(first)])
    for b in seats:
        assert rows[b]["openskill_mu"] == round(skill[b].mu, 4)
        assert rows[b]["openskill_sigma"] == round(skill[b].sigma, 4)
        assert rows[b]["openskill_ordinal"] == round(skill[b].ordinal, 4)
    assert table["season"] == "s" and table["game"] == "sevens"


def test_a_bot_on_several_seats_scores_its_average_and_the_table_is_stamped_now() -> None:
    """The score of a bot holding several seats is the mean of its seats' totals, shown as
    an int when whole and to 3 decimals otherwise; without ``now_ms`` the table is stamped
    with the wall clock in milliseconds."""
    res = _result("w-m0000", ["a", "a", "b", "a"], [[[0], [1], [2], [3]]], 1.0, [1, 1, -4, 0])
    before = time.time() * 1000
    table = compute_standings("w", "sevens", ["a", "b"], [res])
    after = time.time() * 1000
    rows = {r["bot"]: r for r in table["rows"]}
    assert rows["a"]["score"] == 0.667 and rows["b"]["score"] == -4
    assert isinstance(rows["b"]["score"], int)
    assert before - 1 <= table["updated_ms"] <= after + 1


def test_a_tied_deal_between_two_bots_counts_for_both() -> None:
    """Pins the smallest placing kept: one group of two bots (a head-to-head deal tied
    side against side) is a deal for both, and a draw for the ratings."""
    res = _result("t-m0000", ["a", "b", "a", "b"], [[[0, 1, 2, 3]], [[0, 2], [1, 3]]], 1.0, [0] * 4)
    assert [p.order for p in placings_of(res)] == [(("a", "b"),), (("a",), ("b",))]
    rows = {r["bot"]: r for r in compute_standings("t", "sedma", ["a", "b"], [res])["rows"]}
    assert rows["a"]["deals"] == rows["b"]["deals"] == 2
    assert rows["a"]["deals_won"] == 2 and rows["b"]["deals_won"] == 1


def test_a_season_without_results_has_empty_rows_and_no_unit_yet() -> None:
    """Before the first result: every bot has a row of zeros (``avg_place`` 0.0, not a
    place), the unit is the empty string (not None) and nothing is done yet."""
    table = compute_standings("e", "sevens", ["a", "b"], [], matches_total=4, now_ms=1.0)
    assert table["unit"] == "" and table["matches_done"] == 0 and table["matches_total"] == 4
    for row in table["rows"]:
        assert row["avg_place"] == 0.0 and row["deals"] == 0 and row["matches"] == 0
    assert [r["bot"] for r in table["rows"]] == ["a", "b"]  # equal Elo: by name


def test_field_duplicate_scores_compare_a_hand_across_tables() -> None:
    """The same board at two tables; each hand scored against the field."""
    from referee.seasons.standings import duplicate_scores

    def result(match_id: str, seats: list[str], deltas: list[int]) -> Any:
        deal = {"deal": 0, "order": [[0], [1], [2]], "deltas": deltas, "void": False}
        return {"match_id": match_id, "seats": seats, "result": {"deals": [deal]}}

    # board "f0b0": table 1 rotation 0 (hand i at seat i), table 2 rotation 1 (hand i at
    # seat i + 1): hand 0 is a's at table 1 and y's at table 2
    results = [
        result("m1", ["a", "b", "c"], [6, -2, -4]),
        result("m2", ["x", "y", "z"], [0, 2, -2]),
    ]
    boards = {"m1": [("f0b0", 0)], "m2": [("f0b0", 1)]}
    scores = duplicate_scores(results, boards)
    assert scores["a"] == [2.0] and scores["y"] == [-2.0]  # hand 0: 6 and 2, mean 4
    assert scores["b"] == [0.0] and scores["z"] == [0.0]  # hand 1: -2 at both tables
    assert scores["c"] == [-2.0] and scores["x"] == [2.0]  # hand 2: -4 and 0
    assert sum(v for vs in scores.values() for v in vs) == 0


def _board_result(match_id: str, seats: list[str], deals: list[dict[str, Any]]) -> Any:
    """A committed result reduced to what ``duplicate_scores`` reads."""
    return {"match_id": match_id, "seats": seats, "result": {"deals": deals}}


def _deal(deltas: list[int], *, void: bool = False) -> dict[str, Any]:
    return {"order": [[0], [1], [2]], "deltas": deltas, "void": void}


def test_field_duplicate_scores_skip_void_unboarded_extra_and_single_table_hands() -> None:
    """Pins what a duplicate score leaves out without ending its loops (mutmut survivors
    of ``duplicate_scores``): a match with no boards (a plain-deal match listed first), a
    void deal (listed before a scored one), a deal beyond the match's boards (SV-34's
    extra deal is not part of any board) and a hand played at one table only (no field to
    compare with, listed before compared hands)."""
    results = [
        _board_result("m0", ["p", "q", "r"], [_deal([9, 0, -9])]),  # not in boards
        _board_result("m3", ["s", "t", "u"], [_deal([3, 0, -3])]),  # board f1b0: one table
        _board_result(
            "m1",
            ["a", "b", "c"],
            [_deal([50, 0, -50], void=True), _deal([6, -2, -4]), _deal([7, 0, -7])],
        ),
        _board_result("m2", ["x", "y", "z"], [_deal([0, 0, 0], void=True), _deal([0, 2, -2])]),
    ]
    # m1: deal 0 void, deal 1 is board f0b0, deal 2 an extra deal beyond its two labels
    boards = {
        "m3": [("f1b0", 0)],
        "m1": [("f0b9", 0), ("f0b0", 0)],
        "m2": [("f0b9", 1), ("f0b0", 1)],
    }
    scores = duplicate_scores(results, boards)
    assert scores == {
        "a": [2.0],  # hand 0 of f0b0: 6 (a) and 2 (y), mean 4
        "y": [-2.0],
        "b": [0.0],  # hand 1: -2 (b) and -2 (z)
        "z": [0.0],
        "c": [-2.0],  # hand 2: -4 (c) and 0 (x)
        "x": [2.0],
    }


def test_duplicate_scores_reach_the_rows_to_three_decimals() -> None:
    """The rows' ``dup_score`` is the sum of a bot's hand scores rounded to 3 decimals and
    ``dup_hands`` how many hands it held (pins the fold into the tallies and the rounding)."""
    seats1, seats2, seats3 = ["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]
    # one board at three tables, rotations 0, 1, 2: each bot holds each hand once
    results = [
        _result("m1", seats1, [[[0], [1], [2]]], 1.0, [1, 0, -1]),
        _result("m2", seats2, [[[0], [1], [2]]], 2.0, [0, 0, 0]),
        _result("m3", seats3, [[[0], [1], [2]]], 3.0, [0, 0, 0]),
    ]
    results[0]["result"]["deals"][0]["deltas"] = [2, 0, -1]
    results[1]["result"]["deals"][0]["deltas"] = [0, 0, 0]
    results[2]["result"]["deals"][0]["deltas"] = [0, 0, 0]
    boards = {"m1": [("f0b0", 0)], "m2": [("f0b0", 1)], "m3": [("f0b0", 2)]}
    table = compute_standings("d", "sevens", ["a", "b", "c"], results, boards=boards, now_ms=1)
    rows = {r["bot"]: r for r in table["rows"]}
    # hand = (seat - rotation) % 3. Hand 0: a 2 (m1), c 0 (m2), b 0 (m3): mean 2/3.
    # Hand 1: b, a, c all 0. Hand 2: c -1 (m1), b 0 (m2), a 0 (m3): mean -1/3.
    # a: 4/3 + 0 + 1/3 = 5/3; b: -2/3 + 0 + 1/3 = -1/3; c: -2/3 + 0 - 2/3 = -4/3.
    scores = duplicate_scores(results, boards)
    for bot in "abc":
        assert rows[bot]["dup_hands"] == len(scores[bot]) == 3
    assert [rows[b]["dup_score"] for b in "abc"] == [1.667, -0.333, -1.333]


def test_a_result_naming_a_bot_not_listed_still_counts_for_it() -> None:
    """Standings never drop a result: a seated bot missing from ``bots`` (the season's list
    read before the bot was added, say) gets its own row with its match counted."""
    res = _result("n-m0000", ["a", "b", "c"], [[[0], [1], [2]]], 1.0, [2, 0, -2])
    rows = {r["bot"]: r for r in compute_standings("n", "sevens", ["a", "b"], [res])["rows"]}
    assert set(rows) == {"a", "b", "c"}
    assert rows["c"]["matches"] == 1 and rows["c"]["deals"] == 1 and rows["c"]["score"] == -2


def test_average_place_and_the_interval_quantile_have_four_decimals() -> None:
    """The published precision: ``avg_place`` (4/3 -> 1.3333) and the interval's Student-t
    quantile (3 matches: t(2) at 97.5% = 4.30265... -> 4.3027) to 4 decimals."""
    seats = ["a", "b", "c"]
    results = [
        _result("q-m0", seats, [[[0], [1], [2]]], 1.0, [1, 0, -1]),
        _result("q-m1", seats, [[[1], [0], [2]]], 2.0, [0, 1, -1]),
        _result("q-m2", seats, [[[0], [2], [1]]], 3.0, [1, -1, 0]),
    ]
    table = compute_standings("q", "sevens", seats, results, now_ms=1)
    rows = {r["bot"]: r for r in table["rows"]}
    assert rows["a"]["avg_place"] == 1.3333  # places 1, 2, 1
    fit = bradley_terry(seats, [p for r in results for p in placings_of(r)])
    assert round(fit.quantile, 5) != round(fit.quantile, 4)  # the test can tell them apart
    assert table["elo_interval"]["quantile"] == round(fit.quantile, 4)


def test_equal_elo_is_ordered_by_average_place_with_no_deal_last() -> None:
    """Between bots of equal Elo the better average place ranks first, and a bot with no
    deal yet (``avg_place`` 0.0, not a place) after those that played."""
    # a and b split two deals (equal Elo, the mean); c never played (the mean too)
    res = _result("e-m0000", ["a", "b"], [[[0], [1]], [[1], [0]]], 1.0, [0, 0])
    table = compute_standings("e", "sevens", ["c", "b", "a"], [res], now_ms=1)
    assert len({r["elo"] for r in table["rows"]}) == 1
    assert [r["bot"] for r in table["rows"]] == ["a", "b", "c"]


def test_a_deal_whose_seats_are_all_one_bot_is_no_placing() -> None:
    """A deal a bot played against itself alone orders nobody: no placing, no deal counted
    (a lone group of one bot), while a bot against another still counts."""
    alone = _result("o-m0000", ["a", "a", "a"], [[[0], [1], [2]]], 1.0, [0, 0, 0])
    assert placings_of(alone) == []
    rows = {r["bot"]: r for r in compute_standings("o", "sevens", ["a"], [alone])["rows"]}
    assert rows["a"]["deals"] == 0 and rows["a"]["matches"] == 1


def _row(bot: str, **fields: Any) -> dict[str, Any]:
    base = {"bot": bot, "elo": 1500.0, "matches": 1, "score": 0, "deals": 1, "avg_place": 2.0}
    return base | fields


def test_rank_by_score_is_per_match_played_best_first_then_elo_then_name() -> None:
    rows = [
        _row("a", matches=2, score=10, elo=1500.0),  # 5 a match
        _row("b", matches=1, score=6, elo=1400.0),  # 6 a match, one match fewer
        _row("c", matches=0, score=0, elo=1700.0),  # no match yet: last whatever its Elo
        _row("d", matches=2, score=10, elo=1550.0),  # 5 a match, higher Elo than a
        _row("e", matches=2, score=10, elo=1500.0),  # a's twin: the name decides
    ]
    assert [r["bot"] for r in sorted(rows, key=rank_key("score", "chips"))] == list("bdaec")
    penalties = [_row("x", score=5), _row("y", score=3), _row("z", matches=0, elo=1600.0)]
    by_penalty = sorted(penalties, key=rank_key("score", "penalty_points"))
    assert [r["bot"] for r in by_penalty] == ["y", "x", "z"]  # fewer points first


def test_rank_by_place_is_lower_first_then_elo_and_elo_is_the_default() -> None:
    rows = [
        _row("a", avg_place=2.5, elo=1600.0),
        _row("b", avg_place=1.5, elo=1400.0),
        _row("c", avg_place=1.5, elo=1450.0),
        _row("d", deals=0, avg_place=0.0, elo=1700.0),  # no deal yet: last
    ]
    assert [r["bot"] for r in sorted(rows, key=rank_key("place", "chips"))] == list("cbad")
    assert [r["bot"] for r in sorted(rows, key=rank_key("elo", "chips"))] == list("dacb")
    empty = compute_standings("s", "sevens", ["p", "q"], [])
    assert empty["rank_by"] == "elo" and empty["matches_total"] == 0


def test_the_ranking_is_told_in_words_and_stamps_do_not_make_standings_differ() -> None:
    assert ranking_words({"rank_by": "score"}, "chips") == "chips per match"
    assert ranking_words({"rank_by": "score"}, "") == "score per match"
    assert ranking_words({"rank_by": "place"}, "chips") == "average place"
    assert ranking_words({"rank_by": "elo"}, "chips") == "Elo"
    assert ranking_words(None, "chips") == "Elo"  # stored before rank_by existed
    assert ranking_words({}, "chips") == "Elo"
    assert ranking_words({"rank_by": "later"}, "chips") == "later"
    a = {"season": "s", "rows": [1], "updated_ms": 1.0}
    assert standings_rows_equal(a, {**a, "updated_ms": 2.0})
    assert not standings_rows_equal(a, {**a, "rows": [2]})
    assert not standings_rows_equal(a, {"season": "s", "updated_ms": 1.0})
