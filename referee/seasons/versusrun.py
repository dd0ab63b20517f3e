"""Run a version test on the platform: a season with the versus schedule
(``referee/seasons/versiontest.py``), read as its results commit.

The season machinery does the playing (the driver enqueues, the match hosts play, results
commit once); this module creates and starts the season, reads the committed pairs in
schedule order and, with an SPRT, cancels the season at the first crossing of a bound
(matches in flight finish and count, as with any cancel).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis

from referee import keys
from referee.errors import ConfigError, NotFoundError
from referee.match.season_row import SeasonRow
from referee.seasons import store
from referee.seasons.model import MAX_SEASON_MATCHES, SeasonSpec
from referee.seasons.paired import PairedSummary, Sprt, paired_interval
from referee.seasons.versiontest import done_prefix, set_differences, versus_spec

ENTRY_VERSION_SEP = "@"
VERSION_START_S = 60.0
"""How long a version test waits for the hosted versions it seats to connect."""


VersionEntry = Callable[[str, int], str]
"""(bot, version) -> the registered bot that plays that hosted version
(``referee.hosting.versions.VersionStore.version_entry``)."""


def resolve_entry(conn: redis.Redis, text: str, versions: VersionEntry | None = None) -> str:
    """The playable entry (a registered bot name) that a NEW/OLD/field argument names: a
    bot's name, or ``NAME@vN`` (``NAME@N``), version N of hosted bot NAME, resolved by
    ``versions``."""
    name = text.strip()
    if ENTRY_VERSION_SEP in name:
        bot, _, version = name.partition(ENTRY_VERSION_SEP)
        number = version[1:] if version[:1] in ("v", "V") else version
        if not number.isdigit() or int(number) < 1:
            raise ConfigError(f"{text!r}: name a version as {bot}@v2 (`arena bot versions {bot}`)")
        if versions is None:
            raise ConfigError(
                f"{text!r}: hosted versions are resolved where the data dir is at hand "
                "(`arena bot test`); name a registered bot here"
            )
        if not conn.sismember(keys.BOTS, bot):
            raise ConfigError(f"{text!r}: {bot!r} is not a registered bot (`arena bot list`)")
        return versions(bot, int(number))
    if not name or not conn.sismember(keys.BOTS, name):
        raise ConfigError(
            f"{text!r} is not a registered bot: register it (`arena bot register NAME`) or "
            "name one of `arena bot list`"
        )
    return name


@dataclass
class VersusOutcome:
    season: str
    sets: list[float]
    pairs_done: int
    state: str
    decision: str = ""
    verdict: str = ""

    @property
    def summary(self) -> PairedSummary | None:
        return paired_interval(self.sets) if len(self.sets) >= 2 else None


UNITS = {"sevens": "chips", "sedma": "match points"}


def describe(out: VersusOutcome, game: str) -> str:
    """One line: sets, the mean difference with its interval, nElo, the SPRT's state."""
    summary = out.summary
    if summary is None:
        return f"{len(out.sets)} sets so far"
    unit = UNITS.get(game, "points")
    text = (
        f"{summary.sets} sets: NEW - OLD = {summary.mean:+.3f} {unit} per set, 95% "
        f"[{summary.low:+.3f}, {summary.high:+.3f}] (sd {summary.sd:.2f}; "
        f"nElo {summary.nelo:+.0f} [{summary.nelo_low:+.0f}, {summary.nelo_high:+.0f}])"
    )
    if out.verdict:
        text += f"; {out.verdict.split('; ', 1)[-1]}"
    return text


def pairs_for(sets: int, deals: int) -> int:
    pairs = max(1, math.ceil(sets / deals))
    if 2 * pairs > MAX_SEASON_MATCHES:
        raise ConfigError(
            f"{sets} sets of {deals} deals a match would take {2 * pairs} matches: at most "
            f"{MAX_SEASON_MATCHES} (raise --deals or lower the number of games)"
        )
    return pairs


def start_versus(
    conn: redis.Redis,
    new: str,
    old: str,
    field: Sequence[str],
    game: str,
    *,
    sets: int,
    preset: str = "",
    deals: int = 4,
    name: str = "",
    seed: int | None = None,
    versions: VersionEntry | None = None,
) -> SeasonRow:
    """Create and start the season of a version test of up to ``sets`` duplicate sets
    (``versions``: see :func:`resolve_entry`)."""
    named = (new, old, *field)
    entries = [resolve_entry(conn, b, versions) for b in named]
    spec = versus_spec(
        entries[0], entries[1], entries[2:], game, preset=preset, deals=deals, name=name, seed=seed
    )
    info = store.create_season(conn, spec, versus_pairs=pairs_for(sets, deals))
    pinned = [e for text, e in zip(named, entries, strict=True) if ENTRY_VERSION_SEP in text]
    if pinned:  # the bot supervisor starts them now that a season wants them
        _await_streams(conn, info.season, pinned, VERSION_START_S)
    return store.start_season(conn, info.season)


def _await_streams(conn: redis.Redis, season: str, names: list[str], within_s: float) -> None:
    """Wait until each of ``names`` holds a stream; else cancel the season and say why."""
    deadline = time.monotonic() + within_s
    while missing := store.bots_without_stream(conn, names):
        if time.monotonic() > deadline:
            store.cancel_season(conn, season)
            raise ConfigError(
                f"{', '.join(missing)} did not connect within {within_s:g} s: hosted versions "
                "play where the bot supervisor runs (`arena up`, `arena bots run`); "
                f"season {season} is cancelled"
            )
        time.sleep(0.2)


def read_versus(conn: redis.Redis, season_id: str, sprt: Sprt | None = None) -> VersusOutcome:
    """The test's state now: the sets of the committed prefix of pairs (fed to ``sprt``,
    a fresh one, in schedule order)."""
    row = store.season_row(conn, season_id)
    if row.schedule != "versus":
        raise NotFoundError(f"season {season_id!r} is not a version test")
    spec = SeasonSpec.from_json(row.spec)
    pairs = row.matches_total // 2
    results = {r["match_id"]: r for r in store.committed_results(conn, season_id)}
    done = done_prefix(spec, results, pairs)
    diffs = set_differences(spec, results, done)
    out = VersusOutcome(season_id, [], done, str(row.state))
    for d in diffs:
        out.sets.append(d)
        if sprt is not None and sprt.add(d):
            break
    if sprt is not None:
        out.decision, out.verdict = sprt.decision, sprt.verdict()
    return out


def run_versus(
    conn: redis.Redis,
    season_id: str,
    *,
    sprt: Sprt | None = None,
    poll_s: float = 0.5,
    timeout_s: float | None = None,
    progress: Callable[[VersusOutcome], None] | None = None,
) -> VersusOutcome:
    """Follow a started version test until its season ends or the SPRT decides (then the
    season is cancelled)."""
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        fresh = None if sprt is None else Sprt(sprt.elo0, sprt.elo1, sprt.alpha, sprt.beta)
        out = read_versus(conn, season_id, fresh)
        if progress is not None:
            progress(out)
        if out.decision:
            if out.state not in store.ENDED:
                store.cancel_season(conn, season_id)
                out.state = store.CANCELLED
            return out
        if out.state in store.ENDED:
            if sprt is not None and not out.verdict:
                out.verdict = "undecided"
            return out
        if deadline is not None and time.monotonic() > deadline:
            return out
        time.sleep(poll_s)
