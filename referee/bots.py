"""The bot registry: plain functions over Redis (keys.BOTS, keys.bot, keys.TOKEN_INDEX).

A bot is a name, an owner and a bearer token. The token is random, shown once by
:func:`register` / :func:`rotate_token`, and stored only as its SHA-256: the index
``keys.TOKEN_INDEX`` maps the hash to the bot name, so authentication is one lookup.
Revoking a bot removes its hash from the index and marks it revoked; rotating its token
issues a new one (and re-admits a revoked bot). Both publish the bot's name on
``keys.TOKEN_EVENTS``: every referee then ends the streams opened with a token that no longer
authenticates (``referee.gateway.auth.TokenWatch``).

Synchronous functions take a ``redis.Redis``; :func:`authenticate_async` is the one the
gateway calls per stream, on a ``redis.asyncio.Redis``.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass

import redis
import redis.asyncio

from referee import keys
from referee.errors import AuthError, ConfigError, ConflictError, NotFoundError

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]{1,40}$")
TOKEN_PREFIX = "arena_"
STREAM_STALE_MS = 30_000
"""A ``bot_streams`` entry whose ``seen_ms`` is older than this belongs to a dead referee."""


@dataclass(frozen=True, slots=True)
class BotRecord:
    name: str
    owner: str
    description: str
    revoked: bool
    created_at: int  # Unix seconds
    connected_streams: int


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def validate_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise ConfigError(
            f"bad bot name {name!r}: use 1-40 characters of letters, digits, '-', '_' and '.'"
        )
    return name


def register(client: redis.Redis, name: str, owner: str = "", description: str = "") -> str:
    """Register a new bot and return its token (the only time it is shown)."""
    validate_name(name)
    if not client.sadd(keys.BOTS, name):
        raise ConflictError(
            f"bot {name!r} is already registered: choose another name, or use "
            f"`arena bot rotate-token {name}` to get a new token for it"
        )
    token = new_token()
    digest = hash_token(token)
    pipe = client.pipeline(transaction=True)
    pipe.hset(
        keys.bot(name),
        mapping={
            "owner": owner,
            "description": description,
            "token_sha256": digest,
            "revoked": "0",
            "created_at": str(int(time.time())),
        },
    )
    pipe.hset(keys.TOKEN_INDEX, digest, name)
    pipe.publish(keys.TOKEN_EVENTS, name)
    pipe.execute()
    return token


def _require(client: redis.Redis, name: str) -> dict[str, str]:
    data: dict[str, str] = {_text(k): _text(v) for k, v in client.hgetall(keys.bot(name)).items()}
    if not data:
        raise NotFoundError(f"no bot named {name!r}: `arena bot list` shows the registered bots")
    return data


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


def revoke(client: redis.Redis, name: str) -> None:
    """Revoke a bot's token: new streams are refused with UNAUTHENTICATED."""
    data = _require(client, name)
    pipe = client.pipeline(transaction=True)
    if data.get("token_sha256"):
        pipe.hdel(keys.TOKEN_INDEX, data["token_sha256"])
    if data.get("hosted_token_sha256"):
        pipe.hdel(keys.TOKEN_INDEX, data["hosted_token_sha256"])
    pipe.hset(
        keys.bot(name), mapping={"revoked": "1", "token_sha256": "", "hosted_token_sha256": ""}
    )
    pipe.publish(keys.TOKEN_EVENTS, name)
    pipe.execute()


def rotate_token(client: redis.Redis, name: str) -> str:
    """Replace a bot's token (the old one stops working) and return the new one."""
    data = _require(client, name)
    token = new_token()
    digest = hash_token(token)
    pipe = client.pipeline(transaction=True)
    if data.get("token_sha256"):
        pipe.hdel(keys.TOKEN_INDEX, data["token_sha256"])
    pipe.hset(keys.bot(name), mapping={"revoked": "0", "token_sha256": digest})
    pipe.hset(keys.TOKEN_INDEX, digest, name)
    pipe.publish(keys.TOKEN_EVENTS, name)
    pipe.execute()
    return token


def hosted_token(client: redis.Redis, name: str) -> str:
    """A new token for the platform's own run of hosted bot ``name`` (the bot supervisor's;
    referee.hosting.supervisor), replacing the previous one of that kind. The author's token
    (``register``, ``rotate_token``) stays valid; ``revoke`` ends both."""
    data = _require(client, name)
    if data.get("revoked") == "1":
        raise AuthError(f"bot {name!r} was revoked: it is not run")
    token = new_token()
    digest = hash_token(token)
    pipe = client.pipeline(transaction=True)
    if data.get("hosted_token_sha256"):
        pipe.hdel(keys.TOKEN_INDEX, data["hosted_token_sha256"])
    pipe.hset(keys.bot(name), "hosted_token_sha256", digest)
    pipe.hset(keys.TOKEN_INDEX, digest, name)
    pipe.execute()
    return token


def count_streams(entries: dict[str, str], now_ms: float) -> int:
    """Live entries of a ``keys.bot_streams`` hash (those seen recently)."""
    live = 0
    for raw in entries.values():
        try:
            seen = float(json.loads(raw).get("seen_ms", 0))
        except (ValueError, AttributeError):
            continue
        if now_ms - seen <= STREAM_STALE_MS:
            live += 1
    return live


def list_bots(client: redis.Redis, after: str = "", limit: int | None = None) -> list[BotRecord]:
    """The registered bots, sorted by name, with their open streams right now: every one,
    or the first ``limit`` whose names sort after ``after`` (one page)."""
    names = sorted(_text(n) for n in client.smembers(keys.BOTS))
    if after:
        names = names[bisect.bisect_right(names, after) :]
    if limit is not None:
        names = names[:limit]
    now = time.time() * 1000.0
    records = []
    for name in names:
        data = {_text(k): _text(v) for k, v in client.hgetall(keys.bot(name)).items()}
        streams = {_text(k): _text(v) for k, v in client.hgetall(keys.bot_streams(name)).items()}
        records.append(
            BotRecord(
                name=name,
                owner=data.get("owner", ""),
                description=data.get("description", ""),
                revoked=data.get("revoked") == "1",
                created_at=int(data.get("created_at", "0") or 0),
                connected_streams=count_streams(streams, now),
            )
        )
    return records


def authenticate(client: redis.Redis, token: str) -> str:
    """The bot name a token belongs to; :class:`AuthError` when it is unknown or revoked."""
    name = client.hget(keys.TOKEN_INDEX, hash_token(token))
    if name is None:
        raise AuthError(_UNKNOWN_TOKEN)
    return _text(name)


async def authenticate_async(client: redis.asyncio.Redis, token: str) -> str:
    """:func:`authenticate` for the gateway's asyncio Redis client."""
    name = await client.hget(keys.TOKEN_INDEX, hash_token(token))
    if name is None:
        raise AuthError(_UNKNOWN_TOKEN)
    return _text(name)


_UNKNOWN_TOKEN = (
    "unknown or revoked bot token: use the token `arena bot register NAME` or "
    "`arena bot rotate-token NAME` printed"
)
