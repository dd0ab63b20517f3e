"""Message dicts (referee.messages, docs/OBSERVATIONS.md) -> proto messages (arena.v1).

Only the fields the documents name are copied, so nothing a worker might add by mistake
reaches a bot. Every function raises ``ValueError`` (or ``KeyError``/``TypeError``) on a
message that does not have the documented shape; the match host logs and drops such messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from arena.v1 import bot_pb2, game_pb2
from referee.games.action_info import action_info
from referee.messages import (
    ActionResultMessage,
    DealEndMessage,
    MatchEndMessage,
    MatchStartMessage,
    TurnMessage,
)

SUITS = ("C", "D", "H", "S")

_RESULT_STATUS = {
    "accepted": bot_pb2.ActionResult.ACCEPTED,
    "refused": bot_pb2.ActionResult.REFUSED,
    "timed_out": bot_pb2.ActionResult.TIMED_OUT,
}


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _ints(values: Sequence[Any]) -> list[int]:
    return [int(v) for v in values]


def _cards(values: Sequence[Any]) -> list[str]:
    out = []
    for card in values:
        if not isinstance(card, str):
            raise TypeError(f"a card must be text like '7D', got {card!r}")
        out.append(card)
    return out


def observation_to_proto(obs: Mapping[str, Any]) -> Any:
    """A seat's observation dict -> ``arena.v1.Observation``."""
    msg = game_pb2.Observation()
    fill_observation(msg, obs)
    return msg


def fill_observation(msg: Any, obs: Mapping[str, Any], rules_json: str | None = None) -> None:
    """Fill an empty ``arena.v1.Observation`` in place (sub-messages are not copied).
    ``rules_json``: the rules already encoded (a match host encodes them once per match)."""
    msg.game = str(obs["game"])
    msg.preset = str(obs.get("preset", ""))
    msg.rules_json = rules_json if rules_json is not None else _json(obs.get("rules", {}))
    msg.seat = int(obs["seat"])
    msg.num_players = int(obs["num_players"])
    msg.deal_index = int(obs.get("deal_index", 0))
    msg.num_deals = int(obs.get("num_deals", 0))
    msg.dealer = int(obs.get("dealer", 0))
    msg.to_act = int(obs.get("to_act", -1))
    msg.hand.extend(_cards(obs["hand"]))
    msg.hand_sizes.extend(_ints(obs.get("hand_sizes", [])))
    msg.totals.extend(_ints(obs.get("totals", [])))
    msg.unit = str(obs.get("unit", ""))
    for entry in obs.get("history", []):
        msg.history.add(
            seat=int(entry.get("seat", -1) if entry.get("seat") is not None else -1),
            kind=str(entry["kind"]),
            action=str(entry.get("action") or ""),
            reason=str(entry.get("reason") or ""),
        )
    game = msg.game
    if game == "sevens":
        view = msg.sevens
        table = obs.get("table", {})
        for suit in SUITS:
            view.table.add(suit=suit, cards=_cards(table.get(suit, [])))
        view.pot = int(obs.get("pot", 0))
        view.passes.extend(_ints(obs.get("passes", [])))
        view.free_passes_left.extend(_ints(obs.get("free_passes_left", [])))
        view.eliminated.extend(bool(v) for v in obs.get("eliminated", []))
        view.skip_next.extend(bool(v) for v in obs.get("skip_next", []))
    elif game == "sedma":
        sedma = msg.sedma
        for side in obs.get("sides", []):
            sedma.sides.add(seats=_ints(side))
        sedma.leader = int(obs.get("leader", -1))
        for played in obs.get("trick", []):
            sedma.trick.add(seat=int(played["seat"]), card=str(played["card"]))
        sedma.talon_size = int(obs.get("talon_size", 0))
        sedma.tricks_won.extend(_ints(obs.get("tricks_won", [])))
        sedma.card_points.extend(_ints(obs.get("card_points", [])))
        sedma.match_points.extend(_ints(obs.get("match_points", [])))
        sedma.target = int(obs.get("target", 0))
        for marriage in obs.get("marriages", []):
            sedma.marriages.add(cards=_cards(marriage))
    else:
        raise ValueError(f"unknown game {game!r} in observation: expected 'sevens' or 'sedma'")


def rules_json(obs: Mapping[str, Any]) -> str:
    """The ``Observation.rules_json`` of ``obs`` (the same for every decision of a match)."""
    return _json(obs.get("rules", {}))


def turn_to_proto(
    turn: TurnMessage, clock: Mapping[str, int] | None = None, rules: str | None = None
) -> Any:
    """A :class:`TurnMessage` -> ``RefereeMessage(turn=TurnRequest)``.

    ``clock`` overrides the message's clock (a request sent again after a reconnect shows
    the time that is left, not the time it had when first sent)."""
    c = clock if clock is not None else turn["clock"]
    message = bot_pb2.RefereeMessage()
    request = message.turn  # filled in place: no copies of the observation
    request.match_id = turn["match_id"]
    request.attempt = int(turn["attempt"])
    request.seq = int(turn["seq"])
    request.seat = int(turn["seat"])
    fill_observation(request.observation, turn["observation"], rules)
    request.legal_actions.extend(str(a) for a in turn["legal_actions"])
    for info in action_info(turn["observation"], request.legal_actions):
        request.action_info.add(**info)
    request.clock.move_ms = max(0, int(c["move_ms"]))
    request.clock.bank_ms = max(0, int(c["bank_ms"]))
    request.clock.grace_ms = max(0, int(c["grace_ms"]))
    request.season = str(turn.get("season", ""))
    return message


