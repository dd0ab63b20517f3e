"""The relay between bot streams and the Redis mailboxes (DESIGN section 3, referee.mailbox).

Every TurnRequest a test bot reads is checked by a LeakChecker: its hand is the pushed hand
of its seat and no other seat's card appears in it (DESIGN section 8)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import grpc  # type: ignore[import-untyped]
import redis

from arena.v1 import bot_pb2
from referee import keys, mailbox
from tests.gateway.helpers import (
    LeakChecker,
    RawBot,
    action,
    push,
    register,
    running_referee,
    wait_replies,
)


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_turn_answer_stamps_and_think_time(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            turn = leaks.turn("alice", "m1", 3, seat=2)
            push(redis_client, turn)
            request = await bot.read_kind("turn")
            assert (request.match_id, request.attempt, request.seq) == ("m1", 1, 3)
            assert list(request.legal_actions) == turn["legal_actions"]
            assert request.clock.move_ms == 5000 and request.clock.bank_ms == 1000
            assert request.observation.sevens.pot == 4
            sent = await wait_replies(ref.redis, turn["reply_key"], 1)
            assert sent[0]["type"] == "sent"
            await asyncio.sleep(0.05)  # think
            await bot.send(action("m1", 3, turn["legal_actions"][0]))
            replies = await wait_replies(ref.redis, turn["reply_key"], 2)
            assert [r["type"] for r in replies] == ["sent", "answer"]
            answer = replies[1]
            assert answer["type"] == "answer"
            assert answer["action"] == turn["legal_actions"][0]
            assert answer["think_ms"] >= 50.0  # measured from the send stamp
            assert answer["think_ms"] == answer["received_ms"] - answer["sent_ms"]
            assert redis_client.ttl(turn["reply_key"]) > 0
            await bot.close()

    _run(scenario())
    assert leaks.checked == 1


def test_stale_and_duplicate_answers(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            turn = leaks.turn("alice", "m1", 1)
            push(redis_client, turn)
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
            replies = await wait_replies(ref.redis, turn["reply_key"], 2)
            await asyncio.sleep(0.1)
            replies = await wait_replies(ref.redis, turn["reply_key"], 3, timeout=0.2)
            assert [r["type"] for r in replies] == ["sent", "answer"]  # only the first counts
            assert replies[1]["type"] == "answer" and replies[1]["action"] == "pass"
            await bot.close()

    _run(scenario())


def test_acting_for_another_bot(redis_url: str, redis_client: redis.Redis) -> None:
    alice = register(redis_client, "alice")
    mallory = register(redis_client, "mallory")
    leaks = LeakChecker()
    redis_client.set(keys.match_spec("m9"), json.dumps({"match_id": "m9", "seats": ["x", "y"]}))

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            victim = RawBot(ref.port, alice, checker=leaks)
            await victim.connect()
            push(redis_client, leaks.turn("alice", "m1", 1))
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
            replies = await wait_replies(ref.redis, keys.reply("m1", 1, 1), 2)
            assert [r["type"] for r in replies] == ["sent", "answer"]
            for bot in (victim, thief, thief2):
                await bot.close()

    _run(scenario())


def test_expired_requests_are_dropped(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            old = leaks.turn("alice", "m1", 1, expires_in_ms=-1)
            fresh = leaks.turn("alice", "m1", 2)
            push(redis_client, old)
            push(redis_client, fresh)
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            request = await bot.read_kind("turn")
            assert request.seq == 2
            assert redis_client.llen(old["reply_key"]) == 0  # never sent, never stamped
            await bot.close()

    _run(scenario())


def _timed_out(match_id: str, seq: int) -> mailbox.ActionResultMessage:
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


def test_concurrency_slots_and_notifications(redis_url: str, redis_client: redis.Redis) -> None:
    """A bot that declared 1 holds one request at a time; notifications take no slot."""
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=1)
            start: mailbox.MatchStartMessage = {
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
            push(redis_client, start)
            push(redis_client, leaks.turn("alice", "m1", 1))
            push(redis_client, leaks.turn("alice", "m2", 1))
            got_start = await bot.read_kind("match_start")
            assert list(got_start.players) == start["players"]
            assert json.loads(got_start.rules_json) == {"name": "sevens"}
            first = await bot.read_kind("turn")
            assert first.match_id == "m1"
            await asyncio.sleep(0.3)
            assert redis_client.llen(keys.inbox("alice")) == 1  # m2 waits, uncharged
            await bot.send(action("m1", 1, "pass"))
            second = await bot.read_kind("turn")  # the answer freed the slot
            assert second.match_id == "m2"
            deal_end: mailbox.DealEndMessage = {
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
            match_end: mailbox.MatchEndMessage = {
                "type": "match_end",
                "bot": "alice",
                "match_id": "m1",
                "attempt": 1,
                "totals": [-1, -1, 3, -1],
                "unit": "chips",
                "winners": [2],
                "result": {"deals": 1},
            }
            await bot.send(action("m2", 1, "pass"))
            push(redis_client, deal_end)
            push(redis_client, match_end)
            got_deal = await bot.read_kind("deal_end")
            assert got_deal.winner == 2 and list(got_deal.deltas) == [-1, -1, 3, -1]
            got_end = await bot.read_kind("match_end")
            assert list(got_end.winners) == [2] and json.loads(got_end.result_json) == {"deals": 1}
            await bot.close()

    _run(scenario())


def test_timed_out_result_closes_the_request(redis_url: str, redis_client: redis.Redis) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=2)
            push(redis_client, leaks.turn("alice", "m1", 1))
            await bot.read_kind("turn")
            push(redis_client, _timed_out("m1", 1))
            result = await bot.read_kind("result")
            assert result.status == bot_pb2.ActionResult.TIMED_OUT
            assert result.think_ms == 6050 and result.penalty == 1
            await bot.send(action("m1", 1, "7C"))  # too late: the request is closed
            late = await bot.read_kind("result")
            assert late.status == bot_pb2.ActionResult.STALE
            replies = await wait_replies(ref.redis, keys.reply("m1", 1, 1), 2, timeout=0.3)
            assert [r["type"] for r in replies] == ["sent"]
            await bot.close()

    _run(scenario())


def test_a_full_stream_frees_its_slot_when_the_clock_runs_out(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """The worker's timed_out result cannot be popped by a full stream; the clock frees it."""
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=1)
            push(redis_client, leaks.turn("alice", "m1", 1, move_ms=100, bank_ms=0))
            push(redis_client, leaks.turn("alice", "m2", 1))
            await bot.read_kind("turn")
            push(redis_client, _timed_out("m1", 1))  # behind m2: not reachable while full
            second = await bot.read_kind("turn", timeout=5)  # 100 + 50 ms + slack later
            assert second.match_id == "m2"
            await bot.send(action("m2", 1, "pass"))  # frees the slot: the result comes next
            result = await bot.read_kind("result")
            assert result.match_id == "m1" and result.status == bot_pb2.ActionResult.TIMED_OUT
            await bot.close()

    _run(scenario())


