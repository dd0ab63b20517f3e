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

This module holds the two services; the parts live beside it: :class:`Hub` and
:class:`HostLink` in :mod:`referee.gateway.hub`, :class:`BotSession` in
:mod:`referee.gateway.session`, the stream's bytes in :mod:`referee.gateway.wire`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
from redis.exceptions import RedisError

from arena.v1 import internal_pb2
from referee import cluster
from referee.errors import ArenaError, AuthError
from referee.gateway import status
from referee.gateway.auth import CURRENT_BOT
from referee.gateway.errors import (
    Draining,
    Flooding,
)
from referee.gateway.hub import HostLink, Hub
from referee.gateway.session import BotSession
from referee.gateway.wire import Malformed, parse_bot_message, parse_host_batch, serialize_to_bot

log = logging.getLogger(__name__)


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
