"""Every error the platform raises is mapped to a status in one place
(``referee.errors.status_name``): none comes out as INTERNAL, the way httpx tests that every
lower-layer exception is mapped."""

from __future__ import annotations

import importlib
import pkgutil

import grpc  # type: ignore[import-untyped]
import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

import referee
import workers
from referee.errors import INTERNAL, ArenaError, ConflictError, StateConflict, status_name
from referee.games.errors import InvalidRulesError, MatchStateError, RulesError
from referee.gateway.errors import TooManyStreams
from referee.gateway.status import status_of


def _all_subclasses(base: type[BaseException]) -> list[type[BaseException]]:
    found: list[type[BaseException]] = []
    todo = [base]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


def _every_error_class() -> list[type[BaseException]]:
    for package in (referee, workers):
        for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
    classes = _all_subclasses(ArenaError)[1:] + _all_subclasses(RulesError)
    assert len(classes) >= 15, "the walk found the error classes"
    return classes


def _instance(cls: type[BaseException]) -> BaseException:
    if issubclass(cls, TooManyStreams):
        return cls("too many streams", limit=4)
    return cls("what was wrong")


@pytest.mark.parametrize("cls", _every_error_class(), ids=lambda cls: cls.__qualname__)
def test_no_platform_error_maps_to_internal(cls: type[BaseException]) -> None:
    name = status_name(_instance(cls))
    assert name != INTERNAL, f"{cls.__module__}.{cls.__qualname__} would be INTERNAL"
    assert status_of(_instance(cls)) == grpc.StatusCode[name]


def test_the_documented_statuses() -> None:
    """StateConflict says FAILED_PRECONDITION (not its parent's ALREADY_EXISTS), rules the
    validator refuses are INVALID_ARGUMENT (not INTERNAL), storage down is UNAVAILABLE."""
    assert status_of(StateConflict("season s is finished")) == grpc.StatusCode.FAILED_PRECONDITION
    assert status_of(ConflictError("name taken")) == grpc.StatusCode.ALREADY_EXISTS
    assert status_of(InvalidRulesError("ante must be > 0")) == grpc.StatusCode.INVALID_ARGUMENT
    assert status_of(MatchStateError("over")) == grpc.StatusCode.FAILED_PRECONDITION
    assert status_of(RedisConnectionError("down")) == grpc.StatusCode.UNAVAILABLE
    assert status_of(TooManyStreams("one", limit=1)) == grpc.StatusCode.ALREADY_EXISTS
    assert status_of(TooManyStreams("four", limit=4)) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert status_of(KeyError("a bug")) == grpc.StatusCode.INTERNAL
