"""Every Lua script the platform runs in Redis: one definition each, its KEYS and ARGV named.

A script is a :class:`Lua`; calling it runs redis-py's ``Script`` (``register_script``):
EVALSHA with the script's SHA1, the text sent (SCRIPT LOAD) only when the server answers
NOSCRIPT, so each server receives each text once. The ``Script`` object is made once per
process per script (sync and asyncio clients each) and run with the caller's client.

State names come from the enums (:class:`~referee.match.spec.MatchState`,
:class:`~referee.match.spec.SeasonState`), formatted into the text at import or passed as
ARGV, never spelled in Lua.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis
import redis.asyncio
from redis.commands.core import AsyncScript, Script

from referee.match.spec import MatchState, SeasonState, moving_to


@dataclass(frozen=True)
class Lua:
    """A script, the names of its KEYS, and of its ARGV (a last name ending in ``...``
    stands for any number of values)."""

    name: str
    keys: tuple[str, ...]
    argv: tuple[str, ...]
    text: str
    _sync: list[Script] = field(default_factory=list, init=False, repr=False, compare=False)
    _async: list[AsyncScript] = field(default_factory=list, init=False, repr=False, compare=False)

    def _check(self, keys: Sequence[str], args: Sequence[Any]) -> None:
        if len(keys) != len(self.keys):
            raise ValueError(
                f"{self.name} takes {len(self.keys)} KEYS {self.keys}, not {len(keys)}"
            )
        variadic = bool(self.argv) and self.argv[-1].endswith("...")
        fixed = len(self.argv) - variadic
        if len(args) < fixed or (not variadic and len(args) != fixed):
            raise ValueError(f"{self.name} takes ARGV {self.argv}, not {len(args)} values")

    def __call__(self, client: redis.Redis, keys: Sequence[str], args: Sequence[Any]) -> Any:
        self._check(keys, args)
        if not self._sync:
            self._sync.append(client.register_script(self.text))
        return self._sync[0](keys=list(keys), args=list(args), client=client)

    async def run(
        self, client: redis.asyncio.Redis, keys: Sequence[str], args: Sequence[Any]
    ) -> Any:
        """The same on an asyncio client."""
        self._check(keys, args)
        if not self._async:
            self._async.append(client.register_script(self.text))
        return await self._async[0](keys=list(keys), args=list(args), client=client)


# --- a match's attempts (workers.runner) ---------------------------------------------------

START = Lua(
    "START",
    keys=("match_attempt", "match_state", "match_result", "running_matches", "season_matches"),
    argv=("token", "worker", "now_ms", "match_id", "in_season", "revealed_field"),
    text=f"""
local field = 'start:' .. ARGV[1]
local done = redis.call('HGET', KEYS[2], field)
if done then
  local attempt, redeal = string.match(done, '^(%d+):(%d)$')
  return {{tonumber(attempt), tonumber(redeal)}}
end
if redis.call('EXISTS', KEYS[3]) == 1 then return 0 end
if ARGV[5] == '1' and redis.call('HGET', KEYS[5], ARGV[4]) == '{MatchState.CANCELLED}' then
  return -1
end
local attempt = redis.call('INCR', KEYS[1])
local redeal = redis.call('HEXISTS', KEYS[2], ARGV[6])
redis.call('HSET', KEYS[2], field, attempt .. ':' .. redeal, 'state', '{MatchState.RUNNING}',
  'attempt', attempt, 'worker', ARGV[2], 'started_ms', ARGV[3], 'heartbeat_ms', ARGV[3])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[4])
if ARGV[5] == '1' then redis.call('HSET', KEYS[5], ARGV[4], '{MatchState.RUNNING}') end
return {{attempt, redeal}}
""",
)
"""One start of a match, atomic and idempotent per ``token``: ``{attempt, redeal}`` (the
attempt number from INCR, state ``running`` with its first heartbeat, the season's entry
``running``, whether an earlier attempt revealed: read after the INCR, so an older
attempt's reveal either came first or is refused by :data:`REVEAL`); 0 when the match has
a result; -1 when its season entry is ``cancelled``. ``season_matches`` is the match's own
state hash when it has no season (``in_season`` "0"), never written then."""

REVEAL = Lua(
    "REVEAL",
    keys=("match_attempt", "match_state"),
    argv=("attempt", "revealed_field"),
    text="""
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[1])
return 1
""",
)
"""1 after recording that ``attempt`` is about to show the bots its deals; 0 (nothing
written) when a newer attempt has started."""

# --- a bot's streams (referee.gateway.relay) -----------------------------------------------

_LIVE = """
local ok, e = pcall(cjson.decode, entries[i + 1])
local live_entry = ok and type(e) == 'table' and tonumber(e['seen_ms'])
  and tonumber(ARGV[1]) - tonumber(e['seen_ms']) <= tonumber(ARGV[2])
