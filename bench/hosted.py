"""Hosted bots: the per-decision cost of the sandbox path beside an external bot's, and what
freezing buys on a shared machine (docs/HOSTING.md, "Benchmark").

One embedded Redis and one co-hosting referee (``arena referee --matches 4
--hosted-socket``) as processes; three runs of the same season (sevens ``fan-tan``, 6
bots at tables of 3, ``--deals`` deals per match):

* ``external``: the hosted Python example's strategy as SDK bots in threads of this
  process, over TCP (today's path);
* ``hosted, freezing on``: the same code submitted, built and run by the bot supervisor in
  sandboxes and cgroups, over the referee's Unix socket, frozen between turns; one of the
  six also burns a core in a background thread all the time;
* ``hosted, freezing off``: the same, never frozen.

For each: decisions/s, the referee's CPU per decision (co-hosted: its match host's too),
the bots' sandbox CPU per decision (the burner apart), and the burner's CPU share of the
run's wall time: what a bot thinking on others' time takes from its neighbours. Numbers
measured on a shared, loaded machine are noisy: compare the rows of one run.

    .venv/bin/python bench/hosted.py [--deals 2]

``--per-core 4,8,12,16`` measures instead how many hosted bots this machine serves at a
clock: for each N, N hosted bots (sevens ``fan-tan`` at tables of 4, a balanced schedule
of about 4 matches per bot, N/4 matches in flight, so every bot is in about one match at
a time) each spend ``--think-ms`` of CPU per decision on a wall clock of ``--move-ms``
per move and no bank; half of them also **ponder**: a child process that burns CPU all
the time. Freezing on and off. For each: decisions/s, and per bot, as ratios against the
run's first row (the smallest N, freezing on); timeouts; the mean wall time of a decision
against its CPU time; the referee's CPU per decision.

    .venv/bin/python bench/hosted.py --per-core 4,8,12,16 [--think-ms 10 --move-ms 60]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import redis

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from referee import bots  # noqa: E402
from referee.embedded_redis import EmbeddedRedis  # noqa: E402
from referee.hosting.cgroups import Hierarchy, open_hierarchy  # noqa: E402
from referee.hosting.meter import group_name  # noqa: E402
from referee.hosting.supervisor import RunLimits, Supervisor  # noqa: E402
from referee.hosting.versions import VersionStore  # noqa: E402
from referee.match.spec import TimeControl  # noqa: E402
from referee.procs import start_referee, stop_process  # noqa: E402
from referee.seasons import store  # noqa: E402
from referee.seasons.model import SeasonOptions, SeasonSpec  # noqa: E402
from sample_bots.sdk import Bot, Turn  # noqa: E402

BOTS = 6
PARENT = f"arena-bench-{os.getpid()}"


class FirstFree(Bot):
    """examples/hosted/python's strategy."""

    def choose(self, turn: Turn) -> str:
        for info in turn.action_info:
            if info.cost == 0:
                return info.action
        return turn.legal_actions[0]


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def season(
    conn: redis.Redis,
    name: str,
    names: list[str],
    deals: int,
    *,
    table_size: int = 3,
    tc: TimeControl | None = None,
    rounds: int = 1,
    window: int = 8,
    stats: list[dict[str, Any]] | None = None,
) -> tuple[int, float]:
    """Play it to the end; (decisions, wall seconds from start to finish). ``stats``
    receives every seat's counters."""
    spec = SeasonSpec(
        name=name,
        game="sevens",
        preset="fan-tan",
        bots=tuple(names),
        table_size=table_size,
        deals_per_match=deals,
        time_control=tc or TimeControl(move_ms=2000, bank_ms=5000),
        options=SeasonOptions(
            duplicate=False, rounds=rounds, max_subsets=1, window=window, separate_owners=False
        ),
    )
    store.create_season(conn, spec)
    deadline = time.monotonic() + 120
    while store.bots_without_stream(conn, names):
        if time.monotonic() > deadline:
            raise SystemExit(f"bots never connected: {store.bots_without_stream(conn, names)}")
        time.sleep(0.2)
    started = time.monotonic()
    store.start_season(conn, name)
    while store.season_row(conn, name).state != store.FINISHED:
        time.sleep(0.05)
    wall = time.monotonic() - started
    seats = [s for r in store.committed_results(conn, name) for s in r["stats"]]
    if stats is not None:
        stats.extend(dict(s) for s in seats)
    return sum(s["decisions"] for s in seats), wall


