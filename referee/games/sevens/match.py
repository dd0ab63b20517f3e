"""A Sevens-family match: a sequence of deals under one rules object.

The whole state lives in one object and in bit masks (see ``tables.py``), because
legal-action generation and ``apply`` are the hot path of every season. The rules of
docs/RULES.md part 1 are cited by clause; the project's interpretations are ``D-n`` in
``docs/SEVENS_DECISIONS.md``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any

from referee.games import record
from referee.games.base import (
    PASS,
    RUN_SEPARATOR,
    DealHistory,
    DealResult,
    DealSpec,
    Event,
    EventKind,
    Match,
    MatchResult,
    Observation,
    PenaltyRecord,
    Rules,
    Source,
    action_sort_key,
    build_observation,
    derive_seed,
)
from referee.games.cards import Card
from referee.games.errors import CardParseError, InvalidRulesError, MatchStateError
from referee.games.sevens.rules import UNTIL_BROKE_DEFAULT_CAP, SevensRules
from referee.games.sevens.tables import (
    _MASK_ACTIONS,
    CARD_INDEX,
    CARD_TEXT,
    ROW_BITS,
    SUIT_NAMES,
    SUIT_SINGULAR,
    Tables,
    bits,
    mask_actions,
    pass_event,
    play_event,
    tables_for,
)

GAME_NAME = "sevens"
_PASS_ONLY = (PASS,)
_BOT = Source.BOT
_BIT = tuple(1 << i for i in range(52))
_BOT_PLAYS: dict[int, list[Event | None]] = {}
"""Per deal index, the ``play`` event of each (seat, card) chosen by a bot: events are
immutable, so every match shares them (the fast path allocates no event)."""


def _bot_plays(deal: int) -> list[Event | None]:
    if deal >= 64:
        return [None] * (8 * 52)
    return _BOT_PLAYS.setdefault(deal, [None] * (8 * 52))


MAX_ACTION_TEXT = 64
SUIT_LETTERS = "CDHS"


def derive_deal_seed(match_seed: int, deal: int) -> int:
    """The seed of deal ``deal`` when the match makes its own deal specs (D-11): the low
    63 bits of :func:`referee.games.base.derive_seed` of ``(match_seed, deal)``. D-11 is
    documented and every recorded self-play match was dealt by it, so it keeps the low
    bits where the seasons and Sedma keep the high ones (the same digest, another mask).
    """
    return derive_seed(match_seed, deal, keep="low")


def _run_key(action: str) -> tuple[int, int, int, tuple[int, ...]]:
    """Canonical order with the D-32 tie-break (card indices) for runs from a starter."""
    a, b, c = action_sort_key(action)
    if action == PASS:
        return (a, b, c, ())
    return (a, b, c, tuple(CARD_INDEX[t] for t in action.split(RUN_SEPARATOR)))


def _mask_of(cards: Sequence[str]) -> int:
    mask = 0
    for text in cards:
        bit = 1 << Card.parse(text).index
        if mask & bit:
            raise MatchStateError(f"card {text} is listed twice (SV-6)")
        mask |= bit
    return mask


class SevensMatch(Match):
    """A match in progress; implements ``referee.games.base.Match``."""

    game: str = GAME_NAME

    def __init__(
        self,
        rules: SevensRules,
        num_players: int,
        seed: int,
        deals: Sequence[DealSpec] | None = None,
        *,
        hands: Sequence[Sequence[str]] | None = None,
        table: Sequence[str] = (),
    ) -> None:
        """``hands`` (and ``table``) stack the first deal instead of shuffling it: for
        tests and puzzles. Hands and table together must hold the deck exactly once (the
        cards on ``table`` lie at their positions, as after an elimination, SV-23)."""
        if not 3 <= num_players <= 8:
            raise InvalidRulesError(
                f"sevens is for 3 to 8 players (SV-1), not {num_players}: pick 3..8"
            )
        if deals is not None and len(deals) == 0:
            raise InvalidRulesError("deals must list at least one DealSpec (or be None)")
        for i, spec in enumerate(deals or ()):
            if spec.dealer is not None and not 0 <= spec.dealer < num_players:
                raise InvalidRulesError(
                    f"deal {i}: dealer {spec.dealer} is not a seat: use 0..{num_players - 1} "
                    "or None for the normal rotation"
                )
        self.rules: Rules = rules
        self._rules = rules
        self.num_players = num_players
        self.seed = seed
        self._specs: tuple[DealSpec, ...] | None = None if deals is None else tuple(deals)
        self._t: Tables = tables_for(rules)
        self._stacked: tuple[list[int], int] | None = None
        if hands is not None:
            if len(hands) != num_players:
                raise MatchStateError(
                    f"hands must list one hand per seat ({num_players}), not {len(hands)}"
                )
            masks = [_mask_of(hand) for hand in hands]
            self._stacked = (masks, _mask_of(table))
        n = num_players
        if self._specs is not None:
            self._scheduled = len(self._specs)
        elif rules.until_broke:
            self._scheduled = rules.deals or UNTIL_BROKE_DEFAULT_CAP
        else:
            self._scheduled = rules.deals or n
        self._events: list[Event] = []
        self._history = DealHistory()  # the current deal's history items, built once each
        self._rules_dict = rules.to_dict()  # the rules are frozen: their dict, built once
        self._log: list[tuple[int, str | None, str]] = []  # (seat, action or None, source)
        self._results: list[DealResult] = []
        self._initial: list[list[int]] = []
        self._net = [0] * n  # sum of deltas per seat
        self._over = False
        self._tiebreak: str | None = None  # "extra_deal" / "showdown" while that deal runs
        self._tied: tuple[int, ...] = ()
        self._tiebreak_result: DealResult | None = None
        self._multi = rules.multi_card_turn
        self._pass_ok_when_able = rules.free_passes > 0 or not rules.must_play
        self._simple = not self._multi and not self._pass_ok_when_able
        self._row_cache = self._t.row_cache
        self._start_deal(0)

    # ------------------------------------------------------------------ deal start

    def _spec(self, d: int) -> DealSpec:
        if self._specs is not None and d < len(self._specs):
            spec = self._specs[d]
            if spec.dealer is None:
                return DealSpec(spec.seed, spec.rotation, d % self.num_players)
            return spec
        dealer = d % self.num_players
        return DealSpec(derive_deal_seed(self.seed, d), (dealer + 1) % self.num_players, dealer)

    def _start_deal(self, d: int) -> None:
        r = self._rules
        t = self._t
        n = self.num_players
        spec = self._spec(d)
        dealer = spec.dealer if spec.dealer is not None else d % n
        if not 0 <= dealer < n:
            raise MatchStateError(f"deal {d}: dealer {dealer} is not a seat of 0..{n - 1}")
        table = t.starters_mask if r.starters == "removed_before_deal" else 0
        if d == 0 and self._stacked is not None:
            hands = list(self._stacked[0])
            table |= self._stacked[1]
        else:
            cards = list(t.dealt)
            random.Random(spec.seed).shuffle(cards)
            hands = [0] * n
            # SV-4, D-10: dealt one card at a time from the dealer's left, so card k goes to
            # seat (dealer + 1 + k) % n and the seats left of the dealer get the extra cards.
            # Distinct bits: sum == or.
            for i in range(n):
                hands[(dealer + 1 + i) % n] = sum(map(_BIT.__getitem__, cards[i::n]))
        # SV-6: a seeded deal cannot misdeal, but check the cards anyway.
        union = table
        total = table.bit_count()
        for mask in hands:
            union |= mask
            total += mask.bit_count()
        sizes = [mask.bit_count() for mask in hands]
        if union != t.deck_mask or total != t.deck_mask.bit_count():
            missing = " ".join(mask_actions(t.deck_mask & ~union)) or "none"
            extra = " ".join(mask_actions(union & ~t.deck_mask)) or "none"
            raise MatchStateError(
                f"deal {d}: corrupt deal (SV-6): hands and table must hold every card of the "
                f"{r.deck} deck exactly once; hand sizes {sizes}, missing {missing}, "
                f"not in the deck {extra}, {total} cards for {t.deck_mask.bit_count()}"
            )
        if d == 0 and self._stacked is not None and not self._stacked[1]:
            # A stacked fresh deal (nothing on the table) must have the sizes of a real one.
            small, bigger = divmod(total - table.bit_count(), n)
            want = [small] * n
            for k in range(bigger):
                want[(dealer + 1 + k) % n] += 1
            if sizes != want:
                raise MatchStateError(
                    f"deal {d}: wrong hand sizes (SV-6): hands of {sizes} cards, but "
                    f"{total - table.bit_count()} cards dealt to {n} seats from the left of "
                    f"dealer {dealer} make hands of {want} (SV-4); stack the cards already "
                    "played as table=... for a position after the start"
                )
        self._initial.append(list(hands))
        self._deal = d
        self._bot_plays = _bot_plays(d)
        self._dealer = dealer
        self._hands = hands
        self._table = table
        self._passes = [0] * n
        self._free_left = [r.free_passes] * n
        self._vol = [0] * n
        self._elim = [False] * n
        self._elim_mask = [0] * n
        self._elim_order: list[int] = []
        self._skip = [False] * n
        self._special = False  # any seat eliminated or skipping (slow turn advance)
        self._pot = 0
        self._paid = [0] * n  # chips each seat put into the pot this deal
        self._owed = [0] * n  # illegal-pass chips owed to the winner (payee = winner)
        self._points = [0] * n  # penalty points this deal (penalty_points games)
        self._penalties: list[PenaltyRecord] = []
        self._deal_event_start = len(self._events)
        self._opening_pending = t.opening_index >= 0 and not (self._table >> t.opening_index) & 1
        self._refresh()
        # Who acts first (SV-13..SV-16, D-20).
        left = (dealer + 1) % n
        if r.opening in ("seven_of_diamonds", "seven_of_hearts"):
            holders = [s for s in range(n) if (hands[s] >> t.opening_index) & 1]
            first = holders[0] if holders else left
        elif r.opening == "left_of_dealer_diamond" and self._results:
            prev = self._results[-1].winner
            first = left if prev is None else prev
        else:
            first = left
        self._first = first
        self._to_act = first
        self._legal: tuple[str, ...] | None = None
        events = self._events
        events.append(
            Event(
                EventKind.DEAL_START,
                None,
                d,
                detail={"dealer": dealer, "first": first},
            )
        )
        # Antes (SV-27, SV-28, D-53).
        if r.ante:
            uneven = min(sizes) != max(sizes)
            for s in range(n):
                amount = r.ante
                if uneven and sizes[s] == min(sizes):
                    if r.short_hand_ante == "minus_one":
                        amount -= 1
                    elif r.short_hand_ante == "plus_one":
                        amount += 1
                if amount > 0:
                    self._pay_pot(s, amount)
                    events.append(Event("ante", s, d, detail={"chips": amount}))
        # Starters laid down by their holders (SV-7 placed_from_hands, D-12).
        if r.starters == "placed_from_hands":
            for s in range(4):
                idx = 13 * s + t.starter_bit
                holders = [p for p in range(n) if (hands[p] >> idx) & 1]
                if not holders:  # a stacked deal with this starter on the table already
                    continue
                holder = holders[0]
                hands[holder] &= ~(1 << idx)
                self._table |= 1 << idx
                self._refresh()
                events.append(
                    Event(
                        EventKind.PLAY,
                        holder,
                        d,
                        CARD_TEXT[idx],
                        "starter",
                        Source.FORCED,
                        {},
                    )
                )
            for s in range(n):
                if hands[s] == 0:  # cannot happen with 3..8 players; handled anyway
                    self._end_deal(s, "out")
                    return

    def _pay_pot(self, seat: int, amount: int) -> None:
        if self._rules.scoring == "penalty_points":
            self._points[seat] += amount
        else:
            self._pot += amount
            self._paid[seat] += amount

    def _refresh(self) -> None:
        """Recompute the playable mask from the table (D-20, D-30, D-31)."""
        t = self._t
        table = self._table
        if self._opening_pending:
            if (table >> t.opening_index) & 1:
                self._opening_pending = False
            else:
                self._playable = 1 << t.opening_index
                return
        playable = 0
        for s in range(4):
            playable |= t.row_playable((table >> (13 * s)) & ROW_BITS) << (13 * s)
        self._playable = playable

    # ------------------------------------------------------------------ queries

    def is_over(self) -> bool:
        return self._over

    def to_act(self) -> int:
        if self._over:
            raise MatchStateError("the match is over: nobody is to act")
        return self._to_act

    def deal_index(self) -> int:
        return self._deal

    @property
    def sevens_rules(self) -> SevensRules:
        return self._rules

    def held_masks(self) -> tuple[int, tuple[int, ...]]:
        """The cards on the table and each seat's hand as masks (bit ``Card.index``): the
        whole deal, for analysis of full records (``referee.games.collusion``)."""
        return self._table, tuple(self._hands)

    def _scheduled_deals(self) -> int:
        return 0 if self._rules.until_broke and self._specs is None else self._scheduled

    def legal_actions(self) -> list[str]:
        legal = self._legal
        if legal is None:
            if self._over:
                return []
            able = self._hands[self._to_act] & self._playable
            if self._simple:
                legal = _MASK_ACTIONS.get(able) if able else _PASS_ONLY
                if legal is None:
                    legal = mask_actions(able)
            else:
                legal = self._compute_legal(self._to_act)
            self._legal = legal
        return list(legal)

    def _compute_legal(self, seat: int) -> tuple[str, ...]:
        able = self._hands[seat] & self._playable
        if not able:
            return (PASS,)
        singles = mask_actions(able)
        if self._multi:
            actions = list(singles) + self._runs(seat)
            actions.sort(key=_run_key)
        else:
            actions = list(singles)
        if self._pass_ok_when_able and self._pass_kind(seat, able) != "illegal":
            actions.append(PASS)
        return tuple(actions)

    def _pass_kind(self, seat: int, able: int) -> str:
        """Which pass ``seat`` would make now (D-40)."""
        if not able:
            return "forced"
        if self._free_left[seat] > 0:
            return "free"
        r = self._rules
        if not r.must_play and (
            r.max_voluntary_passes == 0 or self._vol[seat] < r.max_voluntary_passes
        ):
            return "voluntary"
        return "illegal"

    def _runs(self, seat: int) -> list[str]:
        """Every run of two or more cards ``seat`` may play now (SV-11, D-32)."""
        t = self._t
        hand = self._hands[seat]
        out: list[str] = []
        for first in bits(hand & self._playable):
            suit = first // 13
            shift = 13 * suit
            first_pos = t.pos_of_bit[first - shift]
            row_before = (self._table >> shift) & ROW_BITS
            if first - shift == t.starter_bit:
                directions: tuple[bool, ...] = (False, True)  # from a starter: down or up
            else:
                directions = (first_pos > t.starter_pos,)
            for going_up in directions:
                row = row_before | (1 << (first - shift))
                pos = first_pos
                run = [CARD_TEXT[first]]
                while True:
                    nxt = -1
                    for b in bits(t.row_playable(row)):
                        p = t.pos_of_bit[b]
                        if (going_up and p > pos) or (not going_up and p < pos):
                            nxt = b
                    if nxt < 0 or not (hand >> (shift + nxt)) & 1:
                        break
                    run.append(CARD_TEXT[shift + nxt])
                    out.append(RUN_SEPARATOR.join(run))
                    row |= 1 << nxt
                    pos = t.pos_of_bit[nxt]
        return out

    def check(self, action: str) -> str | None:
        if self._over:
            return "the match is over: no action is expected"
        seat = self._to_act
        if action == PASS:
            able = self._hands[seat] & self._playable
            if self._pass_kind(seat, able) != "illegal":
                return None
            plays = ", ".join(mask_actions(able))
            why = "must_play is on (SV-18)"
            if self._rules.free_passes:
                why = "no free passes are left (SV-22) and " + why
            elif not self._rules.must_play:
                why = f"the {self._rules.max_voluntary_passes} voluntary passes are used up"
            return f"pass is not allowed: you hold a playable card ({plays}); {why}"
        _reason, message, _canon = self._classify(action)
        return message

    def _classify(self, action: str) -> tuple[str | None, str | None, str | None]:
        """(reason code, message, canonical action); reason None means legal."""
        seat = self._to_act
        text = action if isinstance(action, str) else repr(action)
        parts = text.split(RUN_SEPARATOR, 52)
        try:
            cards = [Card.parse(p) for p in parts]
        except (CardParseError, ValueError, TypeError):
            shown = text[:MAX_ACTION_TEXT]
            return (
                "malformed",
                f"{shown!r} is not an action: send a card (7D), a run (8D+9D) where "
                "multi_card_turn is on, or pass",
                None,
            )
        canon = RUN_SEPARATOR.join(str(c) for c in cards)
        hand = self._hands[seat]
        for card in cards:
            if not (self._t.deck_mask >> card.index) & 1:
                return (
                    "not_held",
                    f"{card} is not in the {self._rules.deck} deck; your hand is "
                    f"{' '.join(mask_actions(hand))}",
                    canon,
                )
            if not (hand >> card.index) & 1:
                return (
                    "not_held",
                    f"you do not hold {card}; your hand is {' '.join(mask_actions(hand))}",
                    canon,
                )
        if len(cards) != len(set(cards)):
            return "not_legal", f"{canon} names a card twice", canon
        if len(cards) == 1:
            if (self._playable >> cards[0].index) & 1:
                return None, None, canon
            return "not_legal", self._not_playable_message(cards[0]), canon
        if not self._multi:
            return (
                "not_legal",
                f"{canon} plays several cards, but multi_card_turn is off: play one card",
                canon,
            )
        runs = self._runs(seat)
        if canon in runs:
            return None, None, canon
        if not (self._playable >> cards[0].index) & 1:
            return "not_legal", self._not_playable_message(cards[0]), canon
        legal_runs = ", ".join(run for run in runs if run.startswith(str(cards[0]))) or "none"
        return (
            "not_legal",
            f"{canon} is not a run: each card must be playable after the previous one "
            f"in one direction; runs from {cards[0]}: {legal_runs}",
            canon,
        )

    def _row_text(self, suit: int) -> str:
        t = self._t
        row = (self._table >> (13 * suit)) & ROW_BITS
        groups: list[list[str]] = []
        last = -2
        for pos, b in enumerate(t.order):
            if (row >> b) & 1:
                text = CARD_TEXT[13 * suit + b]
                if pos == last + 1:
                    groups[-1].append(text)
                else:
                    groups.append([text])
                last = pos
        return ", ".join(g[0] if len(g) == 1 else f"{g[0]}-{g[-1]}" for g in groups)

    def _not_playable_message(self, card: Card) -> str:
        t = self._t
        suit = int(card.suit)
        if self._opening_pending:
            return (
                f"{card} is not playable: {CARD_TEXT[t.opening_index]} must be played first "
                "(SV-13, SV-14)"
            )
        row = (self._table >> (13 * suit)) & ROW_BITS
        starter = CARD_TEXT[13 * suit + t.starter_bit]
        if not (row >> t.starter_bit) & 1:
            return (
                f"{card} is not playable: the {SUIT_NAMES[suit]} row is not open; "
                f"it opens with {starter}"
            )
        playable = mask_actions(self._playable & (ROW_BITS << (13 * suit)))
        if not playable:
            plays = f"no {SUIT_SINGULAR[suit]} is playable"
        elif len(playable) == 1:
            plays = f"the playable {SUIT_SINGULAR[suit]} is {playable[0]}"
        else:
            plays = f"playable {SUIT_NAMES[suit]} are {' and '.join(playable)}"
        extra = ""
        if self._rules.eights_before_sixes and t.starter_pos + 1 < t.row_len:
            above = 13 * suit + t.order[t.starter_pos + 1]
            if not (self._table >> above) & 1:
                extra = f" ({CARD_TEXT[above]} must come before the cards below {starter}: SV-12)"
        return (
            f"{card} is not playable: the {SUIT_NAMES[suit]} row runs {self._row_text(suit)}; "
            f"{plays}{extra}"
        )

    def fallback_action(self) -> str:
        if self._over:
            raise MatchStateError("the match is over: there is no fallback action")
        return self.legal_actions()[0]

    # ------------------------------------------------------------------ applying

    def apply(self, action: str, source: str = Source.BOT) -> list[Event]:
        if self._over:
            raise MatchStateError("the match is over: no action can be applied")
        seat = self._to_act
        try:
            idx = CARD_INDEX.get(action, -1)
        except TypeError:  # not even a string
            idx = -1
        if idx >= 0:
            bit = 1 << idx
            hand = self._hands[seat]
            if hand & self._playable & bit:
                # Fast path: a legal single card in canonical form (the hot path).
                self._log.append((seat, action, source))
                if source == _BOT:
                    key = seat * 52 + idx
                    event = self._bot_plays[key]
                    if event is None:
                        event = Event("play", seat, self._deal, action, None, _BOT, {})
                        self._bot_plays[key] = event
                else:
                    event = play_event(seat, self._deal, action, source)
                events = self._events
                events.append(event)
                hand ^= bit
                self._hands[seat] = hand
                table = self._table | bit
                self._table = table
                shift = idx - idx % 13
                row = (table >> shift) & ROW_BITS
                playable = self._row_cache.get(row)
                if playable is None:
                    playable = self._t.row_playable(row)
                if self._opening_pending:
                    self._refresh()
                else:
                    self._playable = (self._playable & ~(ROW_BITS << shift)) | (playable << shift)
                self._legal = None
                if not hand:
                    start = len(events) - 1
                    self._end_deal(seat, "out")  # SV-25
                    return events[start:]
                if self._special:
                    start = len(events) - 1
                    self._advance(seat)  # may record skipped turns
                    return events[start:]
                self._to_act = seat + 1 if seat + 1 < self.num_players else 0
                return [event]
        if not isinstance(action, str):  # typed str, but a record must replay whatever came
            action = repr(action)
        self._log.append((seat, action, source))
        start = len(self._events)
        finished = len(self._results)
        if action == PASS:
            self._do_pass(seat, source)
            if len(self._results) == finished:
                self._advance(seat)
            return self._events[start:]
        reason, message, canon = self._classify(action)
        if reason is None:
            assert canon is not None
            self._events.append(play_event(seat, self._deal, canon, source))
            for text in canon.split(RUN_SEPARATOR):
                self._place(seat, 1 << CARD_INDEX[text])
            self._after_play(seat)
            return self._events[start:]
        shown = action[:MAX_ACTION_TEXT]
        self._events.append(
            Event(
                EventKind.INVALID_ACTION,
                seat,
                self._deal,
                shown,
                reason,
                source,
                {"message": message},
            )
        )
        self._do_pass(seat, source)  # SV-21
        if len(self._results) == finished:
            self._advance(seat)
        return self._events[start:]

    def apply_timeout(self) -> list[Event]:
        if self._over:
            raise MatchStateError("the match is over: nobody can time out")
        seat = self._to_act
        self._log.append((seat, None, Source.BOT))
        start = len(self._events)
        self._events.append(Event(EventKind.TIMEOUT, seat, self._deal, None, "timeout"))
        finished = len(self._results)
        self._do_pass(seat, Source.BOT)
        if len(self._results) == finished:
            self._advance(seat)
        return self._events[start:]

    def _place(self, seat: int, bit: int) -> None:
        self._hands[seat] &= ~bit
        self._table |= bit
        self._refresh()

    def _after_play(self, seat: int) -> None:
        self._legal = None
        if self._hands[seat] == 0:
            self._end_deal(seat, "out")  # SV-25
        else:
            self._advance(seat)

    def _advance(self, seat: int) -> None:
        """Give the turn to the next seat clockwise (D-21)."""
        self._legal = None
        n = self.num_players
        nxt = seat + 1 if seat + 1 < n else 0
        if not self._special:
            self._to_act = nxt
            return
        while True:
            if self._elim[nxt]:
                nxt = (nxt + 1) % n
                continue
            if self._skip[nxt]:
                self._skip[nxt] = False
                self._special = any(self._skip) or any(self._elim)
                self._events.append(pass_event(nxt, self._deal, "skipped", Source.FORCED, 0))
                nxt = (nxt + 1) % n
                continue
            break
        self._to_act = nxt

    def _do_pass(self, seat: int, source: str) -> None:
        """A pass by ``seat``: forced, free, voluntary or illegal (D-40, D-41)."""
        r = self._rules
        d = self._deal
        self._legal = None
        able = self._hands[seat] & self._playable
        kind = self._pass_kind(seat, able)
        events = self._events
        if kind == "illegal":
            # SV-17: every pass pays pass_chips; SV-19's penalty comes on top (D-44).
            cost = r.pass_chips if r.illegal_pass_also_pays_pass else 0
            events.append(
                Event(
                    EventKind.ILLEGAL_PASS,
                    seat,
                    d,
                    PASS,
                    "illegal_pass",
                    source,
                    {"chips": cost} if cost else {},
                )
            )
            if cost:
                self._pay_pot(seat, cost)
            penalty = r.illegal_pass_penalty
            if penalty == "lose_turn":
                self._skip[seat] = True
                self._special = True
                self._penalties.append(PenaltyRecord(seat, "illegal_pass", 0))
            elif penalty == "chips":
                amount = r.illegal_pass_chips
                payee = r.illegal_pass_payee
                events.append(
                    Event(
                        EventKind.PENALTY,
                        seat,
                        d,
                        None,
                        "illegal_pass",
                        source,
                        {"chips": amount, "payee": payee},
                    )
                )
                self._penalties.append(PenaltyRecord(seat, "illegal_pass", amount))
                if r.scoring == "penalty_points":
                    self._points[seat] += amount
                elif payee == "pot":
                    self._pay_pot(seat, amount)
                else:
                    self._owed[seat] += amount
            self._passes[seat] += 1
            if penalty == "forfeit_deal":
                self._penalties.append(PenaltyRecord(seat, "illegal_pass", 0))
                self._eliminate(seat, "forfeit", source)
                return
        else:
            if kind == "forced":
                cost = r.pass_chips
            elif kind == "free":
                cost = 0
                self._free_left[seat] -= 1
            else:
                cost = r.voluntary_pass_chips
                self._vol[seat] += 1
            if cost:
                self._pay_pot(seat, cost)
            events.append(pass_event(seat, d, kind, source, cost))
            self._passes[seat] += 1
        if r.pass_elimination and self._passes[seat] > r.pass_elimination:
            self._eliminate(seat, "pass_limit", source)  # SV-23

    def _eliminate(self, seat: int, reason: str, source: str) -> None:
        """Out of the deal; the seat's cards go to the table at their positions (SV-23)."""
        hand = self._hands[seat]
        self._elim[seat] = True
        self._elim_mask[seat] = hand
        self._elim_order.append(seat)
        self._special = True
        self._skip[seat] = False
        self._hands[seat] = 0
        self._table |= hand
        self._refresh()
        self._penalties.append(PenaltyRecord(seat, reason, 0))
        self._events.append(Event(EventKind.ELIMINATED, seat, self._deal, None, reason, source))
        active = [s for s in range(self.num_players) if not self._elim[s]]
        if len(active) == 1:
            self._end_deal(active[0], "last_active")  # D-42

    # ------------------------------------------------------------------ deal end

    def _end_deal(self, winner: int, end: str) -> None:
        r = self._rules
        t = self._t
        n = self.num_players
        d = self._deal
        held = [self._elim_mask[s] if self._elim[s] else self._hands[s] for s in range(n)]
        cards_left = [mask.bit_count() for mask in held]
        penalties = list(self._penalties)
        deltas = [0] * n
        if r.scoring == "winner_only":
            deltas[winner] = 1
        else:
            points = r.scoring == "penalty_points"
            for s in range(n):
                if points:
                    deltas[s] += self._points[s]
                else:
                    deltas[s] -= self._paid[s]
                if s == winner:
                    continue
                card_pen = t.card_penalty(held[s])
                seven_pen = t.seven_penalty(held[s])
                if card_pen:
                    penalties.append(PenaltyRecord(s, "card_penalty", card_pen))
                if seven_pen:
                    penalties.append(PenaltyRecord(s, "seven_penalty", seven_pen))
                owed = card_pen + seven_pen + (0 if points else self._owed[s])
                if points:
                    deltas[s] += owed
                else:
                    deltas[s] -= owed
                    deltas[winner] += owed
            if not points:
                deltas[winner] += self._pot
        # Order (D-54): winner, losers by measure (ties grouped), eliminated last.
        losers = [s for s in range(n) if s != winner and not self._elim[s]]
        by_measure: dict[int, list[int]] = {}
        for s in losers:
            by_measure.setdefault(t.measure(held[s]), []).append(s)
        order: list[tuple[int, ...]] = [(winner,)]
        order.extend(tuple(by_measure[m]) for m in sorted(by_measure))
        eliminated = tuple(s for s in range(n) if self._elim[s] and s != winner)
        if eliminated:
            order.append(eliminated)
        detail: dict[str, Any] = {
            "cards_left": cards_left,
            "end": end,
            "pot": self._pot,
            "dealer": self._dealer,
            "first": self._first,
        }
        if self._tiebreak is not None:
            detail["tiebreak"] = self._tiebreak
            detail["raw_deltas"] = list(deltas)
            tied = set(self._tied)
            if self._tiebreak == "extra_deal":
                deltas = [0] * n
            else:
                deltas = [0 if s in tied else deltas[s] for s in range(n)]
        result = DealResult(
            deal=d,
            winner=winner,
            order=tuple(order),
            deltas=tuple(deltas),
            penalties=tuple(penalties),
            detail=detail,
        )
        self._results.append(result)
        for s in range(n):
            self._net[s] += deltas[s]
        self._events.append(
            Event(
                EventKind.DEAL_END,
                winner,
                d,
                None,
                end,
                Source.BOT,
                {"deltas": list(deltas), "cards_left": cards_left},
            )
        )
        self._legal = None
        if self._tiebreak is not None:
            self._tiebreak_result = result
            self._tiebreak = None
            self._finish()
            return
        done = len(self._results) >= self._scheduled
        if r.until_broke and min(self.totals()) <= 0:
            done = True
        if not done:
            self._start_deal(d + 1)
            return
        if r.match_tiebreak in ("extra_deal", "showdown"):
            first = self._groups_by_totals()[0]
            if len(first) > 1:
                self._tiebreak = r.match_tiebreak
                self._tied = first
                self._start_deal(d + 1)
                return
        self._finish()

    def totals(self) -> list[int]:
        """Every seat's running match score in the rules' unit."""
        base = self._rules.starting_chips if self._rules.scoring == "chips" else 0
        return [base + x for x in self._net]

    def _groups_by_totals(self) -> list[tuple[int, ...]]:
        totals = self.totals()
        sign = -1 if self._rules.higher_is_better else 1
        groups: dict[int, list[int]] = {}
        for s in range(self.num_players):
            groups.setdefault(sign * totals[s], []).append(s)
        return [tuple(groups[k]) for k in sorted(groups)]

    def _final_order(self) -> list[tuple[int, ...]]:
        groups = self._groups_by_totals()
        r = self._rules
        if r.match_tiebreak == "fewest_cards_last_deal" and self._results:
            left = self._results[-1].detail["cards_left"]
            out: list[tuple[int, ...]] = []
            for group in groups:
                split: dict[int, list[int]] = {}
                for s in group:
                    split.setdefault(left[s], []).append(s)
                out.extend(tuple(split[k]) for k in sorted(split))
            return out
        extra = self._tiebreak_result
        if extra is not None:
            rank = {s: i for i, group in enumerate(extra.order) for s in group}
            out = []
            for group in groups:
                if set(group) & set(self._tied):
                    split = {}
                    for s in group:
                        split.setdefault(rank[s], []).append(s)
                    out.extend(tuple(split[k]) for k in sorted(split))
                else:
                    out.append(group)
            return out
        return groups

    def _finish(self) -> None:
        self._over = True
        self._legal = None
        self._events.append(
            Event(
                EventKind.MATCH_END,
                None,
                self._deal,
                detail={"totals": self.totals()},
            )
        )

    # ------------------------------------------------------------------ views

    def events(self) -> list[Event]:
        return list(self._events)

    def deal_results(self) -> list[DealResult]:
        return list(self._results)

    def result(self) -> MatchResult:
        if not self._over:
            raise MatchStateError(
                f"the match is not over (deal {self._deal + 1} of {self._scheduled} in play): "
                "ask for the result after is_over() is true"
            )
        order = self._final_order()
        return MatchResult(
            totals=tuple(self.totals()),
            unit=self._rules.unit,
            higher_is_better=self._rules.higher_is_better,
            order=tuple(order),
            winners=order[0],
            deals=tuple(self._results),
        )

    def initial_hands(self) -> list[list[list[str]]]:
        return [[list(mask_actions(mask)) for mask in deal] for deal in self._initial]

    def observation(self, seat: int) -> Observation:
        if not 0 <= seat < self.num_players:
            raise MatchStateError(f"seat {seat} is not a seat of 0..{self.num_players - 1}")
        t = self._t
        texts = t.row_text
        table: dict[str, list[str]] = {}
        for s in range(4):
            key = s << 13 | (self._table >> (13 * s)) & ROW_BITS
            text = texts.get(key)
            if text is None:  # the row's cards in the rules' rank order, made once per row
                row = key & ROW_BITS
                text = texts[key] = tuple(CARD_TEXT[13 * s + b] for b in t.order if (row >> b) & 1)
            table[SUIT_LETTERS[s]] = list(text)
        r = self._rules
        common = build_observation(
            game=GAME_NAME,
            preset=r.name,
            rules=dict(self._rules_dict),
            seat=seat,
            num_players=self.num_players,
            deal_index=self._deal,
            num_deals=self._scheduled_deals(),
            dealer=self._dealer,
            to_act=-1 if self._over else self._to_act,
            hand=list(mask_actions(self._hands[seat])),
            hand_sizes=[mask.bit_count() for mask in self._hands],
            totals=self.totals(),
            unit=r.unit,
            history=self._history.view(self._events, self._deal_event_start, seat),
        )
        common["table"] = table
        common["pot"] = self._pot
        common["passes"] = list(self._passes)
        common["free_passes_left"] = list(self._free_left)
        common["eliminated"] = list(self._elim)
        common["skip_next"] = list(self._skip)
        return common

    # ------------------------------------------------------------------ serialization

    def to_json(self) -> str:
        """The match record (:mod:`referee.games.record`); a stacked first deal is kept
        under ``stacked``."""
        stacked = (
            {}
            if self._stacked is None
            else {
                "stacked": {
                    "hands": [list(mask_actions(m)) for m in self._stacked[0]],
                    "table": list(mask_actions(self._stacked[1])),
                }
            }
        )
        return record.write_record(
            game=GAME_NAME,
            rules=self._rules.to_dict(),
            num_players=self.num_players,
            seed=self.seed,
            deals=self._specs,
            actions=[
                record.action_entry(seat, action, source) for seat, action, source in self._log
            ],
            initial_hands=self.initial_hands(),
            events=self._events,
            extra=stacked,
        )

    @classmethod
    def from_json(cls, text: str | Mapping[str, Any]) -> SevensMatch:
        """Rebuild a match from its record (format 2, or the format-1 records written
        before) by replaying its actions; ``MatchStateError`` when it does not replay."""
        data = record.read_record(text, GAME_NAME)
        stacked = data.get("stacked")
        try:
            match = cls(
                SevensRules.from_dict(data["rules"]),
                int(data["num_players"]),
                int(data["seed"]),
                record.deal_specs(data),
                hands=None if stacked is None else stacked["hands"],
                table=() if stacked is None else stacked["table"],
            )
        except (KeyError, TypeError) as exc:
            raise MatchStateError(
                f"sevens match record lacks or garbles a field: {exc!r}"
            ) from None
        record.replay(match, data, GAME_NAME)
        return match

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SevensMatch:
        """:meth:`from_json` of a record already parsed."""
        return cls.from_json(data)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SevensMatch):
            return NotImplemented
        return (
            self._rules == other._rules
            and self.num_players == other.num_players
            and self.seed == other.seed
            and self._specs == other._specs
            and self._stacked == other._stacked
            and self._log == other._log
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"<SevensMatch {self._rules.name} players={self.num_players} seed={self.seed} "
            f"deal={self._deal} actions={len(self._log)}{' over' if self._over else ''}>"
        )
