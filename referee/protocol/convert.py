"""Message dicts (referee.match.messages, docs/OBSERVATIONS.md) -> proto messages (arena.v1).

Only the fields the documents name are copied, so nothing a worker might add by mistake
reaches a bot. Every function raises ``ValueError`` (or ``KeyError``/``TypeError``) on a
message that does not have the documented shape; the match host logs and drops such messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from google.protobuf import descriptor
from google.protobuf.message import Message

from arena.v1 import bot_pb2, game_pb2
from arena_sdk.observation import HistoryItem, Observation
from referee.games.action_info import action_info
from referee.match.messages import (
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


def _json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _ints(values: Sequence[int]) -> list[int]:
    return [int(v) for v in values]


def _cards(values: Sequence[str]) -> list[str]:
    out = []
    for card in values:
        if not isinstance(card, str):
            raise TypeError(f"a card must be text like '7D', got {card!r}")
        out.append(card)
    return out


def observation_to_proto(obs: Observation) -> game_pb2.Observation:
    """A seat's observation dict -> ``arena.v1.Observation``."""
    msg = game_pb2.Observation()
    fill_observation(msg, obs)
    return msg


def fill_observation(
    msg: game_pb2.Observation, obs: Observation, rules_json: str | None = None
) -> None:
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


def rules_json(obs: Observation) -> str:
    """The ``Observation.rules_json`` of ``obs`` (the same for every decision of a match)."""
    return _json(obs.get("rules", {}))


def turn_to_proto(
    turn: TurnMessage, clock: Mapping[str, int] | None = None, rules: str | None = None
) -> bot_pb2.RefereeMessage:
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


# --- The match host's encoding of TurnRequests ------------------------------------------
#
# Protobuf's wire format, written directly (https://protobuf.dev/programming-guides/encoding/):
# a field is its key (field number << 3 | wire type) and its value; a varint is 7 bits a
# byte, low first; a length-delimited value (strings, sub-messages, packed repeated
# scalars) is its length as a varint, then its bytes; a negative int32 is the varint of
# its 64-bit two's complement (10 bytes); a repeated field is the concatenation of its
# entries; proto3 leaves a scalar at its default (0, "", false) out. Field numbers and wire
# types are read from the generated descriptors (proto/arena/v1/bot.proto and game.proto)
# once, at import: a renumbered field changes the bytes written here with it.

_VARINTS = tuple(bytes([n]) for n in range(128))
_INT32_MIN, _INT32_MAX, _UINT32_MAX = -(2**31), 2**31 - 1, 2**32 - 1