@contextlib.contextmanager
def platform(
    root: Path, freeze: bool, matches: int = 4, tag: str = ""
) -> Iterator[tuple[redis.Redis, int, Path, str]]:
    server = EmbeddedRedis(root / f"redis-{freeze}{tag}")
    server.start()
    conn = redis.Redis.from_url(server.url, decode_responses=True)
    socket = root / f"s{int(freeze)}{tag}" / "referee.sock"
    args = ["--matches", str(matches), "--hosted-socket", str(socket), "--http-port", "0"]
    args += ["--hosted-cgroup-parent", PARENT] + ([] if freeze else ["--no-hosted-freeze"])
    referee, address = start_referee(server.url, *args)
    try:
        yield conn, referee.pid, socket, address
    finally:
        stop_process(referee, 20)
        conn.close()
        server.stop()


def row(label: str, decisions: int, wall: float, ref_cpu: float, bot_cpu: float, burn: str) -> str:
    return (
        f"| {label} | {decisions} | {decisions / wall:.0f} | {ref_cpu / decisions * 1000:.2f} | "
        f"{bot_cpu / max(1, decisions) * 1000:.2f} | {burn} |"
    )


def run_external(root: Path, deals: int) -> str:
    with platform(root, True) as (conn, pid, _socket, server):
        from tests.platform_fixtures import bots_on

        names = [f"ext{i}" for i in range(BOTS)]
        with bots_on(conn, server, {n: FirstFree() for n in names}):
            cpu = proc_cpu_s(pid)
            decisions, wall = season(conn, "ext", names, deals)
            ref = proc_cpu_s(pid) - cpu
    return row("external SDK bots (TCP)", decisions, wall, ref, float("nan"), "n/a")


