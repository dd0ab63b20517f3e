"""Submitting and building hosted bots on the real sandbox and a real Redis: every language
builds and its result answers a turn in the sandbox; a bad archive is refused whole; a
failed build keeps the active version."""

from __future__ import annotations

import io
import json
import os
import subprocess
import tarfile
import zipfile
from pathlib import Path

import pytest
import redis

from referee import bots, keys
from referee.hosting.archive import ArchiveLimits, pack_folder
from referee.hosting.errors import ArchiveRefused
from referee.hosting.sandbox import SandboxLimits, sandbox_argv
from referee.hosting.versions import BUILD_LIMITS, RunManifest, VersionStore
from referee.metrics_store import read_counters
from tests.polyglot.helpers import NODE_DIR, ROOT, node_ready

EXAMPLES = ROOT / "examples" / "hosted"

TURN = {
    "type": "turn",
    "match_id": "m-1",
    "attempt": 1,
    "seq": 3,
    "seat": 0,
    "game": "sevens",
    "legal_actions": ["6D", "8D", "8D+9D", "pass"],
    "action_info": [
        {"action": "6D", "kind": "card", "cost": 0, "eliminates": False},
        {"action": "8D", "kind": "card", "cost": 0, "eliminates": False},
        {"action": "8D+9D", "kind": "run", "cost": 0, "eliminates": False},
        {"action": "pass", "kind": "voluntary_pass", "cost": 2, "eliminates": False},
    ],
    "clock": {"move_ms": 1000, "bank_ms": 5000, "grace_ms": 50},
    "budget_ms": 950,
    "season": "",
    "observation": {
        "game": "sevens",
        "seat": 0,
        "num_players": 4,
        "hand": ["6D", "8D", "9D", "KS"],
        "table": {"C": [], "D": ["7D"], "H": [], "S": []},
    },
}
TURN_LINE = json.dumps(TURN, separators=(",", ":")) + "\n"

pytestmark = pytest.mark.usefixtures("sandbox")


@pytest.fixture
def store(redis_client: redis.Redis, data_dir: Path) -> VersionStore:
    return VersionStore(redis_client, data_dir)


def registered(client: redis.Redis, name: str) -> str:
    bots.register(client, name, owner="ada")
    return name


def tar_gz(folder: Path, out: Path) -> Path:
    with open(out, "wb") as stream:
        pack_folder(folder, stream)
    return out


def answer(manifest: RunManifest, line: str = TURN_LINE) -> subprocess.CompletedProcess[str]:
    """Run the built bot as the run side would, feed it one line, and end its input."""
    argv = sandbox_argv(
        manifest.argv,
        workdir=manifest.workdir,
        mounts=manifest.mounts(),
        uid=manifest.uid,
        limits=SandboxLimits(wall_s=30),
        env=manifest.env,
    )
    return subprocess.run(argv, input=line, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    ("folder", "language", "wanted"),
    [
        ("node", "node", "6D"),
        ("c", "c", "6D"),
        ("cpp", "cpp", "8D+9D"),
        ("shell", "script", "8D+9D"),
        ("perl", "script", "8D+9D"),
    ],
)
def test_a_stdio_bot_of_each_language_builds_and_answers_a_turn(
    store: VersionStore,
    redis_client: redis.Redis,
    tmp_path: Path,
    folder: str,
    language: str,
    wanted: str,
) -> None:
    bot = registered(redis_client, f"hosted-{folder}")
    archive = tar_gz(EXAMPLES / folder, tmp_path / f"{folder}.tar.gz")
    info = store.submit_and_build(bot, archive)
    assert (info.language, info.protocol, info.build) == (language, "stdio", "ok"), store.build_log(
        bot, info.version
    )
    assert store.active_version(bot) == 1
    done = answer(store.manifest(bot))
    assert done.returncode == 0 and wanted in done.stdout.split("\n")[0], done


def test_a_python_bot_imports_the_sdk_without_installing_anything(
    store: VersionStore, redis_client: redis.Redis, tmp_path: Path
) -> None:
    bot = registered(redis_client, "hosted-python")
    folder = tmp_path / "py"
    folder.mkdir()
    (folder / "bot.py").write_text((EXAMPLES / "python" / "bot.py").read_text())
    zipped = tmp_path / "py.zip"
    with zipfile.ZipFile(zipped, "w") as archive:
        archive.write(folder / "bot.py", "bot.py")
    info = store.submit_and_build(bot, zipped)
    assert (info.language, info.protocol, info.build) == ("python", "grpc", "ok")
    manifest = store.manifest(bot)
    help_run = RunManifest(**{**manifest.__dict__, "argv": [*manifest.argv, "--help"]})
    done = answer(help_run, "")
    assert done.returncode == 0 and "--server" in done.stdout, done


