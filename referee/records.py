"""The record store: where committed match records live, and the one way to read them.

A finished match's record (``MatchRun.record()``, docs/workers.md "Match record") is
**compacted** (what a re-simulation of its steps gives back exactly is left out: the rules,
the initial hands, the events, the engine's own record), encoded as canonical JSON and
compressed with zstd, then written to a record store **before** the fenced commit that
names it. Redis keeps, at ``keys.match_record(id)``, only a pointer (:class:`RecordRef`):
the store, the key in it, the SHA-256 of the stored bytes and their size.

* Exactly once: the key is the match id, the attempt and the digest of the bytes
  (:func:`record_key`), so a retry writes its own object and the commit names exactly one;
  an attempt whose commit lost deletes its own (``workers.host``), and ``arena season
  archive`` removes any other left behind by a host that died between the write and the
  commit (:func:`orphans`).
* Reading (:func:`load_record`, :func:`aload_record`) follows the pointer, checks the
  digest, decompresses and restores the full record shape by re-simulating the steps
  (:func:`expand`), so readers see what they always saw. A record still inline in Redis
  (written before records had a store, or by a tool) is read from there as it is.
* Stores (:func:`open_store`): ``file:PATH`` (default ``<data-dir>/records``: one file per
  record, written to a temporary name, fsynced, renamed, its folder fsynced) and
  ``s3://BUCKET/PREFIX?endpoint=URL&region=R`` (any S3-compatible server, through boto3;
  credentials from the usual ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``
  environment, never a URL or a command line). ``$ARENA_RECORDS`` names the store a
  process writes to; a pointer names the store it was written to, which readers open.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol
from urllib.parse import parse_qs, quote, urlsplit

import redis

from referee import keys
from referee.errors import ConfigError, RecordCorrupt, RecordMissing, RecordStoreError
from referee.games.registry import get_game
from referee.match.replay import apply_steps

if TYPE_CHECKING:
    import redis.asyncio as aredis

RECORDS_ENV: Final = "ARENA_RECORDS"
"""The record store URL a process writes to (``file:PATH`` or ``s3://BUCKET/PREFIX?...``);
unset: ``file:<data-dir>/records``."""

COMPACT_VERSION: Final = 4
"""``version`` of a compacted record as stored; :func:`expand` gives back version 3's shape."""

DERIVED: Final = ("rules", "initial_hands", "events", "engine")
"""Top-level fields of a record that a re-simulation of its steps gives back exactly."""

ZSTD_LEVEL: Final = 10
"""zstd level of stored records. A 4-deal fan-tan record (245 kB as JSON, 190 kB compacted):
8.4 kB in ~7 ms at level 10, 10.6 kB in ~1 ms at 3, 7.5 kB in ~390 ms at 19; zlib level 9
9.1 kB in ~5 ms (docs/workers.md "Match records and the record store")."""


# --- stores ----------------------------------------------------------------------------


class RecordStore(Protocol):
    """Bytes by key, each object written whole or not at all and durable when ``put``
    returns. ``RecordStoreError`` when the store cannot be reached (retry later),
    ``RecordMissing`` for an absent key."""

    url: str

    def put(self, key: str, data: bytes) -> None: ...

    def get(self, key: str) -> bytes: ...

    def delete(self, key: str) -> None: ...

    def list(self, prefix: str) -> list[str]: ...

    def usage(self, prefix: str = "") -> tuple[int, int]:
        """(objects, bytes) under ``prefix``."""
        ...


class FileStore:
    """Records as files under one folder (one file per record, 0600, folders 0700)."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()
        self.url = f"file:{self.root}"

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root) or path == self.root:
            raise ConfigError(f"record key {key!r} is outside the store {self.root}")
        return path

    def put(self, key: str, data: bytes) -> None:
        """Write to a temporary name beside the target, fsync, rename, fsync the folder:
        after a crash the key holds all of ``data`` or nothing."""
        path = self._path(key)
        try:
            self._mkdirs(path.parent)
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
                    out.flush()
                    os.fsync(out.fileno())
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    tmp.unlink()
                raise
            _fsync_dir(path.parent)
        except OSError as exc:
            raise RecordStoreError(f"record store {self.url}: cannot write {key}: {exc}") from exc

    def _mkdirs(self, folder: Path) -> None:
        missing: list[Path] = []
        while not folder.exists():
            missing.append(folder)
            folder = folder.parent
        for made in reversed(missing):
            with contextlib.suppress(FileExistsError):
                made.mkdir(mode=0o700)
            _fsync_dir(made.parent)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            raise RecordMissing(f"record store {self.url} has no {key}") from None
        except OSError as exc:
            raise RecordStoreError(f"record store {self.url}: cannot read {key}: {exc}") from exc

    def delete(self, key: str) -> None:
        try:
            self._path(key).unlink(missing_ok=True)
        except OSError as exc:
            raise RecordStoreError(f"record store {self.url}: cannot delete {key}: {exc}") from exc

    def list(self, prefix: str) -> list[str]:
        base = self.root / prefix
        folder = base if prefix.endswith("/") or base.is_dir() else base.parent
        if not folder.is_dir():
            return []
        out = []
        for path in folder.rglob("*"):
            name = path.relative_to(self.root).as_posix()
            if path.is_file() and not path.name.startswith(".") and name.startswith(prefix):
                out.append(name)
        return sorted(out)

    def usage(self, prefix: str = "") -> tuple[int, int]:
        names = self.list(prefix)
        return len(names), sum((self.root / n).stat().st_size for n in names)


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class S3Store:
    """Records as objects of an S3-compatible store (boto3). A PUT is atomic (the object
    appears whole) and durable once answered; timeouts are short and boto3's own retries
    few, so a store that is away raises ``RecordStoreError`` quickly and the caller
    decides how long to wait (``workers.host``)."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ConfigError(
                f"record store {url!r}: expected s3://BUCKET/PREFIX?endpoint=URL&region=R"
            )
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        self.url = url
        self.bucket = parts.netloc
        self.prefix = parts.path.strip("/") + "/" if parts.path.strip("/") else ""
        try:
            import boto3
            from botocore.config import Config
        except ImportError:
            raise ConfigError(
                f"record store {url}: the s3 store needs boto3 (pip install boto3)"
            ) from None
        self.client: Any = boto3.client(
            "s3",
            endpoint_url=query.get("endpoint"),
            region_name=query.get("region", "us-east-1"),
            config=Config(
                connect_timeout=2,
                read_timeout=10,
                retries={"max_attempts": 2, "mode": "standard"},
                s3={"addressing_style": "path"},
            ),
        )

    def _errors(self) -> tuple[type[BaseException], ...]:
        from botocore.exceptions import BotoCoreError, ClientError

        return (BotoCoreError, ClientError)

    def put(self, key: str, data: bytes) -> None:
        try:
            self.client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=data)
        except self._errors() as exc:
            raise RecordStoreError(f"record store {self.url}: cannot write {key}: {exc}") from exc

    def get(self, key: str) -> bytes:
        try:
            reply = self.client.get_object(Bucket=self.bucket, Key=self.prefix + key)
            body: bytes = reply["Body"].read()
            return body
        except self.client.exceptions.NoSuchKey:
            raise RecordMissing(f"record store {self.url} has no {key}") from None
        except self._errors() as exc:
            raise RecordStoreError(f"record store {self.url}: cannot read {key}: {exc}") from exc

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.prefix + key)
        except self._errors() as exc:
            raise RecordStoreError(f"record store {self.url}: cannot delete {key}: {exc}") from exc

    def _objects(self, prefix: str) -> Iterator[dict[str, Any]]:
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket, Prefix=self.prefix + prefix
            )
            for page in pages:
                yield from page.get("Contents", [])
        except self._errors() as exc:
            raise RecordStoreError(f"record store {self.url}: cannot list {prefix}: {exc}") from exc

    def list(self, prefix: str) -> list[str]:
        return sorted(str(o["Key"])[len(self.prefix) :] for o in self._objects(prefix))

    def usage(self, prefix: str = "") -> tuple[int, int]:
        objects = list(self._objects(prefix))
        return len(objects), sum(int(o["Size"]) for o in objects)


