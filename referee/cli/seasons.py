"""``arena season ...`` and ``arena standings`` (``arena demo`` is in :mod:`referee.cli.demo`).

Season commands act on Redis directly through :mod:`referee.seasons.store`; a running
referee's season driver (``run_driver``) does the rest: it enqueues the matches, counts
the results, keeps the standings and finishes the season.
"""

from __future__ import annotations

import argparse
import csv
import functools
import gzip
import io
import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, JustifyMethod, RenderResult
from rich.live import Live
from rich.measure import Measurement
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from referee.cli.common import Commands, add_redis_options, cell, connect, terminal_safe
from referee.errors import ConfigError
from referee.match.season_row import SeasonRow, Standings
from referee.seasons import embargo, store
from referee.seasons.model import (
    DEFAULT_RANK_BY,
    FALLBACK_MODES,
    FORMATS,
    RANK_BY,
    SeasonSpec,
    time_control_from_dict,
)
from referee.seasons.standings import ROW_FIELDS, ranking_words

UNIT_LABEL = {"chips": "chips", "penalty_points": "penalty", "match_points": "match pts"}


def register(commands: Commands) -> None:
    p = commands.add(
        "create",
        _create,
        group="season",
        help="create a season from a TOML file and/or flags (flags win)",
    )
    p.add_argument("file", nargs="?", help="season TOML (see examples/season.toml)")
    p.add_argument("--name", help="season id (default: generated)")
    p.add_argument("--game", help="sevens or sedma")
    p.add_argument("--preset", help="rules preset (`arena presets` lists them)")
    p.add_argument("--rules-json", help="a full rules object as JSON (overrides --preset)")
    p.add_argument("--bots", help="registered bot names, comma-separated")
    p.add_argument("--table-size", type=int, help="seats per table")
    p.add_argument("--deals", type=int, help="deals per match (0: the rules decide)")
    p.add_argument("--seed", type=int, help="season seed (default: random, revealed at the end)")
    p.add_argument("--move-ms", type=int)
    p.add_argument("--bank-ms", type=int)
    p.add_argument("--grace-ms", type=int)
    p.add_argument("--queue-ms", type=int)
    p.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        help="think time: the referee's stamps (wall, the default) or a hosted bot's "
        "sandbox CPU time, the wall as a backstop (cpu; docs/HOSTING.md)",
    )
    p.add_argument(
        "--duplicate",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="duplicate deals (default on)",
    )
    p.add_argument("--strikes", type=int)
    p.add_argument("--autoplay-forced", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument(
        "--separate-owners",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep two bots of one owner off one table and one flight (default on; "
        "--no-separate-owners warns)",
    )
    p.add_argument("--max-subsets", type=int, help="all k-subsets up to this many tables")
    p.add_argument("--rounds", type=int)
    p.add_argument("--format", choices=FORMATS)
    p.add_argument("--window", type=int, help="matches of this season in flight at once")
    p.add_argument(
        "--fallback",
        choices=FALLBACK_MODES,
        help="a fallback answer (the bot's SDK or bridge answered because its code failed): "
        "count it (default) or refuse it as an invalid action",
    )
    p.add_argument(
        "--rank-by",
        choices=RANK_BY,
        help="what orders the standings: elo, score (the game's, per match) or place "
        "(average); default: "
        + ", ".join(f"{rank} for {game}" for game, rank in DEFAULT_RANK_BY.items()),
    )
    p.add_argument("--start", action="store_true", help="start it right away")
    add_redis_options(p)

    for name, fn, text in (
        ("start", _start, "start a created season (publishes its seed's SHA-256)"),
        ("pause", _pause, "stop enqueuing matches (those in flight finish)"),
        ("resume", _resume, "continue a paused season (failed matches are retried)"),
        ("cancel", _cancel, "end a season for good and reveal its seed"),
    ):
        p = commands.add(name, fn, group="season", help=text)
        p.add_argument("season")
        add_redis_options(p)

    p = commands.add("status", _status, group="season", help="a season's state and progress")
    p.add_argument("season")
    p.add_argument("--json", action="store_true")
    add_redis_options(p)
    p = commands.add("list", _list, group="season", help="every season")
    add_redis_options(p)
    for group in ("season", None):
        p = commands.add("standings", _standings, group=group, help="a season's standings")
        p.add_argument("season")
        fmt = p.add_mutually_exclusive_group()
        fmt.add_argument("--json", action="store_true", help="the standings JSON")
        fmt.add_argument("--csv", action="store_true", help="CSV, one row per bot")
        add_redis_options(p)
    p = commands.add(
        "export",
        _export,
        group="season",
        help="write results, standings, records (matches/*.json.gz) and replays "
        "(replays/*.txt.gz) to DIR",
    )
    p.add_argument("season")
    p.add_argument("dir")
    add_redis_options(p)
    p = commands.add(
        "archive",
        _archive,
        group="season",
        help="move a finished season out of Redis into the record store (verifiable from there)",
    )
    p.add_argument("season")
    add_redis_options(p)
    p = commands.add(
        "verify", _verify, group="season", help="re-deal every match from the revealed seed"
    )
    p.add_argument("season")
    p.add_argument("--json", action="store_true")
    add_redis_options(p)
    p = commands.add(
        "collusion",
        _collusion,
        group="season",
        help="pairs of bots whose play helped each other (operators only: it sees every hand)",
    )
    p.add_argument("season")
    p.add_argument("--json", action="store_true")
    p.add_argument("--all", action="store_true", help="list every pair, not only the flagged")
    add_redis_options(p)
    p = commands.add("watch", _watch, group="season", help="live progress and the top of the table")
    p.add_argument("season")
    p.add_argument("--top", type=int, default=8, help="rows of the table shown (8)")
    add_redis_options(p)


def console() -> Console:
    """A console for tables: the terminal's width, or 140 columns (or $COLUMNS) when the
    output goes to a file or a pipe, so that tables are not squeezed to 80."""
    if sys.stdout.isatty() or os.environ.get("COLUMNS"):
        return Console()
    return Console(width=140)


def _conn(args: argparse.Namespace) -> redis.Redis:
    """The season store's client (text replies, a socket timeout above any blocking read)."""
    return connect(args, socket_timeout=30)


# --- create and state changes --------------------------------------------------------------


FLAG_WORDS = {
    "name": "--name",
    "game": "--game",
    "preset": "--preset",
    "rules": "--rules-json",
    "bots": "--bots",
    "table_size": "--table-size",
    "deals_per_match": "--deals",
    "seed": "--seed",
    "time_control.move_ms": "--move-ms",
    "time_control.bank_ms": "--bank-ms",
    "time_control.grace_ms": "--grace-ms",
    "time_control.queue_ms": "--queue-ms",
    "time_control.clock": "--clock",
    "options.duplicate = false": "--no-duplicate",
}
_FLAG_OF = {
    "name": "name",
    "game": "game",
    "preset": "preset",
    "rules": "rules_json",
    "bots": "bots",
    "table_size": "table_size",
    "deals_per_match": "deals",
    "seed": "seed",
    "time_control.move_ms": "move_ms",
    "time_control.bank_ms": "bank_ms",
    "time_control.grace_ms": "grace_ms",
    "time_control.queue_ms": "queue_ms",
    "time_control.clock": "clock",
    "options.duplicate = false": "duplicate",
}


def words_from_args(args: argparse.Namespace) -> dict[str, str]:
    """How problems name each field: the flag, unless the value came from the TOML file
    (then the TOML field, as the file says it)."""
    return {
        field: flag
        for field, flag in FLAG_WORDS.items()
        if not args.file or getattr(args, _FLAG_OF[field], None) is not None
    }


def spec_from_args(args: argparse.Namespace) -> SeasonSpec:
    """The season spec of ``arena season create``: the TOML file, overridden by flags."""
    data: dict[str, Any] = {}
    if args.file:
        path = Path(args.file)
        if not path.exists():
            raise ConfigError(f"no such season file: {path}")
        data = SeasonSpec.from_toml(path.read_text()).to_dict()
        if data.get("seed") is None:
            data.pop("seed", None)
    for flag, key in (
        ("name", "name"),
        ("game", "game"),
        ("preset", "preset"),
        ("table_size", "table_size"),
        ("deals", "deals_per_match"),
        ("seed", "seed"),
    ):
        value = getattr(args, flag)
        if value is not None:
            data[key] = value
    if args.rules_json:
        try:
            data["rules"] = json.loads(args.rules_json)
        except ValueError as exc:
            raise ConfigError(f"--rules-json is not JSON: {exc}") from None
    if args.bots:
        data["bots"] = [b.strip() for b in args.bots.split(",") if b.strip()]
    tc = dict(data.get("time_control", {}))
    for flag in ("move_ms", "bank_ms", "grace_ms", "queue_ms", "clock"):
        if getattr(args, flag) is not None:
            tc[flag] = getattr(args, flag)
    data["time_control"] = tc
    time_control_from_dict(tc, words_from_args(args))  # the flags' words, not the TOML's
    options = dict(data.get("options", {}))
    for flag in (
        "duplicate",
        "strikes",
        "autoplay_forced",
        "separate_owners",
        "max_subsets",
        "rounds",
        "format",
        "window",
        "fallback",
        "rank_by",
    ):
        if getattr(args, flag) is not None:
            options[flag] = getattr(args, flag)
    data["options"] = options
    if "game" not in data:
        raise ConfigError("say which game: --game sevens|sedma, or a season TOML file")
    return SeasonSpec.from_dict(data)


def _create(args: argparse.Namespace) -> int:
    spec = spec_from_args(args)
    warning = spec.options.owners_warning()
    if warning:
        print(f"arena: warning: {warning}", file=sys.stderr)
    with _conn(args) as conn:
        info = store.create_season(conn, spec, words=words_from_args(args))
        if args.start:
            info = store.start_season(conn, info.season)
        absent = store.bots_without_stream(conn, spec.bots)
    print(f"season {info.season}: {info.state}, {info.matches_total} matches")
    print(f"seed sha256 {info.seed_sha256}")
    if info.duplicate:
        print(f"deals: {info.duplicate}")
    print(f"standings ranked by {SeasonSpec.from_json(info.spec).options.rank_by}")
    if not args.start:
        print(f"start it with: arena season start {info.season}")
    _warn_no_stream(absent, SeasonSpec.from_json(info.spec))
    return 0


def _warn_no_stream(absent: list[str], spec: SeasonSpec) -> None:
    warning = store.no_stream_warning(absent, spec)
    if warning:
        print(f"warning: {warning}", file=sys.stderr)


def _change(
    args: argparse.Namespace, fn: Callable[[redis.Redis, str], SeasonRow], verb: str
) -> int:
    with _conn(args) as conn:
        info = fn(conn, args.season)
    print(f"season {args.season} {verb}: {info.state}")
    if info.seed:
        print(f"seed {info.seed} (sha256 {info.seed_sha256})")
    elif info.state == store.RUNNING:
        print(f"seed sha256 {info.seed_sha256}")
    return 0


def _start(args: argparse.Namespace) -> int:
    code = _change(args, store.start_season, "started")
    with _conn(args) as conn:
        spec = store.get_spec(conn, args.season)
        absent = store.bots_without_stream(conn, spec.bots)
    _warn_no_stream(absent, spec)
    return code


def _pause(args: argparse.Namespace) -> int:
    return _change(args, store.pause_season, "paused")


def _resume(args: argparse.Namespace) -> int:
    return _change(args, store.resume_season, "resumed")


def _cancel(args: argparse.Namespace) -> int:
    return _change(args, store.cancel_season, "cancelled")


# --- reading ----------------------------------------------------------------------------


def _status(args: argparse.Namespace) -> int:
    with _conn(args) as conn:
        info = store.get_season(conn, args.season)  # --json: the hash as stored
        states = store.match_states(conn, args.season)
    counts: dict[str, int] = {}
    for state in states.values():
        counts[state] = counts.get(state, 0) + 1
    if args.json:
        print(json.dumps({**info, "match_states": counts}, indent=1, sort_keys=True))
        return 0
    row = SeasonRow.parse(args.season, info)
    spec = SeasonSpec.from_json(row.spec)
    print(f"season     {args.season} ({row.state})")
    print(
        f"game       {terminal_safe(row.game)} / {terminal_safe(row.preset)}, "
        f"tables of {spec.table_size}"
    )
    print(f"bots       {', '.join(spec.bots)}")
    print(
        f"matches    {row.matches_done} done, {row.matches_failed} failed, "
        f"{row.matches_total} in all ("
        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
        + ")"
    )
    print(f"decisions  {row.decisions}")
    print(f"ranked by  {spec.options.rank_by or 'elo'}")
    print(f"seed sha256 {row.seed_sha256}")
    if row.seed:
        print(f"seed       {row.seed}  (check: arena season verify {args.season})")
    return 0


def _list(args: argparse.Namespace) -> int:
    with _conn(args) as conn:
        seasons = store.season_rows(conn)
    if not seasons:
        print("no seasons (arena season create season.toml)")
        return 0
    table = Table(title="seasons")
    for col in ("season", "game", "preset", "state", "done", "total"):
        table.add_column(col)
    for s in seasons:
        table.add_row(
            *(
                cell(value)
                for value in (s.season, s.game, s.preset, s.state, s.matches_done, s.matches_total)
            )
        )
    console().print(table)
    return 0


FAULTS: tuple[tuple[str, str], ...] = (
    ("invalid_actions", "invalid actions"),
    ("timeouts", "timeouts"),
    ("fallbacks", "fallbacks"),
)
"""The per-bot counts the ``faults`` column joins with ``/`` (one more count joins by
adding a pair here)."""


def score_label(unit: str) -> str:
    """The score column's title: its unit (``chips``, ``penalty``, ``match pts``)."""
    return UNIT_LABEL.get(unit, unit.replace("_", " ") or "score")


def _num(value: float) -> str:
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.1f}"


@dataclass(frozen=True, slots=True)
class _Column:
    header: str
    cell: Callable[[Mapping[str, Any]], str]
    meaning: str = ""
    drop: int = 0
    """0: always shown; otherwise dropped, lowest first, until the table fits."""
    justify: JustifyMethod = "right"


def _columns(standings: Standings) -> list[_Column]:
    rows = list(standings.get("rows", []))
    cols = [
        _Column("#", lambda r: str(r["rank"])),
        _Column("bot", lambda r: str(r["bot"]), justify="left"),
        _Column(
            "Elo",
            lambda r: f"{r['elo']:.0f}",
            "Elo: Bradley-Terry fit of every deal's finishing order (mean 1500)",
        ),
        _Column(score_label(str(standings.get("unit", ""))), lambda r: _num(r["score"])),
    ]
    if any(r.get("dup_hands") for r in rows):  # a field-duplicate season
        cols.append(
            _Column(
                "dup",
                lambda r: f"{r['dup_score']:+.1f}" if r.get("dup_hands") else "-",
                "dup: duplicate score (each hand held against the average of the bots that "
                "held it at other tables)",
            )
        )
    faults = "/".join(words for _, words in FAULTS)
    cols += [
        _Column(
            "95% CI",
            lambda r: f"{r['elo_low']:.0f}-{r['elo_high']:.0f}",
            "95% CI: the interval of Elo",
            drop=4,
            justify="center",
        ),
        _Column("live", lambda r: f"{r['live_elo']:.0f}", "live: incremental Elo", drop=1),
        _Column("OSk", lambda r: f"{r['openskill_ordinal']:.1f}", "OSk: OpenSkill ordinal", drop=2),
        _Column("M", lambda r: str(r["matches"]), "M: matches"),
        _Column("deals", lambda r: str(r["deals"]), drop=3),
        _Column("won", lambda r: str(r["deals_won"]), "won: deals won", drop=6),
        _Column("place", lambda r: f"{r['avg_place']:.2f}", "place: average finishing place"),
        _Column("IP", lambda r: str(r["illegal_passes"]), "IP: illegal passes", drop=5),
        _Column(
            "faults",
            lambda r: "/".join(str(r.get(key, 0)) for key, _ in FAULTS),
            f"faults: {faults}",
        ),
        _Column("AP", lambda r: str(r["autopilot_seats"]), "AP: autopilot seats", drop=7),
    ]
    return cols


class StandingsTable:
    """The standings as a rich table that fits the width it is rendered in: columns are
    dropped, least needed first (live Elo, OpenSkill, deals, the interval, illegal passes,
    deals won, autopilot seats), then bot names wrap. Rank, bot, Elo, the game's score
    (and ``dup_score`` in a duplicate season), matches, place and faults always show."""

    def __init__(self, standings: Standings, top: int | None = None) -> None:
        self.standings = standings
        self.top = top

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.table(console, options)

    def table(self, console: Console, options: ConsoleOptions) -> Table:
        """The widest layout that fits ``options.max_width``."""
        columns = _columns(self.standings)
        rows = list(self.standings.get("rows", []))
        rows = rows[: self.top] if self.top else rows
        # each column's widest cell, in one row: the table's natural width, measured once
        # per layout without measuring every row
        widest = [max((c.cell(r) for r in rows), key=cell_len, default="") for c in columns]
        shown = columns
        for level in [0, *sorted({c.drop for c in columns if c.drop})]:
            shown = [c for c in columns if not c.drop or c.drop > level]
            kept = [w for c, w in zip(columns, widest, strict=True) if not c.drop or c.drop > level]
            probe = self._build(shown, wrap=False, cells=[kept])
            natural = Measurement.get(console, options.update_width(10_000), probe).maximum
            if natural <= options.max_width:
                return self._build(shown, wrap=False)
        return self._build(shown, wrap=True)

    def _build(
        self, columns: list[_Column], wrap: bool, cells: list[list[str]] | None = None
    ) -> Table:
        s = self.standings
        ranking = ranking_words(s, score_label(str(s.get("unit", ""))))
        title = (
            f"{s.get('season', '')} ({s.get('game', '')}): {s.get('matches_done', 0)}/"
            f"{s.get('matches_total', 0)} matches, ranked by {ranking}"
        )
        caption = "; ".join(c.meaning for c in columns if c.meaning)
        table = Table(title=title, caption=caption, caption_justify="left")
        for c in columns:
            folds = wrap and c.header == "bot"  # a long name folds onto a second line
            table.add_column(
                c.header,
                justify=c.justify,
                no_wrap=not folds,
                overflow="fold" if folds else "ellipsis",
            )
        if cells is not None:
            for row in cells:
                table.add_row(*row)
            return table
        rows = list(s.get("rows", []))
        for r in rows[: self.top] if self.top else rows:
            table.add_row(*(c.cell(r) for c in columns))
        return table


def standings_table(standings: Standings, top: int | None = None) -> StandingsTable:
    """The standings for a terminal, with as many columns as its width holds."""
    return StandingsTable(standings, top)


def standings_csv(standings: Standings) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=["season", "unit", *ROW_FIELDS], lineterminator="\n")
    writer.writeheader()
    for row in standings.get("rows", []):
        writer.writerow({"season": standings.get("season"), "unit": standings.get("unit"), **row})
    return out.getvalue()


