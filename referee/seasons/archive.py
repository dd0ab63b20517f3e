"""``arena season archive ID``: a finished season's live keys out of Redis, its proof kept.

The archive is one object in the record store (``referee.records``), zstd-compressed JSON::

    {"format": 1, "season": ID, "archived_ms": ...,
     "info": {...the season hash: spec, rules, owners, seed, seed_sha256, counters...},
     "schedule": [...], "standings": {...},
     "matches": {MATCH_ID: {"state": ..., "counted": bool, "result": {...} | null,
                            "record": {"ref", "store", "sha256", "bytes"} | null}}}

Every record it names is in the store, named by its digest (a record still inline in
Redis, from before the record store, is written there first). Before anything is dropped
the season is verified from the archive just written (``referee.seasons.verify``); then
every per-match key of the season goes (spec, state, attempt, result, record pointer, its
entries in the match indexes) and the season's per-match keys (schedule, match states,
counted / failed / cancelled sets: every ``arena:season:ID:*`` key but the standings and
the checkpoints the league page charts). The season hash stays, with ``archive`` (the
archive's pointer), so ``season list``, ``season standings`` and the league page still
show it, and ``season verify`` reads the archive.
What stays in Redis per archived season is its hash, its standings and its checkpoints
(at most ``store.CHECKPOINTS_KEPT``): nothing per match.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote

import redis

from referee import keys
from referee.errors import ConfigError, RecordCorrupt, StateConflict
from referee.match.season_row import Standings
from referee.seasons import store

ARCHIVE_FORMAT = 1
ARCHIVE_FIELD = "archive"
"""Field of the season hash: the archive's pointer (JSON), once the season is archived."""


@dataclass(slots=True)
class SeasonArchive:
    """A season as its archive holds it."""

    season: str
    info: dict[str, str]
    schedule: list[dict[str, Any]]
    standings: Standings | None
    matches: dict[str, dict[str, Any]] = field(default_factory=dict)
    archived_ms: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": ARCHIVE_FORMAT,
            "season": self.season,
            "archived_ms": self.archived_ms,
            "info": self.info,
            "schedule": self.schedule,
            "standings": self.standings,
            "matches": self.matches,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SeasonArchive:
        if data.get("format") != ARCHIVE_FORMAT:
            raise RecordCorrupt(
                f"season archive format {data.get('format')!r}: expected {ARCHIVE_FORMAT}"
            )
        return cls(
            season=str(data["season"]),
            info=dict(data["info"]),
            schedule=list(data["schedule"]),
            standings=data.get("standings"),
            matches=dict(data["matches"]),
            archived_ms=int(data.get("archived_ms", 0)),
        )

    def result(self, match_id: str) -> dict[str, Any] | None:
        entry = self.matches.get(match_id)
        return None if entry is None else entry.get("result")

    def record(self, match_id: str) -> dict[str, Any] | None:
        """The match's record, read from the store through its pointer (digest checked)."""
        from referee.records import RecordRef, read_ref

        entry = self.matches.get(match_id)
        if entry is None or not entry.get("record"):
            return None
        return read_ref(RecordRef.from_dict(entry["record"]))


@dataclass(slots=True)
class ArchiveReport:
    season: str
    location: str
    matches: int
    records: int
    migrated: int
    orphans_removed: int
    keys_dropped: int
    archive_bytes: int


def archive_key(season_id: str, digest: str) -> str:
    return f"seasons/{quote(season_id, safe='._-@+:')}/archive-{digest[:24]}.json.zst"


def build_archive(conn: redis.Redis, season_id: str) -> tuple[SeasonArchive, int]:
    """The season's archive from its live keys, and how many inline records were written
    to the store on the way. Refused (``StateConflict``) unless the season has ended and
    none of its matches may still play."""
    from referee.queue import get_result
    from referee.records import default_store, get_ref, save_record

    info = store.get_season(conn, season_id)
    if info.get(ARCHIVE_FIELD):
        raise StateConflict(f"season {season_id} is archived already")
    if info.get("state") not in store.ENDED or not info.get("seed"):
        raise StateConflict(
            f"season {season_id} is {info.get('state')}: only a finished or cancelled season "
            "(its seed revealed) can be archived; cancel it or let it finish first"
        )
    states = store.match_states(conn, season_id)
    playing = sorted(m for m, s in states.items() if s in ("queued", "running"))
    if playing:
        raise StateConflict(
            f"season {season_id} still has {len(playing)} match(es) queued or running "
            f"({', '.join(playing[:3])}); archive it when they have settled"
        )
    schedule = store.get_schedule(conn, season_id)
    counted = cast(set[str], conn.smembers(store.counted_key(season_id)))
    records = default_store()
    migrated = 0
    matches: dict[str, dict[str, Any]] = {}
    for data in schedule:
        match_id = str(data["match_id"])
        result = get_result(conn, match_id)
        ref = get_ref(conn, match_id)
        if ref is None and result is not None:
            raw = conn.get(keys.match_record(match_id))
            if raw is not None:  # inline in Redis (before the record store): move it
                ref = save_record(records, json.loads(raw))
                migrated += 1
        matches[match_id] = {
            "state": states.get(match_id, ""),
            "counted": match_id in counted,
            "result": result,
            "record": None if ref is None else json.loads(ref.to_json()),
        }
    archive = SeasonArchive(
        season=season_id,
        info={k: v for k, v in info.items() if k != "season"},
        schedule=schedule,
        standings=store.get_standings(conn, season_id),
        matches=matches,
        archived_ms=int(time.time() * 1000),
    )
    return archive, migrated


