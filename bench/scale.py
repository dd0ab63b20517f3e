"""A league of many matches through the commit, storage and standings path, no cards played.

Starts an embedded Redis (AOF on, as ``arena up``), plays ``--templates`` real 4-deal
fan-tan matches once in-process (``MatchRun``, bots answering their first legal action) for
records and result rows of realistic size, then commits ``--matches`` synthetic matches
of one season (random seats among ``--bots`` bots, random finishing orders, deltas and
totals in the template's shape) with the workers' real fenced commit
(``workers.runner.commit``), the record first written to the record store when the
project has one (``referee.records``; the template's compressed bytes, written under the
match's own key), else inline in Redis as before. The season driver
(``referee.seasons.driver.SeasonDriver.step``) counts them as a referee does: it folds
each into the standings tallies, rebuilds the standings and refits the ratings on its
timer. Printed per ``--every`` matches:

* Redis memory per finished match (``used_memory`` over the empty server's, divided);
* record store bytes (and per match);
* commit latency p50 / p99 over the window;
* driver cost per counted result (count + fold + standings, timed refits included);
* a refit of the ratings as the timer runs it, twice: the first also carries the live Elo
  and OpenSkill over the results counted since the driver's last refit ("catch-up"); the
  second is the refit proper (the whole tally log read and parsed, Bradley-Terry and
  ``dup_score`` over every match), in wall and this process's CPU time (the machine is
  shared, so the CPU time is the steadier figure); and with ``--scratch`` one from scratch
  (every result again, the live Elo and OpenSkill included: what a rebuild costs);
* ``arena standings ID`` (in-process, the CLI's own function, table to a pipe) and the
  web league page ``/`` and ``/api/standings/ID`` latency over loopback HTTP.

At the end the kept standings are compared with ``compute_standings`` over every result
(``--check``, on by default up to 20,000 matches: a from-scratch OpenSkill pass over
100,000 matches takes about a minute).

    .venv/bin/python bench/scale.py                  # 100,000 matches
    .venv/bin/python bench/scale.py --matches 200 --every 100     # the suite's smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import io
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import redis

from referee import keys
from referee.embedded_redis import EmbeddedRedis
from referee.match.row import row_text
from referee.match.season_row import Standings
from referee.match.spec import CommittedResult, MatchSpec
from referee.seasons import store, tallies
from referee.seasons.driver import SeasonDriver
from referee.seasons.model import SeasonSpec, seed_sha256
from referee.seasons.standings import standings_rows_equal
from workers.attempts import commit

SEASON = "scale"
CHECK_UP_TO = 20_000


@dataclass
class Template:
    """One real match: its spec, result row and record (and the record's stored bytes)."""

    spec: MatchSpec
    result: CommittedResult
    record: dict[str, Any]
    data: bytes = b""
    digest: str = ""


def play_templates(count: int, deals: int) -> list[Template]:
    """``count`` real fan-tan matches of ``deals`` deals, played in-process."""
    from arena.v1 import internal_pb2
    from referee.games.base import DealSpec
    from referee.games.registry import get_game
    from referee.match.spec import TimeControl
    from workers import metrics
    from workers.runner import MatchRun

    class Link:
        referee = "bench"
        run: MatchRun | None = None

        def turn(self, bot: str, key: Any, payload: bytes, *args: Any) -> asyncio.Future[Any]:
            assert self.run is not None
            future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            future.set_result(
                internal_pb2.Reply(
                    match_id=key[0],
                    attempt=key[1],
                    seq=key[2],
                    kind=internal_pb2.Reply.ANSWER,
                    action=self.run.match.legal_actions()[0],
                    sent_ms=1.0,
                    received_ms=2.0,
                )
            )
            return future

        def notify(self, *args: Any, **kw: Any) -> None:
            pass

        def forget(self, *args: Any) -> None:
            pass

    class Router:
        def __init__(self, link: Link) -> None:
            self.link = link

        def excused(self, bot: str, within_ms: float) -> bool:
            return False

        async def route(self, bot: str, until_ms: float) -> Link:
            return self.link

        def notify(self, *args: Any, **kw: Any) -> None:
            pass

        def forget(self, bot: str) -> None:
            pass

        def avoid(self, *args: Any) -> None:
            pass

    class Host:
        def __init__(self) -> None:
            self.link = Link()
            self.router = Router(self.link)
            self.metrics = metrics.HostMetrics()

    out: list[Template] = []
    for i in range(count):
        spec = MatchSpec(
            match_id=f"{SEASON}-template{i}",
            game="sevens",
            rules=get_game("sevens").preset("fan-tan").to_dict(),
            seats=("a", "b", "c", "d"),
            seed=1000 + i,
            season=SEASON,
            deals=tuple(DealSpec(seed=7000 + 10 * i + d, rotation=d % 4) for d in range(deals)),
            time_control=TimeControl(move_ms=2000, bank_ms=5000, grace_ms=50),
        )
        host = Host()

        async def play(spec: MatchSpec = spec, host: Host = host) -> MatchRun:
            run = MatchRun(host, spec, 1, redeal=False)  # type: ignore[arg-type]
            host.link.run = run
            await run.play()
            return run

        run = asyncio.run(play())
        out.append(Template(spec, run.committed_result(), run.record()))
    return out


def synthetic(
    template: Template, match_id: str, bots: list[str], rng: random.Random
) -> CommittedResult:
    """The template's result row with other seats, finishing orders, deltas and totals."""
    result = json.loads(json.dumps(template.result))
    seats = rng.sample(bots, 4)
    result["match_id"] = match_id
    result["seats"] = seats
    totals = [0, 0, 0, 0]
    for deal in result["result"].get("deals", []):
        order = list(range(4))
        rng.shuffle(order)
        deal["order"] = [[s] for s in order]
        deltas = [rng.randint(-12, 4) for _ in range(3)]
        deltas.append(-sum(deltas))
        rng.shuffle(deltas)
        deal["deltas"] = deltas
        totals = [t + d for t, d in zip(totals, deltas, strict=True)]
    result["result"]["totals"] = totals
    for seat, stats in zip(seats, result["stats"], strict=True):
        stats["bot"] = seat
    result["finished_ms"] = time.time() * 1000
    return result  # type: ignore[no-any-return]


class Records:
    """Where records go: the project's record store when it has one, else inline."""

    def __init__(self, root: Path) -> None:
        self.written = 0
        try:
            records = importlib.import_module("referee.records")
        except ImportError:
            self.records: Any = None
            self.store: Any = None
            return
        self.records = records
        self.store = records.open_store(f"file:{root}")

    @property
    def kind(self) -> str:
        return "inline in Redis" if self.records is None else f"record store {self.store.url}"

    def prepare(self, template: Template) -> None:
        if self.records is not None:
            import hashlib

            template.data = self.records.encode(template.record)
            template.digest = hashlib.sha256(template.data).hexdigest()

    def write(self, template: Template, match_id: str) -> Any:
        """What the commit names: a pointer to the bytes written, or the record itself."""
        if self.records is None:
            return {**template.record, "match_id": match_id}
        key = self.records.record_key(SEASON, match_id, 1, template.digest)
        self.store.put(key, template.data)
        self.written += len(template.data)
        return self.records.RecordRef(self.store.url, key, template.digest, len(template.data))

    def usage(self) -> int:
        """Bytes written to the store (its objects' sizes)."""
        return self.written


def create_season(conn: redis.Redis, bots: list[str], matches: int, deals: int) -> None:
    """A running season of ``matches`` matches, stored as ``arena season create`` would
    (the schedule left empty: the bench commits the matches itself)."""
    spec = SeasonSpec.from_dict(
        {
            "name": SEASON,
            "game": "sevens",
            "preset": "fan-tan",
            "bots": bots,
            "table_size": 4,
            "deals_per_match": deals,
            "seed": 42,
            "options": {"duplicate": False, "rank_by": "score"},
        }
    )
    from referee.games.registry import get_game

    rules = get_game("sevens").preset("fan-tan").to_dict()
    info = {
        "spec": spec.public().to_json(),
        "state": store.RUNNING,
        "game": "sevens",
        "preset": "fan-tan",
        "rules": json.dumps(rules, sort_keys=True, separators=(",", ":")),
        "owners": "{}",
        "seed_sha256": seed_sha256(42),
        "duplicate": "",
        "matches_total": str(matches),
        "matches_done": "0",
        "matches_failed": "0",
        "decisions": "0",
        "created_ms": str(store.now_ms()),
        "started_ms": str(store.now_ms()),
        "finished_ms": "",
    }
    pipe = conn.pipeline(transaction=True)
    pipe.set(store.secret_key(SEASON), "42")
    pipe.set(store.schedule_key(SEASON), "[]")
    pipe.hset(keys.season(SEASON), mapping=info)  # type: ignore[arg-type]
    pipe.zadd(keys.SEASONS, {SEASON: store.now_ms()})
    pipe.execute()


@contextlib.contextmanager
def web_server(redis_url: str) -> Iterator[int]:
    """The referee's web pages on a loopback port, in a process of their own (so their
    work, the league page's charts, does not share this process's interpreter lock)."""
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve-web", redis_url],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield port
    finally:
        proc.terminate()
        proc.wait(30)


def serve_web(redis_url: str) -> None:
    """``--serve-web URL``: serve the pages and print the port; run until terminated."""
    from referee.web.app import HttpServer, WebConfig

    async def serve() -> None:
        server = await HttpServer.start(WebConfig(redis_url=redis_url))
        print(server.port, flush=True)
        await asyncio.Event().wait()

    asyncio.run(serve())


def timed_ms(action: Any, repeat: int = 5) -> float:
    """The median wall time of ``action()`` in ms."""
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        action()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def cli_standings(redis_url: str, *flags: str) -> None:
    from referee.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["standings", SEASON, *flags, "--redis-url", redis_url]) == 0


