"""The continuous ladder in Redis: creation, joins, pause/resume, standings, and the step
every referee's season driver runs (:func:`step_all`).

A ladder plays in *batches*: the matchmaker (``referee/ladder/matchmaker.py``) picks a few
tables, the ladder logs the decision and creates a season of exactly those tables (name
``ladder-<id>-b<n>``, seed derived from the ladder's), which the season machinery plays
like any other (queue, match hosts, exactly-once commits, restarts and SIGKILLs survived,
``arena season verify``). When the batch's season has ended its results are rated in match
order, and the next batch is decided. The state is the fold of the log: a step resumes
where the last one stopped whoever runs it, and a referee killed between logging a batch
and creating its season leaves a log record that the next step completes.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from collections.abc import Sequence
from typing import Any, cast

import redis

from referee import keys, lua
from referee.errors import ArenaError, ConfigError, ConflictError, NotFoundError, StateConflict
from referee.ladder.matchmaker import (
    DEFAULT_PROVISIONAL,
    LadderState,
    apply_batch,
    apply_join,
    apply_leave,
    apply_results,
    pick_batch,
    replay,
)
from referee.seasons import store as seasons
from referee.seasons.model import SeasonOptions, SeasonSpec, derive_seed, random_seed

log = logging.getLogger(__name__)

RUNNING = "running"
PAUSED = "paused"
LOCK_MS = 10_000


def _now_ms() -> int:
    return int(time.time() * 1000)


def batch_season(ladder_id: str, n: int) -> str:
    return f"ladder-{ladder_id}-b{n:06d}"[:64]


def get_ladder(conn: redis.Redis, ladder_id: str) -> dict[str, str]:
    info = cast(dict[str, str], conn.hgetall(keys.ladder(ladder_id)))
    if not info:
        raise NotFoundError(f"no ladder {ladder_id!r}: `arena ladder list` shows the ladders")
    return info


def _sizes(info: dict[str, str]) -> list[int]:
    return [int(s) for s in json.loads(info["sizes"])]


def _spec(info: dict[str, str], name: str, bots: Sequence[str], size: int, seed: int) -> SeasonSpec:
    return SeasonSpec(
        name=name,
        game=info["game"],
        preset=info["preset"],
        bots=tuple(bots),
        table_size=size,
        deals_per_match=int(info["deals"]),
        seed=seed,
        # the matchmaker keeps owners apart itself; every table has its own deals
        options=SeasonOptions(duplicate=False, separate_owners=False, window=64),
    )


def create_ladder(
    conn: redis.Redis,
    ladder_id: str,
    game: str,
    preset: str = "",
    *,
    sizes: Sequence[int] = (4,),
    tables: int = 2,
    deals: int = 2,
    seed: int | None = None,
    provisional: int = DEFAULT_PROVISIONAL,
) -> dict[str, str]:
    """Validate and store a ladder (running: it plays as soon as enough bots joined)."""
    if not ladder_id:
        ladder_id = f"{game}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"
    if not 1 <= tables <= 64:
        raise ConfigError(f"--tables {tables}: use 1 .. 64 tables per batch")
    if not 1 <= deals <= 100:
        raise ConfigError(f"--deals {deals}: use 1 .. 100 deals per match")
    info: dict[str, str] = {"game": game, "preset": preset, "deals": str(deals)}
    for size in sizes:  # the engine checks the rules and each table size
        probe = _spec({**info, "sizes": "[]"}, "probe", [f"b{i}" for i in range(size)], size, 1)
        rules = probe.validate_with_engine()
    info.update(
        {
            "preset": preset or str(rules.get("name", game)),
            "sizes": json.dumps(sorted(set(sizes))),
            "tables": str(tables),
            "provisional": str(provisional),
            "state": RUNNING,
            "created_ms": str(_now_ms()),
        }
    )
    if not conn.hsetnx(keys.ladder(ladder_id), "state", RUNNING):
        raise ConflictError(f"a ladder named {ladder_id!r} exists already: choose another name")
    pipe = conn.pipeline(transaction=True)
    pipe.hset(keys.ladder(ladder_id), mapping=cast(Any, info))
    pipe.set(keys.ladder_secret(ladder_id), str(seed or random_seed()))
    pipe.zadd(keys.LADDERS, {ladder_id: _now_ms()})
    pipe.execute()
    return get_ladder(conn, ladder_id) | {"ladder": ladder_id}


def list_ladders(conn: redis.Redis) -> list[str]:
    return [str(x) for x in conn.zrange(keys.LADDERS, 0, -1)]


def _append(conn: redis.Redis, ladder_id: str, record: dict[str, Any]) -> None:
    conn.rpush(keys.ladder_log(ladder_id), json.dumps(record, sort_keys=True))


def join(conn: redis.Redis, ladder_id: str, bot: str, *, replaces: str = "") -> None:
    """``bot`` enters the ladder from the next batch on (no restart); with ``replaces`` it
    is a new version of that entry, which retires and keeps its history."""
    get_ladder(conn, ladder_id)
    if not conn.sismember(keys.BOTS, bot):
        raise ConfigError(f"{bot!r} is not a registered bot: `arena bot register {bot}` first")
    entries = ladder_entries(conn, ladder_id)
    if replaces and replaces not in entries:
        raise ConfigError(f"--replaces {replaces!r}: it is not an entry of ladder {ladder_id}")
    if bot in entries and not entries[bot].get("retired"):
        raise ConflictError(f"{bot} is already on ladder {ladder_id}")
    owner = str(conn.hget(keys.bot(bot), "owner") or bot)
    _append(conn, ladder_id, {"kind": "join", "bot": bot, "owner": owner, "prev": replaces})


def leave(conn: redis.Redis, ladder_id: str, bot: str) -> None:
    if bot not in ladder_entries(conn, ladder_id):
        raise ConfigError(f"{bot!r} is not on ladder {ladder_id}")
    _append(conn, ladder_id, {"kind": "leave", "bot": bot})


def read_log(conn: redis.Redis, ladder_id: str, start: int = 0) -> list[dict[str, Any]]:
    return [json.loads(r) for r in conn.lrange(keys.ladder_log(ladder_id), start, -1)]


def load_state(conn: redis.Redis, ladder_id: str) -> LadderState:
    raw = conn.get(keys.ladder_state(ladder_id))
    return LadderState.from_dict(json.loads(raw)) if raw else LadderState()


def ladder_entries(conn: redis.Redis, ladder_id: str) -> dict[str, dict[str, Any]]:
    """Every entry the log has (joined, even if not folded yet), with its state."""
    state = load_state(conn, ladder_id)
    for record in read_log(conn, ladder_id, state.upto):
        if record["kind"] == "join":
            apply_join(state, record)
        elif record["kind"] == "leave":
            apply_leave(state, record)
    return {n: e.to_dict() for n, e in state.entries.items()}


def set_state(conn: redis.Redis, ladder_id: str, target: str) -> dict[str, str]:
    """Pause (no new batch; the batch in flight pauses too) or resume a ladder."""
    info = get_ladder(conn, ladder_id)
    source = PAUSED if target == RUNNING else RUNNING
    if info["state"] != source:
        raise ConflictError(f"ladder {ladder_id} is {info['state']}: it can't be made {target}")
    conn.hset(keys.ladder(ladder_id), "state", target)
    current = info.get("current", "")
    if current:
        with contextlib.suppress(StateConflict):
            if target == PAUSED:
                seasons.pause_season(conn, current)
            else:
                seasons.resume_season(conn, current)
    return get_ladder(conn, ladder_id)


def standings(conn: redis.Redis, ladder_id: str) -> dict[str, Any]:
    """Entries ranked by OpenSkill ordinal (mu - 3 sigma), with their uncertainty."""
    info = get_ladder(conn, ladder_id)
    provisional = int(info.get("provisional", DEFAULT_PROVISIONAL))
    state = load_state(conn, ladder_id)
    entries = ladder_entries(conn, ladder_id)
    rows = []
    for name, e in entries.items():
        ordinal = e["mu"] - 3 * e["sigma"]
        rows.append(
            {
                "bot": name,
                "mu": round(e["mu"], 3),
                "sigma": round(e["sigma"], 3),
                "ordinal": round(ordinal, 3),
                "matches": e["matches"],
                "deals": e["deals"],
                "provisional": e["matches"] < provisional,
                "retired": e["retired"],
                "prev": e["prev"],
                "owner": e["owner"],
            }
        )
    rows.sort(key=lambda r: (r["retired"], -r["ordinal"], r["bot"]))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    return {
        "ladder": ladder_id,
        "game": info["game"],
        "preset": info["preset"],
        "state": info["state"],
        "batches": state.batches,
        "current": info.get("current", ""),
        "rows": rows,
    }


# --- the step ------------------------------------------------------------------------------


def _ensure_season(
    conn: redis.Redis, ladder_id: str, info: dict[str, str], record: dict[str, Any]
) -> str:
    """The batch's season exists and runs (created now if a referee died before)."""
    name = str(record["season"])
    if not conn.exists(keys.season(name)):
        seed = int(conn.get(keys.ladder_secret(ladder_id)) or 0)
        tables = [list(t) for t in record["tables"]]
        bots = sorted({b for t in tables for b in t})
        spec = _spec(
            info, name, bots, int(record["size"]), derive_seed(seed, "batch", int(record["n"]))
        )
        with contextlib.suppress(ConflictError):  # another referee created it just now
            seasons.create_season(conn, spec, tables=tables)
    if seasons.season_row(conn, name).state == seasons.CREATED:
        with contextlib.suppress(StateConflict):
            seasons.start_season(conn, name)
    if info.get("current") != name:
        conn.hset(keys.ladder(ladder_id), "current", name)
    if info["state"] == PAUSED and seasons.season_row(conn, name).state == seasons.RUNNING:
        with contextlib.suppress(StateConflict):
            seasons.pause_season(conn, name)
    return name


