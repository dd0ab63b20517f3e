"""The gateway's answer checks (``BotSession._on_action`` and the functions
``scripts/mutate.py`` lists as ANSWER_CHECKS in referee/gateway/hub.py and session.py,
docs/gateway.md):
what a bot's ``Action`` that answers no open request of its stream is told, which actions
end the stream, when a turn's clock starts and times out, which stream a notification goes
to. First over a real referee in-process with raw bot streams, then on a ``Hub`` and its
sessions in memory (a co-hosted ``LocalLink`` as the host, the session's outbox as what
the bot would read), with real Redis; found by ``make mutate``, area gateway-answers."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import grpc  # type: ignore[import-untyped]
import pytest
import redis
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from arena.v1 import bot_pb2, internal_pb2
from referee import keys
from referee.gateway.errors import ActingForAnotherBot
from referee.gateway.hub import ANSWERED_MEMORY, TIMEOUT_SLACK_MS, Hub, HubConfig
from referee.gateway.session import BotSession, StreamState
from referee.match.messages import now_ms
from tests.gateway.helpers import RawBot, action, register, running_referee
from workers.link import LocalLink

Kind = internal_pb2.Reply

MAX_ACTION_CHARS = 200  # docs/PROTOCOL.md, status codes: an action of more ends the stream


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_a_stray_answer_in_a_match_the_bot_plays_is_told_stale(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """An answer to no open request, in a match whose spec seats this bot (an answer that
    came too late, or for an older attempt), is told ``STALE`` and the stream lives on; so
    is one for a match whose spec cannot be read. Only a match that does not seat the bot
    is acting for another bot (tests/gateway/test_relay.py)."""
    token = register(redis_client, "alice")
    redis_client.set(
        keys.match_spec("m7"), json.dumps({"match_id": "m7", "seats": ["bob", "alice"]})
    )
    redis_client.set(keys.match_spec("m8"), "[not a spec]")

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()
            for match_id, seq in (("m7", 3), ("m8", 4), ("m7", 5)):
                await bot.send(action(match_id, seq, "7C"))
                result = await bot.read_kind("result")
                assert result.status == bot_pb2.ActionResult.STALE
                assert (result.match_id, result.seq, result.reason) == (match_id, seq, "stale")
            await bot.close()

    _run(scenario())


def test_an_action_of_the_longest_length_is_read_and_a_longer_one_ends_the_stream(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """Pins the action length limit (docs/PROTOCOL.md): 200 characters is still an action
    (here a stray one, told ``STALE``), 201 ends the stream with INVALID_ARGUMENT and a
    message that says the length and the limit; an empty ``match_id`` ends it too, saying
    to echo the TurnRequest's."""
    token = register(redis_client, "alice")
    redis_client.set(keys.match_spec("m7"), json.dumps({"match_id": "m7", "seats": ["alice"]}))

    async def scenario() -> None:
        async with running_referee(redis_url) as ref:
            bot = RawBot(ref.port, token)
            await bot.connect()
            await bot.send(action("m7", 1, "x" * MAX_ACTION_CHARS))
            assert (await bot.read_kind("result")).status == bot_pb2.ActionResult.STALE
            await bot.send(action("m7", 2, "x" * (MAX_ACTION_CHARS + 1)))
            assert await bot.status() == grpc.StatusCode.INVALID_ARGUMENT
            assert await bot.call.details() == (
                "Action.action has 201 characters; an action is at most 200 "
                "(a card '7D', a run '8D+9D', 'pass')"
            )
            empty = RawBot(ref.port, token)
            await empty.connect()
            await empty.send(action("", 1, "7C"))
            assert await empty.status() == grpc.StatusCode.INVALID_ARGUMENT
            assert await empty.call.details() == (
                "Action.match_id is empty: echo the TurnRequest's match_id"
            )
            await bot.close()
            await empty.close()

    _run(scenario())


# --- the checks on a Hub and its sessions, in memory (no gRPC) ---------------------------
# A session whose writer is not running: what it would write to the bot stays in its
# outbox, and ``_start_clock`` stands for the writer sending a held turn.


