"""A first-legal bot that thinks ``--think-ms`` on every turn, so that at any moment it
likely holds an open decision (the referee-cut test needs one to be re-sent). Plays
exactly as ``sample_bots.first_legal``: the same results.

``python -m tests.multihost.thinking_bot --think-ms 20 --server HOST:PORT`` (token in
``$ARENA_TOKEN``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from arena_sdk.sdk import Bot, Turn, main


class ThinkingBot(Bot):
    def __init__(self, think_ms: float) -> None:
        self.name = "thinking-first-legal"
        self.think_s = think_ms / 1000.0

    def choose(self, turn: Turn) -> str:
        time.sleep(self.think_s)
        return turn.legal_actions[0]


def run(argv: Sequence[str] | None = None) -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--think-ms", type=float, default=20.0)
    known, rest = pre.parse_known_args(argv)
    main(ThinkingBot(known.think_ms), rest)


if __name__ == "__main__":
    run(sys.argv[1:])
