"""People at the table: a human seat is a bot identity whose client is a person.

:class:`HumanSeat` is an ordinary SDK bot (``arena_sdk.sdk.Bot``): it connects to the
referee over the public bot protocol (``arena.v1.BotGateway/Play``) with its own token,
so the same referee, workers and clocks judge it as any bot. Its ``choose`` hands the
turn to a person (the browser page of :mod:`referee.web.play`, or the terminal of
``arena play``) and waits for their answer. What the person is shown is built only from
what the protocol delivered to this seat (:func:`turn_payload`, the notifications): they
see exactly what a bot in that seat would.

:func:`human_identity` registers (or re-keys) the person's bot identity, always named
``human-<name>`` and owned by :data:`OWNER`, so the web can never take over a real bot's
identity; :func:`casual_match` enqueues a match that belongs to no season.
"""

from __future__ import annotations

import queue
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from arena_sdk.sdk import ActionOutcome, Bot, Turn
from referee import bots, keys
from referee.errors import ConflictError
from referee.games.base import DealSpec
from referee.games.registry import get_game
from workers import queue as match_queue
from workers.spec import MatchSpec, TimeControl, match_deal_seed

OWNER = "arena-play"
"""Owner field of the bot identities made for people."""
PREFIX = "human-"
GIVE_UP_MARGIN_S = 2.0
"""A person's seat stops waiting this long after the turn's whole clock ran out."""

Listener = Callable[[str, dict[str, Any]], None]


def turn_payload(turn: Turn) -> dict[str, Any]:
    """What a person is shown of a turn: the TurnRequest's fields, nothing else."""
    return {
        "match_id": turn.match_id,
        "attempt": turn.attempt,
        "seq": turn.seq,
        "seat": turn.seat,
        "game": turn.game,
        "season": turn.season,
        "observation": turn.observation,
        "legal_actions": list(turn.legal_actions),
        "clock": {
            "move_ms": turn.clock.move_ms,
            "bank_ms": turn.clock.bank_ms,
            "grace_ms": turn.clock.grace_ms,
        },
    }


def outcome_payload(outcome: ActionOutcome) -> dict[str, Any]:
    return {
        "match_id": outcome.match_id,
        "seq": outcome.seq,
        "status": outcome.status,
        "reason": outcome.reason,
        "message": outcome.message,
        "penalty": outcome.penalty,
        "applied_action": outcome.applied_action,
        "think_ms": outcome.think_ms,
        "autopilot": outcome.autopilot,
    }


class HumanSeat(Bot):
    """An SDK bot whose decisions a person makes (see the module docstring).

    ``listener(kind, payload)`` is called for ``turn``, ``result``, ``match_start``,
    ``deal_end``, ``match_end`` and ``notice`` (from the SDK's threads: make it thread
    safe). :meth:`answer` gives the person's action for a turn's ``seq``.
    """

    games = ("sevens", "sedma")
    max_concurrent_matches = 1

    def __init__(self, name: str, listener: Listener) -> None:
        self.name = name
        self.listener = listener
        self._answers: queue.Queue[tuple[int, str | None]] = queue.Queue()
        self.stop = threading.Event()

    def answer(self, seq: int, action: str) -> None:
        self._answers.put((seq, action))

    def choose(self, turn: Turn) -> str:
        """Wait for the person's answer to ``turn``; give up when its clock has run out (the
        referee has applied the timeout rule by then) or the referee says it timed out."""
        self.listener("turn", turn_payload(turn))
        clock = turn.clock
        deadline = time.monotonic() + (clock.move_ms + clock.bank_ms + clock.grace_ms) / 1000
        while not self.stop.is_set() and time.monotonic() < deadline + GIVE_UP_MARGIN_S:
            try:
                seq, action = self._answers.get(timeout=0.2)
            except queue.Empty:
                continue
            if seq == turn.seq:
                if action is None:
                    break  # timed out: the answer no longer counts
                return action
        return turn.legal_actions[0] if turn.legal_actions else "pass"

    def on_result(self, result: ActionOutcome) -> None:
        if result.status in ("timed_out", "stale"):
            self._answers.put((result.seq, None))  # release a choose still waiting for it
        self.listener("result", outcome_payload(result))

    def on_match_start(self, msg: dict[str, Any]) -> None:
        self.listener("match_start", msg)

    def on_deal_end(self, msg: dict[str, Any]) -> None:
        self.listener("deal_end", msg)

    def on_match_end(self, msg: dict[str, Any]) -> None:
        self.listener("match_end", msg)

    def on_notice(self, code: str, message: str) -> None:
        self.listener("notice", {"code": code, "message": message})


