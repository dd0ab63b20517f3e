"""The Python bot SDK: subclass :class:`Bot`, implement :meth:`Bot.choose`, call :func:`main`.

::

    from arena_sdk.sdk import Bot, Turn, main

    class MyBot(Bot):
        name = "mybot"
        def choose(self, turn: Turn) -> str:
            return turn.legal_actions[0]

    if __name__ == "__main__":
        main(MyBot())          # --server HOST:PORT --token TOKEN [--tls-ca CA.pem]

The SDK keeps one stream open to the referee (``arena.v1.BotGateway/Play``), answers every
``TurnRequest`` by calling ``choose`` (on the stream's own thread while it is fast, else in
a thread pool so that a slow ``choose`` never blocks the stream and several matches are
served at once: :attr:`Bot.choose_inline`), reconnects with capped exponential backoff,
and logs what the referee refused and why. It imports neither ``referee`` nor ``workers``:
only the generated ``arena.v1`` code, grpcio and protobuf.
docs/PROTOCOL.md is the protocol.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import random
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Protocol

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]

from arena.v1 import bot_pb2, bot_pb2_grpc
from arena_sdk.observation import HistoryItem, Observation, SedmaFields, SevensFields, TrickCard

log = logging.getLogger("arena.sdk")

__all__ = [
    "CHOOSE_BAD_RETURN",
    "CHOOSE_RAISED",
    "INLINE_LIMIT_MS",
    "KEEPALIVE_TIMEOUT_MS",
    "KEEPALIVE_TIME_MS",
    "MAX_ACTION_CHARS",
    "MAX_MESSAGE_BYTES",
    "MIN_KEEPALIVE_TIMEOUT_MS",
    "MIN_KEEPALIVE_TIME_MS",
    "PROBE_DECISIONS",
    "PROTOCOL_VERSION",
    "SEASON_NOTICES",
    "ActionInfo",
    "ActionOutcome",
    "Bot",
    "BotRefused",
    "Clock",
    "Fallback",
    "HistoryItem",
    "Observation",
    "SedmaFields",
    "SevensFields",
    "TrickCard",
    "Turn",
    "TurnParser",
    "channel_options",
    "check_keepalive",
    "first_legal",
    "is_fatal",
    "main",
    "notice_to_dict",
    "notification_to_dict",
    "observation_to_dict",
    "open_channel",
    "outcome_from_proto",
    "turn_from_proto",
]
"""The public surface: what ``from arena_sdk.sdk import *`` (and the alias
``sample_bots.sdk``) gives. ``tests/gateway/test_sdk_surface.py`` fails when it changes
without this list and docs/bots.md changing with it."""


PROTOCOL_VERSION = 1
# Keepalive (docs/PROTOCOL.md section 7): the SDK pings its connection every 5 s and gives
# up on it after 5 s without the ack, so a referee that vanished from the network (host cut
# off, no FIN) is noticed within about 10 s and the bot moves to the next referee. The
# referee accepts pings as often as every MIN_KEEPALIVE_TIME_MS (referee/gateway/server.py
# MIN_CLIENT_PING_INTERVAL_MS); more often earns GOAWAY too_many_pings. Both settable with
# --keepalive-ms / --keepalive-timeout-ms (or $ARENA_KEEPALIVE_MS, ...) or Bot attributes.
KEEPALIVE_TIME_MS = 5_000
KEEPALIVE_TIMEOUT_MS = 5_000
MIN_KEEPALIVE_TIME_MS = 2_000
MIN_KEEPALIVE_TIMEOUT_MS = 1_000
MAX_MESSAGE_BYTES = 64 * 1024
MAX_ACTION_CHARS = 200
"""The referee ends the stream (INVALID_ARGUMENT) for a longer action; a message over
MAX_MESSAGE_BYTES would end it RESOURCE_EXHAUSTED and fail again after every reconnect."""
BACKOFF_START_S = 0.5
PROBE_DECISIONS = 3
"""Decisions whose ``choose`` runs in the pool, timed, before it may run inline
(:attr:`Bot.choose_inline` None)."""
INLINE_LIMIT_MS = 5.0
"""The default :attr:`Bot.inline_limit_ms`."""
BACKOFF_MAX_S = 15.0

FATAL_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.INVALID_ARGUMENT,
    }
)
"""Statuses that reconnecting cannot fix (bad token, protocol error): :meth:`Bot.run` raises."""


def is_fatal(code: grpc.StatusCode, details: str) -> bool:
    """True when reconnecting cannot help: a :data:`FATAL_CODES` status, or
    ``RESOURCE_EXHAUSTED`` for a message over the 64 KiB limit (sending it again fails the
    same way; ``RESOURCE_EXHAUSTED`` for too many streams clears by itself)."""
    too_large = code == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details
    return code in FATAL_CODES or too_large


_RESULT_STATUS = {
    bot_pb2.ActionResult.ACCEPTED: "accepted",
    bot_pb2.ActionResult.REFUSED: "refused",
    bot_pb2.ActionResult.TIMED_OUT: "timed_out",
    bot_pb2.ActionResult.STALE: "stale",
    bot_pb2.ActionResult.DUPLICATE: "duplicate",
}


@dataclass(frozen=True)
class Clock:
    move_ms: int
    bank_ms: int
    grace_ms: int


@dataclass(frozen=True)
class ActionInfo:
    """What one legal action is and costs (``TurnRequest.action_info``, docs/PROTOCOL.md
    section 4): ``kind`` is card, run, marriage, forced_pass, free_pass or voluntary_pass;
    ``cost`` the chips (or penalty points) it pays; ``eliminates`` True when it puts the seat
    out of the deal (SV-23)."""

    action: str
    kind: str
    cost: int
    eliminates: bool


@dataclass(frozen=True)
class Turn:
    """One decision: what the seat sees (docs/OBSERVATIONS.md) and what it may do.

    ``action_info`` has one :class:`ActionInfo` per legal action, in the same order (empty
    from a referee that predates it)."""

    match_id: str
    attempt: int
    seq: int
    seat: int
    game: str
    observation: Observation
    legal_actions: list[str]
    clock: Clock
    season: str
    action_info: list[ActionInfo] = field(default_factory=list)

    def costly(self, action: str) -> bool:
        """True when ``action`` (a legal one) costs chips or puts the seat out of the deal."""
        return any(
            info.action == action and (info.cost > 0 or info.eliminates)
            for info in self.action_info
        )


@dataclass(frozen=True)
class ActionOutcome:
    """What became of an answer: ``status`` is accepted, refused, timed_out, stale or
    duplicate; ``reason`` a code and ``message`` the explanation in words."""

    match_id: str
    attempt: int
    seq: int
    status: str
    reason: str
    message: str
    penalty: int
    applied_action: str
    think_ms: int
    autopilot: bool


class StopFlag(Protocol):
    def is_set(self) -> bool: ...


class BotRefused(RuntimeError):
    """The referee refused the bot for a reason that reconnecting cannot fix."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code = code
        self.details = details


