"""CPU of a Python SDK bot per decision, against a scripted referee in this process.

The platform is left out: a gRPC ``BotGateway`` in this process sends real Sevens turn
requests (the observations of a 4-seat deal played through the engine, history and all),
``window`` at a time, and, unless the bot declined them (``Hello.skip_accepted_results``),
an ACCEPTED ``ActionResult`` after each answer, as the referee does. The bot is the SDK in
a process of its own (``first legal action``); its CPU per decision comes from /proc over
the measured decisions. A bot that asks for batches (``Hello.batches``, the SDK's
default) gets the turns its one message released together in one ``TurnBatch``, as the
referee writes turns that wait together. Each variant runs ``--rounds`` times, interleaved,
and is printed beside the first one (the SDK's defaults) measured in the same run:

* ``default``: the SDK's defaults (``choose`` in the SDK's thread pool, batches asked
  for where the SDK knows them); accepted results declined, since the bot does not
  override ``on_result``;
* ``single``: the same without batches (``batches = False``: one message per turn and
  per answer);
* ``pool+results``: the same bot taking every result (``accepted_results = True``, what
  every bot got before ``skip_accepted_results``);
* ``inline``: ``choose_inline = True`` (``choose`` on the stream's own thread);
* ``thinking``: a bot that thinks (``choose`` sleeps ``--think-ms``, 0.5-1.5 times it at
  random, in the SDK's thread pool): its answers come one at a time, as a thinking bot's
  do in a season, so each turn and each answer is a message of its own;
* ``bridge``: the stdio bridge (``arena bridge``, defaults) in front of a small Python
  program that answers the first legal action: the bridge's process only (the program's
  CPU is its own);
* ``default-delta``, ``inline-delta``: those bots fed requests without the rules and with
  only the last two history entries, the most an observation carrying only what changed
  could spare the bot (measured here, not built: docs/PROTOCOL.md section 4).

    .venv/bin/python bench/sdk_bot.py [--decisions N] [--window W] [--rounds R]

To compare two versions of the SDK in one run, interleaved: ``--base-tree PATH`` (another
checkout) adds each variant again as ``VARIANT@base``, its bot process importing
``arena_sdk`` from PATH.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import grpc  # type: ignore[import-untyped]
import grpc.aio  # type: ignore[import-untyped]

from arena.v1 import bot_pb2
from referee.games.base import DealSpec, Match
from referee.games.loop import Turn, play_out
from referee.games.registry import get_game
from referee.gateway.wire import turn_batch
from referee.match.messages import TurnMessage
from referee.protocol import convert

sys.path.append(str(Path(__file__).resolve().parent))

from machine import baseline_line, context_switches

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")

BOT = """
import random, sys, time
from arena_sdk.sdk import Bot
class B(Bot):
    name = "bench"
    max_concurrent_matches = 64
    if sys.argv[2] != "default":
        choose_inline = sys.argv[2] == "inline"
    accepted_results = sys.argv[3] == "results"
    if sys.argv[5] == "single":
        batches = False
    think_s = float(sys.argv[6]) / 1000.0
    def choose(self, turn):
        if self.think_s:
            time.sleep(random.uniform(0.5, 1.5) * self.think_s)
        return turn.legal_actions[0]
B().run(sys.argv[1], "token")
"""

BRIDGE = """
import sys
from arena_sdk.bridge import BridgeOptions, run_bridge
sys.exit(run_bridge(sys.argv[1], "token", [sys.executable, "-c", sys.argv[4]], BridgeOptions()))
"""

PROGRAM = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if message.get("type") == "turn":
        print(message["legal_actions"][0], flush=True)
"""

VARIANTS = {
    "default": ("default", "skip", "batches"),
    "single": ("default", "skip", "single"),
    "pool+results": ("pool", "results", "batches"),
    "inline": ("inline", "skip", "batches"),
    "thinking": ("pool", "skip", "batches"),
    "bridge": ("bridge", "skip", "batches"),
    "default-delta": ("default", "skip", "batches"),
    "inline-delta": ("inline", "skip", "batches"),
}


def cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * _TICK_S


