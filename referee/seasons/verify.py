"""``arena season verify ID``: check a finished (or cancelled) season against its seed.

1. The revealed seed hashes to the SHA-256 published when the season started.
2. The schedule rebuilt from the seed (and the owners recorded at creation) equals the
   schedule the season played: same tables, seats, match seeds and deal specs.
3. Every committed match is re-dealt from the seeds derived from the season seed (not from
   anything the match record says; a retry that the record marks ``redealt``, attempt n,
   from the seeds ``referee.match.spec.redeal_seed`` derives from those and n: either way seeds
   of the season seed, never the record's own), its recorded steps are replayed
   on that fresh deal, and the initial hands and the result must equal the recorded ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from referee.games.base import Match, Source
from referee.games.registry import get_game
from referee.match.spec import redeal_seed
from referee.seasons import store
from referee.seasons.model import SeasonSpec, seed_sha256
from referee.seasons.schedule import ScheduledMatch, build_schedule


@dataclass(slots=True)
class VerifyReport:
    season: str
    seed_ok: bool = False
    schedule_ok: bool = False
    matches_checked: int = 0
    deals_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.seed_ok and self.schedule_ok and not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "season": self.season,
            "ok": self.ok,
            "seed_ok": self.seed_ok,
            "schedule_ok": self.schedule_ok,
            "matches_checked": self.matches_checked,
            "deals_checked": self.deals_checked,
            "problems": list(self.problems),
        }


def _replay(match: Match, steps: list[dict[str, Any]]) -> None:
    """Apply recorded steps (workers' record format) to a fresh match."""
    for step in steps:
        if step.get("takeover"):
            continue
        if match.is_over():
            raise ValueError(f"the match ended before step {step!r}")
        if step["source"] == Source.BOT:
            if step["timeout"]:
                match.apply_timeout()
            else:
                match.apply(step["answer"])
        else:
            match.apply(step["action"], step["source"])


def verify_season(conn: redis.Redis, season_id: str) -> VerifyReport:
    """Check the season's seed commitment, schedule and every recorded deal."""
    from referee.queue import get_record, get_result

    info = store.get_season(conn, season_id)
    report = VerifyReport(season_id)
    if not info.get("seed"):
        report.problems.append(
            f"season {season_id} is {info.get('state')}: its seed is revealed only when it "
            "has finished or been cancelled; verify it then"
        )
        return report
    seed = int(info["seed"])
    report.seed_ok = seed_sha256(seed) == info.get("seed_sha256")
    if not report.seed_ok:
        report.problems.append(
            f"the revealed seed {seed} does not hash to the published {info.get('seed_sha256')}"
        )
    spec = SeasonSpec.from_json(info["spec"])
    owners = json.loads(info.get("owners") or "{}")
    rebuilt = build_schedule(spec, seed, owners)
    played = store.get_schedule(conn, season_id)
    report.schedule_ok = [m.to_dict() for m in rebuilt] == played
    if not report.schedule_ok:
        report.problems.append("the schedule rebuilt from the seed differs from the one played")
    game = get_game(spec.game)
    rules = game.rules_from_dict(json.loads(info["rules"]))
    for m in rebuilt:
        result = get_result(conn, m.match_id)
        if result is None:
            continue
        record = get_record(conn, m.match_id)
        if record is None:
            report.problems.append(f"{m.match_id}: result committed but no record")
            continue
        report.matches_checked += 1
        report.deals_checked += _check_match(game.new_match, rules, m, record, result, report)
    return report


def dealt_match(new_match: Any, rules: Any, m: ScheduledMatch, record: dict[str, Any]) -> Match:
    """A fresh match on the deals the season seed gives ``m`` (re-dealt as the record's
    ``redealt`` says: a retry after an attempt that showed the bots its deals is re-dealt
    from seeds derived from the scheduled ones, never from the record's own)."""
    seed, deals = m.seed, m.deals
    redealt = record.get("redealt")
    if redealt:
        attempt = int(redealt["attempt"])
        seed = redeal_seed(m.seed, attempt)
        if deals is not None:
            deals = tuple(
                replace(d, seed=redeal_seed(d.seed, attempt, i)) for i, d in enumerate(deals)
            )
    match: Match = new_match(rules, len(m.seats), seed, deals)
    return match


def _check_match(
    new_match: Any,
    rules: Any,
    m: ScheduledMatch,
    record: dict[str, Any],
    result: Any,
    report: VerifyReport,
) -> int:
    if list(record.get("spec", {}).get("seats", [])) != list(m.seats):
        report.problems.append(f"{m.match_id}: seats {record['spec']['seats']} != {list(m.seats)}")
    match = dealt_match(new_match, rules, m, record)
    try:
        _replay(match, record.get("steps", []))
    except Exception as exc:  # a record the fresh deal cannot replay is a finding
        report.problems.append(f"{m.match_id}: replay on the re-dealt cards fails: {exc}")
        return 0
    hands = match.initial_hands()
    recorded = record.get("initial_hands", [])
    if hands != recorded:
        first = next(
            (i for i, (a, b) in enumerate(zip(hands, recorded, strict=False)) if a != b),
            min(len(hands), len(recorded)),
        )
        report.problems.append(
            f"{m.match_id}: deal {first} was not dealt from the season seed "
            f"(re-dealt {len(hands)} deals, recorded {len(recorded)})"
        )
    elif match.is_over() and match.result().to_dict() != result["result"]:
        report.problems.append(f"{m.match_id}: replayed result differs from the committed one")
    return len(hands)
