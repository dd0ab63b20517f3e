"""The exact Sevens endgame solver (referee/games/sevens/exact.py and its C twin exact.c).

* the Python solver's values are those of a plain expectimax over the rules engine for
  search (``FastDeal``: its legal moves, forced passes and winner), written here without
  memo, on positions with few cards left;
* the C solver gives the same values as the Python solver (same recursion, so equal to
  rounding) on positions of every qualifying preset, with every opponent model;
* the node limit makes both give up (None) rather than answer from part of the tree;
* ``qualifies`` keeps out what the state (table, seat) cannot hold: free passes,
  eliminations, a pending opening card.

Rules cited: a seat that cannot play must pass (SV-17), the first seat to empty its hand
wins the deal (SV-25).
"""

from __future__ import annotations

import hashlib
import random
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from referee.games.base import DealSpec
from referee.games.sevens import exact, heuristic
from referee.games.sevens.fast import FastDeal, random_move
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS


def _endgame(preset: str, seed: int, left: int, players: int = 4) -> FastDeal | None:
    """A deal of ``preset`` played at random until at most ``left`` cards are in the
    hands, with the seat to act holding a choice; None if it ended before."""
    rng = random.Random(seed)
    deal = FastDeal.from_match(SevensMatch(PRESETS[preset], players, seed, [DealSpec(seed, 0, 0)]))
    while deal.winner < 0:
        in_hands = sum(h.bit_count() for h in deal.hands)
        if in_hands <= left and exact.qualifies(deal) and len(deal.legal_moves()) > 1:
            return deal
        deal.play(random_move(deal, rng))
    return None


def _expectimax(deal: FastDeal, hero: int, shares: Sequence[float]) -> float:
    """P(hero wins) by brute force on the search engine (SV-17: a forced pass is the only
    move of a seat that cannot play; SV-25: emptying the hand wins)."""
    if deal.winner >= 0:
        return 1.0 if deal.winner == hero else 0.0
    moves = deal.legal_moves()
    values = []
    for m in moves:
        nxt = deal.clone()
        nxt.play(m)
        values.append(_expectimax(nxt, hero, shares))
    seat = deal.to_act
    if seat == hero:
        return max(values)
    share = shares[seat]
    mean = sum(values) / len(values)
    if share == 0.0 or moves == (-1,):
        return mean
    hand = deal.hands[seat]
    scores = [heuristic.card_score(deal.fr.lanes[m], hand & ~(1 << m), deal.table) for m in moves]
    top = max(scores)
    best = [v for v, s in zip(values, scores, strict=True) if s == top]
    return (1.0 - share) * mean + share * sum(best) / len(best)


SHARES = ([0.0, 0.0, 0.0, 0.0], [0.5, 0.5, 0.5, 0.5], [0.1, 0.9, 0.0, 1.0])


@pytest.mark.parametrize("preset", ["sevens", "fan-tan", "fwend", "domino"])
def test_python_solver_is_the_expectimax_of_the_rules(preset: str) -> None:
    checked = 0
    for seed in range(12):
        deal = _endgame(preset, seed, 10)
        if deal is None:
            continue
        hero = deal.to_act
        shares = SHARES[seed % 3]
        values = exact.solve_python(deal.fr, deal.hands, deal.table, hero, shares)
        assert values is not None
        assert sorted(values) == sorted(deal.legal_moves())
        for move, value in values.items():
            nxt = deal.clone()
            nxt.play(move)
            assert value == pytest.approx(_expectimax(nxt, hero, shares), abs=1e-12)
        checked += 1
    assert checked >= 6