def _batch_results(conn: redis.Redis, season: str) -> list[Any]:
    results = seasons.committed_results(conn, season)
    return sorted(results, key=lambda r: r["match_id"])


def step(conn: redis.Redis, ladder_id: str) -> str:
    """Fold what is new in the log (rating ended batches) and decide the next batch when
    none is in flight. Returns what it did, for logs and tests."""
    info = get_ladder(conn, ladder_id)
    state = load_state(conn, ladder_id)
    start = state.upto
    records = read_log(conn, ladder_id, start)
    done = ""
    for record in records:
        if record["kind"] == "join":
            apply_join(state, record)
        elif record["kind"] == "leave":
            apply_leave(state, record)
        else:
            season = _ensure_season(conn, ladder_id, info, record)
            if seasons.season_row(conn, season).state not in seasons.ENDED:
                break
            apply_batch(state, int(record["size"]), [tuple(t) for t in record["tables"]])
            apply_results(state, int(record["n"]), _batch_results(conn, season))
            done = f"rated batch {record['n']}"
        state.upto += 1
    if state.upto > start:
        conn.set(keys.ladder_state(ladder_id), json.dumps(state.to_dict(), sort_keys=True))
    if conn.llen(keys.ladder_log(ladder_id)) != state.upto or info["state"] != RUNNING:
        return done or "waiting"
    seed = int(conn.get(keys.ladder_secret(ladder_id)) or 0)
    n = state.batches
    size, tables = pick_batch(
        state, _sizes(info), int(info["tables"]), seed, n, int(info["provisional"])
    )
    if not tables:
        return done or "too few entries for a table"
    record = {
        "kind": "batch",
        "n": n,
        "season": batch_season(ladder_id, n),
        "size": size,
        "tables": tables,
    }
    if not lua.APPEND_AT(
        conn, [keys.ladder_log(ladder_id)], [state.upto, json.dumps(record, sort_keys=True)]
    ):
        return done or "log moved"  # a join came in: decide again on the next step
    try:
        _ensure_season(conn, ladder_id, info, record)
    except ArenaError as exc:  # retried on the next step
        log.warning("ladder %s: batch %d could not start: %s", ladder_id, n, exc)
    return f"started batch {n}: {len(tables)} tables of {size}"