def _env_ms(name: str, default: int) -> int:
    """``$NAME`` as milliseconds (whole number), else ``default``."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"${name} must be a whole number of milliseconds, not {text!r}") from None


def check_keepalive(time_ms: int, timeout_ms: int) -> None:
    """Raise ValueError unless the referee accepts pings every ``time_ms`` (docs/PROTOCOL.md
    section 7) and ``timeout_ms`` leaves the ack time to come back."""
    if time_ms < MIN_KEEPALIVE_TIME_MS:
        raise ValueError(
            f"keepalive every {time_ms} ms is more often than the referee accepts (it closes "
            f"the connection with too_many_pings): use at least {MIN_KEEPALIVE_TIME_MS} ms"
        )
    if timeout_ms < MIN_KEEPALIVE_TIMEOUT_MS:
        raise ValueError(
            f"a keepalive timeout of {timeout_ms} ms drops healthy connections on a busy "
            f"network: use at least {MIN_KEEPALIVE_TIMEOUT_MS} ms"
        )


def channel_options(
    keepalive_ms: int = KEEPALIVE_TIME_MS, keepalive_timeout_ms: int = KEEPALIVE_TIMEOUT_MS
) -> list[tuple[str, int]]:
    """Client channel options that agree with the referee's keepalive policy."""
    check_keepalive(keepalive_ms, keepalive_timeout_ms)
    return [
        ("grpc.keepalive_time_ms", keepalive_ms),
        ("grpc.keepalive_timeout_ms", keepalive_timeout_ms),
        # gRPC core waits for a ping's ack this long (60 s by default) and arms the shorter
        # keepalive timeout only in some states: set both, or a silent referee (no FIN,
        # TCP still acked, as behind a NAT or proxy) is noticed after a minute
        ("grpc.http2.ping_timeout_ms", keepalive_timeout_ms),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
    ]


def open_channel(
    server: str,
    tls_ca: str | None = None,
    keepalive_ms: int = KEEPALIVE_TIME_MS,
    keepalive_timeout_ms: int = KEEPALIVE_TIMEOUT_MS,
) -> grpc.aio.Channel:
    options = channel_options(keepalive_ms, keepalive_timeout_ms)
    if tls_ca:
        credentials = grpc.ssl_channel_credentials(root_certificates=Path(tls_ca).read_bytes())
        return grpc.aio.secure_channel(server, credentials, options=options)
    return grpc.aio.insecure_channel(server, options=options)


# --- proto -> dict (the JSON form of docs/OBSERVATIONS.md) ----------------------------------
def observation_to_dict(obs: Any) -> Observation:
    """``arena.v1.Observation`` -> the observation dict of docs/OBSERVATIONS.md."""
    return TurnParser().observation(obs)


