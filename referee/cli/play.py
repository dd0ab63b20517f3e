"""``arena play``: a person plays a casual match against bots from the terminal.

The person's seat is a bot identity (``human-<name>``) whose client is this command: an
SDK client over the public bot protocol (:class:`referee.web.human.HumanSeat`), judged by
the same referee, workers and clocks as any bot. It shows what the protocol delivered to
the seat, as the web's play page does: what the others did since the person's last turn
(by name; in Sedma who took each trick), the table (Sedma: the partner, the trick's cards
with who played them, tricks and points per side, the person's side first), the legal
actions numbered; each deal's winner and everyone's change. It reads the choice (a number
or the action's text). Leaving (end of input, Ctrl-C) says what happens to the match.
"""

from __future__ import annotations

import argparse
import os
import queue
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from arena_sdk.sdk import BotRefused
from referee import keys
from referee.cli.common import Commands, add_redis_options, connect, fail, terminal_safe
from referee.errors import ArenaError
from referee.games.cards import SUIT_SYMBOLS, action_symbols, card_symbol
from referee.games.errors import InvalidRulesError
from referee.match.spec import MatchSpec
from referee.web import human

CONNECT_WAIT_S = 15.0
SUITS = {"C": "clubs", "D": "diamonds", "H": "hearts", "S": "spades"}


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
    parser.add_argument(
        "--preset",
        help="the rules preset (arena presets; default: fan-tan for sevens, sedma for sedma)",
    )
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


class Table:
    """Who sits where, as the person is told it: names, their own seat, their partner."""

    def __init__(self, players: list[str], seat: int, sides: list[list[int]] | None = None):
        self.players = players
        self.seat = seat
        self.sides = sides or []

    def name(self, s: int) -> str:
        if s == self.seat:
            return "you"
        name = self.players[s] if 0 <= s < len(self.players) else f"seat {s}"
        return f"{name} (your partner)" if s in self.partners() else name

    def partners(self) -> list[int]:
        for side in self.sides:
            if self.seat in side:
                return [s for s in side if s != self.seat]
        return []

    def side_name(self, side: list[int]) -> str:
        """``you and carol``, ``bob and dan``, ``bob``."""
        if self.seat in side:
            names = ["you"] + [self.players[s] for s in side if s != self.seat]
        else:
            names = [self.players[s] if s < len(self.players) else f"seat {s}" for s in side]
        return " and ".join(names)

    def per_side(self, values: list[int]) -> str:
        """``you and carol 4, bob and dan 2`` (your side first)."""
        order = sorted(range(len(self.sides)), key=lambda i: self.seat not in self.sides[i])
        return ", ".join(f"{self.side_name(self.sides[i])} {values[i]}" for i in order)


def describe(item: Mapping[str, Any], table: Table, game: str) -> str | None:
    """One public event of the deal in words (None for the ones not worth a line)."""
    who = table.name(int(item.get("seat", -1)))
    kind, action, reason = item.get("kind"), str(item.get("action", "")), item.get("reason")
    if kind == "play":
        cards = action.split("+")
        if game == "sedma" and len(cards) == 2:  # a marriage: the queen led, the king shown
            return (
                f"{who} played {card_symbol(cards[0])}, showing {card_symbol(cards[1])} (marriage)"
            )
        return f"{who} played {action_symbols(action)}"
    if kind == "pass":
        return f"{who} passed" + (f" ({reason})" if reason else "")
    if kind == "illegal_pass":
        return f"{who} passed while able to play (illegal pass)"
    if kind == "invalid_action":
        return f"{who} sent an action that was refused ({reason})"
    if kind == "timeout":
        return f"{who} ran out of time"
    if kind == "penalty":
        return f"{who} paid a penalty" + (f" ({reason})" if reason else "")
    if kind == "eliminated":
        return f"{who} {'are' if who == 'you' else 'is'} out of the deal ({reason})"
    if kind == "trick":
        return f"{who} took the trick"
    if kind == "void_deal":
        return "the hand is void: redealt"
    return None


