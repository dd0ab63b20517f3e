"""The text replay (``arena match replay``, exports, the League API's ``GetReplay``) reads
as sentences for people: cards as people write them (``10♥``), names
rather than seat numbers, no Python dicts or lists."""

from __future__ import annotations

import random
import re
from typing import Any

from referee.games.base import Source
from referee.games.registry import get_game
from referee.match.replay import render_replay
from tests.web.test_replay_frames import played_record

RAW = re.compile(r"[{}]|'\w+':|\[[-\d., ]*\]|\['")
"""A Python dict, or a list of numbers or strings, printed as it is."""


def _with_an_illegal_pass(seed: int = 5) -> dict[str, Any]:
    """A fan-tan record whose first bot decision that could play a card passes instead
    (an illegal pass: 5 chips to the pot); autopilot moves elsewhere."""
    game = get_game("sevens")
    rules = game.preset("fan-tan")
    match = game.new_match(rules, 4, seed)
    rng = random.Random(seed)
    steps: list[dict[str, Any]] = []
    passed = False
    while not match.is_over():
        seat, deal, legal = match.to_act(), match.deal_index(), match.legal_actions()
        if not passed and "pass" not in legal:
            passed = True
            match.apply("pass")
            steps.append({"deal": deal, "seat": seat, "source": Source.BOT, "answer": "pass",
                          "timeout": False, "think_ms": 3.0})  # fmt: skip
            continue
        action = rng.choice(legal)
        match.apply(action, Source.AUTOPILOT)
        steps.append({"deal": deal, "seat": seat, "source": Source.AUTOPILOT, "action": action})
    seats = ["ann", "bob", "cy", "di"]
    return {
        "spec": {
            "match_id": "m-pass",
            "game": "sevens",
            "rules": rules.to_dict(),
            "seats": seats,
            "seed": seed,
            "deals": None,
            "season": "",
        },
        "rules": rules.to_dict(),
        "initial_hands": match.initial_hands(),
        "steps": steps,
        "result": match.result().to_dict(),
    }


def _body(text: str) -> list[str]:
    """The replay's lines after its header (the header lists seeds and seats by number)."""
    return text.splitlines()[3:]


def test_a_sedma_replay_tells_tricks_in_words_and_symbols() -> None:
    record = played_record("sedma", "sedma", 4, seed=11)
    text = render_replay(record)
    body = _body(text)
    assert not [line for line in body if RAW.search(line)], text
    tricks = [line for line in body if "takes the trick" in line]
    assert tricks, text
    assert re.search(r"seat \d \(bot\d\) takes the trick \((?:(?:10|[2-9JQKA])[♣♦♥♠](?:, )?)+"
                     r" led by bot\d(?:, \d+ points?)?\)", tricks[0]), tricks[0]  # fmt: skip
    assert "cards" not in text and "leader" not in text
    assert re.search(r"trick: (?:10|[2-9JQKA])[♣♦♥♠] by bot\d", text)  # who played each card
    assert re.search(r"result: totals bot0 [+-]\d+, bot1 [+-]\d+, .*\(match points\); winners? ",
                     text)  # fmt: skip


def test_a_sevens_penalty_is_a_sentence_and_cards_are_symbols() -> None:
    record = _with_an_illegal_pass()
    text = render_replay(record)
    body = _body(text)
    assert not [line for line in body if RAW.search(line)], text
    assert "payee" not in text and "'chips'" not in text
    assert re.search(r"seat \d \(\w+\) pays 5 chips to the pot for an illegal pass", text), text
    assert re.search(r"plays (?:10|[2-9JQKA])[♣♦♥♠]", text) and not re.search(
        r"plays [2-9TJQKA][CDHS]\b", text
    )
    assert re.search(r"deal over: ann [+-]\d+, bob [+-]\d+, cy [+-]\d+, di [+-]\d+", text)
    hand = re.search(r"hand 0 \(ann\): (.*)", text)
    assert hand and re.fullmatch(r"(?:(?:10|[2-9JQKA])[♣♦♥♠] ?)+", hand.group(1)), text
