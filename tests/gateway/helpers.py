"""Helpers of the gateway tests: a referee in-process, raw bot streams, a match host's link."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import time
import zlib
from collections.abc import AsyncIterator
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]
import redis
import redis.asyncio

from arena.v1 import bot_pb2, bot_pb2_grpc, internal_pb2
from arena_sdk.observation import Observation
from referee import bots, cluster, keys
from referee.gateway.server import RefereeConfig, RefereeServer
from referee.match.messages import Notification, TurnMessage, now_ms
from referee.protocol import convert
from sample_bots.sdk import channel_options
from workers.link import LinkLost, Router

ALL_CARDS = [r + s for s in "CDHS" for r in "A23456789TJQK"]


@contextlib.asynccontextmanager
async def running_referee(redis_url: str, **options: Any) -> AsyncIterator[RefereeServer]:
    """A referee on a free loopback port (no HTTP, no seasons hooks), stopped afterwards."""
    options.setdefault("drain_grace_s", 0.5)
    options.setdefault("port", 0)
    options.setdefault("cluster_secret", os.environ[cluster.SECRET_ENV])
    config = RefereeConfig(redis_url=redis_url, http_port=0, hooks=False, **options)
    server = RefereeServer(config)
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


def register(client: redis.Redis, name: str, owner: str = "") -> str:
    return bots.register(client, name, owner)


def deal_hands(num_players: int, seed: int) -> list[list[str]]:
    """Distinct hands for every seat (so a leak of another seat's cards is detectable)."""
    import random

    cards = [c for c in ALL_CARDS if c not in PUBLIC_CARDS]
    random.Random(seed).shuffle(cards)
    size = len(cards) // num_players
    return [sorted(cards[i * size : (i + 1) * size]) for i in range(num_players)]


def sevens_observation(seat: int, hands: list[list[str]]) -> Observation:
    n = len(hands)
    return {
        "game": "sevens",
        "preset": "sevens",
        "rules": {"name": "sevens", "start_card": "7D"},
        "seat": seat,
        "num_players": n,
        "deal_index": 0,
        "num_deals": 1,
        "dealer": 0,
        "to_act": seat,
        "hand": hands[seat],
        "hand_sizes": [len(h) for h in hands],
        "totals": [0] * n,
        "unit": "chips",
        "history": [{"seat": 0, "kind": "play", "action": "7D"}, {"seat": 1, "kind": "pass"}],
        "table": {"C": [], "D": ["7D"], "H": [], "S": []},
        "pot": 4,
        "passes": [0, 1, 0, 0][:n],
        "free_passes_left": [0] * n,
        "eliminated": [False] * n,
        "skip_next": [False] * n,
    }


def turn_message(
    bot: str,
    match_id: str,
    seq: int,
    *,
    seat: int = 0,
    hands: list[list[str]] | None = None,
    attempt: int = 1,
    move_ms: int = 5000,
    bank_ms: int = 1000,
) -> TurnMessage:
    hands = hands or deal_hands(4, seq)
    observation = sevens_observation(seat, hands)
    return {
        "type": "turn",
        "bot": bot,
        "match_id": match_id,
        "attempt": attempt,
        "seq": seq,
        "seat": seat,
        "season": "s1",
        "observation": observation,
        "legal_actions": [*sorted(hands[seat])[:3], "pass"],
        "clock": {"move_ms": move_ms, "bank_ms": bank_ms, "grace_ms": 50},
    }


class FakeHost:
    """A match host's side of the internal stream (``workers.link``), driven by hand."""

    def __init__(
        self, redis_url: str, secret: str | None = None, root_certificates: bytes | None = None
    ) -> None:
        self.client = redis.asyncio.Redis.from_url(redis_url, decode_responses=True)
        secret = secret or os.environ[cluster.SECRET_ENV]
        self.router = Router(secret, self._lookup, root_certificates)

    async def _lookup(self, bot: str) -> dict[str, str]:
        entries = await self.client.hgetall(keys.bot_streams(bot))
        return {str(k): str(v) for k, v in entries.items()}

    async def send(
        self,
        turn: TurnMessage,
        *,
        limit_ms: float | None = None,
        expires_in_ms: float = 30_000,
        first_sent_ms: float = 0.0,
        route_s: float = 5.0,
    ) -> asyncio.Future[Any]:
        """Send ``turn`` to its bot's referee; the future gets the one Reply."""
        link = await self.router.route(turn["bot"], now_ms() + route_s * 1000.0)
        assert link is not None, f"no stream of {turn['bot']} in the directory"
        clock = turn["clock"]
        limit = limit_ms if limit_ms is not None else sum(clock.values())  # type: ignore[arg-type]
        payload = convert.turn_to_proto(turn).SerializeToString()
        key = (turn["match_id"], turn["attempt"], turn["seq"])
        return link.turn(
            turn["bot"], key, payload, float(limit), now_ms() + expires_in_ms, first_sent_ms
        )

    async def ask(self, turn: TurnMessage, timeout: float = 10.0, **kw: Any) -> Any:
        """Send ``turn`` and wait for its reply, sending it again when a link was lost (a
        referee that went away), as a match host does."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                reply = await asyncio.wait_for(await self.send(turn, **kw), timeout)
            except LinkLost:
                continue
            if reply.kind not in (internal_pb2.Reply.NOT_HERE, internal_pb2.Reply.BOT_LEFT):
                return reply
            self.router.forget(turn["bot"])
            await asyncio.sleep(0.05)
        raise AssertionError(f"no referee of {turn['bot']} answered within {timeout} s")

    async def notify(self, message: Notification) -> None:
        link = await self.router.route(message["bot"], now_ms() + 5000.0)
        assert link is not None
        payload = convert.notification_to_proto(message).SerializeToString()
        link.notify(message["bot"], message["match_id"], payload)

    async def close(self) -> None:
        await self.router.close()
        await self.client.aclose()


def hello(concurrency: int = 4, version: int = 1) -> Any:
    return bot_pb2.BotMessage(
        hello=bot_pb2.Hello(
            protocol_version=version,
            bot_version="test 1.0",
            games=["sevens"],
            max_concurrent_matches=concurrency,
        )
    )


def action(match_id: str, seq: int, text: str, attempt: int = 1) -> Any:
    return bot_pb2.BotMessage(
        action=bot_pb2.Action(match_id=match_id, attempt=attempt, seq=seq, action=text)
    )


class RawBot:
    """A hand-driven bot stream for protocol tests."""

    def __init__(
        self,
        port: int,
        token: str | None,
        *,
        credentials: Any = None,
        checker: LeakChecker | None = None,
        options: list[tuple[str, int]] | None = None,
    ) -> None:
        self.checker = checker
        target = f"localhost:{port}" if credentials is not None else f"127.0.0.1:{port}"
        opts = channel_options() if options is None else options
        if credentials is not None:
            self.channel = grpc.aio.secure_channel(target, credentials, options=opts)
        else:
            self.channel = grpc.aio.insecure_channel(target, options=opts)
        metadata = () if token is None else (("authorization", f"Bearer {token}"),)
        self.call = bot_pb2_grpc.BotGatewayStub(self.channel).Play(metadata=metadata)

    async def send(self, message: Any) -> None:
        await self.call.write(message)

    async def read(self, timeout: float = 10.0) -> Any:
        """The next message; every TurnRequest is checked for leaked cards."""
        message = await asyncio.wait_for(self.call.read(), timeout)
        is_turn = message is not grpc.aio.EOF and message.WhichOneof("msg") == "turn"
        if is_turn and self.checker is not None:
            self.checker.check(message.turn)
        return message

    async def connect(self, concurrency: int = 4) -> Any:
        await self.send(hello(concurrency))
        first = await self.read()
        assert first.WhichOneof("msg") == "welcome", first
        return first.welcome

    async def read_kind(self, kind: str, timeout: float = 10.0) -> Any:
        """Read until a message of ``kind``; return its payload."""
        while True:
            message = await self.read(timeout)
            assert message is not grpc.aio.EOF, f"stream ended while waiting for {kind}"
            if message.WhichOneof("msg") == kind:
                return getattr(message, kind)

    async def status(self, timeout: float = 10.0) -> grpc.StatusCode:
        """Read to the end; the final status code."""
        with contextlib.suppress(grpc.aio.AioRpcError):
            while await self.read(timeout) is not grpc.aio.EOF:
                pass
        code: grpc.StatusCode = await self.call.code()
        return code

    async def close(self) -> None:
        self.call.cancel()
        await self.channel.close()


CARD_RE = re.compile(r"(?<![0-9A-Za-z])[2-9TJQKA][CDHS](?![0-9A-Za-z])")
PUBLIC_CARDS = {"7D"}  # on the table and in the history of every test observation


class LeakChecker:
    """Remembers the hands of every pushed turn; checks each relayed request against them.

    docs/OBSERVATIONS.md: no message to a bot carries another seat's private cards."""

    def __init__(self) -> None:
        self.pushed: dict[tuple[str, int, int], tuple[int, list[list[str]]]] = {}
        self.checked = 0

    def turn(self, bot: str, match_id: str, seq: int, **kw: Any) -> TurnMessage:
        """A turn message (see :func:`turn_message`) whose hands are remembered."""
        hands = kw.pop("hands", None) or deal_hands(4, zlib.crc32(f"{match_id}/{seq}".encode()))
        message = turn_message(bot, match_id, seq, hands=hands, **kw)
        self.pushed[(match_id, message["attempt"], seq)] = (message["seat"], hands)
        return message

    def check(self, request: Any, text: str | None = None) -> None:
        """``request`` is a TurnRequest proto; ``text`` everything the bot got for it."""
        key = (request.match_id, request.attempt, request.seq)
        seat, hands = self.pushed[key]
        assert request.seat == seat and request.observation.seat == seat
        assert list(request.observation.hand) == hands[seat]
        seen = set(CARD_RE.findall(text if text is not None else str(request)))
        others = {c for i, h in enumerate(hands) if i != seat for c in h} - PUBLIC_CARDS
        assert not (seen & others), f"cards of other seats relayed: {sorted(seen & others)}"
        self.checked += 1
