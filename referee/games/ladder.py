"""The reference bots of the strength ladder, as in-process policies (docs/ladder.md).

Rungs, weakest first: ``random`` and ``first-legal`` (``policies.py``), then

* ``heuristic``: the rules-of-thumb player of the game (``sevens/heuristic.py``,
  ``sedma/heuristic.py``), microseconds per move;
* ``mc``: determinized Monte Carlo (Perfect Information Monte Carlo): for each of
  ``worlds`` determinizations of the unseen cards (``referee/games/search.py``, which
  respects what the seat has observed) every legal action is played and the deal is
  played out by the heuristic for every seat; the action with the best mean return
  wins if it beats the heuristic's own action, world by world, by more than a standard
  error (``search.paired_best``), else the heuristic's action stays. The same world and
  playout seed serve every action (common random numbers);
* ``ismcts``: single-observer Information Set MCTS: each iteration determinizes, walks
  one tree of the seat's information set with UCB1 over the actions legal in that
  world (counting each child's availability), expands one node, plays out by the
  heuristic and backs up each seat's return into the nodes where that seat chose; the
  most visited action is played if its mean return beats the heuristic's action's by more
  than a standard error (``search.beats``), else the heuristic's action.

* ``solver``: worlds drawn from the belief, each solved exactly by expectimax once few
  cards are left (``sevens/exact.py``); in Sedma, ``ismcts``;
* ``priced-pass`` (the Sevens family's top rung): the heuristic, which also passes while
  able to play (an illegal pass, SV-18) where the rules price that pass (SV-19: a lost
  turn or chips) and every play would open the way for the others
  (``sevens_heuristic.priced_pass_pays``).

In the Sevens family with one card a turn the three search rungs run on the fast engine
and the belief (``sevens/bots.py``: ``sevens_worlds``, ``sevens_iterations`` and ``worlds``
are their work limits).

The search bots stop at the first of two limits: their work limit (``worlds`` or
``iterations``, which makes them deterministic given their ``random.Random``) and their
time budget per move (``budget_ms``, 200 ms by default, a fifth of the platform's default
1000 ms move clock). ``with_budget`` gives a copy with another budget; the gRPC bot
(``referee/cli/policy_bot.py``) caps it at a third of the move clock it is given.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from referee.games.base import PASS
from referee.games.cards import Card
from referee.games.search import CONFIDENCE, SearchState, beats, paired_best, position
from referee.games.sedma import heuristic as sedma_heuristic
from referee.games.sedma.rules import rules_from_dict
from referee.games.sevens import bots as sevens_bots
from referee.games.sevens import exact
from referee.games.sevens import heuristic as sevens_heuristic
from referee.games.sevens.rules import cached_rules
from referee.games.sevens.tables import tables_for

DEFAULT_BUDGET_MS = 200


def heuristic_policy(obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
    """The rules-of-thumb player of the observation's game."""
    if len(legal) == 1:
        return legal[0]
    if obs["game"] == "sevens":
        return _sevens_heuristic(obs, legal, rng)[0]
    seat = int(obs["seat"])
    sedma = rules_from_dict(obs["rules"])
    trick = [(int(t["seat"]), Card.parse(t["card"])) for t in obs["trick"]]
    last = sum(int(x) for x in obs["tricks_won"]) == sedma.num_tricks - 1
    hand_cards = [Card.parse(c) for c in obs["hand"]]
    return sedma_heuristic.choose(sedma, seat, hand_cards, trick, legal, last, rng)


