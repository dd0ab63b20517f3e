"""The relay between bot streams and match hosts' internal streams (docs/gateway.md,
"One decision through the relay"): a real referee in-process, raw bot streams, and a host's link
(``workers.link``) driven by hand.

Every TurnRequest a test bot reads is checked by a LeakChecker: its hand is the sent hand
of its seat and no other seat's card appears in it (docs/OBSERVATIONS.md)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import bot_pb2, internal_pb2
from referee import keys
from referee.match.messages import DealEndMessage, MatchEndMessage, MatchStartMessage, now_ms
from tests.gateway.helpers import (
    FakeHost,
    LeakChecker,
    RawBot,
    action,
    register,
    running_referee,
)

Kind = internal_pb2.Reply


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_turn_answer_stamps_and_think_time(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            turn = leaks.turn("alice", "m1", 3, seat=2)
            pending = await host.send(turn)
            request = await bot.read_kind("turn")
            assert (request.match_id, request.attempt, request.seq) == ("m1", 1, 3)
            assert list(request.legal_actions) == turn["legal_actions"]
            assert request.clock.move_ms == 5000 and request.clock.bank_ms == 1000
            assert request.observation.sevens.pot == 4
            await asyncio.sleep(0.05)  # think
            before = now_ms()
            await bot.send(action("m1", 3, turn["legal_actions"][0]))
            reply = await asyncio.wait_for(pending, 5)
            assert reply.kind == Kind.ANSWER and reply.action == turn["legal_actions"][0]
            assert reply.received_ms - reply.sent_ms >= 50.0  # measured from the send stamp
            assert reply.sent_ms <= before <= reply.received_ms + 1.0
            await bot.close()
            await host.close()

    _run(scenario())
    assert leaks.checked == 1


def test_stale_and_duplicate_answers(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            pending = await host.send(leaks.turn("alice", "m1", 1))
            await bot.read_kind("turn")
            # An answer for a seq nobody asked: stale, told in-stream, the stream lives on.
            await bot.send(action("m1", 9, "7C"))
            result = await bot.read_kind("result")
            assert result.status == bot_pb2.ActionResult.STALE and result.seq == 9
            assert "no open request" in result.message
            # The right seq but an older attempt: stale too.
            await bot.send(action("m1", 1, "7C", attempt=0))
            result = await bot.read_kind("result")
            assert result.status == bot_pb2.ActionResult.STALE
            await bot.send(action("m1", 1, "pass"))
            await bot.send(action("m1", 1, "7C"))
            result = await bot.read_kind("result")
            assert result.status == bot_pb2.ActionResult.DUPLICATE and result.seq == 1
            reply = await asyncio.wait_for(pending, 5)
            assert reply.kind == Kind.ANSWER and reply.action == "pass"  # the first counts
            await bot.close()
            await host.close()

    _run(scenario())


def test_acting_for_another_bot(redis_url: str, redis_client: redis.Redis) -> None:
    alice = register(redis_client, "alice")
    mallory = register(redis_client, "mallory")
    leaks = LeakChecker()
    redis_client.set(keys.match_spec("m9"), json.dumps({"match_id": "m9", "seats": ["x", "y"]}))

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            victim = RawBot(ref.port, alice, checker=leaks)
            await victim.connect()
            pending = await host.send(leaks.turn("alice", "m1", 1))
            await victim.read_kind("turn")
            thief = RawBot(ref.port, mallory)
            await thief.connect()
            await thief.send(action("m1", 1, "7C"))  # alice's open decision
            assert await thief.status() == grpc.StatusCode.PERMISSION_DENIED
            assert "not a decision of bot 'mallory'" in (await thief.call.details())
            thief2 = RawBot(ref.port, mallory)
            await thief2.connect()
            await thief2.send(action("m9", 1, "7C"))  # a match mallory does not play in
            assert await thief2.status() == grpc.StatusCode.PERMISSION_DENIED
            # alice's request is still hers to answer.
            await victim.send(action("m1", 1, "pass"))
            reply = await asyncio.wait_for(pending, 5)
            assert reply.kind == Kind.ANSWER and reply.action == "pass"
            for bot in (victim, thief, thief2):
                await bot.close()
            await host.close()

    _run(scenario())


def _timed_out(match_id: str, seq: int) -> dict[str, Any]:
    return {
        "type": "action_result",
        "bot": "alice",
        "match_id": match_id,
        "attempt": 1,
        "seq": seq,
        "status": "timed_out",
        "reason": "timeout",
        "message": "no answer within 200 ms + bank",
        "penalty": 1,
        "applied_action": "pass",
        "think_ms": 6050.4,
        "autopilot": False,
    }


def test_concurrency_slots_expiry_and_notifications(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """A bot that declared 1 holds one request at a time; the others wait at the referee
    uncharged (or expire unsent); notifications take no slot and keep their order."""
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=1)
            start: MatchStartMessage = {
                "type": "match_start",
                "bot": "alice",
                "match_id": "m1",
                "attempt": 1,
                "game": "sevens",
                "preset": "sevens",
                "rules": {"name": "sevens"},
                "seats": [0],
                "players": ["alice", "bob", "carol", "dave"],
                "num_deals": 2,
                "season": "s1",
            }
            await host.notify(start)
            first_reply = await host.send(leaks.turn("alice", "m1", 1))
            second_reply = await host.send(leaks.turn("alice", "m2", 1))
            expiring = await host.send(leaks.turn("alice", "m3", 1), expires_in_ms=200)
            got_start = await bot.read_kind("match_start")
            assert list(got_start.players) == start["players"]
            assert json.loads(got_start.rules_json) == {"name": "sevens"}
            first = await bot.read_kind("turn")
            assert first.match_id == "m1"
            expired = await asyncio.wait_for(expiring, 5)  # never sent: nothing charged
            assert expired.kind == Kind.EXPIRED and expired.sent_ms == 0
            assert not second_reply.done()  # m2 waits, uncharged
            await bot.send(action("m1", 1, "pass"))
            assert (await asyncio.wait_for(first_reply, 5)).kind == Kind.ANSWER
            second = await bot.read_kind("turn")  # the answer freed the slot
            assert second.match_id == "m2"
            deal_end: DealEndMessage = {
                "type": "deal_end",
                "bot": "alice",
                "match_id": "m1",
                "attempt": 1,
                "deal_index": 0,
                "winner": 2,
                "deltas": [-1, -1, 3, -1],
                "totals": [-1, -1, 3, -1],
                "result": {"order": [2, 0, 1, 3]},
            }
            match_end: MatchEndMessage = {
                "type": "match_end",
                "bot": "alice",
                "match_id": "m1",
                "attempt": 1,
                "totals": [-1, -1, 3, -1],
                "unit": "chips",
                "winners": [2],
                "result": {"deals": 1},
            }
            await host.notify(deal_end)
            await host.notify(match_end)
            got_deal = await bot.read_kind("deal_end")
            assert got_deal.winner == 2 and list(got_deal.deltas) == [-1, -1, 3, -1]
            got_end = await bot.read_kind("match_end")
            assert list(got_end.winners) == [2] and json.loads(got_end.result_json) == {"deals": 1}
            await bot.send(action("m2", 1, "pass"))
            assert (await asyncio.wait_for(second_reply, 5)).kind == Kind.ANSWER
            await bot.close()
            await host.close()

    _run(scenario())


def test_the_clock_running_out_frees_the_slot_and_a_late_answer_is_stale(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=1)
            slow = await host.send(leaks.turn("alice", "m1", 1, move_ms=100, bank_ms=0))
            waiting = await host.send(leaks.turn("alice", "m2", 1))
            await bot.read_kind("turn")
            timed_out = await asyncio.wait_for(slow, 5)
            assert timed_out.kind == Kind.TIMEOUT
            assert now_ms() - timed_out.sent_ms >= 150.0  # move 100 + grace 50
            second = await bot.read_kind("turn", timeout=5)  # the slot is free again
            assert second.match_id == "m2"
            await bot.send(action("m1", 1, "7C"))  # too late: the request is closed
            late = await bot.read_kind("result")
            assert late.status == bot_pb2.ActionResult.STALE
            await host.notify(_timed_out("m1", 1))  # type: ignore[arg-type]
            result = await bot.read_kind("result")
            assert result.status == bot_pb2.ActionResult.TIMED_OUT
            assert result.think_ms == 6050 and result.penalty == 1
            await bot.send(action("m2", 1, "pass"))
            assert (await asyncio.wait_for(waiting, 5)).kind == Kind.ANSWER
            await bot.close()
            await host.close()

    _run(scenario())


def test_disconnect_with_requests_in_hand_then_reconnect(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """The host hears BOT_LEFT for every request the stream held (with its send stamp) or
    that waited for it; sent again with ``first_sent_ms``, the clock keeps running."""
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=2)
            turns = [leaks.turn("alice", f"m{i}", 1) for i in (1, 2, 3)]
            pending = [await host.send(t) for t in turns]
            a = await bot.read_kind("turn")
            b = await bot.read_kind("turn")
            assert {a.match_id, b.match_id} == {"m1", "m2"}
            await bot.close()  # vanish holding m1 and m2
            replies = [await asyncio.wait_for(p, 5) for p in pending]
            assert [r.kind for r in replies] == [Kind.BOT_LEFT] * 3
            assert replies[0].sent_ms > 0 and replies[1].sent_ms > 0
            assert replies[2].sent_ms == 0  # m3 was never sent
            await ref.hub.wait_closed(5.0)
            host.router.forget("alice")
            again = RawBot(ref.port, token, checker=leaks)
            await again.connect(concurrency=1)
            first_sent = replies[0].sent_ms
            resent = await host.send(turns[0], first_sent_ms=first_sent)
            request = await again.read_kind("turn")
            assert (request.match_id, request.seq) == ("m1", 1)
            await again.send(action("m1", 1, "pass"))
            answer = await asyncio.wait_for(resent, 5)
            assert answer.kind == Kind.ANSWER and answer.sent_ms == first_sent  # one clock
            await again.close()
            await host.close()

    _run(scenario())


def test_two_referees_share_one_directory(redis_url: str, redis_client: redis.Redis) -> None:
    """Each bot's turns go to the referee that holds it (the directory says which); a
    referee that holds no stream of a bot answers NOT_HERE."""
    names = [f"bot{i}" for i in range(6)]
    tokens = {n: register(redis_client, n) for n in names}
    leaks = LeakChecker()

    async def scenario() -> None:
        async with (
            running_referee(redis_url, referee_id="ref-a") as ref_a,
            running_referee(redis_url, referee_id="ref-b") as ref_b,
        ):
            host = FakeHost(redis_url)
            streams = {}
            for i, name in enumerate(names):
                port = (ref_a if i % 2 == 0 else ref_b).port
                streams[name] = RawBot(port, tokens[name], checker=leaks)
                welcome = await streams[name].connect()
                assert welcome.referee_id == ("ref-a" if i % 2 == 0 else "ref-b")
            pending = [
                await host.send(leaks.turn(name, f"match-{name}", seq, seat=seq % 4))
                for name in names
                for seq in range(1, 4)
            ]
            for i, name in enumerate(names):
                link = host.router.cached(name)
                assert link is not None and link.referee == ("ref-a" if i % 2 == 0 else "ref-b")

            async def answer_all(name: str) -> list[int]:
                seqs = []
                for _ in range(3):
                    req = await streams[name].read_kind("turn")
                    assert req.match_id == f"match-{name}"  # only its own requests
                    seqs.append(req.seq)
                    await streams[name].send(action(req.match_id, req.seq, req.legal_actions[0]))
                return seqs

            results = await asyncio.gather(*(answer_all(n) for n in names))
            assert all(sorted(r) == [1, 2, 3] for r in results)
            answered = await asyncio.wait_for(asyncio.gather(*pending), 5)
            assert {r.kind for r in answered} == {Kind.ANSWER}
            # bot1 is on ref-b: ask ref-a for it anyway
            link_a = host.router.cached("bot0")
            assert link_a is not None
            wrong = link_a.turn("bot1", ("x", 1, 1), b"", 1000.0, now_ms() + 5000.0)
            assert (await asyncio.wait_for(wrong, 5)).kind == Kind.NOT_HERE
            for bot in streams.values():
                await bot.close()
            await host.close()

    _run(scenario())
    assert leaks.checked == 18


def test_hundred_concurrent_streams(redis_url: str, redis_client: redis.Redis) -> None:
    """100 bots, each answering a burst of 5 requests sent at once over one link."""
    count, burst = 100, 5
    names = [f"b{i:03d}" for i in range(count)]
    tokens = {n: register(redis_client, n) for n in names}
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url, max_concurrency=burst) as ref:
            host = FakeHost(redis_url)
            streams = {n: RawBot(ref.port, tokens[n], checker=leaks) for n in names}
            await asyncio.gather(*(s.connect(concurrency=burst) for s in streams.values()))
            pending = [
                await host.send(leaks.turn(name, name, seq))
                for name in names
                for seq in range(burst)
            ]

            async def serve(name: str) -> None:
                for _ in range(burst):
                    req = await streams[name].read_kind("turn", timeout=30)
                    await streams[name].send(action(req.match_id, req.seq, req.legal_actions[-1]))

            await asyncio.gather(*(serve(n) for n in names))
            replies = await asyncio.wait_for(asyncio.gather(*pending), 30)
            assert {r.kind for r in replies} == {Kind.ANSWER}
            assert len(host.router.links) == 1  # one internal stream carried them all
            await asyncio.gather(*(s.close() for s in streams.values()))
            await host.close()

    _run(scenario())
    assert leaks.checked == count * burst


def test_a_bot_that_does_not_read_loses_only_its_stream(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Every write to a bot stream is bounded (an aio write can wait forever); a bot that
    never reads is cut off after the write timeout, its requests come back to the host,
    others play on."""
    sleepy = register(redis_client, "sleepy")
    alice = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url, write_timeout_s=0.5) as ref:
            host = FakeHost(redis_url)
            stuck = RawBot(ref.port, sleepy, options=[("grpc.http2.bdp_probe", 0)])
            await stuck.connect()
            fine = RawBot(ref.port, alice, checker=leaks)
            await fine.connect()
            held = await host.send(leaks.turn("sleepy", "s1", 1, move_ms=60_000))
            big: MatchEndMessage = {
                "type": "match_end",
                "bot": "sleepy",
                "match_id": "s1",
                "attempt": 1,
                "totals": [0],
                "unit": "chips",
                "winners": [0],
                "result": {"padding": "x" * 60_000},
            }
            for _ in range(100):  # ~6 MB the bot never reads: past every flow-control window
                await host.notify(big)
            reply = await asyncio.wait_for(held, 30)
            assert reply.kind == Kind.BOT_LEFT
            pending = await host.send(leaks.turn("alice", "a1", 1))
            await fine.read_kind("turn")
            await fine.send(action("a1", 1, "pass"))
            assert (await asyncio.wait_for(pending, 5)).kind == Kind.ANSWER
            for bot in (stuck, fine):
                await bot.close()
            await host.close()

    _run(scenario())


