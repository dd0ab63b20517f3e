"""A real season (``arena referee`` with its season driver, ``arena worker`` processes) played
by SDK bots, a bot built from the OLD generated code (tests/compat/old_v1, protocol v1 as it
was before ActionInfo and the season notices) and the Node.js bot.

* The old bot plays every decision of the season legally and in time: the new fields and
  the new Notice codes do not disturb it (backwards compatibility).
* Every current bot gets ``season_start`` and ``season_end`` on its own stream, the end
  with its final standing row; the SDK bots and the Node bot asked to exit after the
  season do so by themselves.
* The turns carry ``action_info``: fan-tan's forced passes cost ``pass_chips`` (SV-17).
"""

from __future__ import annotations

import contextlib
import io
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from referee import bots, keys
from referee.cli.main import main as arena_main
from referee.embedded_redis import EmbeddedRedis
from referee.match.season_row import Standings
from referee.match.spec import TimeControl
from referee.procs import stop_process
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from sample_bots.first_legal import FirstLegalBot
from sample_bots.sdk import Turn
from tests.platform_fixtures import Platform, running_platform
from tests.polyglot.helpers import node_ready

pytestmark = pytest.mark.slow

OLD_BOT = Path(__file__).resolve().parent / "old_v1" / "old_bot.py"


@pytest.fixture(scope="module")
def platform(embedded_redis: EmbeddedRedis) -> Iterator[Platform]:
    with running_platform(embedded_redis.url) as running:
        yield running


class NoticeBot(FirstLegalBot):
    """First legal action; records the season notices and the turns' action info."""

    def __init__(self, season: str) -> None:
        self.exit_after_season = season
        self.notices: list[dict[str, Any]] = []
        self.kinds: set[tuple[str, int]] = set()

    def choose(self, turn: Turn) -> str:
        self.kinds.update((info.kind, info.cost) for info in turn.action_info)
        return super().choose(turn)

    def on_season_start(self, notice: dict[str, Any]) -> None:
        self.notices.append(notice)

    def on_season_end(self, notice: dict[str, Any]) -> None:
        super().on_season_end(notice)
        self.notices.append(notice)


