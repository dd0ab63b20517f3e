"""The result row: what Redis keeps of a committed result (``keys.match_result``).

The live platform reads the row for the standings (the fold, ``compute_standings``), the
web's match lists and charts, the League API's match summaries and ``season verify``; it
needs the seats, totals, unit, finishing orders and score changes of every deal, and the
per-seat counters. Each deal's ``penalties`` and ``detail`` are left out of the row: the
match record (``referee.records``) holds the full result and stats, and :func:`full_result`
puts them back for whoever needs them (``season export``).

The row is stored compact (:data:`ROW_VERSION`): short keys, each deal and each seat's
counters as a list, the seat's bot named once in ``seats``. :func:`parse_row` gives back
the :class:`~referee.match.spec.CommittedResult` shape, so readers see a result without
``penalties`` and ``detail`` (:func:`lean_result`). A row written before (the full JSON
of the committed result, no ``v``) is read as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, cast

from referee.match.spec import CommittedResult

ROW_VERSION: Final = 2
"""``v`` of a compact row; a row without ``v`` is the full committed result as JSON."""

LEFT_OUT: Final = ("penalties", "detail")
"""Per-deal fields of the result the row leaves to the record."""

DEAL_FIELDS: Final = ("winner", "order", "deltas", "void", "deal")
"""A deal of the row as the list ``[winner, order, deltas, void(0/1)]``, plus ``deal`` when
it is not the deal's position."""

STAT_FIELDS: Final = (
    "decisions",
    "timeouts",
    "invalid_actions",
    "illegal_passes",
    "fallbacks",
    "autopilot",
    "think_ms_total",
)
"""A seat's counters of the row as a list in this order (its bot is the seat's)."""

_TOP: Final = {
    "match_id": "id",
    "season": "s",
    "game": "g",
    "seats": "b",
    "attempt": "a",
    "finished_ms": "f",
}
_RESULT: Final = {
    "totals": "t",
    "unit": "u",
    "higher_is_better": "h",
    "order": "o",
    "winners": "w",
}


def lean_deal(deal: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in deal.items() if k not in LEFT_OUT}


def lean_result(result: Mapping[str, Any]) -> dict[str, Any]:
    """A match result (``MatchResult.to_dict()``) as the row keeps it: its deals without
    :data:`LEFT_OUT`. Idempotent, so ``lean_result(a) == lean_result(b)`` compares a full
    result with a row's."""
    out = dict(result)
    if isinstance(result.get("deals"), list):
        out["deals"] = [lean_deal(d) for d in result["deals"]]
    return out


def lean(committed: Mapping[str, Any]) -> CommittedResult:
    """A committed result as :func:`parse_row` gives it back after :func:`row_text`."""
    if not isinstance(committed.get("result"), dict):
        return cast(CommittedResult, dict(committed))
    return cast(CommittedResult, {**committed, "result": lean_result(committed["result"])})


def _deal_row(i: int, deal: Mapping[str, Any]) -> Any:
    if not set(deal) <= {*DEAL_FIELDS, *LEFT_OUT} or not {"winner", "order", "deltas"} <= set(deal):
        return lean_deal(deal)  # an unknown shape is kept as it is
    row = [deal["winner"], deal["order"], deal["deltas"], 1 if deal.get("void") else 0]
    if deal.get("deal", i) != i:
        row.append(deal["deal"])
    return row


def _deal_of(i: int, row: Any) -> dict[str, Any]:
    if isinstance(row, dict):
        return row
    return {
        "deal": row[4] if len(row) > 4 else i,
        "winner": row[0],
        "order": row[1],
        "deltas": row[2],
        "void": bool(row[3]),
    }


def _stat_row(seat: int, seats: list[Any], stats: Mapping[str, Any]) -> Any:
    if set(stats) != {"bot", *STAT_FIELDS} or seat >= len(seats) or stats["bot"] != seats[seat]:
        return dict(stats)
    return [int(stats[k]) if k == "autopilot" else stats[k] for k in STAT_FIELDS]


def _stats_of(seat: int, seats: list[Any], row: Any) -> dict[str, Any]:
    if isinstance(row, dict):
        return row
    out: dict[str, Any] = {"bot": seats[seat]}
    for name, value in zip(STAT_FIELDS, row, strict=True):
        out[name] = bool(value) if name == "autopilot" else value
    return out


def row_text(committed: Mapping[str, Any]) -> str:
    """The compact row of a committed result (JSON text); one without a ``result`` object
    (no match result to compact) as its JSON, as rows were written before."""
    if not isinstance(committed.get("result"), dict):
        return json.dumps(committed, separators=(",", ":"))
    data: dict[str, Any] = {"v": ROW_VERSION}
    extra: dict[str, Any] = {}
    for name, value in committed.items():
        if name in _TOP:
            data[_TOP[name]] = value
        elif name not in ("result", "stats"):
            extra[name] = value
    seats = list(committed.get("seats", []))
    result = committed["result"]
    rest: dict[str, Any] = {}
    for name, value in result.items():
        if name in _RESULT:
            data[_RESULT[name]] = int(value) if name == "higher_is_better" else value
        elif name == "deals":
            data["d"] = [_deal_row(i, d) for i, d in enumerate(value)]
        else:
            rest[name] = value
    data["st"] = [_stat_row(i, seats, s) for i, s in enumerate(committed.get("stats", []))]
    if extra:
        data["x"] = extra
    if rest:
        data["rx"] = rest
    return json.dumps(data, separators=(",", ":"))


def parse_row(raw: str | bytes) -> CommittedResult:
    """The committed result a stored row holds (compact or written before it was)."""
    data = json.loads(raw)
    if not isinstance(data, dict) or data.get("v") != ROW_VERSION:
        return cast(CommittedResult, data)
    out: dict[str, Any] = {}
    for name, short in _TOP.items():
        if short in data:
            out[name] = data[short]
    out.update(data.get("x", {}))
    result: dict[str, Any] = {}
    for name, short in _RESULT.items():
        if short in data:
            result[name] = bool(data[short]) if name == "higher_is_better" else data[short]
    if "d" in data:
        result["deals"] = [_deal_of(i, d) for i, d in enumerate(data["d"])]
    result.update(data.get("rx", {}))
    out["result"] = result
    seats = list(out.get("seats", []))
    out["stats"] = [_stats_of(i, seats, s) for i, s in enumerate(data.get("st", []))]
    return cast(CommittedResult, out)


def full_result(row: Mapping[str, Any], record: Mapping[str, Any] | None) -> CommittedResult:
    """The committed result with what the row leaves out, from the match's record (its
    ``result`` and ``stats`` are the full ones); the row as it is without a record."""
    if not record or not isinstance(record.get("result"), dict):
        return cast(CommittedResult, dict(row))
    return cast(
        CommittedResult,
        {**row, "result": record["result"], "stats": record.get("stats", row.get("stats", []))},
    )
