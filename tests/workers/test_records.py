"""The record store (``referee.records``, docs/workers.md "Match records and the record
store"): records compacted and compressed, written atomically before the commit that
names them, read back whole through one interface, wherever they live: a folder, or an
S3-compatible server (moto's standalone server on loopback, a real HTTP server)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis
import zstandard

from arena.v1 import internal_pb2
from referee import keys, records
from referee.errors import RecordCorrupt, RecordMissing, RecordStoreError
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl
from workers import metrics
from workers.attempts import commit
from workers.runner import MatchRun


class _Link:
    """Answers every turn at once with the first legal action."""

    referee = "test"

    def __init__(self) -> None:
        self.run: MatchRun | None = None

    def turn(self, bot: str, key: Any, payload: bytes, *args: Any) -> asyncio.Future[Any]:
        assert self.run is not None
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(
            internal_pb2.Reply(
                match_id=key[0],
                attempt=key[1],
                seq=key[2],
                kind=internal_pb2.Reply.ANSWER,
                action=self.run.match.legal_actions()[0],
                sent_ms=1.0,
                received_ms=3.5,
            )
        )
        return future

    def notify(self, *args: Any, **kw: Any) -> None:
        pass

    def forget(self, *args: Any) -> None:
        pass


class _Router:
    def __init__(self, link: _Link) -> None:
        self.link = link

    def excused(self, bot: str, within_ms: float) -> bool:
        return False

    async def route(self, bot: str, until_ms: float) -> _Link:
        return self.link

    def notify(self, *args: Any, **kw: Any) -> None:
        pass

    def forget(self, bot: str) -> None:
        pass

    def avoid(self, *args: Any) -> None:
        pass


class _Host:
    def __init__(self) -> None:
        self.link = _Link()
        self.router = _Router(self.link)
        self.metrics = metrics.HostMetrics()


def played(
    game: str = "sevens", deals: int = 4, match_id: str = "r1", attempt: int = 1
) -> MatchRun:
    """A match played to its end by ``MatchRun`` (bots answering their first legal action)."""
    preset = {"sevens": "fan-tan", "sedma": "sedma"}[game]
    spec = MatchSpec(
        match_id=match_id,
        game=game,
        rules=get_game(game).preset(preset).to_dict(),
        seats=("a", "b", "c", "d"),
        seed=11,
        season="s-rec",
        deals=tuple(DealSpec(seed=500 + d, rotation=d % 4) for d in range(deals)),
        time_control=TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50),
    )
    host = _Host()

    async def play() -> MatchRun:
        run = MatchRun(host, spec, attempt, redeal=False)  # type: ignore[arg-type]
        host.link.run = run
        await run.play()
        return run

    return asyncio.run(play())


def _same(a: object, b: object) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.fixture
def store(tmp_path: Path) -> records.FileStore:
    return records.FileStore(tmp_path / "records")


@pytest.mark.parametrize("game", ["sevens", "sedma"])
def test_a_record_comes_back_whole_from_a_compressed_object_without_duplicates(
    store: records.FileStore, game: str
) -> None:
    record = played(game).record()
    ref = records.save_record(store, record)
    data = store.get(ref.key)
    assert len(data) == ref.size < 30_000  # a 4-deal match, compressed (target: <= 30 kB)
    stored = json.loads(zstandard.ZstdDecompressor().decompress(data))
    assert not set(records.DERIVED) & set(stored)  # what a re-simulation gives back: gone
    assert all("events" not in step for step in stored["steps"])
    assert _same(records.read_ref(ref), record)


def test_a_file_store_write_leaves_the_whole_object_and_no_temporary_file(
    store: records.FileStore,
) -> None:
    store.put("matches/s/m/a1-x.json.zst", b"abc")
    store.put("matches/s/m/a1-x.json.zst", b"abc")  # the same bytes again: harmless
    assert store.get("matches/s/m/a1-x.json.zst") == b"abc"
    assert store.list("matches/") == ["matches/s/m/a1-x.json.zst"]
    assert [p.name for p in (store.root / "matches/s/m").iterdir()] == ["a1-x.json.zst"]
    assert (store.root / "matches/s/m/a1-x.json.zst").stat().st_mode & 0o777 == 0o600
    assert store.usage() == (1, 3)
    with pytest.raises(RecordMissing, match="has no matches/s/m/a2"):
        store.get("matches/s/m/a2-y.json.zst")
    with pytest.raises(Exception, match="outside the store"):
        store.put("../escape", b"x")


def test_a_store_that_cannot_be_written_raises_and_writes_nothing(tmp_path: Path) -> None:
    blocked = tmp_path / "records"
    blocked.write_text("not a folder")  # the store's folder is away (as an unmounted disk)
    store = records.FileStore(blocked)
    with pytest.raises(RecordStoreError, match="cannot write"):
        records.save_record(store, played(deals=1).record())
    assert blocked.read_text() == "not a folder"


def test_a_record_whose_bytes_changed_is_refused_by_its_digest(store: records.FileStore) -> None:
    ref = records.save_record(store, played(deals=1).record())
    path = store.root / ref.key
    data = bytearray(path.read_bytes())
    data[-1] ^= 1
    path.write_bytes(bytes(data))
    with pytest.raises(RecordCorrupt, match="differs from the committed"):
        records.read_ref(ref)


def test_a_record_whose_steps_do_not_replay_is_refused(store: records.FileStore) -> None:
    record = played(deals=1).record()
    record["result"] = {**record["result"], "totals": [99, 0, 0, -99]}
    ref = records.save_record(store, record)
    with pytest.raises(RecordCorrupt, match="does not replay to its stored result"):
        records.read_ref(ref)


def test_each_attempt_writes_its_own_object_and_the_commit_names_one(
    redis_client: redis.Redis, store: records.FileStore
) -> None:
    first = played(deals=1, match_id="twice", attempt=1)
    second = played(deals=1, match_id="twice", attempt=2)
    ref1 = records.save_record(store, first.record())
    ref2 = records.save_record(store, second.record())
    assert ref1.key != ref2.key and ref1.key.startswith(records.season_prefix("s-rec"))
    redis_client.set(keys.match_attempt("twice"), 2)
    assert not commit(redis_client, second.spec, 1, first.committed_result(), ref1)
    assert commit(redis_client, second.spec, 2, second.committed_result(), ref2)
    pointer = json.loads(redis_client.get(keys.match_record("twice")) or "")
    assert set(pointer) == {"ref", "store", "sha256", "bytes"}  # a pointer, not the record
    assert len(redis_client.get(keys.match_record("twice")) or "") < 300
    loaded = records.load_record(redis_client, "twice", store)
    assert loaded is not None and loaded["attempt"] == 2
    assert records.orphans(store, "s-rec", {ref2.key}) == [ref1.key]


def test_a_record_still_inline_in_redis_is_read_from_there(redis_client: redis.Redis) -> None:
    record = played(deals=1, match_id="old").record()
    redis_client.set(keys.match_record("old"), json.dumps(record))
    assert _same(records.load_record(redis_client, "old"), record)
    assert records.get_ref(redis_client, "old") is None
    assert records.load_record(redis_client, "never") is None


def test_a_pointer_to_a_folder_moved_elsewhere_is_read_from_this_processes_store(
    redis_client: redis.Redis, tmp_path: Path
) -> None:
    old = records.FileStore(tmp_path / "old" / "records")
    ref = records.save_record(old, played(deals=1, match_id="moved").record())
    redis_client.set(keys.match_record("moved"), ref.to_json())
    shutil.move(tmp_path / "old", tmp_path / "new")
    here = records.FileStore(tmp_path / "new" / "records")
    loaded = records.load_record(redis_client, "moved", here)
    assert loaded is not None and loaded["match_id"] == "moved"


def test_store_urls_name_their_kind_and_refuse_others(tmp_path: Path) -> None:
    assert isinstance(records.open_store(f"file:{tmp_path}/x"), records.FileStore)
    with pytest.raises(Exception, match="expected file:PATH or s3://"):
        records.open_store("ftp://host/records")
    os.environ.pop(records.RECORDS_ENV, None)
    assert records.store_url(tmp_path) == f"file:{tmp_path.resolve() / 'records'}"


# --- an S3-compatible server ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def s3_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """moto's standalone S3 server on a loopback port (a real HTTP server); its endpoint."""
    pytest.importorskip("moto.server")
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.poll() is None and time.monotonic() < deadline, "moto server did not start"
            time.sleep(0.1)
        yield endpoint, proc
    finally:
        proc.terminate()
        proc.wait(10)


def test_the_s3_store_keeps_records_on_a_real_server_and_says_when_it_is_away(
    monkeypatch: pytest.MonkeyPatch, redis_client: redis.Redis
) -> None:
    boto3 = pytest.importorskip("boto3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "arena-test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "arena-test-secret")
    with s3_server() as (endpoint, proc):
        boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1").create_bucket(
            Bucket="arena"
        )
        url = f"s3://arena/league-1?endpoint={endpoint}"
        store = records.open_store(url)
        assert isinstance(store, records.S3Store)
        record = played(match_id="on-s3").record()
        ref = records.save_record(store, record)
        assert ref.store == url
        assert store.list("matches/") == [ref.key]
        assert store.usage() == (1, ref.size)
        redis_client.set(keys.match_record("on-s3"), ref.to_json())
        assert _same(records.load_record(redis_client, "on-s3"), record)
        with pytest.raises(RecordMissing):
            store.get("matches/none")
        proc.terminate()
        proc.wait(10)
        started = time.monotonic()
        with pytest.raises(RecordStoreError, match="cannot write"):
            records.save_record(store, record)
        assert time.monotonic() - started < 20  # told, not hung
