"""``referee/lua.py``: every Lua script of the platform in one place, run by EVALSHA, its
KEYS and ARGV named, state names from the enums (a unit test of one module, real Redis)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from referee import lua
from referee.match.spec import MatchState, SeasonState


def test_every_script_of_the_platform_lives_in_the_one_module() -> None:
    """No other module keeps Lua or sends a script with EVAL."""
    root = Path(__file__).resolve().parents[2]
    found = [
        f"{path.relative_to(root)}:{n}"
        for folder in ("referee", "workers")
        for path in sorted((root / folder).rglob("*.py"))
        if path.name != "lua.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"redis\.call\(|\.eval\(|register_script\(", line)
    ]
    assert not found, found


def test_every_script_loads_and_states_come_from_the_enums(redis_client: redis.Redis) -> None:
    """Every script compiles, names its KEYS, and no state is spelled in Lua by hand: the
    module's source quotes none (the scripts format them in from the enums)."""
    source = (Path(__file__).resolve().parents[2] / "referee" / "lua.py").read_text()
    for state in (*MatchState, *SeasonState):
        assert f"'{state}'" not in source, state
    for script in lua.ALL:
        assert redis_client.script_load(script.text)
        assert script.keys and all(script.keys)
    assert "'running'" in lua.START.text and "'cancelled'" in lua.CANCEL.text


def test_a_call_with_the_wrong_keys_or_argv_says_what_the_script_takes(
    redis_client: redis.Redis,
) -> None:
    with pytest.raises(ValueError, match=r"UNLOCK takes 1 KEYS \('lock',\), not 2"):
        lua.UNLOCK(redis_client, ["a", "b"], ["t"])
    with pytest.raises(ValueError, match=r"UNLOCK takes ARGV \('token',\), not 2 values"):
        lua.UNLOCK(redis_client, ["a"], ["t", "u"])
    with pytest.raises(ValueError, match="TRANSITION takes ARGV"):
        lua.TRANSITION(redis_client, ["s"], ["running"])  # fewer than the fixed part


def test_scripts_go_by_sha_and_are_sent_once(redis_client: redis.Redis) -> None:
    """The first call loads the script (NOSCRIPT, then SCRIPT LOAD); later calls, on this
    client or another, send only its SHA1."""
    redis_client.script_flush()
    redis_client.set("lock", "me")
    assert lua.UNLOCK(redis_client, ["lock"], ["someone else"]) == 0
    sha = lua.UNLOCK._sync[0].sha
    assert redis_client.script_exists(sha) == [True]
    other = redis.Redis(connection_pool=redis_client.connection_pool)
    sent: list[tuple[object, ...]] = []
    execute = other.execute_command

    def spy(*args: object, **options: object) -> object:
        sent.append(args)
        return execute(*args, **options)  # type: ignore[no-untyped-call]

    other.execute_command = spy  # type: ignore[method-assign]
    assert lua.UNLOCK(other, ["lock"], ["me"]) == 1
    assert [a[0] for a in sent] == ["EVALSHA"] and sent[0][1] == sha
    assert redis_client.get("lock") is None


def test_cancel_stops_the_matches_that_have_not_started(redis_client: redis.Redis) -> None:
    redis_client.hset("season", "state", str(SeasonState.RUNNING))
    redis_client.hset(
        "matches",
        mapping={
            "m1": str(MatchState.SCHEDULED),
            "m2": str(MatchState.RUNNING),
            "m3": str(MatchState.FAILED),
        },
    )
    assert lua.CANCEL(redis_client, ["season", "matches", "cancelled"], [123]) == 2
    assert redis_client.hget("season", "state") == SeasonState.CANCELLED
    assert redis_client.hgetall("matches") == {
        "m1": MatchState.CANCELLED,
        "m2": MatchState.RUNNING,
        "m3": MatchState.CANCELLED,
    }
    with pytest.raises(redis.ResponseError, match="state is cancelled"):
        lua.CANCEL(redis_client, ["season", "matches", "cancelled"], [124])


def test_in_flight_counts_in_redis_and_returns_only_the_running(
    redis_client: redis.Redis,
) -> None:
    key = "arena:season:t:matches"
    redis_client.hset(
        key,
        mapping={
            "t-m1": MatchState.RUNNING,
            "t-m2": MatchState.QUEUED,
            "t-m3": MatchState.QUEUED,
            "t-m4": MatchState.DONE,
            "t-m5": MatchState.SCHEDULED,
            "t-m6": MatchState.RUNNING,
        },
    )
    queued, running = lua.IN_FLIGHT(redis_client, [key], [])
    assert queued == 2 and sorted(running) == ["t-m1", "t-m6"]
    assert lua.IN_FLIGHT(redis_client, ["arena:season:none:matches"], []) == [0, []]