PAGE_TIMEOUT_S = 60.0


def http_get(port: int, path: str) -> None:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=PAGE_TIMEOUT_S) as r:
        assert r.status == 200
        r.read()


def page_ms(port: int, path: str, repeat: int) -> float:
    """:func:`timed_ms` of a GET, or infinity when one takes over ``PAGE_TIMEOUT_S``."""
    try:
        return timed_ms(lambda: http_get(port, path), repeat)
    except TimeoutError:
        return float("inf")


@dataclass
class Window:
    commits: list[float] = field(default_factory=list)
    driver_s: float = 0.0
    counted: int = 0
    fold_s: float = 0.0  # fold_of + the counting script
    rebuild_s: float = 0.0  # standings from the tallies (no refit)
    rebuilds: int = 0
    refit_s: float = 0.0  # the driver's timed refits
    refits: int = 0


CURRENT = Window()
"""The window the timers below add to."""


def instrument() -> None:
    """Time the standings' parts inside the driver's step (fold and count, rebuild, refit)."""
    from referee.seasons import driver as driver_mod

    count_done, recompute, fold_of = store.count_done, store.recompute_standings, tallies.fold_of

    def timed_count(*a: Any, **kw: Any) -> bool:
        began = time.perf_counter()
        try:
            return count_done(*a, **kw)
        finally:
            CURRENT.fold_s += time.perf_counter() - began

    def timed_fold(*a: Any, **kw: Any) -> tallies.Fold:
        began = time.perf_counter()
        try:
            return fold_of(*a, **kw)
        finally:
            CURRENT.fold_s += time.perf_counter() - began

    def timed_recompute(conn: Any, season_id: str, *, refit: bool = True) -> Standings:
        began = time.perf_counter()
        try:
            return recompute(conn, season_id, refit=refit)
        finally:
            spent = time.perf_counter() - began
            if refit:
                CURRENT.refit_s += spent
                CURRENT.refits += 1
            else:
                CURRENT.rebuild_s += spent
                CURRENT.rebuilds += 1

    store.count_done = timed_count
    store.recompute_standings = timed_recompute
    driver_mod.fold_of = timed_fold  # type: ignore[attr-defined]


