"""Errors -> gRPC status codes: the names of :func:`referee.errors.status_name` as codes."""

from __future__ import annotations

from typing import NoReturn

import grpc  # type: ignore[import-untyped]
from redis.exceptions import RedisError

from referee.errors import status_name


def status_of(exc: BaseException) -> grpc.StatusCode:
    """The status code a stream or call ends with because of ``exc`` (the table is
    :func:`referee.errors.status_name`)."""
    return grpc.StatusCode[status_name(exc)]


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
