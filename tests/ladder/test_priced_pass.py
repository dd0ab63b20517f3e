"""The ``priced-pass`` rung: the heuristic, plus a pass while able to play where the rules
price that illegal pass (SV-18, SV-19) instead of refusing it, and it pays.

Its passes are illegal passes, penalised exactly as the rules say (a lost turn in
``sevens``, chips in ``fan-tan``); it never passes as its first decision of a deal, never
twice in a row (a failed decision is a strike), at most ``PRICED_PASSES_PER_DEAL`` a deal,
never where the rules take the deal for it (``forfeit_deal``) or could eliminate it
(SV-23); and over the same deals it wins more of them than the heuristic it is built on.
"""

from __future__ import annotations

import itertools
import random

import pytest

from referee.games.base import PASS, DealSpec, EventKind
from referee.games.ladder import heuristic_policy, priced_pass_policy
from referee.games.policies import POLICIES, Policy
from referee.games.sevens import heuristic
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.rules import PRESETS, SevensRules

DEALS = 100


def _play(
    rules: SevensRules, seed: int, hero: int, policy: Policy
) -> tuple[SevensMatch, list[str]]:
    """One deal: ``policy`` in seat ``hero``, ``random`` elsewhere; the hero's event kinds
    in order (its decisions and their penalties; not the turns an illegal pass lost)."""
    match = SevensMatch(rules, 4, seed, [DealSpec(seed, 0, 0)])
    rng = random.Random(seed * 4 + hero)
    kinds: list[str] = []
    steps = 0
    while not match.is_over():
        steps += 1
        assert steps < 2_000, "the deal does not end"
        legal = match.legal_actions()
        seat = match.to_act()
        if seat == hero:
            action = policy(match.observation(hero), legal, rng)
            assert action in legal or action == PASS
        else:
            action = legal[rng.randrange(len(legal))]
        events = match.apply(action)
        kinds += [e.kind for e in events if e.seat == hero and e.reason != "skipped"]
    return match, kinds


def _wins(rules: SevensRules, policy: Policy) -> int:
    won = 0
    for seed in range(DEALS):
        match, _ = _play(rules, seed, seed % 4, policy)
        won += match.deal_results()[0].order[0] == (seed % 4,)
    return won


def test_priced_pass_is_a_policy_of_the_ladder() -> None:
    assert POLICIES["priced-pass"] is priced_pass_policy


@pytest.mark.parametrize("preset", ["sevens", "fan-tan"])
def test_its_passes_are_illegal_passes_penalised_as_the_rules_say(preset: str) -> None:
    """SV-18, SV-19: each pass it makes while able is an ``illegal_pass``, with the preset's
    penalty (``sevens``: a lost turn, no chips; ``fan-tan``: 5 chips); never the first
    decision of a deal, never twice in a row, at most PRICED_PASSES_PER_DEAL a deal."""
    rules = PRESETS[preset]
    total = 0
    for seed in range(40):
        _, kinds = _play(rules, seed, seed % 4, priced_pass_policy)
        decisions = [k for k in kinds if k in ("play", "pass", "illegal_pass")]
        illegal = decisions.count(EventKind.ILLEGAL_PASS)
        total += illegal
        assert illegal <= heuristic.PRICED_PASSES_PER_DEAL
        assert not decisions or decisions[0] != EventKind.ILLEGAL_PASS
        assert all(
            not (a == b == EventKind.ILLEGAL_PASS) for a, b in itertools.pairwise(decisions)
        ), decisions
        penalties = kinds.count(EventKind.PENALTY)
        assert penalties == (illegal if rules.illegal_pass_penalty == "chips" else 0), kinds
    assert total > 0, "priced-pass never passed in 40 deals"


@pytest.mark.parametrize(
    "rules",
    [
        PRESETS["sevens"].replace(illegal_pass_penalty="forfeit_deal"),
        PRESETS["shichi-narabe"],
        PRESETS["fan-tan"].replace(must_play=False, max_voluntary_passes=2),
    ],
    ids=["forfeit_deal", "pass-elimination", "must-play-off"],
)
def test_it_never_passes_illegally_where_the_rules_do_not_price_it(rules: SevensRules) -> None:
    """SV-19 ``forfeit_deal`` takes the deal; SV-23 eliminates a seat that passes too
    often (its free passes, SV-22, are legal: the heuristic's own); with must_play off
    (SV-20) there is no illegal pass: priced-pass is the heuristic there, action for
    action."""
    for seed in range(25):
        _, kinds = _play(rules, seed, seed % 4, priced_pass_policy)
        assert EventKind.ILLEGAL_PASS not in kinds
    for seed in range(10):
        priced, _ = _play(rules, seed, 1, priced_pass_policy)
        plain, _ = _play(rules, seed, 1, heuristic_policy)
        assert priced.events() == plain.events()


def test_pays_only_when_every_play_opens_the_way_for_the_others() -> None:
    """SV-18, SV-19: the decision itself, from the best play's score and the deal's
    history as the seat sees it (a lost turn shows there as its ``pass``, ``skipped``)."""
    rules = PRESETS["sevens"]
    me = 2
    before = [{"seat": me, "kind": "play", "action": "7D"}]
    pays = heuristic.priced_pass_pays
    assert pays(rules, -1.0, before, me, 0)
    assert not pays(rules, 0.0, before, me, 0)  # a play that opens nothing for the others
    assert not pays(rules, 5.0, before, me, 0)
    assert not pays(rules, float("-inf"), before, me, 0)  # nothing to play: a legal pass
    assert not pays(rules, -1.0, [], me, 0)  # its first decision of the deal
    assert not pays(rules, -1.0, [{"seat": 1, "kind": "play", "action": "7D"}], me, 0)
    again = [*before, {"seat": me, "kind": "illegal_pass"}, {"seat": 3, "kind": "pass"}]
    assert not pays(rules, -1.0, again, me, 1)  # never twice in a row
    lost = [*before, {"seat": me, "kind": "illegal_pass"}]
    lost.append({"seat": me, "kind": "pass", "reason": "skipped"})  # its lost turn
    assert not pays(rules, -1.0, lost, me, 2)  # the lost turn was no decision of its own
    cap = heuristic.PRICED_PASSES_PER_DEAL
    spent = before + [{"seat": me, "kind": k} for k in ("illegal_pass", "play") * cap]
    assert not pays(rules, -1.0, spent, me, cap)  # PRICED_PASSES_PER_DEAL used up
    assert pays(rules, -1.0, spent[:-2], me, cap - 1)


def test_it_wins_more_deals_than_the_heuristic_on_the_same_deals() -> None:
    """Against three random seats, the same deals and seats: the blocker it keeps by a
    priced pass is worth the lost turn (sevens) or the chips (fan-tan). bench/strength.py
    measures it over thousands of deals (README "Strength ladder")."""
    for preset in ("sevens", "fan-tan"):
        rules = PRESETS[preset]
        assert _wins(rules, priced_pass_policy) >= _wins(rules, heuristic_policy) + 10, preset
