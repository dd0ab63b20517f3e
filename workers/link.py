"""A match host's side of the internal stream (proto/arena/v1/internal.proto).

:class:`RefereeLink` is one ``MatchRelay.Link`` stream to one referee: every turn and
notification of every match of this process that goes to a bot held by that referee,
batched (items queued while a write is in flight go in the next message), and the one
reply per turn. :class:`LocalLink` is the same for a host running inside a referee's
process (``arena referee --matches N``) and that referee's own bots: turns and
notifications are calls on the referee's ``Hub``, and its replies resolve the turns'
futures directly (docs/workers.md "Co-hosted matches"). :class:`Router` finds a bot's
referee in the bot-streams directory (``keys.bot_streams``, cached; read again only when a
route fails) and keeps one link per referee.

Everything here runs on the host's event loop; Redis is read through ``lookup`` (a
coroutine the host provides, which runs the sync client in a thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]

from arena.v1 import internal_pb2
from referee import cluster
from referee.aio import bounded
from referee.cluster import Route
from referee.defaults import LINK_WRITE_TIMEOUT_S
from referee.match.messages import now_ms

log = logging.getLogger(__name__)

Key = tuple[str, int, int]
Reply = internal_pb2.Reply

ROUTE_POLL_S: Final = 0.2
"""How often the directory is read again while a bot has no usable route."""
HELD_NOTES: Final = 64
"""Notifications kept per bot that has no route yet (sent, in order, before its next turn
once one is found; the oldest are dropped beyond this)."""
QUARANTINE_MS: Final = 1_000.0
"""A referee whose link failed is not dialled again for this long."""


class RefereeIdentity(Protocol):
    @property
    def referee_id(self) -> str: ...


class LocalHub(Protocol):
    """What a host co-hosted in a referee's process uses of that referee: the narrow
    interface between the match hosts and the gateway (``referee.gateway.relay.Hub``
    implements it; neither package imports the other, docs/ARCHITECTURE.md)."""

    @property
    def config(self) -> RefereeIdentity: ...

    def submit_turn(
        self,
        link: LocalLink,
        bot: str,
        key: Key,
        payload: bytes,
        limit_ms: float,
        expires_ms: float,
        first_sent_ms: float = 0.0,
    ) -> None: ...

    def notify_bot(
        self, bot: str, match_id: str, payload: bytes, accepted: bool = False
    ) -> None: ...

    def forget_link(self, link: LocalLink) -> None: ...


class LinkLost(Exception):
    """The internal stream to a referee ended (it died, drained, or the network failed)."""


class Link(Protocol):
    """What a match needs of its way to one referee (:class:`RefereeLink`,
    :class:`LocalLink`)."""

    referee: str
    address: str
    alive: bool
    pending: dict[Key, asyncio.Future[TurnReply]]

    def turn(
        self,
        bot: str,
        key: Key,
        payload: bytes,
        limit_ms: float,
        expires_ms: float,
        first_sent_ms: float = 0.0,
    ) -> asyncio.Future[TurnReply]:
        """Send a turn; the future gets its reply (``kind``, ``action``, ``sent_ms``,
        ``received_ms``) or ``LinkLost``."""
        ...

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        """A notification for ``bot``; ``accepted``: a plain ACCEPTED ActionResult, which
        the referee drops for streams that declined those (``Hello.skip_accepted_results``)."""
        ...

    def forget(self, key: Key) -> None: ...

    def fail(self, why: str) -> None: ...

    async def close(self) -> None: ...


def open_turn(link: Link, key: Key) -> asyncio.Future[TurnReply]:
    """The future of a turn about to be sent on ``link``, kept in its ``pending``; already
    failed with ``LinkLost`` if the link is down (then the turn must not be sent)."""
    future: asyncio.Future[TurnReply] = asyncio.get_running_loop().create_future()
    if not link.alive:
        future.set_exception(LinkLost(f"the link to referee {link.referee} is down"))
    else:
        link.pending[key] = future
    return future


class RefereeLink:
    """One internal stream to one referee."""

    def __init__(
        self,
        referee: str,
        address: str,
        secret: str,
        on_lost: Callable[[RefereeLink], None],
        root_certificates: bytes | None = None,
    ) -> None:
        self.referee = referee
        self.address = address
        self.alive = True
        self._on_lost = on_lost
        options = cluster.link_channel_options()
        if root_certificates is not None:
            creds = grpc.ssl_channel_credentials(root_certificates=root_certificates)
            self._channel = grpc.aio.secure_channel(address, creds, options=options)
        else:
            self._channel = grpc.aio.insecure_channel(address, options=options)
        self._call = self._channel.stream_stream(
            "/arena.v1.MatchRelay/Link",
            request_serializer=internal_pb2.HostBatch.SerializeToString,
            response_deserializer=internal_pb2.RelayBatch.FromString,
        )(metadata=cluster.bearer(secret))
        self.pending: dict[Key, asyncio.Future[TurnReply]] = {}
        self._items: list[internal_pb2.HostItem] = []
        self._wake = asyncio.Event()
        self._closer: asyncio.Future[None] | None = None
        self._tasks = [
            asyncio.ensure_future(self._write_loop()),
            asyncio.ensure_future(self._read_loop()),
        ]

    def turn(
        self,
        bot: str,
        key: Key,
        payload: bytes,
        limit_ms: float,
        expires_ms: float,
        first_sent_ms: float = 0.0,
    ) -> asyncio.Future[TurnReply]:
        """Send a turn; the future gets its :class:`Reply` (or ``LinkLost``)."""
        future = open_turn(self, key)
        if future.done():
            return future
        turn = internal_pb2.Turn(
            bot=bot,
            match_id=key[0],
            attempt=key[1],
            seq=key[2],
            request=payload,
            limit_ms=limit_ms,
            expires_ms=expires_ms,
            first_sent_ms=first_sent_ms,
        )
        self._items.append(internal_pb2.HostItem(turn=turn))
        self._wake.set()
        return future

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        if self.alive:
            note = internal_pb2.Notify(
                bot=bot, match_id=match_id, message=payload, accepted=accepted
            )
            self._items.append(internal_pb2.HostItem(notify=note))
            self._wake.set()

    def forget(self, key: Key) -> None:
        self.pending.pop(key, None)

    async def _write_loop(self) -> None:
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                while self._items:
                    batch, self._items = self._items, []
                    await bounded(
                        self._call.write(internal_pb2.HostBatch(items=batch)),
                        LINK_WRITE_TIMEOUT_S,
                    )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.fail(f"write failed: {exc!r}")

    async def _read_loop(self) -> None:
        try:
            while True:
                batch = await self._call.read()
                if batch is grpc.aio.EOF:
                    self.fail("the referee ended the stream")
                    return
                for reply in batch.replies:
                    future = self.pending.pop((reply.match_id, reply.attempt, reply.seq), None)
                    if future is not None and not future.done():
                        future.set_result(reply)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.fail(f"{exc!r}"[:300])

    def fail(self, why: str) -> None:
        if not self.alive:
            return
        self.alive = False
        log.warning("link to referee %s (%s) lost: %s", self.referee, self.address, why)
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(LinkLost(f"link to referee {self.referee} lost: {why}"))
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        with contextlib.suppress(Exception):
            self._call.cancel()
        self._closer = asyncio.ensure_future(self._channel.close())
        self._on_lost(self)

    async def close(self) -> None:
        self.alive = False
        for task in self._tasks:
            task.cancel()
        with contextlib.suppress(Exception):
            self._call.cancel()
        await self._channel.close()


@dataclass(slots=True)
class LocalReply:
    """A reply of the referee's ``Hub`` to a turn of a co-hosted match (the fields of
    ``internal_pb2.Reply`` the match reads)."""

    kind: int
    action: str
    sent_ms: float
    received_ms: float
    fallback: str = ""
    cpu_ms: float | None = None


TurnReply = internal_pb2.Reply | LocalReply
"""What a turn's future gets: the referee's reply over the internal stream, or the
co-hosting referee's :class:`LocalReply`."""


