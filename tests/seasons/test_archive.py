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


def _season_keys(conn: redis.Redis, season: str) -> list[str]:
    return sorted(str(k) for k in conn.scan_iter(match=f"{keys.season(season)}*"))


def test_an_archived_season_keeps_nothing_per_match_in_redis_and_verifies_from_its_archive(
    conn: redis.Redis, redis_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    store.create_season(conn, _spec(window=3))
    store.start_season(conn, "s1")
    _drive(conn, "s1", SeasonDriver(conn))
    ids = [m["match_id"] for m in store.get_schedule(conn, "s1")]
    standings = store.get_standings(conn, "s1")
    # one record still inline in Redis (a data dir from before the record store) ...
    inline = queue.get_record(conn, ids[0])
    assert inline is not None and records.get_ref(conn, ids[0]) is not None
    conn.set(keys.match_record(ids[0]), json.dumps(inline))
    # ... and a stray record no commit names (a host died between its write and its commit)
    store_ = records.default_store()
    stray = records.record_key("s1", ids[1], 9, "f" * 64)
    store_.put(stray, b"never committed")

    assert main(["season", "archive", "s1", "--redis-url", redis_url]) == 0
    out = capsys.readouterr().out
    assert "season s1 archived: 3 matches, 3 records" in out
    assert "1 inline records moved to the store" in out and "1 stray records removed" in out

    for match_id in ids:  # nothing per match is left in Redis
        for key in (keys.match_result, keys.match_record, keys.match_state, keys.match_spec):
            assert not conn.exists(key(match_id)), key(match_id)
        assert conn.zscore(keys.MATCHES_RECENT, match_id) is None
    assert _season_keys(conn, "s1") == [  # and its chart's points, at most CHECKPOINTS_KEPT
        keys.season("s1"),
        keys.season_checkpoints("s1"),
        keys.season_standings("s1"),
    ]
    assert conn.zcard(keys.season_checkpoints("s1")) <= store.CHECKPOINTS_KEPT
    assert store.get_standings(conn, "s1") == standings  # the league page still shows it
    assert store_.list(records.season_prefix("s1")) and stray not in store_.list("matches/")

    report = verify_season(conn, "s1")
    assert report.ok, report.problems
    assert report.matches_checked == 3 and report.deals_checked >= 6
    assert main(["season", "verify", "s1", "--redis-url", redis_url]) == 0
    out_dir = tmp_path / "export"  # the export reads results and records from the archive
    assert main(["season", "export", "s1", str(out_dir), "--redis-url", redis_url]) == 0
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 3
    assert sorted(p.name for p in (out_dir / "matches").iterdir()) == [
        f"{m}.json.gz" for m in sorted(ids)
    ]

    # the archive really is what verify reads: a record changed in the store is found
    held = archive.archive_of(conn, "s1")
    assert held is not None and held.standings == standings
    ref = records.RecordRef.from_dict(held.matches[ids[2]]["record"])
    path = Path(ref.store.removeprefix("file:")) / ref.key
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    report = verify_season(conn, "s1")
    assert not report.ok and any(ids[2] in p and "SHA-256" in p for p in report.problems)

    with pytest.raises(StateConflict, match="archived already"):
        archive.archive_season(conn, "s1")


def test_a_season_still_playing_is_not_archived(conn: redis.Redis) -> None:
    store.create_season(conn, _spec(window=2))
    store.start_season(conn, "s1")
    SeasonDriver(conn).step(block_ms=5)
    with pytest.raises(StateConflict, match="only a finished or cancelled season"):
        archive.archive_season(conn, "s1")
    store.cancel_season(conn, "s1")
    first = sorted(store.match_states(conn, "s1"))[0]
    conn.hset(keys.season_matches("s1"), first, "running")  # a table the cancel lets finish
    conn.hset(keys.season("s1"), "seed", "99")
    with pytest.raises(StateConflict, match="1 match\\(es\\) queued or running"):
        archive.archive_season(conn, "s1")
    assert conn.exists(keys.season_schedule("s1"))  # nothing dropped
