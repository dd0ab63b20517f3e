"""The value types and helpers of ``referee/games/base.py`` pinned one by one: the dict
shapes every layer above the engines reads (events, deal and match results, deal specs),
the common observation fields, the history a seat is shown and its per-deal cache (found
by ``make mutate``, area ``engines-common``)."""

from __future__ import annotations

from typing import Any, SupportsIndex, overload

from referee.games.base import (
    DealHistory,
    DealResult,
    DealSpec,
    Event,
    EventKind,
    MatchResult,
    PenaltyRecord,
    Source,
    build_observation,
    history_view,
)


def test_an_event_dict_holds_only_the_fields_that_are_set() -> None:
    """``Event.to_dict``: kind and deal always; seat, action, reason, a source other than
    ``bot`` and a non-empty detail only when set (docs/engine.md "Match records")."""
    assert Event(EventKind.DEAL_START).to_dict() == {"kind": "deal_start", "deal": 0}
    full = Event(EventKind.PENALTY, 2, 3, "pass", "illegal_pass", Source.AUTOPILOT, {"chips": 5})
    assert full.to_dict() == {
        "kind": "penalty",
        "deal": 3,
        "seat": 2,
        "action": "pass",
        "reason": "illegal_pass",
        "source": "autopilot",
        "detail": {"chips": 5},
    }
    assert Event(EventKind.PLAY, 0, 1, "7D", source=Source.BOT).to_dict() == {
        "kind": "play",
        "deal": 1,
        "seat": 0,
        "action": "7D",
    }
    assert Event.from_dict(full.to_dict()) == full
    assert Event.from_dict({"kind": "deal_end"}) == Event(EventKind.DEAL_END)
    loaded = Event.from_dict({"kind": "play", "seat": 1, "deal": 2, "action": "8H"})
    assert (loaded.source, loaded.reason, loaded.detail) == (Source.BOT, None, {})


def test_results_and_penalties_round_trip_through_their_dicts() -> None:
    """``PenaltyRecord``, ``DealResult`` and ``MatchResult`` dicts (the runner commits them
    and tells bots ``deal.to_dict()`` at each deal end): every field under its own key,
    groups as lists, and missing optional fields read as their defaults."""
    penalty = PenaltyRecord(1, "card_penalty", 4)
    assert penalty.to_dict() == {"seat": 1, "reason": "card_penalty", "amount": 4}
    assert PenaltyRecord.from_dict(penalty.to_dict()) == penalty
    deal = DealResult(
        deal=2,
        winner=3,
        order=((3,), (0, 2), (1,)),
        deltas=(-1, -2, -1, 4),
        penalties=(penalty,),
        void=True,
        detail={"end": "out"},
    )
    deal_dict = {
        "deal": 2,
        "winner": 3,
        "order": [[3], [0, 2], [1]],
        "deltas": [-1, -2, -1, 4],
        "penalties": [{"seat": 1, "reason": "card_penalty", "amount": 4}],
        "void": True,
        "detail": {"end": "out"},
    }
    assert deal.to_dict() == deal_dict
    assert DealResult.from_dict(deal_dict) == deal
    bare = {"deal": 0, "winner": None, "order": [[0, 1]], "deltas": [0, 0]}
    assert DealResult.from_dict(bare) == DealResult(0, None, ((0, 1),), (0, 0))
    match = MatchResult(
        totals=(5, -5),
        unit="chips",
        higher_is_better=True,
        order=((0,), (1,)),
        winners=(0,),
        deals=(deal,),
    )
    match_dict = {
        "totals": [5, -5],
        "unit": "chips",
        "higher_is_better": True,
        "order": [[0], [1]],
        "winners": [0],
        "deals": [deal_dict],
    }
    assert match.to_dict() == match_dict
    assert MatchResult.from_dict(match_dict) == match


