"""A season in Redis: create, start, pause, resume, cancel, finish; counters and standings.

Everything takes a synchronous ``redis.Redis`` made with ``decode_responses=True`` (see
:func:`connect`); the CLI uses it directly, the driver and the League API through
``asyncio.to_thread``. Every state change is a guarded compare-and-set (a Lua script), so
several referees and CLI commands may act on one season at once.

Keys (:mod:`referee.keys`): the season hash, ``SEASONS``, ``season_matches``,
``season_standings``, and the season's own

* ``season_secret``: the seed, until it is revealed in the season hash (finished or
  cancelled);
* ``season_schedule``: JSON list of the scheduled matches (seats, match seed, deal specs);
* ``season_counted`` / ``season_failed``: sets of match ids already counted as done /
  failed, so that a result consumed twice (a referee restarted before acknowledging it)
  counts once;
* ``season_lock``: short lock while one referee tops up the matches in flight.
"""

from __future__ import annotations

import contextlib
import json
import logging
import secrets
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

import redis

from referee import keys, lua
from referee.errors import ConfigError, ConflictError, NotFoundError, StateConflict
from referee.match.row import parse_row
from referee.match.season_row import BadSeasonRow, SeasonRow, Standings
from referee.match.spec import (
    CommittedResult,
    FallbackMode,
    MatchSpec,
    MatchState,
    SeasonState,
    TimeControl,
)
from referee.seasons import tallies
from referee.seasons.model import (
    SeasonSpec,
    Words,
    default_rank_by,
    problems_error,
    random_seed,
    seed_sha256,
)
from referee.seasons.schedule import (
    GIVEN_KIND,
    ScheduledMatch,
    build_schedule,
    duplicate_plan,
    given_schedule,
)
from referee.seasons.standings import compute_standings
from referee.seasons.versiontest import SCHEDULE_KIND, VERSUS_NOTE, versus_schedule

log = logging.getLogger(__name__)

CREATED = SeasonState.CREATED
RUNNING = SeasonState.RUNNING
PAUSED = SeasonState.PAUSED
CANCELLED = SeasonState.CANCELLED
FINISHED = SeasonState.FINISHED
ENDED = (CANCELLED, FINISHED)
SCHEDULED = MatchState.SCHEDULED  # a season match not handed to the queue yet


secret_key = keys.season_secret
schedule_key = keys.season_schedule
counted_key = keys.season_counted
failed_key = keys.season_failed
lock_key = keys.season_lock


def now_ms() -> int:
    return int(time.time() * 1000)


def connect(url: str) -> redis.Redis:
    """A client for this module: text replies, a socket timeout above any blocking read."""
    return redis.Redis.from_url(url, decode_responses=True, socket_timeout=30)


def _transition(
    conn: redis.Redis,
    season_id: str,
    to: str,
    allowed: Sequence[str],
    fields: Mapping[str, str] | None = None,
) -> str:
    """Set the state to ``to`` (and ``fields``, in the same step) if it is one of
    ``allowed``; return the previous state."""
    extra = [x for kv in (fields or {}).items() for x in kv]
    try:
        return str(
            lua.TRANSITION(
                conn, [keys.season(season_id)], [to, str(len(allowed)), *allowed, *extra]
            )
        )
    except redis.ResponseError as exc:
        message = str(exc)
        if "no such season" in message:
            raise NotFoundError(
                f"no season {season_id!r}: `arena season list` shows them"
            ) from None
        state = message.rsplit(" ", 1)[-1]
        raise StateConflict(
            f"season {season_id} is {state}; it can become {to} only when it is "
            f"{' or '.join(allowed)}"
        ) from None


# --- reading ------------------------------------------------------------------------------


def get_season(conn: redis.Redis, season_id: str) -> dict[str, str]:
    """The season hash as stored, untyped (what an archive keeps; product code reads
    :func:`season_row`); NotFoundError naming the command that lists seasons."""
    info = cast(dict[str, str], conn.hgetall(keys.season(season_id)))
    if not info:
        raise NotFoundError(f"no season {season_id!r}: `arena season list` shows them")
    info["season"] = season_id
    return info


