"""The match loop of ``workers/runner.py`` (``MatchRun.play``) played to the end with the
referee links scripted by the test: every message a bot is sent, every step recorded and
the committed result are checked whole. Unit tests of one module (the fake game of
``tests/workers/fakegame.py``, no Redis, no referee process), fast enough for the mutation
runs of ``make mutate`` (area ``runner``); tests/workers/test_runner.py plays the same loop
against a real referee process.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace
from typing import Any

import pytest
from google.protobuf.json_format import MessageToDict

from arena.v1 import bot_pb2, internal_pb2
from referee.games import registry
from referee.games.base import DealSpec
from referee.match.messages import now_ms
from referee.match.spec import ClockKind, MatchSpec, TimeControl, redeal_seed
from tests.workers import fakegame
from workers import metrics as wmetrics
from workers.link import LinkLost
from workers.metrics import HostMetrics
from workers.runner import MatchRun

TC = TimeControl(move_ms=300, bank_ms=400, grace_ms=50, queue_ms=300, absent_ms=200)
Kind = internal_pb2.Reply


@pytest.fixture(autouse=True)
def fake_game(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setitem(registry.GAMES, "fake", fakegame.GAME)
    yield


class _Link:
    """A referee link: answers each turn with what ``answer(bot, turn)`` returns."""

    referee = "referee-1"

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.turns: list[tuple[str, Any, dict[str, Any], float]] = []

    def turn(
        self, bot: str, key: Any, payload: bytes, limit: float, expires: float, first: float
    ) -> Any:
        turn = bot_pb2.RefereeMessage.FromString(payload).turn
        self.turns.append((bot, key, MessageToDict(turn), limit))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        future.set_result(self.answer(bot, turn))
        return future

    def forget(self, key: Any) -> None:
        pass


class _Router:
    def __init__(self, link: _Link | None) -> None:
        self.link = link
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.plain: list[tuple[str, str, int]] = []  # (bot, kind, seq) flagged accepted
        self.match_ids: set[str] = set()  # the match id each notification was sent under
        self.avoided: list[str] = []

    async def route(self, bot: str, until_ms: float) -> Any:
        return self.link

    def notify(self, bot: str, match_id: str, payload: bytes, accepted: bool = False) -> None:
        message = bot_pb2.RefereeMessage.FromString(payload)
        kind = message.WhichOneof("msg")
        assert kind is not None
        self.sent.append((bot, kind, MessageToDict(getattr(message, kind))))
        self.match_ids.add(match_id)
        if accepted:
            self.plain.append((bot, kind, message.result.seq))

    def avoid(self, referee: str, for_ms: float = 0.0) -> None:
        self.avoided.append(referee)

    def forget(self, bot: str) -> None:
        pass

    def excused(self, bot: str, within_ms: float) -> bool:
        return False


def _answer(action: str, think_ms: float = 10.0) -> Any:
    return internal_pb2.Reply(
        kind=Kind.ANSWER, action=action, sent_ms=1000.0, received_ms=1000.0 + think_ms
    )


def _spec(**kw: Any) -> MatchSpec:
    base: dict[str, Any] = {
        "match_id": "m1",
        "game": "fake",
        "rules": {"hand": 2},
        "seats": ("a", "b"),
        "seed": 7,
        "season": "s1",
        "time_control": TC,
        "deals": (DealSpec(11), DealSpec(12)),
    }
    base.update(kw)
    return MatchSpec(**base)


def _play(spec: MatchSpec, answer: Any, attempt: int = 1) -> tuple[MatchRun, _Router, _Link]:
    link = _Link(answer)
    router = _Router(link)
    run = MatchRun(SimpleNamespace(router=router, metrics=HostMetrics()), spec, attempt)
    asyncio.run(run.play())
    run.notify_match_end()
    return run, router, link


def _legal(bot: str, turn: Any) -> Any:
    return _answer(turn.legal_actions[0])


def _kinds(router: _Router, bot: str) -> list[str]:
    return [kind for b, kind, _ in router.sent if b == bot]


def _of(router: _Router, bot: str, kind: str) -> list[dict[str, Any]]:
    return [m for b, k, m in router.sent if b == bot and k == kind]


def _plain(router: _Router, bot: str) -> list[int]:
    """Seqs of the results to ``bot`` flagged as plain acceptances (``Notify.accepted``:
    dropped for streams that declined them, docs/PROTOCOL.md section 4)."""
    assert all(kind == "result" for _, kind, _ in router.plain)
    return [seq for b, _, seq in router.plain if b == bot]


def test_a_clean_match_tells_each_bot_everything_in_order() -> None:
    """Pins the loop's messages (docs/workers.md): per bot a ``match_start`` with its seats
    and the players, one turn per decision (seq counting 1, 2, ... over the match, the
    attempt, the seat, the legal actions, the clock), an accepted ``action_result`` with
    the think time, a ``deal_end`` per deal with running totals, and a ``match_end``; the
    committed result carries the stats (decisions and think time per seat)."""
    run, router, link = _play(_spec(), _legal)
    assert [(bot, key[2], turn.get("seat", 0)) for bot, key, turn, _ in link.turns] == [
        ("a", 1, 0),
        ("b", 2, 1),
        ("a", 3, 0),
        ("b", 4, 1),
        ("a", 5, 0),
        ("b", 6, 1),
    ]
    for _bot, key, turn, limit in link.turns:
        assert key[:2] == ("m1", 1) and turn["matchId"] == "m1" and turn["attempt"] == 1
        assert turn["seq"] == key[2] and turn["season"] == "s1"
        assert turn["clock"] == {"moveMs": 300, "bankMs": 400, "graceMs": 50}
        assert turn["legalActions"] == turn["observation"]["hand"][:1]
        assert limit == 750.0  # move + bank + grace
    for seat, bot in enumerate(("a", "b")):
        assert _kinds(router, bot) == ["match_start"] + ["result"] * (2 if bot == "a" else 1) + [
            "deal_end"
        ] + ["result"] * (1 if bot == "a" else 2) + ["deal_end", "match_end"]
        (start,) = _of(router, bot, "match_start")
        assert start == {
            "matchId": "m1",
            "attempt": 1,
            "game": "fake",
            "preset": "fake",
            "rulesJson": '{"hand":2,"name":"fake"}',
            "seats": [seat],
            "players": ["a", "b"],
            "numDeals": 2,
            "season": "s1",
        }
        results = _of(router, bot, "result")
        assert [r["seq"] for r in results] == [key[2] for b, key, _, _ in link.turns if b == bot]
        assert _plain(router, bot) == [r["seq"] for r in results]  # every one is plain
        for r, (_, _, turn, _) in zip(results, [t for t in link.turns if t[0] == bot], strict=True):
            assert r == {
                "matchId": "m1",
                "attempt": 1,
                "seq": turn["seq"],
                "status": "ACCEPTED",
                "appliedAction": turn["legalActions"][0],
                "thinkMs": 10,
            }
        ends = _of(router, bot, "deal_end")
        assert [(e.get("dealIndex", 0), e.get("winner", 0)) for e in ends] == [(0, 0), (1, 1)]
        assert [json.loads(e["resultJson"]) for e in ends] == [
            d.to_dict() for d in run.match.deal_results()
        ]
        (end,) = _of(router, bot, "match_end")
        assert end["totals"] == [0, 0] and end["winners"] == [0, 1] and end["unit"] == "chips"
        assert json.loads(end["resultJson"]) == run.match.result().to_dict()
    assert router.match_ids == {"m1"}
    committed = run.committed_result()
    assert committed["match_id"] == "m1"
    assert committed["result"] == run.match.result().to_dict()
    assert committed["stats"] == [
        {
            "bot": bot,
            "decisions": 3,
            "timeouts": 0,
            "invalid_actions": 0,
            "illegal_passes": 0,
            "fallbacks": 0,
            "autopilot": False,
            "think_ms_total": 30.0,
        }
        for bot in ("a", "b")
    ]
    assert committed["attempt"] == 1 and committed["seats"] == ["a", "b"]
    assert committed["game"] == "fake" and committed["season"] == "s1"
    assert committed["finished_ms"] == run.finished_ms > 0
    assert [s["seq"] for s in run.steps] == [1, 2, 3, 4, 5, 6]
    assert [s["deal"] for s in run.steps] == [0, 0, 0, 1, 1, 1]
    for step, (_, _, turn, _) in zip(run.steps, link.turns, strict=True):
        assert step["request"]["legal_actions"] == turn["legalActions"]
        assert step["request"]["clock"] == {"move_ms": 300, "bank_ms": 400, "grace_ms": 50}
    record = run.record()
    assert record["rules"] == {"hand": 2, "name": "fake"} and record["stats"] == run.stats
    assert record["initial_hands"] == run.match.initial_hands() and record["finished_ms"] > 0
    assert record["finished_ms"] == run.finished_ms
    # the fake game's own record has no events: the record makes them (Event.to_dict)
    assert record["events"] == [e.to_dict() for e in run.match.events()]
    assert all(s["source"] == "bot" and s["status"] == "accepted" for s in run.steps)
    # a bot's play is applied as the bot's (an event of source "bot" omits the key)
    assert all("source" not in e for s in run.steps for e in s["events"])


def _refuse_then_time_out(bot: str, turn: Any) -> Any:
    """b's first answer is garbage (refused: an illegal pass costing a chip); a's second
    decision runs out of time at the referee; every other answer is the legal card."""
    if bot == "b" and turn.seq == 2:
        return _answer("XX")
    if bot == "a" and turn.seq == 3:
        return internal_pb2.Reply(kind=Kind.TIMEOUT, sent_ms=now_ms())
    return _answer(turn.legal_actions[0])


def test_refusals_and_timeouts_are_told_counted_and_charged() -> None:
    """Pins how the loop treats failures: a refused answer is told ``REFUSED`` with its
    reason and the chip it paid (an illegal pass, applied action ``pass``), a timeout is
    told ``TIMED_OUT`` and empties the bank; the stats count each, the steps record them,
    and ``deal_end`` carries each deal's deltas and the running totals."""
    run, router, _ = _play(_spec(strikes=5), _refuse_then_time_out)
    (b_refused,) = [r for r in _of(router, "b", "result") if r["seq"] == 2]
    assert b_refused["status"] == "REFUSED" and b_refused["reason"] == "not_legal"
    assert b_refused["penalty"] == 1 and b_refused["appliedAction"] == "pass"
    assert b_refused["message"] == "'XX' refused: play your lowest card"
    (a_timeout,) = [r for r in _of(router, "a", "result") if r["seq"] == 3]
    assert a_timeout["status"] == "TIMED_OUT" and a_timeout["reason"] == "timeout"
    assert a_timeout["penalty"] == 1 and a_timeout["appliedAction"] == "pass"
    assert 2 not in _plain(router, "b") and 3 not in _plain(router, "a")  # always sent
    assert a_timeout["message"] == (
        "no answer within the time limit (think time 750 ms); "
        "the rules' timeout consequence was applied"
    )
    assert run.clock.bank_left_ms == [0.0, 400.0]
    stats = {s["bot"]: s for s in run.stats}
    assert (stats["a"]["timeouts"], stats["a"]["illegal_passes"]) == (1, 1)
    assert (stats["b"]["invalid_actions"], stats["b"]["illegal_passes"]) == (1, 1)
    assert stats["b"]["timeouts"] == 0 and stats["a"]["invalid_actions"] == 0
    steps = {s["seq"]: s for s in run.steps}
    assert steps[2]["status"] == "refused" and steps[2]["answer"] == "XX"
    assert steps[3]["timeout"] is True and steps[3]["status"] == "timed_out"
    assert steps[3]["bank_left_ms"] == 0.0 and steps[2]["bank_left_ms"] == 400.0
    deltas = [e["deltas"] for e in _of(router, "a", "deal_end")]
    totals = [e["totals"] for e in _of(router, "a", "deal_end")]
    assert totals == [deltas[0], [x + y for x, y in zip(deltas[0], deltas[1], strict=True)]]
    assert (
        totals[-1] == _of(router, "b", "match_end")[0]["totals"] == list(run.match.result().totals)
    )
    assert sum(map(abs, totals[-1])) > 0  # the chips paid moved somewhere


