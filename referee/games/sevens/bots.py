"""Search bots of the Sevens family on the fast engine (``fast.py``) and the belief
(``belief.py``): what the ``mc`` and ``ismcts`` rungs of ``referee/games/ladder.py`` run
when the rules play one card a turn.

* :func:`determinized`: Perfect Information Monte Carlo. Each world is sampled from the
  belief (every hard fact holds) and weighted by how well it explains the other seats'
  plays; every legal move is played in it and the deal played out, the same world and
  playout seed for every move (common random numbers). The move with the best weighted
  mean utility wins.
* :func:`ismcts`: single-observer Information Set MCTS over the same worlds, with an
  opponent model: one tree of the seat's own decisions (UCB1 with availability counts),
  the other seats' moves in it drawn from their model as in the playouts (not chosen by
  their own UCB: the bots it meets are not minimax players), the seat's utility backed
  up. Unlike :func:`determinized` it plans its own later moves rather than leaving them
  to the heuristic, and spends its playouts on the moves that look best.
* :func:`solver`: determinized search with an exact endgame. While more than
  ``exact_cards`` cards are in the hands it is :func:`determinized`; from then on each
  world drawn from the belief is solved exactly by expectimax (``exact.py``: the seat
  maximises its probability of winning, the other seats move by their model) and the
  move with the best mean over the worlds is played. Outside the solver's scope (free or
  voluntary passes, eliminations, skips) it is :func:`determinized` throughout.

The playouts model each other seat as a mixture: each of its moves is the heuristic's
with the seat's share of heuristic play and a uniformly random legal move otherwise. The
share is the belief's posterior for that world (``SevensBelief.model``: half and half
before a seat has played, then what its plays say, never within ``belief.SHARE_FLOOR`` of 0 or 1):
a bot does not know whom it plays, and learns it from the deal. The seat itself plays the
heuristic in its playouts.

The utility is the rules' own: in a ``winner_only`` game a deal won is 1 and anything else
0; with chips or penalty points, half the win and half the deal's score change over the
deal's largest change.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

from referee.games.search import beats, paired_best
from referee.games.sevens import exact
from referee.games.sevens.belief import SevensBelief
from referee.games.sevens.fast import FastDeal, heuristic_move, move_text, random_move, text_move


def supports(obs: Mapping[str, Any]) -> bool:
    """True when the fast engine plays the observation's rules (one card a turn)."""
    rules = obs.get("rules", {})
    return obs.get("game") == "sevens" and not rules.get("multi_card_turn", False)


def utility(deal: FastDeal, seat: int) -> float:
    """``seat``'s utility of the finished ``deal`` in [-1, 1] (module docstring)."""
    won = 1.0 if deal.winner == seat else 0.0
    fr = deal.fr
    if fr.scoring == "winner_only":
        return won
    deltas = deal.deltas()
    scale = max(1, max(abs(x) for x in deltas))
    sign = 1.0 if fr.higher_is_better else -1.0
    return 0.5 * won + 0.5 * sign * deltas[seat] / scale


def playout(deal: FastDeal, seat: int, rng: random.Random, shares: Sequence[float]) -> None:
    """Play ``deal`` to its end: ``seat`` by the heuristic, each other seat by the
    heuristic with its probability in ``shares``, else at random."""
    while deal.winner < 0:
        to_act = deal.to_act
        if to_act == seat:
            deal.play(heuristic_move(deal, rng))
        else:
            deal.play(_model_move(deal, rng, shares[to_act]))


def _model_move(deal: FastDeal, rng: random.Random, share: float) -> int:
    """The move of the seat to act under the opponent model: the heuristic's with
    probability ``share``, else a uniformly random legal move."""
    if rng.random() < share:
        return heuristic_move(deal, rng)
    return random_move(deal, rng)