def season_row(conn: redis.Redis, season_id: str) -> SeasonRow:
    """The season hash as a typed row; NotFoundError as :func:`get_season`."""
    return SeasonRow.parse(season_id, get_season(conn, season_id))


def get_spec(conn: redis.Redis, season_id: str) -> SeasonSpec:
    """The season spec (with the seed only once it is revealed)."""
    row = season_row(conn, season_id)
    spec = SeasonSpec.from_json(row.spec)
    return spec.with_seed(int(row.seed)) if row.seed else spec


def season_rows(conn: redis.Redis) -> list[SeasonRow]:
    """Every season, oldest first; a hash with no state or an unknown one is skipped with
    a log line (:class:`BadSeasonRow`), an empty one (being deleted) silently."""
    ids = cast(list[str], conn.zrange(keys.SEASONS, 0, -1))
    out: list[SeasonRow] = []
    for season_id in ids:
        info = cast(dict[str, str], conn.hgetall(keys.season(season_id)))
        if not info:
            continue
        try:
            out.append(SeasonRow.parse(season_id, info))
        except BadSeasonRow as exc:
            log.warning("%s; skipped", exc)
    return out


def get_standings(conn: redis.Redis, season_id: str) -> Standings | None:
    raw = conn.get(keys.season_standings(season_id))
    return None if raw is None else cast(Standings, json.loads(raw))


def get_schedule(conn: redis.Redis, season_id: str) -> list[dict[str, Any]]:
    raw = conn.get(schedule_key(season_id))
    if raw is None:
        raise NotFoundError(f"season {season_id!r} has no schedule")
    return cast(list[dict[str, Any]], json.loads(raw))


def match_states(conn: redis.Redis, season_id: str) -> dict[str, str]:
    return cast(dict[str, str], conn.hgetall(keys.season_matches(season_id)))


def live_decisions(conn: redis.Redis, season_id: str) -> int:
    """Decisions asked so far in the season, matches in progress included: the workers'
    ``arena_decisions_total{season,...}`` counters (flushed about every second), or the
    count of committed matches' decisions if that is larger."""
    from referee import metrics_store

    total = metrics_store.season_decisions(metrics_store.read_counters(conn), season_id)
    committed = int(conn.hget(keys.season(season_id), "decisions") or 0)
    return max(total, committed)


def committed_results(conn: redis.Redis, season_id: str) -> list[CommittedResult]:
    """Every committed result of the season that the driver has counted."""
    ids = sorted(cast(set[str], conn.smembers(counted_key(season_id))))
    out: list[CommittedResult] = []
    for start in range(0, len(ids), 200):
        chunk = ids[start : start + 200]
        for raw in conn.mget([keys.match_result(m) for m in chunk]):
            if raw is not None:
                out.append(parse_row(raw))
    return out


# --- events -------------------------------------------------------------------------------


def publish(
    conn: redis.Redis,
    kind: str,
    season_id: str,
    match_id: str = "",
    data: Mapping[str, Any] | None = None,
) -> None:
    """Best-effort league event on ``keys.EVENTS_CHANNEL`` (pub/sub: delivered at most once)."""
    message = {
        "kind": kind,
        "season": season_id,
        "match_id": match_id,
        "data": dict(data or {}),
        "at_ms": now_ms(),
    }
    with contextlib.suppress(redis.RedisError):
        conn.publish(keys.EVENTS_CHANNEL, json.dumps(message, separators=(",", ":")))


# --- creating and changing state ----------------------------------------------------------


def declared_games(conn: redis.Redis, bot: str) -> list[str]:
    """The games the bot's latest stream declared in Hello ([] = every game, or never
    connected); the referee records them in the bot's hash (``games``)."""
    raw = conn.hget(keys.bot(bot), "games")
    try:
        games = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(g) for g in games] if isinstance(games, list) else []


def bots_declining(
    conn: redis.Redis, bots: Sequence[str], game: str
) -> list[tuple[str, list[str]]]:
    """The bots whose declared games leave out ``game``, with what they declared."""
    out = []
    for bot in bots:
        games = declared_games(conn, bot)
        if games and game not in games:
            out.append((bot, games))
    return out


