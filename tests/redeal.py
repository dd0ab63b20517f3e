"""What a retried match's record must say of its deals (docs/workers.md "A retry is
re-dealt"), for the tests that kill or cut off match hosts."""

from __future__ import annotations

import time
from typing import Any

import redis

from referee import keys, queue


def redealt_as_revealed(conn: redis.Redis, match_id: str, record: dict[str, Any]) -> bool:
    """Whether the committed ``record`` was re-dealt, checking that it was exactly when an
    earlier attempt had recorded that it showed the bots its deals (the state's
    ``revealed``, docs/workers.md "A retry is re-dealt"): an attempt killed in the moment
    between its start and its first message leaves the scheduled deals to the next."""
    revealed = conn.hget(keys.match_state(match_id), "revealed")
    earlier = revealed is not None and int(revealed) < int(record["attempt"])
    assert ("redealt" in record) == earlier, (match_id, revealed, record["attempt"])
    if earlier:
        assert record["redealt"]["attempt"] == record["attempt"]
    return earlier


def wait_revealed(conn: redis.Redis, match_id: str, timeout: float = 30.0) -> None:
    """Wait until ``match_id``'s running attempt has shown the bots its deals."""
    deadline = time.monotonic() + timeout
    while conn.hget(keys.match_state(match_id), "revealed") is None:
        assert time.monotonic() < deadline, queue.match_status(conn, match_id)
        time.sleep(0.01)
