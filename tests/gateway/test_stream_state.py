"""The lifecycle of a bot's stream (referee.gateway.session.StreamState): the moves each
state may make, and what a session in each state takes."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio

from referee.gateway.hub import Hub, HubConfig
from referee.gateway.session import STREAM_MOVES, BotSession, StreamState


def state_of(session: BotSession) -> StreamState:
    return session.state  # (a call, so that each check reads the state anew)


def test_every_state_can_end_and_closed_is_final() -> None:
    assert set(STREAM_MOVES) == set(StreamState)
    assert STREAM_MOVES[StreamState.CLOSED] == frozenset()
    for state in StreamState:
        if state is not StreamState.CLOSED:
            assert StreamState.CLOSED in STREAM_MOVES[state], state
    # a stopping stream never takes turns again; a suspect one does once its bot speaks
    assert StreamState.OPEN not in STREAM_MOVES[StreamState.STOPPING]
    assert StreamState.OPEN in STREAM_MOVES[StreamState.SUSPECT]


def test_a_session_takes_turns_only_while_open(redis_url: str) -> None:
    async def scenario() -> None:
        client = redis.asyncio.Redis.from_url(redis_url)
        try:
            session = BotSession(Hub(client, HubConfig(referee_id="r1")), "ann", None, "peer")
            assert state_of(session) is StreamState.HELLO and not session.has_slot()
            session._move(StreamState.OPEN)
            assert session.has_slot()
            session._move(StreamState.SUSPECT)
            assert not session.has_slot()
            session._alive()  # the bot spoke: open again
            assert session.has_slot()
            session.request_stop(None)
            assert state_of(session) is StreamState.STOPPING and not session.has_slot()
            with pytest.raises(AssertionError, match=r"STOPPING -> StreamState\.OPEN"):
                session._move(StreamState.OPEN)
            await session.close()
            assert state_of(session) is StreamState.CLOSED
            await session.close()  # idempotent
            session.request_stop(None)  # a late stop leaves a closed stream closed
            assert state_of(session) is StreamState.CLOSED
        finally:
            await client.aclose()

    asyncio.run(scenario())
