"""What the bots of a match are told besides their turns: the match's start, the outcome
of each answer (``ActionResult``, docs/PROTOCOL.md section 4), each deal's end and the
match's end. Best effort, each encoded once and sent through the bot's referee
(``workers.link.Router.notify``)."""

from __future__ import annotations

import logging
from typing import Final, Literal

from referee.games.base import PASS, Event, EventKind, Match, Rules
from referee.match.messages import (
    ActionResultMessage,
    DealEndMessage,
    MatchEndMessage,
    MatchStartMessage,
    Notification,
)
from referee.match.spec import MatchSpec
from referee.protocol import convert
from workers.ask import Reply
from workers.link import Router

log = logging.getLogger("workers.notices")

Status = Literal["accepted", "refused", "timed_out"]

_AUTOPILOT_NOTE: Final = (
    "; %d failures in a row: the autopilot plays this seat to the end of the match"
)


class Notices:
    """The notifications of one match attempt to its bots."""

    def __init__(self, router: Router, spec: MatchSpec, attempt: int, match: Match) -> None:
        self.router = router
        self.spec = spec
        self.attempt = attempt
        self.match = match
        self.results = convert.ResultEncoder(spec.match_id, attempt)  # its ActionResults
        self.deals_reported = 0
        self.totals = [0] * len(spec.seats)

    def send(self, message: Notification, accepted: bool = False) -> None:
        """A notification for a bot: encoded once, best effort through its referee
        (``accepted``: a plain ACCEPTED ActionResult, docs/PROTOCOL.md section 4)."""
        try:
            if message["type"] == "action_result":  # one per decision: the outcomes memoized
                payload = self.results.encode(message)
            else:
                payload = convert.notification_to_proto(message).SerializeToString()
        except (ValueError, KeyError, TypeError) as exc:
            log.error("match %s: cannot encode a %s: %r", self.spec.match_id, message["type"], exc)
            return
        self.router.notify(message["bot"], self.spec.match_id, payload, accepted)

    def bots(self) -> dict[str, list[int]]:
        """Each distinct bot and the seats it holds."""
        out: dict[str, list[int]] = {}
        for seat, bot in enumerate(self.spec.seats):
            out.setdefault(bot, []).append(seat)
        return out

    def match_start(self, bot: str, seats: list[int], rules: Rules, num_deals: int) -> None:
        msg: MatchStartMessage = {
            "type": "match_start",
            "bot": bot,
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "game": self.spec.game,
            "preset": rules.name,
            "rules": rules.to_dict(),
            "seats": seats,
            "players": list(self.spec.seats),
            "num_deals": num_deals,
            "season": self.spec.season,
        }
        self.send(msg)

    def action_result(
        self, seq: int, seat: int, reply: Reply, mine: list[Event], strikes: int | None
    ) -> tuple[Status, str]:
        """Tell the seat's bot what became of its answer (``mine``: the seat's events of
        the decision; ``strikes``: the failures in a row when the autopilot just took the
        seat over, else None); the status and reason told."""
        status, reason, message = outcome(reply, mine)
        took_over = strikes is not None
        result: ActionResultMessage = {
            "type": "action_result",
            "bot": self.spec.seats[seat],
            "match_id": self.spec.match_id,
            "attempt": self.attempt,
            "seq": seq,
            "status": status,
            "reason": reason,
            "message": message + (_AUTOPILOT_NOTE % strikes if took_over else ""),
            "penalty": penalty(mine),
            "applied_action": applied(mine),
            "think_ms": reply.think_ms,  # whole ms on the wire: rounded once, by the encoder
            "autopilot": took_over,
        }
        # A plain acceptance: streams that declined those (Hello.skip_accepted_results) drop it
        plain = status == "accepted" and not reason and not result["penalty"] and not took_over
        self.send(result, accepted=plain)
        return status, reason

    def deal_ends(self, events: list[Event]) -> None:
        """Report the deals these events finished to the bots."""
        if not any(e.kind in (EventKind.DEAL_END, EventKind.VOID_DEAL) for e in events):
            return
        results = self.match.deal_results()
        for deal in results[self.deals_reported :]:
            self.totals = [t + x for t, x in zip(self.totals, deal.deltas, strict=True)]
            totals = list(self.totals)
            for bot in dict.fromkeys(self.spec.seats):
                msg: DealEndMessage = {
                    "type": "deal_end",
                    "bot": bot,
                    "match_id": self.spec.match_id,
                    "attempt": self.attempt,
                    "deal_index": deal.deal,
                    "winner": -1 if deal.winner is None else deal.winner,
                    "deltas": list(deal.deltas),
                    "totals": totals,
                    "result": deal.to_dict(),
                }
                self.send(msg)
        self.deals_reported = len(results)

    def match_end(self) -> None:
        result = self.match.result()
        for bot in self.bots():
            msg: MatchEndMessage = {
                "type": "match_end",
                "bot": bot,
                "match_id": self.spec.match_id,
                "attempt": self.attempt,
                "totals": list(result.totals),
                "unit": result.unit,
                "winners": list(result.winners),
                "result": result.to_dict(),
            }
            self.send(msg)


def penalty(events: list[Event]) -> int:
    """Chips or points the seat paid in these events (summed from penalty details)."""
    total = 0
    for e in events:
        if e.kind == EventKind.PENALTY:
            for name in ("amount", "chips", "points"):
                value = e.detail.get(name)
                if isinstance(value, int) and not isinstance(value, bool):
                    total += value
                    break
    return total


def applied(events: list[Event]) -> str:
    """The action that took effect for the seat: its card(s), or ``pass``; "" if none."""
    for e in reversed(events):
        if e.kind == EventKind.PLAY and e.action:
            return e.action
        if e.kind in (EventKind.PASS, EventKind.ILLEGAL_PASS, EventKind.TIMEOUT):
            return PASS
    return ""


def outcome(reply: Reply, events: list[Event]) -> tuple[Status, str, str]:
    """Status, reason code and a sentence for the bot about what happened to its answer."""
    if reply.failure == "disconnected":
        return (
            "timed_out",
            "disconnected",
            "the request was never sent: no stream of this bot was connected (or none had a "
            "free slot) before its deadline",
        )
    if reply.failure == "timeout":
        return (
            "timed_out",
            "timeout",
            f"no answer within the time limit (think time {reply.think_ms:.0f} ms); "
            "the rules' timeout consequence was applied",
        )
    if reply.fallback:
        for e in events:
            if e.kind == EventKind.INVALID_ACTION:
                return (
                    "refused",
                    "fallback",
                    f"{reply.action!r} was a fallback answer ({reply.fallback}: your bot's "
                    "code did not choose it, its SDK or bridge did) and this season refuses "
                    'fallbacks as invalid actions (fallback = "invalid"): the rules\' '
                    "consequence of an invalid action was applied",
                )
    for e in events:
        if e.kind == EventKind.INVALID_ACTION:
            words = str(e.detail.get("message") or e.reason or "not a legal action")
            return "refused", e.reason or "invalid_action", f"{reply.action!r} refused: {words}"
    for e in events:
        if e.kind == EventKind.ILLEGAL_PASS:
            words = str(e.detail.get("message") or "you passed while holding a legal play")
            return "accepted", "illegal_pass", f"illegal pass (SV-18): {words}"
    if reply.fallback:
        return (
            "accepted",
            "fallback",
            f"{reply.action!r} accepted as a fallback answer ({reply.fallback}: your bot's "
            "code did not choose it, its SDK or bridge did); counted in your fallbacks",
        )
    return "accepted", "", ""
