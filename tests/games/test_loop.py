"""The one match loop (``referee/games/loop.py``): in-process drivers walk a match with
:func:`play_out`, the match host with :class:`Walk` (docs/ARCHITECTURE.md)."""

from __future__ import annotations

import json

from referee.games.base import DealSpec, Event, Match, Source
from referee.games.loop import Turn, Walk, play_out, policies_chooser, seat_rng
from referee.games.policies import get_policy
from referee.games.registry import get_game


def _match(players: int = 4, deals: int = 2) -> Match:
    game = get_game("sevens")
    specs = [DealSpec(1000 + d) for d in range(deals)]
    return game.new_match(game.preset("fan-tan"), players, 7, specs)


def test_it_plays_to_the_end_and_counts_the_decisions_asked() -> None:
    match = _match()
    turns: list[Turn] = []

    def choose(match: Match, turn: Turn) -> str:
        assert turn.seat == match.to_act() and turn.legal == match.legal_actions()
        turns.append(turn)
        return turn.legal[0]

    asked = play_out(match, choose)
    assert match.is_over() and asked == len(turns) > 0
    assert [t.seq for t in turns] == list(range(1, asked + 1))


def test_forced_moves_are_played_unasked_with_their_source() -> None:
    plain, forced = _match(), _match()
    asked_plain = play_out(plain, lambda m, t: t.legal[0])
    asked_forced = play_out(forced, lambda m, t: t.legal[0], autoplay_forced=True)
    sources = {a.get("source", Source.BOT) for a in json.loads(forced.to_json())["actions"]}
    assert Source.FORCED in sources and asked_forced < asked_plain
    assert plain.result().to_dict() == forced.result().to_dict()  # the same moves


def test_after_sees_each_decisions_events_and_may_stop_the_loop() -> None:
    match = _match()
    seen: list[list[Event]] = []

    def after(turn: Turn, events: list[Event]) -> bool:
        seen.append(events)
        return match.deal_index() > 0

    asked = play_out(match, lambda m, t: t.legal[0], after=after)
    assert not match.is_over() and match.deal_index() == 1 and len(seen) == asked


def test_seat_generators_come_from_the_one_seed_derivation() -> None:
    assert seat_rng(5, "selfplay", 2).random() == seat_rng(5, "selfplay", 2).random()
    assert seat_rng(5, "selfplay", 2).random() != seat_rng(5, "selfplay", 3).random()
    policies = [get_policy("random")] * 4
    runs = []
    for _ in range(2):
        match = _match()
        play_out(match, policies_chooser(policies, [seat_rng(1, s) for s in range(4)]))
        runs.append(match.to_json())
    assert runs[0] == runs[1]


def test_a_walk_plays_the_autopilots_seats_unasked_and_reports_each_step() -> None:
    """``Walk``: a seat the autopilot holds plays ``fallback_action`` with its source,
    reported with the deal it was played in; the flags are read at each step, so a seat
    taken over mid-match is played from then on; the other seats are asked."""
    match = _match(deals=1)
    autopilot = [False, False, False, False]
    unasked: list[tuple[int, int, str, str]] = []

    def report(deal: int, seat: int, source: str, action: str, events: list[Event]) -> None:
        assert events and all(e.source == source for e in events)
        unasked.append((deal, seat, source, action))

    walk = Walk(match, autopilot=autopilot, unasked=report)
    first = walk.next_turn()
    assert first is not None and first.seq == 1 and not unasked
    match.apply(first.legal[0])
    autopilot[2] = True
    asked = [first]
    while (turn := walk.next_turn()) is not None:
        assert turn.seat != 2 and turn.seq == len(asked) + 1
        asked.append(turn)
        match.apply(turn.legal[0])
    assert match.is_over() and walk.seq == len(asked)
    assert unasked and {u[1] for u in unasked} == {2}
    assert {u[2] for u in unasked} == {Source.AUTOPILOT} and {u[0] for u in unasked} == {0}
