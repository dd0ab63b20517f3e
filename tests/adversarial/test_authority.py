"""Nothing anonymous acts for anyone else or holds
what others need.

The real stack: ``arena referee`` and ``arena worker`` processes on the session's embedded
Redis, SDK bots in threads, the web's ``/play`` served over HTTP on loopback, and its
people's seats connected to the referee over gRPC like any bot.

- A name is not an identity: a visitor without the person's key (her cookie) can neither
  sit as her nor re-key her token.
- Casual matches from the web have bounded deals, a per-client budget, slots of their own
  (a casual match holding every casual slot leaves a season's match running), and an
  operator switch.
- Join sessions are capped per client; idle person identities that no season names go.
"""

from __future__ import annotations

import http.client
import http.cookies
import secrets
import time
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from referee import keys, queue
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.spec import MatchSpec, TimeControl, match_deal_seed
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.web import human, play
from sample_bots.first_legal import FirstLegalBot
from tests.metrics.http_helpers import running_server
from tests.platform_fixtures import Platform, bots_in_threads, running_platform

pytestmark = pytest.mark.slow

OPPONENTS = ("fl-a", "fl-b", "fl-c")
KEY_COOKIE = "arena_person"
"""The cookie that holds a person's key (``referee.web.play.KEY_COOKIE``)."""
JOINS_PER_CLIENT = 3
"""The documented limit (docs/SECURITY.md; ``referee.web.play.MAX_JOINS_PER_CLIENT``)."""


@dataclass
class Answer:
    status: int
    location: str
    cookie: str
    body: str


def post(port: int, fields: dict[str, str], cookie: str = "") -> Answer:
    """``POST /play`` as a script would send it: no Origin, the cookie only if given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/x-www-form-urlencoded"}
    if cookie:
        headers["Cookie"] = f"{KEY_COOKIE}={cookie}"
    conn.request("POST", "/play", urllib.parse.urlencode(fields), headers)
    response = conn.getresponse()
    body = response.read().decode(errors="replace")
    jar = http.cookies.SimpleCookie(response.getheader("Set-Cookie") or "")
    given = jar[KEY_COOKIE].value if KEY_COOKIE in jar else ""
    conn.close()
    return Answer(response.status, response.getheader("Location") or "", given, body)


def get_status(port: int, path: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request("GET", path)
    status = conn.getresponse().status
    conn.close()
    return status


def join(port: int, name: str, cookie: str = "") -> Answer:
    return post(port, {"join": "1", "name": name}, cookie)


def casual(port: int, name: str, deals: int, cookie: str = "") -> Answer:
    fields = {"name": name, "game": "sevens", "preset": "fan-tan", "deals": str(deals)}
    return post(port, {**fields, "against": ",".join(OPPONENTS)}, cookie)


@pytest.fixture
def platform(redis_url: str) -> Iterator[Platform]:
    """One host with one season slot and one casual slot, and three connected bots."""
    with (
        running_platform(redis_url, "--matches", "1", "--casual-matches", "1", workers=1) as p,
        bots_in_threads(p, {name: FirstLegalBot() for name in OPPONENTS}),
    ):
        yield p


def test_a_name_alone_never_takes_a_persons_seat(platform: Platform, redis_url: str) -> None:
    """Finding 1: a second client's join as ``alice`` (no credentials, no Origin) is refused;
    alice keeps her token, her page and her stream; alice herself rejoins with her key."""
    conn = platform.conn
    with running_server(redis_url, grpc_target=platform.server) as port:
        alice = join(port, "alice")
        assert alice.status == 303, alice.body
        page = alice.location
        token = conn.hget(keys.bot("human-alice"), "token_sha256")

        for thief_cookie in ("", secrets.token_urlsafe(32)):
            thief = join(port, "alice", thief_cookie)
            assert thief.status == 409, (thief.status, thief.body)
            assert "taken by another person" in thief.body
            stolen_casual = casual(port, "alice", 1, thief_cookie)
            assert stolen_casual.status == 409, (stolen_casual.status, stolen_casual.body)
        assert conn.hget(keys.bot("human-alice"), "token_sha256") == token
        assert get_status(port, page) == 200
        assert conn.hlen(keys.bot_streams("human-alice")) == 1

        assert alice.cookie, "the person's key must come back as a cookie"
        again = join(port, "alice", alice.cookie)
        assert again.status == 303, again.body
        assert get_status(port, again.location) == 200


def test_casual_matches_are_bounded_and_never_hold_season_slots(
    platform: Platform, redis_url: str
) -> None:
    """Finding 2: huge deals are refused with the range; one client gets one casual match at
    a time; a casual match holding the host's casual slot leaves its season slot free."""
    conn = platform.conn
    with running_server(redis_url, grpc_target=platform.server, human_move_s=60) as port:
        huge = casual(port, "carol", 100_000)
        assert huge.status == 400, huge.status
        assert (
            f"deals = 100000 is out of range: a casual match plays 1 .. {human.MAX_CASUAL_DEALS}"
            in huge.body
        )
        assert not conn.exists(keys.bot("human-carol"))  # refused before anything was made

        first = casual(port, "carol", 1)
        assert first.status == 303, first.body
        second = casual(port, "carol", 1, first.cookie)
        assert second.status == 429, (second.status, second.body)
        assert "at most 1 per client" in second.body

        # the person never answers: the casual match holds its slot for minutes
        deadline = time.monotonic() + 60
        casual_id = ""
        while not casual_id:
            assert time.monotonic() < deadline, "the casual match never started"
            for mid in map(str, conn.zrange(keys.MATCHES_INDEX, 0, -1)):
                if mid.startswith(queue.CASUAL_PREFIX) and (
                    queue.match_status(conn, mid)["state"] == "running"
                ):
                    casual_id = mid
            time.sleep(0.2)

        seats = ("s-a", "s-b", "s-c", "s-d")
        with bots_in_threads(platform, {name: FirstLegalBot() for name in seats}):
            rules = get_game("sevens").preset("fan-tan").to_dict()
            spec = MatchSpec(
                match_id="season-slot-check",
                game="sevens",
                rules=rules,
                seats=seats,
                seed=7,
                deals=(DealSpec(seed=match_deal_seed(7, 0)),),
                time_control=TimeControl(move_ms=2000, bank_ms=5000),
            )
            assert queue.enqueue_match(conn, spec)
            deadline = time.monotonic() + 90
            while queue.match_status(conn, spec.match_id)["state"] != "done":
                assert time.monotonic() < deadline, (
                    "a season's match waited behind a casual one: "
                    f"{queue.match_status(conn, spec.match_id)}"
                )
                time.sleep(0.2)
        assert queue.match_status(conn, casual_id)["state"] == "running"


