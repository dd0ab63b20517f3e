"""Errors of the gateway layer; each names its status (``status``, see ``referee.errors``).

Hierarchy (beside ``referee.errors``)::

    ArenaError
    ├── AuthError                       UNAUTHENTICATED
    │   └── ActingForAnotherBot         PERMISSION_DENIED
    └── GatewayError
        ├── MalformedMessage            INVALID_ARGUMENT
        ├── ProtocolError               FAILED_PRECONDITION (order, version)
        ├── TooManyStreams              RESOURCE_EXHAUSTED (ALREADY_EXISTS when the limit is 1)
        ├── SlowReader                  RESOURCE_EXHAUSTED (a write did not complete in time)
        ├── OutboxFull                  RESOURCE_EXHAUSTED (too much queued for a stream)
        ├── Flooding                    RESOURCE_EXHAUSTED (too many messages that answer nothing)
        └── Draining                    UNAVAILABLE (so is redis.RedisError: storage down)
"""

from __future__ import annotations

from referee.errors import ArenaError, AuthError


class GatewayError(ArenaError):
    """A bot stream broke the protocol or a limit; the stream is closed with a status."""

    status = "FAILED_PRECONDITION"


class MalformedMessage(GatewayError):
    """A message that does not parse or lacks required fields."""

    status = "INVALID_ARGUMENT"


class ProtocolError(GatewayError):
    """A message out of order (Action before Hello, a second Hello) or a wrong version."""

    status = "FAILED_PRECONDITION"


class TooManyStreams(GatewayError):
    """The bot already holds the most streams allowed (``--max-streams-per-bot``)."""

    status = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit
        if limit <= 1:
            self.status = "ALREADY_EXISTS"


class SlowReader(GatewayError):
    """A write to the bot did not complete within the write bound: the bot does not read
    its stream (or reads it with a tiny flow-control window). Only its own stream ends."""

    status = "RESOURCE_EXHAUSTED"


class OutboxFull(GatewayError):
    """More is queued for a bot's stream than ``referee.limits.Limits.outbox_bytes`` or
    ``outbox_messages`` allow: the bot reads slower than it makes the referee write."""

    status = "RESOURCE_EXHAUSTED"


class Flooding(GatewayError):
    """A stream sent more messages that answer nothing (pings, actions for no request it
    holds) than the referee's junk limit allows; it ends, and its bot opens no stream here
    for a while (referee.gateway.hub.JUNK_PER_S, FLOOD_COOLDOWN_S)."""

    status = "RESOURCE_EXHAUSTED"


class Draining(GatewayError):
    """The referee is shutting down; connect again (to it or another referee)."""

    status = "UNAVAILABLE"


class ActingForAnotherBot(AuthError):
    """An Action for a decision that belongs to another bot."""

    status = "PERMISSION_DENIED"
