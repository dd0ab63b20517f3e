"""The relay: bot streams on one side, match hosts' internal streams on the other
(docs/gateway.md, docs/workers.md "The decision path").

For each authenticated ``BotGateway.Play`` stream a :class:`BotSession`

* waits for ``Hello`` (protocol version, concurrency), records the stream in the
  bot-streams directory (``keys.bot_streams``, with this referee's internal address) and
  answers ``Welcome``;
* writes what the hosts send for its bot: turn requests (at most ``concurrency`` held at
  once; the others wait here, uncharged) and notifications, all as the bytes the host
  encoded, never decoded here. The send stamp is taken just before a turn's write; every
  write is bounded in time (an aio write waits on HTTP/2 flow control): a bot that does not
  read loses its stream;
* for each ``Action``: if it answers a request this stream holds, stamps the receive time
  (less what this referee's own loop may have held it: :mod:`referee.gateway.lag`) and
  returns ``ANSWER`` with both stamps to the host that asked; a second answer is told
  DUPLICATE, an answer to nothing open STALE (both in-stream); an answer to another bot's
  decision ends the stream with PERMISSION_DENIED;
* counts the messages that answer nothing (pings, actions for nothing it holds) against a
  token bucket (``JUNK_BURST``, ``JUNK_PER_S``): a stream past it ends RESOURCE_EXHAUSTED
  and its bot opens no stream here for ``FLOOD_COOLDOWN_S`` (docs/gateway.md);
* when the same bot opens a new stream on this referee, the bot's other streams here hand
  the requests they hold back to their hosts (``BOT_LEFT``, the clock running: the hosts
  send them to the newest stream) and take no new turn until the bot speaks on them (a
  bot reconnects because its old stream is dead, maybe without the referee having noticed:
  a SIGKILLed bot's transport can die silently); dead transports themselves are found by
  the server's keepalive and by housekeeping's check of the call.

Each ``MatchRelay.Link`` stream (one per match-host process) is a :class:`HostLink`. Every
turn gets exactly one :class:`~arena.v1.internal_pb2.Reply`: ``ANSWER``, ``TIMEOUT`` (held
past its limit), ``EXPIRED`` (never sent: no free slot before ``expires_ms``),
``NOT_HERE`` (no stream of the bot on this referee), ``BOT_LEFT`` (its stream ended; the
host re-routes it, the clock running from ``sent_ms``) or ``DRAINED`` (this referee is
shutting down; the host re-sends it to the bot's new referee with a new clock).

:class:`Hub` is the referee-wide part: the sessions per bot, the waiting turns, who holds
which open decision, the links, the drain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis.asyncio
from redis.exceptions import RedisError

from arena.v1 import bot_pb2, internal_pb2
from referee import cluster, keys, lua, metrics_store
from referee.aio import bounded
from referee.bots import STREAM_STALE_MS
from referee.defaults import LINK_WRITE_TIMEOUT_S
from referee.errors import ArenaError, AuthError
from referee.gateway import status
from referee.gateway.auth import CURRENT_BOT
from referee.gateway.errors import (
    ActingForAnotherBot,
    Draining,
    Flooding,
    MalformedMessage,
    OutboxFull,
    ProtocolError,
    SlowReader,
    TooManyStreams,
)
from referee.gateway.lag import LoopLag
from referee.limits import Limits
from referee.match.messages import now_ms

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
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
MAX_ACTION_CHARS = 200
MAX_BATCH_TURNS = 32
MAX_BATCH_BYTES = 32 * 1024
"""A ``TurnBatch`` holds at most this many turns and, unless it holds one, this many bytes
of them (the SDK reads messages of up to 64 KiB; docs/PROTOCOL.md section 4)."""
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


@dataclass
class Malformed:
    """What the safe deserializer returns for bytes that are not a ``BotMessage``."""

    error: str


def parse_bot_message(data: bytes) -> Any:
    """Request deserializer that never raises (a bad message becomes INVALID_ARGUMENT)."""
    try:
        return bot_pb2.BotMessage.FromString(data)
    except Exception as exc:  # protobuf raises DecodeError and friends
        return Malformed(f"the message is not an arena.v1.BotMessage: {exc}")


def serialize_to_bot(message: Any) -> bytes:
    """Response serializer: bytes a host encoded go out as they are; proto messages of the
    referee's own (Welcome, Pong, results) are encoded here."""
    if isinstance(message, bytes):
        return message
    data: bytes = message.SerializeToString()
    return data


