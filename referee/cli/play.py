"""``arena play``: a person plays a casual match against bots from the terminal.

The person's seat is a bot identity (``human-<name>``) whose client is this command: an
SDK client over the public bot protocol (:class:`referee.web.human.HumanSeat`), judged by
the same referee, workers and clocks as any bot. It shows what the protocol delivered to
the seat, numbers the legal actions and reads the choice (a number or the action's text).
"""

from __future__ import annotations

import argparse
import os
import queue
import threading
import time
from collections.abc import Mapping
from typing import Any, TextIO

from arena_sdk.sdk import BotRefused
from referee import keys
from referee.cli.common import Commands, add_redis_options, connect, fail, terminal_safe
from referee.errors import ArenaError
from referee.games.cards import action_symbols, card_symbol
from referee.games.errors import InvalidRulesError
from referee.web import human

SUITS = {"C": ("♣", "clubs"), "D": ("♦", "diamonds"), "H": ("♥", "hearts"), "S": ("♠", "spades")}
CONNECT_WAIT_S = 15.0
card_text = card_symbol  # 7D -> 7♦, as the web pages draw cards
action_text = action_symbols


def register(commands: Commands) -> None:
    parser = commands.add(
        "play", _run, help="play a casual match against bots in this terminal (no season)"
    )
    add_redis_options(parser)
    parser.add_argument(
        "--server",
        default=os.environ.get("ARENA_SERVER", "127.0.0.1:50051"),
        help="the referee's gRPC HOST:PORT (default: $ARENA_SERVER or 127.0.0.1:50051)",
    )
    parser.add_argument("--game", default="sevens", help="sevens or sedma")
    parser.add_argument("--preset", default="fan-tan", help="the rules preset (arena presets)")
    parser.add_argument(
        "--against", required=True, help="the bots at the table, comma-separated, in seat order"
    )
    parser.add_argument(
        "--name",
        default=os.environ.get("USER") or "guest",
        help="your name: you play as the bot identity human-NAME (default: $USER)",
    )
    parser.add_argument("--seat", type=int, default=0, help="your seat (default 0)")
    parser.add_argument("--deals", type=int, help="number of deals (default: the rules')")
    parser.add_argument("--seed", type=int, help="deal seed (default: random)")
    parser.add_argument("--move-s", type=float, default=60.0, help="seconds per decision")
    parser.add_argument("--bank-s", type=float, default=300.0, help="reserve seconds per match")


def render_turn(payload: Mapping[str, Any], players: list[str]) -> str:
    """The seat's view of a turn, as text (only what the TurnRequest carried)."""
    obs = payload["observation"]
    seat = int(payload["seat"])

    def name(s: int) -> str:
        return players[s] if s < len(players) else f"seat {s}"

    lines = [f"--- deal {obs['deal_index'] + 1}, your turn ({name(seat)}, seat {seat}) ---"]
    if "table" in obs:
        for suit, (symbol, word) in SUITS.items():
            cards = obs["table"].get(suit, [])
            row = "--" if not cards else " ".join(card_text(c) for c in cards)
            lines.append(f"  {symbol} {word:<8} {row}")
        lines.append(f"  pot {obs.get('pot', 0)}")
    else:
        trick = " ".join(f"{card_text(t['card'])}({name(t['seat'])})" for t in obs["trick"])
        lines.append(f"  trick: {trick or '--'}   talon {obs['talon_size']}")
        lines.append(f"  card points {obs['card_points']}  match points {obs['match_points']}")
    others = [f"{name(s)} {n} cards" for s, n in enumerate(obs["hand_sizes"]) if s != seat]
    lines.append("  " + ", ".join(others))
    lines.append("  your hand: " + " ".join(card_text(c) for c in obs["hand"]))
    clock = payload["clock"]
    move_s, bank_s = clock["move_ms"] / 1000, clock["bank_ms"] / 1000
    lines.append(f"  clock: {move_s:.0f} s for this move, reserve {bank_s:.0f} s")
    for i, action in enumerate(payload["legal_actions"], start=1):
        lines.append(f"  {i:>2}) {action_text(action)}   [{action}]")
    return "\n".join(lines)


