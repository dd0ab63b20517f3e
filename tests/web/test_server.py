"""The referee's HTTP server (aiohttp.web) over a real socket and a real Redis: every URL of
the old hand-written server still answers, with the same JSON and status codes."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from referee import keys
from referee.embedded_redis import free_port
from referee.web import league as web_league
from referee.web.app import format_cell
from tests.metrics import league_data
from tests.metrics.http_helpers import get, running_server


@pytest.fixture
def port(redis_url: str) -> Iterator[int]:
    with running_server(redis_url) as p:
        yield p


@pytest.fixture
def league(redis_client: redis.Redis) -> redis.Redis:
    league_data.write_league(redis_client)
    return redis_client


def test_healthz(port: int) -> None:
    reply = get(port, "/healthz")
    assert reply.status == 200
    assert json.loads(reply.body) == {"status": "ok", "redis": "ok"}


def test_healthz_is_503_when_redis_is_down() -> None:
    with running_server(f"redis://127.0.0.1:{free_port()}/0") as p:
        reply = get(p, "/healthz")
        assert reply.status == 503
        assert json.loads(reply.body)["status"] == "unavailable"
        # The page explains instead of crashing; /metrics still answers with redis_up 0.
        assert get(p, "/").status == 503
        metrics = get(p, "/metrics")
        assert metrics.status == 200 and "arena_redis_up 0.0" in metrics.text


def test_metrics_endpoint(port: int, league: redis.Redis) -> None:
    reply = get(port, "/metrics")
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert 'arena_standings_elo{bot="alpha",season="s1"} 1500.0' in reply.text
    zipped = get(port, "/metrics", headers={"Accept-Encoding": "gzip"})
    assert zipped.headers["content-encoding"] == "gzip"
    unzipped = gzip.decompress(zipped.body).decode()
    assert 'arena_standings_elo{bot="alpha",season="s1"} 1500.0' in unzipped


def test_standings_page_shows_seasons_bots_elo_and_recent_matches(
    port: int, league: redis.Redis
) -> None:
    reply = get(port, "/")
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/html; charset=utf-8"
    page = reply.text
    assert "http-equiv" not in page, "the page updates in place (live.js), it does not reload"
    assert "/static/live.js?v=" in page
    assert "Standings of s1" in page
    for bot in league_data.BOTS:
        assert f'<a href="/bot/{bot}">{bot}</a>' in page
    assert ">1500<" in page and ">1400<" in page  # Elo of alpha and bravo
    assert "1450 – 1550" in page  # alpha's 95% interval
    assert "<strong>4/6</strong> matches settled" in page  # progress
    assert 'href="/replay/s1-m0"' in page
    assert "2 of 3 bots connected" in page and "2 workers alive" in page
    assert "http://" not in page and "https://" not in page, "no external asset"


def test_page_selects_a_season_and_escapes_names(port: int, redis_client: redis.Redis) -> None:
    league_data.write_season(redis_client, "s1")
    league_data.write_season(redis_client, "s2", bots=("<b>x</b>", "y&z"), matches_done=0)
    page = get(port, "/?season=s1").text
    assert "Standings of s1" in page and '<a href="/bot/alpha">alpha</a>' in page
    page = get(port, "/?season=s2").text
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "y&amp;z" in page and "<b>x" not in page
    assert 'href="/replay/s1-m0"' not in page, "recent matches are the selected season's"
    assert get(port, "/?season=%3Cscript%3E").status == 400
    missing = get(port, "/?season=nope")
    assert missing.status == 404 and "s2" in json.loads(missing.body)["error"]


def test_empty_league_page(port: int) -> None:
    page = get(port, "/").text
    assert "No seasons yet" in page and "No finished matches yet" in page


def test_api_standings(port: int, league: redis.Redis) -> None:
    reply = get(port, "/api/standings/s1")
    assert reply.status == 200 and reply.headers["content-type"] == "application/json"
    data = json.loads(reply.body)
    assert data == json.loads(league.get(keys.season_standings("s1")) or "")
    missing = get(port, "/api/standings/nope")
    assert missing.status == 404 and "no season 'nope'" in json.loads(missing.body)["error"]
    league.delete(keys.season_standings("s1"))
    assert "no committed results yet" in get(port, "/api/standings/s1").text
    seasons = json.loads(get(port, "/api/seasons").body)["seasons"]
    assert [s["season"] for s in seasons] == ["s1"] and seasons[0]["matches_total"] == 6


def test_replay(port: int, league: redis.Redis) -> None:
    reply = get(port, "/replay/s1-m0")
    assert reply.status == 200 and "s1-m0" in reply.text
    assert get(port, "/replay/never").status == 404
    assert get(port, "/replay/..%2F..").status in (400, 404)


def test_errors_methods_and_keep_alive(port: int) -> None:
    missing = get(port, "/nothing")
    assert missing.status == 404 and "/metrics" in json.loads(missing.body)["error"]
    assert get(port, "/", method="POST").status == 405
    head = get(port, "/healthz", method="HEAD")
    assert head.status == 200 and head.body == b"" and int(head.headers["content-length"]) > 0
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        first = get(port, "/healthz", conn=conn)
        sock = conn.sock
        second = get(port, "/healthz", conn=conn)
        assert first.status == second.status == 200
        assert conn.sock is sock, "HTTP/1.1 keep-alive should reuse the connection"
    finally:
        conn.close()


def test_malformed_requests_get_precise_errors(port: int) -> None:
    def raw(data: bytes) -> bytes:
        with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
            return b"".join(chunks)

    def status(reply: bytes) -> int:
        return int(reply.split(b" ", 2)[1])

    assert status(raw(b"NONSENSE\r\n\r\n")) == 400
    assert status(raw(b"GET / SPDY/3\r\n\r\n")) == 400
    too_long = raw(b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n")
    assert status(too_long) in (400, 431) and b"16384" in too_long, too_long[:200]
    body = raw(
        b"POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
    )
    assert status(body) == 405 and b"use GET" in body


def _closed_by_server(sock: socket.socket, wait_s: float = 20.0) -> bool:
    """True once the server closed ``sock`` (EOF or reset), False if it stays open."""
    sock.settimeout(wait_s)
    try:
        while sock.recv(1024):
            pass  # whatever the server says before it closes
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False
    return True


def test_a_flood_of_half_open_connections_does_not_make_healthz_or_metrics_fail(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """130 connections that send nothing (or half a request line): /healthz and /metrics
    still answer 200 at once, and the server closes the idle ones by itself."""
    monkeypatch.setattr("referee.web.app.IDLE_TIMEOUT_S", 3.0)
    with running_server(redis_url) as p:
        held: list[socket.socket] = []
        try:
            for i in range(130):
                sock = socket.create_connection(("127.0.0.1", p), timeout=30)
                if i % 2:
                    sock.sendall(b"GET /heal")  # half a request line, never finished
                held.append(sock)
            for path in ("/healthz", "/metrics", "/healthz"):
                assert get(p, path).status == 200, path
            # The server's idle timeout closes them (recv returns b"" or the reset).
            for sock in held[:10]:
                assert _closed_by_server(sock), "an idle half-open connection was not closed"
        finally:
            for sock in held:
                sock.close()
        assert get(p, "/healthz").status == 200


def test_static_assets_are_cached_and_versioned(port: int, league: redis.Redis) -> None:
    page = get(port, "/").text
    url = page.split('src="', 1)[1].split('"', 1)[0]
    assert url.startswith("/static/live.js?v=")
    asset = get(port, url)
    assert asset.status == 200 and "EventSource" in asset.text
    assert "max-age=31536000" in asset.headers["cache-control"]
    assert get(port, "/").headers["cache-control"] == "no-store"


def test_server_stops_with_open_keep_alive_connections(redis_url: str) -> None:
    with running_server(redis_url) as p:
        conn = http.client.HTTPConnection("127.0.0.1", p, timeout=30)
        assert get(p, "/healthz", conn=conn).status == 200
    # running_server asserted the server thread ended although the connection stayed open.
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", p), timeout=2).close()


def test_standings_for_people_rank_only_bots_that_played_and_name_the_unit_once() -> None:
    standings = {
        "unit": "deals_won",
        "rows": [
            {"bot": "a", "rank": 1, "matches": 0, "elo": 1500, "elo_low": 568, "elo_high": 2432},
            {"bot": "b", "rank": 2, "matches": 3, "elo": 1450, "elo_low": 1300, "elo_high": 1600},
            "junk",
        ],
    }
    rows = web_league.display_rows(standings)
    assert [r["bot"] for r in rows] == ["b", "a"]
    assert rows[0]["rank"] == 1 and rows[1].get("unrated") and "elo" not in rows[1]
    titles = [t for _k, t in web_league.standings_columns("deals_won")]
    assert titles.count("deals won") == 1, titles
    assert "deals_won" not in " ".join(titles)
    assert web_league.unit_words("penalty_points") == "penalty points"
    assert format_cell(rows[0], "elo_interval") == "1300 – 1600"
    assert format_cell({"score": "x"}, "score") == "x"


def test_events_stream_sends_the_live_parts_and_updates_them(
    port: int, league: redis.Redis
) -> None:
    """/events: a ``live`` event at once with every fragment, another when Redis changes."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/events?season=s1")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("content-type") == "text/event-stream"

        def next_live() -> dict[str, Any]:
            while True:
                line = response.fp.readline().decode()
                if line.startswith("data: "):
                    data: dict[str, Any] = json.loads(line[6:])
                    return data

        first = next_live()
        assert set(first["fragments"]) >= {"progress", "standings", "inflight", "recent"}
        assert "<strong>4/6</strong>" in first["fragments"]["progress"]
        assert first["progress"] == {"done": 4, "failed": 0, "total": 6, "state": "running"}
        league.hset(keys.season("s1"), mapping={"matches_done": 5})
        second = next_live()
        assert second["progress"]["done"] == 5
        assert "<strong>5/6</strong>" in second["fragments"]["progress"]
    finally:
        conn.close()
    assert get(port, "/events").status == 400
    assert get(port, "/events?season=nope").status == 404


