"""A one-off match (no fixed number of deals: the rules end it) replays as "deal 1", not
"deal 1 of 0". The real page in a headless Chromium over a real server
and Redis, the record played by the engine."""

from __future__ import annotations

import json
from typing import Any

import pytest
import redis

from referee import keys
from tests.metrics.http_helpers import running_server
from tests.web.browser import chromium, find_browser, wait_for
from tests.web.test_replay_frames import played_record

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(isinstance(find_browser(), str), reason=str(find_browser())),
]


def test_a_one_off_replay_does_not_say_of_0(redis_url: str, redis_client: redis.Redis) -> None:
    record = played_record("sedma", "sedma", 4, seed=5)  # played to a target: no count
    assert record["spec"]["deals"] is None and not record["spec"]["season"]
    match_id = record["spec"]["match_id"]
    redis_client.set(keys.match_record(match_id), json.dumps(record))
    with running_server(redis_url) as port, chromium() as browser:
        browser.get(f"http://127.0.0.1:{port}/replay/{match_id}?step=0&view=full")

        def header() -> Any:
            script = "var p = document.querySelector('#board p'); return p && p.textContent;"
            text = browser.execute_script(script)
            return text if text and text.startswith("deal ") else None

        text = str(wait_for(header, 30, "the replay did not draw its board"))
    assert text.startswith("deal 1 · "), text
    assert " of 0" not in text
