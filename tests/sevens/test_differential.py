"""Differential test: the Sevens engine against the naive reference (tests/sevens/reference.py).

For every preset, thousands of seeded random one-deal matches at several table sizes are
played through the engine's public API and the reference side by side with the same
choices. At every step the seat to act, the legal-action list (order included), the
observation's public facts and the events (kind, seat, deal, action, reason, source and
the detail fields the brief fixes) must agree; at every deal end the deal results (winner,
order, deltas, penalties, detail) and at the match end the match result.

The random stream includes illegal inputs so the SV-18/SV-19/SV-21 paths are compared:
passes while able to play, cards not held, held cards that are not playable, malformed
text, and timeouts. A few full-length matches per preset check dealer rotation, SV-14's
"previous winner opens", match totals and tie-breaks (SV-32..SV-34).

The hands come from the engine's deal (``initial_hands()``); the reference checks that
they partition the deck (SV-4, SV-6) and this test checks who gets the longer hands.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from referee.games.base import (
    PASS,
    RUN_SEPARATOR,
    DealResult,
    DealSpec,
    Event,
    Match,
    MatchResult,
    Source,
)
from referee.games.cards import Card, Rank
from referee.games.errors import InvalidRulesError
from referee.games.registry import get_game
from referee.games.sevens.rules import PRESETS, SevensRules
from tests.sevens.reference import RefMatch, deck_cards

DEALS_PER_PRESET = 2000
FULL_MATCHES_PER_PRESET = 12
DEALS_PER_CUSTOM = 200

# Detail fields each event kind must carry, with the values the brief fixes.
DETAIL_KEYS: dict[str, tuple[str, ...]] = {
    "deal_start": ("dealer", "first"),
    "ante": ("chips",),
    "pass": ("chips",),
    "penalty": ("chips", "payee"),
    "deal_end": ("deltas", "cards_left"),
    "match_end": ("totals",),
}

GARBAGE = (
    "",
    "x",
    "pass!",
    "7X",
    "1D",
    "ZZ",
    "7D+",
    "+",
    "7D++8D",
    "7D+8X",
    "seven of diamonds",
    "Q" * 100,
    "+".join(["7D"] * 40),  # a long "run": refused, its text cut to 64 characters
    "+".join(["AS", "2S", "3S", "4S", "5S", "6S", "7S", "8S", "9S", "TS", "JS", "QS", "KS"]),
)

# Rules beyond the presets, so that every option takes part in the comparison.
CUSTOM: dict[str, dict[str, Any]] = {
    "multi-card": {"multi_card_turn": True},
    "multi-card-ebs-high": {
        "multi_card_turn": True,
        "eights_before_sixes": True,
        "ace": "high",
        "opening": "left_of_dealer_diamond",
    },
    "forfeit": {"illegal_pass_penalty": "forfeit_deal", "opening": "any_seven"},
    "voluntary": {
        "must_play": False,
        "max_voluntary_passes": 2,
        "voluntary_pass_chips": 2,
        "pass_chips": 1,
        "scoring": "chips",
        "ante": 2,
        "short_hand_ante": "plus_one",
        "card_penalty": "pips",
        "ace_pips": 15,
        "seven_penalty": 5,
    },
    "voluntary-elim": {
        "must_play": False,
        "pass_elimination": 4,
        "free_passes": 1,
        "multi_card_turn": True,
        "scoring": "penalty_points",
        "card_penalty": "face_ten",
        "pass_chips": 1,
    },
    "payee-winner": {
        "scoring": "chips",
        "illegal_pass_penalty": "chips",
        "illegal_pass_chips": 4,
        "illegal_pass_payee": "winner",
        "card_penalty": "per_card",
        "seven_penalty": 10,
        "opening": "seven_of_hearts",
    },
    "elim-in-hand": {"pass_elimination": 2, "opening": "any_seven", "eights_before_sixes": True},
    "cinquillo-chips": {
        "deck": "spanish40",
        "starter_rank": "5",
        "starters": "placed_from_hands",
        "opening": "any_seven",
        "scoring": "chips",
        "ante": 1,
        "short_hand_ante": "minus_one",
        "card_penalty": "pips",
        "multi_card_turn": True,
    },
    "domino-ober-points": {
        "deck": "german32",
        "ace": "high",
        "starter_rank": "Q",
        "scoring": "penalty_points",
        "card_penalty": "pips",
        "pass_chips": 2,
        "illegal_pass_penalty": "chips",
        "illegal_pass_chips": 3,
        "seven_penalty": 1,
        "match_tiebreak": "showdown",
    },
    "broke-extra": {
        "scoring": "chips",
        "ante": 3,
        "pass_chips": 2,
        "card_penalty": "per_card",
        "starting_chips": 30,
        "until_broke": True,
        "deals": 8,
        "match_tiebreak": "extra_deal",
        "opening": "any_seven",
    },
    "forfeit-7d-runs": {"illegal_pass_penalty": "forfeit_deal", "multi_card_turn": True},
    "elim-high-owed": {
        "pass_elimination": 2,
        "ace": "high",
        "scoring": "chips",
        "card_penalty": "pips",
        "ace_pips": 15,
        "pass_chips": 1,
        "illegal_pass_penalty": "chips",
        "illegal_pass_chips": 2,
        "illegal_pass_payee": "winner",
        "until_broke": True,
        "starting_chips": 60,
    },
    "winner-extra": {"match_tiebreak": "extra_deal", "deals": 3},
    "points-showdown": {
        "scoring": "penalty_points",
        "card_penalty": "per_card",
        "deals": 2,
        "match_tiebreak": "showdown",
        "opening": "seven_of_hearts",
    },
    "winner-fewest": {
        "match_tiebreak": "fewest_cards_last_deal",
        "deals": 2,
        "opening": "left_of_dealer_diamond",
    },
}


# Match-level paths that only some custom rules reach often enough to be required.
CUSTOM_FULL_COVERAGE: dict[str, set[str]] = {
    "broke-extra": {"match:broke"},
    "winner-extra": {"tiebreak:extra_deal", "match:tiebreak-split"},  # SV-34
    "winner-fewest": {"match:tiebreak-split"},  # SV-34
    "points-showdown": {"tiebreak:showdown", "match:tiebreak-split"},  # SV-34
}


def _project(event: Event | None) -> tuple[Any, ...] | None:
    if event is None:
        return None
    keys = DETAIL_KEYS.get(event.kind, ())
    detail = tuple((key, _plain(event.detail.get(key, "<missing>"))) for key in keys)
    return (event.kind, event.seat, event.deal, event.action, event.reason, event.source, detail)


def _same_events(got: Sequence[Event], want: Sequence[Event]) -> bool:
    """``_project`` equality, without building the projections on the common path."""
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if (a.kind, a.seat, a.deal, a.action, a.reason, a.source) != (
            b.kind,
            b.seat,
            b.deal,
            b.action,
            b.reason,
            b.source,
        ):
            return False
        for key in DETAIL_KEYS.get(a.kind, ()):
            if _plain(a.detail.get(key, "<missing>")) != _plain(b.detail.get(key, "<missing>")):
                return False
    return True


def _plain(value: Any) -> Any:
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _deal_result(result: DealResult) -> dict[str, Any]:
    return {
        "deal": result.deal,
        "winner": result.winner,
        "order": [sorted(group) for group in result.order],
        "deltas": list(result.deltas),
        # The order of penalty records is not fixed anywhere; their multiset is.
        "penalties": sorted((p.seat, p.reason, p.amount) for p in result.penalties),
        "void": result.void,
        "detail": {
            key: _plain(result.detail.get(key, "<missing>"))
            for key in ("cards_left", "end", "pot", "dealer", "first", "tiebreak")
            if key in result.detail or key != "tiebreak"
        },
    }


def _match_result(result: MatchResult) -> dict[str, Any]:
    return {
        "totals": list(result.totals),
        "unit": result.unit,
        "higher_is_better": result.higher_is_better,
        "order": [sorted(group) for group in result.order],
        "winners": sorted(result.winners),
        "deals": [_deal_result(d) for d in result.deals],
    }


def _observed(obs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "to_act": obs["to_act"],
        "totals": list(obs["totals"]),
        "deal_index": obs["deal_index"],
        "dealer": obs["dealer"],
        "table": {suit: list(cards) for suit, cards in obs["table"].items()},
        "hand_sizes": list(obs["hand_sizes"]),
        "pot": obs["pot"],
        "passes": list(obs["passes"]),
        "free_passes_left": list(obs["free_passes_left"]),
        "eliminated": list(obs["eliminated"]),
        "skip_next": list(obs["skip_next"]),
    }


class Mismatch(AssertionError):
    pass


def _check(what: str, got: Any, want: Any, context: str) -> None:
    if got != want:
        raise Mismatch(f"{context}: {what} differs\n engine:    {got!r}\n reference: {want!r}")


_DECK_TEXTS: dict[str, list[str]] = {}


def _outside_texts(rules: SevensRules) -> list[str]:
    """Cards a seat may name that it does not hold: the deck plus a few not in it."""
    if rules.deck not in _DECK_TEXTS:
        texts = sorted(str(c) for c in deck_cards(rules))
        _DECK_TEXTS[rules.deck] = texts + [t for t in ("2C", "AS", "8H", "3D") if t not in texts]
    return _DECK_TEXTS[rules.deck]


def _choose(rng: random.Random, ref: RefMatch, legal: Sequence[str]) -> str | None:
    """The next input: mostly a legal action, sometimes one of the refused kinds.

    ``None`` stands for a timeout.
    """
    roll = rng.random()
    if roll >= 0.12:
        action = rng.choice(legal)
        if roll >= 0.995 and action != PASS:
            # A legal action in another spelling Card.parse reads (any case, 10, spaces).
            spelled = action.lower() if rng.random() < 0.5 else action.replace("T", "10")
            return spelled.replace(RUN_SEPARATOR, " + ")
        return action
    if roll < 0.03:
        return None
    if roll < 0.07:
        return PASS  # an illegal pass when the seat can play and has no free pass
    hand = ref.hand(ref.to_act())
    if roll < 0.09:
        return rng.choice([text for text in _outside_texts(ref.rules) if text not in hand])
    if roll < 0.11:
        not_legal = [text for text in hand if text not in legal]
        if len(hand) >= 2 and rng.random() < 0.3:
            first, second = rng.sample(hand, 2)
            not_legal.append(f"{first}+{second}")  # a run that is not a run (or not allowed)
        if not_legal:
            return rng.choice(not_legal)
    return rng.choice(GARBAGE)


def _play_match(
    rng: random.Random,
    rules: SevensRules,
    n: int,
    seed: int,
    specs: list[DealSpec] | None,
    returned_short: list[str],
    coverage: set[str],
    context: str,
) -> tuple[Match, RefMatch]:
    game = get_game("sevens")
    match = game.new_match(rules, n, seed=seed, deals=specs)
    ref = RefMatch(
        rules,
        n,
        lambda d: match.initial_hands()[d],
        num_deals=len(specs) if specs is not None else None,
        dealers=[spec.dealer for spec in specs] if specs is not None else None,
    )
    inputs: list[str | None] = []
    try:
        _drive(rng, match, ref, inputs, returned_short, context)
    except Mismatch as error:
        trail = "\n".join(
            f"  {_project(a)}    |    {_project(b)}"
            for a, b in _zip_long(match.events(), ref.events())
        )
        raise Mismatch(
            f"{error}\n inputs: {inputs}\n events (engine | reference):\n{trail}"
        ) from None
    _note_coverage(ref, coverage)
    return match, ref


def _note_coverage(ref: RefMatch, coverage: set[str]) -> None:
    """Tag the rule paths this match went through (asserted per test: no silent gaps)."""
    for event in ref.events():
        coverage.add(f"{event.kind}:{event.reason}")
        if event.kind == "play" and event.action and "+" in event.action:
            coverage.add("run")
    for result in ref.deal_results():
        coverage.add(f"end:{result.detail['end']}")
        if "tiebreak" in result.detail:
            coverage.add(f"tiebreak:{result.detail['tiebreak']}")
        if len(result.order) > 2:
            coverage.add("order:several-groups")
        if any(len(group) > 1 for group in result.order[1:]):
            coverage.add("order:tie")
    final = ref.result()
    if len(final.deals) > 1:
        coverage.add("match:several-deals")
    if len(final.winners) > 1:
        coverage.add("match:shared-win")
    if [sorted(g) for g in final.order] != [sorted(g) for g in ref.groups_by_totals()]:
        coverage.add("match:tiebreak-split")
    if ref.rules.until_broke and min(final.totals) <= 0:
        coverage.add("match:broke")


def _expected_coverage(rules: SevensRules, full: bool) -> set[str]:
    """The tags every run of these rules must reach."""
    want = {
        "deal_start:None",
        "play:None",
        "pass:forced",
        "timeout:timeout",
        "invalid_action:not_held",
        "invalid_action:not_legal",
        "invalid_action:malformed",
        "illegal_pass:illegal_pass",
        "deal_end:out",
        "match_end:None",
        "order:several-groups",
    }
    if full:
        want.add("match:several-deals")
    if rules.ante:
        want.add("ante:None")
    if rules.starters == "placed_from_hands":
        want.add("play:starter")
    if rules.multi_card_turn:
        want.add("run")
    if rules.free_passes:
        want.add("pass:free")
    if not rules.must_play:
        want.add("pass:voluntary")
    if rules.pass_elimination:
        want.add("eliminated:pass_limit")
    if rules.must_play or rules.max_voluntary_passes:
        penalty = rules.illegal_pass_penalty
        if penalty == "lose_turn":
            # Unreachable when the illegal pass (after the free ones) is always eliminating.
            if not rules.pass_elimination or rules.pass_elimination > rules.free_passes:
                want.add("pass:skipped")
        elif penalty == "chips":
            want.add("penalty:illegal_pass")
        else:
            want.add("eliminated:forfeit")
    else:
        want.discard("illegal_pass:illegal_pass")  # every pass is a legal one
    return want


def _zip_long(a: Sequence[Event], b: Sequence[Event]) -> list[tuple[Event | None, Event | None]]:
    return [
        (a[i] if i < len(a) else None, b[i] if i < len(b) else None)
        for i in range(max(len(a), len(b)))
    ]


def _drive(
    rng: random.Random,
    match: Match,
    ref: RefMatch,
    inputs: list[str | None],
    returned_short: list[str],
    context: str,
) -> None:
    """Play ``match`` and ``ref`` side by side to the end, comparing at every step."""
    seen = len(ref.events())
    _check(
        "events at start",
        [_project(e) for e in match.events()],
        [_project(e) for e in ref.events()],
        context,
    )
    step = 0
    while not ref.is_over():
        if step > STEP_LIMIT:
            raise Mismatch(f"{context}: no end after {STEP_LIMIT} decisions (SV-24)")
        if match.is_over():
            raise Mismatch(
                f"{context} step {step}: the engine's match is over, the reference's not"
            )
        seat = ref.to_act()
        legal = ref.legal_actions()
        if match.to_act() != seat or match.legal_actions() != legal:
            where = f"{context} deal {ref.deal.index} step {step}"
            _check("seat to act", match.to_act(), seat, where)
            _check("legal actions", match.legal_actions(), legal, where)
        if step % 8 == 0:
            where = f"{context} deal {ref.deal.index} step {step}"
            obs = match.observation(seat)
            facts = ref.observation_facts()
            facts.update(to_act=seat, totals=list(ref.totals), deal_index=ref.deal.index)
            _check("observation", _observed(obs), facts, where)
            _check("own hand", list(obs["hand"]), ref.hand(seat), where)
            fallback = match.fallback_action()
            _check(f"autopilot action {fallback!r} is legal", fallback in legal, True, where)
        choice = _choose(rng, ref, legal)
        inputs.append(choice)
        if choice is None:
            got = match.apply_timeout()
            want = ref.apply_timeout()
        else:
            if step % 5 == 0 or choice not in legal:
                engine_ok = match.check(choice) is None
                reference_ok = ref.check(choice) is None
                if engine_ok != reference_ok:
                    where = f"{context} deal {ref.deal.index} step {step}"
                    _check(f"check({choice!r}) is None", engine_ok, reference_ok, where)
            source = Source.AUTOPILOT if step % 23 == 11 else Source.BOT
            got = match.apply(choice, source)
            want = ref.apply(choice, source)
        log = match.events()
        new_events = log[seen:]
        seen = len(log)
        if not _same_events(new_events, want):
            where = f"{context} deal {ref.deal.index} step {step}"
            logged = [_project(e) for e in new_events]
            _check(f"events after {choice!r}", logged, [_project(e) for e in want], where)
        if got != new_events and len(returned_short) < 5:
            # Base contract: apply() returns the new events. Collected, asserted at the end.
            returned = [_project(e) for e in got]
            logged = [_project(e) for e in new_events]
            where = f"{context} deal {ref.deal.index} step {step}"
            returned_short.append(f"{where}: {choice!r} returned {returned}, logged {logged}")
        step += 1
    _check("match over", match.is_over(), True, context)
    _check("event count", len(match.events()), len(ref.events()), context)
    _check(
        "deal results",
        [_deal_result(r) for r in match.deal_results()],
        [_deal_result(r) for r in ref.deal_results()],
        context,
    )
    _check("match result", _match_result(match.result()), _match_result(ref.result()), context)
    if len(inputs) % 37 == 0:  # now and then: the record replays to the same match
        replay = get_game("sevens").match_from_json(match.to_json())
        _check("replayed events", replay.events(), match.events(), context)
        _check("replayed result", replay.result(), match.result(), context)


def _check_hand_sizes(match: Match, spec: DealSpec, n: int, context: str) -> None:
    """SV-4: the seats from the left of the dealer on get the extra cards."""
    assert spec.dealer is not None
    sizes = [len(hand) for hand in match.initial_hands()[0]]
    total = sum(sizes)
    extra = total % n
    want = [total // n] * n
    for k in range(extra):
        want[(spec.dealer + 1 + k) % n] += 1
    _check("hand sizes", sizes, want, context)


def _run_deals(label: str, rules: SevensRules, deals: int) -> set[str]:
    game = get_game("sevens")
    counts = list(game.player_counts(rules))
    assert counts and set(counts) <= set(range(3, 9)), counts  # SV-1
    rng = random.Random(f"sevens-differential-{label}")
    returned_short: list[str] = []
    coverage: set[str] = set()
    for i in range(deals):
        n = counts[i % len(counts)]
        dealer = rng.randrange(n)
        # Mostly the SV-4 rotation (first card left of the dealer); sometimes a duplicate
        # deal's rotation.
        rotation = (dealer + 1) % n if rng.random() < 0.8 else rng.randrange(n)
        spec = DealSpec(seed=rng.getrandbits(48), rotation=rotation, dealer=dealer)
        context = f"{label} n={n} seed={i} spec={spec}"
        match, _ref = _play_match(rng, rules, n, i, [spec], returned_short, coverage, context)
        _check_hand_sizes(match, spec, n, context)
    _assert_returns(returned_short)
    return coverage


def _run_full_matches(label: str, rules: SevensRules, matches: int) -> set[str]:
    game = get_game("sevens")
    counts = list(game.player_counts(rules))
    rng = random.Random(f"sevens-differential-full-{label}")
    returned_short: list[str] = []
    coverage: set[str] = set()
    for i in range(matches):
        n = counts[i % len(counts)]
        context = f"{label} full match n={n} seed={10_000 + i}"
        _play_match(rng, rules, n, 10_000 + i, None, returned_short, coverage, context)
    _assert_returns(returned_short)
    return coverage


def _assert_returns(returned_short: list[str]) -> None:
    """apply()/apply_timeout() must return exactly the events they added to the log."""
    assert not returned_short, "\n".join(returned_short)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_deals_agree(preset: str) -> None:  # SV-1..SV-31 on every preset
    rules = get_game("sevens").preset(preset)
    assert isinstance(rules, SevensRules)
    coverage = _run_deals(preset, rules, DEALS_PER_PRESET)
    assert _expected_coverage(rules, full=False) <= coverage, coverage


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_preset_matches_agree(preset: str) -> None:  # SV-5, SV-14, SV-32..SV-34
    rules = get_game("sevens").preset(preset)
    assert isinstance(rules, SevensRules)
    coverage = _run_full_matches(preset, rules, FULL_MATCHES_PER_PRESET)
    assert _expected_coverage(rules, full=True) <= coverage, coverage


@pytest.mark.parametrize("label", sorted(CUSTOM))
def test_custom_rules_agree(label: str) -> None:
    rules = get_game("sevens").rules_from_dict(CUSTOM[label])
    assert isinstance(rules, SevensRules)
    coverage = _run_deals(label, rules, DEALS_PER_CUSTOM)
    assert _expected_coverage(rules, full=False) <= coverage, coverage
    coverage = _run_full_matches(label, rules, FULL_MATCHES_PER_PRESET // 2)
    want = _expected_coverage(rules, full=True) | CUSTOM_FULL_COVERAGE.get(label, set())
    assert want <= coverage, coverage


RANDOM_RULE_SETS = 40
DEALS_PER_RANDOM_RULES = 25
STEP_LIMIT = 20_000  # SV-24: any accepted rules object must reach the end of its match


def _random_rules(rng: random.Random) -> SevensRules:
    """A random rules object the validator accepts (RULES.md: every accepted combination
    must play to a terminal state)."""
    game = get_game("sevens")
    for _attempt in range(1000):
        deck = rng.choice(["french52", "french52", "german32", "spanish40"])
        ace = {"german32": "high", "spanish40": "low"}.get(deck) or rng.choice(["low", "high"])
        ranks = {"french52": "A23456789TJQK", "german32": "789TJQKA", "spanish40": "A234567JQK"}
        starter_rank = rng.choice(["7", "7", rng.choice(ranks[deck])])
        starters = rng.choice(["in_hand", "in_hand", "removed_before_deal", "placed_from_hands"])
        opening = "any_seven"
        if starters == "in_hand":
            opening = rng.choice(
                ["seven_of_diamonds", "left_of_dealer_diamond", "any_seven", "seven_of_hearts"]
            )
        scoring = rng.choice(["winner_only", "chips", "penalty_points"])
        money = scoring != "winner_only"
        options: dict[str, Any] = {
            "deck": deck,
            "ace": ace,
            "starter_rank": starter_rank,
            "starters": starters,
            "opening": opening,
            "multi_card_turn": rng.random() < 0.4,
            "eights_before_sixes": rng.random() < 0.3,
            "must_play": rng.random() < 0.7,
            "free_passes": rng.choice([0, 0, 1, 3]),
            "pass_elimination": rng.choice([0, 0, 1, 2, 4]),
            "max_voluntary_passes": rng.choice([0, 1, 3]),
            "illegal_pass_penalty": rng.choice(
                ["lose_turn", "forfeit_deal"] + (["chips"] if money else [])
            ),
            "illegal_pass_payee": rng.choice(["pot", "winner"]),
            "scoring": scoring,
            "deals": rng.choice([0, 1, 2, 3]),
            "match_tiebreak": rng.choice(
                ["none", "extra_deal", "fewest_cards_last_deal"]
                + (["showdown"] if scoring == "penalty_points" else [])
            ),
        }
        if options["illegal_pass_penalty"] == "chips":
            options["illegal_pass_chips"] = rng.randint(1, 5)
        if money:
            options["pass_chips"] = rng.choice([0, 1, 2])
            options["voluntary_pass_chips"] = rng.choice([0, 2])
            options["card_penalty"] = rng.choice(["none", "per_card", "pips", "face_ten"])
            options["ace_pips"] = rng.choice([1, 15])
            options["seven_penalty"] = rng.choice([0, 0, 5])
        if scoring == "chips":
            options["ante"] = rng.choice([0, 1, 2])
            if options["ante"]:
                options["short_hand_ante"] = rng.choice(["none", "minus_one", "plus_one"])
            if rng.random() < 0.2:
                options.update(until_broke=True, starting_chips=rng.choice([10, 40]), ante=2)
        try:
            rules = game.rules_from_dict(options)
        except InvalidRulesError:
            continue
        assert isinstance(rules, SevensRules)
        return rules
    raise AssertionError("no random rules object was accepted in 1,000 tries")


def test_random_rules_agree() -> None:  # SV-24 and every option, in random combinations
    rng = random.Random("sevens-differential-random-rules")
    for k in range(RANDOM_RULE_SETS):
        rules = _random_rules(rng)
        label = f"random-{k} {rules.to_dict()}"
        _run_deals(label, rules, DEALS_PER_RANDOM_RULES)
        _run_full_matches(label, rules, 1)


def _redeal(rules: SevensRules, n: int, seed: int, dealer: int) -> list[list[str]]:
    """D-10, written out: the sorted deck (less removed starters) shuffled by the seed,
    card k to seat (dealer + 1 + k) % n (SV-4); hands sorted."""
    deck = sorted(deck_cards(rules))
    if rules.starters == "removed_before_deal":
        deck = [card for card in deck if card.rank != Rank.parse(rules.starter_rank)]
    random.Random(seed).shuffle(deck)
    hands: list[list[str]] = [[] for _ in range(n)]
    for i in range(n):
        hands[(dealer + 1 + i) % n] = [str(card) for card in sorted(deck[i::n])]
    return hands


def test_engine_deals_as_documented() -> None:  # SV-4, SV-5, D-10, D-11
    """Anyone holding a revealed seed can re-deal: the engine's hands follow D-10 / D-11."""
    game = get_game("sevens")
    for name, rules in sorted(PRESETS.items()):
        for n in game.player_counts(rules):
            spec = DealSpec(seed=1000 + n, rotation=(n - 1) % n, dealer=n - 2)
            match = game.new_match(rules, n, seed=n, deals=[spec])
            assert match.initial_hands()[0] == _redeal(rules, n, spec.seed, n - 2), name
            own = game.new_match(rules, n, seed=4242 + n)  # the match derives its own specs
            digest = hashlib.sha256(f"{4242 + n}:0".encode()).digest()
            seed = int.from_bytes(digest[:8], "big") & ~(1 << 63)
            assert own.initial_hands()[0] == _redeal(rules, n, seed, 0), (name, n)


def test_reference_deck_matches_engine_deal() -> None:  # SV-2, SV-4, SV-6
    """Sanity of the harness: the engine's hands are the reference's deck."""
    game = get_game("sevens")
    for name, rules in sorted(PRESETS.items()):
        match = game.new_match(rules, 4, seed=7)
        dealt = {Card.parse(t) for hand in match.initial_hands()[0] for t in hand}
        removed = 4 if rules.starters == "removed_before_deal" else 0
        assert len(dealt) + removed == len(deck_cards(rules)), name
        assert dealt <= deck_cards(rules), name
