"""Fair-play statistics: does one player's play help another beyond its own interest?

Pure and I/O-free: it reads a match being replayed (or played) one decision at a time.
The platform's report (``referee/seasons/collusion.py``) walks a season's records through
:func:`decision_help` and hands the decisions to :func:`pair_statistics`; the bench
(``bench/collusion.py``) does the same while it plays. docs/SECURITY.md, "Fair play",
explains the method and its measured power.

The idea is Mazrooei, Archibald and Bowling's (AAAI 2013): judge each decision by how
much value it moved to each other player compared with the alternatives the player had.
The value is measured with the whole deal known (the record holds every hand), so it sees
what the helper's partner held even though the helper, if honest, could not:

* Sevens family: a play *opens* the cards that become playable by it. What it opened
  for player B beyond chance is the number of B's cards among them, less the share of
  the opened hidden cards that B's hand size gives B. An honest player cannot see who
  holds which hidden card, so over many decisions its choices open as much for one
  opponent as for another; a player that knows its partner's hand and lets it out opens
  more for the partner.
* Sedma: a card played to a trick moves the trick's card points to whoever holds it
  after the card. An honest player moves points to one opponent as often as to another;
  a player who lets a confederate's card stand (or throws points onto it) does not.

For each decision with a choice, ``transfer[B]`` is what the chosen action gave B less
the average over the legal actions. For the ordered pair (A, B), the decision's score is
``transfer[B]`` less the mean transfer to A's other opponents at the table: honest play
is indifferent to which opponent is which, so this is symmetric about 0 under the null
of no collusion (the opponents' labels are exchangeable). The deal-level sums of these
scores give a self-normalized z (the normal approximation of their sign-flip permutation
distribution); the thresholds are Bonferroni-corrected over the pairs tested, one-sided.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

from referee.games.base import PASS, RUN_SEPARATOR, Match
from referee.games.cards import Card
from referee.games.sedma.hand import card_points
from referee.games.sedma.heuristic import trick_winner
from referee.games.sedma.rules import SedmaRules
from referee.games.sevens.match import SevensMatch
from referee.games.sevens.tables import CARD_INDEX, ROW_BITS, Tables, tables_for

SCREEN_SIGMA = 3.0
"""Screening threshold: as rare by chance, after the correction, as 3 sigma one-sided."""
ACT_SIGMA = 5.0
""""Act on this": as rare as 5 sigma one-sided (Regan's one-in-a-million), corrected."""
MIN_DEALS = 10
"""A pair seen in fewer deals with a choice gets no z (too little to judge)."""
EVIDENCE_KEPT = 5
"""Decisions kept per pair as evidence: the ones that moved the most to the partner."""

_NORMAL = NormalDist()


@dataclass(frozen=True, slots=True)
class Decision:
    """One decision with a choice: what the chosen action moved to each opponent."""

    seat: int
    deal: int
    action: str
    transfer: Mapping[int, float]  # opponent seat -> help beyond the average alternative


def action_help(match: Match, legal: Sequence[str]) -> dict[str, dict[int, float]] | None:
    """For each legal action of the seat to act, what it would move to each opponent
    (seats of another side in Sedma); ``None`` where the game offers nothing to judge."""
    seat = match.to_act()
    if isinstance(match, SevensMatch):
        return _sevens_openings(match, seat, legal)
    if isinstance(match.rules, SedmaRules):
        return _sedma_points(match, seat, legal, match.rules)
    return None


def decision_help(match: Match, action: str) -> Decision | None:
    """What ``action``, the choice of the seat to act, moved to each opponent beyond the
    average legal alternative; ``None`` when the seat had no choice, the action is not
    legal, or there are fewer than two opponents to compare."""
    legal = match.legal_actions()
    if len(legal) < 2 or action not in legal:
        return None
    per_action = action_help(match, legal)
    if per_action is None:
        return None
    opponents = per_action[action].keys()
    if len(opponents) < 2:
        return None
    n = len(legal)
    transfer = {
        s: per_action[action][s] - sum(per_action[a][s] for a in legal) / n for s in opponents
    }
    return Decision(match.to_act(), match.deal_index(), action, transfer)


def _sevens_openings(
    match: SevensMatch, seat: int, legal: Sequence[str]
) -> dict[str, dict[int, float]] | None:
    table, hands = match.held_masks()
    t: Tables = tables_for(match.sevens_rules)
    opponents = [s for s in range(match.num_players) if s != seat and hands[s]]
    hidden = 0
    for s in opponents:
        hidden |= hands[s]
    if not hidden:
        return None
    before = _playable(t, table)
    out: dict[str, dict[int, float]] = {}
    for action in legal:
        placed = 0
        if action != PASS:
            for text in action.split(RUN_SEPARATOR):
                placed |= 1 << CARD_INDEX[text]
        after = table | placed
        opened = _playable(t, after) & ~before & ~after & hidden
        share = opened.bit_count() / hidden.bit_count()
        out[action] = {
            s: (opened & hands[s]).bit_count() - share * hands[s].bit_count() for s in opponents
        }
    return out


def _playable(t: Tables, table: int) -> int:
    out = 0
    for s in range(4):
        shift = 13 * s
        out |= t.row_playable((table >> shift) & ROW_BITS) << shift
    return out


def _sedma_points(
    match: Match, seat: int, legal: Sequence[str], rules: SedmaRules
) -> dict[str, dict[int, float]] | None:
    obs = match.observation(seat)
    trick = [(int(t["seat"]), Card.parse(t["card"])) for t in obs["trick"]]
    if not trick:  # leading moves nothing yet
        return None
    mine = rules.side_of(seat)
    opponents = [s for s in range(match.num_players) if rules.side_of(s) != mine]
    points = sum(card_points(card) for _, card in trick)
    out: dict[str, dict[int, float]] = {}
    for action in legal:
        card = Card.parse(action.split(RUN_SEPARATOR)[0])
        holder = trick_winner([*trick, (seat, card)])
        moved = points + card_points(card)
        out[action] = {s: float(moved) if holder == s else 0.0 for s in opponents}
    return out


# ------------------------------------------------------------------------ pair statistics


@dataclass(frozen=True, slots=True)
class Evidence:
    """One decision behind a flag: where it was, what was chosen, what it moved."""

    match_id: str
    deal: int
    action: str
    moved: float  # the decision's score for the pair


@dataclass
class PairStat:
    """The evidence that ``helper``'s decisions favoured ``helped``."""

    helper: str
    helped: str
    deals: int = 0
    decisions: int = 0
    total: float = 0.0
    sum_squares: float = 0.0  # of the deal-level sums
    z: float = 0.0
    level: str = ""  # "", "screen" or "act"
    evidence: list[Evidence] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "helper": self.helper,
            "helped": self.helped,
            "deals": self.deals,
            "decisions": self.decisions,
            "moved": round(self.total, 3),
            "z": round(self.z, 2),
            "level": self.level,
            "evidence": [
                {
                    "match": e.match_id,
                    "deal": e.deal,
                    "action": e.action,
                    "moved": round(e.moved, 3),
                }
                for e in self.evidence
            ],
        }


