"""Golden playthroughs: one recorded session per preset, diffed line by line.

Each file under ``tests/sedma/golden/`` is the full text of a seeded session: every
decision (seat, hand, legal actions, what was sent) and every event that followed. A
change in dealing, trick resolution, scoring, events or the autopilot shows up as a diff.

Re-record after an intended change, then review the diff in git:

    SEDMA_RECORD_GOLDEN=1 .venv/bin/pytest tests/sedma/test_golden.py
"""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import pytest

from referee.games.registry import get_game
from referee.games.sedma.match import SedmaMatch
from referee.games.sedma.rules import preset as sedma_preset

GOLDEN = Path(__file__).parent / "golden"
# Seeds chosen so the files show a bald or naked hand, a void redeal (sedma-3), a marriage.
PRESETS = {"sedma": 0, "sedma-2": 3, "sedma-3": 0, "mariash-sedma": 2}
RECORD = os.environ.get("SEDMA_RECORD_GOLDEN") == "1"


def playthrough(preset: str, seed: int) -> str:
    """The text of a session played by ``random.Random(seed)``, with a few timeouts and
    refused actions so the autopilot paths are recorded too."""
    game = get_game("sedma")
    rules = sedma_preset(preset)
    match = game.new_match(rules, rules.players, seed)
    assert isinstance(match, SedmaMatch)
    rng = random.Random(seed)
    lines = [
        f"# Sedma golden playthrough: preset {preset}, match seed {seed}, random.Random({seed})",
        "# re-record: SEDMA_RECORD_GOLDEN=1 .venv/bin/pytest tests/sedma/test_golden.py",
        f"rules {json.dumps(rules.to_dict(), sort_keys=True)}",
    ]
    for event in match.events():
        lines.append("  " + json.dumps(event.to_dict(), sort_keys=True))
    while not match.is_over():
        seat = match.to_act()
        legal = match.legal_actions()
        hand = " ".join(match.observation(seat)["hand"])
        roll = rng.random()
        if roll < 0.03:
            lines.append(f"seat {seat} [{hand}] legal {' '.join(legal)} -> (timeout)")
            events = match.apply_timeout()
        else:
            action = "9Z" if roll < 0.06 else rng.choice(legal)
            lines.append(f"seat {seat} [{hand}] legal {' '.join(legal)} -> {action}")
            events = match.apply(action)
        for event in events:
            lines.append("  " + json.dumps(event.to_dict(), sort_keys=True))
    result = match.result()
    lines.append(f"result {json.dumps(result.to_dict()['totals'])} order {result.order}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_golden_playthrough(preset: str) -> None:
    path = GOLDEN / f"{preset}.txt"
    text = playthrough(preset, PRESETS[preset])
    if RECORD:
        path.write_text(text)
    assert path.exists(), f"no golden file {path}: record it with SEDMA_RECORD_GOLDEN=1"
    expected = path.read_text()
    assert text == expected, (
        f"{path.name} differs from the engine's playthrough; if the change is intended, "
        "re-record with SEDMA_RECORD_GOLDEN=1 and review the diff"
    )