def step_all(conn: redis.Redis, consumer: str) -> None:
    """One step of every ladder, each under a short lock (one referee at a time)."""
    for ladder_id in list_ladders(conn):
        if not conn.set(keys.ladder_lock(ladder_id), consumer, nx=True, px=LOCK_MS):
            continue
        try:
            step(conn, ladder_id)
        except ArenaError as exc:
            log.warning("ladder %s: %s", ladder_id, exc)
        finally:
            if conn.get(keys.ladder_lock(ladder_id)) == consumer:
                conn.delete(keys.ladder_lock(ladder_id))


def replay_ladder(conn: redis.Redis, ladder_id: str) -> tuple[int, list[str]]:
    """Re-decide every logged batch from the seed and the log, and re-rate every batch
    folded so far: (batches, differences; none when the ladder is reproducible)."""
    info = get_ladder(conn, ladder_id)
    seed = int(conn.get(keys.ladder_secret(ladder_id)) or 0)
    records = read_log(conn, ladder_id)
    mine = load_state(conn, ladder_id)
    results = {
        int(r["n"]): _batch_results(conn, str(r["season"]))
        for r in records[: mine.upto]
        if r["kind"] == "batch"
    }
    config = (_sizes(info), int(info["tables"]), int(info["provisional"]))
    folded, problems = replay(seed, records[: mine.upto], results, *config)
    if folded.to_dict() != mine.to_dict():
        problems.append("the stored ratings differ from the ones replayed from the log")
    state, later = replay(seed, records, results, *config)  # the batch in flight, if any
    problems += [p for p in later if p not in problems]
    return state.batches, problems