def human_identity(conn: redis.Redis, name: str) -> tuple[str, str]:
    """``(bot name, token)`` of the person called ``name``: ``human-<name>``, registered
    now or given a new token if it was made for a person before. A bot of that name that
    is not a person's is refused (ConflictError)."""
    bot = name if name.startswith(PREFIX) else PREFIX + name
    bots.validate_name(bot)
    owner = conn.hget(keys.bot(bot), "owner")
    if owner is None:
        return bot, bots.register(conn, bot, owner=OWNER, description="a person at the table")
    if (owner.decode() if isinstance(owner, bytes) else str(owner)) != OWNER:
        raise ConflictError(f"{bot!r} is a bot's name, not a person's: choose another name")
    return bot, bots.rotate_token(conn, bot)


FLAGSHIP = ("sevens", "fan-tan")
"""The game and preset a person is offered first (the web form, ``arena play``'s default)."""


def default_preset(game: str) -> str:
    """The preset a person plays when they name only the game: the flagship's for Sevens,
    the game's first otherwise (InvalidRulesError for an unknown game)."""
    return FLAGSHIP[1] if game == FLAGSHIP[0] else next(iter(get_game(game).presets()))


def counts_text(counts: Sequence[int], noun: str) -> str:
    """``4 players``, ``3 to 8 players`` or ``2, 4 players``.

    >>> counts_text([3], "opponent"), counts_text([2, 3, 4], "opponent")
    ('exactly 3 opponents', '2 to 4 opponents')
    """
    ordered = sorted(counts)
    plural = noun if ordered == [1] else noun + "s"
    if len(ordered) == 1:
        return f"exactly {ordered[0]} {plural}"
    if ordered == list(range(ordered[0], ordered[-1] + 1)):
        return f"{ordered[0]} to {ordered[-1]} {plural}"
    return f"{', '.join(map(str, ordered))} {plural}"


def opponent_counts(game: str, preset: str) -> list[int]:
    """How many opponents a person may choose for ``game`` ``preset`` (raises
    InvalidRulesError on an unknown preset)."""
    return [n - 1 for n in get_game(game).player_counts(get_game(game).preset(preset))]


def table_problem(game: str, preset: str, opponents: int) -> str | None:
    """Why a table of a person and ``opponents`` bots cannot play ``game`` ``preset``, in
    words that give the counts it takes; None when it can."""
    allowed = opponent_counts(game, preset)
    if opponents in allowed:
        return None
    players = [n + 1 for n in allowed]
    plays = counts_text(players, "player").removeprefix("exactly ")
    return (
        f"{game} {preset} is played by {plays}: choose {counts_text(allowed, 'opponent')}, "
        f"not {opponents}"
    )


def casual_match(
    conn: redis.Redis,
    *,
    human: str,
    game: str,
    preset: str,
    against: Sequence[str],
    move_ms: int,
    bank_ms: int,
    seat: int = 0,
    deals: int | None = None,
    seed: int | None = None,
) -> MatchSpec:
    """Enqueue a match of ``human`` against ``against`` that counts for no season (raises
    InvalidRulesError / ValueError on a bad game, preset or table)."""
    rules = get_game(game).preset(preset)
    players = [*against]
    problem = table_problem(game, preset, len(players))
    if problem is not None:
        raise ValueError(problem)
    if not 0 <= seat <= len(players):
        raise ValueError(f"seat {seat} is not a seat of this table: use 0..{len(players)}")
    players.insert(seat, human)
    seed = secrets.randbits(48) if seed is None else seed
    deal_specs = None
    if deals is not None:
        deal_specs = tuple(DealSpec(seed=match_deal_seed(seed, i)) for i in range(deals))
    spec = MatchSpec(
        match_id=f"casual-{secrets.token_hex(5)}",
        game=game,
        rules=rules.to_dict(),
        seats=tuple(players),
        seed=seed,
        deals=deal_specs,
        time_control=TimeControl(move_ms=move_ms, bank_ms=bank_ms, queue_ms=max(30_000, move_ms)),
    )
    if not match_queue.enqueue_match(conn, spec):
        raise ConflictError(f"match {spec.match_id} is already queued")
    return spec


def streams_open(conn: redis.Redis, bot: str) -> int:
    return int(conn.hlen(keys.bot_streams(bot)))