def determinized(
    obs: Mapping[str, Any],
    legal: Sequence[str],
    rng: random.Random,
    worlds: int,
    deadline: float,
) -> str:
    """The best of ``legal`` by determinized Monte Carlo (module docstring): at most
    ``worlds`` worlds drawn from the belief in proportion to their weights, whole worlds
    only, none started after ``deadline`` (a ``time.perf_counter`` value).

    The heuristic's own move is the default: another move replaces it only when its mean
    gain over the heuristic's move, world by world, exceeds ``search.CONFIDENCE`` standard
    errors (``referee.games.search.paired_best``)."""
    belief = SevensBelief(obs)
    seat = belief.seat
    moves = [text_move(a) for a in legal]
    default = heuristic_move(belief.deal(belief.sample(rng)), rng)  # its own hand only
    k0 = moves.index(default) if default in moves else 0
    values: list[list[float]] = [[] for _ in moves]
    pool: list[tuple[list[int], list[float]]] = []
    for _ in range(worlds):
        if not pool:
            pool = _resample(belief, rng, 16)
        hands, shares = pool.pop()
        base = belief.deal(hands)
        seed = rng.getrandbits(32)
        for k, move in enumerate(moves):
            deal = base.clone()
            deal.play(move)
            playout(deal, seat, random.Random(seed), shares)
            values[k].append(utility(deal, seat))
        if time.perf_counter() > deadline:
            break
    return legal[paired_best(values, k0)]