def render_turn(payload: Mapping[str, Any], players: list[str], news: Sequence[str] = ()) -> str:
    """The seat's view of a turn, as text (only what the TurnRequest carried); ``news``:
    what the others did since the person's last turn, one line each."""
    obs = payload["observation"]
    seat = int(payload["seat"])
    table = Table(players, seat, obs.get("sides"))
    you = players[seat] if seat < len(players) else f"seat {seat}"
    lines = [f"--- deal {obs['deal_index'] + 1}, your turn ({you}, seat {seat}) ---"]
    lines += [f"  {line}" for line in news]
    if "table" in obs:
        for suit, word in SUITS.items():
            symbol = SUIT_SYMBOLS[suit]
            cards = obs["table"].get(suit, [])
            row = "--" if not cards else " ".join(card_symbol(c) for c in cards)
            lines.append(f"  {symbol} {word:<8} {row}")
        lines.append(f"  pot {obs.get('pot', 0)}")
    else:
        partners = table.partners()
        if partners:
            mates = " and ".join(f"{players[s]} (seat {s})" for s in partners)
            lines.append(f"  your partner: {mates}")
        trick = ", ".join(f"{table.name(t['seat'])} {card_symbol(t['card'])}" for t in obs["trick"])
        lines.append(f"  trick: {trick or '--'}   talon {obs['talon_size']}")
        lines.append(f"  tricks won: {table.per_side(obs['tricks_won'])}")
        lines.append(f"  card points: {table.per_side(obs['card_points'])}")
        lines.append(f"  match points: {table.per_side(obs['match_points'])}")
    others = [
        f"{table.name(s)} {n} card{'' if n == 1 else 's'}"
        for s, n in enumerate(obs["hand_sizes"])
        if s != seat
    ]
    lines.append("  " + ", ".join(others))
    lines.append("  your hand: " + " ".join(card_symbol(c) for c in obs["hand"]))
    clock = payload["clock"]
    move_s, bank_s = clock["move_ms"] / 1000, clock["bank_ms"] / 1000
    lines.append(f"  clock: {move_s:.0f} s for this move, reserve {bank_s:.0f} s")
    for i, action in enumerate(payload["legal_actions"], start=1):
        lines.append(f"  {i:>2}) {action_symbols(action)}   [{action}]")
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


class Left(Exception):
    """The person left the table (end of input or Ctrl-C)."""


def per_seat(values: Sequence[int], table: Table, *, sign: bool = False) -> str:
    """``you -3, bob +13`` (``sign``) or ``you 5, bob 0``."""
    return ", ".join(
        f"{table.name(s)} {v:+d}" if sign else f"{table.name(s)} {v}" for s, v in enumerate(values)
    )