@dataclass(frozen=True, slots=True)
class PlayedMatch:
    """A match's decisions with the names in its seats."""

    match_id: str
    seats: Sequence[str]
    decisions: Sequence[Decision]


@dataclass(frozen=True, slots=True)
class Thresholds:
    """The one-sided z a pair must reach, corrected for the number of pairs tested."""

    pairs: int
    screen: float
    act: float


def thresholds(pairs: int) -> Thresholds:
    """Bonferroni: the tail of ``SCREEN_SIGMA``/``ACT_SIGMA`` shared among ``pairs``."""
    k = max(pairs, 1)

    def corrected(sigma: float) -> float:
        return _NORMAL.inv_cdf(1.0 - (1.0 - _NORMAL.cdf(sigma)) / k)

    return Thresholds(k, corrected(SCREEN_SIGMA), corrected(ACT_SIGMA))


def pair_statistics(matches: Iterable[PlayedMatch]) -> tuple[list[PairStat], Thresholds]:
    """Every ordered pair's z, flagged against the corrected thresholds, strongest first.

    A bot playing in two seats of one match (never in a season) is one player there."""
    stats: dict[tuple[str, str], PairStat] = {}
    deal_sums: dict[tuple[str, str], dict[tuple[str, int], float]] = {}
    for played in matches:
        for d in played.decisions:
            helper = played.seats[d.seat]
            opponents = [s for s in d.transfer if played.seats[s] != helper]
            if len(opponents) < 2:
                continue
            total = sum(d.transfer[s] for s in opponents)
            for s in opponents:
                helped = played.seats[s]
                others = (total - d.transfer[s]) / (len(opponents) - 1)
                score = d.transfer[s] - others
                key = (helper, helped)
                stat = stats.get(key)
                if stat is None:
                    stat = stats[key] = PairStat(helper, helped)
                    deal_sums[key] = {}
                stat.decisions += 1
                stat.total += score
                sums = deal_sums[key]
                where = (played.match_id, d.deal)
                sums[where] = sums.get(where, 0.0) + score
                _keep(stat, Evidence(played.match_id, d.deal, d.action, score))
    tested = [s for k, s in stats.items() if len(deal_sums[k]) >= MIN_DEALS]
    limits = thresholds(len(tested))
    for key, stat in stats.items():
        sums = deal_sums[key]
        stat.deals = len(sums)
        stat.sum_squares = sum(v * v for v in sums.values())
        if stat.deals >= MIN_DEALS and stat.sum_squares > 0:
            stat.z = stat.total / math.sqrt(stat.sum_squares)
        stat.level = "act" if stat.z >= limits.act else "screen" if stat.z >= limits.screen else ""
    ordered = sorted(stats.values(), key=lambda s: (-s.z, s.helper, s.helped))
    return ordered, limits


def _keep(stat: PairStat, evidence: Evidence) -> None:
    kept = stat.evidence
    if len(kept) < EVIDENCE_KEPT:
        kept.append(evidence)
    elif evidence.moved > kept[-1].moved:
        kept[-1] = evidence
    else:
        return
    kept.sort(key=lambda e: -e.moved)
