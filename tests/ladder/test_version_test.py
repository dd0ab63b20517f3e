"""``arena bot test NEW --against OLD`` on the real platform: a referee and worker
processes, SDK bots over gRPC, the season machinery with the versus schedule
(referee/seasons/versiontest.py). It separates a clearly stronger bot and stops with "no
difference" on two copies of one bot; the cancelled test season still verifies."""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Iterator

import pytest

from referee.cli.main import main as arena_main
from referee.cli.policy_bot import PolicyBot
from referee.embedded_redis import EmbeddedRedis
from referee.errors import ConfigError
from referee.seasons import store
from referee.seasons.versusrun import resolve_entry
from sample_bots.sdk import Bot
from tests.platform_fixtures import Platform, bots_in_threads, running_platform

pytestmark = pytest.mark.slow

BOTS = {
    "vt-heuristic": "heuristic",
    "vt-random": "random",
    "vt-random-copy": "random",
    "vt-field": "heuristic",
}


@pytest.fixture(scope="module")
def platform(embedded_redis: EmbeddedRedis) -> Iterator[Platform]:
    with running_platform(embedded_redis.url) as running:
        named: dict[str, Bot] = {
            name: PolicyBot(policy, per_turn_seed=True) for name, policy in BOTS.items()
        }
        with bots_in_threads(running, named):
            yield running


def _arena(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = arena_main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _test(platform: Platform, new: str, old: str, name: str) -> tuple[int, str]:
    code, out, err = _arena(
        "bot", "test", new, "--against", old, "--game", "sedma", "--field", "vt-field",
        "--sprt", "0", "200", "--max-games", "400", "--seed", "5", "--name", name,
        "--redis-url", platform.url,
    )  # fmt: skip
    assert not err, err
    return code, out


def test_a_stronger_bot_is_told_apart(platform: Platform) -> None:
    code, out = _test(platform, "vt-heuristic", "vt-random", "vt-better")
    assert code == 0, out
    assert "result: H1 accepted: NEW is better" in out, out
    assert store.get_season(platform.conn, "vt-better")["state"] == "cancelled"


def test_two_copies_of_one_bot_make_no_difference_and_the_season_verifies(
    platform: Platform,
) -> None:
    code, out = _test(platform, "vt-random-copy", "vt-random", "vt-same")
    assert code == 0, out
    assert "result: H0 accepted: no difference" in out, out
    info = store.get_season(platform.conn, "vt-same")
    assert info["schedule"] == "versus"
    # the season's matches in flight finish; then the seed is revealed and verify rebuilds
    # the versus schedule from it
    deadline = time.monotonic() + 120
    while not store.get_season(platform.conn, "vt-same").get("seed"):
        assert time.monotonic() < deadline
        time.sleep(0.2)
    code, verify_out, _ = _arena("season", "verify", "vt-same", "--redis-url", platform.url)
    assert code == 0, verify_out


def test_bad_arguments_get_one_line(platform: Platform) -> None:
    code, _, err = _arena(
        "bot", "test", "nobody", "--against", "vt-random", "--game", "sedma",
        "--field", "vt-field", "--redis-url", platform.url,
    )  # fmt: skip
    assert code == 1 and "'nobody' is not a registered bot" in err and err.count("\n") == 1
    code, _, err = _arena(
        "bot", "test", "vt-random", "--against", "vt-random", "--game", "sedma",
        "--field", "vt-field", "--redis-url", platform.url,
    )  # fmt: skip
    assert code == 1 and "NEW and OLD are both" in err
    code, _, err = _arena(
        "bot", "test", "vt-random@v2", "--against", "vt-random", "--game", "sedma",
        "--field", "vt-field", "--redis-url", platform.url,
    )  # fmt: skip
    assert code == 1 and "'vt-random' has no version 2" in err and err.count("\n") == 1, err
    with pytest.raises(ConfigError, match="name a version as vt-random@v2"):
        resolve_entry(platform.conn, "vt-random@latest")
    with pytest.raises(ConfigError, match="hosted versions are resolved where"):
        resolve_entry(platform.conn, "vt-random@v2")