def play(
    seat: human.HumanSeat,
    events: queue.Queue[tuple[str, dict[str, Any]]],
    stdin: TextIO,
    out: TextIO,
) -> int:
    """Show what the protocol delivers to the seat and answer its turns (see the module
    docstring). Raises :class:`Left` when the input ends."""
    table = Table([], -1)
    game = ""
    seen: tuple[int, int] = (-1, 0)  # (deal, history items already told)

    def say(text: str, end: str = "\n") -> None:
        print(text, end=end, file=out, flush=True)

    while True:
        kind, payload = events.get()
        if kind == "match_start":
            players = list(payload.get("players", []))
            mine = list(payload.get("seats", [])) or [table.seat]
            table = Table(players, int(mine[0]), table.sides)
            game = str(payload.get("game", ""))
            seen = (-1, 0)
            say(f"match {payload['match_id']}: {', '.join(players)}")
        elif kind == "turn":
            obs = payload["observation"]
            table = Table(table.players, int(payload["seat"]), obs.get("sides"))
            history = list(obs.get("history", []))
            deal = int(obs["deal_index"])
            start = seen[1] if seen[0] == deal else 0
            news = [
                line
                for item in history[start:]
                if not (item.get("seat") == table.seat and item.get("kind") in ("play", "pass"))
                and (line := describe(item, table, str(payload.get("game", game)))) is not None
            ]
            seen = (deal, len(history))
            say(render_turn(payload, table.players, news))
            legal = list(payload["legal_actions"])
            while True:
                say("your choice> ", end="")
                line = stdin.readline()
                if not line:
                    say("")
                    raise Left("no more input")
                choice = parse_choice(line, legal)
                if choice is not None:
                    seat.answer(int(payload["seq"]), choice)
                    break
                say(f"  choose 1-{len(legal)} or one of: {', '.join(legal)}")
        elif kind == "result" and payload["status"] != "accepted":
            say(f"  your answer was {payload['status']}: {terminal_safe(payload['message'])}")
        elif kind == "deal_end":
            winner = int(payload.get("winner", -1))
            won = "nobody (void)" if winner < 0 else table.name(winner)
            if winner >= 0 and table.sides:
                side = next((s for s in table.sides if winner in s), [winner])
                won = table.side_name(side)
            say(
                f"deal {payload['deal_index'] + 1} over: won by {won}; "
                f"changes {per_seat(payload['deltas'], table, sign=True)}; "
                f"totals {per_seat(payload['totals'], table)}"
            )
        elif kind == "match_end":
            unit = str(payload["unit"]).replace("_", " ")
            totals = per_seat(payload["totals"], table)
            winners = " and ".join(table.name(w) for w in payload["winners"]) or "nobody"
            say(
                f"match over: {totals} {unit}. Winner: {winners}. "
                f"Replay: arena replay {payload['match_id']}"
            )
            seat.stop.set()
            return 0
        elif kind in ("notice", "stopped"):
            say(f"referee: {terminal_safe(payload.get('message', payload))}")
            if kind == "stopped":
                return 1


def leaving_text(spec: MatchSpec, why: str) -> str:
    """What happens to the match when the person leaves (docs/workers.md, the clock and
    "Penalties, strikes, autopilot"): their seat stays in the match and is judged like any
    bot whose stream is gone."""
    tc = spec.time_control
    rule = (
        "the autopilot plays a card for you"
        if spec.game == "sedma"
        else "it counts as a pass (an illegal pass, with its penalty, if you could play)"
    )
    return (
        f"You left the table ({why}). Match {spec.match_id} goes on without you: at each of "
        f"your turns the referee waits for your seat up to its clock ({tc.move_ms / 1000:g} s "
        f"a move plus what is left of your {tc.bank_ms / 1000:g} s reserve) and "
        f"{tc.absent_ms / 1000:g} s more, then judges a timeout: {rule}. After "
        f"{spec.strikes} in a row the autopilot plays your seat to the end of the match. "
        f"The result is recorded (casual: no season): arena replay {spec.match_id}"
    )


def _run(args: argparse.Namespace) -> int:
    import sys

    against = [a.strip() for a in str(args.against).split(",") if a.strip()]
    if not against:
        return fail("--against needs at least one bot name (comma-separated)")
    try:
        args.preset = args.preset or human.default_preset(args.game)
        problem = human.table_problem(args.game, args.preset, len(against))
    except (InvalidRulesError, ValueError) as exc:
        return fail(str(exc))
    if problem is not None:
        return fail(f"--against: {problem}")
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
        try:
            return play(seat, events, sys.stdin, sys.stdout)
        except Left as exc:
            print(leaving_text(spec, str(exc)), flush=True)
            return 1
        except KeyboardInterrupt:
            print("\n" + leaving_text(spec, "Ctrl-C"), flush=True)
            return 130
    finally:
        seat.stop.set()
        thread.join(10)
        conn.close()