def cpu_ms_of(reply: TurnReply) -> float | None:
    """The CPU time a metered (hosted) bot's sandbox used on the request ``reply``
    answers (``Reply.cpu_ms``), or None when the referee did not meter it."""
    if isinstance(reply, LocalReply):
        return reply.cpu_ms
    return float(reply.cpu_ms) if reply.HasField("cpu_ms") else None


class LocalLink:
    """The link of a host running inside a referee's process to that referee: turns go to
    its ``Hub`` as calls (no serialisation, no stream, no task per decision) and the Hub's
    replies resolve their futures directly. It is also the Hub's reply sink
    (``referee.gateway.relay.ReplySink``) for those turns."""

    def __init__(self, hub: LocalHub, on_lost: Callable[[LocalLink], None]) -> None:
        self.hub = hub
        self.referee = hub.config.referee_id
        self.address = "in-process"
        self.alive = True
        self.closed = False
        self.pending: dict[Key, asyncio.Future[TurnReply]] = {}
        self._on_lost = on_lost

    def turn(
        self,
        bot: str,
        key: Key,
        payload: bytes,
        limit_ms: float,
        expires_ms: float,
        first_sent_ms: float = 0.0,
    ) -> asyncio.Future[TurnReply]:
        future = open_turn(self, key)
        if future.done():
            return future
        self.hub.submit_turn(self, bot, key, payload, limit_ms, expires_ms, first_sent_ms)
        return future

    def reply(
        self,
        key: Key,
        kind: int,  # a referee.gateway.relay.ReplyKind
        action: str = "",
        sent_ms: float = 0.0,
        received: float = 0.0,
        fallback: str = "",
        cpu_ms: float | None = None,
    ) -> None:
        future = self.pending.pop(key, None)
        if future is not None and not future.done():
            future.set_result(LocalReply(int(kind), action, sent_ms, received, fallback, cpu_ms))

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        if self.alive:
            self.hub.notify_bot(bot, match_id, payload, accepted)

    def forget(self, key: Key) -> None:
        self.pending.pop(key, None)

    def fail(self, why: str) -> None:
        if not self.alive:
            return
        self.alive = False
        self.closed = True
        log.warning("in-process link to referee %s ended: %s", self.referee, why)
        self.hub.forget_link(self)
        pending, self.pending = self.pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(LinkLost(f"link to referee {self.referee} lost: {why}"))
        self._on_lost(self)

    async def close(self) -> None:
        self.fail("the match host stopped")