class _Node:
    __slots__ = ("avail", "children", "player", "sq", "total", "visits")

    def __init__(self, player: int) -> None:
        self.player = player
        self.children: dict[int, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.total = 0.0
        self.sq = 0.0


def ismcts(
    obs: Mapping[str, Any],
    legal: Sequence[str],
    rng: random.Random,
    iterations: int,
    deadline: float,
    exploration: float = 0.7,
) -> str:
    """The most visited of ``legal`` after single-observer ISMCTS (module docstring):
    at most ``iterations`` iterations, none started after ``deadline``. Worlds are drawn
    from the belief in proportion to their weights (a batch is sampled and resampled).
    The heuristic's move stays unless the most visited move's mean beats its mean by
    ``search.CONFIDENCE`` standard errors (``referee.games.search.beats``)."""
    belief = SevensBelief(obs)
    seat = belief.seat
    root = _Node(-1)
    pool: list[tuple[list[int], list[float]]] = []
    for it in range(iterations):
        if not pool:
            pool = _resample(belief, rng, 16)
        hands, shares = pool.pop()
        deal = belief.deal(hands)
        node = root
        path: list[_Node] = []
        while deal.winner < 0:
            player = deal.to_act
            if player != seat:  # the others move by their model, as in the playouts
                deal.play(_model_move(deal, rng, shares[player]))
                continue
            moves = deal.legal_moves()
            if len(moves) == 1:
                deal.play(moves[0])
                continue
            children = node.children
            untried = [m for m in moves if m not in children]
            for m in moves:
                child = children.get(m)
                if child is not None:
                    child.avail += 1
            if untried:
                move = untried[rng.randrange(len(untried))]
                child = _Node(player)
                child.avail = 1
                children[move] = child
                deal.play(move)
                path.append(child)
                break
            best_value = -math.inf
            move = moves[0]
            for m in moves:
                ch = children[m]
                value = ch.total / ch.visits + exploration * math.sqrt(
                    math.log(ch.avail) / ch.visits
                )
                if value > best_value:
                    best_value, move = value, m
            node = children[move]
            deal.play(move)
            path.append(node)
        playout(deal, seat, rng, shares)
        u = utility(deal, seat)
        for n in path:
            n.visits += 1
            n.total += u
            n.sq += u * u
        if it % 8 == 7 and time.perf_counter() > deadline:
            break
    default = heuristic_move(belief.deal(belief.sample(rng)), rng)  # its own hand only
    children = root.children
    if not children:
        return legal[0]
    best = max(children, key=lambda m: (children[m].visits, -m))
    chosen = best
    if best != default and default in children:
        a, b = children[best], children[default]
        if not beats((a.visits, a.total, a.sq), (b.visits, b.total, b.sq)):
            chosen = default  # the search is not sure enough to overrule the heuristic
    return move_text(chosen)


OPPONENT_MODELS = ("belief", "random")
"""The solver's opponent models: ``belief``, each other seat the heuristic with its
posterior share in the world (``SevensBelief.model``), else random; ``random``, every
other seat uniformly random."""


def solver(
    obs: Mapping[str, Any],
    legal: Sequence[str],
    rng: random.Random,
    worlds: int,
    exact_cards: int,
    node_limit: int,
    deadline: float,
    rollout_worlds: int,
    opponents: str = "belief",
    hero_max: bool = True,
    confidence: float | None = None,
) -> str:
    """The best of ``legal`` by determinized search with an exact endgame (module
    docstring): with at most ``exact_cards`` cards in the hands, at most ``worlds``
    worlds drawn from the belief in proportion to their weights, each solved exactly
    (``exact.solve``, at most ``node_limit`` states; a world past it is skipped), none
    started after ``deadline``; the move with the best mean probability of winning over
    the solved worlds (the heuristic's move on a tie), or with ``confidence`` the
    heuristic's move unless another beats it world by world by that many standard errors
    (``search.paired_best``). Earlier, or when no world was solved, :func:`determinized`
    with ``rollout_worlds``."""
    if opponents not in OPPONENT_MODELS:
        raise ValueError(f"opponent model {opponents!r}: use one of {OPPONENT_MODELS}")
    belief = SevensBelief(obs)
    seat = belief.seat
    start = belief.deal(belief.sample(rng))
    left = sum(h.bit_count() for h in start.hands)
    if left > exact_cards or not exact.qualifies(start) or start.to_act != seat:
        return determinized(obs, legal, rng, rollout_worlds, deadline)
    moves = [text_move(a) for a in legal]
    default = heuristic_move(start, rng)  # its own hand only
    per_world: list[list[float]] = [[] for _ in moves]
    solved = 0
    if exact.load() is None:  # the Python solver: keep a world within the move's clock
        node_limit = min(node_limit, exact.PYTHON_NODE_LIMIT)
    pool: list[tuple[list[int], list[float]]] = []
    for _ in range(worlds):
        if not pool:
            pool = _resample(belief, rng, 16)
        hands, shares = pool.pop()
        if opponents == "random":
            shares = [0.0] * belief.n
        shares = list(shares)
        shares[seat] = 1.0  # its own later moves, unless it maximises: the heuristic
        deal = belief.deal(hands)
        values = exact.solve(deal.fr, deal.hands, deal.table, seat, shares, node_limit, hero_max)
        if values is not None:
            solved += 1
            for k, m in enumerate(moves):
                per_world[k].append(values.get(m, 0.0))
        if time.perf_counter() > deadline:
            break
    if not solved:
        return determinized(obs, legal, rng, rollout_worlds, deadline)
    if default not in moves:
        return move_text(max(moves, key=lambda m: (sum(per_world[moves.index(m)]), -m)))
    k0 = moves.index(default)
    if confidence is not None:
        return legal[paired_best(per_world, k0, confidence)]
    totals = [sum(row) for row in per_world]
    if totals[k0] >= max(totals) - 1e-12:
        return legal[k0]
    return move_text(max(moves, key=lambda m: (totals[moves.index(m)], -m)))


def _resample(
    belief: SevensBelief, rng: random.Random, count: int
) -> list[tuple[list[int], list[float]]]:
    """``count`` worlds, each with the other seats' shares of heuristic play in it, drawn
    from ``count`` samples in proportion to their weights."""
    worlds = []
    weights = []
    for _ in range(count):
        hands = belief.sample(rng)
        weight, shares = belief.model(hands)
        worlds.append((hands, shares))
        weights.append(weight)
    if not any(weights):
        return worlds
    return rng.choices(worlds, weights=weights, k=count)