def parse_choice(text: str, legal: list[str]) -> str | None:
    """A number from the list or an action's text (``7D``, ``pass``); None if neither."""
    text = text.strip()
    if text.isdigit() and 1 <= int(text) <= len(legal):
        return legal[int(text) - 1]
    upper = text.upper()
    for action in legal:
        if action.upper() == upper:
            return action
    return None


def play(
    seat: human.HumanSeat,
    events: queue.Queue[tuple[str, dict[str, Any]]],
    stdin: TextIO,
    out: TextIO,
) -> int:
    players: list[str] = []
    while True:
        kind, payload = events.get()
        if kind == "match_start":
            players = list(payload.get("players", []))
            print(f"match {payload['match_id']}: {', '.join(players)}", file=out, flush=True)
        elif kind == "turn":
            print(render_turn(payload, players), file=out, flush=True)
            legal = list(payload["legal_actions"])
            while True:
                print("your choice> ", end="", file=out, flush=True)
                line = stdin.readline()
                if not line:
                    print("\nno more input: leaving the table", file=out, flush=True)
                    seat.stop.set()
                    return 1
                choice = parse_choice(line, legal)
                if choice is not None:
                    seat.answer(int(payload["seq"]), choice)
                    break
                print(f"  choose 1-{len(legal)} or one of: {', '.join(legal)}", file=out)
        elif kind == "result" and payload["status"] != "accepted":
            said = terminal_safe(payload["message"])
            print(f"  your answer was {payload['status']}: {said}", file=out)
        elif kind == "deal_end":
            print(
                f"deal {payload['deal_index'] + 1} over: changes {payload['deltas']}, "
                f"totals {payload['totals']}",
                file=out,
                flush=True,
            )
        elif kind == "match_end":
            winners = ", ".join(
                players[w] if w < len(players) else str(w) for w in payload["winners"]
            )
            print(
                f"match over: totals {payload['totals']} {payload['unit'].replace('_', ' ')}; "
                f"winner {winners}. Replay: arena replay {payload['match_id']}",
                file=out,
                flush=True,
            )
            seat.stop.set()
            return 0
        elif kind in ("notice", "stopped"):
            print(
                f"referee: {terminal_safe(payload.get('message', payload))}", file=out, flush=True
            )
            if kind == "stopped":
                return 1


def _run(args: argparse.Namespace) -> int:
    import sys

    against = [a.strip() for a in str(args.against).split(",") if a.strip()]
    if not against:
        return fail("--against needs at least one bot name (comma-separated)")
    conn = connect(args)
    missing = [b for b in against if not conn.sismember(keys.BOTS, b)]
    if missing:
        return fail(f"no bot named {', '.join(missing)}: `arena bot list` shows them")
    bot, token = human.human_identity(conn, args.name)
    events: queue.Queue[tuple[str, dict[str, Any]]] = queue.Queue()
    seat = human.HumanSeat(bot, lambda kind, payload: events.put((kind, payload)))

    def run() -> None:
        try:
            seat.run(args.server, token, stop=seat.stop)
        except BotRefused as exc:
            events.put(("stopped", {"message": f"the referee refused the seat: {exc}"}))
        except Exception as exc:  # shown to the person; the table is left
            events.put(("stopped", {"message": f"the seat's connection failed: {exc!r}"}))

    thread = threading.Thread(target=run, name="arena-play-seat", daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + CONNECT_WAIT_S
        while not human.streams_open(conn, bot):
            if time.monotonic() > deadline or not thread.is_alive():
                seat.stop.set()
                return fail(f"could not connect {bot} to the referee at {args.server}")
            time.sleep(0.05)
        try:
            spec = human.casual_match(
                conn,
                human=bot,
                game=args.game,
                preset=args.preset,
                against=against,
                move_ms=int(args.move_s * 1000),
                bank_ms=int(args.bank_s * 1000),
                seat=args.seat,
                deals=args.deals,
                seed=args.seed,
            )
        except (ArenaError, InvalidRulesError, ValueError) as exc:
            seat.stop.set()
            return fail(str(exc))
        print(f"you are {bot} in seat {args.seat} of {spec.match_id}; waiting for a worker")
        return play(seat, events, sys.stdin, sys.stdout)
    finally:
        seat.stop.set()
        thread.join(10)
        conn.close()