def parse_host_batch(data: bytes) -> Any:
    try:
        return internal_pb2.HostBatch.FromString(data)
    except Exception as exc:
        return Malformed(f"the message is not an arena.v1.HostBatch: {exc}")


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


class BotSession:
    """One ``Play`` stream of one bot."""

    def __init__(
        self, hub: Hub, bot: str, context: grpc.aio.ServicerContext[Any, Any], peer: str
    ) -> None:
        self.hub = hub
        self.bot = bot
        self.context = context
        self.peer = peer
        self.session_id = uuid.uuid4().hex[:12]
        self.stream_id = f"{hub.config.referee_id}:{self.session_id}"
        self.redis = hub.redis
        self.concurrency = 1
        self.skip_accepted = False  # Hello.skip_accepted_results
        self.batches = False  # Hello.batches: turns waiting together go in one TurnBatch
        self.open: dict[Key, Request] = {}
        self._answered: OrderedDict[Key, None] = OrderedDict()
        self._outbox: deque[Any] = deque()  # bytes, proto messages, or a Request to send
        self._outbox_bytes = 0  # their sizes (_size_of), bounded by outbox_bytes
        self._wake = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None
        self._closing_writer = False
        self._keeper: asyncio.Task[None] | None = None
        self._stopping = False  # takes no more turns
        self._suspect = False  # handed over to a newer stream: no turns until the bot speaks
        self._stop_reason: ArenaError | None = None
        self._stop_event = asyncio.Event()
        self._registered = False
        self._closed = False
        self._record: dict[str, Any] = {}
        self._junk = float(hub.config.junk_burst)  # token bucket of messages that answer nothing
        self._junk_at = time.monotonic()

    # --- lifecycle -------------------------------------------------------------------
    async def run(self, request_iterator: Any) -> None:
        """Serve the stream until the bot closes it; raise an ArenaError to end it."""
        stream = request_iterator.__aiter__()
        try:
            first = await asyncio.wait_for(stream.__anext__(), self.hub.config.hello_timeout_s)
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise ProtocolError(
                f"no Hello within {self.hub.config.hello_timeout_s:g} s: the first message "
                "must be Hello"
            ) from None
        hello = self._expect_hello(first)
        await self._start(hello)
        reader = asyncio.ensure_future(self._read_loop(stream))
        stopper = asyncio.ensure_future(self._stop_event.wait())
        try:
            await asyncio.wait({reader, stopper}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (reader, stopper):
                if not task.done():
                    task.cancel()
        if reader.done() and not reader.cancelled():
            reader.result()  # re-raises what ended the stream (a GatewayError, ...)
        if self._stop_reason is not None:
            raise self._stop_reason

    def _expect_hello(self, message: Any) -> Any:
        if isinstance(message, Malformed):
            raise MalformedMessage(message.error)
        kind = message.WhichOneof("msg")
        if kind != "hello":
            raise ProtocolError(
                f"the first message must be Hello, got {kind or 'an empty BotMessage'}"
            )
        hello = message.hello
        if hello.protocol_version != PROTOCOL_VERSION:
            raise ProtocolError(
                f"protocol_version {hello.protocol_version} is not spoken here: this referee "
                f"speaks protocol_version {PROTOCOL_VERSION}"
            )
        return hello

    async def _start(self, hello: Any) -> None:
        if self.hub.draining:
            raise Draining("the referee is shutting down: connect to another referee")
        asked = int(hello.max_concurrent_matches) or 1
        self.concurrency = max(1, min(asked, self.hub.config.max_concurrency))
        self.skip_accepted = bool(hello.skip_accepted_results)
        self.batches = bool(hello.batches)
        self._record = {
            "referee": self.hub.config.referee_id,
            "link": self.hub.config.link_address,
            "since_ms": now_ms(),
            "seen_ms": now_ms(),
            "concurrency": self.concurrency,
            "peer": self.peer,
            "bot_version": hello.bot_version[:100],
            "games": list(hello.games)[:10],
            "skip_accepted_results": self.skip_accepted,
            "batches": self.batches,
        }
        self._writer = asyncio.ensure_future(self._write_loop())
        welcome = bot_pb2.Welcome(
            bot=self.bot,
            protocol_version=PROTOCOL_VERSION,
            session_id=self.session_id,
            max_concurrent_matches=self.concurrency,
            keepalive_time_ms=self.hub.config.keepalive_time_ms,
            referee_id=self.hub.config.referee_id,
            batches=self.batches,
        )
        count = await self.hub.register_stream(self.bot, self.stream_id, self._record)
        if count < 0:
            limit = self.hub.config.max_streams_per_bot
            raise TooManyStreams(
                f"bot {self.bot!r} already has {limit} open stream(s), the most this platform "
                "allows (--max-streams-per-bot): close one, or raise max_concurrent_matches "
                "on one stream instead of opening more",
                limit=limit,
            )
        self._registered = True
        # The games of the latest Hello, for season creation (store.create_season refuses a
        # bot whose declared games leave out the season's game); [] means every game.
        with contextlib.suppress(RedisError):
            await self.redis.hset(keys.bot(self.bot), "games", json.dumps(self._record["games"]))
        self.enqueue(bot_pb2.RefereeMessage(welcome=welcome))
        for other in list(self.hub.sessions.get(self.bot, [])):
            if other.open:
                other.hand_over(self)
        self.hub.add_session(self)
        if self.hub.meter is not None:
            self.hub.meter.connected(self.bot)
        log.info(
            "bot %s connected (session %s, concurrency %d, %s%s)",
            self.bot,
            self.session_id,
            self.concurrency,
            hello.bot_version,
            ", no accepted results" if self.skip_accepted else "",
        )
        self._keeper = asyncio.ensure_future(self._housekeeping())
        self.hub.dispatch(self.bot)

    def has_slot(self) -> bool:
        return not self._stopping and not self._suspect and len(self.open) < self.concurrency

    def hand_over(self, successor: BotSession) -> None:
        """The bot opened ``successor``: hand the requests this stream holds back to their
        hosts (``BOT_LEFT`` with their send stamps: the clock keeps running) and take no new
        turn until the bot sends a message here (a dead stream never does)."""
        log.info(
            "bot %s opened session %s: session %s hands its %d request(s) over",
            self.bot,
            successor.session_id,
            self.session_id,
            len(self.open),
        )
        self._suspect = True
        self.give_back(Kind.BOT_LEFT)

    def _alive(self) -> None:
        """The bot spoke on this stream: it is alive, it may take turns again."""
        if self._suspect:
            self._suspect = False
            self.hub.dispatch(self.bot)

    def request_stop(self, reason: ArenaError | None) -> None:
        """End the stream (with ``reason``'s status, or OK when None)."""
        self._stopping = True
        if self._stop_reason is None:
            self._stop_reason = reason
        self._stop_event.set()

    def begin_drain(self) -> None:
        self._stopping = True
        self.enqueue(
            bot_pb2.RefereeMessage(
                notice=bot_pb2.Notice(
                    code="draining",
                    message="the referee is shutting down: answer the requests you hold; "
                    "reconnect when this stream ends",
                )
            )
        )

    async def close(self) -> None:
        """Hand back what the bot holds, forget the stream. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        try:
            self.give_back(Kind.DRAINED if self.hub.draining else Kind.BOT_LEFT)
            if self._keeper is not None and not self._keeper.done():
                self._keeper.cancel()
                with contextlib.suppress(BaseException):
                    await self._keeper
            await self._stop_writer()
            if self._registered:
                with contextlib.suppress(RedisError):
                    await self.redis.hdel(keys.bot_streams(self.bot), self.stream_id)
        finally:
            self.hub.remove_session(self)
            log.info("bot %s disconnected (session %s)", self.bot, self.session_id)

    async def _stop_writer(self) -> None:
        """Let the writer finish the write in flight (bounded): a write cancelled midway
        would leave an operation open, and the stream's final status could not be sent."""
        writer = self._writer
        if writer is None or writer.done():
            return
        self._outbox.clear()
        self._outbox_bytes = 0
        self._closing_writer = True
        self._wake.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(writer), self.hub.config.write_timeout_s)
        if not writer.done():
            writer.cancel()
            with contextlib.suppress(BaseException):
                await writer

    def give_back(self, kind: ReplyKind) -> None:
        """Reply ``kind`` for every request this stream holds (the host sends it again)."""
        for key in list(self.open):
            request = self._close_request(key)
            if request is not None:
                self.hub._reply(request, kind)

    # --- turns ----------------------------------------------------------------------
    def hold(self, request: Request) -> None:
        """Take ``request`` into a free slot; the writer stamps and sends it."""
        request.session = self
        self.open[request.key] = request
        self.hub.owner[request.key] = self.bot
        self.enqueue(request)

    def _close_request(self, key: Key) -> Request | None:
        """Forget a held request (answered, timed out, handed back); frees its slot."""
        request = self.open.pop(key, None)
        if request is None:
            return None
        self.hub.owner.pop(key, None)
        if request.timer is not None:
            request.timer.cancel()
            request.timer = None
        meter = self.hub.meter
        if request.metered and meter is not None:
            request.metered = False
            request.cpu_ms = meter.released(self.bot, request.cpu_at)
        return request

    def _time_out(self, request: Request) -> None:
        """``request``'s limit passed: ``TIMEOUT``, if this stream still holds that very
        request. A host whose link broke sends its open turns again (same key, the clock
        restarted, docs/workers.md): a copy held again here must not time out on the first
        copy's clock."""
        if self.open.get(request.key) is not request:
            return
        deadline = request.sent_ms + request.limit_ms + TIMEOUT_SLACK_MS
        behind_ms = deadline - (now_ms() - self.hub.lag.credit_ms())
        if behind_ms > 0:  # the loop was behind: an answer in time may still wait to be read
            request.timer = asyncio.get_running_loop().call_later(
                LAG_RECHECK_S, self._time_out, request
            )
            return
        self._close_request(request.key)
        self.hub._reply(request, Kind.TIMEOUT)
        self.hub.dispatch(self.bot)

    # --- writing to the bot ----------------------------------------------------------
    async def send_notice(self, message: Any) -> None:
        """Queue a ``RefereeMessage(notice=...)`` between the other messages
        (referee.gateway.notices); it takes no concurrency slot."""
        self.enqueue(message)

    def enqueue(self, item: Any) -> None:
        """Queue ``item`` for the writer. A bot that makes the referee write faster than it
        reads (its window opened just enough never to stall a write) would grow the queue
        without end: past ``outbox_bytes`` or ``outbox_messages`` its stream ends with
        RESOURCE_EXHAUSTED, like a reader that stalls, and what it holds goes back to the
        hosts (the clock running)."""
        if self._stopping and self._stop_reason is not None:
            return  # ending: nothing more will be written
        size = _size_of(item)
        config = self.hub.config
        over_bytes = config.outbox_bytes and self._outbox_bytes + size > config.outbox_bytes
        over_count = config.outbox_messages and len(self._outbox) >= config.outbox_messages
        if over_bytes or over_count:
            error = OutboxFull(
                f"{len(self._outbox)} message(s), {self._outbox_bytes} bytes, wait to be "
                f"written to bot {self.bot!r}: the most one stream may have queued is "
                f"{config.outbox_messages or 'any number of'} messages and "
                f"{config.outbox_bytes or 'any number of'} bytes. Read every message the "
                "referee sends as it comes, and send pings and actions no faster than you "
                "read the answers"
            )
            log.warning("ending the stream of %s: %s", self.bot, error)
            self.request_stop(error)
            return
        self._outbox.append(item)
        self._outbox_bytes += size
        self._wake.set()

    async def _write_loop(self) -> None:
        loop = asyncio.get_running_loop()
        timeout = self.hub.config.write_timeout_s
        while not self._closing_writer:
            await self._wake.wait()
            self._wake.clear()
            while self._outbox and not self._closing_writer:
                data = self._next_message(loop)
                if data is None:
                    continue
                try:
                    await bounded(self.context.write(data), timeout)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:
                    error = (
                        SlowReader(
                            f"a message to bot {self.bot!r} could not be written within "
                            f"{timeout:g} s: the bot does not read its stream (or its "
                            "flow-control window is too small); read every message the "
                            "referee sends, as it comes"
                        )
                        if isinstance(exc, TimeoutError)
                        else ProtocolError(f"writing to the stream failed: {exc!r}")
                    )
                    log.warning("ending the stream of %s: %s", self.bot, error)
                    self.request_stop(error)
                    return

    def _next_message(self, loop: asyncio.AbstractEventLoop) -> Any:
        """Take the next message to write from the outbox: the first item, or on a stream
        with ``batches`` the turn requests at the head of the outbox (within
        ``MAX_BATCH_TURNS`` and ``MAX_BATCH_BYTES``) in one ``TurnBatch``, one write for all
        (what repeats per message, grpc's work and the wake-ups of both ends, is paid once).
        A turn's clock starts here, just before its write. None: nothing to write (the turn
        was handed back or timed out while it waited)."""
        item = self._outbox.popleft()
        self._outbox_bytes -= _size_of(item)
        if not isinstance(item, Request):
            return item
        if self.open.get(item.key) is not item:
            return None
        self._start_clock(item, loop)
        if not self.batches or not self._outbox or not isinstance(self._outbox[0], Request):
            return item.payload
        payloads = [item.payload]
        size = len(item.payload)
        while self._outbox and len(payloads) < MAX_BATCH_TURNS:
            following = self._outbox[0]
            if not isinstance(following, Request):
                break
            if size + len(following.payload) > MAX_BATCH_BYTES:
                break
            self._outbox.popleft()
            self._outbox_bytes -= len(following.payload)
            if self.open.get(following.key) is not following:
                continue
            self._start_clock(following, loop)
            payloads.append(following.payload)
            size += len(following.payload)
        if len(payloads) == 1:
            return payloads[0]
        return turn_batch(payloads)

    def _start_clock(self, request: Request, loop: asyncio.AbstractEventLoop) -> None:
        """Stamp a turn's send time just before its write (a re-sent turn keeps its first
        send's stamp: the clock runs on) and arm its ``TIMEOUT`` reply,
        ``TIMEOUT_SLACK_MS`` after the limit counted from that stamp."""
        meter = self.hub.meter
        if meter is not None:  # before the stamp: thawing a frozen sandbox is not think time
            request.metered = True
            request.cpu_at = meter.held(self.bot)
        stamp = now_ms()
        request.sent_ms = request.first_sent_ms or stamp
        left_s = (request.sent_ms + request.limit_ms + TIMEOUT_SLACK_MS - stamp) / 1000.0
        request.timer = loop.call_later(max(0.0, left_s), self._time_out, request)

    # --- reading from the bot --------------------------------------------------------
    async def _read_loop(self, stream: Any) -> None:
        async for message in stream:
            self._alive()
            if isinstance(message, Malformed):
                raise MalformedMessage(message.error)
            kind = message.WhichOneof("msg")
            if kind == "action":
                await self._on_action(message.action)
            elif kind == "actions":
                if not self.batches:
                    raise ProtocolError(
                        "BotMessage.actions on a stream whose Hello did not ask for batches: "
                        "set Hello.batches, or send one Action a message"
                    )
                for action in message.actions.actions:
                    await self._on_action(action)
            elif kind == "ping":
                self._spend_junk("a Ping")
                self.enqueue(bot_pb2.RefereeMessage(pong=bot_pb2.Pong(nonce=message.ping.nonce)))
            elif kind == "hello":
                raise ProtocolError("Hello was already received: send it once, first")
            else:
                raise MalformedMessage("empty BotMessage: set one of hello, action or ping")

    def _spend_junk(self, what: str) -> None:
        """Count one message that answers nothing against this stream's bucket; past the
        limit the stream ends (``Flooding``): its junk must cost the loop bounded work,
        every other bot's clock waits behind it."""
        rate = self.hub.config.junk_per_s
        if rate <= 0:
            return
        now = time.monotonic()
        burst = float(self.hub.config.junk_burst)
        self._junk = min(burst, self._junk + (now - self._junk_at) * rate)
        self._junk_at = now
        if self._junk >= 1.0:
            self._junk -= 1.0
            return
        raise Flooding(
            f"bot {self.bot!r} sent more messages that answer nothing (this one: {what}) "
            f"than the limit of {burst:g} at once and {rate:g} a second (pings, actions for "
            "requests this stream does not hold); ping at most every few seconds and answer "
            "only the TurnRequests you hold. New streams of this bot are refused here for "
            f"{self.hub.config.flood_cooldown_s:g} s"
        )

    async def _on_action(self, action: Any) -> None:
        received_ms = now_ms()
        credit_ms = self.hub.lag.credit_ms()  # the loop's own delay (lag.py), not the bot's
        if not action.match_id:
            raise MalformedMessage("Action.match_id is empty: echo the TurnRequest's match_id")
        if len(action.action) > MAX_ACTION_CHARS:
            raise MalformedMessage(
                f"Action.action has {len(action.action)} characters; an action is at most "
                f"{MAX_ACTION_CHARS} (a card '7D', a run '8D+9D', 'pass')"
            )
        key: Key = (action.match_id, int(action.attempt), int(action.seq))
        request = self.open.get(key)
        if request is not None and request.sent_ms > 0:
            self._close_request(key)
            self._remember_answered(key)
            received = max(request.sent_ms, received_ms - credit_ms)
            self.hub._reply(request, Kind.ANSWER, action.action, received, action.fallback)
            self.hub.dispatch(self.bot)
            return
        self._spend_junk(f"an Action for match {action.match_id!r}")
        where = f"match {action.match_id} attempt {action.attempt} seq {action.seq}"
        if key in self._answered:
            self._tell(
                action,
                bot_pb2.ActionResult.DUPLICATE,
                "duplicate",
                f"{where} was already answered on this stream; the first answer counts",
            )
            return
        owner = self.hub.owner.get(key)
        if (owner is not None and owner != self.bot) or await self._not_a_player(action.match_id):
            raise ActingForAnotherBot(
                f"{where} is not a decision of bot {self.bot!r}: answer only the TurnRequests "
                "sent to you"
            )
        self._tell(
            action,
            bot_pb2.ActionResult.STALE,
            "stale",
            f"no open request {where} on this stream: it was answered or timed out, or "
            "belongs to an older attempt; answer only requests you hold, echoing "
            "match_id, attempt and seq",
        )

    async def _not_a_player(self, match_id: str) -> bool:
        try:
            spec = await self.redis.get(keys.match_spec(match_id))
        except RedisError:
            return False
        if spec is None:
            return False
        try:
            seats = json.loads(spec).get("seats", [])
        except (ValueError, AttributeError):
            return False
        return isinstance(seats, list) and self.bot not in seats

    def _tell(self, action: Any, code: Any, reason: str, text: str) -> None:
        result = bot_pb2.ActionResult(
            match_id=action.match_id,
            attempt=action.attempt,
            seq=action.seq,
            status=code,
            reason=reason,
            message=text,
        )
        self.enqueue(bot_pb2.RefereeMessage(result=result))

    def _remember_answered(self, key: Key) -> None:
        self._answered[key] = None
        while len(self._answered) > ANSWERED_MEMORY:
            self._answered.popitem(last=False)

    # --- housekeeping ------------------------------------------------------------------
    async def _housekeeping(self) -> None:
        while True:
            await asyncio.sleep(self.hub.config.housekeeping_s)
            if self.context.done():  # the call ended but the handler never heard (a race)
                log.warning("stream of %s (%s) is dead; closing it", self.bot, self.session_id)
                self.request_stop(None)
                return
            try:
                self._record["seen_ms"] = now_ms()
                pipe = self.redis.pipeline(transaction=False)
                pipe.hset(keys.bot_streams(self.bot), self.stream_id, json.dumps(self._record))
                pipe.hget(keys.bot(self.bot), "revoked")
                _, revoked = await pipe.execute()
            except RedisError as exc:
                log.warning("housekeeping of %s failed: %s", self.bot, exc)
                continue
            if revoked == "1":
                self.request_stop(AuthError(f"bot {self.bot!r} was revoked"))
                return


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld_key(message: Any, name: str) -> bytes:
    """The key of length-delimited field ``name`` of ``message`` (number, wire type 2)."""
    return _varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | 2)


