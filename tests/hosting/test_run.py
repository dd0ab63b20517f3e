"""Hosted bots run by the bot supervisor on the real sandbox, in seasons of the real
platform (``arena referee --hosted-socket`` + ``arena worker``, embedded Redis).

One platform and one supervisor for the module; each test submits its bots, builds them in
the sandbox and plays a small season. Skipped, with the reason, where no sandbox or no
writable cgroup hierarchy can be had.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from referee import bots
from referee.embedded_redis import EmbeddedRedis
from referee.hosting.archive import pack_folder
from referee.hosting.cgroups import CgroupUnavailable, Hierarchy, open_hierarchy
from referee.hosting.meter import group_name
from referee.hosting.supervisor import RunLimits, Supervisor, read_events
from referee.hosting.versions import VersionStore
from referee.match.spec import TimeControl
from referee.records import load_record
from referee.seasons import store
from referee.seasons.model import SeasonOptions, SeasonSpec
from referee.seasons.versusrun import run_versus, start_versus
from tests.platform_fixtures import running_platform
from tests.polyglot.helpers import node_ready

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


@dataclass
class Hosting:
    conn: redis.Redis
    store: VersionStore
    supervisor: Supervisor
    hierarchy: Hierarchy
    run_dir: Path
    data_dir: Path
    referee_port: int
    referee_pid: int


@pytest.fixture(scope="module")
def hosting(sandbox: None, embedded_redis: EmbeddedRedis) -> Iterator[Hosting]:
    parent = f"arena-run-test-{os.getpid()}"
    try:
        hierarchy = open_hierarchy(parent)
    except CgroupUnavailable as exc:
        pytest.skip(str(exc))
    root = Path(tempfile.mkdtemp(prefix="arena-hosted-"))
    socket = root / "sock" / "referee.sock"
    args = ("--hosted-socket", str(socket), "--hosted-cgroup-parent", parent)
    with contextlib.ExitStack() as stack:
        platform = stack.enter_context(running_platform(embedded_redis.url, referee_args=args))
        conn = platform.conn
        data_dir = root / "data"
        versions = VersionStore(conn, data_dir)
        supervisor = Supervisor(
            conn,
            versions,
            socket,
            root / "run",
            limits=RunLimits(memory_mb=256, pids=32, disk_mb=16),
            hierarchy=hierarchy,
        )
        stop = threading.Event()
        thread = threading.Thread(target=supervisor.run, args=(stop,), daemon=True)
        thread.start()
        stack.callback(hierarchy.cleanup)
        stack.callback(thread.join, 60)
        stack.callback(stop.set)
        yield Hosting(
            conn,
            versions,
            supervisor,
            hierarchy,
            root / "run",
            data_dir,
            int(platform.server.rsplit(":", 1)[1]),
            platform.referee.pid,
        )


def submit(hosting: Hosting, name: str, folder: Path) -> None:
    bots.register(hosting.conn, name)
    info = hosting.store.submit_and_build(name, folder)
    assert info.build == "ok", hosting.store.build_log(name, info.version)


def python_bot(tmp: Path, name: str, prelude: str, choose: str = "") -> Path:
    """A hosted SDK bot whose module runs ``prelude`` first and whose ``choose`` runs
    ``choose`` before it plays the first legal action."""
    folder = tmp / name
    folder.mkdir()
    body = textwrap.indent(textwrap.dedent(choose), "        ") if choose else ""
    (folder / "bot.py").write_text(
        "import json, os, sys, threading, time\n"
        "from arena_sdk.sdk import Bot, Turn, main\n"
        "def report(probe, ok, error=''):\n"
        "    print(json.dumps({'probe': probe, 'ok': ok, 'error': error}), file=sys.stderr,"
        " flush=True)\n"
        + textwrap.dedent(prelude)
        + "\nclass B(Bot):\n    def choose(self, turn: Turn) -> str:\n"
        + body
        + "\n        return turn.legal_actions[0]\n"
        "main(B())\n"
    )
    return folder


def play_season(
    hosting: Hosting,
    name: str,
    names: list[str],
    tc: TimeControl | None = None,
    *,
    deals: int = 1,
    on_ready: Callable[[], None] | None = None,
    game: str = "sevens",
    preset: str = "fan-tan",
    table_size: int = 0,
    seed: int | None = None,
) -> list[dict[str, Any]]:
    """Create a season of ``names`` (the supervisor starts its hosted bots), start it once
    each has a stream (``on_ready`` first), wait for its end; return its seat stats (every
    seat of every committed match, each match committed)."""
    spec = SeasonSpec(
        name=name,
        game=game,
        preset=preset,
        bots=tuple(names),
        table_size=table_size or (len(names) if len(names) <= 4 else 3),
        deals_per_match=deals,
        time_control=tc or TimeControl(move_ms=2000, bank_ms=2000),
        options=SeasonOptions(duplicate=False, rounds=1),
        seed=seed,
    )
    store.create_season(hosting.conn, spec)
    deadline = time.monotonic() + 90
    while store.bots_without_stream(hosting.conn, names):
        assert time.monotonic() < deadline, store.bots_without_stream(hosting.conn, names)
        time.sleep(0.2)
    if on_ready is not None:
        on_ready()
    store.start_season(hosting.conn, name)
    deadline = time.monotonic() + 180
    while store.get_season(hosting.conn, name)["state"] != store.FINISHED:
        assert time.monotonic() < deadline, store.match_states(hosting.conn, name)
        time.sleep(0.2)
    results = store.committed_results(hosting.conn, name)
    total = int(store.get_season(hosting.conn, name)["matches_total"])
    assert results and len(results) == total, (len(results), total)
    return [dict(s) for r in results for s in r["stats"]]


def probes(hosting: Hosting, bot: str) -> dict[str, dict[str, object]]:
    text = (hosting.run_dir / bot / "bot.log").read_text(errors="replace")
    found = {}
    for line in text.splitlines():
        with contextlib.suppress(ValueError):
            data = json.loads(line)
            if isinstance(data, dict) and "probe" in data:
                found[str(data["probe"])] = data
    return found


def archive_of(folder: Path, out: Path) -> Path:
    """``folder`` as the archive an author uploads: a .zip or a .tar.gz by ``out``'s name."""
    if out.suffix == ".zip":
        with zipfile.ZipFile(out, "w") as zipped:
            for path in sorted(folder.rglob("*")):
                zipped.write(path, path.relative_to(folder).as_posix())
        return out
    with open(out, "wb") as stream:
        pack_folder(folder, stream)
    return out


