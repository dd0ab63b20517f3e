"""A Sedma match: dealer, session, void hands, refused actions, observations, JSON
(SD-5, SD-15, SD-16, SD-19 and the Sedma autopilot of docs/sedma.md)."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from referee.games.base import DealSpec, Event, EventKind, Source, derive_seed
from referee.games.cards import Card
from referee.games.errors import InvalidRulesError, MatchStateError
from referee.games.registry import get_game
from referee.games.sedma import match as sedma_match
from referee.games.sedma.hand import SEDMA_ORDER, deal_cards
from referee.games.sedma.match import SedmaMatch, cut_for_dealer
from referee.games.sedma.rules import deck_cards, preset, rules_from_dict

GAME = get_game("sedma")


def new(name: str, seed: int, deals: list[DealSpec] | None = None) -> SedmaMatch:
    rules = preset(name)
    match = GAME.new_match(rules, rules.players, seed, deals)
    assert isinstance(match, SedmaMatch)
    return match


def play_random(match: SedmaMatch, seed: int) -> None:
    rng = random.Random(seed)
    while not match.is_over():
        match.apply(rng.choice(match.legal_actions()))


def test_the_lowest_cut_deals_first_and_the_deal_passes_left() -> None:
    # SD-5
    for seed in range(30):
        dealer, draws = cut_for_dealer(seed, 4, "german32")
        candidates, rest = [0, 1, 2, 3], list(draws)
        while len(candidates) > 1:  # tied lowest seats draw again
            round_, rest = rest[: len(candidates)], rest[len(candidates) :]
            assert [seat for seat, _ in round_] == candidates
            low = min(SEDMA_ORDER[Card.parse(c).rank] for _, c in round_)
            candidates = [s for s, c in round_ if SEDMA_ORDER[Card.parse(c).rank] == low]
        assert candidates == [dealer] and not rest
    match = new("sedma", 11)
    play_random(match, 11)
    starts = [e for e in match.events() if e.kind == EventKind.DEAL_START]
    first = starts[0].seat
    assert first == cut_for_dealer(11, 4, "german32")[0]
    assert [e.seat for e in starts] == [(first + k) % 4 for k in range(len(starts))]


def test_sedma3_cuts_for_dealer_from_its_own_24_card_deck() -> None:
    # SD-5 with SD-18: the 8s and 9s are not in sedma-3's game, so they cannot decide the dealer
    pack = {str(c) for c in deck_cards("sedma24")}
    drawn: set[str] = set()
    for seed in range(200):
        match = new("sedma-3", seed)
        start = next(e for e in match.events() if e.kind == EventKind.DEAL_START)
        cut = start.detail["dealer_cut"]
        drawn |= {card for _seat, card in cut}
        assert start.seat == cut_for_dealer(seed, 3, "sedma24")[0]
    assert drawn and drawn <= pack, sorted(drawn - pack)


def test_session_ends_when_a_side_reaches_the_target() -> None:
    # SD-15
    for seed in range(20):
        match = new("sedma", seed)
        play_random(match, seed)
        result = match.result()
        scored = [d for d in result.deals if not d.void]
        assert max(result.totals) >= 4
        before_last = [0, 0]
        for deal in scored[:-1]:
            before_last[0] += deal.deltas[0]
            before_last[1] += deal.deltas[1]
        assert max(before_last) < 4  # the session did not run past the target
        assert result.unit == "match_points" and result.higher_is_better
        assert result.totals[0] == result.totals[2] and result.totals[1] == result.totals[3]
        assert result.winners in ((0, 2), (1, 3))
        assert result.order[0] == result.winners


def test_running_session_plays_exactly_running_hands() -> None:
    # SD-15 option: a running total over a fixed number of hands.
    rules = rules_from_dict({"name": "sedma", "session": "running", "running_hands": 3})
    match = GAME.new_match(rules, 4, 5)
    assert isinstance(match, SedmaMatch)
    play_random(match, 5)
    assert len(match.deal_results()) == 3
    assert match.observation(0)["num_deals"] == 3 and match.observation(0)["target"] == 0


def _void_seed() -> tuple[int, SedmaMatch]:
    for seed in range(200):
        match = new("sedma-3", seed)
        play_random(match, seed)
        if any(d.void for d in match.deal_results()):
            return seed, match
    raise AssertionError("no void hand in 200 sedma-3 sessions")


def test_a_tied_hand_is_void_and_redealt_by_the_same_dealer() -> None:
    # SD-16 (ties happen with three players, SD-18)
    seed, match = _void_seed()
    results = match.deal_results()
    k = next(i for i, d in enumerate(results) if d.void)
    points = results[k].detail["points"]
    assert sorted(points)[-1] == sorted(points)[-2]
    assert results[k].deltas == (0, 0, 0) and results[k].winner is None
    starts = [e for e in match.events() if e.kind == EventKind.DEAL_START]
    assert starts[k + 1].seat == starts[k].seat  # same dealer
    assert starts[k + 1].detail["slot"] == starts[k].detail["slot"]
    assert starts[k + 1].detail["redeal"] == starts[k].detail["redeal"] + 1
    voids = [e for e in match.events() if e.kind == EventKind.VOID_DEAL]
    assert voids and voids[0].deal == k
    # The redeal's seed derives from the slot's seed (deterministic, replayable).
    slot_seed = derive_seed("sedma", seed, "hand", starts[k].detail["slot"])
    redeal_seed = derive_seed("sedma", slot_seed, "redeal", starts[k + 1].detail["redeal"])
    hands, _ = deal_cards(preset("sedma-3"), redeal_seed, 0)
    assert match.initial_hands()[k + 1] == [[str(c) for c in h] for h in hands]


def test_explicit_deals_play_exactly_those_hands_with_rotation() -> None:
    spec = DealSpec(seed=99, rotation=0, dealer=1)
    rotated = DealSpec(seed=99, rotation=1, dealer=2)
    a = new("sedma", 1, [spec])
    b = new("sedma", 2, [rotated])
    hands_a = a.initial_hands()[0]
    hands_b = b.initial_hands()[0]
    assert hands_b == [hands_a[3], hands_a[0], hands_a[1], hands_a[2]]  # sides swapped
    assert a.observation(0)["dealer"] == 1 and b.observation(0)["dealer"] == 2
    play_random(a, 1)
    assert len(a.deal_results()) == 1 and a.observation(0)["num_deals"] == 1


def test_a_card_not_held_is_refused_and_the_autopilot_plays() -> None:
    match = new("sedma", 3)
    seat = match.to_act()
    held = set(match.observation(seat)["hand"])
    other = next(c for c in ("7C", "7D", "7H", "7S", "8C", "8D", "8H") if c not in held)
    fallback = match.fallback_action()
    assert match.check(other) is not None and "not in your hand" in str(match.check(other))
    events = match.apply(other)
    assert events[0].kind == EventKind.INVALID_ACTION and events[0].reason == "not_held"
    assert "not in your hand" in events[0].detail["message"]
    assert events[1].kind == EventKind.PLAY and events[1].source == Source.AUTOPILOT
    assert events[1].action == fallback and events[1].seat == seat


@pytest.mark.parametrize("bad", ["", "7", "XYZ", "7H7D", "pass", "Q+K", "7H" * 20, "2C+3C"])
def test_malformed_actions_are_refused_as_malformed(bad: str) -> None:
    match = new("mariash-sedma", 4)
    events = match.apply(bad)
    assert events[0].kind == EventKind.INVALID_ACTION
    assert events[0].reason in ("malformed", "not_held", "not_legal")
    if bad in ("", "7", "XYZ", "7H7D", "pass", "Q+K", "7H" * 20):
        assert events[0].reason == "malformed"
    assert events[1].source == Source.AUTOPILOT


def test_a_marriage_is_refused_where_it_is_not_legal() -> None:
    # SD-19: only in mariash-sedma, only when leading, only a queen and king of one suit.
    match = new("sedma", 4)
    assert "marriages are off" in str(match.check("QH+KH"))
    match = new("mariash-sedma", 4)
    assert "not a marriage" in str(match.check("QH+KS"))
    match.apply(match.legal_actions()[0])
    assert "only when leading" in str(match.check("QH+KH"))


def test_a_marriage_counts_for_the_leaders_side_in_the_hand_score() -> None:
    # SD-19
    for seed in range(300):
        match = new("mariash-sedma", seed, [DealSpec(seed)])
        marriage = next((a for a in match.legal_actions() if "+" in a), None)
        if marriage is None:
            continue
        side = match.to_act() % 2
        events = match.apply(marriage)
        assert events[0].detail["marriage"] == marriage.split("+")
        obs = match.observation(0)
        assert obs["marriages"] == [sorted(marriage.split("+"), key=lambda c: c[0] == "K")]
        play_random(match, seed)
        detail = match.deal_results()[0].detail
        assert detail["marriage_points"][side] == 20
        assert sum(detail["points"]) == 110
        return
    raise AssertionError("no marriage in 300 opening hands")


def test_timeout_records_the_event_and_the_autopilot_plays() -> None:
    match = new("sedma-2", 8)
    seat = match.to_act()
    fallback = match.fallback_action()
    events = match.apply_timeout()
    assert [(e.kind, e.seat) for e in events[:2]] == [
        (EventKind.TIMEOUT, seat),
        (EventKind.PLAY, seat),
    ]
    assert events[0].reason == "timeout"
    assert events[1].action == fallback and events[1].source == Source.AUTOPILOT


def test_fallback_prefers_a_card_that_neither_scores_nor_is_a_seven() -> None:
    for seed in range(50):
        match = new("sedma", seed)
        hand = match.observation(match.to_act())["hand"]
        choice = match.fallback_action()
        assert choice in match.legal_actions()
        plain = [c for c in hand if c[0] not in "7TA"]
        if plain:
            assert choice in plain
        elif any(c[0] == "7" for c in hand):
            assert choice[0] == "7"


def test_observation_never_shows_other_hands_or_drawn_cards() -> None:
    match = new("sedma", 21)
    rng = random.Random(21)
    for _ in range(20):  # past the first tricks, with talon draws
        match.apply(rng.choice(match.legal_actions()))
    match.apply("AS" if "AS" not in match.legal_actions() else "AH")  # maybe refused
    for seat in range(4):
        obs = match.observation(seat)
        text = json.dumps(obs)
        own = set(obs["hand"])
        public = {t["card"] for t in obs["trick"]}
        public |= {h["action"] for h in obs["history"] if "action" in h}  # plays, own tries
        for other in range(4):
            if other == seat:
                continue
            for card in match.hand_state().hands[other]:
                if str(card) not in own | public:
                    assert f'"{card}"' not in text
        for entry in obs["history"]:
            assert set(entry) <= {"seat", "kind", "action", "reason"}
            if entry["kind"] == "draw":
                assert "action" not in entry
            if entry["kind"] == EventKind.INVALID_ACTION and entry["seat"] != seat:
                assert "action" not in entry
        assert "seed" not in text
        assert obs["talon_size"] == len(match.hand_state().talon)
        assert obs["sides"] == [[0, 2], [1, 3]]


def test_observation_has_the_documented_fields() -> None:
    obs = new("sedma", 1).observation(0)
    common = {"game", "preset", "rules", "seat", "num_players", "deal_index", "num_deals",
              "dealer", "to_act", "hand", "hand_sizes", "totals", "unit", "history"}  # fmt: skip
    sedma = {"sides", "leader", "trick", "talon_size", "tricks_won", "card_points",
             "match_points", "target", "marriages"}  # fmt: skip
    assert set(obs) == common | sedma
    assert obs["game"] == "sedma" and obs["preset"] == "sedma" and obs["target"] == 4
    assert obs["hand_sizes"] == [4, 4, 4, 4] and obs["talon_size"] == 16


def test_json_round_trip_replays_refusals_timeouts_and_autopilot() -> None:
    match = new("mariash-sedma", 17)
    rng = random.Random(17)
    while not match.is_over():
        roll = rng.random()
        if roll < 0.05:
            match.apply_timeout()
        elif roll < 0.1:
            match.apply(rng.choice(["ZZ", "2H", "QH+KH", "9C", "x" * 40]))
        elif roll < 0.15:
            match.apply(match.fallback_action(), Source.AUTOPILOT)
        else:
            match.apply(rng.choice(match.legal_actions()))
    text = match.to_json()
    again = GAME.match_from_json(text)
    assert again.to_json() == text
    assert [e.to_dict() for e in again.events()] == [e.to_dict() for e in match.events()]
    assert again.result() == match.result()


def test_match_from_json_refuses_garbage_with_a_reason() -> None:
    with pytest.raises(MatchStateError, match="invalid JSON"):
        GAME.match_from_json("{")
    with pytest.raises(MatchStateError, match="game=sedma"):
        GAME.match_from_json('{"game": "sevens"}')
    match = new("sedma", 2)
    match.apply(match.legal_actions()[0])
    match.apply(match.legal_actions()[0])
    record = json.loads(match.to_json())
    with pytest.raises(MatchStateError, match=r"(?i)unknown sedma record format 9"):
        GAME.match_from_json(json.dumps({**record, "format": 9}))
    record["actions"].reverse()  # seats out of turn: the record does not replay
    with pytest.raises(MatchStateError, match="does not replay: action #0 is by seat"):
        GAME.match_from_json(json.dumps(record))
    record["actions"] = ["7H"]
    with pytest.raises(MatchStateError, match="action #0 must be"):
        GAME.match_from_json(json.dumps(record))


def test_same_seed_same_match() -> None:
    a, b = new("sedma-3", 5), new("sedma-3", 5)
    play_random(a, 1)
    play_random(b, 1)
    assert a.to_json() == b.to_json()
    assert [e.to_dict() for e in a.events()] == [e.to_dict() for e in b.events()]


def test_misuse_raises_rules_errors_that_say_what_to_do() -> None:
    rules = preset("sedma")
    with pytest.raises(InvalidRulesError, match="is for 4 players, not 3"):
        GAME.new_match(rules, 3, 1)
    with pytest.raises(InvalidRulesError, match="at least one DealSpec"):
        GAME.new_match(rules, 4, 1, [])
    match = new("sedma", 1)
    with pytest.raises(MatchStateError, match="not over yet"):
        match.result()
    with pytest.raises(MatchStateError, match="seat must be"):
        match.observation(4)
    play_random(match, 1)
    with pytest.raises(MatchStateError, match="over"):
        match.to_act()
    with pytest.raises(MatchStateError, match="over"):
        match.apply("7H")
    assert match.legal_actions() == [] and match.observation(0)["to_act"] == -1


def _first_void(max_redeals: int) -> tuple[SedmaMatch, int]:
    """The first void hand of the first seed that has one, under ``max_redeals``."""
    rules = rules_from_dict({**preset("sedma-3").to_dict(), "max_redeals": max_redeals})
    for seed in range(200):
        match = GAME.new_match(rules, 3, seed)
        assert isinstance(match, SedmaMatch)
        play_random(match, seed)
        voids = [e for e in match.events() if e.kind == EventKind.VOID_DEAL]
        if voids:
            return match, voids[0].deal
    raise AssertionError("no void hand in 200 sedma-3 sessions")


def test_max_redeals_is_the_number_of_redeals_allowed() -> None:  # SD-16
    """Pins the boundary (``>`` not ``>=``): with ``max_redeals = 1`` the first void hand
    of a slot is redealt in the same slot; with ``max_redeals = 0`` it is not, and the
    next hand is the next slot."""
    for allowed, redealt in ((1, True), (0, False)):
        match, k = _first_void(allowed)
        void = next(e for e in match.events() if e.kind == EventKind.VOID_DEAL)
        assert void.detail["redeal"] is redealt, allowed
        starts = [e for e in match.events() if e.kind == EventKind.DEAL_START]
        assert starts[k].detail["redeal"] == 0
        if len(starts) > k + 1:
            same_slot = starts[k + 1].detail["slot"] == starts[k].detail["slot"]
            assert same_slot is redealt, allowed
            assert starts[k + 1].detail["redeal"] == (1 if redealt else 0)


def test_the_result_ranks_sides_best_first_and_tied_sides_share_a_place() -> None:
    """The match result's order (found by ``make mutate``): groups of seats, the side with
    the most match points first (SD-15), each side's seats together, tied sides in one
    group; checked over whole matches of every preset played with the first legal action."""
    game = get_game("sedma")
    for name in ("sedma", "sedma-2", "sedma-3"):
        rules = preset(name)
        for seed in range(4):
            match = game.new_match(rules, rules.players, seed, None)
            while not match.is_over():
                match.apply(match.legal_actions()[0])
            result = match.result()
            totals = result.totals
            assert sorted(s for group in result.order for s in group) == list(range(rules.players))
            firsts = [totals[group[0]] for group in result.order]
            assert firsts == sorted(set(firsts), reverse=True), (name, seed, result.order)
            for group in result.order:
                assert len({totals[s] for s in group}) == 1
                sides = {rules.side_of(s) for s in group}
                others = [t for t in range(rules.players) if t not in group]
                assert all(rules.side_of(t) not in sides for t in others)


def test_a_running_session_plays_exactly_its_number_of_hands() -> None:
    """``session = "running"`` (SD-15's alternative, rules.py) plays exactly
    ``running_hands`` hands, whatever the totals, and ranks by the running total; a
    ``target`` session stops when a side reaches the target (found by ``make mutate``)."""
    game = get_game("sedma")
    for hands in (1, 3):
        rules = replace(preset("sedma-2"), session="running", running_hands=hands)
        match = game.new_match(rules, rules.players, 11, None)
        while not match.is_over():
            match.apply(match.legal_actions()[0])
        played = [r for r in match.result().deals if not r.void]
        assert len(played) == hands


def test_errors_after_the_end_and_before_the_result_say_what_to_do() -> None:
    """The engine's refusals of calls out of order, in words (the platform logs them):
    after the end no action is legal and nobody can time out; before it, play on."""
    game = get_game("sedma")
    rules = preset("sedma-2")
    match = game.new_match(rules, rules.players, 3, None)
    not_over = r"^the match is not over yet: play on until is_over\(\)$"
    with pytest.raises(MatchStateError, match=not_over):
        match.result()
    while not match.is_over():
        match.apply(match.legal_actions()[0])
    assert match.check("7C") == "the match is over: no action is legal"
    with pytest.raises(MatchStateError, match=r"^the match is over: nobody can time out$"):
        match.apply_timeout()


def _cut_reference(seed: int, players: int, kind: str) -> tuple[int, list[list[object]]]:
    """docs/SEDMA_DECISIONS.md 4 (SD-5), written out: draw ``j`` takes card
    ``derive_seed("sedma", seed, "cut", j) % remaining`` of the undrawn cards in canonical
    order; the lowest Sedma rank deals, tied seats draw again while the deck lasts."""
    deck, seats, draws, j = deck_cards(kind), list(range(players)), [], 0
    while len(seats) > 1 and len(deck) >= len(seats):
        round_ = []
        for seat in seats:
            round_.append((seat, deck.pop(derive_seed("sedma", seed, "cut", j) % len(deck))))
            j += 1
        draws += [[seat, str(card)] for seat, card in round_]
        low = min(SEDMA_ORDER[card.rank] for _, card in round_)
        seats = [seat for seat, card in round_ if SEDMA_ORDER[card.rank] == low]
    return seats[0], draws


def test_the_cut_for_dealer_is_the_documented_derivation() -> None:
    """SD-5: the cut's draws are the documented digest of the match seed (``arena season
    verify`` re-derives them), for 2, 3 and 4 seats and both decks, ties included."""
    ties = 0
    for seed in range(60):
        for players, kind in ((4, "german32"), (2, "german32"), (3, "sedma24")):
            got = cut_for_dealer(seed, players, kind)
            assert got == _cut_reference(seed, players, kind), (seed, players, kind)
            ties += len(got[1]) > players
    assert ties > 10


def test_tied_cuts_draw_again_until_the_deck_is_used_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """SD-5: seats tied for the lowest card draw again as long as the deck holds a card for
    each, the last two cards included (the draws are scripted: both seats draw the same rank
    every time, so the 32 cards are all drawn and seat 0 deals)."""
    deck = deck_cards("german32")
    order = [card for rank in sorted({c.rank for c in deck}) for card in deck if card.rank is rank]
    left = list(deck)

    def scripted(*_parts: object) -> int:
        index = left.index(order[len(deck) - len(left)])
        left.pop(index)
        return index

    monkeypatch.setattr(sedma_match, "derive_seed", scripted)
    dealer, draws = cut_for_dealer(1, 2, "german32")
    assert (dealer, len(draws)) == (0, 32)
    assert [card for _, card in draws] == [str(c) for c in order]


def test_a_match_is_set_up_from_its_arguments_or_refused_in_words() -> None:
    """Dealers 0 .. n-1 of a deal spec are seats, n is not; the seed must be an int; the
    first hand is dealt from its spec's own seed; every side starts at 0 match points."""
    rules = preset("sedma")
    match = GAME.new_match(rules, 4, 1, [DealSpec(9, 1, 0)])
    assert match.rules is rules and match.is_over() is False
    hands, _talon = deal_cards(rules, 9, 1)
    assert match.initial_hands()[0] == [[str(c) for c in h] for h in hands]
    assert match.observation(0)["match_points"] == [0, 0]
    assert match.observation(0)["totals"] == [0, 0, 0, 0]
    with pytest.raises(InvalidRulesError, match=r"^DealSpec dealer 4 is not a seat 0\.\.3$"):
        GAME.new_match(rules, 4, 1, [DealSpec(9, 1, 4)])
    with pytest.raises(
        InvalidRulesError, match=r"^deals must hold at least one DealSpec \(or be None\)$"
    ):
        GAME.new_match(rules, 4, 1, [])
    with pytest.raises(InvalidRulesError, match=r"^seed must be an int, got '1'$"):
        SedmaMatch(rules, 4, "1")  # type: ignore[arg-type]
    with pytest.raises(MatchStateError, match=r"^seat must be 0\.\.3, got 4$"):
        match.observation(4)


