"""An SDK bot process that plays one of the in-engine sample policies over gRPC.

``python -m referee.seasons.policy_bot --policy hold-sevens --server HOST:PORT --token T``

The demo seats it beside the SDK's own random and first-legal bots so that a season has a
clearly stronger strategy to find. It sees only what any bot sees: the observation and the
legal actions of its turn.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
from collections.abc import Sequence

from referee.games.policies import POLICIES, Policy
from sample_bots.sdk import Bot, Turn, main


class PolicyBot(Bot):
    version = "1.0"

    def __init__(self, policy_name: str, seed: int | None = None) -> None:
        self.name = policy_name
        self._policy: Policy = POLICIES[policy_name]
        self._rng = random.Random(seed)
        self._lock = threading.Lock()  # choose runs in a thread pool

    def choose(self, turn: Turn) -> str:
        with self._lock:
            return self._policy(turn.observation, turn.legal_actions, self._rng)


def run(argv: Sequence[str] | None = None) -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--policy", default="hold-sevens", choices=sorted(POLICIES))
    pre.add_argument("--seed", type=int, default=None)
    known, rest = pre.parse_known_args(argv)
    main(PolicyBot(known.policy, known.seed), rest)


if __name__ == "__main__":
    run(sys.argv[1:])
