"""Measure the think time the referee stamps for a bot, on a scratch platform.

``python -m referee.botcheck.measure [--grpc] [-n N] -- COMMAND [ARGS]`` starts the same
scratch platform as ``arena bot check -- COMMAND`` and asks N real Sevens decisions (from
seeded deals, all seats), one at a time, and prints the percentiles of the referee's
``think_ms`` (its send stamp to its receive stamp): for a bridged program that is the
bridge, the pipes and the program; for a gRPC bot, the bot and its gRPC stack.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Sequence

from referee.botcheck.harness import BOT_NAME, ScratchPlatform
from referee.botcheck.probe import Probe
from referee.botcheck.states import deal_decisions, default_rules
from referee.match.messages import ClockInfo

CLOCK: ClockInfo = {"move_ms": 3000, "bank_ms": 0, "grace_ms": 100}


def measure(command: Sequence[str], *, grpc: bool, count: int, game: str) -> list[float]:
    """The referee-stamped think times of ``count`` decisions, in milliseconds."""
    times: list[float] = []
    with ScratchPlatform(command, grpc=grpc) as platform:
        if not platform.wait_connected():
            raise SystemExit(f"the bot did not connect: {platform.bot_output()[-5:]}")
        assert platform.client is not None
        probe = Probe(platform.client, BOT_NAME)
        seed = 0
        while len(times) < count:
            seed += 1
            match, next_decision = deal_decisions(game, default_rules(game), seed)
            decision = next_decision()
            while decision is not None and len(times) < count:
                _turn, reply = probe.ask(
                    match_id=f"measure-{seed}",
                    attempt=1,
                    seq=len(times) + 1,
                    seat=decision.seat,
                    observation=decision.observation,
                    legal_actions=decision.legal_actions,
                    clock=CLOCK,
                )
                if reply.action is None or reply.think_ms is None:
                    raise SystemExit(f"no answer: {reply.describe(CLOCK)}")
                times.append(reply.think_ms)
                action = reply.action
                if action not in decision.legal_actions:
                    action = decision.legal_actions[0]
                match.apply(action)
                decision = next_decision()
    return times


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m referee.botcheck.measure")
    parser.add_argument("-n", "--count", type=int, default=200, help="decisions to ask")
    parser.add_argument("--grpc", action="store_true", help="COMMAND is a gRPC bot")
    parser.add_argument("--game", default="sevens")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the bot after --")
    times = sorted(measure(command, grpc=args.grpc, count=args.count, game=args.game))
    p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
    print(
        f"{' '.join(command)}: {len(times)} decisions, think_ms p50 "
        f"{statistics.median(times):.2f}  p99 {p99:.2f}  max {times[-1]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
