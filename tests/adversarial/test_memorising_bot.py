"""A bot that remembers every hand it was dealt learns nothing.

Real stack: ``arena referee`` (with its season driver) and ``arena worker`` processes, six
SDK bots over gRPC. Each bot records the hand it is dealt in every deal and, as an attacker
would, treats an earlier hand of its own that shares no card with its new hand as a
candidate: if the same shuffle came back rotated, that old hand now sits with one
opponent, and every card that opponent plays is in it. Two seasons on one platform:

* ``same_table_leaks_hands`` (the explicit opt-in, the old default): the bots catch their
  opponents' hands (this shows the check can fail);
* the default field duplicate: no bot is ever dealt a shuffle it played, so nothing is
  caught, while boards are still shared across tables.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import pytest
import redis

from referee.embedded_redis import EmbeddedRedis
from referee.seasons import store
from referee.seasons.model import DUPLICATE_SAME_TABLE, SeasonOptions, SeasonSpec
from sample_bots.sdk import Bot, Turn
from tests.platform_fixtures import bots_in_threads, running_platform

pytestmark = pytest.mark.slow

CARD = re.compile(r"[2-9TJQKA][CDHS]")
NAMES = [f"mem-{i}" for i in range(6)]
MIN_PLAYS = 3
"""Plays of one opponent, all inside one remembered hand, that count as a caught hand (by
chance about (1/3)**3 per candidate; candidates, disjoint 17-card hands of different
shuffles, turn up about once in 10,000 pairs)."""


class Memoriser(Bot):
    choose_inline = True

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.dealt: list[tuple[str, frozenset[str]]] = []  # (season, hand) per deal
        self.deals: dict[tuple[str, int], tuple[int, list[frozenset[str]]]] = {}
        self.caught: dict[str, set[tuple[str, int, int]]] = {}  # season -> deals/seats

    def choose(self, turn: Turn) -> str:
        obs: Mapping[str, Any] = turn.observation
        key = (turn.match_id, int(obs["deal_index"]))
        with self.lock:
            if key not in self.deals:
                hand = frozenset(obs["hand"])
                suspects = [h for s, h in self.dealt if s == turn.season and not h & hand]
                self.deals[key] = (turn.seat, suspects)
                self.dealt.append((turn.season, hand))
            seat, suspects = self.deals[key]
            played: dict[int, set[str]] = {}
            for event in obs.get("history", []):
                if event.get("kind") == "play" and int(event["seat"]) != seat:
                    found = CARD.findall(str(event.get("action", "")))
                    played.setdefault(int(event["seat"]), set()).update(found)
            for other, cards in played.items():
                if len(cards) >= MIN_PLAYS and any(cards <= h for h in suspects):
                    self.caught.setdefault(turn.season, set()).add((*key, other))
        return turn.legal_actions[0]


def _season(name: str, duplicate: str | bool) -> SeasonSpec:
    return SeasonSpec(
        name=name,
        game="sevens",
        preset="fan-tan",
        bots=tuple(NAMES),
        table_size=3,
        deals_per_match=3,
        seed=20261201,
        options=SeasonOptions(duplicate=duplicate, max_subsets=0, window=4),
    )


def _wait_finished(conn: redis.Redis, season: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while store.get_season(conn, season)["state"] != store.FINISHED:
        assert time.monotonic() < deadline, store.get_season(conn, season)
        time.sleep(0.2)


def test_a_memorising_bot_never_meets_a_shuffle_again(embedded_redis: EmbeddedRedis) -> None:
    url = embedded_redis.url
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(running_platform(url))
        conn = platform.conn
        named = {name: Memoriser() for name in NAMES}
        stack.enter_context(bots_in_threads(platform, named))

        leaky = store.create_season(conn, _season("mem-leaky", DUPLICATE_SAME_TABLE))
        field = store.create_season(conn, _season("mem-field", True))
        assert "field duplicate" in field.duplicate and "2 tables" in field.duplicate
        for info in (leaky, field):
            store.start_season(conn, info.season)
        for info in (leaky, field):
            _wait_finished(conn, info.season)

        caught_leaky = sum(len(b.caught.get("mem-leaky", ())) for b in named.values())
        caught_field = sum(len(b.caught.get("mem-field", ())) for b in named.values())
        # every bot played deals in both seasons (the check ran)
        for bot in named.values():
            assert {s for s, _ in bot.dealt} == {"mem-leaky", "mem-field"}
        assert caught_leaky > 0, "the memorising bots caught nothing in the leaky season"
        assert caught_field == 0, [b.caught.get("mem-field") for b in named.values()]
        # and the field season did share its boards across tables
        boards = [m.get("boards") for m in store.get_schedule(conn, "mem-field")]
        labels = [label for b in boards if b for label in b]
        assert len(labels) > len(set(labels))
