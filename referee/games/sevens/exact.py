"""Exact expectimax of a Sevens-family deal whose hands are known (one sampled world).

The search rung ``solver`` (``bots.solver``) samples worlds from the belief and, once few
enough cards are left, solves each world exactly: the seat to act maximises its
probability of winning the deal, every other seat moves by an opponent model, and the
value of each legal card is averaged over the worlds.

**Scope.** A deal where the only pass is the forced one: ``must_play`` on, no free passes,
no elimination, no seat skipping, the opening card already on the table (the ``sevens``
and ``fan-tan`` presets after their first card, and every other preset with those
options). The state is then the table and the seat to act (each hand is its cards at the
root minus the table), so a solve memoises on ``(table, seat)``.

**Opponent model.** Each other seat ``s`` plays, with probability ``shares[s]``, the
heuristic's move (``heuristic.card_score``; ties split evenly), otherwise a uniformly
random legal card. ``shares`` all 0 models uniformly random opponents.

**Objective.** The probability that the seat wins the deal (in ``fan-tan`` too: the chips
follow the win, and the win is the state's only quantity that needs no history).

Two implementations of the same recursion: :func:`solve_python` on Python ints, and the C
twin ``exact.c``, built with the system compiler (``$CC``, else ``cc``) at first use into a
cache directory and called through ctypes (:func:`solve_c`). :func:`solve` uses C when it
builds and Python otherwise (or when ``ARENA_EXACT_ENGINE=python``).
``tests/ladder/test_exact.py`` checks the two agree on small positions and that the values
are those of an explicit expectimax.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from referee.games.sevens import heuristic
from referee.games.sevens.fast import FastDeal, FastRules
from referee.games.sevens.tables import ROW_BITS, bits

SOURCE = Path(__file__).with_name("exact.c")
NODE_LIMIT = 400_000
"""Default cap on the states of one solve (past it the solve gives up and returns None)."""

PYTHON_NODE_LIMIT = 10_000
"""The cap a bot puts on a Python solve (about 0.15 s on this machine, 100 times the C
solver's time): without a compiler a world past it is skipped rather than overrun the
move's clock."""

_BIT = tuple(1 << i for i in range(52))


def qualifies(deal: FastDeal) -> bool:
    """True when ``deal`` is in the solver's scope (module docstring)."""
    fr = deal.fr
    return (
        fr.must_play
        and fr.free_passes == 0
        and not fr.pass_elimination
        and not deal.special
        and not deal.opening_pending
        and deal.winner < 0
        and 2 <= deal.n <= 8
    )


# ---------------------------------------------------------------------- Python solver


def playable_cards(row_playable: Callable[[int], int], table: int) -> int:
    """The cards playable on ``table`` (a 52-bit set, 13 bits a suit), row by row."""
    return (
        row_playable(table & ROW_BITS)
        | row_playable((table >> 13) & ROW_BITS) << 13
        | row_playable((table >> 26) & ROW_BITS) << 26
        | row_playable((table >> 39) & ROW_BITS) << 39
    )


def solve_python(
    fr: FastRules,
    hands: Sequence[int],
    table: int,
    hero: int,
    shares: Sequence[float],
    node_limit: int = NODE_LIMIT,
    hero_max: bool = True,
) -> dict[int, float] | None:
    """The value of each legal card of ``hero`` (to act at ``table``): its probability of
    winning the deal (module docstring); None past ``node_limit`` states. After that card
    ``hero`` maximises (``hero_max``) or moves by its model (``shares[hero]``)."""
    n = len(hands)
    rp = fr.row_playable
    lanes = fr.lanes
    card_score = heuristic.card_score
    memo: dict[int, float] = {}

    def playable(t: int) -> int:
        return playable_cards(rp, t)

    class Abort(Exception):
        pass

    def child(t: int, seat: int, card: int) -> float:
        t2 = t | _BIT[card]
        if not hands[seat] & ~t2:
            return 1.0 if seat == hero else 0.0
        return value(t2, seat + 1 if seat + 1 < n else 0)

    def value(t: int, seat: int) -> float:
        p = playable(t)
        passes = 0
        while True:
            able = hands[seat] & ~t & p
            if able:
                break
            passes += 1
            if passes >= n:
                return 0.0
            seat = seat + 1 if seat + 1 < n else 0
        key = t | seat << 52
        found = memo.get(key)
        if found is not None:
            return found
        if seat == hero and hero_max:
            v = max(child(t, seat, c) for c in bits(able))
        else:
            share = shares[seat]
            total = 0.0
            best_total = 0.0
            best_score = -1e9
            ties = 0
            count = 0
            rest_all = hands[seat] & ~t
            for c in bits(able):
                cv = child(t, seat, c)
                total += cv
                count += 1
                if share > 0.0:
                    s = card_score(lanes[c], rest_all & ~_BIT[c], t)
                    if s > best_score:
                        best_score, best_total, ties = s, cv, 1
                    elif s == best_score:
                        best_total += cv
                        ties += 1
            v = (1.0 - share) * (total / count)
            if share > 0.0:
                v += share * (best_total / ties)
        if len(memo) >= node_limit:
            raise Abort
        memo[key] = v
        return v

    able = hands[hero] & ~table & playable(table)
    try:
        return {c: child(table, hero, c) for c in bits(able)}
    except Abort:
        return None


# ---------------------------------------------------------------------- C solver

_LOCK = threading.Lock()
_LIB: ctypes.CDLL | None = None
_TRIED = False
_ARRAYS: dict[int, tuple[ctypes.Array[ctypes.c_uint16], ctypes.Array[ctypes.c_int8]]] = {}


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "arena"


def _trusted(path: Path) -> bool:
    """``path`` is ours and nobody else may write it: a library found in a cache is loaded
    into this process, so one another user could have planted or changed is never used."""
    try:
        st = path.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def build(out_dir: Path | None = None) -> Path | None:
    """Compile ``exact.c`` into ``out_dir`` (the cache directory by default, else a fresh
    private temporary directory), named by the source's hash; the library's path, or None
    when no compiler builds it. A cached library is reused only when it and its directory
    are ours and writable by us alone (:func:`_trusted`)."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source).hexdigest()[:16]
    for directory in [out_dir] if out_dir is not None else [_cache_dir(), None]:
        try:
            if directory is None:  # never a shared, predictable path such as /tmp/x.so
                directory = Path(tempfile.mkdtemp(prefix="arena-exact-"))
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not _trusted(directory):
                continue
            lib = directory / f"sevens_exact-{digest}.so"
            if lib.exists():
                if _trusted(lib):
                    return lib
                continue
            fd, tmp = tempfile.mkstemp(suffix=".so", dir=directory)
            os.close(fd)
            cc = os.environ.get("CC", "cc")
            done = subprocess.run(
                [cc, "-O2", "-shared", "-fPIC", "-o", tmp, str(SOURCE)],
                capture_output=True,
                timeout=120,
                check=False,
            )
            if done.returncode != 0:
                os.unlink(tmp)
                print(f"exact.c did not build: {done.stderr.decode()[:500]}", file=sys.stderr)
                return None
            os.chmod(tmp, 0o700)
            os.replace(tmp, lib)  # atomic: a concurrent builder loads a whole file
            return lib
        except (OSError, subprocess.SubprocessError):
            continue
    return None


def load() -> ctypes.CDLL | None:
    """The C solver (built at first use), or None: no compiler, or
    ``ARENA_EXACT_ENGINE=python``."""
    global _LIB, _TRIED
    if os.environ.get("ARENA_EXACT_ENGINE") == "python":
        return None
    with _LOCK:
        if not _TRIED:
            _TRIED = True
            path = build()
            if path is not None:
                try:
                    lib = ctypes.CDLL(str(path))
                    lib.sx_solve.restype = ctypes.c_long
                    lib.sx_solve.argtypes = [
                        ctypes.c_int,
                        ctypes.c_int,
                        ctypes.c_int,
                        ctypes.POINTER(ctypes.c_uint64),
                        ctypes.c_uint64,
                        ctypes.POINTER(ctypes.c_uint16),
                        ctypes.POINTER(ctypes.c_int8),
                        ctypes.POINTER(ctypes.c_double),
                        ctypes.c_long,
                        ctypes.POINTER(ctypes.c_double),
                    ]
                    _LIB = lib
                except OSError:
                    _LIB = None
        return _LIB


def _arrays(fr: FastRules) -> tuple[ctypes.Array[ctypes.c_uint16], ctypes.Array[ctypes.c_int8]]:
    """The rules' row-playable table (8192 row masks) and lanes, as C arrays."""
    found = _ARRAYS.get(id(fr))
    if found is None:
        rowp = (ctypes.c_uint16 * 8192)(*(fr.row_playable(r) for r in range(8192)))
        flat = [-1] * (52 * 2 * 13)
        for card, card_lanes in enumerate(fr.lanes):
            for k, lane in enumerate(card_lanes[:2]):
                for j, other in enumerate(lane[:13]):
                    flat[(card * 2 + k) * 13 + j] = other
        lanes = (ctypes.c_int8 * len(flat))(*flat)
        found = _ARRAYS[id(fr)] = (rowp, lanes)
    return found


def solve_c(
    lib: ctypes.CDLL,
    fr: FastRules,
    hands: Sequence[int],
    table: int,
    hero: int,
    shares: Sequence[float],
    node_limit: int = NODE_LIMIT,
    hero_max: bool = True,
) -> dict[int, float] | None:
    """:func:`solve_python` in C (``exact.c``)."""
    n = len(hands)
    rowp, lanes = _arrays(fr)
    c_hands = (ctypes.c_uint64 * 8)(*hands)
    c_shares = (ctypes.c_double * 8)(*shares)
    out = (ctypes.c_double * 52)()
    used = lib.sx_solve(
        n, hero, int(hero_max), c_hands, table, rowp, lanes, c_shares, node_limit, out
    )
    if used < 0:
        return None
    able = hands[hero] & ~table & playable_cards(fr.row_playable, table)
    return {c: out[c] for c in bits(able)}


def solve(
    fr: FastRules,
    hands: Sequence[int],
    table: int,
    hero: int,
    shares: Sequence[float],
    node_limit: int = NODE_LIMIT,
    hero_max: bool = True,
) -> dict[int, float] | None:
    """:func:`solve_c` when the C solver builds, else :func:`solve_python`."""
    lib = load()
    if lib is not None:
        return solve_c(lib, fr, hands, table, hero, shares, node_limit, hero_max)
    return solve_python(fr, hands, table, hero, shares, node_limit, hero_max)
