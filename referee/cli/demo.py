"""``arena demo``: a short season on a local platform, start to finish.

Embedded Redis, one referee that runs the matches itself (co-hosted: ``arena referee
--matches``, docs/workers.md "Co-hosted matches"), six SDK bot
processes of three strategies (random, first-legal and the hold-sevens policy) connecting
over gRPC, a ``fan-tan`` season of every 4-table of the six bots (too few for field
duplicate at tables of 4, which the season says; Sedma head-to-head with ``--game sedma``
plays field duplicate), a live progress bar, the final standings, the seed check, and
everything stopped again (unless ``--keep-running``).
"""

from __future__ import annotations

import argparse
import contextlib
import shutil
import signal
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import redis
from rich.console import Console

from referee.cli.common import (
    REDIS_URL_FILE,
    Commands,
    cell,
    redacted_url,
    write_redis_url,
)
from referee.cli.hosted_run_cmd import hosted_socket, make_supervisor
from referee.cli.seasons import console, standings_table, watch_season
from referee.defaults import default_data_dir
from referee.embedded_redis import write_private
from referee.errors import ArenaError
from referee.hosting.sandbox import require_sandbox
from referee.hosting.supervisor import RunLimits
from referee.hosting.versions import VersionStore
from referee.seasons import store
from referee.seasons.model import SeasonSpec
from referee.seasons.platform import Platform
from referee.seasons.verify import verify_season

DEMO_BOTS = (
    ("random-1", "random"),
    ("random-2", "random"),
    ("first-legal-1", "first-legal"),
    ("first-legal-2", "first-legal"),
    ("hold-sevens-1", "hold-sevens"),
    ("hold-sevens-2", "hold-sevens"),
)

DEMO_MATCHES = 16
"""Matches the demo's referee runs at once (co-hosted; the season's window is 6)."""

GAMES: dict[str, dict[str, Any]] = {
    "sevens": {"game": "sevens", "preset": "fan-tan", "table_size": 4, "deals_per_match": 4},
    "sedma": {"game": "sedma", "preset": "sedma", "table_size": 4, "deals_per_match": 4},
}


HOSTED_BOTS = (
    ("py-1", "python"),
    ("node-1", "node"),
    ("sh-1", "shell"),
    ("sh-2", "shell"),
    ("perl-1", "perl"),
    ("c-1", "c"),
)
"""``arena demo --hosted``: the bots submitted from examples/hosted/<language>."""
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "hosted"


def demo_spec(
    game: str, name: str, seed: int | None, bots: tuple[tuple[str, str], ...] = DEMO_BOTS
) -> SeasonSpec:
    return SeasonSpec.from_dict(
        {
            **GAMES[game],
            "name": name,
            "bots": [n for n, _ in bots],
            "seed": seed,
            "time_control": {"move_ms": 2000, "bank_ms": 5000, "grace_ms": 100},
            "options": {"window": 6},
        }
    )


