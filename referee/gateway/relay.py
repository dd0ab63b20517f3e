"""The relay: one bot stream <-> the bot's Redis mailbox (DESIGN section 3, referee.mailbox).

For each authenticated ``BotGateway.Play`` stream a :class:`BotSession`

* waits for ``Hello`` (protocol version, concurrency) and answers ``Welcome``;
* pops the bot's inbox while it holds fewer turn requests than the bot declared, forwards
  notifications as their proto messages, and for a turn: drops it when ``expires_ms``
  has passed, else writes it to the stream and RPUSHes a ``SentStamp`` to its reply list;
* for each ``Action``: if it answers an open request of THIS stream it stamps the receive
  time and RPUSHes an ``AnswerMessage`` (``think_ms`` = receive - send); a second answer is
  told DUPLICATE, an answer to nothing open STALE (both in-stream); an answer to another
  bot's decision ends the stream with PERMISSION_DENIED;
* when the stream ends, pushes the requests it holds, unanswered and still awaited, back to
  the FRONT of the inbox, so the bot gets them again on its next stream (the worker keeps
  the first ``SentStamp``: the clock keeps running);
* when the same bot opens a new stream on this referee, the bot's other streams here hand
  the requests they hold to the inbox front the same way (a bot reconnects because its old
  stream is dead, maybe without the referee having noticed: a SIGKILLed bot's transport
  can die silently), so the new stream gets them at once; dead transports themselves are
  found by the server's keepalive and by housekeeping's liveness check (issue 14 item 3).

:class:`Hub` is the referee-wide part: the sessions, who holds which open decision, the
drain. Several referees may share one Redis: each session pops only its own bot's inbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis.asyncio
from redis.exceptions import RedisError

from arena.v1 import bot_pb2
from referee import keys, mailbox
from referee.bots import STREAM_STALE_MS
from referee.errors import ArenaError, AuthError
from referee.gateway import convert, status
from referee.gateway.auth import CURRENT_BOT
from referee.gateway.errors import (
    ActingForAnotherBot,
    Draining,
    MalformedMessage,
    ProtocolError,
    SlowReader,
    TooManyStreams,
)

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
POP_WAIT_S = 5.0
"""BLPOP wait. A closing stream does not wait for it: it unblocks its popper's connection
(``CLIENT UNBLOCK``, which makes the BLPOP return empty, never losing a popped entry)."""
HELLO_TIMEOUT_S = 10.0
WRITE_TIMEOUT_S = 5.0
"""The longest one write to a bot may take, waiting for the stream's write lock included
(PITFALLS 16: ``context.write`` waits on HTTP/2 flow control, so a bot that does not read
would hold it forever). A write that does not complete in time ends that bot's stream
(RESOURCE_EXHAUSTED) and only that one; a turn it held goes back to the inbox."""
HOUSEKEEPING_S = 5.0
"""How often a session refreshes its ``bot_streams`` entry, expires requests and checks
that its bot was not revoked."""
DEADLINE_SLACK_MS = 500.0
"""An open request is given up locally this long after its clock (move + bank + grace) ran
out: the worker has timed it out by then, and the slot it held takes the next request (the
worker's ``timed_out`` result may sit behind other messages in a full stream's inbox)."""
MAX_ACTION_CHARS = 200
POP_BATCH = 64
"""Most inbox entries taken by one non-blocking ``LPOP key count`` after a BLPOP (never more
than the stream's free slots, so a batch can never hold more turns than it may send)."""
ANSWERED_MEMORY = 4096
"""Answered decisions a session remembers to tell a repeat answer DUPLICATE."""

Key = tuple[str, int, int]

_REGISTER_STREAM = """
local entries = redis.call('HGETALL', KEYS[1])
local live = 0
for i = 1, #entries, 2 do
  local ok, e = pcall(cjson.decode, entries[i + 1])
  if ok and type(e) == 'table' and tonumber(e['seen_ms'])
     and tonumber(ARGV[1]) - tonumber(e['seen_ms']) <= tonumber(ARGV[2]) then
    live = live + 1
  else
    redis.call('HDEL', KEYS[1], entries[i])
  end
end
if live >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[4], ARGV[5])
return live + 1
"""


_PURGE_STALE = """
local entries = redis.call('HGETALL', KEYS[1])
local purged = 0
for i = 1, #entries, 2 do
  local ok, e = pcall(cjson.decode, entries[i + 1])
  if not (ok and type(e) == 'table' and tonumber(e['seen_ms'])
          and tonumber(ARGV[1]) - tonumber(e['seen_ms']) <= tonumber(ARGV[2])) then
    redis.call('HDEL', KEYS[1], entries[i])
    purged = purged + 1
  end
end
return purged
"""
_PUSH_REPLIES = """
for i = 1, #KEYS do
  redis.call('RPUSH', KEYS[i], ARGV[i + 1])
  redis.call('EXPIRE', KEYS[i], ARGV[1])
end
return #KEYS
"""
"""RPUSH ``ARGV[i+1]`` to reply list ``KEYS[i]`` and refresh its TTL (``ARGV[1]``) for each
key: one command instead of a pipeline of two per entry (~45 us less client CPU a push)."""

SWEEP_S = 10.0
"""How often a referee deletes the stream records of dead referees (for every bot)."""


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


@dataclass
class OpenRequest:
    key: Key
    turn: dict[str, Any]  # the inbox message, to push back if unanswered
    reply_key: str
    sent_ms: float  # the FIRST send (a resend keeps it: the clock keeps running)
    deadline_ms: float  # after this nobody waits for the answer
    stamped: asyncio.Event = field(default_factory=asyncio.Event)
    timer: asyncio.TimerHandle | None = None


def _deadline(turn: dict[str, Any], sent_ms: float) -> float:
    clock = turn.get("clock", {})
    budget = float(clock.get("move_ms", 0)) + float(clock.get("bank_ms", 0))
    return sent_ms + budget + float(clock.get("grace_ms", 0)) + DEADLINE_SLACK_MS


def _left_clock(turn: dict[str, Any], first_sent_ms: float, now: float) -> dict[str, int]:
    """The clock a resent request shows: move time first, then bank, minus time elapsed."""
    clock = turn["clock"]
    elapsed = max(0.0, now - first_sent_ms)
    move = float(clock["move_ms"]) - elapsed
    bank = float(clock["bank_ms"])
    if move < 0:
        bank += move
        move = 0.0
    return {"move_ms": int(move), "bank_ms": int(max(0.0, bank)), "grace_ms": clock["grace_ms"]}


@dataclass
class HubConfig:
    referee_id: str
    max_streams_per_bot: int = 4
    max_concurrency: int = 64
    keepalive_time_ms: int = 30_000
    housekeeping_s: float = HOUSEKEEPING_S
    max_message_bytes: int = 64 * 1024
    hello_timeout_s: float = HELLO_TIMEOUT_S
    write_timeout_s: float = WRITE_TIMEOUT_S


class Hub:
    """Referee-wide relay state: the live sessions and who holds which open decision."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        config: HubConfig,
        pop_client_factory: Callable[[], redis.asyncio.Redis],
    ) -> None:
        self.redis = client
        # Each stream's popper gets a client of its own (one connection, unblockable).
        self.new_pop_client = pop_client_factory
        self.config = config
        self.draining = False
        self.sessions: set[BotSession] = set()
        self.owner: dict[Key, str] = {}
        self._closing: set[asyncio.Task[None]] = set()
        self._register_script = client.register_script(_REGISTER_STREAM)
        self._purge_script = client.register_script(_PURGE_STALE)
        self.push_replies_script = client.register_script(_PUSH_REPLIES)

    async def beat(self, client: redis.asyncio.Redis) -> None:
        """Refresh ``keys.referee_alive``: while it exists, workers trust the requests this
        referee stamped as sent; once it is gone they send them again (DESIGN section 8)."""
        await client.set(
            keys.referee_alive(self.config.referee_id),
            f"{mailbox.now_ms():.0f}",
            px=mailbox.REFEREE_ALIVE_TTL_MS,
        )

    async def beat_forever(self, client: redis.asyncio.Redis) -> None:
        """:meth:`beat` every ``REFEREE_BEAT_S`` on ``client`` (a connection of its own, so
        a busy command pool never delays it into looking dead)."""
        while True:
            await asyncio.sleep(mailbox.REFEREE_BEAT_S)
            try:
                await self.beat(client)
            except RedisError as exc:
                log.warning("refreshing the referee's liveness key failed: %s", exc)

    async def mark_drained(self) -> None:
        """After a drain: the held requests are back in their inboxes, so workers must keep
        their clocks running and not send them again."""
        await self.redis.set(
            keys.referee_alive(self.config.referee_id),
            mailbox.REFEREE_DRAINED,
            ex=mailbox.REFEREE_DRAINED_TTL_S,
        )

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
                await self._purge_script(
                    keys=[keys.bot_streams(name)], args=[mailbox.now_ms(), STREAM_STALE_MS]
                )
            )
        if purged:
            log.info("deleted %d stream record(s) of referees that stopped refreshing", purged)
        return purged

    async def register_stream(self, bot: str, stream_id: str, record: dict[str, Any]) -> int:
        """Record a stream in ``keys.bot_streams``; -1 when the bot is at its limit."""
        result = await self._register_script(
            keys=[keys.bot_streams(bot)],
            args=[
                mailbox.now_ms(),
                STREAM_STALE_MS,
                self.config.max_streams_per_bot,
                stream_id,
                json.dumps(record),
            ],
        )
        return int(result)

    def close_later(self, session: BotSession) -> None:
        """Close a session in its own task (the handler task may have been cancelled)."""
        task = asyncio.get_running_loop().create_task(session.close())
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    async def drain(self, grace_s: float) -> None:
        """Stop popping, tell every bot, let open requests be answered, then end streams.

        Unanswered requests are pushed back to their inboxes as the streams close."""
        self.draining = True
        sessions = list(self.sessions)
        await asyncio.gather(*(s.begin_drain() for s in sessions), return_exceptions=True)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(s.open for s in self.sessions):
            await asyncio.sleep(0.05)
        for session in list(self.sessions):
            session.request_stop(
                Draining(
                    "the referee is shutting down: connect again (to it or another referee); "
                    "requests you held are waiting in your inbox"
                )
            )
        await self.wait_closed(timeout=POP_WAIT_S + 5.0)

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
        self.inbox = keys.inbox(bot)
        self.concurrency = 1
        self.open: dict[Key, OpenRequest] = {}
        self._answered: OrderedDict[Key, None] = OrderedDict()
        self._write_lock = asyncio.Lock()
        self._has_slot = asyncio.Event()
        self._stopping = False  # no more pops
        self._suspect = False  # handed over to a newer stream: no pops until the bot speaks
        self._stop_reason: ArenaError | None = None
        self._stop_event = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        # Stamps and answers waiting for the reply pusher: (reply key, JSON, request whose
        # ``stamped`` is set once this entry is in Redis, or None).
        self._replies: list[tuple[str, str, OpenRequest | None]] = []
        self._pusher: asyncio.Task[None] | None = None
        self._popper: asyncio.Task[None] | None = None
        self._pop_client_id: int | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._registered = False
        self._closed = False
        self._record: dict[str, Any] = {}

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
        self._record = {
            "referee": self.hub.config.referee_id,
            "since_ms": mailbox.now_ms(),
            "seen_ms": mailbox.now_ms(),
            "concurrency": self.concurrency,
            "peer": self.peer,
            "bot_version": hello.bot_version[:100],
            "games": list(hello.games)[:10],
        }
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
        for other in list(self.hub.sessions):
            if other.bot == self.bot and other.open:
                await other.hand_over(self)
        self.hub.sessions.add(self)
        welcome = bot_pb2.Welcome(
            bot=self.bot,
            protocol_version=PROTOCOL_VERSION,
            session_id=self.session_id,
            max_concurrent_matches=self.concurrency,
            keepalive_time_ms=self.hub.config.keepalive_time_ms,
            referee_id=self.hub.config.referee_id,
        )
        await self._write(bot_pb2.RefereeMessage(welcome=welcome))
        log.info(
            "bot %s connected (session %s, concurrency %d, %s)",
            self.bot,
            self.session_id,
            self.concurrency,
            hello.bot_version,
        )
        self._update_slot()
        self._popper = asyncio.ensure_future(self._pop_loop())
        self._keeper = asyncio.ensure_future(self._housekeeping())

    def request_stop(self, reason: ArenaError | None) -> None:
        """End the stream (with ``reason``'s status, or OK when None)."""
        self._stopping = True
        self._has_slot.set()
        if self._stop_reason is None:
            self._stop_reason = reason
        self._stop_event.set()

    async def begin_drain(self) -> None:
        self._stopping = True
        self._has_slot.set()
        with contextlib.suppress(Exception):
            await self._write(
                bot_pb2.RefereeMessage(
                    notice=bot_pb2.Notice(
                        code="draining",
                        message="the referee is shutting down: answer the requests you hold; "
                        "reconnect when this stream ends",
                    )
                )
            )

    async def close(self) -> None:
        """Stop popping, push back what the bot holds, forget the stream. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._stopping = True
        self._has_slot.set()
        try:
            if self._popper is not None:
                await self._stop_popper()
            if self._keeper is not None:
                self._keeper.cancel()
                with contextlib.suppress(BaseException):
                    await self._keeper
            while self._tasks:  # answers being pushed (a finished one may start the pusher)
                await asyncio.gather(*list(self._tasks), return_exceptions=True)
            await self._push_back()
            if self._registered:
                with contextlib.suppress(RedisError):
                    await self.redis.hdel(keys.bot_streams(self.bot), self.stream_id)
        finally:
            self.hub.sessions.discard(self)
            log.info("bot %s disconnected (session %s)", self.bot, self.session_id)

    async def _stop_popper(self) -> None:
        """Wake the popper out of its BLPOP and wait until it has finished."""
        assert self._popper is not None
        deadline = time.monotonic() + POP_WAIT_S + 5.0
        while not self._popper.done() and time.monotonic() < deadline:
            if self._pop_client_id is not None:
                try:
                    await self.redis.client_unblock(self._pop_client_id)
                except RedisError as exc:
                    log.debug("CLIENT UNBLOCK failed: %s", exc)
            # Repeat: the popper may have been between its check and a new BLPOP.
            await asyncio.wait({self._popper}, timeout=0.1)

    def _close_request(self, key: Key) -> OpenRequest | None:
        """Forget an open request (answered, timed out or expired); frees its slot."""
        request = self.open.pop(key, None)
        if request is None:
            return None
        self.hub.owner.pop(key, None)
        if request.timer is not None:
            request.timer.cancel()
        self._update_slot()
        return request

    def _arm_timer(self, request: OpenRequest) -> None:
        if request.timer is not None:
            request.timer.cancel()
        delay = max(0.0, (request.deadline_ms - mailbox.now_ms()) / 1000.0)
        request.timer = asyncio.get_running_loop().call_later(delay, self._expire, request.key)

    def _expire(self, key: Key) -> None:
        if self._close_request(key) is not None:
            log.info("gave up waiting for %s to answer %s: its clock ran out", self.bot, key)

    async def hand_over(self, successor: BotSession) -> None:
        """The bot opened ``successor``: give the requests this stream holds back to the
        inbox (its clock running) so the new stream gets them; an answer that still comes
        here is told STALE (the copy on the new stream counts). This stream pops nothing
        more until the bot sends a message on it (a dead one never does; keepalive or
        housekeeping closes it)."""
        log.info(
            "bot %s opened session %s: session %s hands its %d request(s) over",
            self.bot,
            successor.session_id,
            self.session_id,
            len(self.open),
        )
        self._suspect = True
        self._update_slot()
        await self._push_back()
        if self._pop_client_id is not None:  # out of a BLPOP that would take the next one
            with contextlib.suppress(RedisError):
                await self.redis.client_unblock(self._pop_client_id)

    def _alive(self) -> None:
        """The bot spoke on this stream: it is alive, pop for it again."""
        if self._suspect:
            self._suspect = False
            self._update_slot()

    async def _push_back(self) -> None:
        now = mailbox.now_ms()
        keep = sorted(
            (r for r in self.open.values() if r.deadline_ms > now), key=lambda r: r.sent_ms
        )
        for key in list(self.open):
            self._close_request(key)
        if not keep:
            return
        entries = []
        for request in reversed(keep):  # LPUSH reverses: the oldest ends up first
            turn = dict(request.turn)
            turn["first_sent_ms"] = request.sent_ms
            # After the send, nobody waits past the answer deadline: a copy still in the
            # inbox then is dropped rather than sent to a bot whose decision already timed out.
            turn["expires_ms"] = request.deadline_ms
            entries.append(json.dumps(turn, separators=(",", ":")))
        try:
            await self.redis.lpush(self.inbox, *entries)
            log.info("pushed %d unanswered request(s) back to %s", len(entries), self.inbox)
        except RedisError as exc:
            log.error("could not push %d request(s) back to %s: %s", len(entries), self.inbox, exc)

    # --- writing to the bot ----------------------------------------------------------
    async def _write(self, message: Any) -> float:
        """Write one message; returns when the write began (after any wait for the lock).

        Bounded by ``write_timeout_s``, the wait for the lock included: a bot that does not
        read its stream gets :class:`SlowReader` (its stream ends, and only its own)."""
        limit = self.hub.config.write_timeout_s
        try:
            async with asyncio.timeout(limit):
                async with self._write_lock:
                    began_ms = mailbox.now_ms()
                    await self.context.write(message)
                    return began_ms
        except TimeoutError:
            error = SlowReader(
                f"a message to bot {self.bot!r} could not be written within {limit:g} s: "
                "the bot does not read its stream (or its flow-control window is too small); "
                "read every message the referee sends, as it comes"
            )
            log.warning(
                "ending the stream of %s (session %s): %s", self.bot, self.session_id, error
            )
            self.request_stop(error)
            raise error from None

    async def send_notice(self, message: Any) -> None:
        """Write a ``RefereeMessage(notice=...)`` between the other messages
        (referee.gateway.notices); it takes no concurrency slot."""
        await self._write(message)

    def _update_slot(self) -> None:
        if self._stopping or (not self._suspect and len(self.open) < self.concurrency):
            self._has_slot.set()
        else:
            self._has_slot.clear()

    async def _pop_loop(self) -> None:
        client = self.hub.new_pop_client()
        try:
            await self._pop_with(client)
        finally:
            self._pop_client_id = None
            with contextlib.suppress(Exception):
                await client.aclose()

    async def _pop_with(self, client: redis.asyncio.Redis) -> None:
        backoff = 0.1
        busy = False  # the last non-blocking look found entries
        while not self._stopping:
            await self._has_slot.wait()
            if self._stopping:
                break
            try:
                if self._pop_client_id is None:
                    self._pop_client_id = int(await client.client_id())
                    continue  # check _stopping again before blocking
                item = await client.blpop([self.inbox], timeout=POP_WAIT_S)
            except RedisError as exc:
                self._pop_client_id = None  # a new connection has a new id
                log.warning("popping %s failed (%s); retrying in %.1f s", self.inbox, exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 5.0)
                continue
            backoff = 0.1
            if item is None:
                continue
            batch = [str(item[1])]
            # Look for more without blocking only when more is likely: the inbox was busy
            # at the last look, or this is a notification (a worker pushes those together
            # with its next request). An idle bot's lone turn costs no extra round trip.
            probe = busy or not batch[0].startswith('{"type":"turn"')
            while await self._deliver_batch(batch) and probe:
                # A busy inbox: take what else is there in one round trip (no blocking),
                # at most as many entries as there are free slots.
                free = min(self.concurrency - len(self.open), POP_BATCH)
                if free <= 0 or self._stopping:
                    break
                try:
                    more = await client.lpop(self.inbox, free)
                except RedisError:
                    break  # the blocking pop above reports and backs off
                busy = bool(more)
                if not more:
                    break
                batch = [str(raw) for raw in more]
            if self._stopping:
                break

    async def _deliver_batch(self, batch: list[str]) -> bool:
        """Relay popped entries in order; False when the popper must stop (what was not
        delivered is pushed back to the front of the inbox, in order)."""
        for i, raw in enumerate(batch):
            if self._stopping or self._suspect:
                await self._give_back(*batch[i:])
                return False
            try:
                await self._deliver(raw)
            except _StreamGone:
                await self._give_back(*batch[i:])
                return False
            except Exception:
                log.exception("relaying to %s failed; ending its stream", self.bot)
                self.request_stop(ArenaError("internal error in the relay: reconnect"))
                if batch[i + 1 :]:
                    await self._give_back(*batch[i + 1 :])
                return False
        return True

    async def _give_back(self, *raws: str) -> None:
        """Push entries back to the front of the inbox, keeping their order."""
        try:
            await self.redis.lpush(self.inbox, *reversed(raws))
        except RedisError as exc:
            log.error("lost %d inbox message(s) of %s: %s", len(raws), self.bot, exc)

    async def _deliver(self, raw: str) -> None:
        try:
            message = mailbox.decode_inbox(raw)
        except ValueError as exc:
            log.error("dropped a malformed entry of %s: %s", self.inbox, exc)
            return
        if message.get("bot") != self.bot:
            log.error(
                "dropped a message for bot %r found in the inbox of %r",
                message.get("bot"),
                self.bot,
            )
            return
        if message["type"] == "turn":
            await self._send_turn(cast(dict[str, Any], message), raw)
            return
        if message["type"] == "action_result" and message["status"] == "timed_out":
            self._close_request((message["match_id"], int(message["attempt"]), int(message["seq"])))
        try:
            proto = convert.notification_to_proto(message)
        except (ValueError, KeyError, TypeError) as exc:
            log.error("dropped a malformed %s for %s: %r", message["type"], self.bot, exc)
            return
        await self._write_or_gone(proto)

    async def _write_or_gone(self, proto: Any) -> None:
        try:
            await self._write(proto)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            raise _StreamGone() from exc

    async def _send_turn(self, turn: dict[str, Any], raw: str) -> None:
        now = mailbox.now_ms()
        if float(turn.get("expires_ms", 0)) < now:
            log.info(
                "dropped expired request %s/%s/%s for %s",
                turn.get("match_id"),
                turn.get("attempt"),
                turn.get("seq"),
                self.bot,
            )
            return
        try:
            key: Key = (str(turn["match_id"]), int(turn["attempt"]), int(turn["seq"]))
            observation = turn["observation"]
            if int(observation["seat"]) != int(turn["seat"]):
                raise ValueError(
                    f"observation of seat {observation['seat']} in a request for seat "
                    f"{turn['seat']}"
                )
            first_sent = turn.get("first_sent_ms")
            clock = None if first_sent is None else _left_clock(turn, float(first_sent), now)
            proto = convert.turn_to_proto(cast(mailbox.TurnMessage, turn), clock)
            reply_key = str(turn["reply_key"])
        except (ValueError, KeyError, TypeError) as exc:
            log.error("dropped a malformed turn request for %s: %r", self.bot, exc)
            return
        if key in self.open:
            log.warning("request %s is already open on this stream; ignored the copy", key)
            return
        if proto.ByteSize() > self.hub.config.max_message_bytes:
            log.error(
                "dropped request %s for %s: %d bytes is over the %d-byte message limit",
                key,
                self.bot,
                proto.ByteSize(),
                self.hub.config.max_message_bytes,
            )
            return
        original = dict(turn)  # a shallow copy: nothing below changes the nested values
        original.pop("first_sent_ms", None)
        sent_ms = mailbox.now_ms() if first_sent is None else float(first_sent)
        request = OpenRequest(
            key=key,
            turn=original,
            reply_key=reply_key,
            sent_ms=sent_ms,
            deadline_ms=_deadline(turn, sent_ms),
        )
        self.open[key] = request
        self.hub.owner[key] = self.bot
        self._update_slot()
        self._arm_timer(request)
        try:
            write_ms = await self._write(proto)  # the send stamp: after any wait for the lock
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._close_request(key)
            raise _StreamGone() from exc
        if first_sent is None:
            stamp: mailbox.SentStamp = {
                "type": "sent",
                "referee": self.hub.config.referee_id,
                "sent_ms": write_ms,
            }
            request.sent_ms = write_ms
            request.deadline_ms = _deadline(turn, write_ms)
            self._arm_timer(request)
            # Pushed by the reply pusher (the popper goes on with the next entry); the
            # answer may be pushed once the stamp is in (never waits forever: see there).
            self._queue_reply(reply_key, mailbox.encode(stamp), request)
        else:
            request.stamped.set()

    def _queue_reply(self, key: str, value: str, stamped: OpenRequest | None = None) -> None:
        """RPUSH ``value`` to reply list ``key`` soon. Entries queued while a push is in
        flight go together in the next pipeline, in order; ``stamped.stamped`` is set once
        the entry was pushed (or given up on)."""
        self._replies.append((key, value, stamped))
        if self._pusher is None or self._pusher.done():
            self._pusher = asyncio.ensure_future(self._push_replies())
            self._tasks.add(self._pusher)
            self._pusher.add_done_callback(self._tasks.discard)

    async def _push_replies(self) -> None:
        while self._replies:
            batch, self._replies = self._replies, []
            try:
                await self._rpush_many([(key, value) for key, value, _ in batch])
            finally:
                for _, _, request in batch:
                    if request is not None:
                        request.stamped.set()

    async def _rpush_many(self, entries: list[tuple[str, str]]) -> None:
        """RPUSH each ``(key, value)`` (and refresh the key's TTL), in one command."""
        for attempt in range(3):
            try:
                await self.hub.push_replies_script(
                    keys=[key for key, _ in entries],
                    args=[mailbox.REPLY_TTL_S, *(value for _, value in entries)],
                )
                return
            except RedisError as exc:
                log.warning(
                    "RPUSH to %s failed (%s), attempt %d",
                    ", ".join(sorted({key for key, _ in entries})),
                    exc,
                    attempt + 1,
                )
                await asyncio.sleep(0.05 * (attempt + 1))
        log.error("gave up pushing to %s", ", ".join(sorted({key for key, _ in entries})))

    # --- reading from the bot --------------------------------------------------------
    async def _read_loop(self, stream: Any) -> None:
        async for message in stream:
            self._alive()
            if isinstance(message, Malformed):
                raise MalformedMessage(message.error)
            kind = message.WhichOneof("msg")
            if kind == "action":
                await self._on_action(message.action)
            elif kind == "ping":
                await self._write(
                    bot_pb2.RefereeMessage(pong=bot_pb2.Pong(nonce=message.ping.nonce))
                )
            elif kind == "hello":
                raise ProtocolError("Hello was already received: send it once, first")
            else:
                raise MalformedMessage("empty BotMessage: set one of hello, action or ping")

    async def _on_action(self, action: Any) -> None:
        received_ms = mailbox.now_ms()
        if not action.match_id:
            raise MalformedMessage("Action.match_id is empty: echo the TurnRequest's match_id")
        if len(action.action) > MAX_ACTION_CHARS:
            raise MalformedMessage(
                f"Action.action has {len(action.action)} characters; an action is at most "
                f"{MAX_ACTION_CHARS} (a card '7D', a run '8D+9D', 'pass')"
            )
        key: Key = (action.match_id, int(action.attempt), int(action.seq))
        request = self._close_request(key)
        if request is not None:
            self._remember_answered(key)
            if request.stamped.is_set():  # the usual case: no task needed
                self._queue_answer(request, action.action, received_ms)
                return
            task = asyncio.ensure_future(self._push_answer(request, action.action, received_ms))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            return
        where = f"match {action.match_id} attempt {action.attempt} seq {action.seq}"
        if key in self._answered:
            await self._tell(
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
        await self._tell(
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

    async def _tell(self, action: Any, code: Any, reason: str, text: str) -> None:
        result = bot_pb2.ActionResult(
            match_id=action.match_id,
            attempt=action.attempt,
            seq=action.seq,
            status=code,
            reason=reason,
            message=text,
        )
        await self._write(bot_pb2.RefereeMessage(result=result))

    def _remember_answered(self, key: Key) -> None:
        self._answered[key] = None
        while len(self._answered) > ANSWERED_MEMORY:
            self._answered.popitem(last=False)

    async def _push_answer(self, request: OpenRequest, action: str, received_ms: float) -> None:
        await request.stamped.wait()
        self._queue_answer(request, action, received_ms)

    def _queue_answer(self, request: OpenRequest, action: str, received_ms: float) -> None:
        answer: mailbox.AnswerMessage = {
            "type": "answer",
            "referee": self.hub.config.referee_id,
            "action": action,
            "sent_ms": request.sent_ms,
            "received_ms": received_ms,
            "think_ms": max(0.0, received_ms - request.sent_ms),
        }
        self._queue_reply(request.reply_key, mailbox.encode(answer))

    # --- housekeeping ------------------------------------------------------------------
    async def _housekeeping(self) -> None:
        while True:
            await asyncio.sleep(self.hub.config.housekeeping_s)
            if self.context.done():  # the call ended but the handler never heard (a race)
                log.warning("stream of %s (%s) is dead; closing it", self.bot, self.session_id)
                self.request_stop(None)
                return
            now = mailbox.now_ms()
            for key, request in list(self.open.items()):
                if request.deadline_ms < now:
                    self._expire(key)
            try:
                self._record["seen_ms"] = now
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


class _StreamGone(Exception):
    """Writing to the bot failed: the stream is gone."""


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
        session = BotSession(self.hub, bot, context, context.peer())
        error: Exception | None = None
        try:
            await session.run(request_iterator)
        except asyncio.CancelledError:
            self.hub.close_later(session)  # the bot went away (PITFALLS 5): clean up, re-raise
            raise
        except (ArenaError, RedisError) as exc:
            error = exc
        except Exception as exc:
            log.exception("stream of %s failed", bot)
            error = exc
        await asyncio.shield(session.close())
        if error is not None:
            log.info("ended stream of %s: %s", bot, error)
            await status.abort(context, error)

    def handler(self) -> grpc.GenericRpcHandler:
        """The generic handler (with the never-raising request deserializer)."""
        return grpc.method_handlers_generic_handler(
            "arena.v1.BotGateway",
            {
                "Play": grpc.stream_stream_rpc_method_handler(
                    self.Play,
                    request_deserializer=parse_bot_message,
                    response_serializer=bot_pb2.RefereeMessage.SerializeToString,
                )
            },
        )