def wait_connected(platform: Platform, names: list[str], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(platform.conn.hlen(keys.bot_streams(n)) for n in names):
        assert time.monotonic() < deadline, "bots did not connect"
        time.sleep(0.1)


def play_season(platform: Platform, name: str, entrants: list[str]) -> Standings:
    spec = SeasonSpec(
        name=name,
        game="sevens",
        bots=tuple(entrants),
        table_size=len(entrants),
        preset="fan-tan",
        deals_per_match=2,
        time_control=TimeControl(move_ms=3000, bank_ms=5000),
        seed=11,
        options=SeasonOptions(duplicate=False, window=1),
    )
    store.create_season(platform.conn, spec)
    store.start_season(platform.conn, name)
    deadline = time.monotonic() + 120
    while store.get_season(platform.conn, name)["state"] not in store.ENDED:
        assert time.monotonic() < deadline, store.get_season(platform.conn, name)
        time.sleep(0.2)
    standings = store.get_standings(platform.conn, name)
    assert standings is not None
    return standings


def check_end_notice(notices: list[dict[str, Any]], season: str, bot: str) -> None:
    assert [n["code"] for n in notices] == ["season_start", "season_end"], notices
    end = notices[1]
    assert (end["season"], end["game"], end["season_state"]) == (season, "sevens", "finished")
    row = end["standing"]
    assert row["bot"] == bot and 1 <= row["rank"] <= row["of"] == 3, row
    assert row["matches"] == 1 and row["unit"] == "chips", row


def test_old_bot_sdk_bots_and_season_notices(platform: Platform, tmp_path: Path) -> None:
    season = "compat-sdk"
    sdk = {name: NoticeBot(season) for name in ("sdk-a", "sdk-b")}
    threads = []
    for name, bot in sdk.items():
        bot.name = name
        token = bots.register(platform.conn, name)
        thread = threading.Thread(target=bot.run, args=(platform.server, token), daemon=True)
        thread.start()
        threads.append(thread)
    old_log = tmp_path / "old.jsonl"
    old_token = bots.register(platform.conn, "old-v1")
    old = subprocess.Popen(
        [sys.executable, str(OLD_BOT), platform.server, old_token, str(old_log)],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
    )
    try:
        wait_connected(platform, ["sdk-a", "sdk-b", "old-v1"])
        standings = play_season(platform, season, ["sdk-a", "sdk-b", "old-v1"])
        for thread in threads:  # exit_after_season: run() returns by itself
            thread.join(30)
            assert not thread.is_alive(), "an SDK bot did not exit after its season ended"
        for name, bot in sdk.items():
            check_end_notice(bot.notices, season, name)
        seen = set().union(*(b.kinds for b in sdk.values()))
        assert ("forced_pass", 1) in seen and ("card", 0) in seen, seen  # fan-tan SV-17
        deadline = time.monotonic() + 10
        while '"season_end"' not in old_log.read_text():
            assert time.monotonic() < deadline, old_log.read_text()[-2000:]
            time.sleep(0.1)
    finally:
        stop_process(old, 10)
    assert old.stderr is not None
    errors = old.stderr.read().decode()
    assert "Traceback" not in errors, errors
    entries = [json.loads(line) for line in old_log.read_text().splitlines()]
    turns = [e for e in entries if e["kind"] == "turn"]
    statuses = {e["status"] for e in entries if e["kind"] == "result"}
    assert turns and statuses == {"ACCEPTED"}, statuses
    notices = [e["code"] for e in entries if e["kind"] == "notice"]
    assert notices == ["season_start", "season_end"], notices
    row = next(r for r in standings["rows"] if r["bot"] == "old-v1")
    assert row["matches"] == 1 and row["invalid_actions"] == row["timeouts"] == 0, row
    check_bot_views(platform, "old-v1")


def arena(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert arena_main(list(argv)) == 0
    return out.getvalue()


def check_bot_views(platform: Platform, bot: str) -> None:
    """`arena match list --bot` finds the bot's match; `arena replay --seat BOT` shows only
    its hands and marks its decisions (README, "For bot authors")."""
    listed = arena("match", "list", "--bot", bot, "--redis-url", platform.url).splitlines()
    assert listed and all(bot in line.split()[-1].split(",") for line in listed), listed
    assert not arena("match", "list", "--bot", "nobody", "--redis-url", platform.url).strip()
    match_id = listed[0].split()[0]
    text = arena("replay", match_id, "--seat", bot, "--redis-url", platform.url)
    hands = [line for line in text.splitlines() if line.startswith("   hand ")]
    mine = [line for line in hands if f"({bot}):" in line]
    assert mine and all("cards)" not in line for line in mine), hands
    assert all(line.endswith("cards)") for line in hands if line not in mine), hands
    assert any(line.startswith("  >") for line in text.splitlines()), text[:2000]


@pytest.mark.node
def test_node_bot_exits_when_its_season_ends(platform: Platform, tmp_path: Path) -> None:
    node_dir = node_ready()
    season = "compat-node"
    sdk = {name: NoticeBot(season) for name in ("sdk-c", "sdk-d")}
    threads = []
    for name, bot in sdk.items():
        bot.name = name
        token = bots.register(platform.conn, name)
        thread = threading.Thread(target=bot.run, args=(platform.server, token), daemon=True)
        thread.start()
        threads.append(thread)
    token = bots.register(platform.conn, "node-js")
    argv = ["node", str(node_dir / "bot.js"), "--server", platform.server, "--token", token]
    log = tmp_path / "node.log"
    with log.open("wb") as out:
        node = subprocess.Popen(
            [*argv, "--exit-after-season", season], stdout=out, stderr=subprocess.STDOUT
        )
        try:
            wait_connected(platform, ["sdk-c", "sdk-d", "node-js"])
            standings = play_season(platform, season, ["sdk-c", "sdk-d", "node-js"])
            assert node.wait(30) == 0, log.read_text()
        finally:
            stop_process(node, 10)
            for thread in threads:
                thread.join(30)
    text = log.read_text()
    assert "notice season_start" in text and "notice season_end" in text, text
    assert f"season {season} finished: rank" in text, text
    row = next(r for r in standings["rows"] if r["bot"] == "node-js")
    assert row["invalid_actions"] == row["timeouts"] == 0, row