_OPEN: dict[str, RecordStore] = {}
_OPEN_LOCK = threading.Lock()


def open_store(url: str) -> RecordStore:
    """The store a URL names (opened once per process): ``file:PATH`` (or a bare path),
    ``s3://BUCKET/PREFIX?endpoint=URL&region=R``."""
    with _OPEN_LOCK:
        store = _OPEN.get(url)
        if store is None:
            if url.startswith("s3://"):
                store = S3Store(url)
            elif url.startswith("file:") or url.startswith("/"):
                store = FileStore(url.removeprefix("file://").removeprefix("file:"))
            else:
                raise ConfigError(
                    f"record store {url!r}: expected file:PATH or "
                    "s3://BUCKET/PREFIX?endpoint=URL&region=R"
                )
            _OPEN[url] = store
        return store


def store_url(data_dir: Path | str | None = None) -> str:
    """The store this process writes to: ``$ARENA_RECORDS``, else ``records/`` in the data
    dir (``data_dir``, else ``$ARENA_DATA_DIR``, else the default data dir)."""
    env = os.environ.get(RECORDS_ENV)
    if env:
        return env
    if data_dir is None:
        from referee.defaults import default_data_dir

        data_dir = default_data_dir()
    return f"file:{Path(data_dir).expanduser().resolve() / 'records'}"