def test_deal_starts_say_the_leader_the_talon_and_the_first_cut_only() -> None:
    """Each ``deal_start`` event's detail: the leader, the slot, the redeal count and the
    talon size; the first one of a match that cut for the dealer also holds the cut."""
    match = new("sedma", 11)
    play_random(match, 11)
    starts = [e for e in match.events() if e.kind == EventKind.DEAL_START]
    assert len(starts) > 1
    for i, start in enumerate(starts):
        keys = {"leader", "slot", "redeal", "talon_size"} | ({"dealer_cut"} if i == 0 else set())
        assert set(start.detail) == keys
        assert start.detail["leader"] == ((start.seat or 0) + 1) % 4  # SD-7
        assert start.detail["talon_size"] == 16
    assert starts[0].detail["dealer_cut"] == cut_for_dealer(11, 4, "german32")[1]


def test_the_observation_carries_the_matchs_own_values() -> None:
    """Mid-hand, the fields hold this match's values: the rules' dict, the hand in play,
    the side totals per seat, the unit, the seat to act, the trick as seat and card, and
    ``num_deals`` 0 for a session played to a target (SD-15)."""
    match = new("sedma", 5)
    rng = random.Random(5)
    while match.deal_index() == 0 or len(match.hand_state().trick) < 2:
        match.apply(rng.choice(match.legal_actions()))
    obs = match.observation(1)
    assert obs["rules"] == preset("sedma").to_dict() and obs["deal_index"] == match.deal_index()
    totals = match.side_totals()
    assert obs["totals"] == [totals[0], totals[1], totals[0], totals[1]] and any(totals)
    assert obs["unit"] == "match_points" and obs["to_act"] == match.to_act()
    assert obs["num_deals"] == 0
    assert obs["trick"] == [{"seat": s, "card": str(c)} for s, c in match.hand_state().trick]