def count_only(conn: redis.Redis, result: CommittedResult, bots: list[str], window: Window) -> None:
    """``--standings-only``: what the driver does with a result, without its commit: the
    result row stored, then counted and folded (the records, stream and match keys left
    out)."""
    conn.set(keys.match_result(result["match_id"]), row_text(result))
    began = time.perf_counter()
    fold = tallies.fold_of(result, None, bots)
    assert store.count_done(conn, SEASON, result["match_id"], 1, fold)
    window.driver_s += time.perf_counter() - began
    window.counted += 1


LAST_REFIT = [0.0, 0.0]
"""When the last timed refit ran and how long it took (``--standings-only``)."""


def rebuild_on_timer(conn: redis.Redis, window: Window) -> None:
    """``--standings-only``: the driver's standings step (rebuild; refit on its timer)."""
    from referee.seasons.driver import REFIT_EVERY_S

    began = time.perf_counter()
    refit = began - LAST_REFIT[0] >= max(REFIT_EVERY_S, 5 * LAST_REFIT[1])
    store.recompute_standings(conn, SEASON, refit=refit)
    if refit:
        LAST_REFIT[:] = [began, time.perf_counter() - began]
    window.driver_s += time.perf_counter() - began


def new_window() -> Window:
    global CURRENT
    CURRENT = Window()
    return CURRENT