def test_failures_in_a_row_hand_the_seat_to_the_autopilot() -> None:
    """Pins the strike limit in the loop: with ``strikes=1`` b's refused answer hands its
    seat to the autopilot at once (told in that ``action_result``); b is never asked again,
    its later decisions are recorded as ``autopilot`` steps and its stats say so."""
    run, router, link = _play(_spec(strikes=1), _refuse_then_time_out)
    assert [key[2] for bot, key, _, _ in link.turns if bot == "b"] == [2]
    (told,) = _of(router, "b", "result")
    assert told["autopilot"] is True and told["status"] == "REFUSED"
    assert _plain(router, "b") == []
    assert told["message"].endswith(
        "; 1 failures in a row: the autopilot plays this seat to the end of the match"
    )
    assert run.autopilot == [True, True]  # a's timeout (seq 3) is one failure too
    assert run.stats[1]["autopilot"] is True and run.stats[1]["decisions"] == 1
    takeovers = [s for s in run.steps if s.get("takeover")]
    assert [(s["seat"], s["source"], s["deal"]) for s in takeovers] == [
        (1, "autopilot", 0),
        (0, "autopilot", 0),
    ]
    auto = [s for s in run.steps if s["source"] == "autopilot" and not s.get("takeover")]
    plays = [e for s in auto for e in s["events"] if e["kind"] == "play"]
    assert auto and len(plays) == len(auto) and all(e["source"] == "autopilot" for e in plays)
    assert all(s["seat"] == e["seat"] for s, e in zip(auto, plays, strict=True))
    assert all(s["source"] in ("bot", "autopilot") for s in run.steps)
    assert run.match.is_over()


