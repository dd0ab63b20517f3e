"""The League API's SubmitBot and ListBotVersions on a real referee process: the bot's own
token or the admin token, chunks under the message cap, refusals with their status."""

from __future__ import annotations

import io
import os
import secrets
import zipfile
from collections.abc import Iterator
from pathlib import Path

import grpc  # type: ignore[import-untyped]
import pytest
import redis

from arena.v1 import league_pb2, league_pb2_grpc
from referee import bots
from referee.embedded_redis import EmbeddedRedis
from referee.gateway.hosting_api import CHUNK_BYTES
from referee.hosting.archive import pack_folder
from referee.procs import start_referee, stop_process
from tests.polyglot.helpers import ROOT

pytestmark = pytest.mark.usefixtures("sandbox")

ADMIN = secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def league(
    embedded_redis_module: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[league_pb2_grpc.LeagueStub]:
    data_dir = tmp_path_factory.mktemp("hosting-api")
    env = {**os.environ, "ARENA_ADMIN_TOKEN": ADMIN}
    proc, address = start_referee(embedded_redis_module, "--data-dir", str(data_dir), env=env)
    try:
        with grpc.insecure_channel(address) as channel:
            yield league_pb2_grpc.LeagueStub(channel)
    finally:
        stop_process(proc, 15)


@pytest.fixture(scope="module")
def embedded_redis_module(embedded_redis: EmbeddedRedis) -> str:
    """The session's Redis, not emptied between this module's tests (one referee)."""
    return embedded_redis.url


def chunks(name: str, filename: str, data: bytes) -> Iterator[league_pb2.SubmitBotChunk]:
    yield league_pb2.SubmitBotChunk(name=name, filename=filename, data=data[:CHUNK_BYTES])
    for at in range(CHUNK_BYTES, len(data), CHUNK_BYTES):
        yield league_pb2.SubmitBotChunk(data=data[at : at + CHUNK_BYTES])


def tar_of(folder: Path) -> bytes:
    out = io.BytesIO()
    pack_folder(folder, out)
    return out.getvalue()


def auth(token: str) -> list[tuple[str, str]]:
    return [("authorization", f"Bearer {token}")]


def test_an_author_submits_with_the_bots_token_and_reads_the_builds(
    league: league_pb2_grpc.LeagueStub, embedded_redis_module: str, tmp_path: Path
) -> None:
    client = redis.Redis.from_url(embedded_redis_module, decode_responses=True)
    token = bots.register(client, "api-bot", owner="ada")
    other = bots.register(client, "api-other", owner="bob")
    # a C bot padded past one chunk: the archive arrives in pieces
    folder = tmp_path / "c"
    folder.mkdir()
    (folder / "bot.c").write_text((ROOT / "examples/hosted/c/bot.c").read_text())
    (folder / "notes.txt").write_bytes(secrets.token_bytes(3 * CHUNK_BYTES).hex().encode())
    data = tar_of(folder)
    assert len(data) > 2 * CHUNK_BYTES
    built = league.SubmitBot(chunks("api-bot", "bot.tar.gz", data), metadata=auth(token))
    assert (built.version, built.language, built.build, built.active) == (1, "c", "ok", True)
    assert "$ cc -O2" in built.build_log

    broken = io.BytesIO()
    with zipfile.ZipFile(broken, "w") as archive:
        archive.writestr("bot.c", "int main(void) { return missing_thing; }\n")
    failed = league.SubmitBot(chunks("api-bot", "bot.zip", broken.getvalue()), metadata=auth(ADMIN))
    assert failed.build == "failed" and not failed.active
    assert "missing_thing" in failed.summary and "error" in failed.build_log

    listed = league.ListBotVersions(
        league_pb2.BotVersionsRequest(name="api-bot", log_version=1), metadata=auth(token)
    )
    assert listed.active_version == 1
    assert [(v.version, v.build, v.active) for v in listed.versions] == [
        (1, "ok", True),
        (2, "failed", False),
    ]
    assert listed.versions[0].build_log and not listed.versions[1].build_log

    with pytest.raises(grpc.RpcError) as denied:
        league.SubmitBot(chunks("api-bot", "bot.tar.gz", data), metadata=auth(other))
    assert denied.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "only 'api-bot''s own token or the admin token" in denied.value.details()
    with pytest.raises(grpc.RpcError) as anonymous:
        league.ListBotVersions(league_pb2.BotVersionsRequest(name="api-bot"))
    assert anonymous.value.code() == grpc.StatusCode.UNAUTHENTICATED


def test_a_bad_archive_is_refused_over_the_api_and_nothing_stored(
    league: league_pb2_grpc.LeagueStub, embedded_redis_module: str
) -> None:
    client = redis.Redis.from_url(embedded_redis_module, decode_responses=True)
    token = bots.register(client, "api-bad")
    slip = io.BytesIO()
    with zipfile.ZipFile(slip, "w") as archive:
        archive.writestr("bot.py", "print('pass')\n")
        archive.writestr("../../../etc/cron.d/x", "* * * * * root true\n")
    with pytest.raises(grpc.RpcError) as refused:
        league.SubmitBot(chunks("api-bad", "bot.zip", slip.getvalue()), metadata=auth(token))
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "'..' would escape the bot's folder" in refused.value.details()
    listed = league.ListBotVersions(
        league_pb2.BotVersionsRequest(name="api-bad"), metadata=auth(token)
    )
    assert list(listed.versions) == [] and listed.active_version == 0