def test_the_internal_stream_needs_the_cluster_secret(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()
            intruder = FakeHost(redis_url, secret="not-the-cluster-secret-at-all")
            pending = await intruder.send(LeakChecker().turn("alice", "m1", 1))
            from workers.link import LinkLost

            with pytest.raises(LinkLost, match="UNAUTHENTICATED"):
                await asyncio.wait_for(pending, 5)
            await bot.close()
            await intruder.close()

    _run(scenario())


def test_a_draining_referee_hands_held_requests_back(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url, drain_grace_s=0.2) as ref:
            host = FakeHost(redis_url)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            pending = await host.send(leaks.turn("alice", "m1", 1))
            await bot.read_kind("turn")
            stop = asyncio.ensure_future(ref.stop())
            notice = await bot.read_kind("notice")
            assert notice.code == "draining"
            reply = await asyncio.wait_for(pending, 10)
            assert reply.kind == Kind.DRAINED
            await stop
            await bot.close()
            await host.close()

    _run(scenario())


def test_plain_accepted_results_are_dropped_unread_for_streams_that_declined_them(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """``Hello.skip_accepted_results`` (docs/PROTOCOL.md section 4): a Notify the host
    flagged ``accepted`` is dropped without being decoded (here it is not even a message)
    for a stream that declined them; unflagged notifications still arrive, in order; a
    stream that did not decline (an older bot: the field unset) gets flagged ones too."""
    tokens = {name: register(redis_client, name) for name in ("quiet", "old")}
    accepted = bot_pb2.RefereeMessage(
        result=bot_pb2.ActionResult(
            match_id="m1", attempt=1, seq=4, status=bot_pb2.ActionResult.ACCEPTED
        )
    ).SerializeToString()
    refused = bot_pb2.RefereeMessage(
        result=bot_pb2.ActionResult(
            match_id="m1", attempt=1, seq=5, status=bot_pb2.ActionResult.REFUSED, reason="x"
        )
    ).SerializeToString()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            quiet = RawBot(ref.port, tokens["quiet"])
            await quiet.send(
                bot_pb2.BotMessage(
                    hello=bot_pb2.Hello(
                        protocol_version=1, max_concurrent_matches=1, skip_accepted_results=True
                    )
                )
            )
            assert (await quiet.read()).WhichOneof("msg") == "welcome"
            old = RawBot(ref.port, tokens["old"])
            await old.connect()
            for name in tokens:
                link = await host.router.route(name, now_ms() + 5000.0)
                assert link is not None
                if name == "quiet":  # a referee that decoded it would fail on it
                    link.notify(name, "m1", b"\xff not a RefereeMessage", accepted=True)
                link.notify(name, "m1", accepted, accepted=True)
                link.notify(name, "m1", refused)
            got = await quiet.read()
            assert got.WhichOneof("msg") == "result" and got.result.seq == 5
            for seq in (4, 5):
                result = await old.read_kind("result")
                assert result.seq == seq
            await quiet.close()
            await old.close()
            await host.close()

    _run(scenario())


def test_turns_waiting_together_go_in_one_batch_to_a_stream_that_asked(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """``Hello.batches`` (docs/PROTOCOL.md section 4): turns that wait in a stream's outbox
    together are written as one ``TurnBatch``, in order, each parsing to the request sent
    alone; one ``ActionBatch`` answers them all, each answer counted as if alone. A stream
    that did not ask (an older bot) gets one TurnRequest a message, and an ActionBatch from
    it ends its stream."""
    tokens = {name: register(redis_client, name) for name in ("batcher", "plain")}
    leaks = LeakChecker()

    async def send_together(host: FakeHost, bot: str) -> list[asyncio.Future[Any]]:
        assert await host.router.route(bot, now_ms() + 5000.0) is not None  # cached now
        # routed already: the four reach the link in one loop pass, so the referee gets
        # them in one internal message and queues all four before its writer runs
        turns = [leaks.turn(bot, "m1", seq, seat=seq % 4) for seq in range(1, 5)]
        return list(await asyncio.gather(*(host.send(t) for t in turns)))

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            host = FakeHost(redis_url)
            batcher = RawBot(ref.port, tokens["batcher"], checker=leaks)
            await batcher.send(
                bot_pb2.BotMessage(
                    hello=bot_pb2.Hello(protocol_version=1, max_concurrent_matches=4, batches=True)
                )
            )
            welcome = await batcher.read()
            assert welcome.WhichOneof("msg") == "welcome" and welcome.welcome.batches
            pending = await send_together(host, "batcher")
            message = await batcher.read()
            assert message.WhichOneof("msg") == "turns"
            batch = list(message.turns.turns)
            assert [t.seq for t in batch] == [1, 2, 3, 4]
            for request in batch:
                leaks.check(request)
                assert request.observation.sevens.pot == 4 and request.match_id == "m1"
            await batcher.send(
                bot_pb2.BotMessage(
                    actions=bot_pb2.ActionBatch(
                        actions=[
                            bot_pb2.Action(
                                match_id="m1", attempt=1, seq=t.seq, action=t.legal_actions[0]
                            )
                            for t in batch
                        ]
                    )
                )
            )
            for request, future in zip(batch, pending, strict=True):
                reply = await asyncio.wait_for(future, 5)
                assert reply.kind == Kind.ANSWER and reply.action == request.legal_actions[0]

            plain = RawBot(ref.port, tokens["plain"], checker=leaks)
            assert not (await plain.connect()).batches
            pending = await send_together(host, "plain")
            assert [(await plain.read_kind("turn")).seq for _ in range(4)] == [1, 2, 3, 4]
            await plain.send(
                bot_pb2.BotMessage(
                    actions=bot_pb2.ActionBatch(
                        actions=[bot_pb2.Action(match_id="m1", attempt=1, seq=1, action="pass")]
                    )
                )
            )
            assert await plain.status() == grpc.StatusCode.FAILED_PRECONDITION
            await batcher.close()
            await plain.close()
            await host.close()

    _run(scenario())
    assert leaks.checked == 8
