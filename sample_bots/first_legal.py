"""A bot that always plays the first (lowest sorted) legal action.

python -m sample_bots.first_legal --server 127.0.0.1:50051 --token T
"""

from __future__ import annotations

from arena_sdk.sdk import Bot, Turn, main


class FirstLegalBot(Bot):
    name = "first-legal"
    version = "1.0"

    def choose(self, turn: Turn) -> str:
        return turn.legal_actions[0]


if __name__ == "__main__":
    main(FirstLegalBot())
