"""End to end: real Redis, a real referee process, real worker processes, SDK bots.

One referee (``arena referee``) and one worker pool (``arena worker -n 2``) serve the whole
module; each test registers its own bots and uses its own match ids.
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import pytest
import redis

from referee import keys, queue
from referee.cli.main import main as arena_main
from referee.embedded_redis import EmbeddedRedis
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.replay import verify_record
from referee.match.row import lean_result
from referee.match.spec import MatchSpec, TimeControl
from sample_bots.sdk import ActionOutcome, Bot, Turn
from tests.platform_fixtures import Platform, bots_in_threads, running_platform
from workers.host import run_match

pytestmark = pytest.mark.slow

STALE_S = 2.0


@pytest.fixture(scope="module")
def platform(embedded_redis: EmbeddedRedis) -> Iterator[Platform]:
    with running_platform(embedded_redis.url, "--stale-s", str(STALE_S)) as running:
        yield running


@dataclass
class ScriptBot(Bot):
    """An SDK bot whose answer and delay come from a function; it keeps what it got."""

    policy: Any = None
    delay_s: float = 0.0
    turns: list[Turn] = field(default_factory=list)
    outcomes: list[ActionOutcome] = field(default_factory=list)
    ends: list[dict[str, Any]] = field(default_factory=list)

    def choose(self, turn: Turn) -> str:
        self.turns.append(turn)
        if self.delay_s:
            time.sleep(self.delay_s)
        return str(self.policy(turn)) if self.policy else turn.legal_actions[0]

    def on_result(self, result: ActionOutcome) -> None:
        self.outcomes.append(result)

    def on_match_end(self, msg: dict[str, Any]) -> None:
        self.ends.append(msg)


def spec_of(match_id: str, preset: str, seats: list[str], **kw: Any) -> MatchSpec:
    game = "sedma" if preset.startswith("sedma") else "sevens"
    rules = get_game(game).preset(preset).to_dict()
    return MatchSpec(
        match_id=match_id,
        game=game,
        rules=rules,
        seats=tuple(seats),
        seed=kw.pop("seed", 11),
        deals=kw.pop("deals", (DealSpec(seed=1234),)),
        season=kw.pop("season", "e2e"),
        **kw,
    )


def wait_done(conn: redis.Redis, *match_ids: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    pending = set(match_ids)
    while pending and time.monotonic() < deadline:
        for m in list(pending):
            state = queue.match_status(conn, m)
            assert state["state"] != "failed", state
            if state["state"] == "done":
                pending.discard(m)
        time.sleep(0.05)
    assert not pending, {m: queue.match_status(conn, m) for m in pending}


def stream_count(conn: redis.Redis, match_id: str) -> int:
    entries: list[tuple[str, dict[str, str]]] = conn.xrange(keys.RESULTS_STREAM)  # type: ignore[assignment]
    return sum(1 for _id, fields in entries if fields["match_id"] == match_id)


def random_policy(seed: int) -> Any:
    rng = random.Random(seed)
    return lambda turn: rng.choice(turn.legal_actions)


def test_full_fan_tan_and_sevens_matches(platform: Platform) -> None:
    named: dict[str, Bot] = {
        "ft-rand1": ScriptBot(policy=random_policy(1)),
        "ft-rand2": ScriptBot(policy=random_policy(2)),
        "ft-first1": ScriptBot(),
        "ft-first2": ScriptBot(),
    }
    seats = list(named)
    with bots_in_threads(platform, named):
        assert queue.enqueue_match(platform.conn, spec_of("e2e-fantan", "fan-tan", seats))
        assert queue.enqueue_match(
            platform.conn, spec_of("e2e-sevens", "sevens", seats[::-1], seed=3)
        )
        wait_done(platform.conn, "e2e-fantan", "e2e-sevens")
    for match_id in ("e2e-fantan", "e2e-sevens"):
        result = queue.get_result(platform.conn, match_id)
        record = queue.get_record(platform.conn, match_id)
        assert result is not None and record is not None
        assert lean_result(verify_record(record)) == result["result"]  # referee/match/row.py
        if result["result"]["unit"] == "chips":
            assert sum(result["result"]["totals"]) == 0  # SV-31: chips only change hands
        assert all(s["decisions"] > 0 and s["timeouts"] == 0 for s in result["stats"])
        assert stream_count(platform.conn, match_id) == 1
    ends = [m for bot in named.values() for m in bot.ends]  # type: ignore[attr-defined]
    assert len(ends) == 8  # every bot saw both matches end
    # `arena replay` re-simulates the record through the engine
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert arena_main(["replay", "e2e-fantan", "--redis-url", platform.url]) == 0
    assert "replay check: the engine reproduces the recorded result" in out.getvalue()
    assert "plays 7" in out.getvalue()


def test_clock_inside_never_penalised_over_always_timed_out(platform: Platform) -> None:
    # limit = move 250 + bank 0 + grace 50 = 300 ms of referee-stamped think time.
    # "punctual" thinks ~100 ms (200 inside), "late" ~450 ms (150 over).
    punctual = ScriptBot(delay_s=0.10)
    late = ScriptBot(delay_s=0.45)
    named: dict[str, Bot] = {"ck-punctual": punctual, "ck-late": late, "ck-f1": ScriptBot()}
    tc = TimeControl(move_ms=250, bank_ms=0, grace_ms=50, queue_ms=5000)
    with bots_in_threads(platform, named):
        spec = spec_of("e2e-clock", "fan-tan", list(named), time_control=tc, strikes=3)
        assert queue.enqueue_match(platform.conn, spec)
        wait_done(platform.conn, "e2e-clock")
    result = queue.get_result(platform.conn, "e2e-clock")
    assert result is not None
    assert result["stats"][0]["timeouts"] == 0 and result["stats"][0]["illegal_passes"] == 0
    assert all(o.status == "accepted" for o in punctual.outcomes)
    assert result["stats"][1]["timeouts"] == 3 and result["stats"][1]["autopilot"]
    timed_out = [o for o in late.outcomes if o.status == "timed_out"]
    assert len(timed_out) == 3 and timed_out[-1].autopilot
    # a timeout is a pass; with a legal play in hand it is an illegal pass that costs the
    # preset's illegal_pass_chips (SV-18, SV-19), else a forced pass's pass chip (SV-17)
    rules = get_game("sevens").preset("fan-tan").to_dict()
    by_seq = {t.seq: t for t in late.turns}
    for outcome in timed_out:
        could_play = by_seq[outcome.seq].legal_actions != ["pass"]
        expected = rules["illegal_pass_chips"] if could_play else 0
        assert outcome.penalty == expected, (outcome, by_seq[outcome.seq].legal_actions)
        assert outcome.reason == "timeout"


def illegal_card(turn: Turn) -> str:
    held = [c for c in turn.observation["hand"] if c not in turn.legal_actions]
    return held[0] if held else "2C"


def always_pass(turn: Turn) -> str:
    return "pass"


def test_misbehaving_bots_are_penalised_and_told_why(platform: Platform) -> None:
    illegal = ScriptBot(policy=illegal_card)
    passer = ScriptBot(policy=always_pass)
    garbage = ScriptBot(policy=lambda t: "la la \u2603 not a card")
    quitter = ScriptBot()
    named: dict[str, Bot] = {
        "mb-illegal": illegal,
        "mb-passer": passer,
        "mb-garbage": garbage,
        "mb-quitter": quitter,
    }
    tc = TimeControl(move_ms=2000, bank_ms=0, grace_ms=50, queue_ms=600)
    with bots_in_threads(platform, named) as stops:
        spec = spec_of("e2e-bad", "fan-tan", list(named), time_control=tc, strikes=3)
        assert queue.enqueue_match(platform.conn, spec)
        deadline = time.monotonic() + 20
        while len(quitter.turns) < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        stops["mb-quitter"].set()  # disconnects mid-match
        wait_done(platform.conn, "e2e-bad")
    result = queue.get_result(platform.conn, "e2e-bad")
    record = queue.get_record(platform.conn, "e2e-bad")
    assert result is not None and record is not None
    stats = result["stats"]
    # SV-21: a refused card goes back; with a legal play in hand it is an illegal pass
    assert stats[0]["invalid_actions"] >= 1 and stats[0]["autopilot"]
    refused = [o for o in illegal.outcomes if o.status == "refused"]
    assert refused and refused[0].reason in {"not_legal", "not_held"} and refused[0].message
    # SV-18/19: passing while able is an illegal pass paid in chips (fan-tan: 5)
    illegal_passes = [o for o in passer.outcomes if o.reason == "illegal_pass"]
    assert illegal_passes and illegal_passes[0].penalty == 5
    assert stats[1]["illegal_passes"] >= 1
    # malformed text is refused with a reason, not a crash
    assert garbage.outcomes and garbage.outcomes[0].status == "refused"
    assert garbage.outcomes[0].reason and stats[2]["invalid_actions"] >= 1
    # the quitter's requests waited in its inbox until their deadline
    reasons = [s.get("reason") for s in record["steps"] if s.get("seat") == 3]
    assert "disconnected" in reasons and stats[3]["timeouts"] >= 1
    assert lean_result(verify_record(record)) == result["result"]  # referee/match/row.py


def _worker_pid(conn: redis.Redis, worker_name: str) -> int:
    raw = conn.hget(f"rq:worker:{worker_name}", "pid")
    assert raw, f"no rq worker {worker_name}"
    return int(raw)


def test_sigkill_of_a_worker_mid_match_retries_redealt_to_the_same_result(
    platform: Platform,
) -> None:
    """A retried match is re-dealt (the killed attempt showed the bots part of the old
    deals, docs/DECISIONS.md): its result equals an undisturbed run of the deals it was
    re-dealt, as recorded."""
    named: dict[str, Bot] = {f"kill-{i}": ScriptBot(delay_s=0.02) for i in range(4)}
    seats = list(named)
    deals = (DealSpec(seed=77), DealSpec(seed=78, rotation=1))
    with bots_in_threads(platform, named):
        victim = spec_of("e2e-kill", "fan-tan", seats, deals=deals, season="")
        assert queue.enqueue_match(platform.conn, victim)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            state = queue.match_status(platform.conn, "e2e-kill")
            if state["state"] == "running":
                break
            time.sleep(0.01)
        time.sleep(0.5)  # mid-match: ~20 decisions in
        assert queue.match_status(platform.conn, "e2e-kill")["state"] == "running"
        worker = queue.match_status(platform.conn, "e2e-kill")["worker"]
        os.kill(_worker_pid(platform.conn, worker), signal.SIGKILL)
        wait_done(platform.conn, "e2e-kill", timeout=60)
        record = queue.get_record(platform.conn, "e2e-kill")
        assert record is not None
        redealt = MatchSpec.from_dict(record["spec"])
        assert record["redealt"]["scheduled_deals"] == [d.to_dict() for d in deals]
        assert [d.seed for d in redealt.deals or ()] != [77, 78]
        assert [d.rotation for d in redealt.deals or ()] == [0, 1]
        reference = spec_of("e2e-ref", "fan-tan", seats, deals=redealt.deals, season="")
        reference = replace(reference, seed=redealt.seed)
        assert queue.enqueue_match(platform.conn, reference)
        wait_done(platform.conn, "e2e-ref")
    killed = queue.get_result(platform.conn, "e2e-kill")
    undisturbed = queue.get_result(platform.conn, "e2e-ref")
    assert killed is not None and undisturbed is not None
    assert killed["attempt"] >= 2 and undisturbed["attempt"] == 1
    assert killed["result"] == undisturbed["result"]
    assert [s["decisions"] for s in killed["stats"]] == [
        s["decisions"] for s in undisturbed["stats"]
    ]
    assert stream_count(platform.conn, "e2e-kill") == 1
    assert int(queue.match_status(platform.conn, "e2e-kill")["retries"]) >= 1
    assert platform.workers.poll() is None  # the pool lives on (it restarted the worker)
    alive = platform.conn.hgetall(keys.WORKERS_ALIVE)
    assert len(alive) == 2 and worker not in alive  # the replacement has a new name


def test_the_same_match_run_twice_concurrently_commits_once(platform: Platform) -> None:
    named: dict[str, Bot] = {f"twice-{i}": ScriptBot(delay_s=0.01) for i in range(3)}
    outcomes: list[str] = []
    with bots_in_threads(platform, named):
        spec = spec_of("e2e-twice", "fan-tan", list(named))
        assert queue.enqueue_match(platform.conn, spec)
        assert not queue.enqueue_match(platform.conn, spec)  # never enqueued twice

        def second_run() -> None:
            conn = redis.Redis.from_url(platform.url, decode_responses=True)
            outcomes.append(run_match("e2e-twice", conn=conn))
            conn.close()

        thread = threading.Thread(target=second_run)
        thread.start()
        thread.join(60)
        wait_done(platform.conn, "e2e-twice")
    assert stream_count(platform.conn, "e2e-twice") == 1
    result = queue.get_result(platform.conn, "e2e-twice")
    assert result is not None and outcomes
    if outcomes[0] == "committed":
        assert result["attempt"] == max(result["attempt"], 2)
    else:
        assert outcomes[0] in {"superseded", "duplicate", "already-done"}
