"""A bot whose transport died silently gets its request on reconnect.

Real stack: ``arena referee`` and ``arena worker`` processes, SDK bots. The victim's first
instance reaches the referee through a loopback proxy and is thinking on a request when the
proxy freezes (no FIN, no RST: the referee's stream looks alive). A second instance of the
same bot then connects directly, as a restarted bot does within a second or two. It must
be sent the request the dead stream held, in time: the match ends exactly as an
undisturbed run with the same seed, and no seat is charged a timeout.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from referee import bots, queue
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.match.spec import TimeControl
from sample_bots.sdk import Bot, Turn
from tests.adversarial.proxy import FreezableProxy
from tests.platform_fixtures import running_platform
from tests.workers.test_e2e import spec_of, wait_done

pytestmark = pytest.mark.slow


@dataclass
class Holder(Bot):
    """Plays its first legal action; with ``hold`` set, its first choose call blocks
    until released (it 'dies' thinking)."""

    hold: bool = False
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)

    def choose(self, turn: Turn) -> str:
        if self.hold and not self.holding.is_set():
            self.holding.set()
            self.release.wait(60)
        return turn.legal_actions[0]


@contextlib.contextmanager
def running(bot: Bot, name: str, server: str, token: str) -> Iterator[threading.Event]:
    bot.name = name
    stop = threading.Event()
    thread = threading.Thread(
        target=bot.run, args=(server, token), kwargs={"stop": stop}, daemon=True
    )
    thread.start()
    try:
        yield stop
    finally:
        stop.set()
        thread.join(10)


def test_a_reconnecting_bot_gets_the_request_its_dead_stream_held(
    embedded_redis: EmbeddedRedis,
) -> None:
    url = embedded_redis.url
    tc = TimeControl(move_ms=6000, bank_ms=0, grace_ms=100, queue_ms=8000)
    deals = (DealSpec(seed=77),)
    seats = ["zb-victim", "zb-1", "zb-2"]
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(running_platform(url, workers=1))
        conn, server = platform.conn, platform.server
        host, port = server.rsplit(":", 1)
        proxy = FreezableProxy(host, int(port))
        stack.callback(proxy.close)
        tokens = {name: bots.register(conn, name) for name in seats}
        for name in seats[1:]:
            stack.enter_context(running(Holder(), name, server, tokens[name]))
        dying = Holder(hold=True)
        stack.callback(dying.release.set)
        stack.enter_context(
            running(dying, "zb-victim", f"127.0.0.1:{proxy.port}", tokens["zb-victim"])
        )

        victim = spec_of("zb-kill", "fan-tan", seats, deals=deals, season="", time_control=tc)
        assert queue.enqueue_match(conn, victim)
        assert dying.holding.wait(30), "the victim was never asked"
        proxy.freeze()  # its transport is dead; the referee was told nothing
        with running(Holder(), "zb-victim", server, tokens["zb-victim"]):
            wait_done(conn, "zb-kill", timeout=60)
            reference = spec_of("zb-ref", "fan-tan", seats, deals=deals, season="", time_control=tc)
            assert queue.enqueue_match(conn, reference)
            wait_done(conn, "zb-ref", timeout=60)

        killed = queue.get_result(conn, "zb-kill")
        undisturbed = queue.get_result(conn, "zb-ref")
        assert killed is not None and undisturbed is not None
        assert [s["timeouts"] for s in killed["stats"]] == [0, 0, 0]
        assert killed["result"] == undisturbed["result"]
