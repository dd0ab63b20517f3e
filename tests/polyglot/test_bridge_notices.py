"""The stdio bridge with season notices: with ``--notify`` the program gets ``notice`` lines
(docs/STDIO.md), and with ``--exit-after-season`` the bridge stops by itself (exit code 0)
once that season's ``season_end`` arrives, not on another season's."""

from __future__ import annotations

import asyncio
import json
import sys
import threading
import time
from pathlib import Path

import redis

from referee import keys
from referee.gateway.notices import bot_notice_payload
from sample_bots.bridge import BridgeOptions, run_bridge
from tests.gateway.helpers import register, running_referee


def test_bridge_forwards_notices_and_exits_after_its_season(redis_url: str, tmp_path: Path) -> None:
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    token = register(client, "bridged")
    lines = tmp_path / "lines.jsonl"
    source = (
        "import sys\n"
        f"with open({str(lines)!r}, 'a') as out:\n"
        "    for line in sys.stdin:\n"
        "        out.write(line)\n"
        "        out.flush()\n"
    )
    codes: list[int] = []

    def publish(code: str, season: str) -> None:
        notice: dict[str, object] = {"code": code, "season": season, "game": "sevens"}
        if code == "season_end":
            notice["season_state"] = "finished"
            notice["standing"] = {"bot": "bridged", "rank": 1, "of": 3}
        client.publish(keys.BOT_NOTICES_CHANNEL, bot_notice_payload("bridged", notice))

    async def scenario() -> None:
        async with running_referee(redis_url) as referee:
            stop = threading.Event()
            options = BridgeOptions(notify=True, exit_after_season="s-b")
            argv = [sys.executable, "-c", source]
            server = f"127.0.0.1:{referee.port}"
            thread = threading.Thread(
                target=lambda: codes.append(run_bridge(server, token, argv, options, stop=stop))
            )
            thread.start()
            try:
                deadline = time.monotonic() + 20
                while not client.hlen(keys.bot_streams("bridged")):
                    assert time.monotonic() < deadline, "the bridge did not connect"
                    await asyncio.sleep(0.05)
                await asyncio.sleep(0.3)
                publish("season_start", "s-b")
                publish("season_end", "s-other")  # not the bridge's season: it plays on
                await asyncio.sleep(0.5)
                assert thread.is_alive()
                publish("season_end", "s-b")
                deadline = time.monotonic() + 15
                while thread.is_alive() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert not thread.is_alive(), "the bridge did not exit after its season"
            finally:
                stop.set()
                thread.join(10)

    try:
        asyncio.run(scenario())
    finally:
        client.close()
    assert codes == [0]
    notices = [json.loads(line) for line in lines.read_text().splitlines()]
    assert [(n["type"], n["code"], n["season"]) for n in notices] == [
        ("notice", "season_start", "s-b"),
        ("notice", "season_end", "s-other"),
        ("notice", "season_end", "s-b"),
    ]
    assert notices[-1]["standing"]["rank"] == 1 and notices[-1]["season_state"] == "finished"