def _history_entry(entry: Any) -> HistoryItem:
    item: HistoryItem = {"seat": entry.seat, "kind": entry.kind}
    if entry.action:
        item["action"] = entry.action
    if entry.reason:
        item["reason"] = entry.reason
    return item


def turn_from_proto(request: Any) -> Turn:
    return TurnParser().turn(request)


class TurnParser:
    """Turns ``TurnRequest`` messages into :class:`Turn` objects, parsing what repeats once.

    A match's requests repeat most of what they carry: the rules (the same JSON text at
    every decision), and the deal's history, which grows by a few entries per decision.
    The parser keeps the rules parsed per text and, per seat of a match, the history items
    already converted: a request whose history continues the last one (same deal, the
    old last entry where it was) converts only its new entries. Every :class:`Turn` still
    gets dicts and lists of its own (copies), so a ``choose`` that changes its observation
    changes nothing of the next one. One parser per stream; it forgets a match when its
    ``MatchEnd`` comes (:meth:`forget`), and keeps at most :attr:`MAX_SEATS` seats."""

    MAX_SEATS = 1024

    def __init__(self) -> None:
        self._rules: dict[str, tuple[dict[str, Any], bool]] = {}
        # (match_id, attempt, seat) -> (deal_index, items converted, the last entry's fields)
        self._history: dict[tuple[str, int, int], tuple[int, list[HistoryItem], Any]] = {}

    def forget(self, match_id: str) -> None:
        """Drop what was kept for ``match_id`` (its match ended)."""
        for key in [k for k in self._history if k[0] == match_id]:
            del self._history[key]

    def rules(self, text: str) -> dict[str, Any]:
        if not text:
            return {}
        known = self._rules.get(text)
        if known is None:
            parsed = json.loads(text)
            flat = isinstance(parsed, dict) and not any(
                isinstance(v, (dict, list)) for v in parsed.values()
            )
            if len(self._rules) >= 64:
                self._rules.clear()
            known = self._rules[text] = (parsed, flat)
        parsed, flat = known
        return dict(parsed) if flat else json.loads(text)

    def history(self, obs: Any, key: tuple[str, int, int] | None) -> list[HistoryItem]:
        entries = obs.history
        if key is None:
            return [_history_entry(h) for h in entries]
        n = len(entries)
        kept = self._history.get(key)
        items: list[HistoryItem] = []
        if kept is not None and kept[0] == obs.deal_index and len(kept[1]) <= n:
            done = len(kept[1])
            if done == 0 or _entry_fields(entries[done - 1]) == kept[2]:
                items = kept[1]
        if len(items) < n:
            items.extend([_history_entry(h) for h in entries[len(items) :]])
        if key not in self._history and len(self._history) >= self.MAX_SEATS:
            self._history.clear()
        last = _entry_fields(entries[n - 1]) if n else None
        self._history[key] = (obs.deal_index, items, last)
        return [item.copy() for item in items]

    def observation(self, obs: Any, key: tuple[str, int, int] | None = None) -> Observation:
        """``arena.v1.Observation`` -> the observation dict (``key``: the match, attempt
        and seat it is for, when its history may continue an earlier one)."""
        out: Observation = {
            "game": obs.game,
            "preset": obs.preset,
            "rules": self.rules(obs.rules_json),
            "seat": obs.seat,
            "num_players": obs.num_players,
            "deal_index": obs.deal_index,
            "num_deals": obs.num_deals,
            "dealer": obs.dealer,
            "to_act": obs.to_act,
            "hand": list(obs.hand),
            "hand_sizes": list(obs.hand_sizes),
            "totals": list(obs.totals),
            "unit": obs.unit,
            "history": self.history(obs, key),
        }
        view = obs.WhichOneof("view")
        if view == "sevens":
            s = obs.sevens
            out["table"] = {row.suit: list(row.cards) for row in s.table}
            out["pot"] = s.pot
            out["passes"] = list(s.passes)
            out["free_passes_left"] = list(s.free_passes_left)
            out["eliminated"] = list(s.eliminated)
            out["skip_next"] = list(s.skip_next)
        elif view == "sedma":
            d = obs.sedma
            out["sides"] = [list(side.seats) for side in d.sides]
            out["leader"] = d.leader
            out["trick"] = [{"seat": t.seat, "card": t.card} for t in d.trick]
            out["talon_size"] = d.talon_size
            out["tricks_won"] = list(d.tricks_won)
            out["card_points"] = list(d.card_points)
            out["match_points"] = list(d.match_points)
            out["target"] = d.target
            out["marriages"] = [list(m.cards) for m in d.marriages]
        return out

    def turn(self, request: Any) -> Turn:
        key = (request.match_id, request.attempt, request.seat)
        observation = self.observation(request.observation, key)
        clock = request.clock
        return Turn(
            match_id=request.match_id,
            attempt=request.attempt,
            seq=request.seq,
            seat=request.seat,
            game=observation["game"],
            observation=observation,
            legal_actions=list(request.legal_actions),
            clock=Clock(clock.move_ms, clock.bank_ms, clock.grace_ms),
            season=request.season,
            action_info=[
                ActionInfo(info.action, info.kind, info.cost, info.eliminates)
                for info in request.action_info
            ],
        )