@pytest.mark.parametrize(("game", "preset"), [("sevens", "fan-tan"), ("sedma", "sedma")])
def test_python_node_c_and_shell_archives_play_a_season_of_each_game_family(
    hosting: Hosting, tmp_path: Path, game: str, preset: str
) -> None:
    examples = REPO / "examples" / "hosted"
    uploads = {
        "python": archive_of(examples / "python", tmp_path / "python.zip"),
        "node": archive_of(examples / "node", tmp_path / "node.tar.gz"),
        "c": archive_of(examples / "c", tmp_path / "c.tar.gz"),
        "shell": archive_of(examples / "shell", tmp_path / "shell.tar.gz"),
    }
    names = []
    for language, archive in uploads.items():
        name = f"{game}-{language}"
        bots.register(hosting.conn, name)
        info = hosting.store.submit_and_build(name, archive)
        assert info.build == "ok", hosting.store.build_log(name, info.version)
        names.append(name)
    stats = play_season(hosting, f"family-{game}", names, game=game, preset=preset)
    for name in names:
        mine = [s for s in stats if s["bot"] == name]
        assert sum(int(s["decisions"]) for s in mine) > 0, (name, stats)
        assert all(s["timeouts"] == 0 and not s["autopilot"] for s in mine), (name, stats)
        assert {e["event"] for e in read_events(hosting.conn, name)} == {"started"}


def test_the_repository_grpc_node_bot_plays_a_season_over_the_unix_socket(
    hosting: Hosting, tmp_path: Path
) -> None:
    folder = tmp_path / "node-grpc"
    folder.mkdir()
    for name in ("bot.js", "package.json"):
        (folder / name).write_text((node_ready() / name).read_text())
    bots.register(hosting.conn, "ngrpc")
    info = hosting.store.submit_and_build("ngrpc", archive_of(folder, tmp_path / "n.tar.gz"))
    assert (info.protocol, info.build) == ("grpc", "ok"), hosting.store.build_log("ngrpc", 1)
    submit(hosting, "ngrpc-py", REPO / "examples" / "hosted" / "python")
    submit(hosting, "ngrpc-sh", REPO / "examples" / "hosted" / "shell")
    names = ["ngrpc", "ngrpc-py", "ngrpc-sh"]
    stats = play_season(hosting, "node-grpc", names, deals=2)
    mine = [s for s in stats if s["bot"] == "ngrpc"]
    assert sum(int(s["decisions"]) for s in mine) > 0, stats
    assert all(s["timeouts"] == 0 and not s["autopilot"] for s in stats), stats
    assert {e["event"] for e in read_events(hosting.conn, "ngrpc")} == {"started"}


