"""CPU per decision of a match host's decision loop, without the internal link.

Plays whole matches through ``workers.runner.MatchRun`` (observation, TurnRequest bytes,
the clock, the judging, the action result, the metrics, the step record, and the match
record's JSON at the end, as the host commits it) against a stand-in link that answers at
once with the first legal action, and prints its CPU per decision beside a baseline
measured in the same run: the engine alone playing the same actions through the one
match loop (``referee.games.loop.play_out``). What the link itself costs (the internal
stream) is not in either figure.

    .venv/bin/python bench/hostloop.py [--matches 40] [--game sevens|sedma|both] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import time
from typing import Any

from arena.v1 import internal_pb2
from referee.games.base import DealSpec, Match
from referee.games.loop import Turn, play_out
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl
from workers import metrics
from workers.runner import MatchRun

PRESETS = {"sevens": ("fan-tan", 4), "sedma": ("sedma", 4)}


class _Link:
    """Answers every turn at once with the first legal action of the match it serves."""

    referee = "bench"

    def __init__(self) -> None:
        self.run: MatchRun | None = None
        self.notes = 0
        self.sent_bytes = 0

    def turn(
        self,
        bot: str,
        key: tuple[str, int, int],
        payload: bytes,
        limit_ms: float,
        expires_ms: float,
        first_sent_ms: float = 0.0,
    ) -> asyncio.Future[Any]:
        assert self.run is not None
        self.sent_bytes += len(payload)
        action = self.run.match.legal_actions()[0]
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(
            internal_pb2.Reply(
                match_id=key[0],
                attempt=key[1],
                seq=key[2],
                kind=internal_pb2.Reply.ANSWER,
                action=action,
                sent_ms=1.0,
                received_ms=1.5,
            )
        )
        return future

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        self.notes += 1
        self.sent_bytes += len(payload)

    def forget(self, key: tuple[str, int, int]) -> None:
        pass


class _Router:
    def __init__(self, link: _Link) -> None:
        self.link = link

    def excused(self, bot: str, within_ms: float) -> bool:
        return False

    async def route(self, bot: str, until_ms: float) -> _Link:
        return self.link

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        self.link.notify(bot, match_id, payload, accepted)

    def forget(self, bot: str) -> None:
        pass

    def avoid(self, referee: str) -> None:
        pass


class _Host:
    def __init__(self) -> None:
        self.link = _Link()
        self.router = _Router(self.link)
        self.metrics = metrics.HostMetrics()

    def in_thread(self, fn: Any, *args: Any) -> Any:
        raise NotImplementedError


def specs(game: str, count: int) -> list[MatchSpec]:
    preset, seats = PRESETS[game]
    rules = get_game(game).preset(preset).to_dict()
    deals = 2 if game == "sevens" else 3
    return [
        MatchSpec(
            match_id=f"{game}-{i}",
            game=game,
            rules=rules,
            seats=tuple(f"bot{k}" for k in range(seats)),
            seed=i,
            deals=tuple(DealSpec(seed=1000 * i + d, rotation=d % seats) for d in range(deals)),
            time_control=TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50),
            strikes=0,
        )
        for i in range(count)
    ]


def host_loop(all_specs: list[MatchSpec]) -> tuple[float, int, int]:
    """CPU seconds, decisions asked, bytes sent: every match played by MatchRun, then its
    result and record encoded as the commit does."""

    async def main() -> tuple[int, int]:
        host = _Host()
        asked = 0
        for spec in all_specs:
            run = MatchRun(host, spec, 1)  # type: ignore[arg-type]
            host.link.run = run
            await run.play()
            json.dumps(run.committed_result(), separators=(",", ":"))
            json.dumps(run.record(), separators=(",", ":"))
            asked += run.seq
        return asked, host.link.sent_bytes

    start = time.process_time()
    asked, sent = asyncio.run(main())
    return time.process_time() - start, asked, sent


def _first_legal(match: Match, turn: Turn) -> str:
    return turn.legal[0]


def engine_only(all_specs: list[MatchSpec]) -> tuple[float, int]:
    """CPU seconds and decisions of the engine alone playing the same first-legal actions."""
    start = time.process_time()
    n = 0
    for spec in all_specs:
        game = get_game(spec.game)
        match = game.new_match(
            game.rules_from_dict(spec.rules), len(spec.seats), spec.seed, spec.deals
        )
        n += play_out(match, _first_legal)
    return time.process_time() - start, n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=40, help="matches per game and round")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best kept)")
    parser.add_argument("--game", choices=("sevens", "sedma", "both"), default="both")
    parser.add_argument("--profile", action="store_true", help="cProfile the host loop")
    args = parser.parse_args()
    games = ("sevens", "sedma") if args.game == "both" else (args.game,)
    for game in games:
        all_specs = specs(game, args.matches)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            host_loop(all_specs)
            profiler.disable()
            pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(30)
            continue
        best_host = best_engine = float("inf")
        for _ in range(args.rounds):
            cpu, asked, sent = host_loop(all_specs)
            best_host = min(best_host, cpu / asked)
            cpu, n = engine_only(all_specs)
            best_engine = min(best_engine, cpu / n)
        print(
            f"{game}: host loop {best_host * 1e6:.1f} us per decision, engine alone "
            f"{best_engine * 1e6:.1f} us (host / engine {best_host / best_engine:.1f}x; "
            f"{asked} decisions, {sent / asked:.0f} bytes sent per decision)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