def bots_without_stream(conn: redis.Redis, bots: Sequence[str]) -> list[str]:
    """The bots that hold no stream on any referee now (the bot-streams directory), in the
    order given, each once."""
    names = list(dict.fromkeys(bots))
    pipe = conn.pipeline(transaction=False)
    for bot in names:
        pipe.hlen(keys.bot_streams(bot))
    return [bot for bot, streams in zip(names, pipe.execute(), strict=True) if not streams]


def no_stream_warning(absent: Sequence[str], spec: SeasonSpec) -> str:
    """The warning ``season create`` and ``season start`` give for bots with no stream
    ('' when every bot has one): who, and what their matches will do."""
    return absent_bots_warning(
        absent, spec.time_control, spec.options.strikes, f"season {spec.name}"
    )


def absent_bots_warning(absent: Sequence[str], tc: TimeControl, strikes: int, where: str) -> str:
    """The warning for ``absent`` bots (no stream anywhere) of ``where`` (a season, a
    match); '' when there are none."""
    if not absent:
        return ""
    wait_ms = tc.move_ms + tc.bank_ms + tc.grace_ms + tc.absent_ms
    return (
        f"{len(absent)} bot(s) of {where} have no stream connected to any referee: "
        f"{', '.join(absent)}. Until one connects, each of its decisions is judged "
        f"disconnected {tc.absent_ms} ms past its clock (about {wait_ms / 1000:g} s, "
        f"time_control.absent_ms), and after {strikes} in a row the autopilot plays its "
        "seat to the end of the match: start them (`arena bridge --server ... --token ... "
        "-- PROGRAM`, or the SDK's --server/--token) first"
    )


def _new_name(game: str) -> str:
    return f"{game}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{secrets.token_hex(2)}"


def create_season(
    conn: redis.Redis,
    spec: SeasonSpec,
    *,
    require_registered: bool = True,
    words: Words | None = None,
    versus_pairs: int = 0,
    tables: Sequence[Sequence[str]] | None = None,
) -> SeasonRow:
    """Validate ``spec``, draw its seed if it has none, schedule it and store it (state
    ``created``). ConflictError if the name is taken; ConfigError lists every problem of
    the spec at once, naming fields in ``words`` (the interface the user used).
    ``versus_pairs``: a version test of that many match pairs (``spec.bots`` = NEW, OLD,
    field; referee/seasons/versiontest.py) instead of the season's own schedule;
    ``tables``: exactly these tables, seats as given (a ladder's batch, referee/ladder)."""
    if not spec.name:
        spec = SeasonSpec.from_dict({**spec.to_dict(), "name": _new_name(spec.game)})
    if not spec.options.rank_by:  # stored explicitly: a season without it ranks by Elo
        spec = replace(spec, options=replace(spec.options, rank_by=default_rank_by(spec.game)))
    checked, problems = spec.check_with_engine(words)
    owners: dict[str, str] = {}
    if require_registered:
        unknown = [b for b in spec.bots if not conn.sismember(keys.BOTS, b)]
        if unknown:
            problems.append(
                f"unknown bot(s) {', '.join(unknown)}: register them first "
                "(`arena bot register NAME`); `arena bot list` shows the registered bots"
            )
    if problems or checked is None:
        raise problems_error(problems)
    rules = checked
    for bot in spec.bots:
        owner = conn.hget(keys.bot(bot), "owner")
        if owner:
            owners[bot] = str(owner)
    refused = bots_declining(conn, spec.bots, spec.game)
    if refused:
        listed = "; ".join(f"{bot} declared {', '.join(games)}" for bot, games in refused)
        raise ConfigError(
            f"{len(refused)} bot(s) do not play {spec.game}: {listed} (Hello.games of their "
            f"latest stream). Leave them out of this {spec.game} season, or connect them "
            f"declaring {spec.game} (an empty games list means every game)"
        )
    seed = spec.seed or random_seed()
    kind = ""
    if versus_pairs:
        schedule = versus_schedule(spec, seed, versus_pairs)
        note, kind = VERSUS_NOTE, SCHEDULE_KIND
    elif tables is not None:
        schedule = given_schedule(spec, seed, tables)
        note, kind = "the tables a ladder's matchmaker chose; every deal a new shuffle", GIVEN_KIND
    else:
        schedule = build_schedule(spec, seed, owners)
        note = duplicate_plan(spec, owners).note
    season_id = spec.name
    created = now_ms()
    row = SeasonRow(
        season=season_id,
        state=SeasonState.CREATED,
        spec=spec.public().to_json(),
        game=spec.game,
        preset=spec.preset or str(rules.get("name", spec.game)),
        rules=json.dumps(rules, sort_keys=True, separators=(",", ":")),
        owners=json.dumps(owners, sort_keys=True),
        seed_sha256=seed_sha256(seed),
        duplicate=note,  # what the duplicate option does here, in words
        schedule=kind,
        matches_total=len(schedule),
        created_ms=created,
    )
    if not conn.hsetnx(keys.season(season_id), "state", CREATED):
        raise ConflictError(
            f"a season named {season_id!r} exists already: choose another name "
            "(or leave it out to get a generated one)"
        )
    pipe = conn.pipeline(transaction=True)
    pipe.set(secret_key(season_id), str(seed))
    pipe.set(schedule_key(season_id), json.dumps([m.to_dict() for m in schedule]))
    pipe.hset(keys.season_matches(season_id), mapping={m.match_id: SCHEDULED for m in schedule})
    pipe.hset(keys.season(season_id), mapping=cast(Any, row.to_hash()))
    pipe.zadd(keys.SEASONS, {season_id: created})
    pipe.execute()
    publish(conn, "season_created", season_id, data={"matches_total": len(schedule)})
    return season_row(conn, season_id)


