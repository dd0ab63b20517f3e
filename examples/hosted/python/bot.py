"""A hosted Python bot: the SDK (arena_sdk) is there without installing anything.

Submit it with ``arena bot submit NAME examples/hosted/python``; the platform runs
``python bot.py`` in its sandbox, connected to the referee over gRPC. It plays the first
legal action that costs nothing (the list is sorted, ``pass`` last).
"""

from arena_sdk.sdk import Bot, Turn, main


class FirstFree(Bot):
    def choose(self, turn: Turn) -> str:
        for info in turn.action_info:
            if info.cost == 0:
                return info.action
        return turn.legal_actions[0]


if __name__ == "__main__":
    main(FirstFree())