def default_store(data_dir: Path | str | None = None) -> RecordStore:
    """``open_store(store_url(data_dir))``."""
    return open_store(store_url(data_dir))


# --- the record's bytes ----------------------------------------------------------------


def compact(record: Mapping[str, Any]) -> dict[str, Any]:
    """The record without what :func:`expand` derives (top-level :data:`DERIVED`, each
    step's ``events``)."""
    out = {k: v for k, v in record.items() if k not in DERIVED}
    out["steps"] = [{k: v for k, v in s.items() if k != "events"} for s in record["steps"]]
    out["version"] = COMPACT_VERSION
    out["stored_from"] = record.get("version")
    return out


def expand(stored: Mapping[str, Any]) -> dict[str, Any]:
    """The full record (the shape ``MatchRun.record()`` made) from a compacted one, by
    re-simulating its steps on a fresh match of its spec; ``RecordCorrupt`` if they do not
    replay or do not give the stored result."""
    if stored.get("version") != COMPACT_VERSION:
        return dict(stored)
    out = dict(stored)
    spec = stored["spec"]
    try:
        game = get_game(spec["game"])
        rules = game.rules_from_dict(spec["rules"])
        match = game.new_match(rules, len(spec["seats"]), spec["seed"], _deals(spec))
        steps = [
            {**step, "events": [e.to_dict() for e in applied]}
            if not step.get("takeover")
            else dict(step)
            for step, applied in apply_steps(match, stored["steps"])
        ]
        engine = json.loads(match.to_json())
        result = match.result().to_dict() if match.is_over() else None
    except Exception as exc:  # a record that does not replay is damaged, whatever the error
        raise RecordCorrupt(
            f"record of match {stored.get('match_id')!r} does not replay: {exc}"
        ) from exc
    if result is None or _normal(result) != _normal(stored.get("result")):
        raise RecordCorrupt(
            f"record of match {stored.get('match_id')!r} does not replay to its stored result"
        )
    out.update(
        version=stored.get("stored_from", 3),
        rules=rules.to_dict(),
        initial_hands=match.initial_hands(),
        steps=steps,
        events=engine.get("events", [e.to_dict() for e in match.events()]),
        engine=engine,
    )
    out.pop("stored_from", None)
    return out


def _deals(spec: Mapping[str, Any]) -> Any:
    from referee.match.spec import MatchSpec

    return MatchSpec.from_dict(dict(spec)).deals


def _normal(value: object) -> object:
    return json.loads(json.dumps(value))


def encode(record: Mapping[str, Any]) -> bytes:
    """Compacted, canonical JSON, zstd-compressed."""
    import zstandard

    text = json.dumps(compact(record), sort_keys=True, separators=(",", ":"))
    return zstandard.ZstdCompressor(level=ZSTD_LEVEL).compress(text.encode())


def decode(data: bytes) -> dict[str, Any]:
    """The full record from stored bytes (:func:`expand` of the decompressed JSON)."""
    import zstandard

    try:
        text = zstandard.ZstdDecompressor().decompress(data)
        stored = json.loads(text)
    except (zstandard.ZstdError, ValueError) as exc:
        raise RecordCorrupt(f"stored record is not zstd-compressed JSON: {exc}") from exc
    if not isinstance(stored, dict):
        raise RecordCorrupt("stored record is not a JSON object")
    return expand(stored)