def test_play_draw_and_trick_events_are_exact_and_a_draw_shows_no_card() -> None:
    """Every ``play`` is (seat, deal, card, source); a ``draw`` is about the seat that
    drew, with the card only in its detail (the history never shows it, SD-11); a ``trick``
    names its taker, cards, leader and points (aces and tens, 10 each, SD-13). Play and
    draw events are shared between matches: the cache is emptied first, so they are built
    here."""
    sedma_match._SHARED_EVENTS.clear()
    match = new("sedma", 3)
    rng = random.Random(3)
    sources = (Source.BOT, Source.AUTOPILOT)
    while not match.is_over():
        hand, deal, seat = match.hand_state(), match.deal_index(), match.to_act()
        talon = [str(c) for c in hand.talon]
        trick = [(s, str(c)) for s, c in hand.trick]
        card = rng.choice([a for a in match.legal_actions() if "+" not in a])
        source = rng.choice(sources)
        events = match.apply(card, source)
        assert events[0] == Event(EventKind.PLAY, seat, deal, card, None, source)
        if len(trick) < 3:
            continue
        cards = [*trick, (seat, card)]
        taker = events[1].seat
        assert taker is not None
        assert events[1] == Event(
            EventKind.TRICK,
            taker,
            deal,
            detail={
                "cards": [c for _, c in cards],
                "leader": cards[0][0],
                "points": 10 * sum(c[0] in "AT" for _, c in cards),
            },
        )
        draws = [e for e in events if e.kind == "draw"]
        assert len(draws) == min(4, len(talon))
        assert {e.kind for e in events} <= {
            "play",
            "trick",
            "draw",
            "deal_end",
            "void_deal",
            "deal_start",
            "match_end",
        }
        assert [e.seat for e in draws] == [(taker + i) % 4 for i in range(len(draws))]
        for event in draws:
            assert event == Event("draw", event.seat, deal, detail={"card": talon.pop()})
            if match.deal_index() == deal and event.seat is not None:
                assert event.detail["card"] in map(str, match.hand_state().hands[event.seat])
        for obs in map(match.observation, range(4)):
            assert all("action" not in h for h in obs["history"] if h["kind"] == "draw")


