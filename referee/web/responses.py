"""JSON responses shared by every route: errors say what was wrong and what would work."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web


def json_response(status: int, data: Any) -> web.Response:
    body = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()
    # JSON is UTF-8 by definition: no charset parameter (the API answered so before).
    return web.Response(status=status, body=body, headers={"Content-Type": "application/json"})


def error(status: int, message: str) -> web.Response:
    return json_response(status, {"error": message})