def priced_pass_policy(obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
    """The heuristic, and in the Sevens family a pass while able to play where the rules
    price it and it pays (``sevens_heuristic.priced_pass_pays``): the ``priced-pass``
    rung. It may answer ``pass`` when ``pass`` is not among ``legal``."""
    if obs["game"] != "sevens":
        return heuristic_policy(obs, legal, rng)
    action, best = _sevens_heuristic(obs, legal, rng)
    seat = int(obs["seat"])
    if action != PASS and sevens_heuristic.priced_pass_pays(
        cached_rules(obs["rules"]), best, obs.get("history", ()), seat, int(obs["passes"][seat])
    ):
        return PASS
    return action


def _sevens_heuristic(
    obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random
) -> tuple[str, float]:
    """The Sevens heuristic's action for the observation's seat, and its best play's score
    (``sevens_heuristic.choose_scored``)."""
    seat = int(obs["seat"])
    rules = cached_rules(obs["rules"])
    return sevens_heuristic.choose_scored(
        rules,
        tables_for(rules),
        sevens_heuristic.row_mask_of({"hand": list(obs["hand"])}),
        sevens_heuristic.row_mask_of(obs["table"]),
        legal,
        int(obs["passes"][seat]),
        int(obs["free_passes_left"][seat]),
        rng,
    )


def playout(state: SearchState, rng: random.Random) -> None:
    """Play ``state`` to the end of its deal with the heuristic for every seat."""
    while not state.is_terminal():
        state.apply(state.rollout_action(rng))


@dataclass(frozen=True)
class MonteCarlo:
    """Determinized Monte Carlo with heuristic playouts (the ``mc`` rung)."""

    worlds: int = 24
    budget_ms: int = DEFAULT_BUDGET_MS
    sevens_worlds: int = 120

    def with_budget(self, budget_ms: int) -> MonteCarlo:
        return replace(self, budget_ms=budget_ms)

    def __call__(self, obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
        if len(legal) == 1:
            return legal[0]
        deadline = time.perf_counter() + self.budget_ms / 1000.0
        if sevens_bots.supports(obs):
            return sevens_bots.determinized(obs, legal, rng, self.sevens_worlds, deadline)
        seat = int(obs["seat"])
        pos = position(obs)
        default = legal.index(heuristic_policy(obs, legal, rng))
        values: list[list[float]] = [[] for _ in legal]
        for _ in range(self.worlds):
            world = pos.determinize(rng)
            seed = rng.getrandbits(32)
            row = []
            for action in legal:
                state = world.clone()
                state.apply(action)
                playout(state, random.Random(seed))
                row.append(state.returns()[seat])
                if time.perf_counter() > deadline:
                    break
            if len(row) < len(legal):
                break  # out of time: only whole worlds count
            for k, value in enumerate(row):
                values[k].append(value)
        return legal[paired_best(values, default)]


class _Node:
    __slots__ = ("avail", "children", "player", "sq", "total", "visits")

    def __init__(self, player: int) -> None:
        self.player = player  # the seat whose choice led here
        self.children: dict[str, _Node] = {}
        self.visits = 0
        self.avail = 0
        self.total = 0.0
        self.sq = 0.0


@dataclass(frozen=True)
class Ismcts:
    """Single-observer Information Set MCTS with heuristic playouts (``ismcts``)."""

    iterations: int = 200
    budget_ms: int = DEFAULT_BUDGET_MS
    exploration: float = 0.7
    sevens_iterations: int = 400

    def with_budget(self, budget_ms: int) -> Ismcts:
        return replace(self, budget_ms=budget_ms)

    def __call__(self, obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
        if len(legal) == 1:
            return legal[0]
        deadline = time.perf_counter() + self.budget_ms / 1000.0
        if sevens_bots.supports(obs):
            return sevens_bots.ismcts(
                obs, legal, rng, self.sevens_iterations, deadline, self.exploration
            )
        pos = position(obs)
        root = _Node(-1)
        c = self.exploration
        for _ in range(self.iterations):
            state = pos.determinize(rng)
            node = root
            path = []
            while not state.is_terminal():
                actions = state.legal_actions()
                player = state.to_act()
                untried = [a for a in actions if a not in node.children]
                for a in actions:
                    child = node.children.get(a)
                    if child is not None:
                        child.avail += 1
                if untried:
                    action = untried[rng.randrange(len(untried))]
                    child = _Node(player)
                    child.avail = 1
                    node.children[action] = child
                    state.apply(action)
                    path.append(child)
                    break
                best_value = -math.inf
                action = actions[0]
                for a in actions:
                    ch = node.children[a]
                    value = ch.total / ch.visits + c * math.sqrt(math.log(ch.avail) / ch.visits)
                    if value > best_value:
                        best_value, action = value, a
                node = node.children[action]
                state.apply(action)
                path.append(node)
            playout(state, rng)
            returns = state.returns()
            for n in path:
                n.visits += 1
                n.total += returns[n.player]
                n.sq += returns[n.player] ** 2
            if time.perf_counter() > deadline:
                break
        scored = [(root.children[a].visits, a) for a in legal if a in root.children]
        if not scored:
            return heuristic_policy(obs, legal, rng)
        most = max(v for v, _ in scored)
        ties = [a for v, a in scored if v == most]
        best = ties[0] if len(ties) == 1 else heuristic_policy(obs, ties, rng)
        default = heuristic_policy(obs, legal, rng)
        if best != default and default in root.children:
            top, dflt = root.children[best], root.children[default]
            if not beats((top.visits, top.total, top.sq), (dflt.visits, dflt.total, dflt.sq)):
                return default  # the search is not sure enough to overrule the heuristic
        return best


@dataclass(frozen=True)
class Solver:
    """Determinized search with an exact endgame (the ``solver`` rung, the Sevens
    family's top; ``sevens/bots.py``, ``sevens/exact.py``): while more than ``exact_cards``
    cards are in the hands, ``mc``'s rollouts over ``rollout_worlds`` worlds (0 by default:
    the heuristic's move, which they did not beat, docs/ladder.md), then every sampled world
    solved exactly by expectimax (the other seats moving by ``opponents``,
    ``sevens_bots.OPPONENT_MODELS``). In Sedma, and in Sevens with runs, it plays as
    ``ismcts``."""

    worlds: int = 32
    exact_cards: int = 28
    node_limit: int = 200_000
    rollout_worlds: int = 0
    opponents: str = "belief"
    hero_max: bool = True
    confidence: float | None = CONFIDENCE
    budget_ms: int = DEFAULT_BUDGET_MS

    def with_budget(self, budget_ms: int) -> Solver:
        return replace(self, budget_ms=budget_ms)

    def prepare(self) -> None:
        """Build the C solver now (``exact.load``) rather than inside a first move's clock."""
        exact.load()

    def __call__(self, obs: Mapping[str, Any], legal: Sequence[str], rng: random.Random) -> str:
        if len(legal) == 1:
            return legal[0]
        if not sevens_bots.supports(obs):
            return ISMCTS.with_budget(self.budget_ms)(obs, legal, rng)
        deadline = time.perf_counter() + self.budget_ms / 1000.0
        return sevens_bots.solver(
            obs,
            legal,
            rng,
            self.worlds,
            self.exact_cards,
            self.node_limit,
            deadline,
            self.rollout_worlds,
            self.opponents,
            self.hero_max,
            self.confidence,
        )


MONTE_CARLO = MonteCarlo()
ISMCTS = Ismcts()
SOLVER = Solver()
