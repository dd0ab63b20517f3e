"""A bot that plays a uniformly random legal action (seeded by ``--seed``).

python -m sample_bots.random_bot --server 127.0.0.1:50051 --token T [--seed 7]
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
from collections.abc import Sequence

from arena_sdk.sdk import Bot, Turn, main


class RandomBot(Bot):
    name = "random"
    version = "1.0"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)
        self._lock = threading.Lock()  # choose runs in a thread pool

    def choose(self, turn: Turn) -> str:
        with self._lock:
            return self._rng.choice(turn.legal_actions)


def run(argv: Sequence[str] | None = None) -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--seed", type=int, default=None, help="random seed (default: unseeded)")
    known, rest = pre.parse_known_args(argv)
    main(RandomBot(known.seed), rest)


if __name__ == "__main__":
    run(sys.argv[1:])