"""

REGISTER_STREAM = Lua(
    "REGISTER_STREAM",
    keys=("bot_streams",),
    argv=("now_ms", "stale_ms", "max_streams", "stream_id", "record_json"),
    text=f"""
local entries = redis.call('HGETALL', KEYS[1])
local live = 0
for i = 1, #entries, 2 do
{_LIVE}
  if live_entry then live = live + 1 else redis.call('HDEL', KEYS[1], entries[i]) end
end
if live >= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[4], ARGV[5])
return live + 1
""",
)
"""Record a bot's stream (``stream_id`` -> its JSON record with ``seen_ms``), deleting the
records not seen for ``stale_ms``: the bot's live streams counting this one, or -1 (nothing
written) when it already has ``max_streams``."""

PURGE_STALE = Lua(
    "PURGE_STALE",
    keys=("bot_streams",),
    argv=("now_ms", "stale_ms"),
    text=f"""
local entries = redis.call('HGETALL', KEYS[1])
local purged = 0
for i = 1, #entries, 2 do
{_LIVE}
  if not live_entry then
    redis.call('HDEL', KEYS[1], entries[i])
    purged = purged + 1
  end
end
return purged
""",
)
"""Delete a bot's stream records not seen for ``stale_ms``; how many."""

# --- seasons (referee.seasons.store) -------------------------------------------------------

TRANSITION = Lua(
    "TRANSITION",
    keys=("season",),
    argv=("to_state", "n_from", "from_state...", "field_value..."),
    text="""
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {err = 'no such season'} end
local n = tonumber(ARGV[2])
for i = 3, 2 + n do
  if ARGV[i] == state then
    redis.call('HSET', KEYS[1], 'state', ARGV[1])
    for j = 3 + n, #ARGV, 2 do
      redis.call('HSET', KEYS[1], ARGV[j], ARGV[j + 1])
    end
    return state
  end
end
return {err = 'state ' .. state}
""",
)
"""Move a season to ``to_state`` if it is in one of the ``n_from`` states that follow, and
set the field/value pairs after them; the state it was in. Errors ``no such season`` or
``state <s>``."""

COUNT_DONE = Lua(
    "COUNT_DONE",
    keys=(
        "season",
        "season_counted",
        "season_failed",
        "season_cancelled",
        "season_tallies",
        "season_tally_log",
    ),
    argv=("match_id", "decisions", "unit", "log_entry", "tally_field_and_increment..."),
    text="""
if redis.call('SISMEMBER', KEYS[4], ARGV[1]) == 1 then return 0 end
if redis.call('SADD', KEYS[2], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'matches_done', 1)
  redis.call('HINCRBY', KEYS[1], 'decisions', ARGV[2])
  if redis.call('SREM', KEYS[3], ARGV[1]) == 1 then
    redis.call('HINCRBY', KEYS[1], 'matches_failed', -1)
  end
  redis.call('HINCRBY', KEYS[5], 'n', 1)
  if ARGV[3] ~= '' then redis.call('HSETNX', KEYS[5], 'unit', ARGV[3]) end
  redis.call('RPUSH', KEYS[6], ARGV[4])
  for i = 5, #ARGV, 2 do
    redis.call('HINCRBYFLOAT', KEYS[5], ARGV[i], ARGV[i + 1])
  end
  return 1
end
return 0
""",
)
"""Count a committed match once (1 the first time; 0 if counted or stopped by a cancel),
moving it out of the failed set, and in the same step fold it into the season's standings
tallies (``field:bot`` increments, referee.seasons.tallies) and append its tally log entry."""

COUNT_FAILED = Lua(
    "COUNT_FAILED",
    keys=("season", "season_counted", "season_failed"),
    argv=("match_id",),
    text="""
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return 0 end
if redis.call('SADD', KEYS[3], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'matches_failed', 1)
  return 1
end
return 0
""",
)
"""Count a failed match once (1 the first time; never after it was counted done)."""

