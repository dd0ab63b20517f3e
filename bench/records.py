"""Bytes per finished match: in the record store and in Redis, today against inline records.

Plays ``--matches`` 4-deal matches (fan-tan and Sedma, four seats) with ``MatchRun``
against a stand-in link that answers at once with the first legal action, then takes each
through the real finishing path on an embedded Redis: ``enqueue_match``, ``start_attempt``,
the record written to a file record store (``referee.records.save_record``), the fenced
``commit``. The same matches are committed a second time, under other ids, with the record
inline in Redis (as before the record store). Prints per match:

* the record: its JSON as ``MatchRun.record()`` makes it, compacted, stored (zstd), and
  zlib level 9 of the compacted JSON for comparison; the CPU to encode and to read back
  (decompress, re-simulate, check);
* Redis: ``MEMORY USAGE`` of every key but RQ's own (its job hashes expire), summed and
  divided by the matches, for pointers and for inline records.

    .venv/bin/python bench/records.py [--matches 20]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hostloop import _Host

from referee import queue, records
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl
from workers.attempts import commit, start_attempt
from workers.runner import MatchRun

PRESETS = {"sevens": "fan-tan", "sedma": "sedma"}


def spec_of(game: str, index: int, prefix: str) -> MatchSpec:
    return MatchSpec(
        match_id=f"{prefix}-{game}-{index:05d}",
        game=game,
        rules=get_game(game).preset(PRESETS[game]).to_dict(),
        seats=("bot0", "bot1", "bot2", "bot3"),
        seed=index,
        season="bench",
        deals=tuple(DealSpec(seed=1000 * index + d, rotation=d % 4) for d in range(4)),
        time_control=TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50),
    )


def play(spec: MatchSpec, attempt: int) -> MatchRun:
    host = _Host()

    async def main() -> MatchRun:
        run = MatchRun(host, spec, attempt, redeal=False)  # type: ignore[arg-type]
        host.link.run = run
        await run.play()
        return run

    return asyncio.run(main())


def redis_bytes(conn: redis.Redis) -> int:
    total = 0
    for key in conn.scan_iter(count=1000):
        name = key.decode() if isinstance(key, bytes) else str(key)
        if not name.startswith("rq:"):
            total += int(conn.memory_usage(name) or 0)
    return total


def finish(conn: redis.Redis, store: records.RecordStore, spec: MatchSpec, inline: bool) -> None:
    assert queue.enqueue_match(conn, spec)
    started = start_attempt(conn, spec.match_id, "bench")
    assert started is not None
    run = play(spec, started.attempt)
    record = run.record()
    kept: records.RecordRef | dict[str, Any] = (
        record if inline else records.save_record(store, record)
    )
    assert commit(conn, run.spec, started.attempt, run.committed_result(), kept)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--matches", type=int, default=20, help="matches per game and shape")
    args = parser.parse_args()
    n = args.matches
    print(
        f"{n} matches per game, 4 deals, 4 seats; record store: files, zstd level "
        f"{records.ZSTD_LEVEL}"
    )
    print("\nrecord per 4-deal match (mean)")
    print(
        f"{'game':8} {'JSON':>9} {'compacted':>10} {'stored':>8} {'zlib-9':>8} "
        f"{'encode':>8} {'read':>8}"
    )
    runs = {game: [play(spec_of(game, i, "r"), 1) for i in range(n)] for game in PRESETS}
    for game, played in runs.items():
        raw = comp = stored = zl = 0
        enc = dec = 0.0
        for run in played:
            record = run.record()
            raw += len(json.dumps(record, separators=(",", ":")))
            text = json.dumps(records.compact(record), sort_keys=True, separators=(",", ":"))
            comp += len(text)
            zl += len(zlib.compress(text.encode(), 9))
            start = time.process_time()
            data = records.encode(record)
            enc += time.process_time() - start
            stored += len(data)
            start = time.process_time()
            records.decode(data)
            dec += time.process_time() - start
        print(
            f"{game:8} {raw / n / 1000:8.1f}k {comp / n / 1000:9.1f}k {stored / n / 1000:7.1f}k "
            f"{zl / n / 1000:7.1f}k {enc / n * 1000:6.1f}ms {dec / n * 1000:6.1f}ms"
        )

    print("\nRedis per finished match (MEMORY USAGE of every key but RQ's, / matches)")
    with tempfile.TemporaryDirectory() as tmp, EmbeddedRedis(Path(tmp) / "redis") as server:
        conn = redis.Redis.from_url(server.url)
        store = records.FileStore(Path(tmp) / "records")
        for inline in (False, True):
            conn.flushall()
            before = redis_bytes(conn)
            for game in PRESETS:
                for i in range(n):
                    spec = spec_of(game, i, "inline" if inline else "ptr")
                    finish(conn, store, replace(spec), inline)
            per = (redis_bytes(conn) - before) / (n * len(PRESETS))
            shape = "record inline (before)" if inline else "pointer to the store"
            print(f"  {shape:24} {per:9.0f} bytes")
        files, size = store.usage()
        print(f"  record store: {files} files, {size / max(files, 1):.0f} bytes each")
        conn.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