def test_bot_page_and_live_api(port: int, league: redis.Redis) -> None:
    page = get(port, "/bot/alpha")
    assert page.status == 200
    assert "Bot alpha" in page.text and 'href="/?season=s1"' in page.text
    assert "think time" in page.text.lower() and "<svg" in page.text
    assert get(port, "/bot/nobody").status == 404
    live = json.loads(get(port, "/api/live/s1").body)
    assert [r["bot"] for r in live["rows"]] == list(league_data.BOTS)
    assert live["in_flight"] == {"running": 0, "queued": 2, "matches": []}
    assert all(m["season"] == "s1" for m in live["recent"]) and len(live["recent"]) == 4


def test_a_bot_with_no_match_is_listed_last_without_a_rating(
    port: int, redis_client: redis.Redis
) -> None:
    rows = [
        league_data.standings_row("new", 1, matches=0, deals=0, elo=1500.0, elo_low=568.0,
                                  elo_high=2432.0, avg_place=0.0),
        league_data.standings_row("old", 2),
    ]  # fmt: skip
    league_data.write_season(redis_client, "s3", bots=("new", "old"), unit="deals_won", rows=rows)
    page = get(port, "/?season=s3").text
    assert page.index("/bot/old") < page.index("/bot/new")
    assert "568" not in page and "2432" not in page and "no matches yet" in page
    assert page.count(">deals won</th>") == 1 and "deals_won" not in page


