"""People at the table: a human seat is a bot identity whose client is a person.

:class:`HumanSeat` is an ordinary SDK bot (``arena_sdk.sdk.Bot``): it connects to the
referee over the public bot protocol (``arena.v1.BotGateway/Play``) with its own token,
so the same referee, workers and clocks judge it as any bot. Its ``choose`` hands the
turn to a person (the browser page of :mod:`referee.web.play`, or the terminal of
``arena play``) and waits for their answer. What the person is shown is built only from
what the protocol delivered to this seat (:func:`turn_payload`, the notifications): they
see exactly what a bot in that seat would.

:func:`claim_identity` gives the web's visitor the person identity ``human-<name>`` only
if it is new or theirs: each identity keeps the SHA-256 of its person's key (a secret the
web hands their browser as an HttpOnly cookie), so a name is never enough to act for
someone. :func:`human_identity` is the operator's (``arena play``, with Redis access):
it re-keys the identity of that name. Identities are always named ``human-<name>`` and
owned by :data:`OWNER`, so no person can take over a real bot's identity;
:func:`forget_idle_people` deletes identities nobody used for long and no season names;
:func:`casual_match` enqueues a match that belongs to no season.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import queue
import secrets
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from arena_sdk.sdk import ActionOutcome, Bot, Fallback, Turn, first_legal
from referee import bots, keys
from referee import queue as match_queue
from referee.errors import ConflictError
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.messages import now_ms
from referee.match.spec import MatchSpec, TimeControl, match_deal_seed

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

    def choose(self, turn: Turn) -> str | Fallback:
        """Wait for the person's answer to ``turn``; give up when its clock has run out (the
        referee has applied the timeout rule by then), the referee says it timed out, or the
        seat is stopped: then the first legal action, marked as a fallback (the person did
        not choose it)."""
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
        return Fallback(first_legal(turn), "no_answer")

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


MAX_CASUAL_DEALS = 20
"""Deals of a casual match at most (``arena play --deals`` and the web's ``deals``)."""
KEY_FIELD = "person_key_sha256"
"""Field of a person identity's bot hash: the SHA-256 of its person's key."""
SEEN_FIELD = "person_seen_ms"
"""Field of a person identity's bot hash: when its person last took a seat."""


def bot_name(name: str) -> str:
    """``human-<name>`` (checked)."""
    bot = name if name.startswith(PREFIX) else PREFIX + name
    bots.validate_name(bot)
    return bot


def new_person_key() -> str:
    return secrets.token_urlsafe(32)


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def human_identity(conn: redis.Redis, name: str) -> tuple[str, str]:
    """(The operator's, with Redis access: ``arena play``.) ``(bot name, token)`` of the
    person called ``name``: ``human-<name>``, registered now or given a new token if it
    was made for a person before. A bot of that name that is not a person's is refused
    (ConflictError)."""
    bot = bot_name(name)
    owner = conn.hget(keys.bot(bot), "owner")
    if owner is None:
        return bot, bots.register(conn, bot, owner=OWNER, description="a person at the table")
    if _text(owner) != OWNER:
        raise ConflictError(f"{bot!r} is a bot's name, not a person's: choose another name")
    return bot, bots.rotate_token(conn, bot)


def claim_identity(conn: redis.Redis, name: str, key: str) -> tuple[str, str, bool]:
    """``(bot name, token, new)`` for the web's visitor holding the person key ``key``:
    ``human-<name>`` registered now (its key: ``key``), or re-keyed when ``key`` is the
    one it was made with. Anyone else's identity is refused (ConflictError) and keeps its
    token: a name alone never acts for its person."""
    bot = bot_name(name)
    owner = conn.hget(keys.bot(bot), "owner")
    if owner is None:
        try:
            token = bots.register(conn, bot, owner=OWNER, description="a person at the table")
        except ConflictError:
            owner = OWNER  # made just now by someone else: theirs, not this visitor's
        else:
            conn.hset(keys.bot(bot), mapping={KEY_FIELD: _digest(key), SEEN_FIELD: now_ms()})
            return bot, token, True
    if _text(owner) != OWNER:
        raise ConflictError(f"{bot!r} is a bot's name, not a person's: choose another name")
    stored = _text(conn.hget(keys.bot(bot), KEY_FIELD) or "")
    if not stored or not hmac.compare_digest(stored, _digest(key)):
        raise ConflictError(
            f"the name {name!r} is taken by another person: choose another name (only the "
            f"browser that first joined as {name!r} can sit as {bot})"
        )
    token = bots.rotate_token(conn, bot)
    conn.hset(keys.bot(bot), SEEN_FIELD, now_ms())
    return bot, token, False


def seen(conn: redis.Redis, bot: str) -> None:
    """The person of ``bot`` is at the table now (keeps the identity from expiring)."""
    conn.hset(keys.bot(bot), SEEN_FIELD, now_ms())


def people_count(conn: redis.Redis) -> int:
    """Person identities made by the web (those with a person key)."""
    return len(_people(conn))


def _people(conn: redis.Redis) -> list[str]:
    names = [_text(n) for n in conn.smembers(keys.BOTS)]
    names = [n for n in names if n.startswith(PREFIX)]
    with conn.pipeline(transaction=False) as pipe:
        for name in names:
            pipe.hget(keys.bot(name), KEY_FIELD)
        stored = pipe.execute() if names else []
    return [n for n, k in zip(names, stored, strict=True) if k]


def _season_bots(conn: redis.Redis) -> set[str]:
    """Every bot any stored season names (its standings keep the name)."""
    out: set[str] = set()
    for season in conn.zrange(keys.SEASONS, 0, -1):
        raw = conn.hget(keys.season(_text(season)), "spec")
        if raw:
            try:
                out.update(str(b) for b in json.loads(raw).get("bots", []))
            except (ValueError, AttributeError):
                continue
    return out


def forget_idle_people(conn: redis.Redis, idle_s: float) -> list[str]:
    """Delete the web's person identities unused for ``idle_s`` seconds that hold no
    stream and that no season names (a season's standings keep its people's names, so
    those names stay theirs). Returns the names deleted."""
    cutoff = now_ms() - idle_s * 1000.0
    named = _season_bots(conn)
    gone = []
    for name in _people(conn):
        streams = {_text(k): _text(v) for k, v in conn.hgetall(keys.bot_streams(name)).items()}
        if name in named or bots.count_streams(streams, now_ms()):
            continue
        data = {_text(k): _text(v) for k, v in conn.hgetall(keys.bot(name)).items()}
        if float(data.get(SEEN_FIELD) or 0) > cutoff or data.get("owner") != OWNER:
            continue
        pipe = conn.pipeline(transaction=True)
        if data.get("token_sha256"):
            pipe.hdel(keys.TOKEN_INDEX, data["token_sha256"])
        pipe.delete(keys.bot(name), keys.bot_streams(name), keys.bot_pending_notices(name))
        pipe.srem(keys.BOTS, name)
        pipe.publish(keys.TOKEN_EVENTS, name)
        pipe.execute()
        gone.append(name)
    return gone


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
    counts = list(get_game(game).player_counts(rules))
    if len(players) not in counts:
        raise ValueError(
            f"{game} {preset} is played by {', '.join(map(str, counts))} players, "
            f"not {len(players)}: name {counts[0] - 1} or more opponents"
        )
    if deals is not None and not 1 <= deals <= MAX_CASUAL_DEALS:
        raise ValueError(
            f"deals = {deals} is out of range: a casual match plays 1 .. {MAX_CASUAL_DEALS} "
            "deals (or leave it empty for the rules' own length)"
        )

    seed = secrets.randbits(48) if seed is None else seed
    deal_specs = None
    if deals is not None:
        deal_specs = tuple(DealSpec(seed=match_deal_seed(seed, i)) for i in range(deals))
    spec = MatchSpec(
        match_id=f"{match_queue.CASUAL_PREFIX}{secrets.token_hex(5)}",
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