def _walk_slots(match: SedmaMatch) -> tuple[int, int]:
    """Check every hand's bookkeeping against the events (SD-5, SD-15, SD-16): a scored
    hand moves to the next slot, a void one is redealt in its slot by the same dealer
    until ``max_redeals`` is passed; each hand's result and end event are exact. Returns
    the highest redeal count and the number of slots given up as void."""
    rules = match.sedma_rules
    n, results = match.num_players, match.deal_results()
    common = {"points", "card_points", "marriage_points", "tricks", "last_trick"}
    slot, redeal, most, given_up, dealer, deal = 0, 0, 0, 0, -1, -1
    totals = [0] * rules.num_sides
    for event in match.events():
        if event.kind == EventKind.DEAL_START:
            deal += 1
            assert (event.deal, event.detail["slot"], event.detail["redeal"]) == (
                deal,
                slot,
                redeal,
            )
            dealer, most = event.seat or 0, max(most, redeal)
        elif event.kind in (EventKind.VOID_DEAL, EventKind.DEAL_END):
            result = results[deal]
            assert result.deal == deal and event.deal == deal
            assert sum(event.detail["tricks"]) == rules.num_tricks
            assert sum(event.detail["card_points"]) == rules.card_point_total
            assert event.detail["last_trick"] in range(rules.num_sides)
            if event.kind == EventKind.VOID_DEAL:
                assert event.seat == dealer and set(event.detail) == common | {"redeal"}
                assert (result.winner, result.order, result.deltas) == (
                    None,
                    (tuple(range(n)),),
                    (0,) * n,
                )
                assert result.void and result.detail == {k: event.detail[k] for k in common}
                redeal += 1
                if not event.detail["redeal"]:
                    slot, redeal, given_up = slot + 1, 0, given_up + 1
            else:
                side = event.detail["winner_side"]
                totals[side] += event.detail["match_points"][side]
                assert set(event.detail) == common | {
                    "kind",
                    "winner_side",
                    "match_points",
                    "totals",
                }
                assert event.detail["totals"] == totals and event.detail["kind"] in (
                    "win",
                    "bald",
                    "naked",
                )
                assert event.seat == result.winner == rules.sides()[side][0]
                assert result.detail == event.detail and result.order[0] == rules.sides()[side]
                slot, redeal = slot + 1, 0
    end = match.events()[-1]
    assert end == Event(
        EventKind.MATCH_END,
        None,
        deal,
        detail={"match_points": totals, "winners": list(match.result().winners)},
    )
    return most, given_up


