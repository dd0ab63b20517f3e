"""The bytes of a bot's ``Play`` stream: the safe parse of what a bot sends, the
serialization of what it is sent, and the framing of several turns in one ``TurnBatch``
without decoding them (the hosts encode turns; the relay never decodes them)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from arena.v1 import bot_pb2, internal_pb2

log = logging.getLogger(__name__)

PROTOCOL_VERSION = 1
MAX_ACTION_CHARS = 200
MAX_BATCH_TURNS = 32
MAX_BATCH_BYTES = 32 * 1024
"""A ``TurnBatch`` holds at most this many turns and, unless it holds one, this many bytes
of them (the SDK reads messages of up to 64 KiB; docs/PROTOCOL.md section 4)."""


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


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def ld_key(message: Any, name: str) -> bytes:
    """The key of length-delimited field ``name`` of ``message`` (number, wire type 2)."""
    return varint(message.DESCRIPTOR.fields_by_name[name].number << 3 | 2)


_KEY_TURN = ld_key(bot_pb2.RefereeMessage, "turn")
_KEY_TURNS = ld_key(bot_pb2.RefereeMessage, "turns")
_KEY_BATCH_TURN = ld_key(bot_pb2.TurnBatch, "turns")


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
    return _KEY_TURNS + varint(len(body)) + body