@pytest.mark.parametrize("preset", ["sevens", "fan-tan", "sjuan", "cinquillo", "fwend"])
def test_c_solver_equals_the_python_solver(preset: str) -> None:
    lib = exact.load()
    if lib is None:
        pytest.skip("no C compiler here: exact.solve uses the Python solver")
    checked = 0
    for seed in range(10):
        for players in (3, 4, 5):
            deal = _endgame(preset, 100 * seed + players, 20, players)
            if deal is None:
                continue
            shares = [random.Random(seed).random() if seed % 2 else 0.0 for _ in range(players)]
            py = exact.solve_python(deal.fr, deal.hands, deal.table, deal.to_act, shares)
            c = exact.solve_c(lib, deal.fr, deal.hands, deal.table, deal.to_act, shares)
            assert py is not None and c is not None
            assert sorted(c) == sorted(py)
            for move in py:
                assert c[move] == pytest.approx(py[move], abs=1e-12)
            checked += 1
    assert checked >= 20


def test_both_solvers_give_up_past_the_node_limit() -> None:
    deal = _endgame("sevens", 3, 30)
    assert deal is not None
    args = (deal.fr, deal.hands, deal.table, deal.to_act, [0.0] * 4)
    assert exact.solve_python(*args, node_limit=50) is None
    lib = exact.load()
    if lib is not None:
        assert exact.solve_c(lib, *args, node_limit=50) is None
        assert exact.solve_c(lib, *args, node_limit=10**6) is not None


def test_solve_falls_back_to_python_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_EXACT_ENGINE", "python")
    assert exact.load() is None
    deal = _endgame("sevens", 5, 12)
    assert deal is not None
    args = (deal.fr, deal.hands, deal.table, deal.to_act, [0.0] * 4)
    assert exact.solve(*args) == exact.solve_python(*args)


def test_qualifies_only_where_table_and_seat_are_the_state() -> None:
    fresh = FastDeal.from_match(SevensMatch(PRESETS["sevens"], 4, 1, [DealSpec(1, 0, 0)]))
    assert not exact.qualifies(fresh)  # the 7 of diamonds still to open (SV-13)
    any_seven = FastDeal.from_match(SevensMatch(PRESETS["fan-tan"], 4, 1, [DealSpec(1, 0, 0)]))
    assert exact.qualifies(any_seven)  # any 7 opens: the empty rows say so themselves
    played = _endgame("sevens", 1, 40)
    assert played is not None and exact.qualifies(played)
    free = FastDeal.from_match(SevensMatch(PRESETS["shichi-narabe"], 4, 1, [DealSpec(1, 0, 0)]))
    assert not exact.qualifies(free)  # free passes and elimination (SV-22, SV-23)


def test_a_cached_library_anyone_else_could_write_is_never_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The library is loaded into the bot's process: one found in the cache is reused only
    when it and its folder are writable by this user alone; the shared temporary folder is
    never searched for one (another user could plant ``/tmp/sevens_exact-<hash>.so``)."""
    if exact.build(tmp_path / "probe") is None:
        pytest.skip("no C compiler here")
    digest = hashlib.sha256(exact.SOURCE.read_bytes()).hexdigest()[:16]
    planted_dir = tmp_path / "planted"
    planted_dir.mkdir(mode=0o700)
    planted = planted_dir / f"sevens_exact-{digest}.so"
    planted.write_bytes(b"not a library")
    planted.chmod(0o666)  # writable by others: refused, not rebuilt over
    assert exact.build(planted_dir) is None
    planted.chmod(0o700)  # ours alone: reused as the cache it is
    assert exact.build(planted_dir) == planted
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)  # a folder anyone may write to: nothing is built or loaded there
    assert exact.build(open_dir) is None
    assert not list(open_dir.iterdir())
    # without a usable cache, the library is built in a fresh private folder, not in /tmp
    monkeypatch.setattr(exact, "_cache_dir", lambda: open_dir)
    built = exact.build()
    assert built is not None and built.parent != Path(tempfile.gettempdir())
    assert built.parent.name.startswith("arena-exact-")
    private = built.parent.stat().st_mode & 0o777
    shutil.rmtree(built.parent)
    assert private == 0o700
    assert not list(open_dir.iterdir())