def test_the_repository_node_bot_finds_its_grpc_modules(
    store: VersionStore, redis_client: redis.Redis, tmp_path: Path
) -> None:
    node_ready()
    bot = registered(redis_client, "hosted-node-grpc")
    folder = tmp_path / "node"
    folder.mkdir()
    for name in ("bot.js", "package.json"):
        (folder / name).write_text((NODE_DIR / name).read_text())
    info = store.submit_and_build(bot, folder)
    assert (info.language, info.protocol, info.build) == ("node", "grpc", "ok")
    done = answer(store.manifest(bot), "")
    # the modules and protos resolved: it stops only at the missing --server
    assert "--server HOST:PORT is required" in done.stderr, done


def test_a_failed_build_keeps_the_active_version_and_shows_the_compiler_error(
    store: VersionStore, redis_client: redis.Redis, tmp_path: Path
) -> None:
    bot = registered(redis_client, "hosted-versions")
    good = tmp_path / "good"
    good.mkdir()
    (good / "bot.c").write_text((EXAMPLES / "c" / "bot.c").read_text())
    assert store.submit_and_build(bot, good).build == "ok"
    v1 = store.manifest(bot)
    running = subprocess.Popen(
        sandbox_argv(
            v1.argv,
            workdir=v1.workdir,
            mounts=v1.mounts(),
            uid=v1.uid,
            limits=SandboxLimits(wall_s=60),
            env=v1.env,
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert running.stdin is not None and running.stdout is not None
        running.stdin.write(TURN_LINE)
        running.stdin.flush()
        assert running.stdout.readline().strip() == "6D"

        broken = tmp_path / "broken"
        broken.mkdir()
        (broken / "bot.c").write_text("int main(void) { return undeclared_name; }\n")
        failed = store.submit_and_build(bot, broken)
        assert failed.build == "failed" and failed.version == 2
        assert "undeclared_name" in failed.summary
        log = store.build_log(bot, 2)
        assert "error:" in log and "undeclared_name" in log, log
        assert store.active_version(bot) == 1
        assert redis_client.hget(keys.bot(bot), "active_version") == "1"
        counters = read_counters(redis_client)["arena_hosted_builds_total"]
        assert counters == {"bot=hosted-versions,kind=failed": 1, "bot=hosted-versions,kind=ok": 1}

        (good / "bot.c").write_text(
            (EXAMPLES / "c" / "bot.c").read_text().replace('"pass"', '"pass" ')
        )
        assert store.submit_and_build(bot, good).build == "ok"
        assert store.active_version(bot) == 3
        assert [v.build for v in store.versions(bot)] == ["ok", "failed", "ok"]
        # the bot already running v1 is not disturbed: its files are as they were
        running.stdin.write(TURN_LINE)
        running.stdin.flush()
        assert running.stdout.readline().strip() == "6D"
        assert store.manifest(bot, 1).build_dir == v1.build_dir and (v1.build_dir / "bot").exists()
    finally:
        running.kill()
        running.wait()


def test_a_build_over_its_wall_time_fails_and_says_so(
    redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    limits = SandboxLimits(**{**BUILD_LIMITS.__dict__, "wall_s": 2})
    store = VersionStore(redis_client, data_dir, build_limits=limits)
    bot = registered(redis_client, "hosted-slow")
    folder = tmp_path / "slow"
    folder.mkdir()
    (folder / "bot.c").write_text("int main(void) { return 0; }\n")
    (folder / "Makefile").write_text("bot:\n\tsleep 30\n")
    info = store.submit_and_build(bot, folder)
    assert info.build == "failed" and "longer than 2 s" in info.summary, info
    assert store.active_version(bot) is None


def test_a_build_output_that_links_outside_is_refused(
    store: VersionStore, redis_client: redis.Redis, tmp_path: Path
) -> None:
    bot = registered(redis_client, "hosted-sneaky")
    folder = tmp_path / "sneaky"
    folder.mkdir()
    (folder / "bot.c").write_text("int main(void) { return 0; }\n")
    (folder / "Makefile").write_text("bot: bot.c\n\tcc -o bot bot.c && ln -s /etc/shadow leak\n")
    info = store.submit_and_build(bot, folder)
    assert info.build == "failed" and "points outside" in info.summary, info
    assert not (store.version_dir(bot, 1) / "build").exists()


# --- refused submissions: a precise message, nothing stored -----------------------------


def _tar(members: list[tuple[tarfile.TarInfo, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for info, data in members:
            info.size = len(data) if info.isfile() else 0
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return buffer.getvalue()


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.mode = 0o644
    return info


BOT_PY = (_member("bot.py"), b"print('pass')\n")


def _zip(names: list[str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name in names:
            archive.writestr(name, "x = 1\n")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("filename", "data", "words"),
    [
        ("slip.zip", _zip(["bot.py", "../../evil.py"]), "'..' would escape the bot's folder"),
        ("abs.zip", _zip(["bot.py", "/etc/cron.d/evil"]), "an absolute path escapes"),
        ("slip.tar.gz", _tar([BOT_PY, (_member("a/../../x"), b"x")]), "'..' would escape"),
        (
            "link.tar.gz",
            _tar([BOT_PY, (_member("data", tarfile.SYMTYPE, "/etc/passwd"), b"")]),
            "symlink 'data' -> '/etc/passwd' points outside",
        ),
        (
            "link2.tar.gz",
            _tar([BOT_PY, (_member("d/up", tarfile.SYMTYPE, "../../x"), b"")]),
            "points outside the bot's folder",
        ),
        (
            "dev.tar.gz",
            _tar([BOT_PY, (_member("null", tarfile.CHRTYPE), b"")]),
            "member 'null' is a device file",
        ),
        (
            "hard.tar.gz",
            _tar([BOT_PY, (_member("h", tarfile.LNKTYPE, "/etc/passwd"), b"")]),
            "is a hard link",
        ),
        (
            "clash.tar.gz",
            _tar([BOT_PY, (_member("lib"), b"x"), (_member("lib/m.py"), b"x")]),
            "member 'lib/m.py' cannot be written",
        ),
        ("dup.tar.gz", _tar([BOT_PY, BOT_PY]), "member 'bot.py' appears twice"),
        ("unknown.zip", _zip(["README.md"]), "unknown language: none of bot.py or main.py"),
        ("bot.rar", b"Rar!", "not an archive this platform takes"),
        ("broken.tar.gz", b"\x1f\x8b not really", "not a readable tar archive"),
    ],
)
def test_a_bad_archive_is_refused_with_a_precise_message_and_nothing_stored(
    store: VersionStore,
    redis_client: redis.Redis,
    data_dir: Path,
    filename: str,
    data: bytes,
    words: str,
) -> None:
    bot = registered(redis_client, "hosted-bad")
    with pytest.raises(ArchiveRefused, match=_escaped(words)):
        store.submit(bot, data=data, filename=filename)
    _nothing_stored(store, redis_client, bot)
    assert not (data_dir / "etc").exists() and not (data_dir.parent / "evil.py").exists()


def _escaped(words: str) -> str:
    import re

    return re.escape(words)


def _nothing_stored(store: VersionStore, client: redis.Redis, bot: str) -> None:
    assert store.versions(bot) == []
    assert client.hget(keys.bot(bot), "last_version") is None
    assert client.hget(keys.bot(bot), "active_version") is None
    folder = store.bot_dir(bot)
    assert not folder.exists() or [p.name for p in folder.iterdir()] == [".lock"]
    assert [p for p in store.root.iterdir() if p.name.startswith(".staging")] == []


def test_too_large_or_too_many_files_is_refused(
    redis_client: redis.Redis, data_dir: Path, tmp_path: Path
) -> None:
    store = VersionStore(
        redis_client, data_dir, archive_limits=ArchiveLimits(archive_bytes=4096, files=5)
    )
    bot = registered(redis_client, "hosted-big")
    big = tmp_path / "big"
    big.mkdir()
    (big / "bot.py").write_text("pass\n")
    (big / "weights.bin").write_bytes(os.urandom(20_000))
    with pytest.raises(ArchiveRefused, match=r"the archive is 0\.0 MiB; at most|MiB is taken"):
        store.submit(bot, big)
    many = tmp_path / "many"
    many.mkdir()
    for i in range(8):
        (many / f"m{i}.py").write_text("pass\n")
    with pytest.raises(ArchiveRefused, match="more than 5 files and folders"):
        store.submit(bot, many)
    _nothing_stored(store, redis_client, bot)


def test_a_folder_with_a_symlink_out_is_refused(
    store: VersionStore, redis_client: redis.Redis, tmp_path: Path
) -> None:
    bot = registered(redis_client, "hosted-folder")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "bot.py").write_text("pass\n")
    (folder / "secrets").symlink_to("/root")
    with pytest.raises(ArchiveRefused, match="symlink 'secrets' -> '/root' points outside"):
        store.submit(bot, folder)
    _nothing_stored(store, redis_client, bot)


def test_a_given_language_without_its_files_is_refused(
    store: VersionStore, redis_client: redis.Redis
) -> None:
    bot = registered(redis_client, "hosted-lang")
    with pytest.raises(ArchiveRefused, match="no cpp bot here: a cpp bot needs"):
        store.submit(bot, EXAMPLES / "python", language="c++")
    with pytest.raises(ArchiveRefused, match="unknown language 'cobol': hosted bots may be"):
        store.submit(bot, EXAMPLES / "python", language="cobol")
    _nothing_stored(store, redis_client, bot)


def test_submitting_for_an_unregistered_bot_is_refused(store: VersionStore) -> None:
    from referee.errors import NotFoundError

    with pytest.raises(NotFoundError, match="register it first"):
        store.submit("nobody", EXAMPLES / "python")