def test_python_shell_and_c_bots_play_a_season_and_every_escape_fails(
    hosting: Hosting, tmp_path: Path
) -> None:
    secret = hosting.data_dir / "cluster.secret"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("platform-secret")
    other = hosting.data_dir / "hosted" / "hpy"
    hostile = python_bot(
        tmp_path,
        "hostile",
        f"""
        import socket, signal
        def attempt(probe, fn):
            try:
                fn()
                report(probe, True)
            except Exception as exc:
                report(probe, False, repr(exc))
        attempt("tcp_out", lambda: socket.create_connection(("1.1.1.1", 80), timeout=2))
        attempt("tcp_referee", lambda: socket.create_connection(
            ("127.0.0.1", {hosting.referee_port}), timeout=2))
        attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
        attempt("other_bot", lambda: os.listdir({str(other)!r}))
        attempt("data_dir", lambda: open({str(secret)!r}).read())
        attempt("repo", lambda: os.listdir({str(REPO)!r}))
        def env_secret():
            if not any("SECRET" in k or k == "ARENA_ADMIN_TOKEN" for k in os.environ):
                raise LookupError("no platform secret in the environment")
        attempt("env_secret", env_secret)
        attempt("write_code", lambda: open("/bot/evil", "w"))
        attempt("write_usr", lambda: open("/usr/evil", "w"))
        def kill_others():
            pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
            for pid in [1, {hosting.referee_pid}, *pids]:
                if pid != os.getpid():
                    os.kill(pid, signal.SIGKILL)
        attempt("signal", kill_others)
        # and burn CPU all the time: frozen between its turns
        threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()
        """,
    )
    submit(hosting, "hpy", REPO / "examples" / "hosted" / "python")
    submit(hosting, "hsh", REPO / "examples" / "hosted" / "shell")
    submit(hosting, "hc", REPO / "examples" / "hosted" / "c")
    submit(hosting, "hostile", hostile)
    group = hosting.hierarchy.handle(group_name("hostile"))
    at: list[float] = []

    def measure() -> None:
        at[:] = [time.monotonic(), group.cpu_ns() / 1e9]

    stats = play_season(
        hosting, "escape", ["hpy", "hsh", "hc", "hostile"], deals=2, on_ready=measure
    )
    wall_s = time.monotonic() - at[0]
    burned_s = group.cpu_ns() / 1e9 - at[1]

    seen = probes(hosting, "hostile")
    expected = {
        "tcp_out", "tcp_referee", "dns", "other_bot", "data_dir", "repo", "env_secret",
        "write_code", "write_usr", "signal",
    }  # fmt: skip
    assert expected <= set(seen), seen
    assert not [p for p in seen.values() if p["ok"]], seen
    assert all(s["timeouts"] == 0 and not s["autopilot"] for s in stats), stats
    # A burner thawed all the time would use a whole core (its quota) of the season's wall
    # time; frozen between turns it uses its turns' share only.
    assert burned_s < 0.6 * wall_s, (burned_s, wall_s)
    assert {e["event"] for e in read_events(hosting.conn, "hpy")} == {"started"}


MISBEHAVIOUR = {
    "bomb": """
        def bomb():
            hold, release = os.pipe()  # every child waits on it: none ends on its own
            n = 0
            try:
                while n < 1000:
                    if os.fork() == 0:
                        os.close(release)
                        os.read(hold, 1)
                        os._exit(0)
                    n += 1
            except OSError as exc:
                report("fork", False, repr(exc))
            os.close(release)
            for _ in range(n):
                os.wait()
        bomb()
        """,
    "hog": """
        # two processes filling memory they touch: each stays under its own RLIMIT_DATA,
        # together they pass the sandbox's memory limit (the cgroup's)
        hogs = []
        for _ in range(2):
            hog = os.fork()
            if hog == 0:
                hoard = []
                while True:
                    hoard.append(b"x" * (8 << 20))
            hogs.append(hog)
        for hog in hogs:
            os.waitpid(hog, 0)
        """,
    "filler": """
        try:
            with open("/tmp/fill", "wb") as f:
                while True:
                    f.write(b"x" * (1 << 20))
                    f.flush()
        except OSError as exc:
            report("disk", False, repr(exc))
        """,
    "burner": """
        threading.Thread(target=lambda: [None for _ in iter(int, 1)], daemon=True).start()
        """,
}
"""What each misbehaving bot does before it plays as its well-behaved twin (the first legal
action): the same decisions, so the season's results cannot tell them apart."""


