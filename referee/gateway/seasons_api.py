"""League API season and match methods: ``SeasonsServicerMixin``.

The gateway's ``LeagueServicer`` inherits this mixin and provides ``self.redis``
(``redis.asyncio.Redis``) and ``await self.require_admin(context)``. The methods are thin:
each runs a :mod:`referee.seasons.store` (or ``referee.queue``) function in a thread with a
synchronous client and maps the referee's errors to gRPC status codes
(``referee.gateway.status``).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from redis import Redis as SyncRedis
from redis.asyncio import Redis as AsyncRedis

from arena.v1 import league_pb2
from referee.errors import ArenaError, ConfigError, NotFoundError, SealedError
from referee.games.errors import RulesError
from referee.gateway import status
from referee.limits import RenderCache
from referee.match.season_row import SeasonRow, Standings
from referee.seasons import embargo, store
from referee.seasons.model import SeasonSpec

T = TypeVar("T")
Context = Any  # grpc.aio.ServicerContext (grpcio ships no type stubs)

MAX_PAYLOAD = 56_000
"""The referee caps every message it sends at 64 KiB (docs/PROTOCOL.md section 7); records and
replays longer than this are shortened, saying so and where the whole one is."""


def fit_record(record: Mapping[str, Any]) -> str:
    """The record as JSON; without its bulkiest parts (steps, engine log, events) when it
    would not fit in one message, with ``"truncated"`` naming what was left out."""
    text = json.dumps(record, separators=(",", ":"))
    if len(text) <= MAX_PAYLOAD:
        return text
    slim = dict(record)
    dropped: list[str] = []
    for key in ("engine", "steps", "events"):
        if key in slim:
            slim.pop(key)
            dropped.append(key)
            text = json.dumps({**slim, "truncated": dropped}, separators=(",", ":"))
            if len(text) <= MAX_PAYLOAD:
                return text
    note = {"match_id": record.get("match_id"), "truncated": ["everything"]}
    return json.dumps(note)


def fit_text(text: str, match_id: str) -> str:
    if len(text.encode()) <= MAX_PAYLOAD:
        return text
    cut = text.encode()[: MAX_PAYLOAD - 200].decode(errors="ignore")
    return (
        cut
        + f"\n… (replay shortened to fit one message: `arena replay {match_id}` prints it all)\n"
    )


_U32_MAX = 2**32 - 1


def _u32(value: int) -> int:
    """``value`` within a uint32 field: a season stored before its fields were bounded
    (a ``move_ms`` of 5e9) must not make every listing fail."""
    return min(max(0, int(value)), _U32_MAX)


def season_info(row: SeasonRow, absent: Sequence[str] = ()) -> league_pb2.SeasonInfo:
    """A season's row as a ``SeasonInfo`` message; ``absent``: its bots with no stream
    (``store.bots_without_stream``), named with the warning."""
    spec = SeasonSpec.from_json(row.spec) if row.spec else None
    tc = spec.time_control if spec else None
    seed = row.seed or ""
    return league_pb2.SeasonInfo(
        season=row.season,
        game=row.game,
        preset=row.preset,
        state=str(row.state),
        bots=list(spec.bots) if spec else [],
        table_size=_u32(spec.table_size) if spec else 0,
        deals_per_match=_u32(spec.deals_per_match) if spec else 0,
        matches_total=_u32(row.matches_total),
        matches_done=_u32(row.matches_done),
        matches_failed=_u32(row.matches_failed),
        seed_sha256=row.seed_sha256,
        seed=int(seed) if seed else 0,
        seed_revealed=bool(seed),
        time_control=league_pb2.TimeControl(
            move_ms=_u32(tc.move_ms), bank_ms=_u32(tc.bank_ms), grace_ms=_u32(tc.grace_ms)
        )
        if tc
        else None,
        spec_json=row.spec,
        created_at=int(row.created_ms) // 1000,
        bots_without_stream=list(absent),
        warning=store.no_stream_warning(absent, spec) if spec else "",
    )


def standings_message(data: Standings | None, season: str) -> league_pb2.Standings:
    if data is None:
        return league_pb2.Standings(season=season)
    unit = str(data.get("unit", ""))
    rows = [
        league_pb2.StandingRow(
            bot=r["bot"],
            rank=r["rank"],
            matches=r["matches"],
            deals=r["deals"],
            deals_won=r["deals_won"],
            avg_place=r["avg_place"],
            score=round(r["score"]),
            unit=unit,
            illegal_passes=r["illegal_passes"],
            invalid_actions=r["invalid_actions"],
            timeouts=r["timeouts"],
            autopilot_seats=r["autopilot_seats"],
            fallbacks=r.get("fallbacks", 0),
            elo=r["elo"],
            elo_low=r["elo_low"],
            elo_high=r["elo_high"],
            live_elo=r["live_elo"],
            openskill_ordinal=r["openskill_ordinal"],
            openskill_mu=r["openskill_mu"],
            openskill_sigma=r["openskill_sigma"],
        )
        for r in data.get("rows", [])
    ]
    return league_pb2.Standings(
        season=str(data.get("season", season)),
        game=str(data.get("game", "")),
        rows=rows,
        matches_done=int(data.get("matches_done", 0)),
        matches_total=int(data.get("matches_total", 0)),
    )


def spec_from_request(request: league_pb2.CreateSeasonRequest) -> SeasonSpec:
    """A season spec from a ``CreateSeasonRequest`` (its TOML, else its fields)."""
    if request.toml:
        spec = SeasonSpec.from_toml(request.toml)
        if request.name:
            spec = SeasonSpec.from_dict({**spec.to_dict(), "name": request.name})
        return spec
    data: dict[str, Any] = {
        "name": request.name,
        "game": request.game,
        "preset": request.preset,
        "bots": list(request.bots),
        "table_size": request.table_size or 4,
        "deals_per_match": request.deals_per_match,
        "seed": request.seed or None,
    }
    if request.rules_json:
        data["rules"] = _json_field("rules_json", request.rules_json)
    if request.options_json:
        data["options"] = _json_field("options_json", request.options_json)
    if request.HasField("time_control"):
        tc = request.time_control
        data["time_control"] = {
            k: v
            for k, v in (
                ("move_ms", tc.move_ms),
                ("bank_ms", tc.bank_ms),
                ("grace_ms", tc.grace_ms),
            )
            if v
        }
    return SeasonSpec.from_dict(data)


def _json_field(name: str, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{name} is not JSON: {exc}") from None


def match_summary(
    status: Mapping[str, str], result: Mapping[str, Any] | None
) -> league_pb2.MatchSummary:
    match = (result or {}).get("result", {})
    seats = (result or {}).get("seats") or [s for s in status.get("seats", "").split(",") if s]
    return league_pb2.MatchSummary(
        match_id=status.get("match_id", ""),
        season=status.get("season", ""),
        game=status.get("game", ""),
        state=status.get("state", ""),
        players=list(seats),
        totals=[int(t) for t in match.get("totals", [])],
        unit=str(match.get("unit", "")),
        attempt=int(status.get("attempt") or 0),
        error=status.get("error", ""),
    )


def public_result(conn: SyncRedis, status: Mapping[str, str]) -> Any:
    """A match's committed result as spectators may see it: None while another table may
    still play its boards (its totals wait for its flight, ``embargo.counters_held``)."""
    from referee.queue import get_result

    match_id = status.get("match_id", "")
    if embargo.counters_held(conn, match_id, status.get("season", "")):
        return None
    return get_result(conn, match_id)


def _unsealed(conn: SyncRedis, match_id: str, season: str) -> None:
    """SealedError while the match's boards are still played at another table."""
    seal = embargo.seal_of(conn, match_id, season)
    if seal.sealed:
        raise SealedError(seal.message())