def turn_requests(seed: int = 3, delta: bool = False) -> list[bytes]:
    """The serialized TurnRequests of one 4-seat Sevens deal, first legal action played;
    with ``delta``, without the rules and with only the last two history entries (the most
    a delta observation could spare the bot: measured, not built)."""
    game = get_game("sevens")
    match = game.new_match(game.preset("sevens"), 4, seed, [DealSpec(seed + 1)])
    out = []

    def first_legal(match: Match, turn: Turn) -> str:
        request: TurnMessage = {
            "type": "turn",
            "bot": "bench",
            "match_id": "m1",
            "attempt": 1,
            "seq": turn.seq,
            "seat": turn.seat,
            "season": "",
            "observation": match.observation(turn.seat),
            "legal_actions": turn.legal,
            "clock": {"move_ms": 1000, "bank_ms": 5000, "grace_ms": 50},
        }
        message = convert.turn_to_proto(request)
        if delta:  # what a request carrying only the changes would leave to parse
            observation = message.turn.observation
            observation.rules_json = ""
            del observation.history[: max(0, len(observation.history) - 2)]
        out.append(message.SerializeToString())
        return turn.legal[0]

    play_out(match, first_legal)
    return out


class Referee:
    """``BotGateway.Play`` that plays ``decisions`` turns with ``window`` open at once."""

    def __init__(self, requests: list[bytes], decisions: int, window: int, warm: int) -> None:
        self.requests = requests
        self.decisions = decisions
        self.window = window
        self.warm = warm
        self.result = bot_pb2.RefereeMessage(
            result=bot_pb2.ActionResult(
                match_id="m1", attempt=1, seq=1, status=bot_pb2.ActionResult.ACCEPTED
            )
        ).SerializeToString()
        self.warmed = asyncio.Event()
        self.done = asyncio.Event()

    async def Play(self, requests: Any, context: Any) -> None:
        stream = requests.__aiter__()
        hello = (await stream.__anext__()).hello
        skip = getattr(hello, "skip_accepted_results", False)  # an SDK from before it: no
        batches = getattr(hello, "batches", False)
        welcome = bot_pb2.Welcome(bot="bench", protocol_version=1, max_concurrent_matches=64)
        if batches:
            welcome.batches = True
        await context.write(bot_pb2.RefereeMessage(welcome=welcome).SerializeToString())
        sent = 0

        async def send(count: int) -> None:
            # as the referee does: turns released together go in one TurnBatch when asked
            nonlocal sent
            turns = [self.requests[(sent + i) % len(self.requests)] for i in range(count)]
            sent += count
            if batches and count > 1:
                await context.write(turn_batch(turns))
            else:
                for turn in turns:
                    await context.write(turn)

        await send(self.window)
        answered = 0
        async for message in stream:
            kind = message.WhichOneof("msg")
            if kind == "action":
                count = 1
            elif kind == "actions":
                count = len(message.actions.actions)
            else:
                continue
            answered += count
            if answered >= self.warm and not self.warmed.is_set():
                self.warmed.set()
            if not skip:
                for _ in range(count):
                    await context.write(self.result)
            if answered >= self.decisions + self.warm:
                self.done.set()
                return
            await send(count)

    def handler(self) -> Any:
        return grpc.method_handlers_generic_handler(
            "arena.v1.BotGateway",
            {
                "Play": grpc.stream_stream_rpc_method_handler(
                    self.Play,
                    request_deserializer=bot_pb2.BotMessage.FromString,
                    response_serializer=lambda data: data,
                )
            },
        )