_KEY_TURN = _ld_key(bot_pb2.RefereeMessage, "turn")
_KEY_TURNS = _ld_key(bot_pb2.RefereeMessage, "turns")
_KEY_BATCH_TURN = _ld_key(bot_pb2.TurnBatch, "turns")


def turn_batch(payloads: list[bytes]) -> bytes:
    """The serialized ``RefereeMessage(turns=TurnBatch(turns=[...]))`` of serialized
    ``RefereeMessage(turn=...)`` messages, in order, without parsing them: each one's key
    becomes the batch's (its length and bytes stay). ``ValueError`` if one of them does not
    start with the key of ``turn`` (what the hosts' encoder makes always does)."""
    inner = []
    for payload in payloads:
        if not payload.startswith(_KEY_TURN):
            raise ValueError("a payload to batch is not a serialized RefereeMessage(turn=...)")
        inner.append(_KEY_BATCH_TURN)
        inner.append(payload[len(_KEY_TURN) :])
    body = b"".join(inner)
    return _KEY_TURNS + _varint(len(body)) + body


def _size_of(item: Any) -> int:
    """Bytes an outbox item will take on the wire (its payload; framing aside)."""
    if isinstance(item, bytes):
        return len(item)
    if isinstance(item, Request):
        return len(item.payload)
    size: int = item.ByteSize()
    return size