def start_season(conn: redis.Redis, season_id: str) -> SeasonRow:
    """created -> running: the seed's SHA-256 is published; the driver enqueues matches."""
    _transition(conn, season_id, RUNNING, [CREATED], {"started_ms": str(now_ms())})
    row = season_row(conn, season_id)
    publish(conn, "season_started", season_id, data={"seed_sha256": row.seed_sha256})
    return row


def pause_season(conn: redis.Redis, season_id: str) -> SeasonRow:
    """running -> paused: no new matches are enqueued; those in flight finish and count."""
    _transition(conn, season_id, PAUSED, [RUNNING])
    publish(conn, "season_paused", season_id)
    return season_row(conn, season_id)


def resume_season(conn: redis.Redis, season_id: str) -> SeasonRow:
    """paused -> running; failed matches are scheduled again (they keep their seeds)."""
    _transition(conn, season_id, RUNNING, [PAUSED])
    for match_id in sorted(cast(set[str], conn.smembers(failed_key(season_id)))):
        lua.UNFAIL(
            conn,
            [keys.season(season_id), failed_key(season_id), keys.season_matches(season_id)],
            [match_id, SCHEDULED],
        )
    publish(conn, "season_resumed", season_id)
    return season_row(conn, season_id)


def _reveal_fields(conn: redis.Redis, season_id: str) -> dict[str, str]:
    seed = conn.get(secret_key(season_id))
    return {"seed": str(seed or ""), "finished_ms": str(now_ms())}


CANCELLED_MATCH = MatchState.CANCELLED
"""A season match that will never be played: it was scheduled or queued at the cancel."""


PENDING_NOTICES_MAX = 16
"""Undelivered notices kept per bot (the oldest go first)."""
PENDING_NOTICES_TTL_S = 7 * 24 * 3600
"""A bot's undelivered notices are forgotten after this long without a new one."""


def season_end_entry(season_id: str) -> str:
    """The ``keys.bot_pending_notices`` entry of a season's end."""
    return f"season_end:{season_id}"


def _queue_season_end(conn: redis.Redis, season_id: str) -> None:
    """Keep a ``season_end`` notice for every bot of the season until a stream of the bot
    gets it (``referee.gateway.notices``): a bot that is not connected when the season
    ends gets it when it reconnects. Written before the event is published."""
    raw = conn.hget(keys.season(season_id), "spec")
    bots = SeasonSpec.from_json(str(raw)).bots if raw else ()
    entry = season_end_entry(season_id)
    pipe = conn.pipeline(transaction=False)
    for bot in dict.fromkeys(bots):
        key = keys.bot_pending_notices(bot)
        pipe.lrem(key, 0, entry)
        pipe.rpush(key, entry)
        pipe.ltrim(key, -PENDING_NOTICES_MAX, -1)
        pipe.expire(key, PENDING_NOTICES_TTL_S)
    pipe.execute()


