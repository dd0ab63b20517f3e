"""The one replay of a record's steps (``referee.match.replay.apply_steps``), which the
record store, the web's replays, season verification and ``arena match replay`` share:
each step's events are the engine's, a takeover changes nothing, a step after the end or
without its answer is refused, and every reader says so in its own error."""

from __future__ import annotations

from typing import Any

import pytest

from referee.games.base import DealSpec, Source
from referee.games.errors import RulesError
from referee.games.registry import get_game
from referee.match.replay import ReplayMismatch, apply_steps, verify_record
from referee.web.records import RecordError, read_record
from tests.web.test_replay_frames import played_record


def _fresh(record: dict[str, Any]) -> Any:
    spec = record["spec"]
    game = get_game(spec["game"])
    return game.new_match(game.rules_from_dict(record["rules"]), len(spec["seats"]), spec["seed"])


def test_each_step_gives_the_events_the_engine_made_when_it_was_played() -> None:
    record = played_record("sevens", "fan-tan", 4, seed=3)
    takeover = {"deal": 0, "seat": 1, "source": Source.AUTOPILOT, "takeover": True}
    steps = [record["steps"][0], takeover, *record["steps"][1:]]
    match = _fresh(record)
    replayed = list(apply_steps(match, steps))
    assert [s for s, _ in replayed] == steps
    assert replayed[1][1] == []  # the takeover applies nothing
    played = [step["events"] for step in record["steps"]]
    assert [[e.to_dict() for e in ev] for s, ev in replayed if s is not takeover] == played
    assert match.is_over() and match.result().to_dict() == record["result"]


def test_a_bot_step_plays_its_answer_or_its_timeout() -> None:
    record = played_record("sevens", "fan-tan", 4, seed=4)
    first = record["steps"][0]
    as_bot = {**first, "source": Source.BOT, "answer": first["action"], "timeout": False}
    del as_bot["action"]
    played = [e.to_dict() for e in next(apply_steps(_fresh(record), [as_bot]))[1]]
    autopiloted = [{k: v for k, v in e.items() if k != "source"} for e in first["events"]]
    assert played == autopiloted  # the same move, made by the bot (no source written)
    timed_out = {"deal": 0, "seat": first["seat"], "source": Source.BOT, "timeout": True}
    events = next(apply_steps(_fresh(record), [timed_out]))[1]
    assert events and events[0].seat == first["seat"]


def test_a_step_after_the_end_or_without_its_answer_is_refused_by_every_reader() -> None:
    record = played_record("sedma", "sedma", 4, seed=5)
    extra = {**record, "steps": [*record["steps"], record["steps"][-1]]}
    with pytest.raises(ReplayMismatch, match="the match ended before step"):
        verify_record(extra)
    with pytest.raises(RecordError, match="the match ended before step"):
        list(read_record(extra).applied())
    lacking = {**record, "steps": [{"deal": 0, "seat": 0, "source": Source.BOT}]}
    with pytest.raises(RecordError, match="answer"):
        list(read_record(lacking).applied())


def _dealt_record(deals: list[DealSpec]) -> dict[str, Any]:
    """A sevens record of a match dealt by ``deals`` (not the seed's own deals), played by
    first-legal moves, each step a bot's answer without a ``source`` key (the record's
    shape for a bot's step: the source is written only when it is not the bot)."""
    game = get_game("sevens")
    rules = game.preset("sevens")
    match = game.new_match(rules, 4, 11, deals)
    steps = []
    while not match.is_over():
        seat, deal = match.to_act(), match.deal_index()
        answer = match.legal_actions()[0]
        match.apply(answer)
        steps.append({"deal": deal, "seat": seat, "answer": answer, "timeout": False})
    return {
        "spec": {
            "match_id": "m-dealt",
            "game": "sevens",
            "rules": rules.to_dict(),
            "seats": [f"bot{i}" for i in range(4)],
            "seed": 11,
            "deals": [d.to_dict() for d in deals],
            "season": "",
        },
        "rules": rules.to_dict(),
        "steps": steps,
        "result": match.result().to_dict(),
    }


def test_verification_rebuilds_the_recorded_deals_and_returns_the_recorded_result() -> None:
    """The record's own deals are dealt again (a duplicate board's shuffle and dealer, not
    the match seed's), and a step with no ``source`` is the bot's answer."""
    record = _dealt_record([DealSpec(seed=9_001, rotation=1, dealer=2)])
    assert verify_record(record) == record["result"]
    undealt = {**record, "spec": {**record["spec"], "deals": None}}
    with pytest.raises((ReplayMismatch, RulesError)):
        verify_record(undealt)


def test_verification_refuses_a_record_that_stops_early_or_claims_another_result() -> None:
    record = played_record("sevens", "fan-tan", 4, seed=6)
    short = {**record, "steps": record["steps"][:-1]}
    with pytest.raises(ReplayMismatch, match=r"^the recorded steps do not finish the match$"):
        verify_record(short)
    totals = record["result"]["totals"]
    claimed = {**record, "result": {**record["result"], "totals": [t + 1 for t in totals]}}
    with pytest.raises(ReplayMismatch) as refused:
        verify_record(claimed)
    assert str(refused.value) == (
        f"re-simulated totals {totals} differ from the recorded {[t + 1 for t in totals]}"
    )
