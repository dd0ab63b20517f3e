"""A bot that does not read its stream stalls only itself.

A raw HTTP/2 client (``h2`` over a socket) announces a 600-byte window, never opens it again
and keeps answering pings. On the real stack (``arena referee`` and ``arena worker``
processes, SDK bots in threads) its stream is ended by the write bound while the other
bots' matches finish with no timeout, and a SIGTERM that arrives while a write to it is
stuck still completes promptly, closing every other bot's stream.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import time

import pytest

from referee import bots, queue
from referee.embedded_redis import EmbeddedRedis
from referee.match.spec import TimeControl
from sample_bots.sdk import Bot, Turn
from tests.adversarial.h2client import SlowReader
from tests.platform_fixtures import bots_in_threads, running_platform
from tests.workers.test_e2e import spec_of, wait_done

pytestmark = pytest.mark.slow

WINDOW = 600
WRITE_BOUND_S = 5.0  # referee.gateway.hub.WRITE_TIMEOUT_S


class FirstLegal(Bot):
    choose_inline = True

    def choose(self, turn: Turn) -> str:
        return turn.legal_actions[0]


def _wait_for(predicate: object, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if callable(predicate) and predicate():
            return True
        time.sleep(0.05)
    return False


def test_a_slow_reader_is_ended_alone_and_sigterm_completes(
    embedded_redis: EmbeddedRedis,
) -> None:
    url = embedded_redis.url
    lines: list[str] = []
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(running_platform(url, on_line=lines.append))
        conn, server = platform.conn, platform.server
        host, port = server.rsplit(":", 1)
        good = [f"good-{i}" for i in range(5)]
        stack.enter_context(bots_in_threads(platform, {name: FirstLegal() for name in good}))

        # 1. The slow reader is seated; its stream stalls and is ended by the write bound.
        slow = SlowReader(host, int(port), bots.register(conn, "slow-1"), window=WINDOW)
        stack.callback(slow.close)
        fast_tc = TimeControl(move_ms=400, bank_ms=0, grace_ms=100, queue_ms=8000)
        with_slow = spec_of(
            "sr-a", "fan-tan", ["slow-1", "good-0", "good-1"], season="", time_control=fast_tc
        )
        clean = spec_of("sr-b", "fan-tan", ["good-2", "good-3", "good-4"], season="")
        assert queue.enqueue_match(conn, with_slow)
        assert slow.wait_stalled(WINDOW, 30), f"the referee sent only {slow.received} bytes"
        assert queue.enqueue_match(conn, clean)
        ended = _wait_for(
            lambda: any("ending the stream of slow-1" in line for line in lines), WRITE_BOUND_S + 10
        )
        assert ended, "the stalled stream was never ended:\n" + "\n".join(lines[-30:])
        wait_done(conn, "sr-a", "sr-b", timeout=60)
        clean_result = queue.get_result(conn, "sr-b")
        slow_result = queue.get_result(conn, "sr-a")
        assert clean_result is not None and slow_result is not None
        assert [s["timeouts"] for s in clean_result["stats"]] == [0, 0, 0]
        # the slow reader's table: only the slow reader was ever timed out
        assert [s["timeouts"] for s in slow_result["stats"]][1:] == [0, 0]

        # 2. SIGTERM while a write to a second slow reader is stuck: the drain completes.
        stuck = SlowReader(host, int(port), bots.register(conn, "slow-2"), window=WINDOW)
        stack.callback(stuck.close)
        long_tc = TimeControl(move_ms=20_000, bank_ms=0, grace_ms=100, queue_ms=8000)
        held = spec_of(
            "sr-c", "fan-tan", ["slow-2", "good-0", "good-1"], season="", time_control=long_tc
        )
        assert queue.enqueue_match(conn, held)
        assert stuck.wait_stalled(WINDOW, 30), f"the referee sent only {stuck.received} bytes"
        began = time.monotonic()
        referee = platform.referee
        referee.send_signal(signal.SIGTERM)
        try:
            code = referee.wait(WRITE_BOUND_S + 25)
        except subprocess.TimeoutExpired:
            pytest.fail(
                "SIGTERM did not complete: the drain waits on the stalled stream:\n"
                + "\n".join(lines[-30:])
            )
        took = time.monotonic() - began
        assert code == 0, "\n".join(lines[-30:])
        assert took < WRITE_BOUND_S + 20, f"{took:.1f} s:\n" + "\n".join(lines[-30:])
        print(next((line for line in lines if "stopped in" in line), "no stop line"))
        # every other bot's stream was closed by the drain (so its SDK fails over)
        for name in good:
            assert any(f"bot {name} disconnected" in line for line in lines), name