def _entry_fields(entry: Any) -> tuple[int, str, str, str]:
    return (entry.seat, entry.kind, entry.action, entry.reason)


def outcome_from_proto(result: Any) -> ActionOutcome:
    return ActionOutcome(
        match_id=result.match_id,
        attempt=result.attempt,
        seq=result.seq,
        status=_RESULT_STATUS.get(result.status, "unspecified"),
        reason=result.reason,
        message=result.message,
        penalty=result.penalty,
        applied_action=result.applied_action,
        think_ms=result.think_ms,
        autopilot=result.autopilot,
    )


SEASON_NOTICES = ("season_start", "season_end")
"""Notice codes that carry a season (docs/PROTOCOL.md section 2)."""


def notice_to_dict(notice: Any) -> dict[str, Any]:
    """A Notice -> ``{"code", "message"}``, plus for season notices ``season``, ``game``,
    ``season_state`` and ``standing`` (the bot's final row as a dict; None when absent)."""
    out: dict[str, Any] = {"code": notice.code, "message": notice.message}
    if notice.code in SEASON_NOTICES:
        out["season"] = notice.season
        out["game"] = notice.game
        out["season_state"] = notice.season_state
        standing = None
        if notice.HasField("standing"):
            row = notice.standing
            standing = {f.name: getattr(row, f.name) for f in row.DESCRIPTOR.fields}
        out["standing"] = standing
    return out


def _json_or_empty(text: str) -> Any:
    return json.loads(text) if text else {}


def notification_to_dict(kind: str, msg: Any) -> dict[str, Any]:
    """MatchStart / DealEnd / MatchEnd -> a dict with JSON fields parsed."""
    if kind == "match_start":
        return {
            "match_id": msg.match_id,
            "attempt": msg.attempt,
            "game": msg.game,
            "preset": msg.preset,
            "rules": _json_or_empty(msg.rules_json),
            "seats": list(msg.seats),
            "players": list(msg.players),
            "num_deals": msg.num_deals,
            "season": msg.season,
        }
    if kind == "deal_end":
        return {
            "match_id": msg.match_id,
            "attempt": msg.attempt,
            "deal_index": msg.deal_index,
            "winner": msg.winner,
            "deltas": list(msg.deltas),
            "totals": list(msg.totals),
            "result": _json_or_empty(msg.result_json),
        }
    return {
        "match_id": msg.match_id,
        "attempt": msg.attempt,
        "totals": list(msg.totals),
        "unit": msg.unit,
        "winners": list(msg.winners),
        "result": _json_or_empty(msg.result_json),
    }


# --- the bot ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Fallback:
    """A stand-in answer: the bot's own code did not choose, ``action`` is sent in its place
    and ``reason`` tells the referee why (``Action.fallback``, docs/PROTOCOL.md section 4).

    ``choose`` may return one (the stdio bridge does, when its program fails to answer);
    the SDK makes one itself when ``choose`` raises or returns something that is not an
    action. The referee applies the action and counts the decision as a fallback."""

    action: str
    reason: str


CHOOSE_RAISED: Final = "choose_raised"
CHOOSE_BAD_RETURN: Final = "choose_bad_return"


def first_legal(turn: Turn) -> str:
    """The stand-in action: the first legal action (``pass`` when none is listed)."""
    return turn.legal_actions[0] if turn.legal_actions else "pass"