def cancel_season(conn: redis.Redis, season_id: str) -> SeasonRow:
    """Stop a season for good.

    At once, in one step: the state becomes ``cancelled`` and every match not yet running
    (scheduled, queued or failed) becomes ``cancelled``: no new match of the season starts
    (a worker that dequeues one plays nothing, :func:`workers.runner.run_match`). Matches
    already running are let finish and count. The seed is revealed only when none of the
    season's matches can play any more (:func:`reveal_if_settled`, run by the driver)."""
    try:
        lua.CANCEL(
            conn,
            [
                keys.season(season_id),
                keys.season_matches(season_id),
                keys.season_cancelled(season_id),
            ],
            [now_ms()],
        )
    except redis.ResponseError as exc:
        if "no such season" in str(exc):
            raise NotFoundError(
                f"no season {season_id!r}: `arena season list` shows them"
            ) from None
        state = str(exc).rsplit(" ", 1)[-1]
        raise StateConflict(
            f"season {season_id} is {state}; it can become cancelled only when it is "
            "created, running or paused"
        ) from None
    recompute_standings(conn, season_id)
    _queue_season_end(conn, season_id)
    publish(conn, "season_cancelled", season_id, data={"running": _still_running(conn, season_id)})
    reveal_if_settled(conn, season_id)
    return season_row(conn, season_id)


def _still_running(conn: redis.Redis, season_id: str) -> int:
    return sum(1 for st in match_states(conn, season_id).values() if st in IN_FLIGHT)


def reveal_if_settled(conn: redis.Redis, season_id: str) -> bool:
    """A cancelled season's seed is revealed once none of its matches is queued or
    running (a retried match is queued again: it still counts as able to play)."""
    row = season_row(conn, season_id)
    if row.state != CANCELLED or row.seed or _still_running(conn, season_id):
        return False
    seed = conn.get(secret_key(season_id))
    if not seed:
        return False
    conn.hset(keys.season(season_id), "seed", str(seed))
    recompute_standings(conn, season_id)
    publish(conn, "season_seed_revealed", season_id, data={"seed": str(seed)})
    return True


def cancelled_unrevealed(conn: redis.Redis) -> list[str]:
    """Cancelled seasons whose seed is not revealed yet (matches of them still run)."""
    ids = cast(list[str], conn.zrange(keys.SEASONS, 0, -1))
    if not ids:
        return []
    pipe = conn.pipeline(transaction=False)
    for season_id in ids:
        pipe.hmget(keys.season(season_id), "state", "seed")
    rows: Iterable[list[str | None]] = pipe.execute()
    return [s for s, (st, seed) in zip(ids, rows, strict=True) if st == CANCELLED and not seed]


def finish_if_complete(conn: redis.Redis, season_id: str) -> bool:
    """running -> finished once every match is done or failed; reveals the seed."""
    row = season_row(conn, season_id)
    if row.state != RUNNING or row.settled < row.matches_total:
        return False
    standings = recompute_standings(conn, season_id)  # final, before anyone sees "finished"
    try:
        _transition(conn, season_id, FINISHED, [RUNNING], _reveal_fields(conn, season_id))
    except ConflictError:
        return False  # another referee finished it, or it was paused meanwhile
    top = standings["rows"][0]["bot"] if standings["rows"] else ""
    _queue_season_end(conn, season_id)
    publish(
        conn,
        "season_finished",
        season_id,
        data={"seed": conn.get(secret_key(season_id)), "leader": top},
    )
    return True


# --- matches: enqueueing and counting -----------------------------------------------------