def drive(driver: SeasonDriver, window: Window) -> None:
    began = time.perf_counter()
    counted = driver.step(block_ms=1)
    window.driver_s += time.perf_counter() - began
    window.counted += counted


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


@dataclass
class Row:
    matches: int
    redis_per_match: float
    store_bytes: int
    commit_p50_ms: float
    commit_p99_ms: float
    driver_us_per_result: float
    fold_us_per_result: float
    rebuild_ms: float
    timer_refits: int
    catchup_ms: float
    refit_ms: float
    refit_cpu_ms: float
    scratch_ms: float
    cli_ms: float
    json_ms: float
    page_ms: float
    api_ms: float


def run(args: argparse.Namespace) -> tuple[list[Row], bool | None]:
    rng = random.Random(args.seed)
    bots = [f"bot-{i:03d}" for i in range(args.bots)]
    with tempfile.TemporaryDirectory(prefix="arena-scale-") as tmp:
        server = EmbeddedRedis(Path(tmp) / "redis")
        server.start()
        try:
            conn = store.connect(server.url)
            raw = redis.Redis.from_url(server.url)
            base = int(raw.info("memory")["used_memory"])
            records = Records(Path(tmp) / "records")
            templates = play_templates(args.templates, args.deals)
            for t in templates:
                records.prepare(t)
            create_season(conn, bots, args.matches, args.deals)
            print(
                f"{args.matches} matches of {args.deals} deals, {args.bots} bots; records "
                f"{records.kind}; template record {len(json.dumps(templates[0].record))} B "
                f"as JSON, stored {len(templates[0].data) or '-'} B; result row "
                f"{len(json.dumps(templates[0].result))} B as JSON, stored "
                f"{len(row_text(templates[0].result))} B",
                flush=True,
            )
            driver = SeasonDriver(conn)
            rows: list[Row] = []
            window = new_window()
            with web_server(server.url) as port:
                store.recompute_standings(conn, SEASON)
                rows.append(measure(args, conn, raw, base, records, port, window, 0))
                print_row(rows[-1], header=True)
                for i in range(args.matches):
                    template = templates[i % len(templates)]
                    match_id = f"{SEASON}-m{i:06d}"
                    result = synthetic(template, match_id, bots, rng)
                    spec = replace(template.spec, match_id=match_id, seats=tuple(result["seats"]))
                    if args.standings_only:
                        count_only(conn, result, bots, window)
                        if (i + 1) % args.batch == 0:
                            rebuild_on_timer(conn, window)
                    else:
                        began = time.perf_counter()
                        record = records.write(template, match_id)
                        assert commit(conn, spec, 1, result, record)
                        window.commits.append((time.perf_counter() - began) * 1000)
                        if (i + 1) % args.batch == 0:
                            drive(driver, window)
                    if (i + 1) % args.every == 0 or i + 1 == args.matches:
                        while window.counted < len(window.commits):
                            drive(driver, window)
                        rows.append(measure(args, conn, raw, base, records, port, window, i + 1))
                        print_row(rows[-1], header=False)
                        window = new_window()
                if args.standings_only:
                    store.finish_if_complete(conn, SEASON)
                while store.season_row(conn, SEASON).state != store.FINISHED:
                    drive(driver, window)
            if not args.standings_only:
                print_breakdown(raw, args.matches)
            same: bool | None = None
            if args.check if args.check is not None else args.matches <= CHECK_UP_TO:
                kept = store.get_standings(conn, SEASON)
                full = store.full_standings(conn, SEASON)
                same = kept is not None and standings_rows_equal(
                    {**kept, "matches_total": 0}, {**full, "matches_total": 0}
                )
                print(f"kept standings == compute_standings over all results: {same}")
            raw.close()
            conn.close()
        finally:
            server.stop()
    return rows, same


