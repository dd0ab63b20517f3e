"""Per-rules lookup tables for the hot path (bit masks over ``Card.index``).

A card set is an int with bit ``card.index`` set (``suit * 13 + rank - 1``), so a
row of suit ``s`` is ``(mask >> 13 * s) & 0x1FFF`` with bit ``rank - 1`` per rank. The
playable cards of a row depend only on that row's table mask, so they are memoized
per rules object (at most 8192 masks per rules).
"""

from __future__ import annotations

from functools import lru_cache

from referee.games.base import PASS, Event
from referee.games.cards import Card, Rank, Suit, make_deck
from referee.games.sevens.rules import SevensRules

ROW_BITS = 0x1FFF
SUIT_NAMES = ("clubs", "diamonds", "hearts", "spades")
SUIT_SINGULAR = ("club", "diamond", "heart", "spade")

CARD_TEXT: tuple[str, ...] = tuple(str(Card.from_index(i)) for i in range(52))
CARD_INDEX: dict[str, int] = {text: i for i, text in enumerate(CARD_TEXT)}

EMPTY: dict[str, object] = {}
"""The detail of events without one: shared, so an event's detail is never mutated."""


def bits(mask: int) -> list[int]:
    """The set bit positions of ``mask``, ascending."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


_MASK_ACTIONS: dict[int, tuple[str, ...]] = {}


def mask_actions(mask: int) -> tuple[str, ...]:
    """Card texts of ``mask`` in canonical order (memoized: legal sets repeat a lot)."""
    found = _MASK_ACTIONS.get(mask)
    if found is None:
        found = tuple(CARD_TEXT[i] for i in bits(mask))
        if len(_MASK_ACTIONS) < 200_000:
            _MASK_ACTIONS[mask] = found
    return found


_EVENTS: dict[tuple[str, int, int, str, str], Event] = {}


def play_event(seat: int, deal: int, action: str, source: str) -> Event:
    """A ``play`` event; events are immutable, so equal ones are shared."""
    key = ("play", seat, deal, action, source)
    event = _EVENTS.get(key)
    if event is None:
        event = Event("play", seat, deal, action, None, source, EMPTY)
        if deal < 32 and len(_EVENTS) < 100_000:
            _EVENTS[key] = event
    return event


_PASS_EVENTS: dict[tuple[int, int, str, str, int], Event] = {}


def pass_event(seat: int, deal: int, reason: str, source: str, chips: int) -> Event:
    key = (seat, deal, reason, source, chips)
    event = _PASS_EVENTS.get(key)
    if event is None:
        event = Event("pass", seat, deal, PASS, reason, source, {"chips": chips})
        if deal < 32 and len(_PASS_EVENTS) < 100_000:
            _PASS_EVENTS[key] = event
    return event


class Tables:
    """Everything about a rules object that the engine looks up rather than computes."""

    def __init__(self, rules: SevensRules) -> None:
        self.rules = rules
        order = [rank - 1 for rank in rules.rank_order]  # rank bits, row low -> high
        self.order = order
        self.row_len = len(order)
        self.pos_of_bit = {bit: pos for pos, bit in enumerate(order)}
        starter_bit = rules.starter - 1
        self.starter_bit = starter_bit
        self.starter_pos = order.index(starter_bit)
        self.starters_mask = sum(1 << (13 * s + starter_bit) for s in range(4))
        deck = make_deck(rules.deck)
        self.deck_mask = sum(1 << card.index for card in deck)
        dealt = [c.index for c in deck]
        if rules.starters == "removed_before_deal":
            dealt = [i for i in dealt if not (self.starters_mask >> i) & 1]
        self.dealt: tuple[int, ...] = tuple(dealt)
        opening_suit = {
            "seven_of_diamonds": Suit.DIAMONDS,
            "left_of_dealer_diamond": Suit.DIAMONDS,
            "seven_of_hearts": Suit.HEARTS,
        }.get(rules.opening)
        self.opening_index = -1 if opening_suit is None else 13 * opening_suit + starter_bit
        self.row_cache: dict[int, int] = {}
        self.row_text: dict[int, tuple[str, ...]] = {}  # (suit << 13 | row) -> its cards' text
        # Penalty measures (D-50).
        pips = [0] * 52
        face = [0] * 52
        spanish = rules.deck == "spanish40"
        for i in range(52):
            rank = i % 13 + 1
            if rank == Rank.ACE:
                pips[i] = rules.ace_pips
            elif spanish and rank >= Rank.JACK:
                pips[i] = rank - 1
            else:
                pips[i] = rank
            face[i] = min(rank, 10)
        self.pips = pips
        self.face = face

    def row_playable(self, row: int) -> int:
        """Playable rank bits of one row, given the rank bits on the table (D-30, D-31)."""
        found = self.row_cache.get(row)
        if found is not None:
            return found
        order = self.order
        sp = self.starter_pos
        if not (row >> order[sp]) & 1:
            out = 1 << order[sp]
        else:
            out = 0
            length = self.row_len
            up = sp + 1
            while up < length and (row >> order[up]) & 1:
                up += 1
            if up < length:
                out |= 1 << order[up]
            down = sp - 1
            while down >= 0 and (row >> order[down]) & 1:
                down -= 1
            blocked = (  # D-31: only the card right below the starter waits
                self.rules.eights_before_sixes
                and down == sp - 1
                and sp + 1 < length
                and not (row >> order[sp + 1]) & 1
            )
            if down >= 0 and not blocked:
                out |= 1 << order[down]
        self.row_cache[row] = out
        return out

    def measure(self, mask: int) -> int:
        """The deal's ordering measure of a hand: pips for pip games, else cards (D-54)."""
        kind = self.rules.card_penalty
        if kind == "pips":
            return sum(self.pips[i] for i in bits(mask))
        if kind == "face_ten":
            return sum(self.face[i] for i in bits(mask))
        return mask.bit_count()

    def card_penalty(self, mask: int) -> int:
        """SV-29 penalty of a loser's cards (0 when ``card_penalty == 'none'``)."""
        if self.rules.card_penalty == "none":
            return 0
        return self.measure(mask)

    def seven_penalty(self, mask: int) -> int:
        """SV-30 penalty: ``seven_penalty`` per starter-rank card held."""
        return self.rules.seven_penalty * (mask & self.starters_mask).bit_count()


@lru_cache(maxsize=64)
def tables_for(rules: SevensRules) -> Tables:
    return Tables(rules)