def match_spec_of(
    season_id: str, spec: SeasonSpec, rules: Mapping[str, Any], m: ScheduledMatch
) -> MatchSpec:
    """The worker's MatchSpec of one scheduled match."""
    return MatchSpec(
        match_id=m.match_id,
        game=spec.game,
        rules=dict(rules),
        seats=m.seats,
        seed=m.seed,
        deals=m.deals,
        time_control=spec.time_control,
        season=season_id,
        strikes=spec.options.strikes,
        autoplay_forced=spec.options.autoplay_forced,
        fallback=FallbackMode(spec.options.fallback),
    )


def scheduled_from_dict(data: Mapping[str, Any]) -> ScheduledMatch:
    from referee.games.base import DealSpec

    deals = data.get("deals")
    return ScheduledMatch(
        index=int(data["index"]),
        match_id=str(data["match_id"]),
        seats=tuple(data["seats"]),
        seed=int(data["seed"]),
        deals=None if deals is None else tuple(DealSpec.from_dict(d) for d in deals),
        boards=None if data.get("boards") is None else tuple(data["boards"]),
    )


IN_FLIGHT = (MatchState.QUEUED, MatchState.RUNNING)


def top_up(conn: redis.Redis, season_id: str) -> int:
    """Enqueue scheduled matches of a running season until ``window`` are in flight.

    Holds the season's lock meanwhile, so two referees do not both fill the window; the
    queue itself refuses a match that is queued, running or committed already.
    """
    from referee.queue import enqueue_match

    token = secrets.token_hex(8)
    if not conn.set(lock_key(season_id), token, nx=True, px=10_000):
        return 0
    try:
        row = season_row(conn, season_id)
        if row.state != RUNNING:
            return 0
        spec = SeasonSpec.from_json(row.spec)
        rules = json.loads(row.rules)
        states = match_states(conn, season_id)
        in_flight = sum(1 for s in states.values() if s in IN_FLIGHT)
        room = spec.options.window - in_flight
        if room <= 0:
            return 0
        added = 0
        for data in get_schedule(conn, season_id):
            if added >= room:
                break
            if states.get(data["match_id"], SCHEDULED) != SCHEDULED:
                continue
            match = scheduled_from_dict(data)
            if enqueue_match(conn, match_spec_of(season_id, spec, rules, match)):
                added += 1
        return added
    finally:
        lua.UNLOCK(conn, [lock_key(season_id)], [token])


def rescue_lost(conn: redis.Redis, season_id: str, older_than_ms: float) -> list[str]:
    """Enqueue again the season's matches that are ``queued`` with no RQ job behind them.

    ``enqueue_match`` marks a match queued, then creates its job; a referee killed between
    the two leaves a match that no worker will ever run. Such a match (queued for longer
    than ``older_than_ms``, its job missing) is marked failed (only if its state is still
    the one read) and enqueued again: the queue accepts a failed match.
    """
    from rq.job import Job

    from referee.queue import enqueue_match, job_id, write_state

    rescued: list[str] = []
    row = season_row(conn, season_id)
    spec = SeasonSpec.from_json(row.spec)
    rules = json.loads(row.rules)
    schedule = {d["match_id"]: d for d in get_schedule(conn, season_id)}
    cutoff = now_ms() - older_than_ms
    for match_id, state in match_states(conn, season_id).items():
        if state != MatchState.QUEUED or match_id not in schedule:
            continue
        key = keys.match_state(match_id)
        with conn.pipeline() as pipe:
            try:
                pipe.watch(key, keys.match_result(match_id))  # type: ignore[no-untyped-call]
                status = cast(dict[str, str], pipe.hgetall(key))
                retries = int(status.get("retries") or 0)
                jid = job_id(match_id, int(status.get("attempt") or 0) if retries else 0)
                if (
                    status.get("state") != MatchState.QUEUED
                    or float(status.get("queued_ms") or now_ms()) > cutoff
                    or pipe.exists(keys.match_result(match_id))
                    or pipe.exists(Job.key_for(jid))
                ):
                    continue
                pipe.multi()
                # the season's entry stays queued: enqueue_match below queues it again
                write_state(
                    pipe, match_id, "", MatchState.FAILED, {"error": "job lost; enqueued again"}
                )
                pipe.execute()
            except redis.WatchError:
                continue
        match = scheduled_from_dict(schedule[match_id])
        if enqueue_match(conn, match_spec_of(season_id, spec, rules, match)):
            rescued.append(match_id)
    return rescued