def season_view(
    hosting: Hosting, season: str, names: list[str]
) -> tuple[list[tuple[list[int], dict[str, Any]]], list[dict[str, Any]]]:
    """Each match's seats (as positions in ``names``) and result, in play order; and every
    decision of the first bot (the steps of its seats in the match records)."""
    results = sorted(
        store.committed_results(hosting.conn, season), key=lambda r: r["match_id"][-4:]
    )
    steps = []
    for r in results:
        record = load_record(hosting.conn, r["match_id"])
        assert record is not None, r["match_id"]
        mine = {i for i, bot in enumerate(r["seats"]) if bot == names[0]}
        steps += [s for s in record["steps"] if s.get("seat") in mine and "think_ms" in s]
    return [([names.index(b) for b in r["seats"]], r["result"]) for r in results], steps


def test_misbehaving_bots_are_contained_reported_and_cost_their_neighbour_nothing(
    hosting: Hosting, tmp_path: Path
) -> None:
    """The same season (seed, seats, deals) twice: with a fork bomb, a memory hog, a disk
    filler and a CPU burner beside a well-behaved bot, and with their well-behaved twins.
    The neighbour's results are the same, it is never timed out, and its think time per
    decision stays within the bound below of the undisturbed run's."""
    submit(hosting, "calm", REPO / "examples" / "hosted" / "python")
    bad = list(MISBEHAVIOUR)
    for name in bad:
        submit(hosting, name, python_bot(tmp_path, name, MISBEHAVIOUR[name]))
        submit(hosting, f"twin-{name}", python_bot(tmp_path, f"twin-{name}", ""))
    quiet_names = ["calm", *(f"twin-{n}" for n in bad)]
    loud_names = ["calm", *bad]
    seed = 20261204
    play_season(hosting, "undisturbed", quiet_names, table_size=4, seed=seed)
    play_season(hosting, "disturbed", loud_names, table_size=4, seed=seed)
    quiet, quiet_calm = season_view(hosting, "undisturbed", quiet_names)
    loud, loud_calm = season_view(hosting, "disturbed", loud_names)

    assert len(loud) == len(quiet) == 5
    assert loud == quiet  # every match: the same seats, the same result
    assert len(loud_calm) == len(quiet_calm) > 10
    assert not [s for s in loud_calm + quiet_calm if s["timeout"]]
    quiet_ms = statistics.median(s["think_ms"] for s in quiet_calm)
    loud_ms = statistics.median(s["think_ms"] for s in loud_calm)
    # Frozen between their turns (and from their connection to their first turn), the
    # misbehaving bots take CPU only while a turn of theirs is outstanding: the burner's
    # core then is its due, the same as a bot thinking hard, and overlaps the neighbour's
    # turns in other matches. Measured here (2 cores shared, load 7-12, 8 runs): the
    # neighbour's median think time 0.9-4.9 ms undisturbed, 0-4.7 ms beside them, at most
    # 3.8 ms more; without the burner the medians were 0.8-1.9x the undisturbed run's.
    assert loud_ms <= 2 * quiet_ms + 5, (loud_ms, quiet_ms)

    def events(bot: str) -> set[str]:
        return {str(e["event"]) for e in read_events(hosting.conn, bot)}

    assert "pids_limit" in events("bomb"), read_events(hosting.conn, "bomb")
    assert "oom_kill" in events("hog"), read_events(hosting.conn, "hog")
    disk = probes(hosting, "filler").get("disk")
    # refused: a process that ignores SIGXFSZ (Python does) gets EFBIG, the tmpfs ENOSPC;
    # one killed by SIGXFSZ is a disk_limit event
    refused = disk is not None and any(
        why in str(disk["error"]) for why in ("File too large", "No space")
    )
    assert refused or "disk_limit" in events("filler"), (disk, read_events(hosting.conn, "filler"))
    assert events("calm") == {"started"}