async def measure(
    variant: str,
    requests: list[bytes],
    decisions: int,
    window: int,
    base_tree: str | None,
    profile: str | None = None,
    think_ms: float = 0.0,
) -> tuple[float, float, float]:
    """CPU ms per decision of one bot process playing ``decisions`` turns, the wall ms
    per decision (``window`` open at once: the referee's wait for the answers) and its
    threads' context switches per decision (its wake-ups)."""
    warm = 200
    referee = Referee(requests, decisions, window, warm)
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((referee.handler(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    name, _, tree = variant.partition("@")
    env = dict(os.environ)
    # ``python -c`` puts its working directory first on sys.path: the bot runs in the tree
    # whose arena_sdk it is to import
    cwd = str(Path(__file__).resolve().parent.parent)
    if tree and base_tree:
        cwd = base_tree
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [base_tree, env.get("PYTHONPATH")]))
    mode, results, batching = VARIANTS[name]
    code = BRIDGE if mode == "bridge" else BOT
    bot = subprocess.Popen(
        [
            *(sys.executable, "-c", code, f"127.0.0.1:{port}", mode, results, PROGRAM),
            *(batching, str(think_ms if name == "thinking" else 0.0)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=cwd,
    )
    spy = None
    try:
        await asyncio.wait_for(referee.warmed.wait(), 60)
        start = cpu_s(bot.pid)
        switches = context_switches(bot.pid)
        started = time.perf_counter()
        if profile:
            spy = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "py-spy"),
                    *("record", "--pid", str(bot.pid), "--nonblocking", "--threads"),
                    *("--format", "raw", "--rate", "500", "-o", profile),
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        await asyncio.wait_for(referee.done.wait(), 300)
        used = cpu_s(bot.pid) - start
        wall = time.perf_counter() - started
        switches = context_switches(bot.pid) - switches
    finally:
        if spy is not None:
            spy.send_signal(signal.SIGINT)
            spy.wait(30)
        bot.kill()
        bot.wait()
        await server.stop(None)
    return used * 1000.0 / decisions, wall * 1000.0 / decisions, switches / decisions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=3000)
    parser.add_argument("--window", type=int, default=4, help="turns open at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help="comma-separated; the first is the base"
    )
    parser.add_argument("--base-tree", help="also run each variant with arena_sdk from here")
    parser.add_argument(
        "--think-ms", type=float, default=3.0, help="the thinking variant's mean think time"
    )
    parser.add_argument(
        "--profile", metavar="DIR", help="record each run's bot with py-spy into DIR"
    )
    args = parser.parse_args()
    variants = args.variants.split(",")
    if args.base_tree:
        variants += [f"{v}@base" for v in variants]
    requests = {False: turn_requests(), True: turn_requests(delta=True)}
    runs: dict[str, list[float]] = {v: [] for v in variants}
    walls: dict[str, list[float]] = {v: [] for v in variants}
    switches: dict[str, list[float]] = {v: [] for v in variants}
    machine = baseline_line()
    for _ in range(args.rounds):
        for variant in random.sample(variants, len(variants)):
            profile = None
            if args.profile:
                os.makedirs(args.profile, exist_ok=True)
                profile = os.path.join(args.profile, f"{variant}-{len(runs[variant])}.txt")
            cpu_ms, wall_ms, wakes = asyncio.run(
                measure(
                    variant,
                    requests[variant.split("@")[0].endswith("-delta")],
                    args.decisions,
                    args.window,
                    args.base_tree,
                    profile,
                    args.think_ms,
                )
            )
            runs[variant].append(cpu_ms)
            walls[variant].append(wall_ms)
            switches[variant].append(wakes)
            print(
                f"{variant}: {cpu_ms:.3f} ms ({wall_ms:.3f} wall, {wakes:.1f} context switches)",
                file=sys.stderr,
                flush=True,
            )
    base = statistics.median(runs[variants[0]])
    print(
        f"| variant | bot CPU ms per decision, median (all) | vs {variants[0]} | wall ms per "
        "decision, median | context switches per decision, median |"
    )
    print("|---|---|---|---|---|")
    for variant in variants:
        mid = statistics.median(runs[variant])
        each = ", ".join(f"{x:.3f}" for x in runs[variant])
        print(
            f"| {variant} | {mid:.3f} ({each}) | {mid / base:.2f} | "
            f"{statistics.median(walls[variant]):.3f} | "
            f"{statistics.median(switches[variant]):.1f} |"
        )
    print(f"before the runs, {machine}")
    print(f"after the runs, {baseline_line()}")
    print(
        f"({args.decisions} decisions per run, {args.window} open at once, "
        f"{len(requests[False])} distinct requests, {time.strftime('%H:%M:%S')}, load average "
        f"{os.getloadavg()[0]:.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
