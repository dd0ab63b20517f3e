"""Shared helpers of the Sevens tests: stacked deals, event filters and invariants."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from referee.games.base import PASS, Event, action_sort_key
from referee.games.cards import Card, make_deck
from referee.games.sevens import GAME, PRESETS, SevensMatch, SevensRules

CARD_RE = re.compile(r'"([A2-9TJQK][CDHS])"')


def rules(preset: str = "sevens", **changes: Any) -> SevensRules:
    """A preset, optionally with some options changed."""
    base = PRESETS[preset]
    return base.replace(**changes) if changes else base


def stacked(
    rules_: SevensRules,
    hands: Sequence[str],
    *,
    dealer: int | None = None,
    deals: int = 1,
    seed: int = 7,
) -> SevensMatch:
    """A match whose first deal has these hands (space-separated cards per seat); every
    other card of the deck lies on the table already (as after an elimination, SV-23).

    ``dealer`` fixes the first dealer (default seat 0)."""
    from referee.games.base import DealSpec

    n = len(hands)
    held = {c for hand in hands for c in hand.split()}
    deck = [str(c) for c in make_deck(rules_.deck)]
    removed = set()
    if rules_.starters == "removed_before_deal":
        removed = {c for c in deck if c[0] == rules_.starter_rank}
    table = [c for c in deck if c not in held and c not in removed]
    specs = [DealSpec(seed + d, 0, None if d else dealer) for d in range(deals)]
    return SevensMatch(rules_, n, seed, specs, hands=[h.split() for h in hands], table=table)


def kinds(events: Sequence[Event]) -> list[tuple[str, int | None, str | None, str | None]]:
    """The (kind, seat, action, reason) of each event: what the differential test compares."""
    return [(e.kind, e.seat, e.action, e.reason) for e in events]


def play_random(match: SevensMatch, rng: random.Random, *, check: bool = True) -> None:
    """Play the match to its end with random legal actions, checking invariants each step."""
    while not match.is_over():
        if check:
            check_invariants(match)
        match.apply(rng.choice(match.legal_actions()))
    if check:
        check_end(match)


def check_invariants(match: SevensMatch) -> None:
    """What must hold before every decision (STYLE 5)."""
    seat = match.to_act()
    legal = match.legal_actions()
    assert legal, "the legal list is never empty"
    assert legal == sorted(legal, key=action_sort_key), legal
    assert len(set(legal)) == len(legal)
    for action in legal:
        assert match.check(action) is None, (action, match.check(action))
    n = match.num_players
    obs = [match.observation(s) for s in range(n)]
    me = obs[seat]
    # SV-10: every card is in a hand or on the table, once.
    cards = [c for o in obs for c in o["hand"]]
    cards += [c for row in me["table"].values() for c in row]
    deck = [str(c) for c in make_deck(match._rules.deck)]
    assert sorted(cards, key=lambda c: Card.parse(c).index) == deck
    assert me["hand_sizes"] == [len(o["hand"]) for o in obs]
    plays = [a for a in legal if a != PASS]
    for action in plays:
        assert all(card in me["hand"] for card in action.split("+"))
    if not plays:
        assert legal == [PASS]
    assert not me["eliminated"][seat]
    # Observations never hold another seat's cards: every card text in a seat's
    # observation is its own, or on the table, or in the public history.
    for s in range(n):
        seen = set(CARD_RE.findall(json.dumps(obs[s])))
        assert seen <= set(obs[s]["hand"]) | _public_cards(obs[s]), (s, seen)
    # SV-31: chips only move between seats and the pot.
    if match._rules.scoring == "chips":
        start = match._rules.starting_chips
        assert sum(t - start for t in me["totals"]) == 0
        assert me["pot"] >= 0


def _public_cards(obs: Mapping[str, Any]) -> set[str]:
    public = {c for row in obs["table"].values() for c in row}
    for h in obs["history"]:
        public |= set(h.get("action", "").split("+"))
    return public


def check_end(match: SevensMatch) -> None:
    """What must hold once the match is over."""
    result = match.result()
    n = match.num_players
    seats = sorted(s for group in result.order for s in group)
    assert seats == list(range(n))
    assert result.winners == result.order[0]
    for deal in result.deals:
        assert deal.winner is not None
        assert deal.order[0] == (deal.winner,)
        assert sorted(s for g in deal.order for s in g) == list(range(n))
        assert deal.detail["cards_left"][deal.winner] == 0 or deal.detail["end"] == "last_active"
        if match._rules.scoring == "chips":
            assert sum(deal.deltas) == 0  # SV-31
        elif match._rules.scoring == "winner_only":
            assert sum(deal.deltas) in (0, 1)
    totals = [sum(d.deltas[s] for d in result.deals) for s in range(n)]
    base = match._rules.starting_chips if match._rules.scoring == "chips" else 0
    assert list(result.totals) == [base + t for t in totals]
    again = GAME.match_from_json(match.to_json())
    assert again == match
    assert again.to_json() == match.to_json()
    assert again.result() == result
