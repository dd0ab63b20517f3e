"""A Redis connection dropped during the commit's WATCH/MULTI/EXEC is not a newer attempt.

redis-py raises ``WatchError`` ("A ConnectionError occurred while watching one or more
keys") when the connection drops while it watches, whether or not EXEC reached Redis. A
clean Redis restart (SIGTERM) made a finished match "commit nothing: superseded or done"
and the janitor re-ran it re-dealt. Real Redis: the connection is killed by another client
(``CLIENT KILL``) between WATCH and EXEC.
"""

from __future__ import annotations

from typing import Any, cast

import redis

from referee import keys, queue
from tests.workers.test_runner import make_spec
from workers.attempts import commit, start_attempt


def _result() -> Any:
    return {"match_id": "m1", "season": "s1", "finished_ms": 1.0, "stats": []}


class _Dropped:
    """A real pipeline whose connection another client kills right after the commit's
    last read (WATCH is on, MULTI/EXEC not sent yet), ``drops`` times."""

    def __init__(self, pipe: Any, killer: redis.Redis, owner: _DroppingClient) -> None:
        self._pipe = pipe
        self._killer = killer
        self._owner = owner

    def __enter__(self) -> _Dropped:
        self._pipe.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pipe.__exit__(*exc)

    def get(self, *args: Any) -> Any:
        value = self._pipe.get(*args)
        if self._owner.drops > 0:
            self._owner.drops -= 1
            self._killer.client_kill_filter(_type="normal", skipme=True)
        return value

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)


class _DroppingClient:
    def __init__(self, client: redis.Redis, killer: redis.Redis, drops: int) -> None:
        self._client = client
        self._killer = killer
        self.drops = drops

    def pipeline(self, *args: Any, **kwargs: Any) -> _Dropped:
        return _Dropped(self._client.pipeline(*args, **kwargs), self._killer, self)


def test_a_connection_dropped_mid_watch_is_retried_not_read_as_superseded(
    redis_url: str, redis_client: redis.Redis
) -> None:
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    victim = redis.Redis.from_url(redis_url, decode_responses=True)
    killer = redis.Redis.from_url(redis_url, decode_responses=True)
    dropping = _DroppingClient(victim, killer, drops=2)
    assert commit(cast(redis.Redis, dropping), spec, 1, _result(), {})
    assert dropping.drops == 0  # both drops happened mid-WATCH
    assert redis_client.get(keys.match_result("m1")) is not None
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1
    assert queue.match_status(redis_client, "m1")["state"] == "done"
    victim.close()
    killer.close()


class _LostExecReply:
    """A real pipeline whose EXEC Redis carries out and whose reply is then lost, which
    redis-py reports as it does a drop while watching."""

    def __init__(self, pipe: Any) -> None:
        self._pipe = pipe

    def __enter__(self) -> _LostExecReply:
        self._pipe.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._pipe.__exit__(*exc)

    def execute(self, *args: Any) -> Any:
        self._pipe.execute(*args)
        raise redis.WatchError("A ConnectionError occurred while watching one or more keys")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pipe, name)


def test_an_exec_whose_reply_was_lost_is_known_as_committed(redis_client: redis.Redis) -> None:
    """The retry finds its own result stored under its own attempt: committed, once."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    lost = {"n": 1}

    class _Client:
        def pipeline(self, *args: Any, **kwargs: Any) -> Any:
            pipe = redis_client.pipeline(*args, **kwargs)
            if lost["n"]:
                lost["n"] -= 1
                return _LostExecReply(pipe)
            return pipe

    assert commit(cast(redis.Redis, _Client()), spec, 1, _result(), {})
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1


def test_a_real_newer_attempt_still_stops_the_commit(redis_client: redis.Redis) -> None:
    """The re-check after a WatchError still fences: attempt 1 commits nothing once attempt
    2 has started, and nothing once another attempt's result is stored."""
    spec = make_spec()
    assert queue.enqueue_match(redis_client, spec)
    assert start_attempt(redis_client, "m1", "host-1") == (spec, 1, False)
    assert start_attempt(redis_client, "m1", "host-2") == (spec, 2, False)
    assert not commit(redis_client, spec, 1, _result(), {})
    assert commit(redis_client, spec, 2, {**_result(), "finished_ms": 2.0}, {})  # type: ignore[typeddict-item]
    assert not commit(redis_client, spec, 1, _result(), {})
    assert redis_client.xlen(keys.RESULTS_STREAM) == 1
