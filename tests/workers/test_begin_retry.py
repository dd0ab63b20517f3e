"""A dequeued match waits out a short Redis outage before its attempt starts, instead of
failing its job and leaving the match queued with no job (found by tests/multihost)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import redis

from referee import keys
from referee.games.base import DealSpec
from referee.games.registry import get_game
from workers import queue, runner
from workers.spec import MatchSpec


class Unreachable:
    """The real client, except that its first ``failures`` commands raise as a client
    does while Redis can't be reached."""

    def __init__(self, conn: redis.Redis, failures: int) -> None:
        self.conn = conn
        self.failures = failures

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.conn, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kw: Any) -> Any:
            if self.failures > 0:
                self.failures -= 1
                raise redis.ConnectionError("Error 113 connecting to 198.18.17.2:6379.")
            return attr(*args, **kw)

        return call


def spec() -> MatchSpec:
    rules = get_game("sevens").preset("fan-tan").to_dict()
    return MatchSpec("br-1", "sevens", rules, ("a", "b", "c"), 1, (DealSpec(3),))


def test_the_attempt_starts_once_redis_answers_again(redis_client: redis.Redis) -> None:
    assert queue.enqueue_match(redis_client, spec())
    flaky = Unreachable(redis_client, failures=3)
    begun = runner.start_attempt(flaky, "br-1", "w1")  # type: ignore[arg-type]
    assert begun is not None
    loaded, attempt, redeal = begun
    assert loaded.match_id == "br-1" and attempt == 1 and flaky.failures == 0 and not redeal
    assert redis_client.hget(keys.match_state("br-1"), "state") == "running"


def test_an_outage_longer_than_the_patience_still_raises(
    redis_client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "BEGIN_PATIENCE_S", 0.5)
    assert queue.enqueue_match(redis_client, spec())
    with pytest.raises(redis.ConnectionError):
        runner.start_attempt(Unreachable(redis_client, failures=100), "br-1", "w1")  # type: ignore[arg-type]
    assert redis_client.hget(keys.match_state("br-1"), "state") == "queued"


class LostIncrReply:
    """The real client, except that its first INCR is carried out by Redis and its reply
    lost, as when the network drops between Redis and the host at that moment."""

    def __init__(self, conn: redis.Redis) -> None:
        self.conn = conn
        self.lost = False

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.conn, name)
        if name != "incr" or self.lost:
            return attr

        def incr(*args: Any, **kw: Any) -> Any:
            attr(*args, **kw)
            self.lost = True
            raise redis.TimeoutError("Timeout reading from 198.18.17.2:6379")

        return incr


def test_a_lost_incr_reply_skips_a_number_and_costs_no_re_deal(redis_client: redis.Redis) -> None:
    """A Redis outage that swallows the INCR's reply (found by tests/multihost's Redis cut:
    the match came out re-dealt, unlike the undisturbed run): the retry takes attempt 2,
    attempt 1 never existed for any bot, so attempt 2 plays the scheduled deals."""
    assert queue.enqueue_match(redis_client, spec())
    flaky = LostIncrReply(redis_client)
    begun = runner.start_attempt(flaky, "br-1", "w1")  # type: ignore[arg-type]
    assert flaky.lost and begun is not None
    assert (begun.attempt, begun.redeal) == (2, False)
    assert redis_client.hget(keys.match_state("br-1"), "attempt") == "2"
    run = runner.MatchRun(SimpleNamespace(router=None, metrics=None), begun.spec, 2, begun.redeal)
    assert run.spec is run.original and run.spec.deals == (DealSpec(3),)  # not re-dealt