def test_a_deal_spec_dict_and_its_defaults() -> None:
    """``DealSpec``: seed, rotation and dealer under their keys; a dict without rotation or
    dealer is rotation 0 and the normal dealer rotation (``None``)."""
    spec = DealSpec(seed=9, rotation=2, dealer=1)
    assert spec.to_dict() == {"seed": 9, "rotation": 2, "dealer": 1}
    assert DealSpec.from_dict(spec.to_dict()) == spec
    assert DealSpec.from_dict({"seed": 9}) == DealSpec(9, 0, None)


def test_build_observation_puts_every_argument_under_its_own_field() -> None:
    """The common observation fields (docs/OBSERVATIONS.md "Common fields"), each value
    under its documented key and nothing else."""
    args: dict[str, Any] = {
        "game": "g",
        "preset": "p",
        "rules": {"r": 1},
        "seat": 1,
        "num_players": 3,
        "deal_index": 4,
        "num_deals": 5,
        "dealer": 2,
        "to_act": 0,
        "hand": ["7D"],
        "hand_sizes": [2, 1, 3],
        "totals": [7, 8, 9],
        "unit": "chips",
        "history": [{"seat": 0, "kind": "play", "action": "7H"}],
    }
    assert build_observation(**args) == args


def test_the_history_shows_a_seatless_event_as_seat_minus_one() -> None:
    """A history item's ``seat`` is -1 for an event about no seat (docs/OBSERVATIONS.md,
    history fields), a refused action's text is never shown, a reason always is."""
    events = [
        Event(EventKind.DEAL_START, None, 0, detail={"dealer": 0}),
        Event(EventKind.INVALID_ACTION, 2, 0, "7D", "not_held", detail={"message": "7D"}),
        Event(EventKind.PASS, 1, 0, "pass", "forced"),
    ]
    assert history_view(events, seat=0) == [
        {"seat": -1, "kind": "deal_start"},
        {"seat": 2, "kind": "invalid_action", "reason": "not_held"},
        {"seat": 1, "kind": "pass", "action": "pass", "reason": "forced"},
    ]


class _Counted(list[Event]):
    """A list of events that counts the events handed out by slices (the ones
    ``DealHistory`` converts)."""

    converted = 0

    @overload
    def __getitem__(self, index: SupportsIndex) -> Event: ...

    @overload
    def __getitem__(self, index: slice) -> list[Event]: ...

    def __getitem__(self, index: SupportsIndex | slice) -> Event | list[Event]:
        if isinstance(index, slice):
            part = list.__getitem__(self, index)
            self.converted += len(part)
            return part
        return list.__getitem__(self, index)


def _plays(deal: int, count: int) -> list[Event]:
    return [Event(EventKind.PLAY, i % 4, deal, f"{i % 9 + 2}C") for i in range(count)]


def test_a_deal_history_converts_each_event_once_and_starts_over_for_a_new_deal() -> None:
    """``DealHistory.view`` equals ``history_view(events[deal_start:])`` at every call,
    converts only the events it has not seen (the point of the cache), and starts over
    for another deal start or another list, even when the new deal has more events than
    the items it kept (an observation asked for late in the next deal)."""
    events = _Counted(_plays(0, 3))
    cache = DealHistory()
    assert cache.view(events, 0, 1) == history_view(events, 1)
    events.extend(_plays(0, 2))
    assert cache.view(events, 0, 2) == history_view(list(events), 2)
    assert cache.view(events, 0, 0) == history_view(list(events), 0)
    assert events.converted == 5  # 3, then the 2 new ones, then none
    # The next deal starts at event 5 and is 10 events in at the next look: more events
    # than the 5 items kept, so only the new start tells the deals apart.
    events.extend(_plays(1, 10))
    assert cache.view(events, 5, 1) == history_view(list(events)[5:], 1)
    # Another list (a copied match's) with the same start: its own events are shown.
    other = _plays(1, 5) + _plays(2, 12)
    assert cache.view(other, 5, 1) == history_view(other[5:], 1)
    # Each call returns copies: changing one changes nothing kept.
    first = cache.view(other, 5, 0)
    first[0]["kind"] = "changed"
    first.append({"seat": 0, "kind": "added"})
    assert cache.view(other, 5, 0) == history_view(other[5:], 0)
