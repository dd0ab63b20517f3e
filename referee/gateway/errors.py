"""Errors of the gateway layer; :mod:`referee.gateway.status` maps them to status codes.

Hierarchy (beside ``referee.errors``)::

    ArenaError
    ├── AuthError                       UNAUTHENTICATED
    │   └── ActingForAnotherBot         PERMISSION_DENIED
    └── GatewayError
        ├── MalformedMessage            INVALID_ARGUMENT
        ├── ProtocolError               FAILED_PRECONDITION (order, version)
        ├── TooManyStreams              RESOURCE_EXHAUSTED (ALREADY_EXISTS when the limit is 1)
        ├── SlowReader                  RESOURCE_EXHAUSTED (a write did not complete in time)
        └── Draining                    UNAVAILABLE (so is redis.RedisError: storage down)
"""

from __future__ import annotations

from referee.errors import ArenaError, AuthError


class GatewayError(ArenaError):
    """A bot stream broke the protocol or a limit; the stream is closed with a status."""


class MalformedMessage(GatewayError):
    """A message that does not parse or lacks required fields."""


class ProtocolError(GatewayError):
    """A message out of order (Action before Hello, a second Hello) or a wrong version."""


class TooManyStreams(GatewayError):
    """The bot already holds the most streams allowed (``--max-streams-per-bot``)."""

    def __init__(self, message: str, *, limit: int) -> None:
        super().__init__(message)
        self.limit = limit


class SlowReader(GatewayError):
    """A write to the bot did not complete within the write bound: the bot does not read
    its stream (or reads it with a tiny flow-control window). Only its own stream ends."""


class Draining(GatewayError):
    """The referee is shutting down; connect again (to it or another referee)."""


class ActingForAnotherBot(AuthError):
    """An Action for a decision that belongs to another bot."""
