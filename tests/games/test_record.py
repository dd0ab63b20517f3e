"""The match record of ``referee/games/record.py`` (docs/engine.md "Match records"): its
canonical JSON, the format-1 conversion, every refusal in words, and the replay's checks
of turns and events, on a small scripted match (found by ``make mutate``, area
``engines-common``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from referee.games import record
from referee.games.base import DealSpec, Event, EventKind, Source
from referee.games.errors import MatchStateError


class _Turns:
    """A scripted match: seats 0, 1, 2 act in turn, each action is one event (with its
    source), a timeout is a ``timeout`` event; over after ``length`` actions."""

    def __init__(self, length: int = 3) -> None:
        self.length = length
        self.log: list[Event] = []

    def is_over(self) -> bool:
        return len(self.log) >= self.length

    def to_act(self) -> int:
        return len(self.log) % 3

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]:
        self.log.append(Event(EventKind.PLAY, self.to_act(), 0, action, source=source))
        return self.log[-1:]

    def apply_timeout(self) -> list[Event]:
        self.log.append(Event(EventKind.TIMEOUT, self.to_act(), 0, None, "timeout"))
        return self.log[-1:]

    def events(self) -> list[Event]:
        return list(self.log)


ACTIONS = [
    record.action_entry(0, "7D"),
    record.action_entry(1, None),
    record.action_entry(2, "8D", Source.AUTOPILOT),
]


def _played() -> _Turns:
    match = _Turns()
    record.replay(match, {"actions": ACTIONS}, "g")
    return match


def test_action_entries_name_a_timeout_and_a_source_other_than_bot() -> None:
    assert ACTIONS == [
        {"seat": 0, "action": "7D"},
        {"seat": 1, "timeout": True},
        {"seat": 2, "action": "8D", "source": "autopilot"},
    ]
    assert record.action_entry(1, "pass", Source.BOT) == {"seat": 1, "action": "pass"}


def test_a_record_is_canonical_json_and_reads_back() -> None:
    """Sorted keys, no spaces; ``extra`` fields added; ``read_record`` takes the text or
    the parsed dict and gives the same format-2 dict."""
    events = _played().events()
    text = record.write_record(
        game="g",
        rules={"name": "x", "b": 1},
        num_players=3,
        seed=5,
        deals=[DealSpec(7, 1, 2)],
        actions=ACTIONS,
        initial_hands=[[["7D"], ["AC"], ["8D"]]],
        events=events,
        extra={"stacked": {"hands": []}},
    )
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, separators=(",", ":"))
    assert data == {
        "game": "g",
        "format": record.FORMAT_VERSION,
        "rules": {"name": "x", "b": 1},
        "num_players": 3,
        "seed": 5,
        "deals": [{"seed": 7, "rotation": 1, "dealer": 2}],
        "actions": ACTIONS,
        "initial_hands": [[["7D"], ["AC"], ["8D"]]],
        "events": [e.to_dict() for e in events],
        "stacked": {"hands": []},
    }
    assert record.read_record(text, "g") == data
    assert record.read_record(data, "g") == data
    assert record.deal_specs(data) == [DealSpec(7, 1, 2)]
    assert record.deal_specs({**data, "deals": None}) is None
    record.replay(_Turns(), data, "g")  # its events are the replay's


def test_a_format_1_record_is_converted_to_format_2() -> None:
    """Format 1 (Sevens): ``deal_specs`` and ``[seat, action, source]`` triples; a
    format-2 entry of three keys is kept as it is."""
    old = {
        "game": "g",
        "format": 1,
        "rules": {},
        "num_players": 3,
        "seed": 1,
        "deal_specs": [{"seed": 4}],
        "actions": [[0, "7D", "bot"], [1, None, "bot"], [2, "8D", "autopilot"]],
    }
    data = record.read_record(old, "g")
    assert data["format"] == 2 and data["deals"] == [{"seed": 4}] and "deal_specs" not in data
    assert data["actions"] == ACTIONS
    three_keys = {**old, "format": 2, "actions": [ACTIONS[2]]}
    assert record.read_record(three_keys, "g")["actions"] == [ACTIONS[2]]


HEADER: dict[str, Any] = {"game": "g", "format": 2, "rules": {}, "num_players": 3, "seed": 1}


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ("{", "not a g match record (invalid JSON: "),
        ("[1]", "not a g match record: expected an object with game=g, got 'list'"),
        ('{"game": "chess"}', "not a g match record: expected an object with game=g, got 'chess'"),
        ('{"game": "g", "format": 3}', "unknown g record format 3: expected 2 (or 1)"),
        ({"game": "g", "format": 2, "seed": 1}, "g match record lacks rules, num_players, actions"),
        (
            {**HEADER, "actions": [], "deals": 5},
            "g match record: deals must be null or a list, got 5",
        ),
        ({**HEADER, "actions": "7D"}, "g match record: actions must be a list"),
        (
            {**HEADER, "actions": [ACTIONS[0], ["seat", "action"]]},
            "g match record action #1 must be {'seat', 'action'} or {'seat', 'timeout': true}, "
            "got ['seat', 'action']",
        ),
        (
            {**HEADER, "actions": [{"action": "7D"}]},
            "g match record action #0 must be {'seat', 'action'} or {'seat', 'timeout': true}, "
            "got {'action': '7D'}",
        ),
    ],
)
def test_a_bad_record_is_refused_saying_what_is_wrong(given: Any, message: str) -> None:
    with pytest.raises(MatchStateError, match="^" + re.escape(message)):
        record.read_record(given, "g")


def test_a_garbled_deal_spec_is_refused_in_words() -> None:
    with pytest.raises(
        MatchStateError, match=r"^match record has a garbled deal spec: KeyError\('seed'\)$"
    ):
        record.deal_specs({"deals": [{"rotation": 1}]})


def test_the_replay_applies_each_action_with_its_source() -> None:
    assert [(e.kind, e.seat, e.action, e.source) for e in _played().events()] == [
        ("play", 0, "7D", "bot"),
        ("timeout", 1, None, "bot"),
        ("play", 2, "8D", "autopilot"),
    ]


def test_the_replay_refuses_a_wrong_turn_and_actions_after_the_end() -> None:
    wrong = [ACTIONS[0], {"seat": 2, "action": "9D"}]
    with pytest.raises(
        MatchStateError,
        match=r"^g match record does not replay: action #1 is by seat 2, but seat 1 is to act$",
    ):
        record.replay(_Turns(), {"actions": wrong}, "g")
    with pytest.raises(MatchStateError, match=r"^g match record has actions after the end \(#3\)$"):
        record.replay(_Turns(), {"actions": [*ACTIONS, ACTIONS[0]]}, "g")


def test_the_replay_names_the_first_event_that_differs() -> None:
    """Recorded events are compared as JSON (lists for tuples); the message names the first
    differing event, or the end of the shorter list when one is a prefix of the other."""
    events: list[Any] = [e.to_dict() for e in _played().events()]
    record.replay(_Turns(), {"actions": ACTIONS, "events": json.loads(json.dumps(events))}, "g")
    changed = [events[0], {**events[1], "seat": 2}, events[2]]
    for recorded, at in ((changed, 1), (events[:2], 2), ([*events, events[0]], 3)):
        with pytest.raises(
            MatchStateError,
            match=f"^g match record does not replay: its events differ from the replay's "
            f"from event #{at} on$",
        ):
            record.replay(_Turns(), {"actions": ACTIONS, "events": recorded}, "g")