def write_archive(archive: SeasonArchive) -> dict[str, Any]:
    """Write the archive to the record store; its pointer (as the season hash keeps it)."""
    import zstandard

    from referee.records import default_store

    text = json.dumps(archive.to_dict(), sort_keys=True, separators=(",", ":"))
    data = zstandard.ZstdCompressor(level=10).compress(text.encode())
    digest = hashlib.sha256(data).hexdigest()
    records = default_store()
    key = archive_key(archive.season, digest)
    records.put(key, data)
    return {"ref": key, "store": records.url, "sha256": digest, "bytes": len(data)}


def read_archive(pointer: Mapping[str, Any] | str) -> SeasonArchive:
    """The archive a pointer names, its digest checked."""
    import zstandard

    from referee.records import open_store

    ref = json.loads(pointer) if isinstance(pointer, str) else dict(pointer)
    data = open_store(str(ref["store"])).get(str(ref["ref"]))
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref["sha256"]:
        raise RecordCorrupt(
            f"season archive {ref['ref']}: SHA-256 {digest[:16]}… differs from "
            f"{ref['sha256'][:16]}…"
        )
    try:
        return SeasonArchive.from_dict(json.loads(zstandard.ZstdDecompressor().decompress(data)))
    except (zstandard.ZstdError, ValueError, KeyError, TypeError) as exc:
        raise RecordCorrupt(f"season archive {ref['ref']} is not readable: {exc}") from exc


def archive_of(conn: redis.Redis, season_id: str) -> SeasonArchive | None:
    """The season's archive if it was archived, else None."""
    pointer = conn.hget(keys.season(season_id), ARCHIVE_FIELD)
    return None if not pointer else read_archive(cast(str, pointer))


def _live_keys(conn: redis.Redis, season_id: str, match_ids: list[str]) -> list[str]:
    out = [
        k
        for m in match_ids
        for k in (
            keys.match_spec(m),
            keys.match_state(m),
            keys.match_attempt(m),
            keys.match_result(m),
            keys.match_record(m),
        )
    ]
    keep = {keys.season_standings(season_id), keys.season_checkpoints(season_id)}
    pattern = keys.season(season_id).replace("*", r"\*") + ":*"
    out += [str(k) for k in conn.scan_iter(match=pattern, count=500) if str(k) not in keep]
    return out


def archive_season(conn: redis.Redis, season_id: str) -> ArchiveReport:
    """Archive the season (see the module's docstring); refused if the archive just written
    does not verify."""
    from referee.records import default_store, orphans
    from referee.seasons.verify import verify_archive

    archive, migrated = build_archive(conn, season_id)
    pointer = write_archive(archive)
    report = verify_archive(read_archive(pointer))
    if not report.ok:
        raise ConfigError(
            f"season {season_id}: the archive does not verify, nothing was dropped: "
            + "; ".join(report.problems[:3])
        )
    records = default_store()
    named = {str(m["record"]["ref"]) for m in archive.matches.values() if m.get("record")}
    stray = orphans(records, season_id, named)
    for key in stray:
        records.delete(key)
    match_ids = [str(m["match_id"]) for m in archive.schedule]
    dropped = _live_keys(conn, season_id, match_ids)
    with conn.pipeline(transaction=True) as pipe:
        pipe.hset(
            keys.season(season_id),
            mapping={ARCHIVE_FIELD: json.dumps(pointer), "archived_ms": archive.archived_ms},
        )
        for start in range(0, len(dropped), 500):
            pipe.unlink(*dropped[start : start + 500])
        for start in range(0, len(match_ids), 500):
            chunk = match_ids[start : start + 500]
            pipe.zrem(keys.MATCHES_RECENT, *chunk)
            pipe.zrem(keys.MATCHES_INDEX, *chunk)
            pipe.hdel(keys.MATCHES_HELD, *chunk)
        pipe.execute()
    return ArchiveReport(
        season=season_id,
        location=f"{pointer['store']} {pointer['ref']}",
        matches=len(match_ids),
        records=sum(1 for m in archive.matches.values() if m.get("record")),
        migrated=migrated,
        orphans_removed=len(stray),
        keys_dropped=len(dropped),
        archive_bytes=int(pointer["bytes"]),
    )
