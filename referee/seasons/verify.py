"""``arena season verify ID``: check a finished (or cancelled) season against its seed.

1. The revealed seed hashes to the SHA-256 published when the season started.
2. The schedule rebuilt from the seed (and the owners recorded at creation) equals the
   schedule the season played: same tables, seats, match seeds and deal specs.
3. Every committed match is re-dealt from the seeds derived from the season seed (not from
   anything the match record says; a retry that the record marks ``redealt``, attempt n,
   from the seeds ``referee.match.spec.redeal_seed`` derives from those and n: either way seeds
   of the season seed, never the record's own), its recorded steps are replayed
   on that fresh deal, and the initial hands and the result must equal the recorded ones.
4. The standings kept incrementally (the tallies counting folded each result into, with
   the ratings refitted now) equal :func:`compute_standings` over every counted result.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import redis

from referee.errors import RecordStoreError
from referee.games.base import Match
from referee.games.registry import get_game
from referee.match.replay import apply_steps
from referee.match.row import lean_result
from referee.match.season_row import SeasonRow
from referee.match.spec import redeal_seed
from referee.seasons import store
from referee.seasons.model import SeasonSpec, seed_sha256
from referee.seasons.schedule import GIVEN_KIND, ScheduledMatch, build_schedule, given_schedule
from referee.seasons.standings import compute_standings, standings_rows_equal
from referee.seasons.versiontest import SCHEDULE_KIND, versus_schedule

if TYPE_CHECKING:
    from referee.seasons.archive import SeasonArchive


@dataclass(slots=True)
class VerifyReport:
    season: str
    seed_ok: bool = False
    schedule_ok: bool = False
    standings_ok: bool = True
    matches_checked: int = 0
    deals_checked: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.seed_ok and self.schedule_ok and self.standings_ok and not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {
            "season": self.season,
            "ok": self.ok,
            "seed_ok": self.seed_ok,
            "schedule_ok": self.schedule_ok,
            "standings_ok": self.standings_ok,
            "matches_checked": self.matches_checked,
            "deals_checked": self.deals_checked,
            "problems": list(self.problems),
        }


def verify_season(conn: redis.Redis, season_id: str) -> VerifyReport:
    """Check the season's seed commitment, schedule and every recorded deal: from its live
    keys, or from its archive once archived (``referee.seasons.archive``)."""
    from referee.queue import get_record, get_result
    from referee.seasons.archive import archive_of

    info = store.get_season(conn, season_id)
    archived = archive_of(conn, season_id)
    if archived is not None:
        return verify_archive(archived)
    report = _verify(
        season_id,
        info,
        lambda: store.get_schedule(conn, season_id),
        lambda m: get_result(conn, m),
        lambda m: get_record(conn, m),
    )
    report.standings_ok = check_standings(conn, season_id, report.problems)
    return report


def check_standings(conn: redis.Redis, season_id: str, problems: list[str]) -> bool:
    """Whether the incremental standings (tallies, ratings refitted now) equal the pure
    :func:`compute_standings` over all counted results; each difference goes to
    ``problems``."""
    kept = store.recompute_standings(conn, season_id)
    full = store.full_standings(conn, season_id)
    if standings_rows_equal(kept, full):
        return True
    before = len(problems)
    rows = {r["bot"]: r for r in full.get("rows", [])}
    for row in kept.get("rows", []):
        want: Mapping[str, object] = rows.get(row["bot"], {})
        diff = {k: (v, want.get(k)) for k, v in row.items() if want.get(k) != v}
        if diff:
            problems.append(
                f"standings of {row['bot']} differ from a recount of all results "
                f"(kept, recounted): {diff}"
            )
    if len(problems) == before or kept.get("matches_done") != full.get("matches_done"):
        problems.append(
            f"the kept standings count {kept.get('matches_done')} matches, a recount of all "
            f"results {full.get('matches_done')}"
        )
    return False


def verify_archive(archive: SeasonArchive) -> VerifyReport:
    """:func:`verify_season` from a season's archive alone (its records read from the
    record store by digest), plus: the archived standings equal those computed again from
    the archived results."""
    report = _verify(
        archive.season,
        {**archive.info, "season": archive.season},
        lambda: archive.schedule,
        archive.result,
        archive.record,
    )
    if archive.standings is not None:
        spec = SeasonSpec.from_json(archive.info["spec"])
        counted = [
            archive.matches[m]["result"]
            for m in sorted(archive.matches)
            if archive.matches[m].get("result") is not None and archive.matches[m].get("counted")
        ]
        boards = {
            str(m["match_id"]): [
                (label, int(d["rotation"]))
                for label, d in zip(m["boards"], m["deals"], strict=True)
            ]
            for m in archive.schedule
            if m.get("boards") and m.get("deals")
        }
        again = compute_standings(
            archive.season,
            spec.game,
            spec.bots,
            counted,
            matches_total=int(archive.info.get("matches_total", 0)),
            boards=boards,
            rank_by=spec.options.rank_by or "elo",
        )
        if not standings_rows_equal(again, archive.standings):
            report.problems.append(
                "the archived standings differ from those computed again from the archived results"
            )
    return report


def _verify(
    season_id: str,
    info: Mapping[str, str],
    schedule: Callable[[], list[dict[str, Any]]],
    get_result: Callable[[str], Any],
    get_record: Callable[[str], dict[str, Any] | None],
) -> VerifyReport:
    report = VerifyReport(season_id)
    row = SeasonRow.parse(season_id, info)
    if not row.seed:
        report.problems.append(
            f"season {season_id} is {row.state}: its seed is revealed only when it "
            "has finished or been cancelled; verify it then"
        )
        return report
    seed = int(row.seed)
    report.seed_ok = seed_sha256(seed) == row.seed_sha256
    if not report.seed_ok:
        report.problems.append(
            f"the revealed seed {seed} does not hash to the published {row.seed_sha256}"
        )
    spec = SeasonSpec.from_json(row.spec)
    owners = row.owners_map()
    played = schedule()
    if row.schedule == SCHEDULE_KIND:
        rebuilt = versus_schedule(spec, seed, row.matches_total // 2)
    elif row.schedule == GIVEN_KIND:  # the tables come from outside: the deals don't
        rebuilt = given_schedule(spec, seed, [m["seats"] for m in played])
    else:
        rebuilt = build_schedule(spec, seed, owners)
    report.schedule_ok = [m.to_dict() for m in rebuilt] == played
    if not report.schedule_ok:
        report.problems.append("the schedule rebuilt from the seed differs from the one played")
    game = get_game(spec.game)
    rules = game.rules_from_dict(json.loads(row.rules))
    for m in rebuilt:
        result = get_result(m.match_id)
        if result is None:
            continue
        try:
            record = get_record(m.match_id)
        except RecordStoreError as exc:
            report.problems.append(f"{m.match_id}: its record cannot be read: {exc}")
            continue
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
        for _step in apply_steps(match, record.get("steps", [])):
            pass
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
    elif match.is_over():
        # the row keeps the result without each deal's penalties and detail
        # (referee/match/row.py); the record keeps all of it
        replayed = json.loads(json.dumps(match.result().to_dict()))
        if lean_result(replayed) != lean_result(result["result"]):
            report.problems.append(f"{m.match_id}: replayed result differs from the committed one")
        elif record.get("result") is not None and record["result"] != replayed:
            report.problems.append(f"{m.match_id}: replayed result differs from the recorded one")
    return len(hands)
