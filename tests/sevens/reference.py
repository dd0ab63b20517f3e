"""A naive second implementation of the Sevens family, written from RULES.md part 1.

It exists only to be diffed against the engine (``tests/sevens/test_differential.py``).
Obviously correct over fast: the table is a set of ranks per suit, hands are sets of
cards, and every question ("is this card playable?", "which runs are there?") is answered
by walking the row again. It shares nothing with ``referee.games.sevens`` but the rules
object (``SevensRules``: its option fields only, none of its derived properties), and it
follows ``docs/SEVENS_DECISIONS.md`` (``D-n`` below) and the brief's event decisions where
RULES.md leaves room.

The deal itself (the shuffle) is the engine's business: a :class:`RefMatch` asks a callback
for each deal's hands as dealt and checks that they partition the deck (SV-4, SV-6).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from referee.games.base import (
    PASS,
    RUN_SEPARATOR,
    DealResult,
    Event,
    EventKind,
    MatchResult,
    PenaltyRecord,
    Source,
    action_sort_key,
)
from referee.games.cards import Card, Rank, Suit
from referee.games.errors import CardParseError
from referee.games.sevens.rules import SevensRules

SUITS: tuple[Suit, ...] = (Suit.CLUBS, Suit.DIAMONDS, Suit.HEARTS, Suit.SPADES)

# The ranks of each deck, written out from RULES.md (SV-2, presets domino and cinquillo).
DECK_RANK_TEXT = {
    "french52": "A 2 3 4 5 6 7 8 9 T J Q K",
    "german32": "7 8 9 T J Q K A",
    "spanish40": "A 2 3 4 5 6 7 J Q K",
}

HandsFor = Callable[[int], Sequence[Sequence[str]]]
"""Gives the hands as dealt (card texts per seat) for deal ``d`` of the match."""


ANTE = "ante"
"""Event kind of an ante paid at deal start (SV-27; the brief's event list)."""


class CorruptDealError(AssertionError):
    """The hands handed to the reference break SV-4 / SV-6 (a corrupt deal)."""


def row_order(rules: SevensRules) -> list[Rank]:
    """The ranks of one row from its low end to its high end (SV-3, D-3)."""
    ranks = [Rank.parse(text) for text in DECK_RANK_TEXT[rules.deck].split()]
    if rules.ace == "high":
        low_to_high: list[Rank] = [rank for rank in ranks if rank != Rank.ACE]
        if Rank.ACE in ranks:
            low_to_high.append(Rank.ACE)
        return low_to_high
    # Ace low: the ace is the bottom of the row, then the others in their natural order.
    return sorted(ranks)


def deck_cards(rules: SevensRules) -> set[Card]:
    return {Card(suit, rank) for suit in SUITS for rank in row_order(rules)}


def pip_value(rules: SevensRules, card: Card) -> int:
    """Pips of a card left in a hand (SV-29, D-50)."""
    rank = card.rank
    if rules.card_penalty == "face_ten":
        if rank == Rank.ACE:
            return 1
        if rank in (Rank.JACK, Rank.QUEEN, Rank.KING):
            return 10
        return int(rank)
    if rank == Rank.ACE:
        return rules.ace_pips
    if rules.deck == "spanish40" and rank in (Rank.JACK, Rank.QUEEN, Rank.KING):
        # Spanish deck: sota 10, caballo 11, rey 12.
        return {Rank.JACK: 10, Rank.QUEEN: 11, Rank.KING: 12}[rank]
    return int(rank)  # 2..10 face, J 11, Q 12, K 13


def card_penalty(rules: SevensRules, cards: Sequence[Card]) -> int:
    if rules.card_penalty == "per_card":
        return len(cards)
    if rules.card_penalty in ("pips", "face_ten"):
        return sum(pip_value(rules, card) for card in cards)
    return 0


CARDS: dict[tuple[Suit, Rank], Card] = {(s, r): Card(s, r) for s in SUITS for r in Rank}


class Table:
    """The layout: for each suit, the set of ranks lying on the table."""

    def __init__(self, rules: SevensRules) -> None:
        self.order = row_order(rules)
        self.starter = Rank.parse(rules.starter_rank)
        self.start = self.order.index(self.starter)
        self.eights_before_sixes = rules.eights_before_sixes
        self.ranks: dict[Suit, set[Rank]] = {suit: set() for suit in SUITS}
        self.cached: dict[Card, list[int]] | None = None

    def copy(self) -> Table:
        other = Table.__new__(Table)
        other.order = self.order
        other.starter = self.starter
        other.start = self.start
        other.eights_before_sixes = self.eights_before_sixes
        other.ranks = {suit: set(ranks) for suit, ranks in self.ranks.items()}
        other.cached = None
        return other

    def place(self, card: Card) -> None:
        assert card.rank not in self.ranks[card.suit], f"{card} is already on the table"
        self.ranks[card.suit].add(card.rank)
        self.cached = None

    def is_open(self, suit: Suit) -> bool:
        return self.starter in self.ranks[suit]

    def end(self, suit: Suit, step: int) -> Card | None:
        """The first card above (step 1) or below (step -1) the starter's block that is
        not on the table: the block skips over cards already there (SV-23, D-30)."""
        position = self.start
        while 0 <= position < len(self.order) and self.order[position] in self.ranks[suit]:
            position += step
        if 0 <= position < len(self.order):
            return CARDS[suit, self.order[position]]
        return None

    def next_in_direction(self, suit: Suit, step: int) -> Card | None:
        """The card that may be played next at one end of an open row (SV-8 b, c)."""
        if not self.is_open(suit):
            return None
        card = self.end(suit, step)
        if card is None:
            return None
        below_starter = step == -1 and self.order.index(card.rank) == self.start - 1
        above = self.start + 1
        if (
            below_starter
            and self.eights_before_sixes
            and above < len(self.order)
            and self.order[above] not in self.ranks[suit]
        ):
            return None  # SV-12, D-31: the card above the starter before the card below it
        return card

    def playable_cards(self) -> dict[Card, list[int]]:
        """Every card that may be played now, with the directions a run from it may take."""
        if self.cached is not None:
            return self.cached
        out: dict[Card, list[int]] = {}
        for suit in SUITS:
            if not self.is_open(suit):
                out[CARDS[suit, self.starter]] = [1, -1]  # SV-8 (a): opens the row
                continue
            for step in (1, -1):
                card = self.next_in_direction(suit, step)
                if card is not None:
                    out[card] = [step]
        self.cached = out
        return out

    def as_texts(self) -> dict[str, list[str]]:
        """The table as in observations: per suit letter, its cards in row order."""
        out: dict[str, list[str]] = {}
        for suit in SUITS:
            out[suit.letter] = [
                str(CARDS[suit, rank]) for rank in self.order if rank in self.ranks[suit]
            ]
        return out


def sort_actions(actions: set[str]) -> list[str]:
    """The canonical legal-list order (``action_sort_key``, then card indices, D-32)."""

    def key(action: str) -> tuple[tuple[int, int, int], list[int]]:
        if action == PASS:
            return (action_sort_key(action), [])
        indices = [Card.parse(text).index for text in action.split(RUN_SEPARATOR)]
        return (action_sort_key(action), indices)

    return sorted(actions, key=key)


@dataclass
class SeatState:
    """What one seat has and has done in the current deal."""

    hand: set[Card]
    dealt: int  # cards as dealt (SV-28)
    passes: int = 0  # every pass decision (D-41)
    free_left: int = 0
    voluntary: int = 0
    skip_next: bool = False
    eliminated: bool = False
    cards_at_elimination: list[Card] = field(default_factory=list)
    to_pot: int = 0  # chips this seat put into the pot (antes, passes, illegal passes)
    points: int = 0  # penalty points charged during play (D-5)
    owed_to_winner: int = 0  # illegal-pass chips with payee winner (SV-19)


class RefDeal:
    """One deal in progress."""

    def __init__(self, rules: SevensRules, index: int, dealer: int, first: int) -> None:
        self.rules = rules
        self.index = index
        self.dealer = dealer
        self.first = first
        self.table = Table(rules)
        self.seats: list[SeatState] = []
        self.pot = 0
        self.to_act = first
        self.winner: int | None = None
        self.end = ""
        self.penalties: list[PenaltyRecord] = []
        self.plays_cache: dict[int, list[str]] = {}  # per seat; emptied by every table move

    def to_table(self, seat: int, card: Card) -> None:
        """Move ``card`` from ``seat``'s hand to its place on the table."""
        self.seats[seat].hand.remove(card)
        self.table.place(card)
        self.plays_cache.clear()


class RefMatch:
    """A match of the Sevens family played by the naive rules.

    ``hands_for(d)`` gives deal ``d``'s hands as dealt; ``dealers[d]`` (when given) fixes a
    deal's dealer, otherwise deal ``d`` is dealt by seat ``d % n`` (D-11). ``num_deals``
    overrides the rules' match length (a match built from explicit ``DealSpec`` s).
    """

    def __init__(
        self,
        rules: SevensRules,
        num_players: int,
        hands_for: HandsFor,
        *,
        num_deals: int | None = None,
        dealers: Sequence[int | None] | None = None,
    ) -> None:
        self.rules = rules
        self.n = num_players
        self.hands_for = hands_for
        self.dealers = list(dealers) if dealers is not None else []
        self.log: list[Event] = []
        self.results: list[DealResult] = []
        self.totals: list[int] = [
            rules.starting_chips if rules.scoring == "chips" else 0 for _ in range(num_players)
        ]
        if num_deals is not None:
            self.planned = num_deals
        elif rules.until_broke:
            self.planned = rules.deals or 100  # D-8
        else:
            self.planned = rules.deals or num_players  # D-8: one deal per player
        starter = Rank.parse(rules.starter_rank)
        self.opening: Card | None = None  # SV-13, SV-14, SV-16 (SV-15: any starter)
        if rules.opening in ("seven_of_diamonds", "left_of_dealer_diamond"):
            self.opening = Card(Suit.DIAMONDS, starter)
        elif rules.opening == "seven_of_hearts":
            self.opening = Card(Suit.HEARTS, starter)
        self.tiebreak: str | None = None  # set while an extra deal is played (D-60)
        self.tied: list[int] = []
        self.final: MatchResult | None = None
        self.deal = self._start_deal(0)

    # -- public API, as the engine's ------------------------------------------------

    def is_over(self) -> bool:
        return self.final is not None

    def to_act(self) -> int:
        assert not self.is_over(), "the match is over"
        return self.deal.to_act

    def legal_actions(self) -> list[str]:
        seat = self.to_act()
        actions = set(self.plays(seat))
        if self.pass_kind(seat) != "illegal":
            actions.add(PASS)
        return sort_actions(actions)

    def check(self, action: str) -> str | None:
        """None when ``action`` is legal for the seat to act, else why not (in words)."""
        seat = self.to_act()
        if action == PASS:
            if self.pass_kind(seat) == "illegal":
                return "passing while able to play is an illegal pass (SV-18)"
            return None
        refused = self._refusal(seat, action)
        return None if refused is None else refused[1]

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]:
        start = len(self.log)
        seat = self.to_act()
        if action == PASS:
            self._pass(seat, source)
        else:
            refused = self._refusal(seat, action)
            if refused is None:
                self._play(seat, [Card.parse(text) for text in action.split(RUN_SEPARATOR)], source)
            else:
                reason, message = refused
                self._emit(
                    EventKind.INVALID_ACTION,
                    seat,
                    action=action[:64],
                    reason=reason,
                    source=source,
                    detail={"message": message},
                )
                self._pass(seat, source)  # SV-21
        self._after_decision(seat)
        return self.log[start:]

    def apply_timeout(self) -> list[Event]:
        start = len(self.log)
        seat = self.to_act()
        self._emit(EventKind.TIMEOUT, seat, reason="timeout")
        self._pass(seat, Source.BOT)
        self._after_decision(seat)
        return self.log[start:]

    def events(self) -> list[Event]:
        return list(self.log)

    def deal_results(self) -> list[DealResult]:
        return list(self.results)

    def result(self) -> MatchResult:
        assert self.final is not None, "the match is not over"
        return self.final

    def observation_facts(self) -> dict[str, Any]:
        """The public facts of the current deal that observations must show."""
        deal = self.deal
        return {
            "dealer": deal.dealer,
            "table": deal.table.as_texts(),
            "hand_sizes": [len(s.hand) for s in deal.seats],
            "pot": deal.pot,
            "passes": [s.passes for s in deal.seats],
            "free_passes_left": [s.free_left for s in deal.seats],
            "eliminated": [s.eliminated for s in deal.seats],
            "skip_next": [s.skip_next for s in deal.seats],
        }

    def hand(self, seat: int) -> list[str]:
        return [str(card) for card in sorted(self.deal.seats[seat].hand)]

    # -- the rules --------------------------------------------------------------------

    def opening_card(self) -> Card | None:
        """The card that must open the deal, while it is not on the table (D-20)."""
        card = self.opening
        if card is None or self.deal.table.is_open(card.suit):
            return None
        return card

    def plays(self, seat: int) -> list[str]:
        """Every card or run ``seat`` may play now (SV-8, SV-11, D-20, D-32)."""
        cached = self.deal.plays_cache.get(seat)
        if cached is None:
            cached = self.deal.plays_cache[seat] = self._find_plays(seat)
        return cached

    def _find_plays(self, seat: int) -> list[str]:
        hand = self.deal.seats[seat].hand
        table = self.deal.table
        must_open = self.opening_card()
        found: list[str] = []
        for card, directions in table.playable_cards().items():
            if card not in hand or (must_open is not None and card != must_open):
                continue
            found.append(str(card))
            if not self.rules.multi_card_turn:
                continue
            for step in directions:  # D-32: a run goes one way; from a starter either way
                scratch = table.copy()
                scratch.place(card)
                run = [card]
                while True:
                    following = scratch.next_in_direction(card.suit, step)
                    if following is None or following not in hand:
                        break
                    scratch.place(following)
                    run.append(following)
                    found.append(RUN_SEPARATOR.join(str(c) for c in run))
        return found

    def pass_kind(self, seat: int) -> str:
        """Which pass ``seat`` would make now (D-40)."""
        state = self.deal.seats[seat]
        if not self.plays(seat):
            return "forced"
        if state.free_left > 0:
            return "free"
        if not self.rules.must_play and (
            self.rules.max_voluntary_passes == 0
            or state.voluntary < self.rules.max_voluntary_passes
        ):
            return "voluntary"
        return "illegal"

    def _refusal(self, seat: int, action: str) -> tuple[str, str] | None:
        """Why ``action`` is refused (SV-21), or None when it is legal."""
        try:
            cards = [Card.parse(text) for text in action.split(RUN_SEPARATOR)]
        except CardParseError:
            return ("malformed", f"{action[:64]!r} is not a card, a run or 'pass'")
        hand = self.deal.seats[seat].hand
        missing = [str(card) for card in cards if card not in hand]
        if missing:
            return ("not_held", f"{', '.join(missing)} not in the hand")
        # Card text is read as Card.parse reads it (any case, 10 for T, spaces around a card),
        # and the play is recorded in canonical form (the engine's reading; see the notes).
        canonical = RUN_SEPARATOR.join(str(card) for card in cards)
        if canonical not in self.plays(seat):
            return ("not_legal", f"{action} is not playable now")
        return None

    # -- applying decisions -------------------------------------------------------------

    def _emit(
        self,
        kind: str,
        seat: int | None,
        *,
        action: str | None = None,
        reason: str | None = None,
        source: str = Source.BOT,
        detail: dict[str, Any] | None = None,
    ) -> None:
        self.log.append(
            Event(
                kind=kind,
                seat=seat,
                deal=self.deal.index,
                action=action,
                reason=reason,
                source=source,
                detail=detail or {},
            )
        )

    def _charge(self, seat: int, amount: int) -> None:
        """A pass cost: chips into the pot, or penalty points (D-5)."""
        if amount == 0:
            return
        state = self.deal.seats[seat]
        if self.rules.scoring == "penalty_points":
            state.points += amount
        else:
            state.to_pot += amount
            self.deal.pot += amount

    def _play(self, seat: int, cards: list[Card], source: str) -> None:
        state = self.deal.seats[seat]
        for card in cards:
            self.deal.to_table(seat, card)
        self._emit(
            EventKind.PLAY,
            seat,
            action=RUN_SEPARATOR.join(str(c) for c in cards),
            source=source,
        )
        if not state.hand:
            self.deal.winner = seat  # SV-25
            self.deal.end = "out"

    def _pass(self, seat: int, source: str) -> None:
        rules = self.rules
        state = self.deal.seats[seat]
        kind = self.pass_kind(seat)
        state.passes += 1  # D-41: every pass decision counts
        if kind != "illegal":
            if kind == "forced":
                chips = rules.pass_chips
            elif kind == "free":
                chips = 0
                state.free_left -= 1
            else:
                chips = rules.voluntary_pass_chips
                state.voluntary += 1
            self._emit(
                EventKind.PASS,
                seat,
                action=PASS,
                reason=kind,
                source=source,
                detail={"chips": chips},
            )
            self._charge(seat, chips)
        else:
            pass_chips = rules.pass_chips if rules.illegal_pass_also_pays_pass else 0
            self._emit(
                EventKind.ILLEGAL_PASS,
                seat,
                action=PASS,
                reason="illegal_pass",
                source=source,
                detail={"chips": pass_chips} if pass_chips else {},
            )
            self._charge(seat, pass_chips)
            penalty = rules.illegal_pass_penalty
            if penalty == "lose_turn":
                state.skip_next = True
                self.deal.penalties.append(PenaltyRecord(seat, "illegal_pass", 0))
            elif penalty == "chips":
                chips = rules.illegal_pass_chips
                payee = rules.illegal_pass_payee
                self._emit(
                    EventKind.PENALTY,
                    seat,
                    reason="illegal_pass",
                    source=source,
                    detail={"chips": chips, "payee": payee},
                )
                self.deal.penalties.append(PenaltyRecord(seat, "illegal_pass", chips))
                if rules.scoring == "penalty_points":
                    state.points += chips
                elif payee == "pot":
                    state.to_pot += chips
                    self.deal.pot += chips
                else:
                    state.owed_to_winner += chips
            else:  # forfeit_deal: out of the deal as in SV-23
                self.deal.penalties.append(PenaltyRecord(seat, "illegal_pass", 0))
                self._eliminate(seat, "forfeit", source)
                return
        if rules.pass_elimination and state.passes > rules.pass_elimination:
            self._eliminate(seat, "pass_limit", source)  # SV-23

    def _eliminate(self, seat: int, reason: str, source: str) -> None:
        state = self.deal.seats[seat]
        self._emit(EventKind.ELIMINATED, seat, reason=reason, source=source)
        self.deal.penalties.append(PenaltyRecord(seat, reason, 0))
        state.eliminated = True
        state.skip_next = False
        state.cards_at_elimination = sorted(state.hand)
        for card in state.cards_at_elimination:
            self.deal.to_table(seat, card)  # SV-23: the cards go to their positions
        active = [s for s in range(self.n) if not self.deal.seats[s].eliminated]
        if len(active) == 1:
            self.deal.winner = active[0]  # D-42
            self.deal.end = "last_active"

    def _after_decision(self, seat: int) -> None:
        if self.deal.winner is not None:
            self._end_deal()
            return
        nxt = seat
        while True:
            nxt = (nxt + 1) % self.n
            state = self.deal.seats[nxt]
            if state.eliminated:
                continue
            if state.skip_next:  # SV-19 lose-a-turn, D-21
                state.skip_next = False
                self._emit(
                    EventKind.PASS,
                    nxt,
                    action=PASS,
                    reason="skipped",
                    source=Source.FORCED,
                    detail={"chips": 0},
                )
                continue
            break
        self.deal.to_act = nxt

    # -- deals ------------------------------------------------------------------------

    def _dealer(self, index: int) -> int:
        if index < len(self.dealers) and self.dealers[index] is not None:
            dealer = self.dealers[index]
            assert dealer is not None
            return dealer
        return index % self.n  # D-11

    def _check_deal(self, hands: list[set[Card]]) -> None:
        """SV-4, SV-6: the hands partition the deck (less removed starters), sizes even."""
        expected = deck_cards(self.rules)
        if self.rules.starters == "removed_before_deal":
            starter = Rank.parse(self.rules.starter_rank)
            expected -= {Card(suit, starter) for suit in SUITS}
        dealt: list[Card] = [card for hand in hands for card in hand]
        if len(dealt) != len(set(dealt)) or set(dealt) != expected:
            raise CorruptDealError(f"corrupt deal: the hands do not partition the deck: {hands}")
        sizes = [len(hand) for hand in hands]
        if max(sizes) - min(sizes) > 1:
            raise CorruptDealError(f"corrupt deal: hand sizes {sizes} differ by more than one")

    def _start_deal(self, index: int) -> RefDeal:
        rules = self.rules
        n = self.n
        texts = self.hands_for(index)
        hands = [{Card.parse(text) for text in seat_hand} for seat_hand in texts]
        if len(hands) != n:
            raise CorruptDealError(f"deal {index} has {len(hands)} hands for {n} seats")
        self._check_deal(hands)
        dealer = self._dealer(index)
        starter = Rank.parse(rules.starter_rank)
        opening = rules.opening
        if opening == "seven_of_diamonds" or opening == "seven_of_hearts":
            suit = Suit.DIAMONDS if opening == "seven_of_diamonds" else Suit.HEARTS
            first = next(s for s in range(n) if Card(suit, starter) in hands[s])  # SV-13, SV-16
        elif opening == "left_of_dealer_diamond" and index > 0:
            winner = self.results[-1].winner
            assert winner is not None
            first = winner  # SV-14: the previous deal's winner opens
        else:
            first = (dealer + 1) % n  # SV-14, SV-15, D-7
        deal = RefDeal(rules, index, dealer, first)
        deal.seats = [
            SeatState(hand=set(hand), dealt=len(hand), free_left=rules.free_passes)
            for hand in hands
        ]
        self.deal = deal
        if rules.starters == "removed_before_deal":
            for suit in SUITS:
                deal.table.place(Card(suit, starter))
        self._emit(EventKind.DEAL_START, None, detail={"dealer": dealer, "first": first})
        if rules.ante and rules.scoring == "chips":  # SV-27, SV-28, D-53
            sizes = [s.dealt for s in deal.seats]
            uneven = max(sizes) != min(sizes)
            for seat in range(n):
                chips = rules.ante
                if uneven and sizes[seat] == min(sizes):
                    if rules.short_hand_ante == "minus_one":
                        chips -= 1
                    elif rules.short_hand_ante == "plus_one":
                        chips += 1
                if chips > 0:
                    self._emit(ANTE, seat, detail={"chips": chips})
                    deal.seats[seat].to_pot += chips
                    deal.pot += chips
        if rules.starters == "placed_from_hands":  # SV-7, D-12
            for suit in SUITS:
                card = Card(suit, starter)
                holder = next(s for s in range(n) if card in deal.seats[s].hand)
                deal.to_table(holder, card)
                self._emit(
                    EventKind.PLAY,
                    holder,
                    action=str(card),
                    reason="starter",
                    source=Source.FORCED,
                )
        return deal

    def _end_deal(self) -> None:
        rules = self.rules
        deal = self.deal
        winner = deal.winner
        assert winner is not None
        n = self.n
        starter = Rank.parse(rules.starter_rank)
        left: list[list[Card]] = []
        for state in deal.seats:
            left.append(state.cards_at_elimination if state.eliminated else sorted(state.hand))
        cards_left = [len(cards) for cards in left]
        card_pen = [0 if s == winner else card_penalty(rules, left[s]) for s in range(n)]
        seven_pen = [
            0 if s == winner else rules.seven_penalty * sum(c.rank == starter for c in left[s])
            for s in range(n)
        ]
        for seat in range(n):
            if card_pen[seat] > 0:
                deal.penalties.append(PenaltyRecord(seat, "card_penalty", card_pen[seat]))
            if seven_pen[seat] > 0:
                deal.penalties.append(PenaltyRecord(seat, "seven_penalty", seven_pen[seat]))
        deltas = [0] * n
        if rules.scoring == "winner_only":
            deltas[winner] = 1  # SV-26
        elif rules.scoring == "chips":  # SV-27, SV-29, SV-30, D-52
            for seat in range(n):
                deltas[seat] -= deal.seats[seat].to_pot
            deltas[winner] += deal.pot
            for seat in range(n):
                if seat == winner:
                    continue
                owed = card_pen[seat] + seven_pen[seat] + deal.seats[seat].owed_to_winner
                deltas[seat] -= owed
                deltas[winner] += owed
            assert sum(deltas) == 0  # SV-31
        else:  # penalty points (D-5)
            for seat in range(n):
                deltas[seat] = deal.seats[seat].points + card_pen[seat] + seven_pen[seat]
        # D-54: winner, then the others by the deal's penalty measure, eliminated last.
        if rules.card_penalty in ("pips", "face_ten"):
            measure = [card_penalty(rules, left[s]) for s in range(n)]
        else:
            measure = cards_left
        others = [s for s in range(n) if s != winner and not deal.seats[s].eliminated]
        order: list[tuple[int, ...]] = [(winner,)]
        for value in sorted({measure[s] for s in others}):
            order.append(tuple(s for s in others if measure[s] == value))
        out = [s for s in range(n) if deal.seats[s].eliminated and s != winner]
        if out:
            order.append(tuple(out))
        detail: dict[str, Any] = {
            "cards_left": cards_left,
            "end": deal.end,
            "pot": deal.pot,
            "dealer": deal.dealer,
            "first": deal.first,
        }
        if self.tiebreak is not None:
            # D-60: the extra deal scores nothing (extra_deal) or only for the untied seats.
            detail["tiebreak"] = self.tiebreak
            for seat in range(n):
                if self.tiebreak == "extra_deal" or seat in self.tied:
                    deltas[seat] = 0
        self._emit(
            EventKind.DEAL_END,
            winner,
            reason=deal.end,  # the engine's choice (D-42 names the same code in detail.end)
            detail={"deltas": list(deltas), "cards_left": cards_left},
        )
        self.results.append(
            DealResult(
                deal=deal.index,
                winner=winner,
                order=tuple(order),
                deltas=tuple(deltas),
                penalties=tuple(deal.penalties),
                detail=detail,
            )
        )
        for seat in range(n):
            self.totals[seat] += deltas[seat]
        played = len(self.results)
        if self.tiebreak is not None:
            self._finish()
            return
        broke = rules.until_broke and any(total <= 0 for total in self.totals)
        if played < self.planned and not broke:
            self.deal = self._start_deal(played)
            return
        groups = self.groups_by_totals()
        if rules.match_tiebreak in ("extra_deal", "showdown") and len(groups[0]) > 1:
            self.tiebreak = rules.match_tiebreak
            self.tied = list(groups[0])
            self.deal = self._start_deal(played)
            return
        self._finish()

    def groups_by_totals(self) -> list[tuple[int, ...]]:
        """Seats grouped by match totals, best first (before any tie-break)."""
        sign = 1 if self.rules.scoring != "penalty_points" else -1
        values = sorted({self.totals[s] for s in range(self.n)}, key=lambda v: -sign * v)
        return [tuple(s for s in range(self.n) if self.totals[s] == v) for v in values]

    def _finish(self) -> None:
        rules = self.rules
        groups = self.groups_by_totals()
        last = self.results[-1]
        if self.tiebreak is not None:
            # D-60: the tied seats are ordered by the extra deal's order.
            tied = set(self.tied)
            split = [tuple(s for s in g if s in tied) for g in last.order]
            split = [g for g in split if g]
            rest = [tuple(s for s in g if s not in tied) for g in groups]
            groups = split + [g for g in rest if g]
        elif rules.match_tiebreak == "fewest_cards_last_deal":
            cards = last.detail["cards_left"]
            new_groups: list[tuple[int, ...]] = []
            for group in groups:
                for value in sorted({cards[s] for s in group}):
                    new_groups.append(tuple(s for s in group if cards[s] == value))
            groups = new_groups
        self._emit(EventKind.MATCH_END, None, detail={"totals": list(self.totals)})
        self.final = MatchResult(
            totals=tuple(self.totals),
            unit={"winner_only": "deals_won", "chips": "chips", "penalty_points": "penalty_points"}[
                rules.scoring
            ],
            higher_is_better=rules.scoring != "penalty_points",
            order=tuple(groups),
            winners=groups[0],
            deals=tuple(self.results),
        )