def test_forced_decisions_are_played_without_asking_when_the_spec_says_so() -> None:
    """Pins ``autoplay_forced``: every decision of the fake game has one legal action, so
    no bot is asked at all; each step is a ``forced`` step. Without the option every
    decision is asked."""
    run, router, link = _play(_spec(autoplay_forced=True), _legal)
    assert link.turns == [] and len(run.steps) == 6
    assert all(s["source"] == "forced" for s in run.steps)
    assert [s["seat"] for s in run.steps] == [0, 1, 0, 1, 0, 1]
    assert [s["decisions"] for s in run.stats] == [0, 0]
    assert _kinds(router, "a") == ["match_start", "deal_end", "deal_end", "match_end"]


def test_a_retry_plays_re_dealt_seeds_under_its_attempt() -> None:
    """Pins a retry's spec (docs/workers.md): attempt 2 deals from ``redeal_seed`` of the
    scheduled seeds, every message carries attempt 2, and the record keeps the scheduled
    seeds under ``redealt``."""
    spec = _spec()
    run, router, link = _play(spec, _legal, attempt=2)
    assert {key[1] for _, key, _, _ in link.turns} == {2}
    assert {turn["attempt"] for _, _, turn, _ in link.turns} == {2}  # in each request too
    assert all(m["attempt"] == 2 for _, _, m in router.sent)
    assert run.spec == spec.for_attempt(2) and run.spec.deals != spec.deals
    record = run.record()
    assert record["attempt"] == 2 and record["match_id"] == "m1"
    assert record["redealt"] == {
        "attempt": 2,
        "scheduled_seed": 7,
        "scheduled_deals": [d.to_dict() for d in spec.deals or ()],
    }
    assert record["spec"] == run.spec.to_dict() and record["steps"] == run.steps
    assert record["result"] == run.match.result().to_dict() and record["resent"] == 0
    assert "redealt" not in _play(spec, _legal)[0].record()
    # A match whose rules decide its deals: the match seed is re-derived, no deals listed.
    ruled = _spec(deals=None)
    run, _, _ = _play(ruled, _legal, attempt=2)
    game = registry.get_game("fake")
    dealt = game.new_match(run.rules, 2, redeal_seed(7, 2), None).initial_hands()
    assert run.match.initial_hands() == dealt
    assert run.record()["redealt"] == {"attempt": 2, "scheduled_seed": 7, "scheduled_deals": None}


WIDE = TimeControl(move_ms=300, bank_ms=400, grace_ms=50, queue_ms=60_000, absent_ms=2_000)


class _RecordingRouter(_Router):
    """Records each ``route(bot, until_ms)`` with the time of the call; bots in
    ``absent`` have no stream (route answers None)."""

    def __init__(self, link: _Link, absent: frozenset[str] = frozenset()) -> None:
        super().__init__(link)
        self.absent = absent
        self.routes: list[tuple[str, float, float]] = []
        self.forgotten: list[str] = []
        self.excused_bots: set[str] = set()
        self.excuses: list[tuple[str, float]] = []

    def forget(self, bot: str) -> None:
        self.forgotten.append(bot)

    def excused(self, bot: str, within_ms: float) -> bool:
        self.excuses.append((bot, within_ms))
        return bot in self.excused_bots

    async def route(self, bot: str, until_ms: float) -> Any:
        self.routes.append((bot, until_ms, now_ms()))
        return None if bot in self.absent else self.link


class _RecordingLink(_Link):
    def __init__(self, answer: Any) -> None:
        super().__init__(answer)
        self.calls: list[tuple[str, float, float, float]] = []  # bot, limit, expires, first

    def turn(
        self, bot: str, key: Any, payload: bytes, limit: float, expires: float, first: float
    ) -> Any:
        self.calls.append((bot, limit, expires - now_ms(), first))
        return super().turn(bot, key, payload, limit, expires, first)


def _play_recorded(
    absent: frozenset[str],
    excused: frozenset[str] = frozenset(),
    late: frozenset[str] = frozenset(),
) -> tuple[MatchRun, _RecordingRouter, _RecordingLink]:
    """``excused``: bots the router excuses (their referee failed lately); ``late``: bots
    with no stream at the match start that have one by their first decision."""
    link = _RecordingLink(_legal)
    router = _RecordingRouter(link, absent | late)
    router.excused_bots = set(excused)
    if late:
        original = router.route

        async def route(bot: str, until_ms: float) -> Any:
            if len(router.routes) >= 2:  # the match start's routes are done
                router.absent = absent
            return await original(bot, until_ms)

        router.route = route  # type: ignore[method-assign]
    host = SimpleNamespace(router=router, metrics=HostMetrics())
    run = MatchRun(host, _spec(time_control=WIDE), 1)
    asyncio.run(run.play())
    return run, router, link


