"""The referee's HTTP server over a real socket and a real Redis."""

from __future__ import annotations

import gzip
import http.client
import json
import socket
from collections.abc import Iterator

import pytest
import redis

from referee import keys
from referee.embedded_redis import free_port
from referee.web import render_index
from tests.metrics import league_data
from tests.metrics.http_helpers import get, running_server
from tests.metrics.prom_server import wait_until


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
    assert '<meta http-equiv="refresh"' in page
    assert "Standings of s1" in page
    for bot in league_data.BOTS:
        assert f"<td>{bot}</td>" in page
    assert ">1500<" in page and ">1400<" in page  # Elo of alpha and bravo
    assert "1450 &ndash; 1550" in page  # alpha's 95% interval
    assert "4/6" in page  # progress
    assert 'href="/replay/s1-m0"' in page
    assert "2 of 3 bots connected" in page and "2 workers alive" in page
    assert "<script" not in page and "http://" not in page.replace("http-equiv", "")


def test_page_selects_a_season_and_escapes_names(port: int, redis_client: redis.Redis) -> None:
    league_data.write_season(redis_client, "s1")
    league_data.write_season(redis_client, "s2", bots=("<b>x</b>", "y&z"), matches_done=0)
    page = get(port, "/?season=s1").text
    assert "Standings of s1" in page and "<td>alpha</td>" in page
    page = get(port, "/?season=s2").text
    assert "&lt;b&gt;x&lt;/b&gt;" in page and "y&amp;z" in page and "<b>x" not in page
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

    assert raw(b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw(b"GET / SPDY/3\r\n\r\n").startswith(b"HTTP/1.1 400")
    assert raw(b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n").startswith(b"HTTP/1.1 431")
    body = raw(b"POST /x HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc")
    assert body.startswith(b"HTTP/1.1 400") and b"bodies" in body


def test_connections_beyond_the_cap_get_503(
    redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("referee.web.MAX_CONNECTIONS", 2)
    with running_server(redis_url) as p:
        held = [http.client.HTTPConnection("127.0.0.1", p, timeout=30) for _ in range(2)]
        try:
            for conn in held:
                assert get(p, "/healthz", conn=conn).status == 200  # kept alive
            assert get(p, "/healthz").status == 503
        finally:
            for conn in held:
                conn.close()
        # Once they are closed, new connections are served again.
        reply = wait_until(
            lambda: (r := get(p, "/healthz")).status == 200 and r,
            10,
            "the server did not accept connections after the held ones closed",
        )
        assert reply


def test_server_stops_with_open_keep_alive_connections(redis_url: str) -> None:
    with running_server(redis_url) as p:
        conn = http.client.HTTPConnection("127.0.0.1", p, timeout=30)
        assert get(p, "/healthz", conn=conn).status == 200
    # running_server asserted the server thread ended although the connection stayed open.
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", p), timeout=2).close()


def test_render_index_is_pure_and_tolerates_odd_rows() -> None:
    page = render_index(
        [],
        "s",
        {"unit": "chips", "rows": [{"bot": "a", "elo": None, "score": "x"}, "junk"]},
        [],
        {},
    )
    assert "<td>a</td>" in page and "Standings of s" in page
