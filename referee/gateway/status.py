"""Errors -> gRPC status codes, in one place (DESIGN section 5)."""

from __future__ import annotations

from typing import NoReturn

import grpc  # type: ignore[import-untyped]
from redis.exceptions import RedisError

from referee.errors import AuthError, ConfigError, ConflictError, NotFoundError
from referee.gateway.errors import (
    ActingForAnotherBot,
    Draining,
    MalformedMessage,
    ProtocolError,
    SlowReader,
    TooManyStreams,
)


def status_of(exc: BaseException) -> grpc.StatusCode:
    """The status code a stream or call ends with because of ``exc``."""
    if isinstance(exc, ActingForAnotherBot):
        return grpc.StatusCode.PERMISSION_DENIED
    if isinstance(exc, AuthError):
        return grpc.StatusCode.UNAUTHENTICATED
    if isinstance(exc, MalformedMessage | ConfigError):
        return grpc.StatusCode.INVALID_ARGUMENT
    if isinstance(exc, ProtocolError):
        return grpc.StatusCode.FAILED_PRECONDITION
    if isinstance(exc, SlowReader):
        return grpc.StatusCode.RESOURCE_EXHAUSTED
    if isinstance(exc, TooManyStreams):
        if exc.limit <= 1:
            return grpc.StatusCode.ALREADY_EXISTS
        return grpc.StatusCode.RESOURCE_EXHAUSTED
    if isinstance(exc, Draining | RedisError):
        return grpc.StatusCode.UNAVAILABLE
    if isinstance(exc, NotFoundError):
        return grpc.StatusCode.NOT_FOUND
    if isinstance(exc, ConflictError):
        return grpc.StatusCode.ALREADY_EXISTS
    return grpc.StatusCode.INTERNAL


async def abort(context: grpc.aio.ServicerContext[object, object], exc: BaseException) -> NoReturn:
    """End the call with the status ``exc`` maps to and its message."""
    code = status_of(exc)
    if isinstance(exc, RedisError):
        message = f"the platform's storage is unavailable ({exc}); try again shortly"
    elif code == grpc.StatusCode.INTERNAL:
        message = f"internal error: {exc!r}"
    else:
        message = str(exc)
    await context.abort(code, message)
    raise AssertionError("unreachable: context.abort raises")  # pragma: no cover