def test_every_hand_is_booked_in_its_slot_and_ends_with_its_exact_events() -> None:
    """SD-16: seed 36 of `sedma-3` has a slot voided three times in a row (redeals 1, 2,
    3); with ``max_redeals = 1`` the second void gives the slot up and play goes on with
    the next slot. Every hand's result and end event are checked on the way."""
    match = new("sedma-3", 36)
    play_random(match, 36)
    assert _walk_slots(match) == (3, 0)
    rules = rules_from_dict({**preset("sedma-3").to_dict(), "max_redeals": 1})
    match = SedmaMatch(rules, 3, 36)
    play_random(match, 36)
    most, given_up = _walk_slots(match)
    assert most == 1 and given_up >= 1


def test_a_marriage_lead_is_one_exact_play_event() -> None:
    """SD-19: a marriage lead is a ``play`` of both cards, by its seat and source, naming
    the pair, the side and its points; the seat's own history shows it, as everyone's."""
    for seed in range(100):
        match = new("mariash-sedma", seed)
        rng = random.Random(seed)
        while not match.is_over() and not any("+" in a for a in match.legal_actions()):
            match.apply(rng.choice(match.legal_actions()))
        if not match.is_over():
            break
    lead = next(a for a in match.legal_actions() if "+" in a)
    seat, deal = match.to_act(), match.deal_index()
    queen, king = sorted(lead.split("+"), key=lambda c: c[0] != "Q")
    events = match.apply(lead, Source.AUTOPILOT)
    assert events[0] == Event(
        EventKind.PLAY,
        seat,
        deal,
        lead,
        None,
        Source.AUTOPILOT,
        {"marriage": lead.split("+"), "side": seat % 2, "points": 20},
    )
    assert match.observation(seat)["marriages"][-1] == [queen, king]
    assert match.observation((seat + 1) % 4)["history"][-1]["action"] == lead


