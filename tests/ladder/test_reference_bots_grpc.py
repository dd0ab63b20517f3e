"""Every reference bot of the ladder (referee/games/ladder.py) plays every preset of its
game family through the real path: SDK bots over gRPC to a referee process, matches run by
real worker processes, without an invalid action, an illegal pass (but for priced-pass,
whose passes while able the rules price) or a timeout. And a
season played in-process (referee/seasons/inprocess.py, what bench/strength.py uses) gives
the same results as the same season played on the platform.

Short matches (one deal) and small think budgets keep it quick; the long ladder runs are
in bench/strength.py.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import time
from collections.abc import Iterator

import pytest

from referee import keys, queue
from referee.cli.main import main as arena_main
from referee.cli.policy_bot import PolicyBot
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.policies import POLICIES
from referee.games.registry import get_game
from referee.match.row import lean_result
from referee.match.spec import CommittedResult, MatchSpec
from referee.procs import arena_command, stop_process
from referee.seasons import store
from referee.seasons.inprocess import play_season
from referee.seasons.model import SeasonOptions, SeasonSpec
from referee.seasons.schedule import build_schedule
from referee.seasons.store import match_spec_of
from sample_bots.sdk import Bot
from tests.platform_fixtures import Platform, bots_in_threads, running_platform

pytestmark = pytest.mark.slow

BUDGET_MS = 15  # think time per move of the search bots here (200 by default)


@pytest.fixture(scope="module")
def platform(embedded_redis: EmbeddedRedis) -> Iterator[Platform]:
    with running_platform(embedded_redis.url) as running:
        yield running


def _matches() -> list[tuple[str, str, int]]:
    out = []
    for game_name in ("sevens", "sedma"):
        game = get_game(game_name)
        for preset, rules in game.presets().items():
            counts = list(game.player_counts(rules))
            players = 4 if 4 in counts else max(counts)
            out.append((game_name, preset, players))
    return out


def test_reference_bots_play_every_preset_over_grpc(platform: Platform) -> None:
    named: dict[str, Bot] = {
        "ref-heuristic": PolicyBot("heuristic", seed=1),
        "ref-mc": PolicyBot("mc", seed=2, budget_ms=BUDGET_MS),
        "ref-ismcts": PolicyBot("ismcts", seed=3, budget_ms=BUDGET_MS),
        "ref-solver": PolicyBot("solver", seed=4, budget_ms=BUDGET_MS),
        "ref-priced": PolicyBot("priced-pass", seed=5),
    }
    names = list(named)
    matches = _matches()
    assert {p for g, p, _ in matches if g == "sevens"} == set(get_game("sevens").presets())
    assert {n for g, _, n in matches if g == "sedma"} == {2, 3, 4}
    ids = []
    with bots_in_threads(platform, named):
        for i, (game, preset, players) in enumerate(matches):
            # rotate the seats from match to match; the search bots play every 3-seat match
            seats = [names[(i + k) % len(names)] for k in range(players)]
            if players <= 3:
                seats = ["ref-mc", "ref-ismcts", "ref-solver"][:players]
            spec = MatchSpec(
                match_id=f"ladder-{i:02d}-{preset}",
                game=game,
                rules=get_game(game).preset(preset).to_dict(),
                seats=tuple(seats),
                seed=100 + i,
                deals=(DealSpec(seed=4000 + i),),
                season="ladder",
            )
            assert queue.enqueue_match(platform.conn, spec)
            ids.append((spec.match_id, seats))
        _wait(platform, [m for m, _ in ids])
    seen: set[str] = set()
    for match_id, seats in ids:
        result = queue.get_result(platform.conn, match_id)
        assert result is not None, match_id
        for seat, stats in enumerate(result["stats"]):
            assert stats["decisions"] > 0, (match_id, seats[seat])
            assert stats["timeouts"] == 0, (match_id, seats[seat], stats)
            assert stats["invalid_actions"] == 0, (match_id, seats[seat], stats)
            if seats[seat] != "ref-priced":  # its passes while able are priced (SV-19)
                assert stats["illegal_passes"] == 0, (match_id, seats[seat], stats)
            assert not stats["autopilot"], (match_id, seats[seat], stats)
            seen.add(seats[seat])
    assert set(named) <= seen


def _wait(platform: Platform, match_ids: list[str], timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    pending = set(match_ids)
    while pending and time.monotonic() < deadline:
        for m in list(pending):
            state = queue.match_status(platform.conn, m)
            assert state["state"] != "failed", state
            if state["state"] == "done":
                pending.discard(m)
        time.sleep(0.1)
    assert not pending, {m: queue.match_status(platform.conn, m) for m in pending}


@pytest.mark.parametrize(
    ("game", "preset", "table", "deals"),
    [("sevens", "fan-tan", 3, 3), ("sedma", "sedma", 4, 2), ("sedma", "sedma-3", 3, 3)],
)
def test_a_season_in_process_equals_the_season_on_the_platform(
    platform: Platform, game: str, preset: str, table: int, deals: int
) -> None:
    """The same schedule with deterministic per-turn-seeded bots: the in-process results
    (bench/strength.py's) equal the platform's, match by match."""
    policies = {f"eq-{game}-{preset}-{p}": p for p in ("random", "first-legal", "heuristic")}
    spec = SeasonSpec(
        name=f"eq-{preset}",
        game=game,
        preset=preset,
        bots=tuple(policies),
        table_size=table,
        deals_per_match=deals,
        options=SeasonOptions(duplicate=True),
    )
    for mine, remote in _both_ways(platform, spec, policies, 77):
        assert remote["seats"] == mine["seats"]
        assert remote["result"] == lean_result(mine["result"]), mine["match_id"]


def _both_ways(
    platform: Platform, spec: SeasonSpec, policies: dict[str, str], seed: int
) -> list[tuple[CommittedResult, CommittedResult]]:
    """``spec``'s schedule from ``seed`` played twice by the same per-turn-seeded policies:
    on the platform (each a gRPC bot) and in-process; each match's results, in order."""
    rules = spec.validate_with_engine()
    schedule = build_schedule(spec, seed)
    assert len(schedule) >= 1
    named: dict[str, Bot] = {
        name: PolicyBot(policy, per_turn_seed=True) for name, policy in policies.items()
    }
    with bots_in_threads(platform, named):
        for scheduled in schedule:
            assert queue.enqueue_match(
                platform.conn, match_spec_of(spec.name, spec, rules, scheduled)
            )
        _wait(platform, [m.match_id for m in schedule])
    local = play_season(spec, seed, {name: POLICIES[p] for name, p in policies.items()})
    assert [r["match_id"] for r in local] == [m.match_id for m in schedule]
    pairs = []
    for mine in local:
        remote = queue.get_result(platform.conn, mine["match_id"])
        assert remote is not None
        pairs.append((mine, remote))
    return pairs


def test_priced_pass_plays_its_illegal_passes_over_grpc(platform: Platform) -> None:
    """The ``priced-pass`` rung as a real bot: its passes while able reach the referee,
    which applies them as illegal passes with the preset's penalty (SV-18, SV-19), never
    hands its seat to the autopilot (never two failed decisions in a row), and the results
    equal the same season played in-process (what bench/strength.py measures)."""
    policies = {"pp-priced": "priced-pass", "pp-random": "random", "pp-heuristic": "heuristic"}
    spec = SeasonSpec(
        name="pp-sevens",
        game="sevens",
        preset="sevens",
        bots=tuple(policies),
        table_size=3,
        deals_per_match=4,
        options=SeasonOptions(duplicate=True),
    )
    illegal = 0
    for mine, remote in _both_ways(platform, spec, policies, 78):
        assert remote["result"] == lean_result(mine["result"]), mine["match_id"]
        for seat, stats in enumerate(remote["stats"]):
            bot = remote["seats"][seat]
            assert stats["timeouts"] == 0 and stats["invalid_actions"] == 0, (bot, stats)
            assert not stats["autopilot"], (bot, stats)
            if bot == "pp-priced":
                illegal += stats["illegal_passes"]
            else:
                assert stats["illegal_passes"] == 0, (bot, stats)
    assert illegal > 0


def test_gauntlet_season_reports_where_the_bot_lands(platform: Platform) -> None:
    """``arena ladder serve`` registers and plays the rungs; ``arena ladder gauntlet``
    seats a bot against them; the season finishes and its standings place every bot."""
    rungs = "random,first-legal,heuristic"
    url = ["--redis-url", platform.url]
    err = io.StringIO()
    with contextlib.redirect_stderr(err):  # the reference bots are not registered yet
        assert arena_main(["ladder", "gauntlet", "g-bot", "--rungs", rungs, *url]) == 1
    assert "arena ladder serve" in err.getvalue()
    serve = subprocess.Popen(
        arena_command("ladder", "serve", "--server", platform.server, "--rungs", rungs, *url),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        names = ["g-bot", "ladder-random", "ladder-first-legal", "ladder-heuristic"]
        deadline = time.monotonic() + 30
        while not all(platform.conn.hlen(keys.bot_streams(n)) for n in names[1:]):
            assert time.monotonic() < deadline and serve.poll() is None
            time.sleep(0.1)
        with bots_in_threads(platform, {"g-bot": PolicyBot("heuristic", per_turn_seed=True)}):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                argv = ["ladder", "gauntlet", "g-bot", "--rungs", rungs, "--rounds", "1"]
                assert arena_main([*argv, "--name", "g1", "--seed", "9", "--start", *url]) == 0
            assert "arena standings g1" in out.getvalue()
            deadline = time.monotonic() + 120
            while store.get_season(platform.conn, "g1")["state"] not in store.ENDED:
                assert time.monotonic() < deadline, store.get_season(platform.conn, "g1")
                time.sleep(0.2)
        assert store.get_season(platform.conn, "g1")["state"] == "finished"
        standings = store.get_standings(platform.conn, "g1")
        assert standings is not None
        rows = {r["bot"]: r for r in standings["rows"]}
        assert set(rows) == set(names)
        for row in rows.values():
            assert row["deals"] == 4 and row["timeouts"] == 0 and row["invalid_actions"] == 0
    finally:
        stop_process(serve)