@contextlib.contextmanager
def supervising(
    conn: redis.Redis,
    versions: VersionStore,
    socket: Path,
    run: Path,
    hierarchy: Hierarchy,
    names: list[str],
    join_s: float,
) -> Iterator[None]:
    """The bot supervisor keeping ``names`` running (in a thread) for the ``with`` block."""
    supervisor = Supervisor(
        conn,
        versions,
        socket,
        run,
        limits=RunLimits(),
        hierarchy=hierarchy,
        bots_to_run=lambda: names,
    )
    stop = threading.Event()
    thread = threading.Thread(target=supervisor.run, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(join_s)


def run_hosted(root: Path, deals: int, freeze: bool, hierarchy: Hierarchy) -> str:
    with platform(root, freeze) as (conn, pid, socket, _server):
        versions = VersionStore(conn, root / f"data{int(freeze)}")
        names = [f"h{i}" for i in range(BOTS)]
        burner = root / "burner"
        if not burner.exists():
            shutil.copytree(ROOT / "examples" / "hosted" / "python", burner)
            code = (burner / "bot.py").read_text()
            code = code.replace(
                'if __name__ == "__main__":',
                "import threading\nthreading.Thread(target=lambda: [0 for _ in iter(int, 1)], "
                'daemon=True).start()\n\nif __name__ == "__main__":',
            )
            (burner / "bot.py").write_text(code)
        for i, name in enumerate(names):
            bots.register(conn, name)
            folder = burner if i == 0 else ROOT / "examples" / "hosted" / "python"
            info = versions.submit_and_build(name, folder)
            assert info.build == "ok", versions.build_log(name, info.version)
        run = root / f"run{int(freeze)}"
        with supervising(conn, versions, socket, run, hierarchy, names, join_s=30):
            groups = [hierarchy.handle(group_name(n)) for n in names]
            deadline = time.monotonic() + 60
            while not all(g.exists() for g in groups) and time.monotonic() < deadline:
                time.sleep(0.1)
            spec_names = names
            cpu = proc_cpu_s(pid)
            bot_cpu = [g.cpu_ns() for g in groups]
            decisions, wall = season(conn, f"hosted{int(freeze)}", spec_names, deals)
            ref = proc_cpu_s(pid) - cpu
            used = [(g.cpu_ns() - b) / 1e9 for g, b in zip(groups, bot_cpu, strict=True)]
    label = f"hosted, freezing {'on' if freeze else 'off'} (Unix socket, sandbox)"
    burn = f"{used[0] / wall:.0%} of a core"
    return row(label, decisions, wall, ref, sum(used[1:]), burn)


THINKER = """
import os, time
from arena_sdk.sdk import Bot, Turn, main

THINK_S = {think_s!r}
if {ponder!r} and os.fork() == 0:  # pondering: a child burning CPU all the time
    while True:
        pass


class Thinker(Bot):
    def choose(self, turn: Turn) -> str:
        start = time.process_time()
        while time.process_time() - start < THINK_S:
            pass
        for info in turn.action_info:
            if info.cost == 0:
                return info.action
        return turn.legal_actions[0]


main(Thinker())
"""


def run_scale(
    root: Path, n: int, freeze: bool, hierarchy: Hierarchy, think_ms: float, move_ms: int
) -> dict[str, float]:
    """N hosted thinkers (every second one pondering) in one season; its measures."""
    tag = f"-{n}"
    tables = max(1, n // 4)
    with platform(root, freeze, matches=tables, tag=tag) as (conn, pid, socket, _server):
        versions = VersionStore(conn, root / f"data{int(freeze)}{tag}")
        names = [f"t{i}" for i in range(n)]
        for i, name in enumerate(names):
            folder = root / f"thinker{i % 2}{tag}"
            if not folder.exists():
                folder.mkdir()
                code = THINKER.format(think_s=think_ms / 1000, ponder=i % 2 == 1)
                (folder / "bot.py").write_text(code)
            bots.register(conn, name)
            info = versions.submit_and_build(name, folder)
            assert info.build == "ok", versions.build_log(name, info.version)
        run = root / f"run{int(freeze)}{tag}"
        with supervising(conn, versions, socket, run, hierarchy, names, join_s=60):
            cpu = proc_cpu_s(pid)
            stats: list[dict[str, Any]] = []
            rounds = 4 if n == 4 else 1  # 4 bots have one table: play it 4 times
            tc = TimeControl(move_ms=move_ms, bank_ms=0, grace_ms=0)
            decisions, wall = season(
                conn, f"scale{n}", names, 1, table_size=4, tc=tc, rounds=rounds,
                window=tables, stats=stats,
            )  # fmt: skip
            ref = proc_cpu_s(pid) - cpu
    return {
        "decisions": decisions,
        "wall": wall,
        "timeouts": sum(int(s["timeouts"]) for s in stats),
        "think_ms": sum(float(s["think_ms_total"]) for s in stats) / max(1, decisions),
        "referee_ms": ref / max(1, decisions) * 1000,
    }


def per_core(root: Path, sizes: list[int], think_ms: float, move_ms: int) -> None:
    hierarchy = open_hierarchy(PARENT)
    print(
        f"# bench/hosted.py --per-core, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; think {think_ms:g} ms CPU "
        f"per decision, clock {move_ms} ms per move, no bank; half the bots ponder"
    )
    print(
        "| hosted bots | freezing | decisions | decisions/s | x first row | per bot x first row "
        "| timeouts | wall ms per decision (CPU {think_ms:g}) | referee CPU ms/decision |".replace(
            "{think_ms:g}", f"{think_ms:g}"
        )
    )
    print("|---|---|---|---|---|---|---|---|---|")
    base: tuple[float, float] | None = None
    try:
        for n in sizes:
            for freeze in (True, False):
                m = run_scale(root, n, freeze, hierarchy, think_ms, move_ms)
                rate = m["decisions"] / m["wall"]
                if base is None:
                    base = (rate, rate / n)
                print(
                    f"| {n} | {'on' if freeze else 'off'} | {m['decisions']:.0f} | {rate:.0f} | "
                    f"{rate / base[0]:.2f} | {rate / n / base[1]:.2f} | "
                    f"{m['timeouts']:.0f} ({m['timeouts'] / max(1, m['decisions']):.1%}) | "
                    f"{m['think_ms']:.1f} | {m['referee_ms']:.2f} |",
                    flush=True,
                )
        print(f"# load at the end {os.getloadavg()[0]:.1f}")
    finally:
        hierarchy.cleanup()
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deals", type=int, default=2)
    parser.add_argument(
        "--per-core", metavar="N,N,...", help="hosted bots per core: these numbers of bots"
    )
    parser.add_argument("--think-ms", type=float, default=10.0)
    parser.add_argument("--move-ms", type=int, default=60)
    args = parser.parse_args()
    os.environ.setdefault("ARENA_CLUSTER_SECRET", "bench-" + "x" * 32)
    root = Path(tempfile.mkdtemp(prefix="arena-bench-hosted-"))
    if args.per_core:
        sizes = [int(n) for n in args.per_core.split(",")]
        per_core(root, sizes, args.think_ms, args.move_ms)
        return
    hierarchy = open_hierarchy(PARENT)
    print(
        f"# bench/hosted.py, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )
    print(
        "| bots | decisions | decisions/s | referee CPU ms/decision | bot CPU ms/decision "
        "| burner's CPU (share of wall) |"
    )
    print("|---|---|---|---|---|---|")
    try:
        for freeze in (True, False):
            print(run_hosted(root, args.deals, freeze, hierarchy), flush=True)
        print(run_external(root, args.deals), flush=True)
    finally:
        hierarchy.cleanup()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
