"""One bot's ``Play`` stream on this referee (:class:`BotSession`): Hello and Welcome,
the bounded writer of turns and notices, the reader of actions with its checks, the
hand-over to a newer stream, the flood bucket, housekeeping (docs/gateway.md)."""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import logging
import time
import uuid
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
from redis.exceptions import RedisError

from arena.v1 import bot_pb2
from referee import keys
from referee.aio import bounded
from referee.errors import ArenaError, AuthError
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
from referee.gateway.hub import (
    ANSWERED_MEMORY,
    LAG_RECHECK_S,
    TIMEOUT_SLACK_MS,
    Hub,
    Key,
    Kind,
    Request,
)
from referee.gateway.wire import (
    MAX_ACTION_CHARS,
    MAX_BATCH_BYTES,
    MAX_BATCH_TURNS,
    PROTOCOL_VERSION,
    Malformed,
    turn_batch,
)
from referee.match.messages import now_ms

if TYPE_CHECKING:
    from referee.gateway.hub import ReplyKind


log = logging.getLogger(__name__)


class StreamState(enum.Enum):
    """Where a bot's ``Play`` stream is in its life (one state at a time; the moves a state
    may make are :data:`STREAM_MOVES`)."""

    HELLO = "hello"  # waiting for the bot's Hello
    OPEN = "open"  # welcomed: takes turns while it has a free slot
    SUSPECT = "suspect"  # the bot opened a newer stream: no turns until it speaks here
    STOPPING = "stopping"  # ending (stop asked, or the referee drains): takes no more turns
    CLOSED = "closed"  # handed back what it held, forgotten


STREAM_MOVES: dict[StreamState, frozenset[StreamState]] = {
    StreamState.HELLO: frozenset({StreamState.OPEN, StreamState.STOPPING, StreamState.CLOSED}),
    StreamState.OPEN: frozenset({StreamState.SUSPECT, StreamState.STOPPING, StreamState.CLOSED}),
    StreamState.SUSPECT: frozenset({StreamState.OPEN, StreamState.STOPPING, StreamState.CLOSED}),
    StreamState.STOPPING: frozenset({StreamState.STOPPING, StreamState.CLOSED}),
    StreamState.CLOSED: frozenset(),
}


class BotSession:
    """One ``Play`` stream of one bot; its lifecycle is :attr:`state`."""

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
        self.state = StreamState.HELLO
        self._stop_reason: ArenaError | None = None
        self._stop_event = asyncio.Event()
        self._registered = False  # the stream's record is in Redis (close deletes it)
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
        if self.state is StreamState.HELLO:  # (a stop may have come meanwhile)
            self._move(StreamState.OPEN)
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
        return self.state is StreamState.OPEN and len(self.open) < self.concurrency

    def _move(self, to: StreamState) -> None:
        assert to in STREAM_MOVES[self.state], f"stream {self.stream_id}: {self.state} -> {to}"
        self.state = to

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
        if self.state is StreamState.OPEN:
            self._move(StreamState.SUSPECT)
        self.give_back(Kind.BOT_LEFT)

    def _alive(self) -> None:
        """The bot spoke on this stream: it is alive, it may take turns again."""
        if self.state is StreamState.SUSPECT:
            self._move(StreamState.OPEN)
            self.hub.dispatch(self.bot)

    def request_stop(self, reason: ArenaError | None) -> None:
        """End the stream (with ``reason``'s status, or OK when None)."""
        if self.state is not StreamState.CLOSED:
            self._move(StreamState.STOPPING)
        if self._stop_reason is None:
            self._stop_reason = reason
        self._stop_event.set()

    def begin_drain(self) -> None:
        if self.state is not StreamState.CLOSED:
            self._move(StreamState.STOPPING)
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
        if self.state is StreamState.CLOSED:
            return
        self._move(StreamState.CLOSED)
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
        if self._stop_reason is not None:  # (set only by request_stop)
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


def _size_of(item: Any) -> int:
    """Bytes an outbox item will take on the wire (its payload; framing aside)."""
    if isinstance(item, bytes):
        return len(item)
    if isinstance(item, Request):
        return len(item.payload)
    size: int = item.ByteSize()
    return size