@pytest.mark.parametrize(
    ("action", "reason", "message"),
    [
        ("", "malformed", "empty action: send a card you hold, e.g. 7H"),
        ("   ", "malformed", "empty action: send a card you hold, e.g. 7H"),
        (
            "x" * 16,
            "malformed",
            "'xxxxxxxxxxxxxxxx' is not a card: write rank then suit, e.g. 7D, TH, AS, QC",
        ),
        ("x" * 17, "malformed", "action is longer than 16 characters: send a card like 7H"),
        ("zz", "malformed", "'z' is not a suit: use one of C, D, H, S"),
        (
            "7C",
            "not_held",
            "7C is not in your hand; play one of AD JD KD AH (every held card is legal, SD-8)",
        ),
        (
            "QH+KH",
            "not_legal",
            "QH+KH: marriages are off in these rules (SD-19, mariash-sedma only); "
            "play a single card like 7H",
        ),
        ("QH+KH+KS", "malformed", "'QH+KH+KS': a marriage lead is two cards, like QH+KH"),
        (
            "QH+zz",
            "malformed",
            "'QH+zz' is not a marriage lead like QH+KH: 'z' is not a suit: use one of C, D, H, S",
        ),
    ],
)
def test_a_refused_action_is_one_exact_event_with_its_reason_in_words(
    action: str, reason: str, message: str
) -> None:
    """SD-8, SD-19: ``check`` gives the reason in words; ``apply`` writes one
    ``invalid_action`` (the text cut to 17 characters, as the record keeps it) with the
    reason code and the sentence, then the autopilot plays for the seat."""
    match = new("sedma", 1)
    seat = match.to_act()
    assert [str(c) for c in match.hand_state().hands[seat]] == ["AD", "JD", "KD", "AH"]
    assert match.check(action) == message
    events = match.apply(action, Source.AUTOPILOT)
    assert events[0] == Event(
        EventKind.INVALID_ACTION,
        seat,
        0,
        action[:17],
        reason,
        Source.AUTOPILOT,
        {"message": message},
    )
    assert events[1].source == Source.AUTOPILOT and events[1].seat == seat
    entry = json.loads(match.to_json())["actions"][0]
    assert entry == {"seat": seat, "action": action[:17], "source": "autopilot"}
    long = new("sedma", 1)
    long.apply("y" * 30)
    assert json.loads(long.to_json())["actions"][0] == {"seat": seat, "action": "y" * 17}
    assert SedmaMatch.from_json(match.to_json()).to_json() == match.to_json()