def test_disconnect_with_request_in_hand_then_reconnect(
    redis_url: str, redis_client: redis.Redis
) -> None:
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect(concurrency=2)
            push(redis_client, leaks.turn("alice", "m1", 1))
            push(redis_client, leaks.turn("alice", "m2", 1))
            push(redis_client, leaks.turn("alice", "m3", 1))
            a = await bot.read_kind("turn")
            b = await bot.read_kind("turn")
            assert {a.match_id, b.match_id} == {"m1", "m2"}
            first_sent = (await wait_replies(ref.redis, keys.reply("m1", 1, 1), 1))[0]
            await bot.close()  # vanish holding m1 and m2
            await ref.hub.wait_closed(5.0)
            inbox = [json.loads(r) for r in redis_client.lrange(keys.inbox("alice"), 0, -1)]
            assert [m["match_id"] for m in inbox] == ["m1", "m2", "m3"]  # back at the front
            again = RawBot(ref.port, token, checker=leaks)
            await again.connect(concurrency=1)
            resent = await again.read_kind("turn")
            assert (resent.match_id, resent.seq) == ("m1", 1)
            assert resent.clock.move_ms < 5000  # the clock kept running while away
            await again.send(action("m1", 1, "pass"))
            replies = await wait_replies(ref.redis, keys.reply("m1", 1, 1), 2)
            assert [r["type"] for r in replies] == ["sent", "answer"]  # one stamp only
            answer = replies[1]
            assert answer["type"] == "answer" and first_sent["type"] == "sent"
            assert answer["sent_ms"] == first_sent["sent_ms"]  # charged from the first send
            nxt = await again.read_kind("turn")
            assert nxt.match_id == "m2"
            await again.close()

    _run(scenario())