def test_an_operator_turns_casual_web_play_off(platform: Platform, redis_url: str) -> None:
    """Finding 2: ``--no-casual-play`` (``casual_play=False``) refuses casual matches with a
    sentence saying so; people still take their seasons' seats."""
    with running_server(redis_url, grpc_target=platform.server, casual_play=False) as port:
        refused = casual(port, "dave", 1)
        assert refused.status == 503, refused.status
        assert "casual matches are turned off on this server" in refused.body
        assert not platform.conn.exists(keys.bot("human-dave"))
        assert join(port, "dave").status == 303


def test_join_sessions_are_capped_and_idle_people_are_forgotten(
    platform: Platform, redis_url: str
) -> None:
    """Finding 4 (joins): one client holds at most JOINS_PER_CLIENT seats; a person
    identity nobody used for ``person_idle_s`` and no season names is deleted, one a season
    names is kept."""
    conn = platform.conn
    with running_server(redis_url, grpc_target=platform.server) as port:
        for i in range(JOINS_PER_CLIENT):
            assert join(port, f"p{i}").status == 303
        over = join(port, "one-too-many")
        assert over.status == 429, (over.status, over.body)
        assert f"at most {JOINS_PER_CLIENT} per client" in over.body
        assert not conn.exists(keys.bot("human-one-too-many"))
        assert play.MAX_JOINS_PER_CLIENT == JOINS_PER_CLIENT

    idle_bot, _token, _new = human.claim_identity(conn, "idle", human.new_person_key())
    kept_bot, _token, _new = human.claim_identity(conn, "kept", human.new_person_key())
    store.create_season(
        conn,
        SeasonSpec.from_dict(
            {
                "name": "with-kept",
                "game": "sevens",
                "preset": "fan-tan",
                "bots": [kept_bot, *OPPONENTS],
                "table_size": 4,
                "deals_per_match": 1,
                "options": {"duplicate": False},
            }
        ),
    )
    time.sleep(1.5)  # both idle longer than person_idle_s below
    with running_server(redis_url, grpc_target=platform.server, person_idle_s=1.0) as port:
        assert join(port, "newcomer").status == 303  # a new identity: the idle ones go
        assert not conn.sismember(keys.BOTS, idle_bot), "an idle person identity stayed"
        assert not conn.exists(keys.bot(idle_bot))
        assert conn.sismember(keys.BOTS, kept_bot), "a season's person was forgotten"
        assert conn.sismember(keys.BOTS, "human-newcomer")


def test_many_bots_never_break_listbots(redis_url: str, redis_client: redis.Redis) -> None:
    """Finding 4: 1,500 registered bots: ``League.ListBots`` answers in pages that each fit
    the gateway's message cap, and the pages hold every bot once."""
    import asyncio

    import grpc  # type: ignore[import-untyped]

    from arena.v1 import league_pb2, league_pb2_grpc
    from referee import bots
    from tests.gateway.helpers import running_referee

    names = {f"many-{i:04d}" for i in range(1500)}
    for name in names:
        bots.register(redis_client, name, owner="o" * 40, description="d" * 200)

    async def scenario() -> set[str]:
        seen: list[str] = []
        async with (
            running_referee(redis_url) as ref,
            grpc.aio.insecure_channel(f"127.0.0.1:{ref.port}") as channel,
        ):
            stub = league_pb2_grpc.LeagueStub(channel)
            first = await stub.ListBots(league_pb2.ListBotsRequest())  # as clients ask today
            assert first.bots
            token = ""
            for _ in range(100):
                page = await stub.ListBots(league_pb2.ListBotsRequest(page_token=token))
                seen += [b.name for b in page.bots]
                token = page.next_page_token
                if not token:
                    break
        assert len(seen) == len(set(seen)), "a bot was listed twice"
        return set(seen)

    assert asyncio.run(asyncio.wait_for(scenario(), 120)) == names