def measure(
    args: argparse.Namespace,
    conn: redis.Redis,
    raw: redis.Redis,
    base: int,
    records: Records,
    port: int,
    window: Window,
    done: int,
) -> Row:
    used = int(raw.info("memory")["used_memory"]) - base
    done_or_one = max(1, done)
    spec = store.get_spec(conn, SEASON)
    names = tallies.names_of(
        spec.bots,
        tallies.Tallies.from_hash(
            conn.hgetall(keys.season_tallies(SEASON))  # type: ignore[arg-type]
        ),
    )
    # the first refit carries the live ratings over what came since the driver's last one;
    # the second is the refit proper: the whole tally log read and parsed, Bradley-Terry
    # and dup_score over every match (the live ratings have nothing new to fold)
    catchup_ms = timed_ms(lambda: store.refit_ratings(conn, SEASON, names), 1)
    cpu = time.process_time()
    refit_ms = timed_ms(lambda: store.refit_ratings(conn, SEASON, names), 1)
    refit_cpu_ms = (time.process_time() - cpu) * 1000
    scratch_ms = 0.0
    if args.scratch:
        texts = conn.lrange(keys.season_tally_log(SEASON), 0, -1)
        entries = json.loads("[" + ",".join(texts) + "]")  # type: ignore[arg-type]
        scratch_ms = timed_ms(lambda: tallies.refit(names, entries), 1)
    return Row(
        matches=done,
        redis_per_match=used / done_or_one,
        store_bytes=records.usage(),
        commit_p50_ms=percentile(window.commits, 0.5),
        commit_p99_ms=percentile(window.commits, 0.99),
        driver_us_per_result=window.driver_s / max(1, window.counted) * 1e6,
        fold_us_per_result=window.fold_s / max(1, window.counted) * 1e6,
        rebuild_ms=window.rebuild_s / max(1, window.rebuilds) * 1000,
        timer_refits=window.refits,
        catchup_ms=catchup_ms,
        refit_ms=refit_ms,
        refit_cpu_ms=refit_cpu_ms,
        scratch_ms=scratch_ms,
        cli_ms=timed_ms(lambda: cli_standings(server_url(conn))),
        json_ms=timed_ms(lambda: cli_standings(server_url(conn), "--json")),
        page_ms=page_ms(port, "/", 1 if args.page_once else 5) if args.page else float("nan"),
        api_ms=page_ms(port, f"/api/standings/{SEASON}", 5),
    )


