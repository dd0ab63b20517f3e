"""The referee-wide part of the relay (docs/gateway.md): the sessions per bot, the
turns waiting for a free slot, who holds which open decision, the host links
(:class:`HostLink`, a match host's internal stream), the drain;
with the relay's limits and timings."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis.asyncio
from redis.exceptions import RedisError

from arena.v1 import internal_pb2
from referee import keys, lua, metrics_store
from referee.aio import bounded
from referee.bots import STREAM_STALE_MS
from referee.defaults import LINK_WRITE_TIMEOUT_S
from referee.gateway.errors import (
    Draining,
    Flooding,
)
from referee.gateway.lag import LoopLag
from referee.limits import Limits
from referee.match.messages import now_ms

if TYPE_CHECKING:
    from referee.gateway.session import BotSession


log = logging.getLogger(__name__)

HELLO_TIMEOUT_S = 10.0
HOUSEKEEPING_S = 5.0
"""How often a session refreshes its ``bot_streams`` entry and checks that its bot was not
revoked."""
WRITE_TIMEOUT_S = 5.0
"""Longest wait for one write to a bot's stream (HTTP/2 flow control: a bot that does not
read would hold it forever); past it the stream ends."""
TIMEOUT_SLACK_MS = 2.0
"""The TIMEOUT reply goes this long after the limit: an answer stamped before it is judged
by its stamps (an answer exactly at the limit is in time)."""
LAG_RECHECK_S = 0.001
"""A TIMEOUT due while the loop may still hold an answer that came in time (lag.py) is
checked again this much later (a pass or more of the loop): the answer is read first."""
ANSWERED_MEMORY = 4096
"""Answered decisions a session remembers to tell a repeat answer DUPLICATE."""
SWEEP_S = 10.0
"""How often a referee deletes the stream records of dead referees (for every bot)."""
JUNK_PER_S = 20.0
JUNK_BURST = 100
"""Messages of one stream that answer nothing (pings, actions for no request it holds):
``JUNK_BURST`` at once, then ``JUNK_PER_S`` a second; past that the stream ends
(``Flooding``). Every answer to a request the stream holds is free."""
FLOODS_METRIC = "arena_bot_floods_total"
FLOOD_COOLDOWN_S = 10.0
"""A bot whose stream was ended for flooding opens no stream on this referee this long."""

Kind = internal_pb2.Reply
Key = tuple[str, int, int]
if TYPE_CHECKING:
    from typing import TypeAlias

    ReplyKind: TypeAlias = internal_pb2.Reply.Kind.ValueType


class ReplySink(Protocol):
    """What the :class:`Hub` needs of whoever sent it a turn: somewhere to put the turn's
    one reply. A :class:`HostLink` (a host's internal stream, the reply goes out batched) or
    a match host running in this process (``workers.link.LocalLink``: the reply resolves
    the host's future directly, docs/workers.md "Co-hosted matches")."""

    @property
    def closed(self) -> bool:
        """True once replies go nowhere (the host went away)."""
        ...

    def reply(
        self,
        key: Key,
        kind: ReplyKind,
        action: str = "",
        sent_ms: float = 0.0,
        received: float = 0.0,
        fallback: str = "",
        cpu_ms: float | None = None,
    ) -> None:
        """The one reply to turn ``key``; never raises, never blocks (``fallback``: the
        bot's ``Action.fallback``; ``cpu_ms``: what a metered bot's sandbox used while it
        held the turn, :class:`TurnMeter`)."""
        ...


class TurnMeter(Protocol):
    """Told when each turn of a bot is written to it and when it is closed (answered, timed
    out, handed back): the one place the referee knows a bot has a request outstanding.
    ``referee.hosting.meter.CgroupMeter`` thaws a hosted bot's sandbox for its turns,
    freezes it between them and reads the CPU time it used (docs/HOSTING.md)."""

    def held(self, bot: str) -> int | None:
        """A turn of ``bot`` is about to be written: its sandbox's CPU counter (ns), or
        None when this bot is not metered."""
        ...

    def released(self, bot: str, cpu_at_send: int | None) -> float | None:
        """A turn :meth:`held` returned ``cpu_at_send`` for was closed: the CPU ms used
        since (None when not metered)."""
        ...

    def connected(self, bot: str) -> None:
        """A stream of ``bot`` opened (its Welcome is queued): idle from now on until its
        first turn is held."""
        ...


@dataclass(eq=False)
class Request:
    """One turn a host sent for a bot: waiting here for a slot, or held by a session."""

    key: Key
    bot: str
    link: ReplySink | None
    payload: bytes
    limit_ms: float
    expires_ms: float
    first_sent_ms: float
    sent_ms: float = 0.0
    session: BotSession | None = None
    timer: asyncio.TimerHandle | None = None
    metered: bool = False  # TurnMeter.held was called for it (released once, when closed)
    cpu_at: int | None = None
    cpu_ms: float | None = None


@dataclass
class HubConfig:
    referee_id: str
    link_address: str = ""  # where hosts reach this referee's internal port (the directory)
    max_streams_per_bot: int = 4
    max_concurrency: int = 64
    keepalive_time_ms: int = 30_000
    housekeeping_s: float = HOUSEKEEPING_S
    max_message_bytes: int = 64 * 1024
    hello_timeout_s: float = HELLO_TIMEOUT_S
    write_timeout_s: float = WRITE_TIMEOUT_S
    outbox_bytes: int = Limits.outbox_bytes  # queued for one stream, unwritten (0 = no cap)
    outbox_messages: int = Limits.outbox_messages
    junk_per_s: float = JUNK_PER_S  # 0 = no limit
    junk_burst: int = JUNK_BURST
    flood_cooldown_s: float = FLOOD_COOLDOWN_S


class Hub:
    """Referee-wide relay state: sessions per bot, waiting turns, open decisions, links."""

    def __init__(self, client: redis.asyncio.Redis, config: HubConfig) -> None:
        self.redis = client
        self.config = config
        self.draining = False
        self.sessions: dict[str, list[BotSession]] = {}
        self.waiting: dict[str, deque[Request]] = {}
        self.owner: dict[Key, str] = {}  # open (held) request -> its bot
        self.links: set[HostLink] = set()
        self._closing: set[asyncio.Task[None]] = set()
        self.lag = LoopLag()  # the loop's own delay, never charged to a bot (lag.py)
        self.flooded: dict[str, float] = {}  # bot -> monotonic time its cooldown ends
        self.meter: TurnMeter | None = None  # set where hosted bots run (referee.hosting)

    def all_sessions(self) -> list[BotSession]:
        return [s for group in self.sessions.values() for s in group]

    # --- turns from hosts --------------------------------------------------------------
    def submit(self, link: ReplySink, turn: Any) -> None:
        """A ``Turn`` of a host's internal stream."""
        self.submit_turn(
            link,
            turn.bot,
            (turn.match_id, int(turn.attempt), int(turn.seq)),
            bytes(turn.request),
            float(turn.limit_ms),
            float(turn.expires_ms),
            float(turn.first_sent_ms),
        )

    def submit_turn(
        self,
        link: ReplySink,
        bot: str,
        key: Key,
        payload: bytes,
        limit_ms: float,
        expires_ms: float,
        first_sent_ms: float = 0.0,
    ) -> None:
        """A turn for ``bot``; ``link`` gets its one reply (maybe before this returns)."""
        self.lag.start()
        if self.draining:
            link.reply(key, Kind.DRAINED)
            return
        if not self.sessions.get(bot):
            link.reply(key, Kind.NOT_HERE)
            return
        request = Request(
            key=key,
            bot=bot,
            link=link,
            payload=payload,
            limit_ms=limit_ms,
            expires_ms=expires_ms,
            first_sent_ms=first_sent_ms,
        )
        queue = self.waiting.setdefault(bot, deque())
        queue.append(request)
        self.dispatch(bot)
        if request.session is None:  # no free slot: it waits, at most until expires_ms
            delay = max(0.0, (request.expires_ms - now_ms()) / 1000.0)
            request.timer = asyncio.get_running_loop().call_later(delay, self._expire, request)

    def _expire(self, request: Request) -> None:
        """A waiting turn's ``expires_ms`` passed: nothing came free for it."""
        queue = self.waiting.get(request.bot)
        if queue is None or request.session is not None:
            return
        with contextlib.suppress(ValueError):
            queue.remove(request)
            self._reply(request, Kind.EXPIRED)

    def dispatch(self, bot: str) -> None:
        """Hand waiting turns of ``bot`` to its sessions with free slots, oldest first."""
        queue = self.waiting.get(bot)
        if not queue:
            return
        sessions = self.sessions.get(bot, [])
        while queue:
            free = [s for s in sessions if s.has_slot()]
            if not free:
                return
            session = min(free, key=lambda s: len(s.open))
            request = queue.popleft()
            if request.timer is not None:
                request.timer.cancel()
                request.timer = None
            session.hold(request)

    def notify(self, notify: Any) -> None:
        """A ``Notify`` of a host's internal stream (:meth:`notify_bot`)."""
        self.notify_bot(notify.bot, notify.match_id, notify.message, notify.accepted)

    def notify_bot(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        """Best effort: write a notification to a stream of its bot, if one is here. A plain
        accepted ActionResult (``accepted``) is dropped, unread, when that stream's Hello
        declined those (``skip_accepted_results``, docs/PROTOCOL.md section 4)."""
        sessions = self.sessions.get(bot)
        if not sessions:
            return
        target = sessions[0]
        if len(sessions) > 1:
            for session in sessions:  # the stream that holds a turn of this match, if any
                if any(key[0] == match_id for key in session.open):
                    target = session
                    break
        if accepted and target.skip_accepted:
            return
        target.enqueue(payload)

    def _reply(
        self,
        request: Request,
        kind: ReplyKind,
        action: str = "",
        received: float = 0.0,
        fallback: str = "",
    ) -> None:
        if request.link is not None:
            request.link.reply(
                request.key, kind, action, request.sent_ms, received, fallback, request.cpu_ms
            )

    def forget_link(self, link: ReplySink) -> None:
        """A host went away: drop its waiting turns; held ones stay until answered or timed
        out (the bot is thinking), their answers go nowhere."""
        if isinstance(link, HostLink):
            self.links.discard(link)
        for queue in self.waiting.values():
            for request in [r for r in queue if r.link is link]:
                queue.remove(request)
                if request.timer is not None:
                    request.timer.cancel()
        for session in self.all_sessions():
            for request in session.open.values():
                if request.link is link:
                    request.link = None

    # --- sessions ------------------------------------------------------------------------
    def add_session(self, session: BotSession) -> None:
        self.lag.start()
        self.sessions.setdefault(session.bot, []).append(session)

    def remove_session(self, session: BotSession) -> None:
        group = self.sessions.get(session.bot, [])
        if session in group:
            group.remove(session)
        if group:
            self.dispatch(session.bot)
            return
        self.sessions.pop(session.bot, None)
        queue = self.waiting.pop(session.bot, deque())
        for request in queue:  # nobody here can send them: the host asks the directory
            if request.timer is not None:
                request.timer.cancel()
            self._reply(request, Kind.DRAINED if self.draining else Kind.BOT_LEFT)

    # --- directory -------------------------------------------------------------------
    async def sweep_forever(self) -> None:
        """Purge ``bot_streams`` entries nobody refreshed (their referee died)."""
        while True:
            await asyncio.sleep(SWEEP_S)
            try:
                await self.sweep()
            except RedisError as exc:
                log.warning("sweeping stale stream records failed: %s", exc)

    async def sweep(self) -> int:
        purged = 0
        names: set[str] = await self.redis.smembers(keys.BOTS)  # type: ignore[assignment]
        for name in names:
            purged += int(
                await lua.PURGE_STALE.run(
                    self.redis, [keys.bot_streams(name)], [now_ms(), STREAM_STALE_MS]
                )
            )
        if purged:
            log.info("deleted %d stream record(s) of referees that stopped refreshing", purged)
        return purged

    async def register_stream(self, bot: str, stream_id: str, record: dict[str, Any]) -> int:
        """Record a stream in ``keys.bot_streams``; -1 when the bot is at its limit."""
        result = await lua.REGISTER_STREAM.run(
            self.redis,
            [keys.bot_streams(bot)],
            [
                now_ms(),
                STREAM_STALE_MS,
                self.config.max_streams_per_bot,
                stream_id,
                json.dumps(record),
            ],
        )
        return int(result)

    async def flood_ended(self, bot: str, error: Flooding) -> None:
        """A stream of ``bot`` was ended for flooding: refuse its new streams here for
        ``flood_cooldown_s`` and count it (``arena_bot_floods_total{bot}``)."""
        self.flooded[bot] = time.monotonic() + self.config.flood_cooldown_s
        log.warning("ended a stream of %s for flooding: %s", bot, error)
        with contextlib.suppress(RedisError):
            field = f"{FLOODS_METRIC}|{metrics_store.label_text({'bot': bot})}"
            await self.redis.hincrbyfloat(keys.METRICS_COUNTERS, field, 1)

    def close_later(self, session: BotSession) -> None:
        """Close a session in its own task (the handler task may have been cancelled)."""
        task = asyncio.get_running_loop().create_task(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def drain(self, grace_s: float) -> None:
        """Take no new turns, tell every bot, let held requests be answered, then hand the
        rest back to their hosts (``DRAINED``) and end the streams."""
        self.draining = True
        for bot, queue in list(self.waiting.items()):
            while queue:
                request = queue.popleft()
                if request.timer is not None:
                    request.timer.cancel()
                self._reply(request, Kind.DRAINED)
            self.waiting.pop(bot, None)
        sessions = self.all_sessions()
        for session in sessions:
            session.begin_drain()
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(s.open for s in self.all_sessions()):
            await asyncio.sleep(0.05)
        for session in self.all_sessions():
            session.give_back(Kind.DRAINED)
            session.request_stop(
                Draining(
                    "the referee is shutting down: connect again (to it or another referee); "
                    "the requests you held will be sent to you again"
                )
            )
        await self.wait_closed(timeout=self.config.write_timeout_s + 5.0)
        for link in list(self.links):
            await link.flush(timeout=2.0)
        self.lag.stop()

    async def wait_closed(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while (self.sessions or self._closing) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)


class HostLink:
    """One ``MatchRelay.Link`` stream: a match host's turns in, replies out (batched)."""

    def __init__(self, hub: Hub, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        self.hub = hub
        self.context = context
        self._replies: list[Any] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self.closed = False

    def reply(
        self,
        key: Key,
        kind: ReplyKind,
        action: str = "",
        sent_ms: float = 0.0,
        received: float = 0.0,
        fallback: str = "",
        cpu_ms: float | None = None,
    ) -> None:
        if self.closed:
            return
        self._replies.append(
            internal_pb2.Reply(
                match_id=key[0],
                attempt=key[1],
                seq=key[2],
                kind=kind,
                action=action,
                sent_ms=sent_ms,
                received_ms=received,
                fallback=fallback,
                cpu_ms=cpu_ms,
            )
        )
        self._idle.clear()
        self._wake.set()

    async def flush(self, timeout: float) -> None:
        """Wait (at most ``timeout``) until every queued reply was written."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), timeout)

    async def write_loop(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._replies:
                batch, self._replies = self._replies, []
                message = internal_pb2.RelayBatch(replies=batch)
                try:
                    await bounded(self.context.write(message), LINK_WRITE_TIMEOUT_S)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    log.warning("ending a host link: a write failed or stalled (%r)", exc)
                    self.closed = True
                    self._idle.set()
                    return
            self._idle.set()