Lookup = Callable[[str], Awaitable[dict[str, str]]]


class Router:
    """Where each bot is (cached from the directory) and one link per referee."""

    def __init__(
        self,
        secret: str,
        lookup: Lookup,
        root_certificates: bytes | None = None,
        local: LocalHub | None = None,
    ) -> None:
        self.secret = secret
        self.lookup = lookup
        self.root_certificates = root_certificates
        self.local = local  # the Hub of the referee this host runs in, if any
        self.local_referee = local.config.referee_id if local is not None else ""
        self.links: dict[str, Link] = {}
        self.routes: dict[str, Route] = {}
        self.quarantine: dict[str, float] = {}  # referee -> ms until it may be dialled again
        # bot -> notes waiting for a route: (match_id, payload, a plain accepted result)
        self.held: dict[str, list[tuple[str, bytes, bool]]] = {}
        self.last_referee: dict[str, str] = {}  # bot -> the referee it was last routed to
        self.lost_at: dict[str, float] = {}  # referee -> when its link failed or it drained
        self.lookups = 0

    def excused(self, bot: str, within_ms: float) -> bool:
        """True when the bot's last referee failed or drained within ``within_ms``: its
        absence now is the platform's doing (its bots are reconnecting), not the bot's."""
        referee = self.last_referee.get(bot)
        lost = self.lost_at.get(referee, float("-inf")) if referee is not None else float("-inf")
        return now_ms() - lost < within_ms

    def _lost(self, link: Link) -> None:
        if self.links.get(link.referee) is link:
            del self.links[link.referee]
        self.lost_at[link.referee] = now_ms()
        self.quarantine[link.referee] = now_ms() + QUARANTINE_MS
        for bot in [b for b, r in self.routes.items() if r.referee == link.referee]:
            del self.routes[bot]

    def avoid(self, referee: str, for_ms: float = QUARANTINE_MS) -> None:
        """Do not route to ``referee`` for a while (it is draining)."""
        self.lost_at[referee] = now_ms()
        self.quarantine[referee] = now_ms() + for_ms
        for bot in [b for b, r in self.routes.items() if r.referee == referee]:
            del self.routes[bot]

    def forget(self, bot: str) -> None:
        self.routes.pop(bot, None)

    def cached(self, bot: str) -> Link | None:
        route = self.routes.get(bot)
        if route is None:
            return None
        link = self.links.get(route.referee)
        if link is None or not link.alive:
            return None
        notes = self.held.pop(bot, None)
        for match_id, payload, accepted in notes or ():
            link.notify(bot, match_id, payload, accepted)
        return link

    def _link(self, route: Route) -> Link:
        link = self.links.get(route.referee)
        if link is None or not link.alive:
            if self.local is not None and route.referee == self.local_referee:
                link = LocalLink(self.local, self._lost)
            else:
                link = RefereeLink(
                    route.referee, route.link, self.secret, self._lost, self.root_certificates
                )
            log.info("link to referee %s: %s", route.referee, link.address)
            self.links[route.referee] = link
        return link

    async def route(self, bot: str, until_ms: float) -> Link | None:
        """A live link to a referee holding a stream of ``bot``; None if the directory
        shows none before ``until_ms``."""
        while True:
            link = self.cached(bot)
            if link is not None:
                return link
            self.routes.pop(bot, None)
            now = now_ms()
            try:
                entries = await self.lookup(bot)
                self.lookups += 1
            except Exception as exc:  # Redis down: keep waiting, the deadline still holds
                log.warning("reading the directory for %s failed: %s", bot, exc)
                entries = {}
            usable = [
                r for r in cluster.routes(entries, now) if self.quarantine.get(r.referee, 0) <= now
            ]
            if usable:
                # Prefer the referee this host runs in (no internal stream), then one this
                # host already has a link to, then the newest stream.
                usable.sort(
                    key=lambda r: (
                        r.referee != self.local_referee,
                        r.referee not in self.links,
                        -r.since_ms,
                    )
                )
                route = usable[0]
                self.routes[bot] = route
                self.last_referee[bot] = route.referee
                self._link(route)
                link = self.cached(bot)  # sends the notes held for the bot first
                assert link is not None
                return link
            if now >= until_ms:
                return None
            await asyncio.sleep(min(ROUTE_POLL_S, max(0.0, (until_ms - now) / 1000.0)))

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        """A notification goes to the bot's cached referee; with no route yet it is held
        and sent before the bot's next turn (best effort: a bot that never comes back
        never gets it). ``accepted``: the payload is a plain ACCEPTED ActionResult, which
        the referee drops for streams that declined those (``Hello.skip_accepted_results``)."""
        link = self.cached(bot)
        if link is not None:
            link.notify(bot, match_id, payload, accepted)
            return
        notes = self.held.setdefault(bot, [])
        notes.append((match_id, payload, accepted))
        del notes[:-HELD_NOTES]

    async def close(self) -> None:
        links, self.links = list(self.links.values()), {}
        for link in links:
            with contextlib.suppress(Exception):
                await link.close()
