"""Sealed boards: what spectators may see of a field-duplicate season while it runs.

In a field-duplicate season (docs/seasons.md) the tables of a flight play the same boards
(shuffles). A spectator who watched table 1 play a board could tell a bot at table 2, still
playing it, what every hand holds. So (docs/SECURITY.md, "Spectators and sealed boards"):

* A match's cards and moves (its record: the web replay and text replay, the League API's
  ``GetMatch`` record and ``GetReplay``, ``arena replay``, ``arena season export``, the
  penalties listed on a bot's page) are **sealed** while its season is not finished and
  some match that shares a board with it (its flight, itself included) may still play:
  in a running or paused season, one not ``done`` or ``cancelled``; in a cancelled
  season, one still ``queued`` or ``running`` (a cancel lets running tables finish, and
  they must not see their boards' replays meanwhile).
* When the last of them is settled, the driver publishes ``replays_opened`` naming them
  (:func:`opened_by`); when the season finishes everything opens.
* A match's result (its totals and winners, the standings and events it feeds) waits too,
  while another table of its group is scheduled, queued or running (:func:`counters_held`:
  with 1-deal matches a match total is one board's result). Decisions and penalty counts
  stay public.

Matches with no boards (plain deals, same-table duplicate, casual matches) share no
shuffle with another table and are never sealed.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis

from referee import keys
from referee.match.spec import SETTLED_STATES, MatchState

SETTLED = SETTLED_STATES
"""Match states (``keys.season_matches``) after which a match will never play again."""

FINISHED = "finished"
"""The season state after which nothing of the season is sealed."""

CANCELLED = "cancelled"
"""A cancelled season: its matches queued or running may still play (:data:`PLAYING`)."""

PLAYING = frozenset({MatchState.QUEUED, MatchState.RUNNING})
"""Match states in which a match of a cancelled season may still play its boards."""

STILL_TO_PLAY = frozenset({MatchState.SCHEDULED, MatchState.QUEUED, MatchState.RUNNING})
"""Match states of a running or paused season that hold a board's counters."""


def may_play(match_state: str | None, season_state: str | None) -> bool:
    """Whether a match in ``match_state`` may still play (its boards are not over)."""
    if season_state == CANCELLED:
        return match_state in PLAYING
    return match_state not in SETTLED


@dataclass(frozen=True, slots=True)
class Seal:
    """Whether a match's cards and moves are hidden from spectators, and why."""

    match_id: str
    season: str = ""
    waiting: tuple[str, ...] = ()
    """The matches sharing a board with it that have not finished yet (sealed if any)."""
    season_state: str = "running"

    @property
    def sealed(self) -> bool:
        return bool(self.waiting)

    def message(self) -> str:
        shown = ", ".join(self.waiting[:4]) + (" …" if len(self.waiting) > 4 else "")
        return (
            f"match {self.match_id} is sealed: season {self.season} is {self.season_state} "
            f"and its boards are still being played at another table ({shown}); its cards "
            "and moves are shown when every table has finished those boards, or when the "
            "season finishes"
        )


def board_groups(schedule: Iterable[Mapping[str, Any]]) -> dict[str, frozenset[str]]:
    """Match id -> every match sharing a board with it (itself included); matches with no
    boards are left out (nothing of theirs is played at another table)."""
    by_board: dict[str, set[str]] = {}
    boards_of: dict[str, list[str]] = {}
    for data in schedule:
        boards = [str(b) for b in data.get("boards") or ()]
        if not boards:
            continue
        match_id = str(data["match_id"])
        boards_of[match_id] = boards
        for board in boards:
            by_board.setdefault(board, set()).add(match_id)
    return {
        match_id: frozenset(m for b in boards for m in by_board[b])
        for match_id, boards in boards_of.items()
    }


def waiting_for(
    group: Iterable[str], states: Mapping[str, str | None], season_state: str | None
) -> tuple[str, ...]:
    """The matches of ``group`` that may still play (empty once the season has finished)."""
    if season_state is None or season_state == FINISHED:
        return ()
    return tuple(sorted(m for m in group if may_play(states.get(m), season_state)))


class _Groups:
    """Board groups per season (a schedule never changes), read once per process."""

    def __init__(self, size: int = 64) -> None:
        self._lock = threading.Lock()
        self._cache: dict[tuple[str, str], dict[str, frozenset[str]]] = {}
        self._size = size

    def get(self, conn: redis.Redis, season: str, version: str) -> dict[str, frozenset[str]]:
        key = (season, version)
        with self._lock:
            found = self._cache.get(key)
        if found is not None:
            return found
        raw = conn.get(keys.season_schedule(season))
        groups = board_groups(json.loads(raw)) if raw else {}
        with self._lock:
            if len(self._cache) >= self._size:
                self._cache.pop(next(iter(self._cache)))
            self._cache[key] = groups
        return groups


_GROUPS = _Groups()


def _text(value: Any) -> str | None:
    """A reply as text (the web's clients answer bytes, the seasons' clients text)."""
    return value.decode() if isinstance(value, bytes) else None if value is None else str(value)


def _states(conn: redis.Redis, season: str, members: Sequence[str]) -> dict[str, str | None]:
    values = conn.hmget(keys.season_matches(season), list(members))
    return {m: _text(v) for m, v in zip(members, cast(list[Any], values), strict=True)}


def _season(conn: redis.Redis, season: str) -> tuple[str | None, str]:
    state, version = cast(list[Any], conn.hmget(keys.season(season), ["state", "seed_sha256"]))
    return _text(state), _text(version) or ""


def seal_of(conn: redis.Redis, match_id: str, season: str) -> Seal:
    """Whether ``match_id`` (of ``season``; empty for a casual match) is sealed now."""
    if not season:
        return Seal(match_id)
    state, version = _season(conn, season)
    if state is None or state == FINISHED:
        return Seal(match_id, season)
    group = _GROUPS.get(conn, season, version).get(match_id)
    if not group:
        return Seal(match_id, season)
    members = sorted(group)
    states = _states(conn, season, members)
    waiting = tuple(m for m in waiting_for(members, states, state) if m != match_id)
    if may_play(states.get(match_id), state):
        waiting = (match_id, *waiting)
    return Seal(match_id, season, waiting, state)


def opened_by(conn: redis.Redis, season: str, match_id: str) -> list[str]:
    """The matches whose seal the settling of ``match_id`` has just lifted: its board group
    when every member is settled now (empty if it has no boards or some still play)."""
    state, version = _season(conn, season)
    if state is None:
        return []
    group = _GROUPS.get(conn, season, version).get(match_id)
    if not group:
        return []
    members = sorted(group)
    if any(may_play(v, state) for v in _states(conn, season, members).values()):
        return []
    return members


def counters_held(conn: redis.Redis, match_id: str, season: str) -> bool:
    """Whether a committed match's public counters (its totals and winners, the standings
    rows and events they feed) wait because another table of its board group may still
    play those boards: one scheduled, queued or running (in a cancelled season, queued or
    running). Unlike the replay's seal, a failed table does not hold them: the season's
    end waits for every match to be counted."""
    if not season:
        return False
    state, version = _season(conn, season)
    if state is None or state == FINISHED:
        return False
    others = sorted(_GROUPS.get(conn, season, version).get(match_id, frozenset()) - {match_id})
    if not others:
        return False
    playing = PLAYING if state == CANCELLED else STILL_TO_PLAY
    return any(v in playing for v in _states(conn, season, others).values())