@pytest.mark.parametrize(
    ("action", "reason", "message"),
    [
        ("QH+KH", "not_held", "QH+KH: you do not hold QH KH; play a card you hold"),
        (
            "QH+JH",
            "not_legal",
            "QH+JH is not a marriage: show the queen and king of one suit, e.g. QH+KH",
        ),
        (
            "QH+KS",
            "not_legal",
            "QH+KS is not a marriage: show the queen and king of one suit, e.g. QH+KH",
        ),
    ],
)
def test_a_marriage_that_is_not_one_is_refused_in_words(
    action: str, reason: str, message: str
) -> None:
    """SD-19 (`mariash-sedma`): a queen and king of one suit, both held, only when leading."""
    match = new("mariash-sedma", 1)
    assert match.check(action) == message
    assert match.apply(action)[0].reason == reason
    assert (
        match.check("QH+KH") == "QH+KH: a marriage is shown only when leading (SD-19); play a card"
    )
    assert match.apply("QH+KH")[0].reason == "not_legal"


def test_a_non_string_action_is_refused_as_empty_and_replays() -> None:
    """An action that is not a string (a record may hold anything) is refused as an empty
    one, recorded as ``""``, and the record replays."""
    match = new("sedma", 1)
    seat = match.to_act()
    events = match.apply(["7H"], Source.AUTOPILOT)  # type: ignore[arg-type]
    assert (events[0].kind, events[0].seat, events[0].action, events[0].reason) == (
        EventKind.INVALID_ACTION,
        seat,
        "",
        "malformed",
    )
    assert json.loads(match.to_json())["actions"][0] == {
        "seat": seat,
        "action": "",
        "source": "autopilot",
    }
    assert SedmaMatch.from_json(match.to_json()).to_json() == match.to_json()


