"""The decision clock of one match (defined precisely in docs/workers.md, "The clock").

Per decision a seat may think ``move_ms``; what it thinks beyond that is taken from its
per-match ``bank``; ``grace_ms`` absorbs the network between referee and bot. Think time
is measured by the referee only (its send stamp to its receive stamp), so time spent
queued at the referee for a busy bot's free slot (up to ``queue_ms``), on the internal
stream or in the match host is never charged.

* limit of a decision = ``move_ms + bank_left + grace_ms``
* answer in time  ⇔  ``think_ms <= limit``; then the bank pays
  ``min(bank_left, max(0, think_ms - move_ms))`` (an overrun that only the grace covered
  costs the rest of the bank, nothing more)
* answer late (or none) ⇔ timeout; the bank is then empty.
"""

from __future__ import annotations

from dataclasses import dataclass

from referee.match.messages import ClockInfo
from referee.match.spec import TimeControl


@dataclass(frozen=True, slots=True)
class Verdict:
    in_time: bool
    bank_charged_ms: float
    bank_left_ms: float


class MatchClock:
    """The banks of every seat of one match."""

    def __init__(self, tc: TimeControl, num_seats: int):
        self.tc = tc
        self.bank_left_ms: list[float] = [float(tc.bank_ms)] * num_seats

    def info(self, seat: int) -> ClockInfo:
        """What the bot is told: its move time, what is left of its bank, and the grace."""
        return {
            "move_ms": self.tc.move_ms,
            "bank_ms": int(self.bank_left_ms[seat]),
            "grace_ms": self.tc.grace_ms,
        }

    def limit_ms(self, seat: int) -> float:
        """The most think time (referee stamps) this seat's next answer may take."""
        return self.tc.move_ms + self.bank_left_ms[seat] + self.tc.grace_ms

    def judge(self, seat: int, think_ms: float) -> Verdict:
        """Judge one answer by its measured think time, and charge the bank."""
        bank = self.bank_left_ms[seat]
        if think_ms <= self.limit_ms(seat):
            charge = min(bank, max(0.0, think_ms - self.tc.move_ms))
            self.bank_left_ms[seat] = bank - charge
            return Verdict(True, charge, self.bank_left_ms[seat])
        self.bank_left_ms[seat] = 0.0
        return Verdict(False, bank, 0.0)

    def timed_out(self, seat: int) -> Verdict:
        """No answer came: the decision timed out and the bank is spent."""
        bank = self.bank_left_ms[seat]
        self.bank_left_ms[seat] = 0.0
        return Verdict(False, bank, 0.0)