def _varint(n: int) -> bytes:
    """The varint of ``n`` >= 0."""
    if n < 128:
        return _VARINTS[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _int32(n: int) -> bytes:
    """The varint of an ``int32`` value (``ValueError`` outside its range, as protobuf)."""
    if 0 <= n < 128:
        return _VARINTS[n]
    if not _INT32_MIN <= n <= _INT32_MAX:
        raise ValueError(f"{n} does not fit an int32 field")
    return _varint(n if n >= 0 else n + 2**64)


def _uint32(n: int) -> bytes:
    if 0 <= n < 128:
        return _VARINTS[n]
    if not 0 <= n <= _UINT32_MAX:
        raise ValueError(f"{n} does not fit a uint32 field")
    return _varint(n)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _ld(field: int, data: bytes) -> bytes:
    """A length-delimited field (a string's UTF-8, a sub-message, a packed array)."""
    return _key(field, 2) + _varint(len(data)) + data


def _opt_int32(key: bytes, n: int) -> bytes:
    return key + _int32(n) if n else b""


def _packed_int32(key: bytes, values: Sequence[int]) -> bytes:
    if not values:
        return b""
    body = b"".join([_int32(int(v)) for v in values])
    return key + _varint(len(body)) + body


def _packed_bool(key: bytes, values: Sequence[bool]) -> bytes:
    if not values:
        return b""
    body = b"".join([_VARINTS[1] if v else _VARINTS[0] for v in values])
    return key + _varint(len(body)) + body


class _Strings:
    """One string field's encodings (key, length, UTF-8), each made once."""

    __slots__ = ("_field", "_memo")

    def __init__(self, field: int) -> None:
        self._field = field
        self._memo: dict[str, bytes] = {}

    def one(self, text: str) -> bytes:
        """The field holding ``text`` (a string: ``TypeError`` otherwise)."""
        data = self._memo.get(text) if type(text) is str else None
        if data is None:
            if not isinstance(text, str):
                raise TypeError(f"a text field must hold text like '7D', got {text!r}")
            data = self._memo[text] = _ld(self._field, text.encode())
        return data

    def opt(self, text: str) -> bytes:
        """A singular string field: left out when empty (proto3)."""
        return self.one(text) if text else b""

    def many(self, texts: Sequence[str]) -> bytes:
        """A repeated string field."""
        try:
            return b"".join(map(self._memo.__getitem__, texts))
        except (KeyError, TypeError):
            return b"".join([self.one(t) for t in texts])


_LENGTH_DELIMITED = frozenset(
    {
        descriptor.FieldDescriptor.TYPE_STRING,
        descriptor.FieldDescriptor.TYPE_BYTES,
        descriptor.FieldDescriptor.TYPE_MESSAGE,
    }
)


def _field(message: type[Message], name: str) -> tuple[int, int]:
    """(number, wire type) of ``message``'s field ``name``, from the generated descriptor:
    length-delimited (2) for strings, sub-messages and proto3's packed repeated scalars,
    varint (0) for the int32, uint32, bool and enum scalars this encoder writes."""
    field = message.DESCRIPTOR.fields_by_name[name]
    wire = 2 if field.type in _LENGTH_DELIMITED or field.is_repeated else 0
    return field.number, wire


def _fkey(message: type[Message], name: str) -> bytes:
    """The key of ``message``'s field ``name`` (its number and wire type)."""
    return _key(*_field(message, name))


def _fnum(message: type[Message], name: str) -> int:
    """The number of ``message``'s length-delimited field ``name``."""
    number, wire = _field(message, name)
    if wire != 2:
        raise TypeError(f"{message.DESCRIPTOR.full_name}.{name} is not length-delimited")
    return number


_REF, _REQ, _OBS = bot_pb2.RefereeMessage, bot_pb2.TurnRequest, game_pb2.Observation
_SEVENS, _SEDMA, _INFO = game_pb2.SevensView, game_pb2.SedmaView, bot_pb2.ActionInfo
_HIST, _RESULT = game_pb2.HistoryEntry, bot_pb2.ActionResult

# Keys of the fields written below.
_K_TURN = _fkey(_REF, "turn")
_K_REQ_ATTEMPT, _K_REQ_SEQ, _K_REQ_SEAT = (_fkey(_REQ, n) for n in ("attempt", "seq", "seat"))
_K_REQ_OBSERVATION, _K_REQ_CLOCK = _fkey(_REQ, "observation"), _fkey(_REQ, "clock")
_F_REQ_MATCH, _F_REQ_SEASON = _fnum(_REQ, "match_id"), _fnum(_REQ, "season")
_F_REQ_LEGAL, _F_REQ_INFO = _fnum(_REQ, "legal_actions"), _fnum(_REQ, "action_info")
_K_OBS_SEAT, _K_OBS_PLAYERS, _K_OBS_DEAL = (
    _fkey(_OBS, n) for n in ("seat", "num_players", "deal_index")
)
_K_OBS_DEALS, _K_OBS_DEALER, _K_OBS_TO_ACT = (
    _fkey(_OBS, n) for n in ("num_deals", "dealer", "to_act")
)
_K_OBS_HAND_SIZES, _K_OBS_TOTALS = _fkey(_OBS, "hand_sizes"), _fkey(_OBS, "totals")
_K_OBS_SEVENS, _K_OBS_SEDMA = _fkey(_OBS, "sevens"), _fkey(_OBS, "sedma")
_F_OBS_GAME, _F_OBS_PRESET, _F_OBS_RULES = (
    _fnum(_OBS, n) for n in ("game", "preset", "rules_json")
)
_F_OBS_UNIT, _F_OBS_HAND = _fnum(_OBS, "unit"), _fnum(_OBS, "hand")
_K_SEVENS_POT = _fkey(_SEVENS, "pot")
_K_SEVENS_PASSES, _K_SEVENS_FREE = _fkey(_SEVENS, "passes"), _fkey(_SEVENS, "free_passes_left")
_K_SEVENS_ELIMINATED, _K_SEVENS_SKIP = _fkey(_SEVENS, "eliminated"), _fkey(_SEVENS, "skip_next")
_K_SEDMA_LEADER, _K_SEDMA_TALON, _K_SEDMA_TARGET = (
    _fkey(_SEDMA, n) for n in ("leader", "talon_size", "target")
)
_K_SEDMA_TRICKS, _K_SEDMA_POINTS, _K_SEDMA_MATCH = (
    _fkey(_SEDMA, n) for n in ("tricks_won", "card_points", "match_points")
)
_K_SIDE_SEATS, _K_SIDE = _fkey(game_pb2.Side, "seats"), _fkey(_SEDMA, "sides")
_K_TRICK_SEAT, _F_TRICK_CARD = _fkey(game_pb2.TrickCard, "seat"), _fnum(game_pb2.TrickCard, "card")
_K_CLOCK_MOVE, _K_CLOCK_BANK, _K_CLOCK_GRACE = (
    _fkey(bot_pb2.Clock, n) for n in ("move_ms", "bank_ms", "grace_ms")
)
_F_INFO_ACTION, _F_INFO_KIND = _fnum(_INFO, "action"), _fnum(_INFO, "kind")
_K_INFO_COST, _K_INFO_ELIMINATES = _fkey(_INFO, "cost"), _fkey(_INFO, "eliminates")
_K_ROW, _K_TRICK_CARD, _K_MARRIAGE = (
    _fkey(_SEVENS, "table"),
    _fkey(_SEDMA, "trick"),
    _fkey(_SEDMA, "marriages"),
)
_F_ROW_SUIT, _F_ROW_CARDS = _fnum(game_pb2.Row, "suit"), _fnum(game_pb2.Row, "cards")
_F_MARRIAGE_CARDS = _fnum(game_pb2.Marriage, "cards")
_HISTORY_FIELD = _fnum(_OBS, "history")
_K_HIST_SEAT = _fkey(_HIST, "seat")
_F_HIST_KIND, _F_HIST_ACTION, _F_HIST_REASON = (
    _fnum(_HIST, n) for n in ("kind", "action", "reason")
)
_K_RESULT, _K_RESULT_THINK = _fkey(_REF, "result"), _fkey(_RESULT, "think_ms")
_F_RESULT_MATCH, _K_RESULT_ATTEMPT = _fnum(_RESULT, "match_id"), _fkey(_RESULT, "attempt")
_K_RESULT_SEQ, _K_RESULT_STATUS = _fkey(_RESULT, "seq"), _fkey(_RESULT, "status")
_F_RESULT_REASON, _F_RESULT_MESSAGE = _fnum(_RESULT, "reason"), _fnum(_RESULT, "message")
_K_RESULT_PENALTY, _F_RESULT_APPLIED = _fkey(_RESULT, "penalty"), _fnum(_RESULT, "applied_action")
_K_RESULT_AUTOPILOT = _fkey(_RESULT, "autopilot")


class TurnEncoder:
    """The serialized ``RefereeMessage(turn=...)`` of one match's requests.

    The bytes parse to the same message as :func:`turn_to_proto` of the same
    :class:`TurnMessage` (``tests/gateway/test_sdk_and_convert.py`` checks it over whole
    random matches of every preset), so a seat's request holds exactly its observation,
    the one the engine built for it, and nothing else. They are written field by field
    instead of through protobuf message objects, and what repeats is encoded once per
    match: the match's own fields, each seat's fixed observation fields per deal, every
    card and action text, every action-info entry, and the deal's history (a request
    carries the whole deal's history, which grows by a few entries per decision: only the
    new entries are encoded, the rest is reused while the deal is the same). A match host
    spent about a tenth of its CPU per decision building these messages through protobuf
    objects (docs/workers.md "Benchmark").
    """

    def __init__(self, match_id: str, attempt: int, season: str, rules_json: str) -> None:
        self._match_id = _ld(_F_REQ_MATCH, match_id.encode())
        self._attempt = _K_REQ_ATTEMPT + _uint32(attempt) if attempt else b""
        self._season = _ld(_F_REQ_SEASON, season.encode()) if season else b""
        self._rules_json = _ld(_F_OBS_RULES, rules_json.encode()) if rules_json else b""
        self._game = _Strings(_F_OBS_GAME)
        self._preset = _Strings(_F_OBS_PRESET)
        self._unit = _Strings(_F_OBS_UNIT)
        self._hand = _Strings(_F_OBS_HAND)
        self._legal = _Strings(_F_REQ_LEGAL)
        self._row_suit = _Strings(_F_ROW_SUIT)
        self._row_cards = _Strings(_F_ROW_CARDS)
        self._trick_card = _Strings(_F_TRICK_CARD)
        self._marriage_cards = _Strings(_F_MARRIAGE_CARDS)
        self._fixed: dict[tuple[str, str, int, int, int, int, int, str], bytes] = {}
        self._rows: dict[tuple[str, tuple[str, ...]], bytes] = {}
        self._clocks: dict[tuple[int, int, int], bytes] = {}
        self._arrays: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self._infos: dict[tuple[str, str, int, bool], bytes] = {}
        self._history_entries: dict[tuple[int, str, str, str], bytes] = {}
        self._history_deal = -1  # the deal of the last request's history,
        self._history_bytes: list[bytes] = []  # its entries encoded,
        self._history_last: HistoryItem | None = None  # and its last entry

    def encode(self, turn: TurnMessage, clock: Mapping[str, int] | None = None) -> bytes:
        """``turn_to_proto(turn, clock, rules_json).SerializeToString()``, parse-equal.
        ``clock`` overrides the message's clock (a request sent again shows the time left)."""
        obs = turn["observation"]
        legal = turn["legal_actions"]
        c = clock if clock is not None else turn["clock"]
        observation = self._observation(obs)
        infos = self._action_info(obs, legal)
        times = (max(0, int(c["move_ms"])), max(0, int(c["bank_ms"])), max(0, int(c["grace_ms"])))
        clock_field = self._clocks.get(times)
        if clock_field is None:
            body = b"".join(
                [
                    _opt_uint32(_K_CLOCK_MOVE, times[0]),
                    _opt_uint32(_K_CLOCK_BANK, times[1]),
                    _opt_uint32(_K_CLOCK_GRACE, times[2]),
                ]
            )
            clock_field = self._clocks[times] = _K_REQ_CLOCK + _varint(len(body)) + body
        seq = int(turn["seq"])
        seat = int(turn["seat"])
        body = b"".join(
            [
                self._match_id,
                self._attempt,
                _K_REQ_SEQ + _uint32(seq) if seq else b"",
                _K_REQ_SEAT + _int32(seat) if seat else b"",
                _K_REQ_OBSERVATION,
                _varint(len(observation)),
                observation,
                self._legal.many(legal),
                clock_field,
                self._season,
                infos,
            ]
        )
        return _K_TURN + _varint(len(body)) + body

    def _observation(self, obs: Observation) -> bytes:
        game = str(obs["game"])
        fixed_key = (
            game,
            str(obs.get("preset", "")),
            int(obs["seat"]),
            int(obs["num_players"]),
            int(obs.get("deal_index", 0)),
            int(obs.get("num_deals", 0)),
            int(obs.get("dealer", 0)),
            str(obs.get("unit", "")),
        )
        fixed = self._fixed.get(fixed_key)
        if fixed is None:
            g, preset, seat, players, deal, deals, dealer, _unit = fixed_key
            fixed = self._fixed[fixed_key] = b"".join(
                [
                    self._game.opt(g),
                    self._preset.opt(preset),
                    self._rules_json,
                    _opt_int32(_K_OBS_SEAT, seat),
                    _opt_int32(_K_OBS_PLAYERS, players),
                    _opt_int32(_K_OBS_DEAL, deal),
                    _opt_int32(_K_OBS_DEALS, deals),
                    _opt_int32(_K_OBS_DEALER, dealer),
                ]
            )
        if game == "sevens":
            view = _K_OBS_SEVENS, self._sevens(obs)
        elif game == "sedma":
            view = _K_OBS_SEDMA, self._sedma(obs)
        else:
            raise ValueError(f"unknown game {game!r} in observation: expected 'sevens' or 'sedma'")
        return b"".join(
            [
                fixed,
                _opt_int32(_K_OBS_TO_ACT, int(obs.get("to_act", -1))),
                self._hand.many(obs["hand"]),
                self._ints(_K_OBS_HAND_SIZES, obs.get("hand_sizes", ())),
                self._ints(_K_OBS_TOTALS, obs.get("totals", ())),
                self._unit.opt(fixed_key[7]),
                self._history(obs.get("history", ()), fixed_key[4]),
                view[0],
                _varint(len(view[1])),
                view[1],
            ]
        )

    def _ints(self, key: bytes, values: Sequence[int]) -> bytes:
        """A packed repeated int32 field (the same values: the same bytes, made once)."""
        memo_key = (key, tuple(values))
        data = self._arrays.get(memo_key)
        if data is None:
            data = self._arrays[memo_key] = _packed_int32(key, values)
        return data

    def _bools(self, key: bytes, values: Sequence[bool]) -> bytes:
        memo_key = (key, tuple(values))  # (1,) and (True,) are one key: one encoding too
        data = self._arrays.get(memo_key)
        if data is None:
            data = self._arrays[memo_key] = _packed_bool(key, values)
        return data

    def _history(self, entries: Sequence[HistoryItem], deal: int) -> bytes:
        """The encoded history: a deal's history only grows (the engines append events), so
        the entries of the last request of the same deal are reused when the new history is
        as long and ends the old part with the same entry; otherwise it starts over."""
        parts = self._history_bytes
        n = len(parts)
        if (
            deal != self._history_deal
            or len(entries) < n
            or (n and entries[n - 1] != self._history_last)
        ):
            self._history_deal = deal
            parts = self._history_bytes = []
            n = 0
        if len(entries) > n:
            memo = self._history_entries
            for entry in entries[n:]:
                seat = entry.get("seat")
                key = (
                    -1 if seat is None else int(seat),
                    str(entry["kind"]),
                    str(entry.get("action") or ""),
                    str(entry.get("reason") or ""),
                )
                data = memo.get(key)
                if data is None:
                    body = b"".join(
                        [
                            _opt_int32(_K_HIST_SEAT, key[0]),
                            _ld(_F_HIST_KIND, key[1].encode()) if key[1] else b"",
                            _ld(_F_HIST_ACTION, key[2].encode()) if key[2] else b"",
                            _ld(_F_HIST_REASON, key[3].encode()) if key[3] else b"",
                        ]
                    )
                    data = memo[key] = _ld(_HISTORY_FIELD, body)
                parts.append(data)
            self._history_last = entries[-1]
        return b"".join(parts)

    def _sevens(self, obs: Observation) -> bytes:
        table = obs.get("table", {})
        memo = self._rows
        rows = []
        for suit in SUITS:
            key = (suit, tuple(table.get(suit, ())))
            row = memo.get(key)
            if row is None:
                body = self._row_suit.one(suit) + self._row_cards.many(key[1])
                row = memo[key] = _K_ROW + _varint(len(body)) + body
            rows.append(row)
        return b"".join(
            [
                *rows,
                _opt_int32(_K_SEVENS_POT, int(obs.get("pot", 0))),
                self._ints(_K_SEVENS_PASSES, obs.get("passes", ())),
                self._ints(_K_SEVENS_FREE, obs.get("free_passes_left", ())),
                self._bools(_K_SEVENS_ELIMINATED, obs.get("eliminated", ())),
                self._bools(_K_SEVENS_SKIP, obs.get("skip_next", ())),
            ]
        )

    def _sedma(self, obs: Observation) -> bytes:
        parts = []
        for side in obs.get("sides", ()):
            seats = self._ints(_K_SIDE_SEATS, side)
            parts.append(_K_SIDE + _varint(len(seats)) + seats)
        parts.append(_opt_int32(_K_SEDMA_LEADER, int(obs.get("leader", -1))))
        for played in obs.get("trick", ()):
            card = self._trick_card.one(str(played["card"]))
            body = _opt_int32(_K_TRICK_SEAT, int(played["seat"])) + card
            parts.append(_K_TRICK_CARD + _varint(len(body)) + body)
        parts.append(_opt_int32(_K_SEDMA_TALON, int(obs.get("talon_size", 0))))
        parts.append(self._ints(_K_SEDMA_TRICKS, obs.get("tricks_won", ())))
        parts.append(self._ints(_K_SEDMA_POINTS, obs.get("card_points", ())))
        parts.append(self._ints(_K_SEDMA_MATCH, obs.get("match_points", ())))
        parts.append(_opt_int32(_K_SEDMA_TARGET, int(obs.get("target", 0))))
        for marriage in obs.get("marriages", ()):
            cards = self._marriage_cards.many(marriage)
            parts.append(_K_MARRIAGE + _varint(len(cards)) + cards)
        return b"".join(parts)

    def _action_info(self, obs: Observation, legal: Sequence[str]) -> bytes:
        memo = self._infos
        parts = []
        for info in action_info(obs, [str(a) for a in legal]):
            key = (info["action"], info["kind"], info["cost"], info["eliminates"])
            data = memo.get(key)
            if data is None:
                body = b"".join(
                    [
                        _ld(_F_INFO_ACTION, key[0].encode()) if key[0] else b"",
                        _ld(_F_INFO_KIND, key[1].encode()) if key[1] else b"",
                        _opt_int32(_K_INFO_COST, key[2]),
                        _K_INFO_ELIMINATES + _VARINTS[1] if key[3] else b"",
                    ]
                )
                data = memo[key] = _ld(_F_REQ_INFO, body)
            parts.append(data)
        return b"".join(parts)


def _opt_uint32(key: bytes, n: int) -> bytes:
    return key + _uint32(n) if n else b""


def action_result_to_proto(msg: ActionResultMessage) -> bot_pb2.RefereeMessage:
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


class ResultEncoder:
    """The serialized ``RefereeMessage(result=...)`` of one match's action results, parse
    equal to :func:`action_result_to_proto` (tests/gateway/test_sdk_and_convert.py), written
    field by field: the match's own fields are encoded once, and so is each distinct
    outcome (status, reason, message, penalty, action, autopilot): a decision adds its seq
    and think time."""

    def __init__(self, match_id: str, attempt: int) -> None:
        self._head = _ld(_F_RESULT_MATCH, match_id.encode()) + (
            _K_RESULT_ATTEMPT + _uint32(attempt) if attempt else b""
        )
        self._outcomes: dict[tuple[str, str, str, int, str, bool], tuple[bytes, bytes, bytes]] = {}

    def encode(self, msg: ActionResultMessage) -> bytes:
        """``action_result_to_proto(msg).SerializeToString()``, parse-equal (``msg``'s
        match and attempt must be this encoder's)."""
        outcome = (
            msg["status"],
            str(msg.get("reason", "")),
            str(msg.get("message", "")),
            int(msg.get("penalty", 0)),
            str(msg.get("applied_action", "")),
            bool(msg.get("autopilot", False)),
        )
        fields = self._outcomes.get(outcome)
        if fields is None:
            status = _RESULT_STATUS.get(outcome[0])
            if status is None:
                raise ValueError(f"unknown action_result status {outcome[0]!r}")
            status_reason_message = b"".join(
                [
                    _K_RESULT_STATUS + _varint(status),
                    _ld(_F_RESULT_REASON, outcome[1].encode()) if outcome[1] else b"",
                    _ld(_F_RESULT_MESSAGE, outcome[2].encode()) if outcome[2] else b"",
                ]
            )
            penalty_action = b"".join(
                [
                    _opt_int32(_K_RESULT_PENALTY, outcome[3]),
                    _ld(_F_RESULT_APPLIED, outcome[4].encode()) if outcome[4] else b"",
                ]
            )
            autopilot = _K_RESULT_AUTOPILOT + _VARINTS[1] if outcome[5] else b""
            fields = (status_reason_message, penalty_action, autopilot)
            self._outcomes[outcome] = fields
        seq = int(msg["seq"])
        think = max(0, round(float(msg.get("think_ms", 0.0))))
        body = b"".join(
            [
                self._head,
                _K_RESULT_SEQ + _uint32(seq) if seq else b"",
                fields[0],
                fields[1],
                _K_RESULT_THINK + _uint32(think) if think else b"",
                fields[2],
            ]
        )
        return _K_RESULT + _varint(len(body)) + body


def match_start_to_proto(msg: MatchStartMessage) -> bot_pb2.RefereeMessage:
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


def deal_end_to_proto(msg: DealEndMessage) -> bot_pb2.RefereeMessage:
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


def match_end_to_proto(msg: MatchEndMessage) -> bot_pb2.RefereeMessage:
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
) -> bot_pb2.RefereeMessage:
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
