"""Run the referee's HTTP server (``referee.web.serve_http``) in a thread for a test."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from referee.web import serve_http


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


@contextlib.contextmanager
def running_server(redis_url: str, **options: Any) -> Iterator[int]:
    """Yield the port of a live ``serve_http`` (``options`` are its keyword arguments:
    ``grpc_target``, ``human_move_s``); stop it (and check it stopped) on exit."""
    ready = threading.Event()
    port: list[int] = []
    errors: list[BaseException] = []
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()

    def on_ready(p: int) -> None:
        port.append(p)
        ready.set()

    def run() -> None:
        try:
            loop.run_until_complete(
                serve_http(redis_url, "127.0.0.1", 0, stop, on_ready=on_ready, **options)
            )
        except BaseException as exc:
            errors.append(exc)
            ready.set()
        finally:
            loop.close()

    thread = threading.Thread(target=run, name="arena-web-test", daemon=True)
    thread.start()
    assert ready.wait(30), "serve_http did not start within 30 s"
    assert not errors, errors
    try:
        yield port[0]
    finally:
        if not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        thread.join(30)
        assert not thread.is_alive(), "serve_http did not stop after stop_event was set"
        assert not errors, errors


def get(
    port: int,
    path: str,
    method: str = "GET",
    headers: dict[str, str] | None = None,
    conn: http.client.HTTPConnection | None = None,
) -> Reply:
    own = conn is None
    client = conn or http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        client.request(method, path, headers=headers or {})
        response = client.getresponse()
        body = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, body)
    finally:
        if own:
            client.close()