def _standings(args: argparse.Namespace) -> int:
    with _conn(args) as conn:
        store.season_row(conn, args.season)  # NotFoundError for an unknown season
        standings = store.get_standings(conn, args.season)
        if standings is None:
            standings = store.recompute_standings(conn, args.season)
    if args.json:
        print(json.dumps(standings, indent=1))
    elif args.csv:
        sys.stdout.write(standings_csv(standings))
    else:
        console().print(standings_table(standings))
    return 0


def _export(args: argparse.Namespace) -> int:
    from referee.match.replay import render_replay
    from referee.match.row import full_result
    from referee.queue import get_record, get_result
    from referee.seasons.archive import archive_of

    out = Path(args.dir)
    try:
        with _conn(args) as conn:
            info = store.get_season(conn, args.season)  # season.json: the hash as stored
            archived = archive_of(conn, args.season)
            if archived is not None:  # its results and records come from its archive
                schedule = archived.schedule
                result_of: Callable[[str], Any] = archived.result
                record_of: Callable[[str], Any] = archived.record
            else:
                schedule = store.get_schedule(conn, args.season)
                result_of = functools.partial(get_result, conn)
                record_of = functools.partial(get_record, conn)
            standings = store.get_standings(conn, args.season) or store.recompute_standings(
                conn, args.season
            )
            (out / "matches").mkdir(parents=True, exist_ok=True)
            (out / "replays").mkdir(parents=True, exist_ok=True)
            (out / "season.json").write_text(json.dumps(info, indent=1, sort_keys=True))
            (out / "standings.json").write_text(json.dumps(standings, indent=1))
            (out / "standings.csv").write_text(standings_csv(standings))
            count = 0
            sealed: list[str] = []
            with open(out / "results.jsonl", "w") as results:
                for data in schedule:
                    match_id = data["match_id"]
                    result = result_of(match_id)
                    record = record_of(match_id)
                    if result is None or record is None:
                        continue
                    # the full result: the row leaves each deal's penalties and detail to the
                    # record (referee/match/row.py)
                    results.write(json.dumps(full_result(result, record), sort_keys=True) + "\n")
                    if embargo.seal_of(conn, match_id, args.season).sealed:
                        sealed.append(match_id)  # its result counts; its moves wait
                        continue
                    # gzip: a record's JSON is ~1.4 MB a match and compresses about 10x
                    _write_gz(out / "matches" / f"{match_id}.json.gz", json.dumps(record))
                    _write_gz(out / "replays" / f"{match_id}.txt.gz", render_replay(record))
                    count += 1
    except OSError as exc:
        raise ConfigError(f"cannot write the export to {out}: {exc}") from None
    print(f"exported {count} matches of {args.season} to {out}")
    if sealed:
        print(
            f"{len(sealed)} match(es) left out of matches/ and replays/ (their results are in "
            f"results.jsonl): they are sealed while other tables still play their boards "
            f"({', '.join(sealed[:5])}{' …' if len(sealed) > 5 else ''}); export again when "
            "the season has ended"
        )
    return 0