def print_breakdown(raw: redis.Redis, matches: int) -> None:
    """Redis bytes per finished match, by key (``MEMORY USAGE``; shared keys divided)."""
    mid = f"{SEASON}-m{matches - 1:06d}"
    parts = {
        "result row": keys.match_result(mid),
        "record (pointer)": keys.match_record(mid),
        "match state": keys.match_state(mid),
    }
    shared = {
        "standings tally log": keys.season_tally_log(SEASON),
        "counted set": store.counted_key(SEASON),
        "season matches hash": keys.season_matches(SEASON),
        "results stream": keys.RESULTS_STREAM,
        "recent matches": keys.MATCHES_RECENT,
    }
    out = []
    for name, key in parts.items():
        out.append(f"{name} {int(raw.memory_usage(key, samples=0) or 0)}")
    for name, key in shared.items():
        out.append(f"{name} {int(raw.memory_usage(key, samples=0) or 0) / matches:.0f}")
    print("Redis B per match, by key: " + ", ".join(out))


def server_url(conn: redis.Redis) -> str:
    kw = conn.connection_pool.connection_kwargs
    return f"redis://:{kw.get('password') or ''}@{kw['host']}:{kw['port']}/0"


def print_row(row: Row, header: bool) -> None:
    if header:
        print(
            f"{'matches':>8} {'Redis B/match':>13} {'store B':>11} {'commit p50':>10} "
            f"{'p99 ms':>7} {'driver us/res':>13} {'fold us/res':>11} {'rebuild ms':>10} "
            f"{'refits':>6} {'catch-up ms':>11} {'refit ms':>9} {'CPU ms':>7} {'scratch ms':>10} "
            f"{'standings ms':>12} {'--json ms':>9} {'page ms':>8} {'api ms':>7}"
        )
    print(
        f"{row.matches:>8} {row.redis_per_match:>13.0f} {row.store_bytes:>11} "
        f"{row.commit_p50_ms:>10.2f} {row.commit_p99_ms:>7.2f} "
        f"{row.driver_us_per_result:>13.0f} {row.fold_us_per_result:>11.0f} "
        f"{row.rebuild_ms:>10.1f} {row.timer_refits:>6} {row.catchup_ms:>11.0f} "
        f"{row.refit_ms:>9.0f} "
        f"{row.refit_cpu_ms:>7.0f} "
        f"{row.scratch_ms:>10.0f} "
        f"{row.cli_ms:>12.1f} {row.json_ms:>9.1f} {row.page_ms:>8.1f} {row.api_ms:>7.1f}",
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=100_000, help="matches in the season")
    parser.add_argument("--every", type=int, default=10_000, help="print a row every N matches")
    parser.add_argument("--bots", type=int, default=50, help="bots in the league")
    parser.add_argument("--deals", type=int, default=4, help="deals per match")
    parser.add_argument("--templates", type=int, default=8, help="real matches played once")
    parser.add_argument("--batch", type=int, default=200, help="commits between driver steps")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--standings-only",
        action="store_true",
        help="no commit and no record: result rows counted and folded as the driver does "
        "(the standings path alone, fast enough for 100,000 matches on a loaded machine)",
    )
    parser.add_argument(
        "--page-once",
        action="store_true",
        help="time the league page once per row, not five times (its charts are slow)",
    )
    parser.add_argument(
        "--scratch",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also time a refit from scratch (live Elo and OpenSkill over every result)",
    )
    parser.add_argument(
        "--check",
        action=argparse.BooleanOptionalAction,
        default=None,
        help=f"compare with compute_standings at the end (default: up to {CHECK_UP_TO:,})",
    )
    parser.add_argument("--serve-web", metavar="REDIS_URL", help=argparse.SUPPRESS)
    parser.add_argument(
        "--page",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="time the league page / (its charts refit over every result: slow)",
    )
    args = parser.parse_args(argv)
    if args.serve_web:
        serve_web(args.serve_web)
        return 0
    if args.matches < 1 or args.every < 1 or args.bots < 4 or args.batch < 1:
        parser.error("use --matches >= 1, --every >= 1, --bots >= 4 and --batch >= 1")
    instrument()
    _rows, same = run(args)
    return 0 if same is not False else 1


if __name__ == "__main__":
    raise SystemExit(main())