SeasonChange = Callable[
    ["SeasonsServicerMixin", league_pb2.SeasonRef, Context],
    Coroutine[Any, Any, league_pb2.SeasonInfo],
]


def _season_change(
    change: Callable[[SyncRedis, str], SeasonRow], does: str, warn: bool = False
) -> SeasonChange:
    """The League method that ``change``s the state of ``request.season``: admin only,
    answers with the season (StartSeason, PauseSeason, ResumeSeason, CancelSeason);
    ``warn``: naming its bots with no stream (``SeasonInfo.warning``)."""

    async def method(
        self: SeasonsServicerMixin, request: league_pb2.SeasonRef, context: Context
    ) -> league_pb2.SeasonInfo:
        await self.require_admin(context)

        def run(conn: SyncRedis) -> tuple[SeasonRow, list[str]]:
            row = change(conn, request.season)
            if not warn or not row.spec:
                return row, []
            bots = SeasonSpec.from_json(row.spec).bots
            return row, store.bots_without_stream(conn, bots)

        return season_info(*await self._run(context, run))

    method.__doc__ = f"Admin only: {does} ``request.season`` (``store.{change.__name__}``)."
    return method


class SeasonsServicerMixin:
    """Season, standings, match and replay methods of the League service."""

    if TYPE_CHECKING:
        redis: AsyncRedis
        replays: RenderCache

        async def require_admin(self, context: Context) -> None: ...

    def _seasons_sync(self) -> SyncRedis:
        client = getattr(self, "_sync", None)
        if isinstance(client, SyncRedis):
            return client
        cached = getattr(self, "_seasons_client", None)
        if isinstance(cached, SyncRedis):
            return cached
        kwargs = dict(self.redis.connection_pool.connection_kwargs)
        kwargs["decode_responses"] = True
        made = SyncRedis(**kwargs)
        self._seasons_client = made
        return made

    async def _run(self, context: Context, fn: Callable[[SyncRedis], T]) -> T:
        conn = self._seasons_sync()
        try:
            return await asyncio.to_thread(fn, conn)
        except (ArenaError, RulesError) as exc:
            await status.abort(context, exc)

    async def CreateSeason(
        self, request: league_pb2.CreateSeasonRequest, context: Context
    ) -> league_pb2.SeasonInfo:
        await self.require_admin(context)

        def create(conn: SyncRedis) -> tuple[SeasonRow, list[str]]:
            spec = spec_from_request(request)
            info = store.create_season(conn, spec)
            return info, store.bots_without_stream(conn, spec.bots)

        return season_info(*await self._run(context, create))

    StartSeason = _season_change(store.start_season, "starts", warn=True)
    PauseSeason = _season_change(store.pause_season, "pauses")
    ResumeSeason = _season_change(store.resume_season, "resumes", warn=True)
    CancelSeason = _season_change(store.cancel_season, "cancels")

    async def ListSeasons(
        self, request: league_pb2.ListSeasonsRequest, context: Context
    ) -> league_pb2.ListSeasonsResponse:
        seasons = await self._run(context, store.season_rows)
        return league_pb2.ListSeasonsResponse(seasons=[season_info(s) for s in seasons])

    async def GetSeason(
        self, request: league_pb2.SeasonRef, context: Context
    ) -> league_pb2.SeasonInfo:
        return season_info(await self._run(context, lambda c: store.season_row(c, request.season)))

    async def GetStandings(
        self, request: league_pb2.SeasonRef, context: Context
    ) -> league_pb2.Standings:
        def get(conn: SyncRedis) -> Standings | None:
            store.season_row(conn, request.season)  # NotFoundError for an unknown season
            return store.get_standings(conn, request.season)

        return standings_message(await self._run(context, get), request.season)

    async def ListMatches(
        self, request: league_pb2.ListMatchesRequest, context: Context
    ) -> league_pb2.ListMatchesResponse:
        from referee.queue import list_matches

        def get(conn: SyncRedis) -> list[Any]:
            if request.season:
                store.season_row(conn, request.season)
            statuses = list_matches(conn, request.season or None, request.limit or 100)
            return [match_summary(s, public_result(conn, s)) for s in statuses]

        return league_pb2.ListMatchesResponse(matches=await self._run(context, get))

    async def GetMatch(
        self, request: league_pb2.MatchRef, context: Context
    ) -> league_pb2.MatchRecord:
        from referee.queue import get_record, match_status

        def get(conn: SyncRedis) -> Any:
            status = match_status(conn, request.match_id)
            if status.get("state") == "unknown":
                raise NotFoundError(f"no match {request.match_id!r}")
            record = get_record(conn, request.match_id)
            if record is not None:
                _unsealed(conn, request.match_id, status.get("season", ""))
            return league_pb2.MatchRecord(
                summary=match_summary(status, public_result(conn, status)),
                record_json=fit_record(record) if record is not None else "",
            )

        return await self._run(context, get)

    async def GetReplay(self, request: league_pb2.MatchRef, context: Context) -> league_pb2.Replay:
        from referee.match.replay import render_replay
        from referee.queue import get_record

        match_id = request.match_id
        key = ("text", match_id)

        def get(conn: SyncRedis) -> str:
            cached = self.replays.get(key)  # a committed record never changes: nor its text
            if cached is not None:
                _unsealed(conn, match_id, cached[0])
                return str(cached[1])
            record = get_record(conn, match_id)
            if record is None:
                raise NotFoundError(
                    f"match {match_id!r} has no committed record (unknown, or not finished yet)"
                )
            season = str(record.get("spec", {}).get("season") or "")
            _unsealed(conn, match_id, season)
            text = fit_text(render_replay(record), match_id)
            self.replays.put(key, season, text)
            return text

        text = await self._run(context, get)
        return league_pb2.Replay(match_id=request.match_id, text=text)

    async def GetCollusion(
        self, request: league_pb2.CollusionRequest, context: Context
    ) -> league_pb2.CollusionReport:
        """Admin only: the season's collusion report (it judges with every hand seen)."""
        await self.require_admin(context)
        from referee.seasons.collusion import season_collusion

        report = await self._run(context, lambda c: season_collusion(c, request.season))
        limits = report.thresholds
        shown = report.pairs if request.all_pairs else report.flagged
        return league_pb2.CollusionReport(
            season=request.season,
            matches=report.matches,
            decisions=report.decisions,
            pairs_tested=limits.pairs if limits else 0,
            screen_z=limits.screen if limits else 0.0,
            act_z=limits.act if limits else 0.0,
            pairs=[
                league_pb2.CollusionPair(
                    helper=p.helper,
                    helped=p.helped,
                    z=p.z,
                    level=p.level,
                    deals=p.deals,
                    decisions=p.decisions,
                    moved=p.total,
                    evidence=[
                        league_pb2.CollusionEvidence(
                            match_id=e.match_id, deal=e.deal, action=e.action, moved=e.moved
                        )
                        for e in p.evidence
                    ],
                )
                for p in shown
            ],
            problems=report.problems,
        )