class Bot:
    """Base class of a bot. Override :meth:`choose`; the hooks are optional."""

    name: str = "bot"
    version: str = "0.1"
    games: tuple[str, ...] = ("sevens", "sedma")
    max_concurrent_matches: int = 4
    exit_after_season: str | None = None
    """Stop :meth:`run` (it returns) once a ``season_end`` notice arrives for this season;
    ``"*"`` means any season. None (the default) plays on."""
    _season_over: bool = False
    keepalive_ms: int = _env_ms("ARENA_KEEPALIVE_MS", KEEPALIVE_TIME_MS)
    """Ping the referee's connection this often (at least MIN_KEEPALIVE_TIME_MS; default
    ``$ARENA_KEEPALIVE_MS`` or KEEPALIVE_TIME_MS) and drop it when the ack takes longer
    than :attr:`keepalive_timeout_ms`: a vanished referee is noticed within about the sum
    of the two, and the bot reconnects (to the next referee given)."""
    keepalive_timeout_ms: int = _env_ms("ARENA_KEEPALIVE_TIMEOUT_MS", KEEPALIVE_TIMEOUT_MS)
    choose_inline: bool | None = False
    """Where ``choose`` runs. False (the default): in the thread pool, so that a ``choose``
    that blocks (a person's seat, a search, I/O) never holds the stream and the bot's other
    matches. None: on the stream's own thread while it stays fast, which saves two thread
    hops per decision. The first :data:`PROBE_DECISIONS`
    decisions run in the thread pool and are timed; when each took under
    :attr:`inline_limit_ms`, later ones run on the stream's thread, still timed; the first
    that takes longer moves ``choose`` back to the pool for good (while ``choose`` runs on
    the stream's thread nothing else is read or answered). True: always on the stream's
    thread. A bot whose ``choose`` is always fast opts in with None or True."""
    inline_limit_ms: float = INLINE_LIMIT_MS
    """A ``choose`` slower than this (wall time) moves to the thread pool for good
    (:attr:`choose_inline` None)."""
    accepted_results: bool | None = None
    """Whether :meth:`on_result` hears of plain ACCEPTED answers too. None (the default):
    only when the subclass overrides :meth:`on_result`; otherwise Hello asks the referee not
    to send them (``skip_accepted_results``: one message fewer per decision; the next
    turn's history shows the action applied). Refusals, timeouts, stale and duplicate
    answers, penalties and the autopilot always reach :meth:`on_result`."""

    batches: bool = True
    """Whether Hello asks for batches (docs/PROTOCOL.md section 4): turn requests that wait
    to be written together come in one message, and answers ready together go in one. The
    SDK unpacks them: ``choose`` sees one turn at a time either way. False: one message
    per turn and per answer."""

    def wants_accepted_results(self) -> bool:
        """What Hello declares: :attr:`accepted_results`, or (None) whether this class
        overrides :meth:`on_result`."""
        if self.accepted_results is not None:
            return self.accepted_results
        return type(self).on_result is not Bot.on_result

    def choose(self, turn: Turn) -> str | Fallback:
        """Return one of ``turn.legal_actions`` (any other text is refused by the referee)."""
        raise NotImplementedError("subclass Bot and implement choose(turn) -> action")

    def on_result(self, result: ActionOutcome) -> None:
        """Called for every ActionResult the referee sends (plain ACCEPTED ones only when
        :meth:`wants_accepted_results`); by default logs refusals and why."""
        if result.status != "accepted":
            log.warning(
                "%s: %s %s/%d seq %d (%s): %s%s",
                self.name,
                result.status,
                result.match_id,
                result.attempt,
                result.seq,
                result.reason,
                result.message,
                f" [penalty {result.penalty}]" if result.penalty else "",
            )

    def on_match_start(self, msg: dict[str, Any]) -> None:
        """A match started (dict of MatchStart; ``rules`` parsed)."""

    def on_deal_end(self, msg: dict[str, Any]) -> None:
        """A deal ended (dict of DealEnd; ``result`` parsed)."""

    def on_match_end(self, msg: dict[str, Any]) -> None:
        """A match ended (dict of MatchEnd; ``result`` parsed)."""

    def on_notice(self, code: str, message: str) -> None:
        """Every Notice (draining, season_start, season_end, ...); by default logged."""
        log.info("%s: referee notice %s: %s", self.name, code, message)

    def on_season_start(self, notice: dict[str, Any]) -> None:
        """A season this bot is entered in started (dict of :func:`notice_to_dict`)."""

    def on_season_end(self, notice: dict[str, Any]) -> None:
        """A season this bot is entered in ended; ``notice["standing"]`` is the bot's final
        row (rank, of, elo, score, ...) or None. By default logged."""
        row = notice.get("standing") or {}
        log.info(
            "%s: season %s %s: rank %s of %s, score %s",
            self.name,
            notice.get("season"),
            notice.get("season_state"),
            row.get("rank", "-"),
            row.get("of", "-"),
            row.get("score", "-"),
        )

    def _wants_exit(self, notice: dict[str, Any]) -> bool:
        wanted = self.exit_after_season
        return notice["code"] == "season_end" and wanted in ("*", notice.get("season"))

    # --- running -----------------------------------------------------------------------
    def run(
        self,
        server: str,
        token: str,
        *,
        tls_ca: str | None = None,
        stop: threading.Event | None = None,
    ) -> None:
        """Play until ``stop`` is set (or forever), reconnecting with backoff.

        ``server`` is ``HOST:PORT``, or several separated by commas (referees of one
        platform): each reconnect tries the next. Raises :class:`BotRefused` when the
        referee refuses the bot for a reason that reconnecting cannot fix (bad token, wrong
        protocol)."""
        asyncio.run(self.run_async(server, token, tls_ca=tls_ca, stop=stop))

    async def run_async(
        self,
        server: str,
        token: str,
        *,
        tls_ca: str | None = None,
        stop: StopFlag | None = None,
    ) -> None:
        """:meth:`run` for callers that already have an event loop."""
        servers = [s.strip() for s in server.split(",") if s.strip()]
        if not servers:
            raise ValueError("no server address: pass HOST:PORT (or several, comma-separated)")
        backoff = BACKOFF_START_S
        attempt = 0
        self._season_over = False
        while (stop is None or not stop.is_set()) and not self._season_over:
            welcomed = False
            target = servers[attempt % len(servers)]
            attempt += 1
            try:
                welcomed = await self._play_once(target, token, tls_ca, stop)
                if (stop is not None and stop.is_set()) or self._season_over:
                    return
                log.info("%s: the referee closed the stream; reconnecting", self.name)
            except grpc.aio.AioRpcError as exc:
                code = exc.code()
                if is_fatal(code, exc.details() or ""):
                    # Said once, by whoever catches BotRefused (main() exits with it); an
                    # error log here printed a wrong token twice.
                    log.debug(
                        "%s: refused by the referee: %s %s", self.name, code.name, exc.details()
                    )
                    raise BotRefused(code, exc.details() or "") from None
                log.warning("%s: stream ended: %s %s", self.name, code.name, exc.details())
            if welcomed:
                backoff = BACKOFF_START_S
            if len(servers) > 1 and attempt % len(servers) != 0:
                continue  # try the other referees before waiting
            delay = backoff * (0.5 + random.random() / 2)
            backoff = min(backoff * 2, BACKOFF_MAX_S)
            await _sleep_unless(stop, delay)

    async def _play_once(
        self, server: str, token: str, tls_ca: str | None, stop: StopFlag | None
    ) -> bool:
        """One stream: Hello, Welcome, then turns until the stream ends. True if welcomed."""
        channel = open_channel(server, tls_ca, self.keepalive_ms, self.keepalive_timeout_ms)
        executor = ThreadPoolExecutor(
            max_workers=max(1, self.max_concurrent_matches),
            thread_name_prefix=f"{self.name}-choose",
        )
        welcomed = False
        watcher: asyncio.Task[None] | None = None
        try:
            stub = bot_pb2_grpc.BotGatewayStub(channel)
            call = stub.Play(metadata=(("authorization", f"Bearer {token}"),))
            if stop is not None:
                watcher = asyncio.ensure_future(_cancel_when(stop, call))
            await call.write(
                bot_pb2.BotMessage(
                    hello=bot_pb2.Hello(
                        protocol_version=PROTOCOL_VERSION,
                        bot_version=f"{self.name} {self.version} (python sdk)",
                        games=list(self.games),
                        max_concurrent_matches=self.max_concurrent_matches,
                        skip_accepted_results=not self.wants_accepted_results(),
                        batches=self.batches,
                    )
                )
            )
            first = await call.read()
            if first is grpc.aio.EOF:
                return False
            if first.WhichOneof("msg") != "welcome":
                log.error(
                    "%s: the referee answered Hello with %s instead of Welcome; reconnecting",
                    self.name,
                    first.WhichOneof("msg"),
                )
                return False
            welcomed = True
            w = first.welcome
            log.info(
                "%s: connected as %s to referee %s (session %s, concurrency %d)",
                self.name,
                w.bot,
                w.referee_id,
                w.session_id,
                w.max_concurrent_matches,
            )
            await self._serve(call, executor, stop, batches=self.batches and w.batches)
        except asyncio.CancelledError:
            if stop is not None and stop.is_set():
                return welcomed
            raise
        finally:
            if watcher is not None:
                watcher.cancel()
            executor.shutdown(wait=False, cancel_futures=True)
            await channel.close()
        return welcomed

    async def _serve(
        self,
        call: Any,
        executor: ThreadPoolExecutor,
        stop: StopFlag | None = None,
        batches: bool = False,
    ) -> None:
        """Answer the stream's turns until it ends; ``batches``: the referee's Welcome said
        it sends ``TurnBatch`` and takes ``ActionBatch``."""
        pending: set[asyncio.Task[None]] = set()
        loop = asyncio.get_running_loop()
        parser = TurnParser()
        placement = self._placement

        outgoing: list[Any] = []  # Actions to write, in order
        writing = False  # a flush is writing: it takes what is queued meanwhile

        def queue(turn: Turn, answer: str | Fallback) -> None:
            action, fallback = (
                (answer.action, answer.reason) if isinstance(answer, Fallback) else (answer, "")
            )
            outgoing.append(
                bot_pb2.Action(
                    match_id=turn.match_id,
                    attempt=turn.attempt,
                    seq=turn.seq,
                    action=action,
                    fallback=fallback,
                )
            )

        async def flush() -> None:
            """Write the queued answers: those queued together in one ``ActionBatch`` when
            the referee said ``batches``, else one message each; answers queued while a
            write is in flight go with the next one."""
            nonlocal writing
            if writing:
                return
            writing = True
            try:
                while outgoing:
                    if batches and len(outgoing) > 1:
                        message = bot_pb2.BotMessage(actions=bot_pb2.ActionBatch(actions=outgoing))
                        outgoing.clear()
                    else:
                        message = bot_pb2.BotMessage(action=outgoing.pop(0))
                    await call.write(message)
            except (grpc.aio.AioRpcError, grpc.aio.UsageError) as exc:
                # The stream ended while choose ran; the referee resends what we held.
                log.info("%s: could not send answers: %s", self.name, exc)
                outgoing.clear()
            finally:
                writing = False

        # choose in the pool: each thread puts what it chose in ``chosen``, and the loop is
        # woken once for all that finish while it is busy (not once per answer)
        chosen: deque[tuple[Turn, tuple[object, float, Exception | None]]] = deque()
        chosen_lock = threading.Lock()
        woken = False
        ended = False

        def choose_in_pool(turn: Turn) -> None:
            nonlocal woken
            outcome = self._call_choose(turn)
            with chosen_lock:
                chosen.append((turn, outcome))
                if woken:
                    return
                woken = True
            with contextlib.suppress(RuntimeError):  # the loop is closed: the stream is gone
                loop.call_soon_threadsafe(deliver)

        def deliver() -> None:
            nonlocal woken
            with chosen_lock:
                ready = list(chosen)
                chosen.clear()
                woken = False
            if ended:
                return
            for turn, outcome in ready:
                placement.timed(self, outcome[1])
                queue(turn, self._answer_of(turn, outcome))
            if not writing:
                task = asyncio.ensure_future(flush())
                pending.add(task)
                task.add_done_callback(pending.discard)

        try:
            while True:
                message = await call.read()
                if message is grpc.aio.EOF:
                    return
                kind = message.WhichOneof("msg")
                if kind == "turn" or kind == "turns":
                    if stop is not None and stop.is_set():
                        # Stopping: answer nothing more (the stop watcher would end the
                        # stream within 0.1 s; a fast match could get many answers by then).
                        # The referee gives the request back to the inbox.
                        call.cancel()
                        return
                    for request in (message.turn,) if kind == "turn" else message.turns.turns:
                        turn = parser.turn(request)
                        if placement.inline():
                            outcome = self._call_choose(turn)
                            placement.timed(self, outcome[1])
                            queue(turn, self._answer_of(turn, outcome))
                            continue
                        executor.submit(choose_in_pool, turn)
                    await flush()
                elif kind == "result":
                    self._hook(self.on_result, outcome_from_proto(message.result))
                elif kind in ("match_start", "deal_end", "match_end"):
                    if kind == "match_end":
                        parser.forget(message.match_end.match_id)
                    hook = getattr(self, f"on_{kind}")
                    self._hook(hook, notification_to_dict(kind, getattr(message, kind)))
                elif kind == "notice":
                    notice = notice_to_dict(message.notice)
                    self._hook(self.on_notice, notice["code"], notice["message"])
                    if notice["code"] == "season_start":
                        self._hook(self.on_season_start, notice)
                    elif notice["code"] == "season_end":
                        self._hook(self.on_season_end, notice)
                        if self._wants_exit(notice):
                            log.info("%s: season %s is over; exiting", self.name, notice["season"])
                            self._season_over = True
                            call.cancel()
                            return
        finally:
            ended = True
            for task in pending:
                task.cancel()

    @property
    def _placement(self) -> _Placement:
        """Where ``choose`` runs (kept across reconnects: a ``choose`` found slow stays in
        the pool)."""
        placement: _Placement | None = self.__dict__.get("_placement_state")
        if placement is None or placement.declared is not self.choose_inline:
            placement = self.__dict__["_placement_state"] = _Placement(self.choose_inline)
        return placement

    def _hook(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s: %s raised", self.name, getattr(fn, "__name__", fn))

    def _call_choose(self, turn: Turn) -> tuple[object, float, Exception | None]:
        """``choose(turn)`` timed: (what it returned, seconds, what it raised). Runs in the
        pool or on the stream's thread; nothing is logged here (see :meth:`_answer_of`)."""
        start = time.perf_counter()
        try:
            action: object = self.choose(turn)
        except Exception as exc:
            return None, time.perf_counter() - start, exc
        return action, time.perf_counter() - start, None

    def _answer_of(
        self, turn: Turn, outcome: tuple[object, float, Exception | None]
    ) -> str | Fallback:
        """What to send for ``choose``'s ``outcome``: its action, or on an error (logged
        here, on the loop's thread: Python 3.11 may corrupt its parser state when two
        threads format tracebacks) the first legal action, marked as a :class:`Fallback`
        so the referee counts it."""
        action, _seconds, error = outcome
        if error is not None:
            log.error(
                "%s: choose raised on %s seq %d; sent the first legal action (counted as a "
                "fallback)",
                self.name,
                turn.match_id,
                turn.seq,
                exc_info=error,
            )
            return Fallback(first_legal(turn), CHOOSE_RAISED)
        if isinstance(action, Fallback):
            return action
        if isinstance(action, str) and len(action) <= MAX_ACTION_CHARS:
            return action
        if isinstance(action, str):
            log.error(
                "%s: choose returned an action of %d characters (at most %d); sent the "
                "first legal action (counted as a fallback)",
                self.name,
                len(action),
                MAX_ACTION_CHARS,
            )
        else:
            log.error(
                "%s: choose returned %r, not a str; sent the first legal action (counted "
                "as a fallback)",
                self.name,
                action,
            )
        return Fallback(first_legal(turn), CHOOSE_BAD_RETURN)


class _Placement:
    """Whether the next ``choose`` runs on the stream's thread (:attr:`Bot.choose_inline`)."""

    __slots__ = ("declared", "fast", "slow")

    def __init__(self, declared: bool | None) -> None:
        self.declared = declared
        self.fast = 0  # decisions timed under Bot.inline_limit_ms
        self.slow = False  # one took longer: the pool from now on

    def inline(self) -> bool:
        if self.declared is not None:
            return self.declared
        return not self.slow and self.fast >= PROBE_DECISIONS

    def timed(self, bot: Bot, seconds: float) -> None:
        if self.declared is not None or self.slow:
            return
        if seconds * 1000.0 > bot.inline_limit_ms:
            self.slow = True
            log.info(
                "%s: choose took %.1f ms (over %.0f ms): it runs in the thread pool from now "
                "on (set choose_inline = False to start there)",
                bot.name,
                seconds * 1000.0,
                bot.inline_limit_ms,
            )
        else:
            self.fast += 1


async def _sleep_unless(stop: StopFlag | None, seconds: float) -> None:
    end = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < end:
        if stop is not None and stop.is_set():
            return
        await asyncio.sleep(min(0.1, max(0.0, end - asyncio.get_running_loop().time())))


async def _cancel_when(stop: StopFlag, call: Any) -> None:
    while not stop.is_set():
        await asyncio.sleep(0.1)
    call.cancel()


# --- command line -----------------------------------------------------------------------
def build_parser(bot: Bot) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=f"run the {bot.name} bot against a referee")
    parser.add_argument(
        "--server",
        default=os.environ.get("ARENA_SERVER", "127.0.0.1:50051"),
        help="referee HOST:PORT, or several comma-separated (default: $ARENA_SERVER or "
        "127.0.0.1:50051)",
    )
    parser.add_argument(
        "--token",
        help="the bot's token; better $ARENA_TOKEN, since a flag shows in `ps` to every "
        "user of the host (warned)",
    )
    parser.add_argument("--tls-ca", help="PEM CA certificate: connect with TLS")
    parser.add_argument(
        "--keepalive-ms",
        type=int,
        default=bot.keepalive_ms,
        help="ping the referee this often (default: $ARENA_KEEPALIVE_MS or "
        f"{KEEPALIVE_TIME_MS}; at least {MIN_KEEPALIVE_TIME_MS})",
    )
    parser.add_argument(
        "--keepalive-timeout-ms",
        type=int,
        default=bot.keepalive_timeout_ms,
        help="drop the connection (and reconnect, to the next referee) when a ping's ack "
        f"takes longer (default: $ARENA_KEEPALIVE_TIMEOUT_MS or {KEEPALIVE_TIMEOUT_MS})",
    )
    parser.add_argument("--name", help="name shown in logs (default: the bot's)")
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument(
        "--exit-after-season",
        metavar="SEASON",
        help="exit (status 0) when this season ends ('*': any season the bot is in)",
    )
    return parser


