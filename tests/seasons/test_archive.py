"""``arena season archive ID`` (referee/seasons/archive.py): a finished season leaves Redis
but for its hash and standings, and ``season verify`` passes from the archive alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from referee import bots, keys, queue, records
from referee.cli.main import main
from referee.errors import StateConflict
from referee.seasons import archive, store
from referee.seasons.driver import SeasonDriver
from referee.seasons.verify import verify_season
from tests.seasons.test_store_driver import BOTS, _drive, _spec


@pytest.fixture
def conn(redis_url: str) -> Iterator[redis.Redis]:
    client = store.connect(redis_url)
    for name in BOTS:
        bots.register(client, name)
    yield client
    client.close()


SEASON = "archived-s1"
"""A name no other test uses: the record store is the session's (one data dir), and another
test's records under the same season's prefix would count as this season's strays."""


def _season_keys(conn: redis.Redis, season: str) -> list[str]:
    return sorted(str(k) for k in conn.scan_iter(match=f"{keys.season(season)}*"))


def test_an_archived_season_keeps_nothing_per_match_in_redis_and_verifies_from_its_archive(
    conn: redis.Redis, redis_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store.create_season(conn, _spec(SEASON, window=3))
    store.start_season(conn, SEASON)
    _drive(conn, SEASON, SeasonDriver(conn))
    ids = [m["match_id"] for m in store.get_schedule(conn, SEASON)]
    standings = store.get_standings(conn, SEASON)
    # one record still inline in Redis (a data dir from before the record store) ...
    inline = queue.get_record(conn, ids[0])
    assert inline is not None and records.get_ref(conn, ids[0]) is not None
    conn.set(keys.match_record(ids[0]), json.dumps(inline))
    # ... and a stray record no commit names (a host died between its write and its commit)
    store_ = records.default_store()
    stray = records.record_key(SEASON, ids[1], 9, "f" * 64)
    store_.put(stray, b"never committed")

    assert main(["season", "archive", SEASON, "--redis-url", redis_url]) == 0
    out = capsys.readouterr().out
    assert f"season {SEASON} archived: 3 matches, 3 records" in out
    assert "1 inline records moved to the store" in out and "1 stray records removed" in out

    for match_id in ids:  # nothing per match is left in Redis
        for key in (keys.match_result, keys.match_record, keys.match_state, keys.match_spec):
            assert not conn.exists(key(match_id)), key(match_id)
        assert conn.zscore(keys.MATCHES_RECENT, match_id) is None
    assert _season_keys(conn, SEASON) == [  # and its chart's points, at most CHECKPOINTS_KEPT
        keys.season(SEASON),
        keys.season_checkpoints(SEASON),
        keys.season_standings(SEASON),
    ]
    assert conn.zcard(keys.season_checkpoints(SEASON)) <= store.CHECKPOINTS_KEPT
    assert store.get_standings(conn, SEASON) == standings  # the league page still shows it
    assert store_.list(records.season_prefix(SEASON)) and stray not in store_.list("matches/")

    report = verify_season(conn, SEASON)
    assert report.ok, report.problems
    assert report.matches_checked == 3 and report.deals_checked >= 6
    assert main(["season", "verify", SEASON, "--redis-url", redis_url]) == 0
    out_dir = tmp_path / "export"  # the export reads results and records from the archive
    assert main(["season", "export", SEASON, str(out_dir), "--redis-url", redis_url]) == 0
    exported = [json.loads(line) for line in (out_dir / "results.jsonl").read_text().splitlines()]
    assert len(exported) == 3  # each the full result: the row completed from its record
    assert all("penalties" in d and "detail" in d for r in exported for d in r["result"]["deals"])
    assert sorted(p.name for p in (out_dir / "matches").iterdir()) == [
        f"{m}.json.gz" for m in sorted(ids)
    ]

    # the archive really is what verify reads: a record changed in the store is found
    held = archive.archive_of(conn, SEASON)
    assert held is not None and held.standings == standings
    ref = records.RecordRef.from_dict(held.matches[ids[2]]["record"])
    path = Path(ref.store.removeprefix("file:")) / ref.key
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    report = verify_season(conn, SEASON)
    assert not report.ok and any(ids[2] in p and "SHA-256" in p for p in report.problems)

    with pytest.raises(StateConflict, match="archived already"):
        archive.archive_season(conn, SEASON)


def test_a_season_still_playing_is_not_archived(conn: redis.Redis) -> None:
    store.create_season(conn, _spec(SEASON, window=2))
    store.start_season(conn, SEASON)
    SeasonDriver(conn).step(block_ms=5)
    with pytest.raises(StateConflict, match="only a finished or cancelled season"):
        archive.archive_season(conn, SEASON)
    store.cancel_season(conn, SEASON)
    first = sorted(store.match_states(conn, SEASON))[0]
    conn.hset(keys.season_matches(SEASON), first, "running")  # a table the cancel lets finish
    conn.hset(keys.season(SEASON), "seed", "99")
    with pytest.raises(StateConflict, match="1 match\\(es\\) queued or running"):
        archive.archive_season(conn, SEASON)
    assert conn.exists(keys.season_schedule(SEASON))  # nothing dropped
