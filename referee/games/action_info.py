"""What each legal action of a decision is and what it costs (``TurnRequest.action_info``).

A listed action is never refused, but some listed actions still cost the seat: a forced
pass pays ``pass_chips`` (SV-17), a voluntary pass ``voluntary_pass_chips`` (SV-20), a free
pass spends one of the seat's free passes (SV-22), and any pass past ``pass_elimination``
puts the seat out of the deal (SV-23). An illegal pass (SV-18, SV-19) is never listed.

:func:`action_info` derives this from the seat's observation and legal actions alone (a
pure function, so the gateway can add it to any request without asking the engine);
``tests/sevens/test_action_info.py`` checks it against what the engine really does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from arena_sdk.observation import Observation
from referee.games.base import PASS, RUN_SEPARATOR


class ActionInfo(TypedDict):
    action: str
    kind: str  # card | run | marriage | forced_pass | free_pass | voluntary_pass
    cost: int
    eliminates: bool


KINDS = ("card", "run", "marriage", "forced_pass", "free_pass", "voluntary_pass")
"""Every ``ActionInfo.kind``."""


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _at(values: object, seat: int) -> int:
    if isinstance(values, Sequence) and 0 <= seat < len(values):
        return _int(values[seat])
    return 0


def _sevens_pass(obs: Observation, legal: Sequence[str]) -> ActionInfo:
    rules = obs.get("rules")
    rules = rules if isinstance(rules, Mapping) else {}
    seat = _int(obs.get("seat"), -1)
    if all(action == PASS for action in legal):
        kind, cost = "forced_pass", _int(rules.get("pass_chips"))
    elif _at(obs.get("free_passes_left"), seat) > 0:
        kind, cost = "free_pass", 0
    else:
        kind, cost = "voluntary_pass", _int(rules.get("voluntary_pass_chips"))
    limit = _int(rules.get("pass_elimination"))
    eliminates = limit > 0 and _at(obs.get("passes"), seat) + 1 > limit
    return {"action": PASS, "kind": kind, "cost": cost, "eliminates": eliminates}


def action_info(obs: Observation, legal_actions: Sequence[str]) -> list[ActionInfo]:
    """One :class:`ActionInfo` per legal action, in the same order."""
    game = obs.get("game")
    out: list[ActionInfo] = []
    for action in legal_actions:
        if action == PASS and game == "sevens":
            out.append(_sevens_pass(obs, legal_actions))
            continue
        kind = "card"
        if RUN_SEPARATOR in action:
            kind = "marriage" if game == "sedma" else "run"
        out.append({"action": action, "kind": kind, "cost": 0, "eliminates": False})
    return out