def _hub(client: redis.asyncio.Redis) -> Hub:
    return Hub(client, HubConfig(referee_id="ref-test"))


def _session(hub: Hub, bot: str = "alice", *, concurrency: int = 1) -> BotSession:
    session = BotSession(hub, bot, context=None, peer="test")
    session.concurrency = concurrency
    session._move(StreamState.OPEN)  # as its Hello would (_start)
    hub.add_session(session)
    return session


def _results(session: BotSession) -> list[Any]:
    """The ActionResults in the session's outbox, in order."""
    return [
        m.result
        for m in session._outbox
        if isinstance(m, bot_pb2.RefereeMessage) and m.WhichOneof("msg") == "result"
    ]


def _told(session: BotSession) -> list[tuple[str, int, int]]:
    """The ActionResults in the session's outbox: (match_id, seq, status)."""
    return [(r.match_id, r.seq, r.status) for r in _results(session)]


def _act(match_id: str, seq: int, text: str = "7C", attempt: int = 1) -> Any:
    return action(match_id, seq, text, attempt).action


def test_an_answer_before_its_turn_was_written_is_stale(redis_url: str) -> None:
    """A turn the session holds but has not yet written to the stream (its send stamp not
    taken) cannot be answered: a bot guessing the next seq is told ``STALE`` and the host
    gets nothing; once written, the same answer is the turn's ``ANSWER``, stamped."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        session = _session(hub)
        reply = link.turn("alice", ("m1", 1, 4), b"turn", 5000.0, now_ms() + 30_000.0)
        request = session.open[("m1", 1, 4)]
        assert request.sent_ms == 0.0
        await session._on_action(_act("m1", 4))
        assert _told(session) == [("m1", 4, bot_pb2.ActionResult.STALE)]
        assert not reply.done() and ("m1", 1, 4) in session.open
        session._start_clock(request, asyncio.get_running_loop())
        await session._on_action(_act("m1", 4, "pass"))
        answer = await asyncio.wait_for(reply, 1)
        assert answer.kind == Kind.ANSWER and answer.action == "pass"
        assert 0 < answer.sent_ms <= answer.received_ms
        assert not session.open
        await client.aclose()

    _run(scenario())


def test_a_stray_answer_while_redis_fails_is_stale_and_the_stream_lives() -> None:
    """An answer to no open request, when the match's spec cannot be read because Redis
    fails, is told ``STALE``: only a spec that does not seat the bot makes it acting for
    another bot (which ends the stream)."""
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    async def scenario() -> None:
        client = redis.asyncio.Redis(
            port=port, socket_connect_timeout=1.0, retry=Retry(NoBackoff(), 0)
        )
        session = _session(_hub(client))
        await session._on_action(_act("m1", 2))  # raises ActingForAnotherBot if judged so
        assert _told(session) == [("m1", 2, bot_pb2.ActionResult.STALE)]
        await client.aclose()

    _run(scenario())


def test_a_session_tells_duplicate_for_its_last_4096_answers(redis_url: str) -> None:
    """A repeat answer is ``DUPLICATE`` for the last ``ANSWERED_MEMORY`` (4096) decisions
    answered on the stream, the newest included; the oldest beyond that is forgotten
    (then ``STALE``: no open request)."""
    assert ANSWERED_MEMORY == 4096

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        session = _session(_hub(client))
        for seq in range(1, ANSWERED_MEMORY + 1):
            session._remember_answered(("m1", 1, seq))
        for seq in (1, ANSWERED_MEMORY):
            await session._on_action(_act("m1", seq))
        session._remember_answered(("m1", 1, ANSWERED_MEMORY + 1))
        for seq in (1, 2, ANSWERED_MEMORY + 1):
            await session._on_action(_act("m1", seq))
        duplicate, stale = bot_pb2.ActionResult.DUPLICATE, bot_pb2.ActionResult.STALE
        assert [(seq, status) for _, seq, status in _told(session)] == [
            (1, duplicate),
            (ANSWERED_MEMORY, duplicate),
            (1, stale),
            (2, duplicate),
            (ANSWERED_MEMORY + 1, duplicate),
        ]
        await client.aclose()

    _run(scenario())


def test_a_notification_goes_to_the_stream_that_holds_a_turn_of_its_match(
    redis_url: str,
) -> None:
    """With two streams of one bot, a match's notification goes to the stream holding a
    turn of that match (the bot reads a match's messages in order on one stream); with
    none holding one, to the bot's first stream; a plain accepted result is dropped only
    for a stream that declined those (``skip_accepted_results``)."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        first, second = _session(hub), _session(hub)
        link.turn("alice", ("m0", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        link.turn("alice", ("m1", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        assert list(first.open) == [("m0", 1, 1)] and list(second.open) == [("m1", 1, 1)]
        second.skip_accepted = True
        hub.notify_bot("alice", "m1", b"m1 end")
        hub.notify_bot("alice", "m9", b"m9 end")
        hub.notify_bot("alice", "m0", b"m0 accepted", accepted=True)
        hub.notify_bot("alice", "m1", b"m1 accepted", accepted=True)

        def notes(session: BotSession) -> list[bytes]:
            return [m for m in session._outbox if isinstance(m, bytes)]

        assert notes(first) == [b"m9 end", b"m0 accepted"]
        assert notes(second) == [b"m1 end"]
        await client.aclose()

    _run(scenario())


def test_what_a_bot_is_told_of_a_stale_a_repeated_and_another_bots_answer(
    redis_url: str, redis_client: redis.Redis
) -> None:
    """The words of the answer checks (docs/PROTOCOL.md, status codes): a ``STALE`` and a
    ``DUPLICATE`` result echo the answer's match, attempt and seq and say what to do; an
    answer to a match that does not seat the bot ends the stream as acting for another
    bot, saying which decision and whose."""
    redis_client.set(keys.match_spec("m9"), json.dumps({"match_id": "m9", "seats": ["x"]}))

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        session = _session(_hub(client))
        await session._on_action(_act("m2", 3, attempt=2))
        session._remember_answered(("m1", 1, 1))
        await session._on_action(_act("m1", 1))
        stale, duplicate = _results(session)
        assert (stale.match_id, stale.attempt, stale.seq) == ("m2", 2, 3)
        assert (stale.status, stale.reason) == (bot_pb2.ActionResult.STALE, "stale")
        assert stale.message == (
            "no open request match m2 attempt 2 seq 3 on this stream: it was answered or "
            "timed out, or belongs to an older attempt; answer only requests you hold, "
            "echoing match_id, attempt and seq"
        )
        assert (duplicate.match_id, duplicate.attempt, duplicate.seq) == ("m1", 1, 1)
        assert duplicate.status == bot_pb2.ActionResult.DUPLICATE
        assert duplicate.reason == "duplicate"
        assert duplicate.message == (
            "match m1 attempt 1 seq 1 was already answered on this stream; the first answer counts"
        )
        with pytest.raises(ActingForAnotherBot) as acting:
            await session._on_action(_act("m9", 5))
        assert str(acting.value) == (
            "match m9 attempt 1 seq 5 is not a decision of bot 'alice': answer only the "
            "TurnRequests sent to you"
        )
        await client.aclose()

    _run(scenario())


def test_a_turn_that_cannot_be_sent_is_answered_at_once(redis_url: str) -> None:
    """A turn for a bot with no stream here is answered ``NOT_HERE`` at once; one waiting
    for a slot expires at its ``expires_ms`` (``EXPIRED``), so at once when that already
    passed (not a second later: a slot freed meanwhile would send it); one that reaches a
    draining referee ``DRAINED`` (the host sends it to the bot's new referee). None is
    held or charged (no send stamp)."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        session = _session(hub)
        link.turn("alice", ("m0", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)  # the slot
        waits = link.turn("alice", ("m4", 1, 1), b"turn", 5000.0, now_ms() + 1_000_000.0)
        (waiting,) = hub.waiting["alice"]
        assert waiting.timer is not None  # due 1000 s from now, at expires_ms
        assert abs(waiting.timer.when() - asyncio.get_running_loop().time() - 1000.0) < 0.5
        absent = link.turn("bob", ("m1", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        expired = link.turn("alice", ("m2", 1, 1), b"turn", 5000.0, now_ms() - 1.0)
        replies = list(await asyncio.wait_for(asyncio.gather(absent, expired), 0.5))
        hub.draining = True
        drained = link.turn("alice", ("m3", 1, 7), b"turn", 5000.0, now_ms() + 30_000.0)
        replies.append(await asyncio.wait_for(drained, 0.5))
        assert [(r.kind, r.sent_ms) for r in replies] == [
            (Kind.NOT_HERE, 0),
            (Kind.EXPIRED, 0),
            (Kind.DRAINED, 0),
        ]
        assert list(session.open) == [("m0", 1, 1)] and list(hub.waiting["alice"]) == [waiting]
        assert not waits.done()
        await client.aclose()

    _run(scenario())


class _Clock:
    """The event loop for ``BotSession._start_clock``, recording each timer it arms."""

    def __init__(self) -> None:
        self.armed: list[tuple[float, Any, tuple[Any, ...]]] = []

    def call_later(self, delay: float, callback: Any, *args: Any) -> asyncio.TimerHandle:
        self.armed.append((delay, callback, args))
        return asyncio.get_running_loop().call_later(delay, callback, *args)


def test_a_turns_clock_starts_at_its_first_send_and_times_out_just_after_the_limit(
    redis_url: str,
) -> None:
    """Pins the send stamp and the TIMEOUT timer (docs/PROTOCOL.md, the clock): a turn's
    clock starts when it is written, or for a turn sent again (``first_sent_ms``) when it
    was first sent, and its ``TIMEOUT`` is armed ``TIMEOUT_SLACK_MS`` (2 ms) after the
    limit counted from that stamp (an answer stamped at the limit is judged in time); a
    turn sent again past its limit times out at once, with its first stamp."""
    assert TIMEOUT_SLACK_MS == 2.0

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        session = _session(hub, concurrency=3)
        clock = _Clock()
        t0 = now_ms()
        fresh = link.turn("alice", ("m1", 1, 1), b"turn", 5000.0, t0 + 30_000.0)
        link.turn("alice", ("m2", 1, 1), b"turn", 5000.0, t0 + 30_000.0, t0 - 1000.0)
        late = link.turn("alice", ("m3", 1, 1), b"turn", 5000.0, t0 + 30_000.0, t0 - 9000.0)
        requests = list(session.open.values())
        for request in requests:
            session._start_clock(request, clock)  # type: ignore[arg-type]
        t1 = now_ms()
        assert t0 <= session.open[("m1", 1, 1)].sent_ms <= t1
        assert session.open[("m2", 1, 1)].sent_ms == t0 - 1000.0
        (d1, cb1, args1), (d2, cb2, args2), (d3, cb3, args3) = clock.armed
        assert abs(d1 - 5.002) < 1e-6  # 5000 ms + the slack, from the stamp just taken
        assert (4002.0 - (t1 - t0)) / 1000.0 - 1e-6 <= d2 <= 4002.0 / 1000.0 + 1e-6
        assert d3 == 0.0
        assert (cb1, cb2, cb3) == (session._time_out,) * 3
        assert [args1, args2, args3] == [(r,) for r in requests]
        assert [r.key for r in requests] == [("m1", 1, 1), ("m2", 1, 1), ("m3", 1, 1)]
        timed_out = await asyncio.wait_for(late, 1)
        assert (timed_out.kind, timed_out.sent_ms) == (Kind.TIMEOUT, t0 - 9000.0)
        assert ("m3", 1, 1) not in session.open and not fresh.done()
        await client.aclose()

    _run(scenario())


def test_a_decision_is_its_bots_while_open_only(redis_url: str, redis_client: redis.Redis) -> None:
    """While alice holds a decision, bob answering it acts for another bot (the stream
    ends), even in a match that seats both; once it is answered (or timed out) it is
    nobody's: bob's answer is then only ``STALE``."""
    redis_client.set(
        keys.match_spec("m1"), json.dumps({"match_id": "m1", "seats": ["alice", "bob"]})
    )

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        alice, bob = _session(hub, "alice", concurrency=2), _session(hub, "bob")
        loop = asyncio.get_running_loop()
        answered = link.turn("alice", ("m1", 1, 1), b"turn", 60.0, now_ms() + 30_000.0)
        timed_out = link.turn("alice", ("m1", 1, 2), b"turn", 60.0, now_ms() + 30_000.0)
        for key in (("m1", 1, 1), ("m1", 1, 2)):
            alice._start_clock(alice.open[key], loop)
            with pytest.raises(ActingForAnotherBot):
                await bob._on_action(_act("m1", key[2]))
        await alice._on_action(_act("m1", 1))
        assert (await asyncio.wait_for(answered, 1)).kind == Kind.ANSWER
        assert (await asyncio.wait_for(timed_out, 1)).kind == Kind.TIMEOUT  # 60 ms
        await bob._on_action(_act("m1", 1))
        await bob._on_action(_act("m1", 2))
        assert _told(bob) == [
            ("m1", 1, bot_pb2.ActionResult.STALE),
            ("m1", 2, bot_pb2.ActionResult.STALE),
        ]
        await client.aclose()

    _run(scenario())


def test_a_stream_that_ends_hands_back_its_turns_written_or_not(redis_url: str) -> None:
    """A stream that ends holding turns hands each back to its host ``BOT_LEFT``: one it
    wrote with its send stamp (the host's clock runs on), one not yet written with none
    (never charged)."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        session = _session(hub, concurrency=2)
        written = link.turn("alice", ("m1", 1, 1), b"turn", 50.0, now_ms() + 30_000.0)
        unwritten = link.turn("alice", ("m2", 1, 1), b"turn", 50.0, now_ms() + 30_000.0)
        request = session.open[("m1", 1, 1)]
        session._start_clock(request, asyncio.get_running_loop())
        await session.close()
        replies = await asyncio.wait_for(asyncio.gather(written, unwritten), 1)
        assert [(r.kind, r.sent_ms) for r in replies] == [
            (Kind.BOT_LEFT, request.sent_ms),
            (Kind.BOT_LEFT, 0.0),
        ]
        assert request.sent_ms > 0 and not session.open and not hub.owner
        await client.aclose()

    _run(scenario())


def test_a_turn_sent_again_on_a_new_link_is_answered_there(redis_url: str) -> None:
    """A host whose link to the referee was lost sends its open turn again on a new link
    (same match, attempt and seq, the first send stamp). The bot may then hold both
    copies, on two streams, and answer both: the answer to the old copy goes nowhere, the
    answer to the new one is the new link's ``ANSWER``, on the first stamp's clock."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        loop = asyncio.get_running_loop()
        old_link, new_link = (LocalLink(hub, lambda _link: None) for _ in range(2))
        first, second = _session(hub), _session(hub)
        lost = old_link.turn("alice", ("m1", 1, 3), b"turn", 5000.0, now_ms() + 30_000.0)
        old_copy = first.open[("m1", 1, 3)]
        first._start_clock(old_copy, loop)
        hub.forget_link(old_link)
        again = new_link.turn(
            "alice", ("m1", 1, 3), b"turn", 5000.0, now_ms() + 30_000.0, old_copy.sent_ms
        )
        second._start_clock(second.open[("m1", 1, 3)], loop)
        await first._on_action(_act("m1", 3, "7C"))
        await second._on_action(_act("m1", 3, "pass"))
        reply = await asyncio.wait_for(again, 1)
        assert (reply.kind, reply.action, reply.sent_ms) == (Kind.ANSWER, "pass", old_copy.sent_ms)
        assert not lost.done() and not first.open and not second.open and not hub.owner
        await client.aclose()

    _run(scenario())


def test_a_turn_sent_again_with_its_clock_restarted_keeps_the_new_clock(
    redis_url: str,
) -> None:
    """A host whose link to a live referee broke sends its open turns again with the
    clock restarted (docs/workers.md: not the bot's fault). When the bot's stream still
    holds the first copy and has a free slot, it holds the new copy under the same key:
    the new copy times out on its own clock, not at the first copy's limit (the first
    copy's timer used to close it, a TIMEOUT charged to the bot 50 ms into a 5 s clock)."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        loop = asyncio.get_running_loop()
        old_link, new_link = (LocalLink(hub, lambda _link: None) for _ in range(2))
        session = _session(hub, concurrency=2)
        old_link.turn("alice", ("m1", 1, 3), b"turn", 50.0, now_ms() + 30_000.0)
        session._start_clock(session.open[("m1", 1, 3)], loop)
        hub.forget_link(old_link)
        again = new_link.turn("alice", ("m1", 1, 3), b"turn", 5000.0, now_ms() + 30_000.0)
        copy = session.open[("m1", 1, 3)]
        session._start_clock(copy, loop)
        await asyncio.sleep(0.2)  # the first copy's limit (50 ms) is long past
        assert not again.done() and session.open[("m1", 1, 3)] is copy
        await session._on_action(_act("m1", 3, "pass"))
        reply = await asyncio.wait_for(again, 1)
        assert (reply.kind, reply.action, reply.sent_ms) == (Kind.ANSWER, "pass", copy.sent_ms)
        await client.aclose()

    _run(scenario())


def test_a_stream_handed_over_takes_no_turn_until_the_bot_speaks_on_it(
    redis_url: str,
) -> None:
    """When a bot opens a new stream, its older stream hands the turns it holds back to
    their hosts (``BOT_LEFT`` with their send stamp: the clock runs on) and takes no new
    turn (it may be dead); once the bot speaks on it again it takes turns, at once."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        old = _session(hub)
        held = link.turn("alice", ("m1", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        request = old.open[("m1", 1, 1)]
        old._start_clock(request, asyncio.get_running_loop())
        new = BotSession(hub, "alice", context=None, peer="test")  # not added yet: _start
        old.hand_over(new)
        reply = await asyncio.wait_for(held, 1)
        assert (reply.kind, reply.sent_ms) == (Kind.BOT_LEFT, request.sent_ms)
        link.turn("alice", ("m2", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        assert not old.open and [r.key for r in hub.waiting["alice"]] == [("m2", 1, 1)]
        old._alive()  # the bot sent a message on the old stream
        assert list(old.open) == [("m2", 1, 1)] and not hub.waiting["alice"]
        await client.aclose()

    _run(scenario())


def test_one_stream_of_a_bot_ending_leaves_its_other_streams_serving(
    redis_url: str,
) -> None:
    """A stream that ends leaves the bot's other streams here serving: the turns waiting
    for the bot stay (not handed back); the bot's last stream ending hands them back
    (``BOT_LEFT``, never sent). A stream that ended before it was added (a refused Hello)
    closes cleanly."""

    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        hub = _hub(client)
        link = LocalLink(hub, lambda _link: None)
        first, second = _session(hub), _session(hub)
        link.turn("alice", ("m1", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        link.turn("alice", ("m2", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        waiting = link.turn("alice", ("m3", 1, 1), b"turn", 5000.0, now_ms() + 30_000.0)
        await first.close()
        assert hub.sessions["alice"] == [second] and not waiting.done()
        await second.close()
        reply = await asyncio.wait_for(waiting, 1)
        assert (reply.kind, reply.sent_ms) == (Kind.BOT_LEFT, 0.0) and "alice" not in hub.sessions
        await BotSession(hub, "bob", context=None, peer="test").close()
        await client.aclose()

    _run(scenario())
