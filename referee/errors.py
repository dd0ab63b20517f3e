"""Exceptions of the referee service layer, and the one table that maps every error the
platform raises to the status a caller sees (rules errors live in ``referee.games.errors``).

Hierarchy, with the gRPC status each answers with (``status``)::

    ArenaError (Exception)                         INTERNAL (never raised bare)
    ├── EmbeddedRedisError                         UNAVAILABLE
    ├── ConfigError (ValueError)                   INVALID_ARGUMENT: a bad flag, TOML file or spec
    ├── NotFoundError (KeyError)                   NOT_FOUND: an unknown bot, season or match
    ├── SealedError                                FAILED_PRECONDITION: a match whose boards
    │                                              are still played at another table
    ├── AuthError                                  UNAUTHENTICATED: bad, missing or revoked token
    │   └── ActingForAnotherBot (gateway)          PERMISSION_DENIED
    ├── LimitExceeded                              RESOURCE_EXHAUSTED: over a rate or a cap
    │                                              of ``referee.limits`` (retry_after_s)
    ├── RecordStoreError                           UNAVAILABLE: the record store cannot be
    │   │                                          reached (``referee.records``): try again
    │   ├── RecordMissing                          DATA_LOSS: a record the commit names is gone
    │   └── RecordCorrupt                          DATA_LOSS: a record fails its digest or replay
    ├── ConflictError                              ALREADY_EXISTS: a name already taken
    │   └── StateConflict                          FAILED_PRECONDITION: a state change that
    │                                              does not apply to the current state
    └── GatewayError (referee.gateway.errors)      the bot-stream errors, each with its own

    RulesError (ValueError, referee.games.errors)  INVALID_ARGUMENT
    ├── InvalidRulesError, CardParseError          INVALID_ARGUMENT
    └── MatchStateError                            FAILED_PRECONDITION
    redis.RedisError                               UNAVAILABLE: storage down, try again

:func:`status_name` is the mapping; ``referee.gateway.status`` turns the name into a gRPC
code and the CLI prints the message. ``tests/foundation/test_errors.py`` walks every
subclass and fails if one would come out as INTERNAL.
"""

from __future__ import annotations

from redis.exceptions import RedisError

from referee.games.errors import MatchStateError, RulesError

INTERNAL = "INTERNAL"


class ArenaError(Exception):
    """Base class of the referee's own errors; ``status`` is the gRPC status name a call
    ends with because of it (each subclass sets its own)."""

    status: str = INTERNAL


class EmbeddedRedisError(ArenaError):
    """The embedded redis-server could not be found, started or stopped."""

    status = "UNAVAILABLE"


class ConfigError(ArenaError, ValueError):
    """A configuration, flag or spec that is refused; the message says what would work."""

    status = "INVALID_ARGUMENT"


class NotFoundError(ArenaError, KeyError):
    """An unknown bot, season or match."""

    status = "NOT_FOUND"

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "not found"


class SealedError(ArenaError):
    """A match's cards and moves asked for while they are sealed: its season runs and a
    table still plays its boards (``referee.seasons.embargo``); the message says when they
    open."""

    status = "FAILED_PRECONDITION"


class AuthError(ArenaError):
    """Authentication or authorization failed."""

    status = "UNAUTHENTICATED"


class RecordStoreError(ArenaError):
    """The record store (``referee.records``) cannot be reached or written now."""

    status = "UNAVAILABLE"


class RecordMissing(RecordStoreError):
    """A record that a commit names is not in its store."""

    status = "DATA_LOSS"


class RecordCorrupt(RecordStoreError):
    """A stored record whose bytes differ from the committed digest, or that does not
    replay to its committed result."""

    status = "DATA_LOSS"


class ConflictError(ArenaError):
    """A name already taken or a state change that does not apply now."""

    status = "ALREADY_EXISTS"


class StateConflict(ConflictError):
    """A state change that does not apply to the season's current state (starting a
    finished season, pausing one that is not running)."""

    status = "FAILED_PRECONDITION"


class LimitExceeded(ArenaError):
    """A client asked for more than its share (a rate, a number of open streams;
    ``referee.limits``); ``retry_after_s`` says when to try again."""

    status = "RESOURCE_EXHAUSTED"

    def __init__(self, message: str, *, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def status_name(exc: BaseException) -> str:
    """The name of the gRPC status (``grpc.StatusCode[name]``) that ``exc`` maps to:
    ``INTERNAL`` only for errors that are not the platform's own (bugs)."""
    if isinstance(exc, ArenaError):
        return exc.status
    if isinstance(exc, MatchStateError):
        return "FAILED_PRECONDITION"
    if isinstance(exc, RulesError):
        return "INVALID_ARGUMENT"
    if isinstance(exc, RedisError):
        return "UNAVAILABLE"
    return INTERNAL
