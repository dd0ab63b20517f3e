"""``arena season collusion ID``: which pairs of bots played for each other?

Every committed match of the season is re-dealt from the season seed (as ``arena season
verify`` does) and its recorded steps are replayed; at each step the bot chose itself, with
a choice, :func:`referee.games.collusion.decision_help` measures what the choice moved to
each opponent. :func:`referee.games.collusion.pair_statistics` turns the decisions into a z
per ordered pair, flagged at the screening and act thresholds. The report sees every hand:
it is for operators (the CLI reads Redis directly), never for bots or spectators, and it
flags; people decide (docs/SECURITY.md, "Fair play").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import redis

from referee.games.base import Source
from referee.games.collusion import (
    Decision,
    PairStat,
    PlayedMatch,
    Thresholds,
    decision_help,
    pair_statistics,
)
from referee.games.registry import get_game
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.schedule import ScheduledMatch
from referee.seasons.verify import dealt_match


@dataclass(slots=True)
class CollusionReport:
    season: str
    matches: int = 0
    decisions: int = 0
    pairs: list[PairStat] = field(default_factory=list)
    thresholds: Thresholds | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def flagged(self) -> list[PairStat]:
        return [p for p in self.pairs if p.level]

    def to_dict(self) -> dict[str, Any]:
        limits = self.thresholds
        return {
            "season": self.season,
            "matches": self.matches,
            "decisions": self.decisions,
            "pairs_tested": limits.pairs if limits else 0,
            "screen_z": round(limits.screen, 2) if limits else None,
            "act_z": round(limits.act, 2) if limits else None,
            "flagged": [p.to_dict() for p in self.flagged],
            "pairs": [p.to_dict() for p in self.pairs],
            "problems": list(self.problems),
        }


def season_collusion(conn: redis.Redis, season_id: str) -> CollusionReport:
    """The collusion report of a season's committed matches (any state: a running season
    reports what it has played so far)."""
    from referee.queue import get_record, get_result

    row = store.season_row(conn, season_id)
    report = CollusionReport(season_id)
    spec = SeasonSpec.from_json(row.spec)
    game = get_game(spec.game)
    rules = game.rules_from_dict(json.loads(row.rules))
    played: list[PlayedMatch] = []
    for m in map(ScheduledMatch.from_dict, store.get_schedule(conn, season_id)):
        if get_result(conn, m.match_id) is None:
            continue
        record = get_record(conn, m.match_id)
        if record is None:
            report.problems.append(f"{m.match_id}: result committed but no record")
            continue
        match = dealt_match(game.new_match, rules, m, record)
        decisions: list[Decision] = []
        try:
            for step in record.get("steps", []):
                if step.get("takeover"):
                    continue
                if step["source"] != Source.BOT:
                    match.apply(step["action"], step["source"])
                elif step["timeout"]:
                    match.apply_timeout()
                else:
                    found = decision_help(match, step["answer"])
                    if found is not None:
                        decisions.append(found)
                    match.apply(step["answer"])
        except Exception as exc:  # a record that does not replay is reported, not fatal
            report.problems.append(f"{m.match_id}: replay failed: {exc}")
            continue
        report.matches += 1
        report.decisions += len(decisions)
        played.append(PlayedMatch(m.match_id, m.seats, decisions))
    report.pairs, report.thresholds = pair_statistics(played)
    return report
