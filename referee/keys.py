"""Every Redis key the platform uses, in one place.

All keys start with ``arena:``. The owner named beside each group writes it; anyone may
read it. Add new keys here rather than spelling them out elsewhere.
"""

from __future__ import annotations

PREFIX = "arena:"

# --- bot registry (referee.bots) -------------------------------------------------------
BOTS = PREFIX + "bots"  # set of bot names


def bot(name: str) -> str:
    """Hash: owner, description, token_sha256, revoked, created_at; for a hosted bot also
    active_version (the version its next match runs; absent: an external bot), last_version
    and hosted_uid (``referee.hosting.versions``)."""
    return f"{PREFIX}bot:{name}"


def bot_versions(name: str) -> str:
    """Hash: version number -> JSON of a hosted bot's version (archive sha256, language,
    build state; ``referee.hosting.versions.VersionInfo``); the code lives in the data dir."""
    return f"{PREFIX}bot:{name}:versions"


HOSTED_UIDS = PREFIX + "hosted:uids"  # counter: the last user id offset given to a hosted bot
HOSTING_EVENTS = PREFIX + "hosted:events"
"""Pub/sub channel: JSON {bot, version, event} when a hosted bot's version is built
(``activated``) or fails to build (``build_failed``), so the run side restarts a bot on its
new version before its next match."""


def hosted_run_events(name: str) -> str:
    """List, newest first, bounded: JSON {ts_ms, bot, event, detail} of what happened to a
    hosted bot's sandbox (started, exited, oom_kill, ...; referee.hosting.supervisor)."""
    return f"{PREFIX}bot:{name}:hosted-events"


def bot_pending_notices(name: str) -> str:
    """List of notices not yet delivered to the bot (``season_end:<season>``), newest last:
    written when a season ends, removed (LREM, so one referee delivers each) when a stream
    of the bot gets it; bounded and expiring (``referee.seasons.store.PENDING_NOTICES_*``)."""
    return f"{PREFIX}bot:{name}:pending-notices"


TOKEN_INDEX = PREFIX + "tokens"  # hash: token sha256 -> bot name
TOKEN_EVENTS = PREFIX + "tokens:changed"
"""Pub/sub channel: a bot's name, published after its token was revoked or rotated, so every
referee ends the streams opened with the old token at once (``referee.gateway.auth``)."""


def bot_streams(name: str) -> str:
    """Hash: stream id -> JSON {referee, link, since_ms, seen_ms, concurrency, ...} of open
    streams: the bot-streams directory. ``link`` is the address of the referee's internal
    port, where match hosts send this bot's turns (docs/workers.md)."""
    return f"{PREFIX}bot:{name}:streams"


# --- matches (workers) -------------------------------------------------------------------
def match_spec(match_id: str) -> str:
    """String (JSON): the match spec a ``run_match`` job loads."""
    return f"{PREFIX}match:{match_id}:spec"


def match_state(match_id: str) -> str:
    """Hash: state (``referee.match.spec.MatchState``), attempt, worker, error, timestamps, and
    ``revealed``: the first attempt that showed the bots its deals (``workers.runner.reveal``)."""
    return f"{PREFIX}match:{match_id}:state"


def match_attempt(match_id: str) -> str:
    """String (int): the latest attempt number handed out (INCR)."""
    return f"{PREFIX}match:{match_id}:attempt"


def match_record(match_id: str) -> str:
    """String (JSON): the committed match record (requests, actions, timings, events)."""
    return f"{PREFIX}match:{match_id}:record"


def match_result(match_id: str) -> str:
    """String (JSON): the committed result; set only if absent (exactly once)."""
    return f"{PREFIX}match:{match_id}:result"


RESULTS_STREAM = PREFIX + "results"  # stream: one entry per committed match result
MATCHES_RECENT = PREFIX + "matches:recent"  # sorted set: match id -> finish time (ms)
MATCHES_INDEX = PREFIX + "matches:index"  # sorted set: match id -> first enqueue time (ms)
MATCHES_HELD = PREFIX + "matches:held"
"""Hash: match id -> season, committed results the season driver has not counted yet
because another table may still play their boards (``referee.seasons.embargo``)."""
MATCHES_RUNNING = PREFIX + "matches:running"
"""Sorted set: match id -> its host's last heartbeat (ms); owned by
``referee.queue.RunningMatches``."""

# --- seasons (referee.seasons) -----------------------------------------------------------
SEASONS = PREFIX + "seasons"  # sorted set: season id -> created time (ms)


def season(season_id: str) -> str:
    """Hash: spec (JSON), state, seed hash, counters."""
    return f"{PREFIX}season:{season_id}"


def season_matches(season_id: str) -> str:
    """Hash: match id -> state, for every scheduled match of a season."""
    return f"{PREFIX}season:{season_id}:matches"