def test_bot_page_lists_penalties_with_their_reasons(port: int, league: redis.Redis) -> None:
    """From the match records: the refusal, its reason in words, the penalty."""
    from referee.games.registry import get_game

    rules = get_game("sevens").preset("fan-tan").to_dict()
    refused = {"kind": "invalid_action", "seat": 0, "deal": 1, "action": "ZZ",
               "reason": "malformed", "detail": {"message": "'ZZ' is not a card"}}  # fmt: skip
    penalty = {"kind": "penalty", "seat": 0, "deal": 1, "reason": "invalid_action",
               "detail": {"chips": 1, "payee": "pot"}}  # fmt: skip
    record = {
        "spec": {
            "match_id": "s1-m0",
            "game": "sevens",
            "rules": rules,
            "seats": ["alpha", "bravo", "charlie"],
            "seed": 1,
        },
        "rules": rules,
        "steps": [
            {
                "deal": 1,
                "seat": 0,
                "source": "bot",
                "answer": "ZZ",
                "think_ms": 3.5,
                "status": "refused",
                "reason": "malformed",
                "events": [refused, penalty],
            },
            {
                "deal": 1,
                "seat": 1,
                "source": "bot",
                "answer": "7D",
                "think_ms": 700.0,
                "status": "accepted",
                "events": [],
            },
        ],
        "result": {},
    }
    league.set(keys.match_record("s1-m0"), json.dumps(record))
    page = get(port, "/bot/alpha").text
    assert "'ZZ' is not a card" in page.replace("&#39;", "'")
    assert "<td>invalid action</td><td>malformed</td>" in page
    assert "<td>penalty</td><td>invalid_action</td>" in page
    assert "1 decision in their records" in page and "1-5 ms: 1" in page
    assert "0.5-2 s: 1" not in page  # bravo's think time is not alpha's


def test_play_refuses_posts_from_other_sites(port: int) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(
            "POST",
            "/play",
            "name=eve&bot=alpha",
            {"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://evil.test"},
        )
        reply = conn.getresponse()
        assert reply.status == 403 and b"refused" in reply.read()
    finally:
        conn.close()
    # Without the referee's gRPC address (this test server) /play says why it is off.
    page = get(port, "/play")
    assert page.status == 200 and "people cannot play on this server" in page.text