def test_a_request_waits_for_its_bot_as_long_as_the_clock_says() -> None:
    """Pins the deadlines of ``ask`` (docs/workers.md, the clock): a bot this match has
    reached is looked for until its decision limit (move + bank + grace = 750 ms) plus
    ``absent_ms``; the request expires at the referee after the limit plus ``queue_ms``,
    and a first send has no earlier send (0). Tolerances of 1 s cover the time between
    the request and the call; the wrong sums differ by more."""
    run, router, link = _play_recorded(absent=frozenset())
    asks = router.routes[2:]  # after the two of the match start
    assert [b for b, _, _ in router.routes[:2]] == ["a", "b"]
    # at the match start, one directory read per bot: no wait (until = now)
    assert all(-1_000 < until - called <= 0 for _, until, called in router.routes[:2])
    assert [b for b, _, _ in asks] == ["a", "b", "a", "b", "a", "b"]
    for _bot, until, called in asks:
        assert 750 + 2_000 - 1_000 < until - called <= 750 + 2_000
    for bot, limit, expires_in, first in link.calls:
        assert bot in ("a", "b") and limit == 750.0 and first == 0.0
        assert 750 + 60_000 - 1_000 < expires_in <= 750 + 60_000
    assert run.reached == {"a", "b"}


def test_a_bot_with_no_stream_is_judged_disconnected_and_keeps_its_bank() -> None:
    """Pins the "no stream" path of ``ask``: a bot never found (not even at the match start)
    is waited for ``absent_ms`` past its limit, as a bot that left is (docs/workers.md;
    ``queue_ms`` here is 30 times longer), then each decision is ``disconnected``:
    told ``TIMED_OUT`` with reason ``disconnected``, think time 0, the bank untouched, the
    timeout rule applied (a pass paying its chip); the other bot plays normally."""
    run, router, link = _play_recorded(absent=frozenset({"b"}))
    b_routes = [(until, called) for bot, until, called in router.routes[2:] if bot == "b"]
    assert len(b_routes) == 3
    for until, called in b_routes:
        assert 750 + 2_000 - 1_000 < until - called <= 750 + 2_000
    assert {bot for bot, *_ in link.calls} == {"a"} and run.reached == {"a"}
    b_steps = [s for s in run.steps if s["seat"] == 1 and s["source"] == "bot"]
    assert [s["status"] for s in b_steps] == ["timed_out"] * 3
    assert all(s["reason"] == "disconnected" and s["think_ms"] == 0.0 for s in b_steps)
    assert all(s["timeout"] is True and s["answer"] is None for s in b_steps)
    assert run.clock.bank_left_ms == [400.0, 400.0]
    assert run.stats[1]["timeouts"] == 3 and run.stats[1]["think_ms_total"] == 0.0
    assert run.stats[1]["illegal_passes"] == 3
    assert run.autopilot == [False, True]  # three failures in a row (strikes=3)
    told = _of(router, "b", "result")[0]
    assert (told["status"], told["reason"]) == ("TIMED_OUT", "disconnected")
    assert told["message"] == (
        "the request was never sent: no stream of this bot was connected (or none had a "
        "free slot) before its deadline"
    )


def test_a_bot_that_left_holding_a_request_gets_it_again_with_the_clock_left() -> None:
    """Pins the BOT_LEFT path of ``ask`` (docs/workers.md): the bot's stream ended while it
    held the request, sent 100 ms ago; the host forgets the bot's route, looks for it until
    the first send + limit + ``absent_ms``, and sends the same request (same seq) again
    with the clock left since the first send (move time first) and the first send's stamp;
    the answer then counts as usual."""
    left_at: list[float] = []

    def answer(bot: str, turn: Any) -> Any:
        if bot == "a" and turn.seq == 1 and not left_at:
            left_at.append(now_ms() - 100.0)
            return internal_pb2.Reply(kind=Kind.BOT_LEFT, sent_ms=left_at[0])
        return _answer(turn.legal_actions[0])

    link = _RecordingLink(answer)
    router = _RecordingRouter(link)
    host = SimpleNamespace(router=router, metrics=HostMetrics())
    run = MatchRun(host, _spec(time_control=WIDE), 1)
    asyncio.run(run.play())
    first, again = link.turns[0], link.turns[1]
    assert first[0] == again[0] == "a" and first[1] == again[1] == ("m1", 1, 1)
    assert first[2]["clock"] == {"moveMs": 300, "bankMs": 400, "graceMs": 50}
    assert again[2]["clock"]["bankMs"] == 400 and again[2]["clock"]["graceMs"] == 50
    assert 0 <= again[2]["clock"].get("moveMs", 0) <= 200
    assert link.calls[0][3] == 0.0 and link.calls[1][3] == left_at[0]
    assert router.forgotten == ["a"]
    (_, until, _) = router.routes[3]  # match start (2), the first ask, then again
    assert until == left_at[0] + 750 + 2_000
    assert run.steps[0]["status"] == "accepted" and run.resent == 0
    assert len(link.turns) == 7  # six decisions, one sent twice


def test_an_answer_later_than_the_limit_is_a_timeout() -> None:
    """Pins the clock's verdict in ``judge_and_apply``: an answer whose think time (800 ms)
    is past the decision's limit (750 ms) is not applied; the seat gets the timeout rule,
    told ``TIMED_OUT``/``timeout`` and counted as a timeout, and the bank pays for it."""

    def late(bot: str, turn: Any) -> Any:
        return _answer(turn.legal_actions[0], think_ms=800.0 if turn.seq == 1 else 10.0)

    run, router, _ = _play(_spec(), late)
    step = run.steps[0]
    assert step["answer"] == run.match.initial_hands()[0][0][0]
    assert (step["status"], step["reason"], step["timeout"]) == ("timed_out", "timeout", True)
    assert [e["kind"] for e in step["events"]] == ["timeout", "illegal_pass", "penalty"]
    assert _of(router, "a", "result")[0]["status"] == "TIMED_OUT"
    assert run.stats[0]["timeouts"] == 1 and run.clock.bank_left_ms[0] == 0.0


