"""The platform processes settle the garbage collector before they play
(``referee.procs.settle_garbage_collector``, docs/workers.md "Sizing to the machine").

Each check runs in a fresh interpreter: freezing is process-wide, and the test process's
own objects must stay collectable.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_settling_freezes_what_is_alive_and_still_collects_later_garbage() -> None:
    out = _run(
        """
        import gc, weakref
        from referee.procs import settle_garbage_collector

        class Node:
            pass

        kept = Node()
        kept.me = kept  # a cycle alive at start-up: frozen, never scanned again
        settle_garbage_collector()
        frozen = gc.get_freeze_count()
        later = Node()
        later.me = later  # a cycle made after: still the collector's to free
        gone = weakref.ref(later)
        del later
        gc.collect()
        print(frozen > 1000, gone() is None, kept.me is kept)
        """
    )
    assert out == "True True True"


def test_the_referee_and_the_worker_settle_before_they_play() -> None:
    """Both entry points call it before their event loop starts: the match host's
    ``run_host`` and the referee command (patched here to stop right after)."""
    out = _run(
        """
        import asyncio, gc
        import referee.cli.referee_cmd as referee_cmd
        import workers.host as host

        seen = []

        def fake_run(coro):
            seen.append(gc.get_freeze_count() > 0)
            coro.close()

        asyncio.run = fake_run
        class Host:
            def __init__(self, *args, **kwargs):
                pass

            async def run(self):
                pass

        host.MatchHost = Host
        host.run_host("redis://127.0.0.1:1/0", "w", "s")
        gc.unfreeze()
        from referee.cli.main import main
        main(["referee", "--redis-url", "redis://127.0.0.1:1/0", "--port", "0", "--http-port", "0"])
        print(seen)
        """
    )
    assert out.splitlines()[-1] == "[True, True]"
