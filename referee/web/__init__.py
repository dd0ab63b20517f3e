"""The referee's web: an aiohttp.web application served inside the referee's event loop.

Modules: :mod:`~referee.web.app` (the server, routes, limits), :mod:`~referee.web.league`
(reading the league from Redis), :mod:`~referee.web.live` (the live page parts and their
server-sent events), :mod:`~referee.web.pages` (league, bot and replay pages),
:mod:`~referee.web.replay` and :mod:`~referee.web.records` (visual replays from committed
records), :mod:`~referee.web.charts` and :mod:`~referee.web.history` (SVG charts drawn on
the server). Templates (Jinja2) and static files live beside them.
"""

from referee.web.app import HttpServer, serve_http

__all__ = ["HttpServer", "serve_http"]