def count_done(
    conn: redis.Redis,
    season_id: str,
    match_id: str,
    decisions: int,
    fold: tallies.Fold | None = None,
) -> bool:
    """Count a committed result once (True the first time); never the result of a match
    the season's cancel stopped (an attempt that commits after it, e.g. one whose host was
    judged lost before the cancel and played on). In the same atomic step, ``fold`` (the
    result's :func:`tallies.fold_of`) goes into the season's tallies and tally log, so a
    result counted twice never folds twice."""
    fold = fold or tallies.Fold({}, "", tallies.empty_entry(match_id))
    return bool(
        lua.COUNT_DONE(
            conn,
            [
                keys.season(season_id),
                counted_key(season_id),
                failed_key(season_id),
                keys.season_cancelled(season_id),
                keys.season_tallies(season_id),
                keys.season_tally_log(season_id),
            ],
            [match_id, str(decisions), fold.unit, fold.entry_text(), *fold.lua_args()],
        )
    )


def count_failed(conn: redis.Redis, season_id: str, match_id: str) -> bool:
    """Count a failed match once (True the first time; never after it was done)."""
    return bool(
        lua.COUNT_FAILED(
            conn,
            [keys.season(season_id), counted_key(season_id), failed_key(season_id)],
            [match_id],
        )
    )


def season_boards(conn: redis.Redis, season_id: str) -> dict[str, list[tuple[str, int]]]:
    """Field duplicate: the (board, rotation) of each deal, per match id of the season."""
    return {
        str(m["match_id"]): [
            (label, int(d["rotation"])) for label, d in zip(m["boards"], m["deals"], strict=True)
        ]
        for m in get_schedule(conn, season_id)
        if m.get("boards") and m.get("deals")
    }


def full_standings(conn: redis.Redis, season_id: str) -> Standings:
    """Standings from ALL the season's counted results, from scratch (the check of the
    stored tallies: ``arena season verify``); not stored."""
    row = season_row(conn, season_id)
    spec = SeasonSpec.from_json(row.spec)
    return compute_standings(
        season_id,
        spec.game,
        spec.bots,
        committed_results(conn, season_id),
        matches_total=row.matches_total,
        boards=season_boards(conn, season_id),
        rank_by=spec.options.rank_by or "elo",
    )


def rebuild_tallies(conn: redis.Redis, season_id: str) -> None:
    """Fold every counted result again into fresh tallies (a season counted before the
    tallies existed, or whose tallies disagree with its counted set)."""
    boards = season_boards(conn, season_id)
    bots = get_spec(conn, season_id).bots
    with conn.pipeline() as pipe:
        pipe.watch(counted_key(season_id))  # type: ignore[no-untyped-call]
        folds = [
            tallies.fold_of(r, boards.get(r["match_id"]), bots)
            for r in committed_results(conn, season_id)
        ]
        total = tallies.Tallies()
        for fold in folds:
            total.add(fold)
        pipe.multi()
        for key in (keys.season_tallies, keys.season_tally_log, keys.season_ratings):
            pipe.delete(key(season_id))
        mapping: dict[str, str] = {"n": str(total.n)}
        if total.unit:
            mapping["unit"] = total.unit
        for bot, counts in total.bots.items():
            mapping.update({f"{name}:{bot}": repr(float(v)) for name, v in counts.items() if v})
        pipe.hset(keys.season_tallies(season_id), mapping=cast(Any, mapping))
        if folds:
            pipe.rpush(keys.season_tally_log(season_id), *(f.entry_text() for f in folds))
        pipe.execute()


def _read_tallies(conn: redis.Redis, season_id: str) -> tallies.Tallies:
    """The stored tallies, rebuilt first if they do not cover the counted set."""
    for _ in range(3):
        with conn.pipeline(transaction=True) as pipe:
            pipe.hgetall(keys.season_tallies(season_id))
            pipe.scard(counted_key(season_id))
            data, counted = pipe.execute()
        stored = tallies.Tallies.from_hash(cast(dict[str, str], data))
        if stored.n == int(counted):
            return stored
        with contextlib.suppress(redis.WatchError):
            rebuild_tallies(conn, season_id)
    raise ConflictError(f"season {season_id}: its tallies could not be rebuilt; try again")


