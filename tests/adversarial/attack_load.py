"""A hostile load on the referee's event loop, run as a process of its own beside an honest season:
a registered bot flooding its own streams with actions for unknown matches and pings, an
anonymous page flood (sequential GETs of a bot's page) and an SSE crowd (viewers of the
live feed of every season given).

``python -m tests.adversarial.attack_load GRPC_ADDR HTTP_BASE BOT_PAGE SEASON,...``, the
flooding bot's token on stdin (one line). It runs until stdin closes (or SIGTERM), then
prints one JSON line of what it did: messages flooded, pages fetched, SSE bytes read and
how each of its streams ended.
"""

from __future__ import annotations

import http.client
import json
import signal
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

import grpc  # type: ignore[import-untyped]

from arena.v1 import bot_pb2

FLOOD_STREAMS = 2
PAGE_THREADS = 4
SSE_PER_SEASON = 1

stop = threading.Event()
counts: dict[str, Any] = {"flooded": 0, "pages": 0, "page_errors": 0, "sse_bytes": 0}
ended: list[str] = []
lock = threading.Lock()


def _add(key: str, n: int = 1) -> None:
    with lock:
        counts[key] += n


def _junk() -> Iterator[Any]:
    yield bot_pb2.BotMessage(hello=bot_pb2.Hello(protocol_version=1, bot_version="flood"))
    n = 0
    while not stop.is_set():
        n += 1
        if n % 2:
            message = bot_pb2.BotMessage(
                action=bot_pb2.Action(match_id=f"nosuch-{n % 997}", attempt=1, seq=n, action="7D")
            )
        else:
            message = bot_pb2.BotMessage(ping=bot_pb2.Ping(nonce=n))
        _add("flooded")
        yield message


def flood(address: str, token: str) -> None:
    """One flooding stream after another (a closed one is opened again) until told to stop."""
    while not stop.is_set():
        channel = grpc.insecure_channel(address)
        play = channel.stream_stream(
            "/arena.v1.BotGateway/Play",
            request_serializer=bot_pb2.BotMessage.SerializeToString,
            response_deserializer=bot_pb2.RefereeMessage.FromString,
        )
        try:
            for _ in play(_junk(), metadata=(("authorization", f"Bearer {token}"),)):
                if stop.is_set():
                    break
            with lock:
                ended.append("OK")
        except grpc.RpcError as exc:
            with lock:
                ended.append(f"{exc.code().name}: {exc.details()}")
        finally:
            channel.close()
        time.sleep(0.2)


def pages(base: str, path: str) -> None:
    """Sequential anonymous GETs of one page, one connection after another."""
    parts = urllib.parse.urlsplit(base)
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=10)
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            conn.close()
            _add("pages" if response.status == 200 else "page_errors")
        except OSError:
            _add("page_errors")
            time.sleep(0.05)


def viewer(base: str, season: str) -> None:
    """One SSE viewer of a season's live feed, reading until told to stop."""
    parts = urllib.parse.urlsplit(base)
    while not stop.is_set():
        try:
            conn = http.client.HTTPConnection(parts.hostname or "127.0.0.1", parts.port, timeout=30)
            conn.request("GET", f"/events?season={season}")
            response = conn.getresponse()
            while not stop.is_set():
                chunk = response.read1(65536)
                if not chunk:
                    break
                _add("sse_bytes", len(chunk))
            conn.close()
        except OSError:
            time.sleep(0.2)


def main(argv: list[str]) -> int:
    address, base, page, seasons = argv[0], argv[1], argv[2], argv[3].split(",")
    token = sys.stdin.readline().strip()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threads = [threading.Thread(target=flood, args=(address, token)) for _ in range(FLOOD_STREAMS)]
    threads += [threading.Thread(target=pages, args=(base, page)) for _ in range(PAGE_THREADS)]
    threads += [
        threading.Thread(target=viewer, args=(base, s))
        for s in seasons
        if s
        for _ in range(SSE_PER_SEASON)
    ]
    for thread in threads:
        thread.daemon = True
        thread.start()
    print("attacking", flush=True)
    sys.stdin.read()  # until the test closes it
    stop.set()
    for thread in threads:
        thread.join(3)
    print(json.dumps({**counts, "ended": ended[:10]}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