def test_each_decision_is_counted_with_its_think_time_and_no_overhead_for_failures() -> None:
    """Pins the decision metrics of ``count`` (docs/metrics.md: decisions per season, bot
    and game; think time and platform overhead in seconds): seven decisions, six answered
    after 1.5 s of thinking and b's at seq 4 timed out at the referee (think = the limit,
    2.45 s; its pass keeps b's card, so the deal takes one decision more). The overhead
    (wall time minus think time) is 0 here: a scripted answer takes far less wall time
    than the think time it reports, and a failure has no overhead at all."""
    slow = TimeControl(move_ms=2_000, bank_ms=400, grace_ms=50, queue_ms=300)

    def answer(bot: str, turn: Any) -> Any:
        if turn.seq == 4:
            return internal_pb2.Reply(kind=Kind.TIMEOUT, sent_ms=now_ms())
        return _answer(turn.legal_actions[0], think_ms=1_500.0)

    run, _, link = _play(_spec(time_control=slow), answer)
    assert [bot for bot, *_ in link.turns] == ["a", "b", "a", "b", "a", "b", "a"]
    metrics = run.metrics
    assert dict(metrics.decisions) == {("s1", "a", "fake"): 4, ("s1", "b", "fake"): 3}
    think = metrics.hists[(wmetrics.THINK_SECONDS, "fake")]
    overhead = metrics.hists[(wmetrics.OVERHEAD_SECONDS, "fake")]
    assert think.count == overhead.count == 7
    assert think.total == pytest.approx(6 * 1.5 + 2.45)
    assert overhead.total == 0.0
    assert run.stats[1]["timeouts"] == 1 and run.stats[1]["think_ms_total"] == 2 * 1_500 + 2_450


def test_the_overhead_of_an_answered_decision_is_its_wall_time_in_seconds() -> None:
    """Pins the unit of the overhead metric: a bot reporting no think time leaves the whole
    wall time of the decision as platform overhead, observed in seconds (each decision
    here takes well under a second; milliseconds taken for seconds would be ~1000x)."""
    run, _, _ = _play(_spec(), lambda bot, turn: _answer(turn.legal_actions[0], 0.0))
    overhead = run.metrics.hists[(wmetrics.OVERHEAD_SECONDS, "fake")]
    assert overhead.count == 6 and 0.0 < overhead.total < 6 * 0.5
    assert sum(s["wall_ms"] for s in run.steps) / 1000 == pytest.approx(overhead.total, abs=1e-2)


def test_a_pass_while_holding_a_legal_play_is_an_accepted_illegal_pass() -> None:
    """Pins how an illegal pass is told (SV-18): the answer ``pass`` is accepted as a pass
    with reason ``illegal_pass`` and the rule in words, the chip it cost as the penalty."""

    def passes(bot: str, turn: Any) -> Any:
        return _answer("pass" if turn.seq == 2 else turn.legal_actions[0])

    run, router, _ = _play(_spec(), passes)
    told = _of(router, "b", "result")[0]
    assert (told["status"], told["reason"]) == ("ACCEPTED", "illegal_pass")
    assert told["message"] == "illegal pass (SV-18): you passed while holding a legal play"
    assert told["penalty"] == 1 and told["appliedAction"] == "pass"
    assert told["seq"] not in _plain(router, "b")  # accepted, but with a reason and a penalty
    assert run.steps[1]["status"] == "accepted" and run.steps[1]["reason"] == "illegal_pass"
    assert run.stats[1]["illegal_passes"] == 1 and run.stats[1]["invalid_actions"] == 0


def test_only_an_excused_bot_is_waited_for_queue_ms() -> None:
    """Pins who gets ``queue_ms`` instead of ``absent_ms`` past the limit (docs/workers.md):
    only a bot whose referee failed lately (the router excuses it, asked with
    ``queue_ms``). A bot with no stream at the match start is judged like any other: its
    first decision waits ``absent_ms`` past the limit too (not ``queue_ms``: a bot that never
    connects would stall its table for ``queue_ms`` per decision)."""
    run, router, _ = _play_recorded(absent=frozenset(), excused=frozenset({"a"}))
    for bot, until, called in router.routes[2:]:
        expected = 750 + (60_000 if bot == "a" else 2_000)
        assert expected - 1_000 < until - called <= expected
    assert {within for _, within in router.excuses} == {60_000}
    assert {bot for bot, _ in router.excuses} == {"a", "b"}
    run, router, _ = _play_recorded(absent=frozenset(), late=frozenset({"b"}))
    b_waits = [until - called for bot, until, called in router.routes[2:] if bot == "b"]
    assert all(750 + 2_000 - 1_000 < w <= 750 + 2_000 for w in b_waits) and b_waits[1:]
    assert run.reached == {"a", "b"}


def test_the_record_keeps_each_request_without_rules_and_history_and_they_can_be_rebuilt() -> None:
    """A step's recorded observation leaves out what every step would repeat (docs/workers.md
    "Match record"): the rules (the record's own) and the deal's history, of which it keeps
    the length the seat was shown (``history_entries``); ``history_view`` of the record's
    events of that deal before the step gives back exactly the history the bot received
    (real Sevens engine, two deals, some answers refused)."""
    from referee.games.base import Event, history_view

    spec = _spec(
        game="sevens",
        rules=registry.get_game("sevens").preset("fan-tan").to_dict(),
        seats=("a", "b", "c", "d"),
        deals=(DealSpec(21), DealSpec(22, rotation=1)),
        strikes=0,
    )

    def sometimes_garbage(bot: str, turn: Any) -> Any:
        return _answer("zz" if turn.seq % 11 == 0 else turn.legal_actions[0])

    run, _, link = _play(spec, sometimes_garbage)
    record = run.record()
    assert record["version"] == 3
    events = record["events"]
    assert events == [e.to_dict() for e in run.match.events()] == record["engine"]["events"]
    asked = {s["seq"]: s for s in record["steps"] if "request" in s}
    assert len(asked) == len(link.turns) > 100
    # The events before a step: all of them less those of this step and every later one.
    after = 0
    before: dict[int, int] = {}
    for step in reversed(record["steps"]):
        after += len(step.get("events", []))
        if "request" in step:
            before[step["seq"]] = len(events) - after
    refused = 0
    for _bot, key, turn, _limit in link.turns:
        step = asked[key[2]]
        request = step["request"]
        assert "rules" not in request["observation"] and "history" not in request["observation"]
        assert request["observation"]["hand"] == turn["observation"]["hand"]
        assert json.loads(turn["observation"]["rulesJson"]) == run.rules.to_dict()
        shown = turn["observation"]["history"]
        assert request["history_entries"] == len(shown)
        deal_events = [
            Event.from_dict(e) for e in events[: before[key[2]]] if e["deal"] == step["deal"]
        ]
        rebuilt = history_view(deal_events, step["seat"])
        assert [
            {
                "seat": h.get("seat", 0),
                "kind": h["kind"],
                **({"action": h["action"]} if "action" in h else {}),
                **({"reason": h["reason"]} if "reason" in h else {}),
            }
            for h in shown
        ] == rebuilt
        refused += sum(1 for h in shown if h["kind"] == "invalid_action")
    assert refused > 0


