"""End to end: a referee SIGKILLed while a bot holds a request (docs/DECISIONS.md).

Two real referees, a real match host, SDK bots that know both referees. Referee A is
killed while the slow bot thinks; the requests it had sent die with it. The host sees its
internal stream to A break, sends those requests again to the bots' new referee (B, as the
bot-streams directory shows once they reconnected), the bots answer them, and the match
ends exactly as an undisturbed run with the same seed: no seat is charged a timeout for
the dead referee's time.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

import pytest
import redis

from referee import keys, queue
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.match.replay import verify_record
from referee.match.row import lean_result
from referee.match.spec import TimeControl
from referee.procs import arena_command, start_referee, stop_process
from sample_bots.sdk import Bot, Turn
from tests.platform_fixtures import bots_on
from tests.workers.test_e2e import spec_of, wait_done

pytestmark = pytest.mark.slow

SLOW_TURN = 3
"""The slow bot's choose call that thinks long enough for the referee to be killed."""


@dataclass
class HoldingBot(Bot):
    """Plays its first legal action; its ``SLOW_TURN``-th choose call thinks 0.6 s and
    sets ``holding`` as it starts (every run of the same seed sleeps on the same turn)."""

    slow: bool = False
    calls: int = 0
    holding: threading.Event = field(default_factory=threading.Event)

    def choose(self, turn: Turn) -> str:
        self.calls += 1
        if self.slow and self.calls == SLOW_TURN:
            self.holding.set()
            time.sleep(0.6)
        return turn.legal_actions[0]


def test_sigkill_of_a_referee_holding_a_request_changes_nothing(
    embedded_redis: EmbeddedRedis,
) -> None:
    url = embedded_redis.url
    # the slow turn's 0.6 s is inside the limit (900 + 100 ms): only a lost request, never
    # the bot, could time it out
    tc = TimeControl(move_ms=900, bank_ms=0, grace_ms=100, queue_ms=8000)
    deals = (DealSpec(seed=501),)
    with contextlib.ExitStack() as stack:
        conn = redis.Redis.from_url(url, decode_responses=True)
        stack.callback(conn.close)
        conn.flushall()
        # B first, so that it is stopped last (the ExitStack unwinds in reverse)
        referee_b, server_b = start_referee(url)
        stack.callback(stop_process, referee_b, 15)
        referee_a, server_a = start_referee(url)
        stack.callback(stop_process, referee_a, 15)
        pool = subprocess.Popen(
            arena_command("worker", "-n", "1", "--redis-url", url),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        stack.callback(stop_process, pool, 15)

        named = {f"rk-{i}": HoldingBot(slow=i == 0) for i in range(3)}
        seats = list(named)
        slow = named["rk-0"]
        # every bot tries A first, then B
        with bots_on(conn, f"{server_a},{server_b}", named):
            victim = spec_of("rk-kill", "fan-tan", seats, deals=deals, season="", time_control=tc)
            assert queue.enqueue_match(conn, victim)
            assert slow.holding.wait(30), "the slow bot was never asked its slow turn"
            # rk-0 thinks on a request referee A sent: kill A mid-thought.
            time.sleep(0.1)
            entries = [json.loads(v) for v in conn.hvals(keys.bot_streams("rk-0"))]
            assert len({e["referee"] for e in entries}) == 1 and entries[0]["link"]
            referee_a.send_signal(signal.SIGKILL)
            referee_a.wait(10)
            wait_done(conn, "rk-kill", timeout=30)

            reference = spec_of("rk-ref", "fan-tan", seats, deals=deals, season="", time_control=tc)
            slow.calls = 0  # the reference run thinks 0.6 s on the same turn
            assert queue.enqueue_match(conn, reference)
            wait_done(conn, "rk-ref", timeout=30)

        killed = queue.get_result(conn, "rk-kill")
        undisturbed = queue.get_result(conn, "rk-ref")
        record = queue.get_record(conn, "rk-kill")
        assert killed is not None and undisturbed is not None and record is not None
        late = [
            {k: v for k, v in step.items() if k not in ("events", "request")}
            for step in record["steps"]
            if step.get("timeout")
        ]
        assert [s["timeouts"] for s in killed["stats"]] == [0, 0, 0], late
        assert killed["result"] == undisturbed["result"]
        assert [s["decisions"] for s in killed["stats"]] == [
            s["decisions"] for s in undisturbed["stats"]
        ]
        assert not any(step.get("timeout") for step in record["steps"])
        assert record["resent"] >= 1  # the request A held was sent again (with a new clock)
        assert lean_result(verify_record(record)) == killed["result"]  # referee/match/row.py