def run_demo(
    game: str = "sevens",
    keep_running: bool = False,
    data_dir: str | None = None,
    seed: int | None = None,
    console: Console | None = None,
    timeout_s: float = 170.0,
    hosted: bool = False,
) -> int:
    """Run the demo; 0 when the season finished and verified. ``hosted``: the bots are the
    hosted examples, submitted, built and run sandboxed (docs/HOSTING.md)."""
    if hosted:
        require_sandbox()  # SandboxUnavailable: one line saying what is missing
    console = console or Console()
    tmp: str | None = None
    if data_dir is None:
        if keep_running:
            data_dir = str(default_data_dir())
        else:
            tmp = data_dir = tempfile.mkdtemp(prefix="arena-demo-")
    started = time.monotonic()
    platform = Platform(data_dir, own_records=tmp is not None)
    stack = contextlib.ExitStack()
    supervising_stop = threading.Event()
    url_file = Path(data_dir) / REDIS_URL_FILE
    token_file = Path(data_dir) / ADMIN_TOKEN_FILE
    try:
        url = platform.start_redis()
        write_redis_url(Path(data_dir), url)
        console.print(
            f"[bold]arena demo[/]: embedded Redis at {redacted_url(url)} (data in {data_dir})"
        )
        socket = hosted_socket(Path(data_dir))
        platform.start_referee(
            matches=DEMO_MATCHES, extra=("--hosted-socket", str(socket)) if hosted else ()
        )
        console.print(
            f"referee on 127.0.0.1:{platform.port} (http {platform.http_port}), "
            f"running up to {DEMO_MATCHES} matches at once itself"
        )
        entrants = HOSTED_BOTS if hosted else DEMO_BOTS
        platform.register_bots([n for n, _ in entrants])
        if not hosted:
            for i, (name, kind) in enumerate(DEMO_BOTS):
                platform.start_bot(name, kind, seed=i + 1)
            platform.wait_bots_connected()
            console.print(
                "6 SDK bots connected over gRPC: " + ", ".join(f"{n} ({k})" for n, k in DEMO_BOTS)
            )
        with platform.client() as conn:
            name = f"demo-{game}-{time.strftime('%H%M%S', time.gmtime())}"
            info = store.create_season(conn, demo_spec(game, name, seed, entrants))
            if hosted:
                supervising = _start_hosted(conn, Path(data_dir), socket, console, supervising_stop)
                stack.callback(supervising.join, 30)
                stack.callback(supervising_stop.set)
                _wait_streams(conn, [n for n, _ in entrants], platform.logs)
            info = store.start_season(conn, name)
            spec = SeasonSpec.from_json(info.spec)
            console.print(
                f"season [bold]{name}[/]: {info.game}/{info.preset}, "
                f"{info.matches_total} matches of {spec.deals_per_match} deals, "
                f"seed sha256 {info.seed_sha256[:16]}…"
            )
            if info.duplicate:
                console.print(f"deals: {info.duplicate}")
            info = watch_season(conn, name, console, top=3, timeout_s=timeout_s)
            if info.state != store.FINISHED:
                raise ArenaError(
                    f"the demo season did not finish in {timeout_s:.0f}s "
                    f"({info.matches_done}/{info.matches_total} matches); logs are in "
                    f"{platform.logs}"
                )
            standings = store.get_standings(conn, name)
            assert standings is not None
            console.print(standings_table(standings))
            report = verify_season(conn, name)
            console.print(
                f"seed {info.seed} revealed; `arena season verify` re-dealt "
                f"{report.deals_checked} deals of {report.matches_checked} matches: "
                + (
                    "[green]all match the published commitment[/]"
                    if report.ok
                    else "[red]FAILED[/]"
                )
            )
            for problem in report.problems:
                console.print(cell(f"  problem: {problem}"))
        console.print(f"demo took {time.monotonic() - started:.1f}s")
        if keep_running:
            write_private(token_file, platform.admin_token + "\n")
            console.print(
                running_note(
                    Path(data_dir), platform.http_port, platform.port, url, name, token_file
                ),
                highlight=False,
            )
            _serve_until_interrupted()
        return 0 if report.ok else 1
    finally:
        stack.close()  # the hosted bots first, while their referee is there
        platform.stop()
        for private in (url_file, token_file):
            if private.exists():
                private.unlink()
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _start_hosted(
    conn: redis.Redis, data_dir: Path, socket: Path, console: Console, stop: threading.Event
) -> threading.Thread:
    """Submit and build each hosted example in the sandbox, then supervise them."""
    store_ = VersionStore(conn, data_dir)
    for bot, language in HOSTED_BOTS:
        info = store_.submit_and_build(bot, EXAMPLES / language)
        if info.build != "ok":
            raise ArenaError(f"the hosted example {language} did not build: {info.summary}")
        console.print(
            f"submitted {bot}: examples/hosted/{language} -> v{info.version} "
            f"({info.language}, {info.protocol}), built in {info.build_seconds:.1f}s"
        )
    supervisor = make_supervisor(conn, data_dir, socket, RunLimits())
    thread = threading.Thread(target=supervisor.run, args=(stop,), daemon=True)
    thread.start()
    return thread


def _wait_streams(conn: redis.Redis, names: list[str], logs: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while missing := store.bots_without_stream(conn, names):
        if time.monotonic() > deadline:
            raise ArenaError(
                f"hosted bots not connected after {timeout:.0f}s: {', '.join(missing)} "
                f"(`arena bot events NAME`; their output is in {logs.parent}/hosted-run/)"
            )
        time.sleep(0.2)


ADMIN_TOKEN_FILE = "admin.token"
"""Where ``arena demo --keep-running`` leaves its referee's League admin token (0600)."""


def running_note(
    data_dir: Path, http_port: int, port: int, url: str, season: str, token_file: Path
) -> str:
    """What ``--keep-running`` prints: where things are, and how to reach them without a
    secret on a command line (argv shows in ``ps``): the Redis URL and the admin token stay
    in 0600 files of the data dir, and the commands find the Redis through the data dir."""
    host = "127.0.0.1"
    where = "" if data_dir == default_data_dir() else f" --data-dir {data_dir}"
    return (
        "\nthe platform keeps running (Ctrl-C stops it):\n"
        f"  standings page  http://{host}:{http_port}/\n"
        f"  metrics         http://{host}:{http_port}/metrics\n"
        f"  referee gRPC    {host}:{port}   admin token in {token_file} (0600)\n"
        f"  redis           {redacted_url(url)}   full URL in {data_dir / REDIS_URL_FILE} "
        "(0600)\n"
        f"  try             arena standings {season}{where}"
    )


def _serve_until_interrupted() -> None:
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.is_set():
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def register(commands: Commands) -> None:
    p = commands.add(
        "demo",
        _demo,
        help="run a short season on a local platform (Redis, referee, workers, six bots)",
    )
    p.add_argument("--game", choices=("sevens", "sedma"), default="sevens")
    p.add_argument(
        "--keep-running",
        action="store_true",
        help="leave the platform up afterwards (Ctrl-C stops it)",
    )
    p.add_argument(
        "--data-dir",
        help="data folder (default: a temporary one; with -k $ARENA_DATA_DIR, else "
        "~/.local/state/arena)",
    )
    p.add_argument("--seed", type=int, default=None, help="season seed (default: random)")
    p.add_argument(
        "--hosted",
        action="store_true",
        help="the six bots are hosted examples (Python, shell, Perl, C), submitted, built and "
        "run sandboxed by the platform (needs bubblewrap and root; docs/HOSTING.md)",
    )


def _demo(args: argparse.Namespace) -> int:
    return run_demo(
        game=args.game,
        keep_running=args.keep_running,
        data_dir=args.data_dir,
        seed=args.seed,
        console=console(),
        hosted=args.hosted,
    )