def test_two_referees_share_one_redis(redis_url: str, redis_client: redis.Redis) -> None:
    names = [f"bot{i}" for i in range(6)]
    tokens = {n: register(redis_client, n) for n in names}
    leaks = LeakChecker()

    async def scenario() -> None:
        async with (
            running_referee(redis_url, referee_id="ref-a") as ref_a,
            running_referee(redis_url, referee_id="ref-b") as ref_b,
        ):
            streams = {}
            for i, name in enumerate(names):
                port = (ref_a if i % 2 == 0 else ref_b).port
                streams[name] = RawBot(port, tokens[name], checker=leaks)
                welcome = await streams[name].connect()
                assert welcome.referee_id == ("ref-a" if i % 2 == 0 else "ref-b")
            for name in names:
                for seq in range(1, 4):
                    push(redis_client, leaks.turn(name, f"match-{name}", seq, seat=seq % 4))

            async def answer_all(name: str) -> list[int]:
                seqs = []
                for _ in range(3):
                    req = await streams[name].read_kind("turn")
                    assert req.match_id == f"match-{name}"  # only its own inbox
                    seqs.append(req.seq)
                    await streams[name].send(action(req.match_id, req.seq, req.legal_actions[0]))
                return seqs

            results = await asyncio.gather(*(answer_all(n) for n in names))
            assert all(sorted(r) == [1, 2, 3] for r in results)
            for i, name in enumerate(names):
                replies = await wait_replies(ref_a.redis, keys.reply(f"match-{name}", 1, 1), 2)
                assert replies[1]["referee"] == ("ref-a" if i % 2 == 0 else "ref-b")
            for bot in streams.values():
                await bot.close()

    _run(scenario())
    assert leaks.checked == 18


def test_hundred_concurrent_streams(redis_url: str, redis_client: redis.Redis) -> None:
    """100 bots, each answering a burst of 5 requests pushed at once."""
    count, burst = 100, 5
    names = [f"b{i:03d}" for i in range(count)]
    pipe = redis_client.pipeline()
    tokens = {n: register(redis_client, n) for n in names}
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url, max_concurrency=burst) as ref:
            streams = {n: RawBot(ref.port, tokens[n], checker=leaks) for n in names}
            await asyncio.gather(*(s.connect(concurrency=burst) for s in streams.values()))
            for name in names:
                for seq in range(burst):
                    pipe.rpush(keys.inbox(name), mailbox.encode(leaks.turn(name, name, seq)))
            pipe.execute()

            async def serve(name: str) -> None:
                for _ in range(burst):
                    req = await streams[name].read_kind("turn", timeout=30)
                    await streams[name].send(action(req.match_id, req.seq, req.legal_actions[-1]))

            await asyncio.gather(*(serve(n) for n in names))
            for name in names:
                replies = await wait_replies(ref.redis, keys.reply(name, 1, burst - 1), 2)
                assert [r["type"] for r in replies] == ["sent", "answer"]
            await asyncio.gather(*(s.close() for s in streams.values()))

    _run(scenario())
    assert leaks.checked == count * burst


def test_malformed_and_oversized_inbox_entries_are_dropped(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Bad entries never reach the bot nor stop the relay; the next good request does."""
    token = register(redis_client, "alice")
    leaks = LeakChecker()

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            huge = leaks.turn("alice", "m1", 1)
            huge["observation"]["history"] = [{"seat": 0, "kind": "pass"}] * 20_000
            wrong_seat = leaks.turn("alice", "m1", 2)
            wrong_seat["observation"]["seat"] = 3
            other_bot = leaks.turn("bob", "m1", 3)
            redis_client.rpush(keys.inbox("alice"), "not json", '{"type": "nonsense"}')
            for message in (huge, wrong_seat, other_bot, leaks.turn("alice", "m1", 4)):
                redis_client.rpush(keys.inbox("alice"), mailbox.encode(message))
            bot = RawBot(ref.port, token, checker=leaks)
            await bot.connect()
            request = await bot.read_kind("turn")
            assert request.seq == 4
            for seq in (1, 2, 3):
                assert redis_client.llen(keys.reply("m1", 1, seq)) == 0
            await bot.close()

    _run(scenario())
