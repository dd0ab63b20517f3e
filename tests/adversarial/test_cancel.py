"""Cancelling a season stops new matches at once, lets the running ones
finish (they count), and reveals the seed only when nothing of the season can play.

Real stack: ``arena referee`` (season driver) and ``arena worker -n 2`` processes, SDK
bots that think 40 ms a turn so that matches are running and queued at the cancel.
"""

from __future__ import annotations

import contextlib
import time

import pytest

from referee import queue
from referee.embedded_redis import EmbeddedRedis
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from sample_bots.sdk import Bot, Turn
from tests.platform_fixtures import bots_in_threads, running_platform

pytestmark = pytest.mark.slow

NAMES = [f"cx-{i}" for i in range(4)]


class Thinker(Bot):
    def choose(self, turn: Turn) -> str:
        time.sleep(0.04)
        return turn.legal_actions[0]


def test_cancel_stops_new_matches_and_reveals_the_seed_only_when_settled(
    embedded_redis: EmbeddedRedis,
) -> None:
    url = embedded_redis.url
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(running_platform(url))
        conn = platform.conn
        stack.enter_context(bots_in_threads(platform, {name: Thinker() for name in NAMES}))
        spec = SeasonSpec(
            name="cx",
            game="sevens",
            preset="fan-tan",
            bots=tuple(NAMES),
            table_size=3,
            deals_per_match=2,
            options=SeasonOptions(duplicate=False, rounds=3, window=4),
        )
        store.create_season(conn, spec)
        store.start_season(conn, "cx")
        deadline = time.monotonic() + 60
        while True:
            states = store.match_states(conn, "cx")
            running = {m for m, s in states.items() if s == "running"}
            if running and any(s in ("queued", "scheduled") for s in states.values()):
                break
            assert time.monotonic() < deadline, states
            time.sleep(0.02)

        info = store.cancel_season(conn, "cx")
        states = store.match_states(conn, "cx")
        in_flight = {m for m, s in states.items() if s in ("running", "queued")}
        assert info.state == store.CANCELLED
        if in_flight:  # something of the season can still play: the seed stays secret
            assert info.seed == ""
        stopped = {m for m, s in states.items() if s == store.CANCELLED_MATCH}
        assert stopped, states

        deadline = time.monotonic() + 120
        while not store.get_season(conn, "cx")["seed"]:
            assert time.monotonic() < deadline, store.match_states(conn, "cx")
            time.sleep(0.05)
        revealed = store.match_states(conn, "cx")
        assert not any(s in ("running", "queued") for s in revealed.values()), revealed
        time.sleep(1.0)  # a stray job of a cancelled match would start now
        for match_id in stopped:
            assert queue.get_result(conn, match_id) is None, match_id
            assert store.match_states(conn, "cx")[match_id] == store.CANCELLED_MATCH
        done = {m for m, s in store.match_states(conn, "cx").items() if s == "done"}
        assert in_flight <= done | {m for m, s in revealed.items() if s == "failed"}
        assert int(store.get_season(conn, "cx")["matches_done"]) == len(done)