def _write_gz(path: Path, text: str) -> None:
    """``text`` gzipped to ``path`` (``zcat``/``gzip.open`` read it; mtime 0: reproducible)."""
    with open(path, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(text.encode())


def _archive(args: argparse.Namespace) -> int:
    from referee.seasons.archive import archive_season

    with _conn(args) as conn:
        report = archive_season(conn, args.season)
    print(
        f"season {report.season} archived: {report.matches} matches, {report.records} records "
        f"(archive {report.archive_bytes} bytes at {report.location}); "
        f"{report.keys_dropped} Redis keys dropped"
        + (f", {report.migrated} inline records moved to the store" if report.migrated else "")
        + (f", {report.orphans_removed} stray records removed" if report.orphans_removed else "")
    )
    print(f"`arena season verify {report.season}` checks it from the archive")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from referee.seasons.verify import verify_season

    with _conn(args) as conn:
        report = verify_season(conn, args.season)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
    else:
        print(
            f"season {args.season}: seed commitment {'ok' if report.seed_ok else 'FAILED'}, "
            f"schedule {'ok' if report.schedule_ok else 'FAILED'}, "
            f"{report.matches_checked} matches / {report.deals_checked} deals re-dealt, "
            f"standings {'equal a recount' if report.standings_ok else 'FAILED'}"
        )
        for problem in report.problems:
            print(f"  problem: {terminal_safe(problem)}")
        print("verified" if report.ok else "NOT verified")
    return 0 if report.ok else 1


def _collusion(args: argparse.Namespace) -> int:
    from referee.seasons.collusion import season_collusion

    with _conn(args) as conn:
        report = season_collusion(conn, args.season)
    if args.json:
        print(json.dumps(report.to_dict(), indent=1))
        return 0
    limits = report.thresholds
    print(
        f"season {args.season}: {report.matches} matches, {report.decisions} decisions "
        f"with a choice, {limits.pairs if limits else 0} ordered pairs tested"
    )
    if limits is not None:
        print(
            f"thresholds (one-sided, corrected for the pairs): screen z >= {limits.screen:.2f} "
            f"(3 sigma), act z >= {limits.act:.2f} (5 sigma)"
        )
    shown = report.pairs if args.all else report.flagged
    if not shown:
        print("no pair reaches the screening threshold")
    for pair in shown:
        level = {"act": "ACT ON THIS", "screen": "screen"}.get(pair.level, "-")
        print(
            f"{pair.helper} -> {pair.helped}: z {pair.z:.1f} ({level}), "
            f"moved {pair.total:+.1f} over {pair.decisions} decisions in {pair.deals} deals"
        )
        if pair.level:
            for e in pair.evidence:
                print(
                    f"    {e.match_id} deal {e.deal + 1}: played {e.action}, moved {e.moved:+.2f}"
                )
    for problem in report.problems:
        print(f"  problem: {problem}")
    print("flags are evidence for people to weigh, never a verdict (docs/SECURITY.md, Fair play)")
    return 0


# --- watch --------------------------------------------------------------------------------


def watch_season(
    conn: redis.Redis,
    season_id: str,
    console: Console,
    *,
    top: int = 8,
    timeout_s: float | None = None,
    interval_s: float = 0.5,
) -> SeasonRow:
    """A live progress bar (matches, decisions/s, ETA) and the top of the table until the
    season ends (or ``timeout_s``); returns the season's row at the end."""
    row = store.season_row(conn, season_id)
    total = row.matches_total or 1
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TextColumn("ETA {task.fields[eta]}"),
        console=console,
    )
    task = progress.add_task(season_id, total=total, rate="", eta="?")
    started = time.monotonic()
    samples: list[tuple[float, int, int]] = []
    deadline = None if timeout_s is None else started + timeout_s

    def render() -> Group:
        standings = store.get_standings(conn, season_id)
        parts: list[Any] = [progress]
        if standings and standings.get("rows"):
            parts.append(standings_table(standings, top=top))
        return Group(*parts)

    with Live(render(), console=console, refresh_per_second=4, transient=True) as live:
        while True:
            row = store.season_row(conn, season_id)
            done = row.settled
            decisions = store.live_decisions(conn, season_id)
            now = time.monotonic()
            samples.append((now, done, decisions))
            samples = [s for s in samples if now - s[0] <= 10.0] or samples[-1:]
            t0, d0, n0 = samples[0]
            span = max(now - t0, 1e-6)
            rate = (decisions - n0) / span
            match_rate = (done - d0) / span
            eta = f"{(total - done) / match_rate:.0f}s" if match_rate > 0 and done < total else "?"
            progress.update(
                task,
                completed=done,
                rate=f"{rate:,.0f} decisions/s",
                eta=eta if done < total else "0s",
            )
            live.update(render())
            if row.state in store.ENDED or (deadline is not None and now > deadline):
                break
            time.sleep(interval_s)
    console.print(progress.get_renderable())
    return row


def _watch(args: argparse.Namespace) -> int:
    try:
        with _conn(args) as conn:
            out = console()
            info = watch_season(conn, args.season, out, top=args.top)
            standings = store.get_standings(conn, args.season)
    except KeyboardInterrupt:
        return 0
    if standings:
        out.print(standings_table(standings))
    print(f"season {args.season}: {info.state}")
    return 0