def test_a_reply_that_never_comes_is_judged_a_timeout_after_the_slack(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A referee that loses a turn (never expected): the host stops waiting at the turn's
    own bounds (slot wait + limit, twice the limit in all) plus ``REPLY_SLACK_MS``, judges
    a timeout, forgets the request and plays on; one timer per match watches every
    decision's reply (``Asker.watch``, workers/ask.py), and none is left armed when the
    match ends."""
    from workers import ask

    monkeypatch.setattr(ask, "REPLY_SLACK_MS", 40.0)
    tc = TimeControl(move_ms=20, bank_ms=0, grace_ms=10, queue_ms=20, absent_ms=50)
    forgotten: list[Any] = []

    class _Silent(_Link):
        def turn(
            self, bot: str, key: Any, payload: bytes, limit: float, expires: float, first: float
        ) -> Any:
            if key[2] != 3:
                return super().turn(bot, key, payload, limit, expires, first)
            self.turns.append((bot, key, {}, limit))
            return asyncio.get_running_loop().create_future()  # never resolved

        def forget(self, key: Any) -> None:
            forgotten.append(key)

    link = _Silent(_legal)
    router = _Router(link)
    run = MatchRun(
        SimpleNamespace(router=router, metrics=HostMetrics()), _spec(time_control=tc, strikes=0), 1
    )
    asyncio.run(run.play())
    lost = [s for s in run.steps if s.get("seq") == 3]
    assert lost[0]["timeout"] is True and lost[0]["reason"] == "timeout"
    assert forgotten == [("m1", 1, 3)]
    assert 100 <= lost[0]["wall_ms"] < 100 + 2_000  # 2 x 30 ms + 20 ms + 40 ms slack
    assert run.asker.guard is None and run.asker.waiting is None
    assert run.match.is_over() and [s["seq"] for s in run.steps][:4] == [1, 2, 3, 4]


# --- found by `make mutate` (area runner, 2026-12-01, fourth session) ----------------------


class _ScriptedLink(_RecordingLink):
    """Answers each turn with the next of ``outcomes`` (a Reply, or an exception the
    future fails with, e.g. ``LinkLost``), then with the legal card."""

    def __init__(self, name: str, outcomes: list[Any]) -> None:
        super().__init__(_legal)
        self.referee = name
        self.outcomes = outcomes

    def turn(
        self, bot: str, key: Any, payload: bytes, limit: float, expires: float, first: float
    ) -> Any:
        future = super().turn(bot, key, payload, limit, expires, first)
        if self.outcomes:
            outcome = self.outcomes.pop(0)
            future = asyncio.get_running_loop().create_future()
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        return future


def test_a_step_records_its_times_from_the_referee_stamps_and_the_wall_clock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Pins the times of a decision (docs/workers.md "Match record", docs/metrics.md), on a
    frozen clock (``now_ms`` 5000) and a scripted wall clock: think time = the referee's
    receive stamp minus its send stamp, wait = send stamp minus the request's ready time (0
    when the stamp is earlier), wall = the time around ``ask`` in ms; the record keeps
    each to the microsecond (3 decimals), and the bank left after an overrun of 0.12346 ms.
    The overhead metric is wall minus think in seconds, for answered decisions only (a
    timeout, thinking for ever, has none). The reply is awaited for twice the limit plus
    ``queue_ms`` plus ``REPLY_SLACK_MS``."""
    from workers import ask, runner

    walls = iter([100.0, 100.5123456, 200.0, 200.25, 300.0, 302.0])
    monkeypatch.setattr(ask, "now_ms", lambda: 5_000.0)
    monkeypatch.setattr(runner, "time", SimpleNamespace(perf_counter=lambda: next(walls)))
    link = _ScriptedLink(
        "referee-1",
        [
            internal_pb2.Reply(kind=Kind.ANSWER, sent_ms=5_001.23456, received_ms=5_301.35802),
            internal_pb2.Reply(kind=Kind.ANSWER, sent_ms=4_990.0, received_ms=4_995.5),
            internal_pb2.Reply(kind=Kind.TIMEOUT, sent_ms=4_000.0),
        ],
    )
    run = MatchRun(SimpleNamespace(router=_Router(link), metrics=HostMetrics()), _spec(), 1)
    watched: list[float] = []
    watch = run.asker.watch

    def recorded(future: asyncio.Future[Any], within_s: float) -> None:
        watched.append(within_s)
        watch(future, within_s)

    run.asker.watch = recorded  # type: ignore[method-assign]

    async def three() -> None:
        for _ in range(3):
            seat = run.match.to_act()
            legal = run.match.legal_actions()
            link.outcomes[0].action = legal[0] if link.outcomes[0].kind == Kind.ANSWER else ""
            await run.ask_step(seat, legal)
        assert run.asker.guard is not None
        run.asker.guard.cancel()

    asyncio.run(three())
    first, second, third = run.steps
    assert (first["think_ms"], first["wait_ms"], first["wall_ms"]) == (300.123, 1.235, 512.346)
    assert first["bank_left_ms"] == 399.877 and first["timeout"] is False
    assert (first["status"], first["reason"]) == ("accepted", "")
    assert (second["think_ms"], second["wait_ms"], second["wall_ms"]) == (5.5, 0.0, 250.0)
    assert (third["think_ms"], third["timeout"], third["wall_ms"]) == (1_000.0, True, 2_000.0)
    assert [s["timeouts"] for s in run.stats] == [1, 0]
    overhead = run.metrics.hists[(wmetrics.OVERHEAD_SECONDS, "fake")]
    think = run.metrics.hists[(wmetrics.THINK_SECONDS, "fake")]
    assert overhead.count == think.count == 3
    assert overhead.total == pytest.approx((512.3456 - 300.12346 + 250.0 - 5.5) / 1000, rel=1e-9)
    assert think.total == pytest.approx((300.12346 + 5.5 + 1_000.0) / 1000, rel=1e-9)
    assert watched[0] == pytest.approx((750 + 300 + 750 + 5_000) / 1000, rel=1e-12)


def test_a_bot_that_left_holding_a_request_and_never_came_back_times_out() -> None:
    """Pins the end of the BOT_LEFT path of ``ask``: the bot's stream ended while it held
    the request (sent 100 ms ago) and no stream of it comes back before its deadline: the
    decision is a ``timeout`` (not ``disconnected``: the request was in its hands), its
    think time counted from the first send, and its bank spent."""
    left_at: list[float] = []

    def answer(bot: str, turn: Any) -> Any:
        if bot == "a" and turn.seq == 1:
            left_at.append(now_ms() - 100.0)
            router.absent = frozenset({"a"})  # a's stream is gone for good
            return internal_pb2.Reply(kind=Kind.BOT_LEFT, sent_ms=left_at[0])
        return _answer(turn.legal_actions[0])

    link = _RecordingLink(answer)
    router = _RecordingRouter(link)
    run = MatchRun(SimpleNamespace(router=router, metrics=HostMetrics()), _spec(), 1)
    asyncio.run(run.play())
    step = run.steps[0]
    assert (step["seat"], step["status"], step["reason"]) == (0, "timed_out", "timeout")
    assert 100.0 <= step["think_ms"] < 100.0 + 1_000.0
    assert step["bank_left_ms"] == 0.0 and run.stats[0]["timeouts"] >= 1


def test_a_request_that_expired_unsent_at_the_referee_is_disconnected_and_uncharged() -> None:
    """Pins the EXPIRED reply of ``ask``: the referee never found a free slot of the bot
    before ``expires_ms``, so the bot never had the request: ``disconnected``, think
    time 0, the bank left alone, the timeout rule applied (SV-21)."""

    def answer(bot: str, turn: Any) -> Any:
        if bot == "b" and turn.seq == 2:
            return internal_pb2.Reply(kind=Kind.EXPIRED)
        return _answer(turn.legal_actions[0])

    run, router, _ = _play(_spec(), answer)
    step = run.steps[1]
    assert (step["seat"], step["status"], step["reason"]) == (1, "timed_out", "disconnected")
    assert step["think_ms"] == 0.0 and step["answer"] is None and step["timeout"] is True
    assert run.clock.bank_left_ms[1] == 400.0 and step["bank_left_ms"] == 400.0
    assert run.stats[1]["timeouts"] == 1 and run.stats[1]["think_ms_total"] == 20.0  # 2 x 10
    told = [r for r in _of(router, "b", "result") if r["seq"] == 2]
    assert [(r["status"], r["reason"]) for r in told] == [("TIMED_OUT", "disconnected")]


def test_a_request_is_sent_again_after_its_referee_drained_or_died() -> None:
    """Pins the re-send paths of ``ask`` (docs/workers.md "Exactly once, retries,
    failures"): a referee that answers DRAINED is avoided (the router routes the bot
    elsewhere), one whose link died is not named (the router dropped its link already);
    each time the same request (same seq) goes out again as a first send (no earlier send
    stamp) with the decision's clock restarted, and the record counts every re-send."""
    drained = _ScriptedLink("referee-1", [internal_pb2.Reply(kind=Kind.DRAINED)])
    died = _ScriptedLink("referee-2", [LinkLost("the referee died")])
    link = _ScriptedLink("referee-3", [])
    router = _RecordingRouter(link)

    async def route(bot: str, until_ms: float) -> Any:  # the first referee with a reply left
        return next((r for r in (drained, died) if r.outcomes), link)

    router.route = route  # type: ignore[method-assign]
    run = MatchRun(SimpleNamespace(router=router, metrics=HostMetrics()), _spec(), 1)
    asyncio.run(run.play())
    assert router.avoided == ["referee-1"]
    sends = [drained.turns[0], died.turns[0], link.turns[0]]
    assert [(bot, key[2]) for bot, key, _, _ in sends] == [("a", 1)] * 3
    assert all(t["clock"] == {"moveMs": 300, "bankMs": 400, "graceMs": 50} for *_, t, _ in sends)
    calls = drained.calls + died.calls + link.calls
    assert [first for *_, first in calls] == [0.0] * len(calls) == [0.0] * 8  # 6 decisions + 2
    assert run.resent == 2 and run.record()["resent"] == 2
    assert run.steps[0]["status"] == "accepted"


def test_a_bot_that_left_before_its_request_was_sent_gets_it_with_the_whole_clock() -> None:
    """Pins the BOT_LEFT path when the request had not reached the bot (send stamp 0): no
    time was taken from its clock, so the request goes out again with the whole clock and
    as a first send; the host yields, it does not sleep, before routing again."""

    def answer(bot: str, turn: Any) -> Any:
        if bot == "a" and turn.seq == 1 and len(link.turns) == 1:
            return internal_pb2.Reply(kind=Kind.BOT_LEFT, sent_ms=0.0)
        return _answer(turn.legal_actions[0])

    link = _RecordingLink(answer)
    router = _RecordingRouter(link)
    run = MatchRun(SimpleNamespace(router=router, metrics=HostMetrics()), _spec(), 1)
    asyncio.run(run.play())
    first, again = link.turns[0], link.turns[1]
    assert first[1] == again[1] == ("m1", 1, 1) and router.forgotten == ["a"]
    assert again[2]["clock"] == {"moveMs": 300, "bankMs": 400, "graceMs": 50}
    assert link.calls[1][3] == 0.0
    assert run.steps[0]["status"] == "accepted" and run.steps[0]["wall_ms"] < 1_000.0


def test_the_reply_timer_re_arms_for_a_shorter_or_a_later_deadline() -> None:
    """Pins the one timer per match of ``watch``/``_check_reply``: a reply awaited with a
    shorter deadline than the armed timer moves the timer to it; one with a later
    deadline leaves the timer, which on firing finds the reply still awaited and re-arms
    itself for that reply's deadline, then fails it with ``TimeoutError`` there."""
    run = MatchRun(SimpleNamespace(router=_Router(None), metrics=HostMetrics()), _spec(), 1)
    asker = run.asker

    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        long: asyncio.Future[Any] = loop.create_future()
        asker.watch(long, 5.0)
        assert asker.guard is not None and asker.guard.when() == asker.guard_at
        short: asyncio.Future[Any] = loop.create_future()
        asker.watch(short, 0.05)
        assert asker.waiting is not None and asker.guard_at == asker.waiting[1]
        assert asker.guard.when() == asker.guard_at  # moved to the shorter deadline
        short.set_result(None)
        asker.waiting = None  # answered (ask's finally)
        later: asyncio.Future[Any] = loop.create_future()
        asker.watch(later, 0.3)
        assert asker.waiting is not None and asker.guard_at < asker.waiting[1]  # the sooner time
        await asyncio.sleep(0.15)  # it fired at 0.05 s: re-armed for ``later``
        assert not later.done() and asker.waiting is not None
        assert asker.guard is not None and asker.guard_at == asker.waiting[1] == asker.guard.when()
        await asyncio.wait({later}, timeout=3.0)
        assert later.done() and isinstance(later.exception(), TimeoutError)
        assert loop.time() >= asker.guard_at and asker.guard is None and asker.waiting is None

    asyncio.run(scenario())


def test_a_refusal_that_costs_nothing_is_never_sent_as_a_plain_acceptance() -> None:
    """Pins the ``accepted`` flag of ``send`` (docs/PROTOCOL.md section 4): only an
    ACCEPTED result with no reason, no penalty and no takeover may be dropped for streams
    that declined plain acceptances; a REFUSED one without a penalty (a game where the
    refusal's pass is free) is always sent."""

    def answer(bot: str, turn: Any) -> Any:
        return _answer("XX" if turn.seq == 2 else turn.legal_actions[0])

    link = _Link(answer)
    router = _Router(link)
    run = MatchRun(SimpleNamespace(router=router, metrics=HostMetrics()), _spec(), 1)
    run.match.fine = 0  # type: ignore[attr-defined]
    asyncio.run(run.play())
    (told,) = [r for r in _of(router, "b", "result") if r["seq"] == 2]
    assert told["status"] == "REFUSED" and "penalty" not in told and "autopilot" not in told
    assert 2 not in _plain(router, "b") and _plain(router, "b")  # the others are plain


def test_a_deal_without_a_winner_is_told_with_winner_minus_one() -> None:
    """Pins ``deal_end``'s winner for a deal nobody won (a void Sedma hand, SD-16: the
    engine's ``winner`` is None): -1, as docs/PROTOCOL.md (``DealEnd.winner``) says, never
    a seat, and the message is sent (None would not encode)."""
    link = _Link(_legal)
    router = _Router(link)
    run = MatchRun(SimpleNamespace(router=router, metrics=HostMetrics()), _spec(), 1)
    results = run.match.deal_results
    run.match.deal_results = lambda: [  # type: ignore[method-assign]
        replace(r, winner=None) if r.deal == 0 else r for r in results()
    ]
    asyncio.run(run.play())
    for bot in ("a", "b"):
        ends = _of(router, bot, "deal_end")
        assert [(e.get("dealIndex", 0), e.get("winner", 0)) for e in ends] == [(0, -1), (1, 1)]


def test_the_think_time_told_to_a_bot_is_its_think_time_rounded_once() -> None:
    """Pins ``action_result.think_ms`` (whole ms on the wire): the think time rounded to
    the nearest ms once. 11.4996 ms is told as 11 (rounded first to the microsecond, as
    the record keeps it, it became 11.5 and then 12)."""

    def answer(bot: str, turn: Any) -> Any:
        return _answer(turn.legal_actions[0], think_ms=11.4996 if turn.seq == 1 else 10.0)

    run, router, _ = _play(_spec(), answer)
    told = _of(router, "a", "result")[0]
    assert told["seq"] == 1 and told["thinkMs"] == 11
    assert run.steps[0]["think_ms"] == 11.5  # the record: to the microsecond


# --- found by `make mutate` (area runner, 2026-12-04: workers/ask.py after the split) -----


@pytest.mark.parametrize("clock", ["wall", "cpu"])
def test_an_answer_is_timed_by_the_seasons_clock_and_keeps_its_fallback_code_short(
    clock: ClockKind,
) -> None:
    """Pins ``Asker.ask`` on an answer: under ``clock = "cpu"`` the think time is the
    sandbox's CPU time the referee metered (``cpu_ms``) and the step says so
    (``cpu_clock``); under the wall clock it is the referee's receive minus send stamp,
    whatever was metered. A fallback code is kept to ``MAX_FALLBACK_CHARS`` (40)."""
    sent = now_ms()
    answer = internal_pb2.Reply(
        kind=Kind.ANSWER, sent_ms=sent, received_ms=sent + 30.0, cpu_ms=12.5, fallback="e" * 50
    )
    link = _ScriptedLink("referee-1", [answer])
    tc = replace(TC, clock=clock)
    run = MatchRun(
        SimpleNamespace(router=_Router(link), metrics=HostMetrics()), _spec(time_control=tc), 1
    )
    seat = run.match.to_act()
    legal = run.match.legal_actions()
    answer.action = legal[0]

    async def one() -> None:
        await run.ask_step(seat, legal)
        run.asker.close()

    asyncio.run(one())
    step = run.steps[0]
    assert step["fallback"] == "e" * 40 and step["answer"] == legal[0]
    assert (step["status"], step["reason"]) == ("accepted", "fallback")
    assert run.stats[seat]["fallbacks"] == 1
    if clock == "cpu":
        assert step["think_ms"] == 12.5 and step["cpu_clock"] is True
    else:
        assert step["think_ms"] == 30.0 and "cpu_clock" not in step