def refit_ratings(conn: redis.Redis, season_id: str, names: Sequence[str]) -> tallies.Ratings:
    """Refit the ratings from the tally log (carrying the live ones on from the last
    refit) and store them unless a refit of more results is stored already."""
    raw = conn.get(keys.season_ratings(season_id))
    last = tallies.Ratings.from_json(str(raw)) if raw else None
    log_key = keys.season_tally_log(season_id)
    texts = cast(list[str], conn.lrange(log_key, 0, -1))
    entries: list[dict[str, Any]] = json.loads("[" + ",".join(texts) + "]")
    ratings = tallies.refit(names, entries, last)
    lua.STORE_RATINGS(conn, [keys.season_ratings(season_id)], [ratings.to_json(), ratings.folded])
    return ratings


CHECKPOINTS_KEPT = 48
"""Points of a season's history kept for the league page's charts (``keys.season_checkpoints``):
past this, every other older point goes."""


def store_checkpoint(
    conn: redis.Redis, season_id: str, ratings: tallies.Ratings, stored: tallies.Tallies
) -> bool:
    """Add a point of the season's history (the Elo fit of a refit, each bot's score sum)
    at ``ratings.folded`` results; what the league page's charts draw."""
    if not ratings.folded:
        return False
    fit = ratings.fit
    point = {
        "n": ratings.folded,
        "elo": {
            b: [round(fit.elo[b], 2), round(fit.low[b], 2), round(fit.high[b], 2)]
            for b in fit.elo
            if stored.bots.get(b, {}).get("matches")
        },
        "score": {b: t.get("score", 0.0) for b, t in stored.bots.items() if t.get("matches")},
    }
    return bool(
        lua.STORE_CHECKPOINT(
            conn,
            [keys.season_checkpoints(season_id)],
            [ratings.folded, json.dumps(point, separators=(",", ":")), CHECKPOINTS_KEPT],
        )
    )


def checkpoints(conn: redis.Redis, season_id: str) -> list[dict[str, Any]]:
    """The season's history points (:func:`store_checkpoint`), oldest first."""
    points = cast(list[str], conn.zrange(keys.season_checkpoints(season_id), 0, -1))
    return [json.loads(p) for p in points]


def recompute_standings(conn: redis.Redis, season_id: str, *, refit: bool = True) -> Standings:
    """The standings from the stored tallies, with the ratings refitted first (``refit``:
    a point of the season's history is added too) or as the last refit left them; stored
    unless newer ones are."""
    row = season_row(conn, season_id)
    spec = SeasonSpec.from_json(row.spec)
    stored = _read_tallies(conn, season_id)
    names = tallies.names_of(spec.bots, stored)
    raw = None if refit else conn.get(keys.season_ratings(season_id))
    if raw:
        ratings = tallies.Ratings.from_json(str(raw))
    else:
        ratings = refit_ratings(conn, season_id, names)
        store_checkpoint(conn, season_id, ratings, stored)
    standings = tallies.standings_of(
        season_id,
        spec.game,
        spec.bots,
        stored,
        ratings,
        matches_total=row.matches_total,
        rank_by=spec.options.rank_by or "elo",
    )
    text = json.dumps(standings, separators=(",", ":"))
    lua.STORE_STANDINGS(conn, [keys.season_standings(season_id)], [text, standings["matches_done"]])
    return standings


def running_seasons(conn: redis.Redis) -> list[str]:
    """Ids of the seasons in state running or paused (those with work to follow)."""
    ids = cast(list[str], conn.zrange(keys.SEASONS, 0, -1))
    if not ids:
        return []
    pipe = conn.pipeline(transaction=False)
    for season_id in ids:
        pipe.hget(keys.season(season_id), "state")
    states: Iterable[str | None] = pipe.execute()
    return [s for s, st in zip(ids, states, strict=True) if st in (RUNNING, PAUSED)]