def test_a_held_card_in_another_spelling_plays_with_its_source() -> None:
    """``7h``-style text is read (not the fast path of canonical text) and played as the
    card, with the source given."""
    match = new("sedma", 1)
    seat = match.to_act()
    events = match.apply(" ad", Source.AUTOPILOT)
    assert events[0] == Event(EventKind.PLAY, seat, 0, "AD", None, Source.AUTOPILOT)


def test_the_sedma_errors_and_record_say_what_is_wrong() -> None:
    """After the end, ``to_act`` and ``fallback_action`` say so; the record holds the
    hands as dealt; a record without its rules' fields or with tampered events names the
    game."""
    match = new("sedma", 1)
    data = json.loads(match.to_json())
    assert data["initial_hands"] == match.initial_hands() and data["initial_hands"][0][0]
    with pytest.raises(
        MatchStateError,
        match=r"^sedma match record lacks or garbles a field: TypeError\(\"'<=' not supported",
    ):
        SedmaMatch.from_json({**data, "deals": [{"seed": 1, "dealer": "x"}]})
    play_random(match, 1)
    tampered = json.loads(match.to_json())
    tampered["events"][3]["seat"] = 9
    with pytest.raises(MatchStateError, match=r"^sedma match record does not replay: "):
        SedmaMatch.from_json(json.dumps(tampered))
    with pytest.raises(MatchStateError, match=r"^the match is over: nobody is to act$"):
        match.to_act()
    with pytest.raises(MatchStateError, match=r"^the match is over: there is no fallback action$"):
        match.fallback_action()
