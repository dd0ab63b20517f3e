"""An SDK bot process that plays one of the in-engine sample policies over gRPC.

``python -m referee.cli.policy_bot --policy hold-sevens --server HOST:PORT --token T``

The demo seats it beside the SDK's own random and first-legal bots. It sees only what any
bot sees: the observation and the legal actions of its turn. With ``--per-turn-seed`` its
random choices are seeded from ``(seed, match index, seq)`` (the match index is the
``m0007`` part of a season's match id), so it plays a match the same way however many
matches it plays at once, however often the match is retried, and in two seasons of one
seed (the end-to-end tests compare a disturbed season with an undisturbed one).

The search policies of the ladder (``mc``, ``ismcts``, ``solver``: referee/games/ladder.py) think
for at most ``--budget-ms`` per move (200 by default), and never more than a third of the
move clock the referee sends with the turn.
"""

from __future__ import annotations

import argparse
import random
import sys
import threading
from collections.abc import Sequence

from arena_sdk.sdk import Bot, Turn, main
from referee.games.policies import POLICIES, Policy
from referee.seasons.inprocess import turn_rng


class PolicyBot(Bot):
    version = "1.0"

    def __init__(
        self,
        policy_name: str,
        seed: int | None = None,
        per_turn_seed: bool = False,
        budget_ms: int | None = None,
    ) -> None:
        self.name = policy_name
        self._policy: Policy = POLICIES[policy_name]
        prepare = getattr(self._policy, "prepare", None)
        if prepare is not None:
            prepare()  # e.g. the solver's C build: before the first move's clock runs
        self._budget_ms = budget_ms
        self._seed = seed
        self._per_turn = per_turn_seed
        self._rng = random.Random(seed)
        self._lock = threading.Lock()  # choose runs in a thread pool

    def _policy_for(self, turn: Turn) -> Policy:
        """The policy, its time budget (if it has one) capped at a third of the clock."""
        with_budget = getattr(self._policy, "with_budget", None)
        if with_budget is None:
            return self._policy
        budget = int(getattr(self._policy, "budget_ms", 0))
        if self._budget_ms is not None:
            budget = self._budget_ms
        if turn.clock.move_ms > 0:
            budget = min(budget, turn.clock.move_ms // 3)
        policy: Policy = with_budget(max(1, budget))
        return policy

    def choose(self, turn: Turn) -> str:
        policy = self._policy_for(turn)
        if self._per_turn:
            rng = turn_rng(self._seed, turn.match_id, turn.seq)
            return policy(turn.observation, turn.legal_actions, rng)
        with self._lock:
            return policy(turn.observation, turn.legal_actions, self._rng)


def run(argv: Sequence[str] | None = None) -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--policy", default="hold-sevens", choices=sorted(POLICIES))
    pre.add_argument("--seed", type=int, default=None)
    pre.add_argument("--per-turn-seed", action="store_true")
    pre.add_argument(
        "--budget-ms", type=int, default=None, help="think time per move of mc, ismcts and solver"
    )
    known, rest = pre.parse_known_args(argv)
    main(PolicyBot(known.policy, known.seed, known.per_turn_seed, known.budget_ms), rest)


if __name__ == "__main__":
    run(sys.argv[1:])
