"""JSON responses shared by every route: errors say what was wrong and what would work."""

from __future__ import annotations

import json
import math
from typing import Any

from aiohttp import web

from referee.errors import LimitExceeded


def json_response(status: int, data: Any) -> web.Response:
    body = (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()
    # JSON is UTF-8 by definition: no charset parameter (the API answered so before).
    return web.Response(status=status, body=body, headers={"Content-Type": "application/json"})


def error(status: int, message: str) -> web.Response:
    return json_response(status, {"error": message})


def refused(exc: LimitExceeded, status: int = 429) -> web.Response:
    """A request over a limit (``referee.limits``): ``status`` (429 Too Many Requests, or
    503 when the referee as a whole is full), the reason, and ``Retry-After``."""
    response = error(status, str(exc))
    response.headers["Retry-After"] = str(max(1, math.ceil(exc.retry_after_s)))
    return response