# --- pointers and the one reader -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordRef:
    """Where a committed record lives: the store's URL, the key in it, the SHA-256 and
    size of the stored bytes. What Redis keeps per match (``keys.match_record``)."""

    store: str
    key: str
    sha256: str
    size: int

    def to_json(self) -> str:
        return json.dumps(
            {"ref": self.key, "store": self.store, "sha256": self.sha256, "bytes": self.size},
            separators=(",", ":"),
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordRef:
        return cls(str(data["store"]), str(data["ref"]), str(data["sha256"]), int(data["bytes"]))


def record_key(season: str, match_id: str, attempt: int, digest: str) -> str:
    """``matches/<season>/<match>/a<attempt>-<digest>.json.zst`` (``_`` for no season):
    one object per attempt and content, so a retry never overwrites a committed record."""
    folder = "/".join(quote(p, safe="._-@+:") for p in (season or "_", match_id))
    return f"matches/{folder}/a{attempt}-{digest[:24]}.json.zst"


def season_prefix(season: str) -> str:
    """The keys of a season's records start with this."""
    return f"matches/{quote(season or '_', safe='._-@+:')}/"


def save_record(store: RecordStore, record: Mapping[str, Any]) -> RecordRef:
    """Write ``record`` (durable when this returns) and return its pointer; raises
    ``RecordStoreError`` while the store is away (the caller retries; nothing was
    committed)."""
    data = encode(record)
    digest = hashlib.sha256(data).hexdigest()
    spec = record.get("spec") or {}
    key = record_key(
        str(spec.get("season") or ""), str(record["match_id"]), int(record["attempt"]), digest
    )
    store.put(key, data)
    return RecordRef(store.url, key, digest, len(data))


def delete_record(ref: RecordRef, store: RecordStore | None = None) -> None:
    """Remove a record no commit names (an attempt whose commit lost)."""
    (store if store is not None and store.url == ref.store else open_store(ref.store)).delete(
        ref.key
    )


def read_ref(ref: RecordRef, store: RecordStore | None = None) -> dict[str, Any]:
    """The full record a pointer names, its digest checked. The pointer's own store is
    read; if that holds nothing (a data dir moved elsewhere), ``store`` is tried too."""
    try:
        data = open_store(ref.store).get(ref.key)
    except (RecordMissing, RecordStoreError):
        if store is None or store.url == ref.store:
            raise
        data = store.get(ref.key)
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise RecordCorrupt(
            f"record {ref.key} in {ref.store}: SHA-256 {digest[:16]}… differs from the "
            f"committed {ref.sha256[:16]}…"
        )
    return decode(data)


def parse_stored(raw: bytes | str, store: RecordStore | None = None) -> dict[str, Any]:
    """What ``keys.match_record`` holds, read: a pointer is followed, an inline record
    (before the record store) returned as it is."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise RecordCorrupt(f"match record entry in Redis is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise RecordCorrupt("match record entry in Redis is not a JSON object")
    if "ref" in data and "sha256" in data:
        return read_ref(RecordRef.from_dict(data), store)
    return data


def get_ref(conn: redis.Redis, match_id: str) -> RecordRef | None:
    """The committed record's pointer (None: no record, or one still inline in Redis)."""
    raw = conn.get(keys.match_record(match_id))
    if raw is None:
        return None
    with contextlib.suppress(ValueError, KeyError, TypeError):
        data = json.loads(raw)
        if isinstance(data, dict) and "ref" in data:
            return RecordRef.from_dict(data)
    return None


def load_record(
    conn: redis.Redis, match_id: str, store: RecordStore | None = None
) -> dict[str, Any] | None:
    """The committed record of ``match_id`` wherever it lives, or None if none is
    committed. Raises ``RecordStoreError`` (store away), ``RecordMissing``/``RecordCorrupt``
    (a committed record gone or damaged)."""
    raw = conn.get(keys.match_record(match_id))
    return None if raw is None else parse_stored(raw, store)


async def aload_record(
    conn: aredis.Redis, match_id: str, store: RecordStore | None = None
) -> dict[str, Any] | None:
    """:func:`load_record` for an asyncio Redis client (the store is read in a thread)."""
    raw = await conn.get(keys.match_record(match_id))
    if raw is None:
        return None
    return await asyncio.to_thread(parse_stored, raw, store)


async def aload_records(
    conn: aredis.Redis, match_ids: list[str], store: RecordStore | None = None
) -> dict[str, dict[str, Any]]:
    """Records by id; missing, unreadable or damaged ones left out (pages that list)."""
    if not match_ids:
        return {}
    raws = await conn.mget([keys.match_record(m) for m in match_ids])

    def read() -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for match_id, raw in zip(match_ids, raws, strict=True):
            if raw is not None:
                with contextlib.suppress(RecordStoreError):
                    out[match_id] = parse_stored(raw, store)
        return out

    return await asyncio.to_thread(read)


def orphans(store: RecordStore, season: str, named: set[str]) -> list[str]:
    """Keys of the season's records in ``store`` that are not in ``named`` (the keys its
    commits name): attempts whose host died between writing the record and committing."""
    return [k for k in store.list(season_prefix(season)) if k not in named]