def main(bot: Bot, argv: Sequence[str] | None = None) -> None:
    """Command-line entry point: ``--server HOST:PORT --token T [--tls-ca CA] [--name N]``."""
    args = build_parser(bot).parse_args(argv)
    logging.basicConfig(
        level=str(args.log_level).upper(), format="%(asctime)s %(levelname)s %(message)s"
    )
    if args.token:
        print(
            "warning: --token on the command line shows in `ps` to every user of this host: "
            "set ARENA_TOKEN instead",
            file=sys.stderr,
        )
    token = args.token or os.environ.get("ARENA_TOKEN")
    if not token:
        raise SystemExit("no token: set ARENA_TOKEN (arena bot register NAME printed it)")
    try:
        check_keepalive(args.keepalive_ms, args.keepalive_timeout_ms)
    except ValueError as exc:
        raise SystemExit(f"--keepalive-ms/--keepalive-timeout-ms: {exc}") from None
    bot.keepalive_ms = args.keepalive_ms
    bot.keepalive_timeout_ms = args.keepalive_timeout_ms
    if args.name:
        bot.name = args.name
    if args.exit_after_season:
        bot.exit_after_season = args.exit_after_season
    try:
        bot.run(args.server, token, tls_ca=args.tls_ca)
    except BotRefused as exc:
        raise SystemExit(f"{bot.name}: the referee refused this bot: {exc}") from None
    except KeyboardInterrupt:
        pass
