"""Replay frames (``referee.web.replay``) re-simulated from a record by the engine: one
frame per step, each seat's view exactly its observation, for Sevens and Sedma."""

from __future__ import annotations

import random
from typing import Any

import pytest

from referee.games.base import Source
from referee.games.registry import get_game
from referee.web.records import RecordError, read_record
from referee.web.replay import replay_data


def played_record(game_name: str, preset: str, players: int, seed: int) -> dict[str, Any]:
    """A record in the workers' shape, of a match played to its end by random legal moves
    (steps as the autopilot's, so every step carries its action)."""
    game = get_game(game_name)
    rules = game.preset(preset)
    match = game.new_match(rules, players, seed)
    rng = random.Random(seed)
    steps = []
    while not match.is_over():
        seat, deal = match.to_act(), match.deal_index()
        action = rng.choice(match.legal_actions())
        events = match.apply(action, Source.AUTOPILOT)
        steps.append(
            {
                "deal": deal,
                "seat": seat,
                "source": Source.AUTOPILOT,
                "action": action,
                "events": [e.to_dict() for e in events],
            }
        )
    seats = [f"bot{i}" for i in range(players)]
    return {
        "spec": {
            "match_id": f"m-{game_name}",
            "game": game_name,
            "rules": rules.to_dict(),
            "seats": seats,
            "seed": seed,
            "deals": None,
            "season": "",
        },
        "rules": rules.to_dict(),
        "steps": steps,
        "result": match.result().to_dict(),
    }


@pytest.mark.parametrize(
    ("game", "preset", "players"), [("sevens", "fan-tan", 4), ("sedma", "sedma", 4)]
)
def test_frames_follow_the_engine_and_keep_each_seat_to_its_own_view(
    game: str, preset: str, players: int
) -> None:
    record = played_record(game, preset, players, seed=11)
    data = replay_data(record)
    frames = data["frames"]
    assert len(frames) == len(record["steps"]) + 1
    assert data["deal_starts"][0] == 0 and data["seats"] == record["spec"]["seats"]
    # Re-play independently and compare every frame's views with the engine's observations.
    view = read_record(record)
    for k, (match, _step, _events) in enumerate(view.applied(), start=1):
        for seat in range(players):
            want = match.observation(seat)
            got = frames[k]["views"][seat]
            assert got["hand"] == want["hand"]
            assert got["hand_sizes"] == want["hand_sizes"]
            assert "history" not in got and "rules" not in got
            if game == "sevens":
                assert got["table"] == want["table"]
            else:
                assert got["trick"] == want["trick"] and got["talon_size"] == want["talon_size"]
                assert got["card_points"] == want["card_points"]
    assert all(f["text"] for f in frames[1:])


def test_a_record_of_another_shape_says_what_is_missing() -> None:
    with pytest.raises(RecordError, match="spec"):
        read_record({"match_id": "x", "events": []})
