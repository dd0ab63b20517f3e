"""A bot disconnected when its season ends gets the ``season_end`` notice when it comes
back, once (docs/PROTOCOL.md section 2, ``referee.gateway.notices``).

Real stack: ``arena referee`` and an ``arena worker`` process, four SDK bots over gRPC in
threads. Four bots at tables of three: every 3-subset plays once, and one match has no
``late-x``. That match holds its first decision until ``late-x`` has played its three
matches and disconnected; then the season ends. The connected bots get the notice live;
``late-x``, started again with ``exit_after_season``, gets it on connecting and stops by
itself; nobody gets it a second time when they reconnect.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import redis

from referee import keys
from referee.embedded_redis import EmbeddedRedis
from referee.gateway.notices import PENDING_EVERY_S
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.platform import Platform
from sample_bots.sdk import Bot, Turn
from tests.web.browser import wait_for

pytestmark = pytest.mark.slow

NAMES = ["late-a", "late-b", "late-c", "late-x"]
SEASON = "late"
SEASON_TOML = """
name = "late"
game = "sevens"
preset = "fan-tan"
bots = ["late-a", "late-b", "late-c", "late-x"]
table_size = 3
deals_per_match = 1
seed = 11

[time_control]
move_ms = 120000
bank_ms = 10000

[options]
duplicate = false
window = 4
"""


class NoticeBot(Bot):
    """Plays the first legal action; records every season_end; the held match's first
    decision waits for ``gate``."""

    def __init__(self, name: str, held: str = "", gate: threading.Event | None = None) -> None:
        self.name = name
        self.held = held
        self.gate = gate or threading.Event()
        self.reached = threading.Event()
        self.ends: list[dict[str, Any]] = []

    def choose(self, turn: Turn) -> str:
        if turn.match_id == self.held and not self.gate.is_set():
            self.reached.set()
            self.gate.wait(300)
        return turn.legal_actions[0]

    def on_season_end(self, notice: dict[str, Any]) -> None:
        self.ends.append(notice)


class Running:
    def __init__(self, bot: NoticeBot, platform: Platform) -> None:
        self.bot = bot
        self.stop = threading.Event()
        self.thread = threading.Thread(
            target=bot.run,
            args=(f"127.0.0.1:{platform.port}", platform.tokens[bot.name]),
            kwargs={"stop": self.stop},
            daemon=True,
        )
        self.thread.start()

    def end(self) -> None:
        self.stop.set()
        self.thread.join(15)
        assert not self.thread.is_alive()


def _connected(conn: redis.Redis, name: str) -> bool:
    return bool(conn.hlen(keys.bot_streams(name)))


def test_a_bot_away_at_season_end_gets_the_notice_when_it_reconnects_once(
    embedded_redis: EmbeddedRedis, tmp_path: Any
) -> None:
    conn = redis.Redis.from_url(embedded_redis.url, decode_responses=True)
    conn.flushall()
    running: list[Running] = []
    gate = threading.Event()
    try:
        with Platform(tmp_path / "late", redis_url=embedded_redis.url) as platform:
            platform.start_referee()
            platform.register_bots(NAMES)
            platform.start_workers(processes=1, per_process=2)
            store.create_season(conn, SeasonSpec.from_toml(SEASON_TOML))
            without_x = [
                m["match_id"]
                for m in store.get_schedule(conn, SEASON)
                if "late-x" not in m["seats"]
            ]
            assert len(without_x) == 1 and int(store.get_season(conn, SEASON)["matches_total"]) == 4
            bots = {n: NoticeBot(n, held=without_x[0], gate=gate) for n in NAMES}
            runs = {n: Running(b, platform) for n, b in bots.items()}
            running.extend(runs.values())
            wait_for(lambda: all(_connected(conn, n) for n in NAMES), 60, "bots connected")
            store.start_season(conn, SEASON)

            def x_done() -> bool:
                states = store.match_states(conn, SEASON)
                return all(s == "done" for m, s in states.items() if m not in without_x)

            wait_for(
                lambda: x_done() and any(b.reached.is_set() for b in bots.values()),
                180,
                "late-x's three matches done while the fourth holds its first decision",
            )
            runs["late-x"].end()
            wait_for(lambda: not _connected(conn, "late-x"), 30, "late-x's stream closed")
            gate.set()
            wait_for(
                lambda: store.get_season(conn, SEASON)["state"] == store.FINISHED,
                180,
                "the season finished",
            )

            # The connected bots got it live, once; nothing of theirs is left pending.
            live = [bots[n] for n in ("late-a", "late-b", "late-c")]
            wait_for(lambda: all(b.ends for b in live), 30, "the connected bots got season_end")
            assert not bots["late-x"].ends, "late-x was away: nothing reached it then"
            assert conn.lrange(keys.bot_pending_notices("late-x"), 0, -1) == [
                store.season_end_entry(SEASON)
            ]

            # late-x comes back for this season only: the notice ends its run by itself.
            back = NoticeBot("late-x")
            back.exit_after_season = SEASON
            again = Running(back, platform)
            running.append(again)
            again.thread.join(60)
            assert not again.thread.is_alive(), "late-x never learnt that the season ended"
            assert [(n["code"], n["season"], n["season_state"]) for n in back.ends] == [
                ("season_end", SEASON, "finished")
            ]
            row = back.ends[0]["standing"]
            assert row["bot"] == "late-x" and row["matches"] == 3 and row["of"] == 4, row
            assert not conn.exists(keys.bot_pending_notices("late-x"))

            # Nobody gets it twice: late-x and late-a reconnect and hear nothing of it.
            runs["late-a"].end()
            wait_for(lambda: not _connected(conn, "late-a"), 30, "late-a's stream closed")
            quiet = {n: NoticeBot(n) for n in ("late-x", "late-a")}
            for bot in quiet.values():
                running.append(Running(bot, platform))
            wait_for(lambda: all(_connected(conn, n) for n in quiet), 60, "both reconnected")
            time.sleep(6 * PENDING_EVERY_S)  # several looks at the new streams
            assert [b.ends for b in quiet.values()] == [[], []]
            assert [len(b.ends) for n, b in bots.items() if n != "late-x"] == [1, 1, 1]
            for name in NAMES:
                assert not conn.exists(keys.bot_pending_notices(name)), name
    finally:
        gate.set()
        for run in running:
            run.stop.set()
        for run in running:
            run.thread.join(15)
        conn.close()
