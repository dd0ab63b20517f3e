"""Bot authors install only the SDK: ``scripts/build_sdk.py`` builds a wheel of
``arena_sdk`` and the generated ``arena`` code that requires grpcio and protobuf alone, and a
bot run from that wheel, with nothing of the platform on its path, plays on a real referee.
"""

from __future__ import annotations

import subprocess
import sys
import time
import zipfile
from pathlib import Path

import google.protobuf
import grpc  # type: ignore[import-untyped]
import pytest
import redis

from referee import bots
from referee.procs import start_referee, stop_process
from tests.children import without_tree_path

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

BOT = """
import sys
from arena_sdk.sdk import Bot, Turn, main

class FirstLegal(Bot):
    def choose(self, turn: Turn) -> str:
        return turn.legal_actions[0]

for name in ("referee", "workers", "sample_bots", "redis", "rq", "aiohttp"):
    assert name not in sys.modules, name
main(FirstLegal())
"""


def test_a_bot_installed_from_the_sdk_wheel_alone_connects_to_a_referee(
    tmp_path: Path, redis_url: str, redis_client: redis.Redis
) -> None:
    built = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "build_sdk.py"), str(tmp_path / "dist")],
        check=True,
        capture_output=True,
        text=True,
        timeout=240,
    )
    wheel = Path(built.stdout.strip().splitlines()[-1])
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA")))
        archive.extractall(tmp_path / "site")
    assert {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")} == {
        "arena_sdk",
        "arena",
    }
    requires = [
        line.split(":", 1)[1].strip()
        for line in metadata.decode().splitlines()
        if line.startswith("Requires-Dist:")
    ]
    assert sorted(r.split(">")[0] for r in requires) == ["grpcio", "protobuf"], requires

    # what pip would put on the bot's path: the wheel's files and grpcio/protobuf, no site
    libraries = sorted(
        {
            str(Path(m.__file__ or "").resolve().parents[n])
            for m, n in ((grpc, 1), (google.protobuf, 2))
        }
    )
    (tmp_path / "mybot.py").write_text(BOT)
    launcher = (
        "import runpy, sys\n"
        f"sys.path[:] = [{str(tmp_path / 'site')!r}, *{libraries!r}, *sys.path[1:]]\n"
        "import importlib.util as u\n"
        "assert all(u.find_spec(p) is None for p in ('referee', 'workers', 'sample_bots'))\n"
        f"sys.argv = [{str(tmp_path / 'mybot.py')!r}, *sys.argv[1:]]\n"
        "runpy.run_path(sys.argv[0], run_name='__main__')\n"
    )
    token = bots.register(redis_client, "wheel-bot")
    referee, server = start_referee(redis_url)
    try:
        bot = subprocess.Popen(
            [sys.executable, "-S", "-c", launcher, "--server", server],
            cwd=tmp_path,
            env={**without_tree_path(), "ARENA_TOKEN": token},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while not any(
                b.name == "wheel-bot" and b.connected_streams for b in bots.list_bots(redis_client)
            ):
                assert bot.poll() is None, bot.communicate()[1].decode()[-3000:]
                assert time.monotonic() < deadline, "the bot from the wheel never connected"
                time.sleep(0.2)
        finally:
            stop_process(bot, 10)
    finally:
        stop_process(referee, 15)