UNFAIL = Lua(
    "UNFAIL",
    keys=("season", "season_failed", "season_matches"),
    argv=("match_id", "state"),
    text="""
if redis.call('SREM', KEYS[2], ARGV[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'matches_failed', -1)
  redis.call('HSET', KEYS[3], ARGV[1], ARGV[2])
  return 1
end
return 0
""",
)
"""Take a match out of the failed set, uncount it and set its season entry to ``state``."""

STORE_STANDINGS = Lua(
    "STORE_STANDINGS",
    keys=("season_standings",),
    argv=("standings_json", "matches_done"),
    text="""
local old = redis.call('GET', KEYS[1])
if old then
  local ok, decoded = pcall(cjson.decode, old)
  if ok and tonumber(decoded['matches_done']) > tonumber(ARGV[2]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
""",
)
"""Store standings unless the stored ones count more matches (1 if written)."""

STORE_RATINGS = Lua(
    "STORE_RATINGS",
    keys=("season_ratings",),
    argv=("ratings_json", "folded"),
    text="""
local old = redis.call('GET', KEYS[1])
if old then
  local ok, decoded = pcall(cjson.decode, old)
  if ok and tonumber(decoded['folded']) > tonumber(ARGV[2]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
""",
)
"""Store refitted ratings unless a refit over more folded results is stored already."""

STORE_CHECKPOINT = Lua(
    "STORE_CHECKPOINT",
    keys=("season_checkpoints",),
    argv=("folded", "point_json", "kept"),
    text="""
if redis.call('ZCOUNT', KEYS[1], ARGV[1], ARGV[1]) > 0 then return 0 end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
local count = redis.call('ZCARD', KEYS[1])
if count > tonumber(ARGV[3]) then
  local older = redis.call('ZRANGE', KEYS[1], 1, count - 2)
  for i = 1, #older, 2 do redis.call('ZREM', KEYS[1], older[i]) end
end
return 1
""",
)
"""Add a checkpoint of the season's history at ``folded`` results unless one is there; past
``kept`` points, every other one between the first and the last goes (the history stays
spread over the whole season, its ends kept). 1 if added."""

UNLOCK = Lua(
    "UNLOCK",
    keys=("lock",),
    argv=("token",),
    text="""
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
""",
)
"""Release a lock only if ``token`` holds it."""

_CANCELLABLE_SEASON = (SeasonState.CREATED, SeasonState.RUNNING, SeasonState.PAUSED)
_STOPPED_MATCH = moving_to(MatchState.CANCELLED)  # scheduled, queued, failed


def _any_of(var: str, states: Sequence[str]) -> str:
    return " or ".join(f"{var} == '{s}'" for s in states)


CANCEL = Lua(
    "CANCEL",
    keys=("season", "season_matches", "season_cancelled"),
    argv=("finished_ms",),
    text=f"""
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return redis.error_reply('no such season') end
if not ({_any_of("state", _CANCELLABLE_SEASON)}) then
  return redis.error_reply('state is ' .. state)
end
redis.call('HSET', KEYS[1], 'state', '{SeasonState.CANCELLED}', 'seed', '', 'finished_ms', ARGV[1])
local entries = redis.call('HGETALL', KEYS[2])
local stopped = 0
for i = 1, #entries, 2 do
  local st = entries[i + 1]
  if {_any_of("st", _STOPPED_MATCH)} then
    redis.call('HSET', KEYS[2], entries[i], '{MatchState.CANCELLED}')
    redis.call('SADD', KEYS[3], entries[i])
    stopped = stopped + 1
  end
end
return stopped
""",
)
"""Cancel a season that is created, running or paused (its seed is cleared: revealed later,
once nothing can play): its scheduled, queued and failed matches become ``cancelled`` and
join the cancelled set; how many. Errors ``no such season`` or ``state is <s>``."""

ALL: tuple[Lua, ...] = (
    START,
    REVEAL,
    REGISTER_STREAM,
    PURGE_STALE,
    TRANSITION,
    COUNT_DONE,
    COUNT_FAILED,
    UNFAIL,
    STORE_STANDINGS,
    STORE_RATINGS,
    STORE_CHECKPOINT,
    UNLOCK,
    CANCEL,
)


# --- the continuous ladder (referee.ladder.store) ------------------------------------------

APPEND_AT = Lua(
    "APPEND_AT",
    keys=("ladder_log",),
    argv=("expected_length", "entry_json"),
    text="""
if redis.call('LLEN', KEYS[1]) == tonumber(ARGV[1]) then
  return redis.call('RPUSH', KEYS[1], ARGV[2])
end
return 0
""",
)
"""Append to the ladder's log only if it has the length its writer read (0 if it moved)."""
