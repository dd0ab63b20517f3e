"""``arena demo``: what users run first. It must finish, print real standings, verify the
seed, and leave nothing running."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.demo_run import assert_everything_stopped, run_demo

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("game", ["sevens", "sedma"])
def test_arena_demo_runs_a_season_and_stops_everything(tmp_path: Path, game: str) -> None:
    code, text = run_demo(tmp_path / "d", "--game", game, timeout=240)
    assert code == 0, text
    assert "6 SDK bots connected over gRPC" in text
    assert re.search(r"15/15 matches", text)
    assert (f"{game}/fan-tan" if game == "sevens" else "sedma/sedma") in text
    for bot in ("random-1", "first-legal-2", "hold-sevens-1"):
        assert re.search(rf"│ \d │ {bot} +│ +1\d\d\d │", text), text
    assert "all match the published commitment" in text
    # everything it started is gone: the embedded Redis no longer answers
    assert_everything_stopped(text)
    assert not (tmp_path / "d" / "redis.url").exists()
