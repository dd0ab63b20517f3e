"""Play a season in-process: the platform's schedule, the policies instead of bots.

The strength ladder (``bench/strength.py``, docs/ladder.md) plays thousands of deals; over
the platform each decision would cost a gRPC round trip and a Redis hop for nothing. This
module plays the *same* season in one process: the same :func:`build_schedule` (tables,
seats, deal seeds, duplicate rotations), the same engine, and each seat's policy seeded per
turn exactly as ``referee/cli/policy_bot.py --per-turn-seed`` seeds it on the platform
(:func:`turn_rng`: from the match index and the turn's sequence number). So a season of
deterministic policies (``random``, ``first-legal``, ``heuristic``, and the search bots
while their work limit, not their clock, stops them) gives the same results in-process and
on the platform; ``tests/ladder/test_inprocess.py`` checks it on a real platform.

No Redis, no gRPC, no clocks: nobody times out and the autopilot never takes over.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from referee.games.base import Event, Match, derive_seed
from referee.games.loop import Turn, play_out
from referee.games.policies import Policy
from referee.games.registry import get_game
from referee.match.spec import CommittedResult, SeatStats, seat_stats, tally_decision
from referee.seasons.model import SeasonSpec
from referee.seasons.schedule import ScheduledMatch, build_schedule


def turn_rng(seed: int | None, match_id: str, seq: int) -> random.Random:
    """The random generator of one turn: from the bot's seed, the match index (the
    ``m0007`` of ``season-m0007``) and the turn's sequence number in the match (1, 2, ...:
    the decisions the seat's bot was asked, counted over all seats)."""
    index = match_id.rsplit("-", 1)[-1]
    return random.Random(derive_seed(seed, index, seq, bits=64))


def play_scheduled(
    spec: SeasonSpec,
    rules: Mapping[str, object],
    scheduled: ScheduledMatch,
    policies: Mapping[str, Policy],
    season_id: str = "",
) -> CommittedResult:
    """Play one scheduled match with ``policies[bot]`` in each seat."""
    game = get_game(spec.game)
    rules_obj = game.rules_from_dict(rules)
    seats = scheduled.seats
    match = game.new_match(rules_obj, len(seats), scheduled.seed, scheduled.deals)
    stats: list[SeatStats] = [seat_stats(name) for name in seats]

    def choose(match: Match, turn: Turn) -> str:
        rng = turn_rng(None, scheduled.match_id, turn.seq)
        return policies[seats[turn.seat]](match.observation(turn.seat), turn.legal, rng)

    def tally(turn: Turn, events: list[Event]) -> bool:
        tally_decision(stats[turn.seat], [e for e in events if e.seat == turn.seat])
        return False

    play_out(match, choose, autoplay_forced=spec.options.autoplay_forced, after=tally)
    return {
        "match_id": scheduled.match_id,
        "season": season_id or spec.name,
        "game": spec.game,
        "seats": list(seats),
        "attempt": 1,
        "result": match.result().to_dict(),
        "stats": stats,
        "finished_ms": float(scheduled.index),
    }


def play_season(
    spec: SeasonSpec,
    seed: int,
    policies: Mapping[str, Policy],
    *,
    matches: Sequence[ScheduledMatch] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[CommittedResult]:
    """Every match of ``spec``'s schedule from ``seed`` (or the ``matches`` given)."""
    rules = spec.validate_with_engine()
    schedule = list(matches) if matches is not None else build_schedule(spec, seed)
    missing = sorted({b for m in schedule for b in m.seats} - set(policies))
    if missing:
        raise ValueError(f"no policy for bot(s) {', '.join(missing)}")
    out = []
    for i, scheduled in enumerate(schedule):
        out.append(play_scheduled(spec, rules, scheduled, policies))
        if progress is not None:
            progress(i + 1, len(schedule))
    return out
