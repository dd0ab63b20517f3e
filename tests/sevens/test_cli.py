"""``arena presets`` and ``arena selfplay`` (in-process and as a real subprocess)."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

import pytest

from referee.cli.main import main
from referee.games.base import PASS
from referee.games.errors import RulesError
from referee.games.policies import POLICIES, get_policy
from referee.games.sevens import GAME, PRESETS


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_presets_text_lists_every_preset(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["presets", "--game", "sevens"], capsys)
    assert code == 0
    for name in PRESETS:
        assert f"  {name} " in out
    assert "fan-tan-pt" in out and "short_hand_ante=minus_one" in out
    assert "players 3-8" in out


def test_presets_json_has_every_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["presets", "--json"], capsys)
    assert code == 0
    data = json.loads(out)
    assert set(data["sevens"]) == set(PRESETS)
    for name, options in data["sevens"].items():
        assert options == PRESETS[name].to_dict()


def test_selfplay_text(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["selfplay", "--game", "sevens", "--preset", "fan-tan", "--players", "4"]
    code, out, _ = run(
        [*argv, "--deals", "3", "--seed", "5", "--bots", "random,hold-sevens"], capsys
    )
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("sevens fan-tan: 4 players, seed 5")
    assert [line.split(":")[0] for line in lines[1:4]] == ["deal 1", "deal 2", "deal 3"]
    assert "cards left" in lines[1] and "chips " in lines[1]
    # words, not Python lists; seats with their bots
    assert re.fullmatch(
        r"deal 1: (won by seat \d \((random|hold-sevens)\)|void); cards left \d+(, \d+){3}; "
        r"chips [+-]\d+(, [+-]\d+){3}.*",
        lines[1],
    ), lines[1]
    assert lines[4].startswith("final (chips, higher is better)")
    assert re.fullmatch(r"winners?: seat \d \(\S+\)(, seat \d \(\S+\))*", lines[-1]), lines[-1]


def test_selfplay_json_is_byte_identical_for_one_seed() -> None:
    argv = [
        sys.executable, "-m", "referee.cli.main", "selfplay", "--game", "sevens",
        "--preset", "shichi-narabe", "--players", "5", "--deals", "2", "--seed", "11",
        "--bots", "random,first-legal,hold-sevens", "--json",
    ]  # fmt: skip
    first = subprocess.run(argv, capture_output=True, check=True, timeout=60).stdout
    second = subprocess.run(argv, capture_output=True, check=True, timeout=60).stdout
    assert first == second
    match = GAME.match_from_json(first.decode())
    assert match.is_over() and len(match.deal_results()) == 2
    argv[argv.index("11")] = "12"
    other = subprocess.run(argv, capture_output=True, check=True, timeout=60).stdout
    assert other != first


def test_selfplay_refuses_bad_input_with_a_reason(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["selfplay", "--preset", "nope"], capsys)
    assert code == 1 and "unknown sevens preset 'nope'" in err
    code, _, err = run(["selfplay", "--players", "2"], capsys)
    assert code == 1 and "not 2" in err
    code, _, err = run(["selfplay", "--bots", "genius"], capsys)
    assert code == 1 and "unknown policy 'genius'" in err
    code, _, err = run(["selfplay", "--game", "chess"], capsys)
    assert code == 1 and "unknown game 'chess'" in err


def test_policies_pick_legal_actions() -> None:
    match = GAME.new_match(PRESETS["shichi-narabe"], 4, 3)
    rngs = {name: random.Random(name) for name in POLICIES}
    names = list(POLICIES)
    while not match.is_over():
        seat = match.to_act()
        legal = match.legal_actions()
        name = names[seat % len(names)]
        action = get_policy(name)(match.observation(seat), legal, rngs[name])
        assert action in legal
        if name == "hold-sevens" and len(legal) > 1:
            assert action != PASS
        match.apply(action)
    with pytest.raises(RulesError, match="unknown policy"):
        get_policy("nope")
