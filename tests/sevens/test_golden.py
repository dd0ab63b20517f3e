"""Golden playthroughs: a few recorded matches per preset, diffed line by line.

Each file under ``tests/sevens/golden/`` shows the hands as dealt, then every decision
(seat, legal actions, chosen action) with the events it caused, then the result. A change
of the engine that alters any of it fails here with a readable diff. After a deliberate
change, re-record and review the diff in git:

    ARENA_RECORD_GOLDEN=1 .venv/bin/pytest tests/sevens/test_golden.py
    # or: .venv/bin/python -m tests.sevens.test_golden
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import pytest

from referee.games.base import DealSpec, Event
from referee.games.policies import get_policy
from referee.games.sevens import GAME, PRESETS

GOLDEN = Path(__file__).parent / "golden"

# (preset, players, seed, deals, policy)
CASES = [
    (preset, players, seed, deals, policy)
    for preset in PRESETS
    for players, seed, deals, policy in ((4, 1, 1, "random"), (3, 2, 2, "hold-sevens"))
]


def _event(event: Event) -> str:
    parts = [event.kind]
    if event.seat is not None:
        parts.append(f"seat={event.seat}")
    if event.action is not None:
        parts.append(f"action={event.action}")
    if event.reason is not None:
        parts.append(f"reason={event.reason}")
    if event.source != "bot":
        parts.append(f"source={event.source}")
    if event.detail:
        parts.append(json.dumps(dict(event.detail), sort_keys=True))
    return " ".join(parts)


def playthrough(preset: str, players: int, seed: int, deals: int, policy_name: str) -> str:
    """The text of one recorded match (deterministic)."""
    specs = [DealSpec(seed * 100 + d, rotation=d % players) for d in range(deals)]
    match = GAME.new_match(PRESETS[preset], players, seed, specs)
    policy = get_policy(policy_name)
    rng = random.Random(seed)
    lines = [
        f"# sevens golden playthrough: preset {preset}, {players} players, seed {seed}, "
        f"{deals} deal(s), policy {policy_name}",
        "rules " + json.dumps(PRESETS[preset].to_dict(), sort_keys=True),
    ]
    seen = 0
    dealt = 0
    step = 0
    while True:
        events = match.events()
        for event in events[seen:]:
            lines.append("  " + _event(event))
            if event.kind == "deal_start":
                hands = match.initial_hands()[dealt]
                dealt += 1
                for seat, hand in enumerate(hands):
                    lines.append(f"  hand {seat}: {' '.join(hand)}")
        seen = len(events)
        if match.is_over():
            break
        seat = match.to_act()
        legal = match.legal_actions()
        action = policy(match.observation(seat), legal, rng)
        step += 1
        lines.append(f"{step}. seat {seat} [{' '.join(legal)}] -> {action}")
        match.apply(action)
    result = match.result()
    lines.append(
        f"result totals {list(result.totals)} {result.unit} order "
        f"{[list(g) for g in result.order]} winners {list(result.winners)}"
    )
    return "\n".join(lines) + "\n"


def golden_path(preset: str, players: int, seed: int) -> Path:
    return GOLDEN / f"{preset}-{players}p-seed{seed}.txt"


def record() -> list[Path]:
    GOLDEN.mkdir(exist_ok=True)
    written = []
    for preset, players, seed, deals, policy in CASES:
        path = golden_path(preset, players, seed)
        path.write_text(playthrough(preset, players, seed, deals, policy))
        written.append(path)
    return written


@pytest.mark.parametrize(("preset", "players", "seed", "deals", "policy"), CASES)
def test_golden_playthrough(preset: str, players: int, seed: int, deals: int, policy: str) -> None:
    path = golden_path(preset, players, seed)
    text = playthrough(preset, players, seed, deals, policy)
    if os.environ.get("ARENA_RECORD_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"{path} is missing: record it with ARENA_RECORD_GOLDEN=1"
    assert text.splitlines() == path.read_text().splitlines()


if __name__ == "__main__":
    for written in record():
        print(written, file=sys.stderr)