# Wire tags (field number << 3 | 2, length-delimited) of the fields spliced by
# turn_to_bytes: RefereeMessage.turn = 2, TurnRequest.observation = 5,
# Observation.history = 14 (proto/arena/v1/bot.proto, game.proto).
_TURN_TAG = b"\x12"
_OBSERVATION_TAG = b"\x2a"
_HISTORY_TAG = b"\x72"


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


class HistoryCache:
    """The encoded ``Observation.history`` entries of one match, each encoded once.

    A deal's history grows by a few events per decision and every request of the deal
    carries all of it, so encoding it entry by entry into a new message for every request
    cost the match host a tenth of its CPU per decision (docs/workers.md "Benchmark"). Here
    each distinct entry is encoded once (tag and length included) and a request's history
    is the concatenation, which is exactly how protobuf encodes a repeated field."""

    __slots__ = ("_memo",)

    def __init__(self) -> None:
        self._memo: dict[tuple[int, str, str, str], bytes] = {}

    def encode(self, history: Sequence[Mapping[str, Any]]) -> bytes:
        memo = self._memo
        parts = []
        for entry in history:
            seat = entry.get("seat")
            key = (
                -1 if seat is None else int(seat),
                str(entry["kind"]),
                str(entry.get("action") or ""),
                str(entry.get("reason") or ""),
            )
            data = memo.get(key)
            if data is None:
                body = game_pb2.HistoryEntry(
                    seat=key[0], kind=key[1], action=key[2], reason=key[3]
                ).SerializeToString()
                data = memo[key] = _HISTORY_TAG + _varint(len(body)) + body
            parts.append(data)
        return b"".join(parts)


def turn_to_bytes(
    turn: TurnMessage,
    history: HistoryCache,
    clock: Mapping[str, int] | None = None,
    rules: str | None = None,
) -> bytes:
    """The serialized ``RefereeMessage(turn=...)`` of :func:`turn_to_proto`, with the
    observation's history spliced in from ``history`` (parses to an equal message)."""
    obs = turn["observation"]
    entries = obs.get("history", [])
    message = turn_to_proto(
        {**turn, "observation": {**obs, "history": []}},
        clock,
        rules,
    )
    request = message.turn
    rest: bytes = request.observation.SerializeToString()
    observation = rest + history.encode(entries)
    request.ClearField("observation")
    head: bytes = request.SerializeToString()
    body = head + _OBSERVATION_TAG + _varint(len(observation)) + observation
    return _TURN_TAG + _varint(len(body)) + body


def action_result_to_proto(msg: ActionResultMessage) -> Any:
    status = _RESULT_STATUS.get(msg["status"])
    if status is None:
        raise ValueError(f"unknown action_result status {msg['status']!r}")
    result = bot_pb2.ActionResult(
        match_id=msg["match_id"],
        attempt=int(msg["attempt"]),
        seq=int(msg["seq"]),
        status=status,
        reason=str(msg.get("reason", "")),
        message=str(msg.get("message", "")),
        penalty=int(msg.get("penalty", 0)),
        applied_action=str(msg.get("applied_action", "")),
        think_ms=max(0, round(float(msg.get("think_ms", 0.0)))),
        autopilot=bool(msg.get("autopilot", False)),
    )
    return bot_pb2.RefereeMessage(result=result)


def match_start_to_proto(msg: MatchStartMessage) -> Any:
    start = bot_pb2.MatchStart(
        match_id=msg["match_id"],
        attempt=int(msg["attempt"]),
        game=str(msg["game"]),
        preset=str(msg.get("preset", "")),
        rules_json=_json(msg.get("rules", {})),
        seats=_ints(msg.get("seats", [])),
        players=[str(p) for p in msg.get("players", [])],
        num_deals=int(msg.get("num_deals", 0)),
        season=str(msg.get("season", "")),
    )
    return bot_pb2.RefereeMessage(match_start=start)


def deal_end_to_proto(msg: DealEndMessage) -> Any:
    end = bot_pb2.DealEnd(
        match_id=msg["match_id"],
        attempt=int(msg["attempt"]),
        deal_index=int(msg["deal_index"]),
        winner=int(msg.get("winner", -1)),
        deltas=_ints(msg.get("deltas", [])),
        totals=_ints(msg.get("totals", [])),
        result_json=_json(msg.get("result", {})),
    )
    return bot_pb2.RefereeMessage(deal_end=end)


def match_end_to_proto(msg: MatchEndMessage) -> Any:
    end = bot_pb2.MatchEnd(
        match_id=msg["match_id"],
        attempt=int(msg["attempt"]),
        totals=_ints(msg.get("totals", [])),
        unit=str(msg.get("unit", "")),
        winners=_ints(msg.get("winners", [])),
        result_json=_json(msg.get("result", {})),
    )
    return bot_pb2.RefereeMessage(match_end=end)


def notification_to_proto(
    msg: ActionResultMessage | MatchStartMessage | DealEndMessage | MatchEndMessage,
) -> Any:
    """Any inbox notification -> its ``RefereeMessage``."""
    kind = msg["type"]
    if kind == "action_result":
        return action_result_to_proto(msg)  # type: ignore[arg-type]
    if kind == "match_start":
        return match_start_to_proto(msg)  # type: ignore[arg-type]
    if kind == "deal_end":
        return deal_end_to_proto(msg)  # type: ignore[arg-type]
    if kind == "match_end":
        return match_end_to_proto(msg)  # type: ignore[arg-type]
    raise ValueError(f"not a notification: {kind!r}")
