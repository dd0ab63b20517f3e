"""``/play``: a person plays a casual match against bots from the browser.

``POST /play`` makes (or re-keys) the person's bot identity (:func:`human.claim_identity`):
a name is the person's who first took it, proven by the key their browser holds in the
HttpOnly cookie :data:`KEY_COOKIE`; a visitor without that key is refused the name and
nothing of its identity changes. It connects a :class:`human.HumanSeat` to the referee's own
gRPC address over the public bot protocol, enqueues a casual match (no season) and redirects
to ``/play/<session>``. That page follows ``/play/<session>/events`` (server-sent events:
exactly what the protocol delivered to the seat, plus the session's own status) and posts
the person's choices to ``/play/<session>/action``. The session id is the capability: only
who started the game has it. The clock per decision is the operator's
(``WebConfig.human_move_s``).

Limits (docs/SECURITY.md "Anonymous surfaces and their limits"): casual matches play at most
``human.MAX_CASUAL_DEALS`` deals, :data:`MAX_CASUAL_PER_CLIENT` per client address and
:data:`MAX_CASUAL` in all at once, and run on the hosts' casual slots
(``referee.defaults.CASUAL_QUEUE_NAME``); ``WebConfig.casual_play`` False refuses them.
Join sessions are :data:`MAX_JOINS_PER_CLIENT` per client address; a client makes at most
:data:`NEW_PEOPLE_PER_CLIENT` new identities an hour, :data:`MAX_PEOPLE` exist at once, and
an identity idle for ``WebConfig.person_idle_s`` that no season names is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web
from multidict import MultiDict, MultiMapping

from arena_sdk.sdk import BotRefused
from referee import keys
from referee.errors import ArenaError, ConflictError
from referee.games.errors import InvalidRulesError
from referee.games.registry import GAMES
from referee.web import human, league
from referee.web.responses import error, json_response

if TYPE_CHECKING:
    from referee.web.app import ArenaWeb

log = logging.getLogger(__name__)

SESSION_TTL_S = 3 * 3600.0
MAX_SESSIONS = 64
MAX_CASUAL = 8
"""Casual matches started from the web that may be queued or playing at once."""
MAX_CASUAL_PER_CLIENT = 1
"""... of which one client address may have this many."""
MAX_JOINS_PER_CLIENT = 3
"""Join sessions (a seat for a season's matches) one client address may hold at once."""
NEW_PEOPLE_PER_CLIENT = 5
"""New person identities one client address may make per hour."""
MAX_PEOPLE = 1000
"""Person identities made by the web that may exist at once (idle ones expire)."""
PRUNE_EVERY_S = 60.0
KEY_COOKIE = "arena_person"
"""The HttpOnly cookie holding the visitor's person key (see :func:`human.claim_identity`)."""
KEY_COOKIE_MAX_AGE_S = 365 * 24 * 3600
_KEY_RE = re.compile(r"^[A-Za-z0-9_-]{32,64}$")
CONNECT_WAIT_S = 10.0
HEARTBEAT_S = 15.0


@dataclass
class PlaySession:
    sid: str
    bot: str
    seat: human.HumanSeat
    created: float = field(default_factory=time.monotonic)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    match_id: str = ""
    legal: dict[int, list[str]] = field(default_factory=dict)
    answered: set[int] = field(default_factory=set)
    over: bool = False
    join: bool = False
    """Seated for any match (a season's, or one an operator starts), not one casual match."""
    client: str = ""
    """The address of the client that opened it (the per-client budgets count these)."""

    @property
    def active(self) -> bool:
        return not self.over and not (self.task is not None and self.task.done())

    def push(self, kind: str, payload: dict[str, Any]) -> None:
        """Append an event (on the loop's thread) and wake the page's stream."""
        self.events.append((kind, payload))
        if kind == "turn":
            self.legal[int(payload["seq"])] = list(payload["legal_actions"])
        if kind == "match_end" and not self.join:
            self.over = True
            asyncio.get_running_loop().call_later(1.0, self.seat.stop.set)
        self.changed.set()


DEFAULT_VARIANT = human.FLAGSHIP
"""What the form offers first: the flagship game, as ``arena play`` plays it by default."""


def variant_groups() -> list[dict[str, Any]]:
    """The form's one picker: per game (the flagship first) its presets in the registry's
    order, each saying how many players it takes and so how many opponents to choose."""
    order = sorted(GAMES, key=lambda name: (name != DEFAULT_VARIANT[0], name))
    groups = []
    for name in order:
        options = []
        for preset in GAMES[name].presets():
            players = [n + 1 for n in human.opponent_counts(name, preset)]
            seats = str(players[0]) if len(players) == 1 else f"{players[0]}-{players[-1]}"
            choose = human.counts_text(human.opponent_counts(name, preset), "opponent")
            options.append(
                {
                    "value": f"{name}/{preset}",
                    "text": f"{preset} · {seats} players: choose {choose.removeprefix('exactly ')}",
                }
            )
        groups.append({"label": name.capitalize(), "options": options})
    return groups


def cross_site(request: web.Request) -> web.Response | None:
    """403 for a post sent by another site's page (its ``Origin`` is not this host): such a
    form could re-key a person's identity or answer for them."""
    origin = request.headers.get("Origin")
    if origin is None or origin == "null":
        return None if origin is None else error(403, "posts from opaque origins are refused")
    host = origin.split("://", 1)[-1]
    if host != request.host:
        return error(403, f"a post from {origin} is refused: use this server's own pages")
    return None


class _Refused(Exception):
    """A seat refused with an HTTP status and a sentence for the person."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class PlayRoutes:
    def __init__(self, web_app: ArenaWeb) -> None:
        self.web = web_app
        self.sessions: dict[str, PlaySession] = {}
        self._made: defaultdict[str, deque[float]] = defaultdict(deque)
        self._pruned = 0.0

    def add_routes(self, router: web.UrlDispatcher) -> None:
        router.add_get("/play", self.form)
        router.add_post("/play", self.start)
        router.add_get("/play/{sid}", self.page)
        router.add_get("/play/{sid}/events", self.events)
        router.add_post("/play/{sid}/action", self.action)

    async def close(self) -> None:
        for session in self.sessions.values():
            session.seat.stop.set()
            session.changed.set()
        for session in list(self.sessions.values()):
            if session.task is not None:
                with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                    await asyncio.wait_for(session.task, 5.0)
        self.sessions.clear()

    @property
    def enabled(self) -> bool:
        return bool(self.web.config.grpc_target) and self.web.config.human_move_s > 0

    def _why_disabled(self) -> str:
        return (
            "people cannot play on this server: the web runs without the referee's gRPC "
            "address (`arena referee` gives it unless it serves TLS or --human-move-s is 0)"
        )

    # --- the form -------------------------------------------------------------------------

    async def _opponents(self) -> list[dict[str, Any]]:
        names = sorted(league.text(b) for b in await self.web.conn.smembers(keys.BOTS))
        names = [n for n in names if not n.startswith(human.PREFIX)]
        async with self.web.conn.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.hlen(keys.bot_streams(name))
            streams = await pipe.execute() if names else []
        return [{"name": n, "connected": bool(s)} for n, s in zip(names, streams, strict=True)]

    async def form(
        self,
        request: web.Request,
        problem: str = "",
        status: int = 200,
        posted: MultiMapping[Any] | None = None,
    ) -> web.Response:
        """The form; ``posted``: a refused form's values, shown again as they were sent."""
        posted = posted if posted is not None else MultiDict()
        return self.web.html(
            "play.html",
            status=status,
            enabled=self.enabled,
            why_disabled="" if self.enabled else self._why_disabled(),
            variants=variant_groups(),
            default_variant="/".join(DEFAULT_VARIANT),
            opponents=await self._opponents(),
            move_s=self.web.config.human_move_s,
            casual_play=self.web.config.casual_play,
            max_deals=human.MAX_CASUAL_DEALS,
            problem=problem,
            form={**request.query, **{k: str(v) for k, v in posted.items() if k != "bot"}},
            checked={str(v) for k, v in posted.items() if k == "bot"},
        )

    async def start(self, request: web.Request) -> web.Response:
        cross = cross_site(request)
        if cross is not None:
            return cross
        if not self.enabled:
            return await self.form(request, self._why_disabled(), status=503)
        data = await request.post()

        async def refuse(problem: str, status: int = 400) -> web.Response:
            return await self.form(request, problem, status, posted=data)

        name = str(data.get("name", "") or "").strip()
        if not name or name == "guest":  # everyone's default: a guest name of one's own
            name = f"guest-{secrets.token_hex(3)}"
        if str(data.get("join", "")) == "1":
            return await self._join(request, name)
        if not self.web.config.casual_play:
            return await refuse(
                "casual matches are turned off on this server (--no-casual-play); "
                "take your seat in a season instead",
                status=503,
            )
        game, preset = DEFAULT_VARIANT
        if str(data.get("variant", "")).strip():
            game, _, preset = str(data["variant"]).partition("/")
        elif str(data.get("game", "")).strip():  # game and preset posted apart (scripts)
            game, preset = str(data["game"]), str(data.get("preset", "") or "")
        against = [a.strip() for a in str(data.get("against", "")).split(",") if a.strip()]
        against += [str(v) for k, v in data.items() if k == "bot" and str(v).strip()]
        try:
            seat_index = int(str(data.get("seat", "0") or 0))
            deals = int(str(data["deals"])) if str(data.get("deals", "")).strip() else None
        except ValueError:
            return await refuse("seat and deals are whole numbers")
        if not against:
            return await refuse("choose the bots to play against")
        for bot in against:
            if not league.ID_PATTERN.match(bot) or not await self.web.conn.sismember(
                keys.BOTS, bot
            ):
                return await refuse(f"no bot named {bot!r} is registered")
        if game not in GAMES:
            return await refuse(f"unknown game {game!r}: use one of {', '.join(GAMES)}")
        if deals is not None and not 1 <= deals <= human.MAX_CASUAL_DEALS:
            return await refuse(
                f"deals = {deals} is out of range: a casual match plays 1 .. "
                f"{human.MAX_CASUAL_DEALS} deals (or leave it empty for the rules' length)"
            )
        preset = preset or human.default_preset(game)
        try:
            problem = human.table_problem(game, preset, len(against))
        except InvalidRulesError as exc:
            return await refuse(str(exc))
        if problem is not None:
            return await refuse(problem)
        self._expire()
        over = self._over_budget(request, join=False)
        if over is not None:
            return await refuse(over[1], status=over[0])
        key = self._key(request)
        try:
            session = await self._open(request, name, key)
        except _Refused as exc:
            return await self.form(request, str(exc), status=exc.status)
        except (ArenaError, ValueError) as exc:
            return await refuse(str(exc))
        config = self.web.config
        try:
            spec = await asyncio.to_thread(
                human.casual_match,
                self.web.sync_conn,
                human=session.bot,
                game=game,
                preset=preset,
                against=against,
                move_ms=int(config.human_move_s * 1000),
                bank_ms=int(config.human_bank_s * 1000),
                seat=seat_index,
                deals=deals,
            )
        except (ArenaError, InvalidRulesError, ValueError) as exc:
            await self._drop(session)
            return await refuse(str(exc))
        session.match_id = spec.match_id
        session.push(
            "session",
            {"state": "queued", "match_id": spec.match_id, "bot": session.bot},
        )
        raise self._seated(request, session, key)

    async def _join(self, request: web.Request, name: str) -> web.Response:
        """Seat the person for whatever match their identity is in (a season's too)."""
        self._expire()
        over = self._over_budget(request, join=True)
        if over is not None:
            return await self.form(request, over[1], status=over[0])
        key = self._key(request)
        try:
            session = await self._open(request, name, key)
        except _Refused as exc:
            return await self.form(request, str(exc), status=exc.status)
        except (ArenaError, ValueError) as exc:
            return await self.form(request, str(exc), status=400)
        session.join = True
        session.push("session", {"state": "joined", "bot": session.bot})
        raise self._seated(request, session, key)

    # --- who may sit, and how many ----------------------------------------------------------

    @staticmethod
    def _client(request: web.Request) -> str:
        return request.remote or ""

    @staticmethod
    def _key(request: web.Request) -> str:
        """The visitor's person key: their cookie's, or a new one."""
        given = request.cookies.get(KEY_COOKIE, "")
        return given if _KEY_RE.match(given) else human.new_person_key()

    @staticmethod
    def _seated(request: web.Request, session: PlaySession, key: str) -> web.HTTPSeeOther:
        """The redirect to the table, carrying the person's key (theirs alone: HttpOnly,
        same-site only, sent only to /play)."""
        redirect = web.HTTPSeeOther(f"/play/{session.sid}")
        redirect.set_cookie(
            KEY_COOKIE,
            key,
            max_age=KEY_COOKIE_MAX_AGE_S,
            path="/play",
            httponly=True,
            samesite="Strict",
            secure=request.secure,
        )
        return redirect

    def _over_budget(self, request: web.Request, *, join: bool) -> tuple[int, str] | None:
        """``(status, why)`` when this client or everyone holds all the sessions of its kind."""
        client = self._client(request)
        if len(self.sessions) >= MAX_SESSIONS:
            return 503, f"all {MAX_SESSIONS} seats of this server are taken; try again later"
        if join:
            mine = [s for s in self.sessions.values() if s.join and s.active and s.client == client]
            if len(mine) >= MAX_JOINS_PER_CLIENT:
                return 429, (
                    f"you hold {len(mine)} seats already (at most {MAX_JOINS_PER_CLIENT} "
                    "per client): close one, or wait until it expires"
                )
            return None
        casual = [s for s in self.sessions.values() if not s.join and s.active]
        mine = [s for s in casual if s.client == client]
        if len(mine) >= MAX_CASUAL_PER_CLIENT:
            return 429, (
                f"you have a casual match in progress already (at most {MAX_CASUAL_PER_CLIENT} "
                "per client): finish it first"
            )
        if len(casual) >= MAX_CASUAL:
            return 503, f"all {MAX_CASUAL} casual tables are in use; try again in a few minutes"
        return None

    async def _claim(self, request: web.Request, name: str, key: str) -> tuple[str, str]:
        """The person identity ``name`` for the holder of ``key`` (see the module docstring)."""
        conn = self.web.sync_conn
        client = self._client(request)
        bot = human.bot_name(name)
        if not await self.web.conn.exists(keys.bot(bot)):
            await self._prune()
            made = self._made[client]
            now = time.monotonic()
            while made and now - made[0] > 3600.0:
                made.popleft()
            if len(made) >= NEW_PEOPLE_PER_CLIENT:
                raise _Refused(
                    429,
                    f"this client made {len(made)} new names within the hour (at most "
                    f"{NEW_PEOPLE_PER_CLIENT}): sit down under one of them",
                )
            if await asyncio.to_thread(human.people_count, conn) >= MAX_PEOPLE:
                raise _Refused(503, f"this server holds {MAX_PEOPLE} people already; try later")
        try:
            bot, token, new = await asyncio.to_thread(human.claim_identity, conn, name, key)
        except ConflictError as exc:
            raise _Refused(409, str(exc)) from None
        if new:
            self._made[client].append(time.monotonic())
        return bot, token

    async def _prune(self) -> None:
        """Delete idle person identities, at most once per :data:`PRUNE_EVERY_S`."""
        now = time.monotonic()
        if now - self._pruned < PRUNE_EVERY_S and self._pruned:
            return
        self._pruned = now
        gone = await asyncio.to_thread(
            human.forget_idle_people, self.web.sync_conn, self.web.config.person_idle_s
        )
        if gone:
            log.info("forgot %d idle person identities", len(gone))

    async def _open(self, request: web.Request, name: str, key: str) -> PlaySession:
        bot, token = await self._claim(request, name, key)
        for old in [s for s in self.sessions.values() if s.bot == bot]:
            await self._drop(old)  # the same person's older page: the new token ends it
        loop = asyncio.get_running_loop()
        holder: list[PlaySession] = []

        def listener(kind: str, payload: dict[str, Any]) -> None:
            loop.call_soon_threadsafe(holder[0].push, kind, payload)

        seat = human.HumanSeat(bot, listener)
        session = PlaySession(secrets.token_urlsafe(12), bot, seat, client=self._client(request))
        holder.append(session)
        self.sessions[session.sid] = session
        session.task = asyncio.ensure_future(self._run(session, token))
        deadline = time.monotonic() + CONNECT_WAIT_S
        while time.monotonic() < deadline:
            if await self.web.conn.hlen(keys.bot_streams(bot)):
                return session
            if session.task.done():
                break
            await asyncio.sleep(0.05)
        await self._drop(session)
        raise ValueError(f"the seat of {bot} could not connect to the referee in time")

    async def _run(self, session: PlaySession, token: str) -> None:
        target = self.web.config.grpc_target
        assert target is not None
        try:
            await session.seat.run_async(target, token, stop=session.seat.stop)
        except BotRefused as exc:
            session.push("session", {"state": "refused", "message": str(exc)})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("the seat of %s failed", session.bot)
            session.push("session", {"state": "failed", "message": repr(exc)})

    async def _drop(self, session: PlaySession) -> None:
        session.seat.stop.set()
        session.changed.set()
        self.sessions.pop(session.sid, None)
        if session.task is not None:
            with contextlib.suppress(asyncio.TimeoutError, asyncio.CancelledError, Exception):
                await asyncio.wait_for(session.task, 5.0)

    def _expire(self) -> None:
        now = time.monotonic()
        for sid, session in list(self.sessions.items()):
            if now - session.created > SESSION_TTL_S or (
                session.over
                and session.task is not None
                and session.task.done()
                and now - session.created > 600
            ):
                session.seat.stop.set()
                self.sessions.pop(sid, None)

    # --- the table ------------------------------------------------------------------------

    def _session(self, request: web.Request) -> PlaySession:
        session = self.sessions.get(request.match_info["sid"])
        if session is None:
            raise web.HTTPNotFound()
        return session

    async def page(self, request: web.Request) -> web.Response:
        session = self._session(request)
        return self.web.html(
            "play_table.html",
            sid=session.sid,
            bot=session.bot,
            match_id=session.match_id,
            join=session.join,
        )

    async def events(self, request: web.Request) -> web.StreamResponse:
        session = self._session(request)
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
        )
        await response.prepare(request)
        sent = int(request.headers.get("Last-Event-ID", "-1")) + 1
        try:
            while True:
                while sent < len(session.events):
                    kind, payload = session.events[sent]
                    data = json.dumps({"kind": kind, "payload": payload}, separators=(",", ":"))
                    await response.write(f"id: {sent}\nevent: seat\ndata: {data}\n\n".encode())
                    sent += 1
                if session.seat.stop.is_set() and sent >= len(session.events):
                    break
                session.changed.clear()
                try:
                    await asyncio.wait_for(session.changed.wait(), HEARTBEAT_S)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")
        except (ConnectionResetError, RuntimeError):
            pass
        return response

    async def action(self, request: web.Request) -> web.Response:
        session = self._session(request)
        cross = cross_site(request)
        if cross is not None:
            return cross
        try:
            body = await request.json()
            seq, action = int(body["seq"]), str(body["action"])
        except (ValueError, KeyError, TypeError):
            return error(400, 'send JSON {"seq": <the turn\'s seq>, "action": "<a legal action>"}')
        legal = session.legal.get(seq)
        if legal is None:
            return error(409, f"no turn {seq} is waiting for you")
        if seq in session.answered:
            return error(409, f"turn {seq} was already answered")
        if action not in legal:
            return error(400, f"{action!r} is not legal now: choose one of {', '.join(legal)}")
        session.answered.add(seq)
        session.seat.answer(seq, action)
        return json_response(200, {"seq": seq, "action": action, "status": "sent"})