def test_on_the_cpu_clock_a_50ms_bot_is_never_timed_out_while_every_core_burns(
    hosting: Hosting, tmp_path: Path
) -> None:
    thinker = python_bot(
        tmp_path,
        "cpu50",
        "",
        """
        t = time.process_time()
        while time.process_time() - t < 0.05:
            pass
        """,
    )
    submit(hosting, "cpu50", thinker)
    submit(hosting, "idle", REPO / "examples" / "hosted" / "python")
    submit(hosting, "idle2", REPO / "examples" / "hosted" / "shell")
    burners = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1)
    ]
    try:
        tc = TimeControl(move_ms=80, bank_ms=0, grace_ms=20, clock="cpu")
        stats = play_season(hosting, "cpuclock", ["cpu50", "idle", "idle2"], tc, deals=2)
    finally:
        for proc in burners:
            proc.kill()
            proc.wait()
    mine = [s for s in stats if s["bot"] == "cpu50"]
    assert mine and sum(int(s["decisions"]) for s in mine) > 5, stats
    assert all(s["timeouts"] == 0 for s in mine), stats


def test_a_new_active_version_replaces_the_running_one_between_matches(hosting: Hosting) -> None:
    example = REPO / "examples" / "hosted" / "python"
    names = ["sw-1", "sw-2", "sw-3"]
    for name in names:
        submit(hosting, name, example)
    spec = SeasonSpec(
        name="switch",
        game="sevens",
        preset="fan-tan",
        bots=tuple(names),
        table_size=3,
        deals_per_match=1,
        options=SeasonOptions(duplicate=False, rounds=1),
    )
    store.create_season(hosting.conn, spec)  # created: its hosted bots are run
    try:
        deadline = time.monotonic() + 60
        while store.bots_without_stream(hosting.conn, names):
            assert time.monotonic() < deadline
            time.sleep(0.2)
        submit_again = hosting.store.submit_and_build("sw-1", example)
        assert submit_again.version == 2 and submit_again.build == "ok"

        def started_v2() -> bool:
            return any(
                e["event"] == "started" and "version 2" in str(e["detail"])
                for e in read_events(hosting.conn, "sw-1")
            )

        while not started_v2():
            assert time.monotonic() < deadline + 30, read_events(hosting.conn, "sw-1")
            time.sleep(0.2)
        events = [str(e["detail"]) for e in read_events(hosting.conn, "sw-1")]
        assert any("for the new active version 2" in e for e in events), events
    finally:
        store.cancel_season(hosting.conn, "switch")


def test_a_version_test_seats_two_hosted_versions_of_one_bot(hosting: Hosting) -> None:
    """``arena bot test NAME@v2 --against NAME@v1``: each version plays as an entry of its
    own (``NAME.vN``, built from that version's archive), against the same field."""
    submit(hosting, "vt", REPO / "examples" / "hosted" / "shell")
    v2 = hosting.store.submit_and_build("vt", REPO / "examples" / "hosted" / "c")
    assert (v2.version, v2.build) == (2, "ok")
    field = ["vt-py", "vt-node", "vt-perl"]
    for name, example in zip(field, ("python", "node", "perl"), strict=True):
        submit(hosting, name, REPO / "examples" / "hosted" / example)
    info = start_versus(
        hosting.conn, "vt@v2", "vt@v1", field, "sevens", sets=2, deals=1,
        preset="fan-tan", name="vt-hosted", versions=hosting.store.version_entry,
    )  # fmt: skip
    spec = store.get_spec(hosting.conn, info.season)
    assert spec.bots[:2] == ("vt.v2", "vt.v1")
    assert hosting.store.versions("vt.v2")[0].language == "c"
    assert hosting.store.versions("vt.v1")[0].language == "script"
    assert hosting.store.version_entry("vt", 2) == "vt.v2"  # made once, then reused
    out = run_versus(hosting.conn, info.season, timeout_s=120)
    assert len(out.sets) == 2 and out.state == store.FINISHED, out
    stats = [s for r in store.committed_results(hosting.conn, info.season) for s in r["stats"]]
    assert {s["bot"] for s in stats} == {"vt.v2", "vt.v1", *field}
    assert all(s["timeouts"] == 0 and not s["autopilot"] for s in stats), stats