def season_standings(season_id: str) -> str:
    """String (JSON): the latest standings, recomputed from committed results."""
    return f"{PREFIX}season:{season_id}:standings"


def season_secret(season_id: str) -> str:
    """String: the season seed, kept here until the season hash reveals it at the end."""
    return f"{PREFIX}season:{season_id}:secret"


def season_schedule(season_id: str) -> str:
    """String (JSON): the scheduled matches (seats, match seed, deal specs) in play order."""
    return f"{PREFIX}season:{season_id}:schedule"


def season_counted(season_id: str) -> str:
    """Set: match ids whose committed result the season has counted (exactly once)."""
    return f"{PREFIX}season:{season_id}:counted"


def season_tallies(season_id: str) -> str:
    """Hash: per-bot standings tallies (``<field>:<bot>``), ``n`` results folded, ``unit``;
    folded by the counting script, once per counted result (referee/seasons/tallies.py)."""
    return f"{PREFIX}season:{season_id}:tallies"


def season_tally_log(season_id: str) -> str:
    """List: one compact JSON entry per counted result, in counting order: what a refit
    of the ratings reads instead of the results."""
    return f"{PREFIX}season:{season_id}:tallylog"


def season_ratings(season_id: str) -> str:
    """String (JSON): the last refit of the season's ratings (referee/seasons/tallies.py)."""
    return f"{PREFIX}season:{season_id}:ratings"


def season_checkpoints(season_id: str) -> str:
    """Sorted set: a point of the season's history per refit of its ratings (score: the
    results folded; member: JSON ``{n, elo: {bot: [elo, low, high]}, score: {bot: sum}}``),
    thinned to at most ``referee.seasons.store.CHECKPOINTS_KEPT``: what the league page's
    charts draw (referee/web/history.py)."""
    return f"{PREFIX}season:{season_id}:checkpoints"


def season_cancelled(season_id: str) -> str:
    """Set: match ids the season's cancel stopped; a result of theirs is never counted."""
    return f"{PREFIX}season:{season_id}:cancelled"


def season_failed(season_id: str) -> str:
    """Set: match ids the season has counted as failed."""
    return f"{PREFIX}season:{season_id}:failed"


def season_lock(season_id: str) -> str:
    """String: short lock held by the referee that tops up a season's matches in flight."""
    return f"{PREFIX}season:{season_id}:lock"


# --- metrics written by workers, read by the referee's collector (referee.metrics) ------
METRICS_COUNTERS = PREFIX + "metrics:counters"  # hash: "name|label=value,..." -> number


def metrics_histogram(name: str) -> str:
    """Hash: "labels|le" -> cumulative count, plus "labels|sum" and "labels|count"."""
    return f"{PREFIX}metrics:hist:{name}"


METRICS_HOSTS = PREFIX + "metrics:hosts"  # set: match hosts whose totals hash exists


def host_metrics(host: str) -> str:
    """Hash of one match host's running totals, written whole (absolute values) once a
    second: "c|name|labels" -> counter, "h|name|labels|le" -> histogram part
    (referee.metrics_store, docs/metrics.md)."""
    return f"{PREFIX}metrics:host:{host}"


WORKERS_ALIVE = PREFIX + "workers"  # hash: worker name -> last heartbeat (ms)

# --- spectator feed ----------------------------------------------------------------------
EVENTS_CHANNEL = PREFIX + "events"  # pub/sub: best-effort league events (at most once)
BOT_NOTICES_CHANNEL = PREFIX + "bot-notices"  # pub/sub: {bot, notice} for that bot's streams

# --- continuous ladders (referee.ladder) ---------------------------------------------------
LADDERS = PREFIX + "ladders"  # sorted set: ladder id -> created time (ms)


def ladder(ladder_id: str) -> str:
    """Hash: game, preset, rules, sizes, tables per batch, deals, state, counters."""
    return f"{PREFIX}ladder:{ladder_id}"


def ladder_secret(ladder_id: str) -> str:
    """String: the ladder's seed (its batches' seasons derive theirs from it)."""
    return f"{PREFIX}ladder:{ladder_id}:secret"


def ladder_log(ladder_id: str) -> str:
    """List (JSON records): joins, leaves and batches in the order they were decided."""
    return f"{PREFIX}ladder:{ladder_id}:log"


def ladder_state(ladder_id: str) -> str:
    """String (JSON): the fold of the log (entries, ratings) up to its ``upto`` records."""
    return f"{PREFIX}ladder:{ladder_id}:state"


def ladder_lock(ladder_id: str) -> str:
    """String with a TTL: the referee currently stepping this ladder."""
    return f"{PREFIX}ladder:{ladder_id}:lock"