class BotGatewayServicer:
    """``arena.v1.BotGateway``: one :class:`BotSession` per ``Play`` stream."""

    def __init__(self, hub: Hub) -> None:
        self.hub = hub

    async def Play(
        self, request_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        bot = CURRENT_BOT.get(None)
        if bot is None:  # the interceptor did not run: refuse rather than serve anonymously
            await status.abort(context, AuthError("missing authorization metadata"))
            return
        if self.hub.draining:
            await status.abort(
                context, Draining("the referee is shutting down: connect to another referee")
            )
            return
        until = self.hub.flooded.get(bot)
        if until is not None:
            left = until - time.monotonic()
            if left > 0:
                await status.abort(
                    context,
                    Flooding(
                        f"bot {bot!r} flooded a stream of this referee: its new streams are "
                        f"refused here for {left:.0f} s more; then ping at most every few "
                        "seconds and answer only the TurnRequests you hold"
                    ),
                )
                return
            del self.hub.flooded[bot]
        session = BotSession(self.hub, bot, context, context.peer())
        error: Exception | None = None
        try:
            await session.run(request_iterator)
        except asyncio.CancelledError:
            self.hub.close_later(session)  # the bot went away: clean up, re-raise
            raise
        except (ArenaError, RedisError) as exc:
            error = exc
        except Exception as exc:
            log.exception("stream of %s failed", bot)
            error = exc
        await asyncio.shield(session.close())
        if isinstance(error, Flooding):
            await self.hub.flood_ended(bot, error)
        elif error is not None:
            log.info("ended stream of %s: %s", bot, error)
        if error is not None:
            await status.abort(context, error)

    def handler(self) -> grpc.GenericRpcHandler:
        """The generic handler (with the never-raising request deserializer)."""
        return grpc.method_handlers_generic_handler(
            "arena.v1.BotGateway",
            {
                "Play": grpc.stream_stream_rpc_method_handler(
                    self.Play,
                    request_deserializer=parse_bot_message,
                    response_serializer=serialize_to_bot,
                )
            },
        )


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


class MatchRelayServicer:
    """``arena.v1.MatchRelay``: the internal stream of match hosts (cluster secret)."""

    def __init__(self, hub: Hub, secret: str) -> None:
        self.hub = hub
        self.secret = secret

    async def Link(
        self, request_iterator: Any, context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        metadata = {str(k): str(v) for k, v in (context.invocation_metadata() or ())}
        if not cluster.secret_matches(metadata, self.secret):
            await context.abort(
                grpc.StatusCode.UNAUTHENTICATED,
                "the internal stream needs 'authorization: Bearer <cluster secret>' "
                "(the same $ARENA_CLUSTER_SECRET or secret file on every referee and worker)",
            )
            return
        link = HostLink(self.hub, context)
        self.hub.links.add(link)
        writer = asyncio.ensure_future(link.write_loop())
        try:
            async for batch in request_iterator:
                if isinstance(batch, Malformed):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, batch.error)
                    return
                for item in batch.items:
                    which = item.WhichOneof("item")
                    if which == "turn":
                        self.hub.submit(link, item.turn)
                    elif which == "notify":
                        self.hub.notify(item.notify)
                if link.closed:
                    break
        finally:
            link.closed = True
            self.hub.forget_link(link)
            writer.cancel()
            with contextlib.suppress(BaseException):
                await writer

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            "arena.v1.MatchRelay",
            {
                "Link": grpc.stream_stream_rpc_method_handler(
                    self.Link,
                    request_deserializer=parse_host_batch,
                    response_serializer=internal_pb2.RelayBatch.SerializeToString,
                )
            },
        )
