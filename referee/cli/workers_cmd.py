"""``arena worker``, ``arena replay`` and ``arena match run|status|list``."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import secrets
import sys
import time
from collections.abc import Mapping

import redis

from referee import cluster, queue
from referee.cli import up as up_cmd
from referee.cli.common import (
    Commands,
    add_cluster_secret_option,
    add_redis_options,
    connect,
    data_dir_of,
    fail,
    redacted_url,
    running_or_embedded_redis,
    terminal_safe,
)
from referee.defaults import (
    DEFAULT_CASUAL_MATCHES,
    DEFAULT_GRACE_S,
    DEFAULT_MATCHES,
    DEFAULT_STALE_S,
)
from referee.errors import ConfigError
from referee.games.base import DealSpec
from referee.games.registry import get_game
from referee.match.replay import ReplayMismatch, render_replay, verify_record
from referee.match.spec import MatchSpec, TimeControl, match_deal_seed
from referee.seasons import store
from workers import sizing
from workers.attempts import REVEALED
from workers.health import HealthServer
from workers.pool import WorkerPool

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def register(commands: Commands) -> None:
    p = commands.add(
        "worker", _worker, help="run match hosts in the foreground (N processes x M matches)"
    )
    add_redis_options(p)
    add_host_options(p, referee_runs_matches=False)
    p.add_argument(
        "--health-host", default="127.0.0.1", help="address of the health port (127.0.0.1)"
    )
    p.add_argument(
        "--health-port", type=int, default=0, help="serve /healthz and /readyz here (0 = off)"
    )
    p.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING, ...")

    p = commands.add("replay", _replay, help="print a committed match, re-simulated")
    add_redis_options(p)
    p.add_argument("match_id")
    p.add_argument("--json", action="store_true", help="print the raw record instead")
    p.add_argument(
        "--seat",
        help="a seat number or a bot name: show only that seat's hands (the others' as card "
        "counts) and mark its own decisions with '>'",
    )

    p = commands.add("run", _match_run, group="match", help="enqueue a one-off match")
    add_redis_options(p)
    p.add_argument("--game", required=True, help="sevens or sedma")
    p.add_argument("--preset", required=True, help="rules preset (see `arena presets`)")
    p.add_argument("--bots", required=True, help="bot per seat, comma-separated: a,b,c,d")
    p.add_argument("--seed", type=int, help="match seed (default: random)")
    p.add_argument("--deals", type=int, help="number of deals (default: the rules decide)")
    p.add_argument("--match-id", help="match id (default: run-<random>)")
    p.add_argument("--move-ms", type=int, default=1000)
    p.add_argument("--bank-ms", type=int, default=5000)
    p.add_argument("--grace-ms", type=int, default=50)
    p.add_argument(
        "--queue-ms", type=int, default=30_000, help="max uncharged wait for a busy bot's slot"
    )
    p.add_argument(
        "--absent-ms",
        type=int,
        default=3000,
        help="how long past its clock a bot with no stream is waited for (then: disconnected)",
    )
    p.add_argument("--strikes", type=int, default=3, help="failures in a row before autopilot")
    p.add_argument("--autoplay-forced", action="store_true", help="auto-play forced moves")
    p.add_argument("--wait", action="store_true", help="wait for the result and print it")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits")

    p = commands.add("status", _match_status, group="match", help="a match's state and result")
    add_redis_options(p)
    p.add_argument("match_id")

    p = commands.add("list", _match_list, group="match", help="recent matches and their state")
    add_redis_options(p)
    p.add_argument("--season", help="only this season's matches")
    p.add_argument("--bot", help="only matches this bot plays in")
    p.add_argument("--limit", type=int, default=20)


# --- arena worker ---------------------------------------------------------------------------


def add_host_options(p: argparse.ArgumentParser, referee_runs_matches: bool) -> None:
    """The match-host options of ``arena worker`` and ``arena up`` (``referee_runs_matches``:
    ``arena up``, whose referee is one of the processes). Without ``-n`` / ``--matches``
    both size themselves to the machine (:mod:`workers.sizing`)."""
    p.add_argument(
        "-n",
        "--num-workers",
        type=int,
        default=None,
        help="separate match-host processes beside the referee, which runs matches itself "
        "(default: one per core the rule gives, less the referee's; docs/workers.md "
        '"Sizing to the machine")'
        if referee_runs_matches
        else "match-host processes (default: one per core the rule gives; docs/workers.md "
        '"Sizing to the machine")',
    )
    p.add_argument(
        "--matches",
        type=int,
        default=None,
        help="matches each process runs at once (default: as memory allows, "
        f"{DEFAULT_MATCHES} to {sizing.MAX_MATCHES})",
    )
    p.add_argument(
        "--reserve-cores",
        type=int,
        default=None,
        help="cores left for the bots on this machine when sizing the processes (default: "
        "a quarter of the cores, rounded up; never all)",
    )
    p.add_argument(
        "--casual-matches",
        type=int,
        default=DEFAULT_CASUAL_MATCHES,
        help="casual matches (a person against bots: /play, `arena play`) each process runs "
        f"at once on slots of their own, never the seasons' ({DEFAULT_CASUAL_MATCHES})",
    )
    p.add_argument(
        "--stale-s",
        type=float,
        default=DEFAULT_STALE_S,
        help="re-run a running match whose host has not heartbeaten for this many seconds",
    )
    p.add_argument(
        "--grace-s",
        type=float,
        default=DEFAULT_GRACE_S,
        help="on SIGTERM, seconds running matches get to finish before they are handed back",
    )
    p.add_argument(
        "--link-tls-ca",
        default=os.environ.get("ARENA_LINK_TLS_CA"),
        help="CA certificate (PEM) of referees whose internal port serves TLS (--link-tls)",
    )
    add_cluster_secret_option(p)


def check_casual_matches(value: int) -> None:
    if value < 0:
        raise ConfigError(
            f"--casual-matches {value}: use 0 (this host runs no casual match) or more"
        )


def resolve_sizing(args: argparse.Namespace, referee_runs_matches: bool) -> sizing.Sizing:
    """Fill ``-n`` and ``--matches`` the operator left out from this machine's sizing
    (:mod:`workers.sizing`); the sizing is returned so that the command can say it."""
    try:
        plan = sizing.this_machine(args.reserve_cores)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    if args.matches is None:
        args.matches = plan.matches
    if args.num_workers is None:
        args.num_workers = plan.processes - 1 if referee_runs_matches else plan.processes
    return plan


def make_pool(args: argparse.Namespace, url: str, secret: str) -> WorkerPool:
    """The match-host pool of ``arena worker``/``arena up`` from their options."""
    if args.num_workers < 1:
        raise ConfigError("-n must be at least 1")
    if args.matches < 1:
        raise ConfigError("--matches must be at least 1")
    check_casual_matches(args.casual_matches)
    return WorkerPool(
        url,
        args.num_workers,
        secret=secret,
        matches=args.matches,
        casual_matches=args.casual_matches,
        stale_s=args.stale_s,
        grace_s=args.grace_s,
        level=str(args.log_level).upper(),
        link_tls_ca=args.link_tls_ca,
    )


def _worker(args: argparse.Namespace) -> int:
    logging.basicConfig(level=str(args.log_level).upper(), format=LOG_FORMAT)
    plan = resolve_sizing(args, referee_runs_matches=False)
    secret = cluster.resolve_secret(args.cluster_secret_file, str(data_dir_of(args)))
    with running_or_embedded_redis(args) as url:
        pool = make_pool(args, url, secret)
        up_cmd.install_stop(pool)
        print(
            f"{args.num_workers} match host(s) x {args.matches} matches on "
            f"{redacted_url(url)} (machine: {plan.describe()}); Ctrl-C stops them",
            flush=True,
        )
        with contextlib.ExitStack() as stack:
            if args.health_port:
                try:
                    health = HealthServer(args.health_host, args.health_port, pool.readiness)
                except OSError as exc:  # a taken port: one line, not a traceback
                    raise ConfigError(
                        f"could not serve health on {args.health_host}:{args.health_port}: "
                        f"{exc.strerror or exc}; pick a free --health-port (0 = off)"
                    ) from None
                stack.callback(health.close)
                print(f"health on http://{args.health_host}:{health.port}/readyz", flush=True)
            pool.run()
    return 0


# --- replay and matches ----------------------------------------------------------------


def _replay(args: argparse.Namespace) -> int:
    conn = connect(args)
    record = queue.get_record(conn, args.match_id)
    if record is None:
        status = queue.match_status(conn, args.match_id)
        return fail(
            f"match {args.match_id!r} has no committed record (state: {status['state']}); "
            "see `arena match list`"
        )
    from referee.seasons import embargo

    seal = embargo.seal_of(conn, args.match_id, str(record.get("spec", {}).get("season") or ""))
    if seal.sealed:
        return fail(seal.message())
    if args.json:
        print(json.dumps(record, indent=1))
        return 0
    seats = [str(s) for s in record.get("spec", {}).get("seats", [])]
    seat = None
    if args.seat is not None:
        if args.seat.isdigit() and int(args.seat) < len(seats):
            seat = int(args.seat)
        elif args.seat in seats:
            seat = seats.index(args.seat)
        else:
            listed = ", ".join(f"{i}={bot}" for i, bot in enumerate(seats))
            return fail(
                f"--seat {args.seat!r} is not a seat of {args.match_id}: use one of {listed}"
            )
    print(render_replay(record, seat=seat))
    try:
        verify_record(record)
    except ReplayMismatch as exc:
        return fail(f"the re-simulation does not match the record: {exc}")
    print("replay check: the engine reproduces the recorded result")
    return 0


def build_spec(args: argparse.Namespace) -> MatchSpec:
    """The MatchSpec of ``arena match run`` (raises InvalidRulesError/ConfigError)."""
    game = get_game(args.game)
    rules = game.preset(args.preset)
    bots = tuple(b.strip() for b in args.bots.split(",") if b.strip())
    if len(bots) not in game.player_counts(rules):
        raise ConfigError(
            f"{len(bots)} bots given; {args.game}/{args.preset} seats "
            f"{', '.join(map(str, game.player_counts(rules)))}"
        )
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    deals = None
    if args.deals is not None:
        if args.deals < 1:
            raise ConfigError("--deals must be at least 1")
        deals = tuple(DealSpec(seed=match_deal_seed(seed, i)) for i in range(args.deals))
    return MatchSpec(
        match_id=args.match_id or f"run-{secrets.token_hex(4)}",
        game=args.game,
        rules=rules.to_dict(),
        seats=bots,
        seed=seed,
        deals=deals,
        time_control=TimeControl(
            move_ms=args.move_ms,
            bank_ms=args.bank_ms,
            grace_ms=args.grace_ms,
            queue_ms=args.queue_ms,
            absent_ms=args.absent_ms,
        ),
        strikes=args.strikes,
        autoplay_forced=args.autoplay_forced,
    )


def _print_result(conn: redis.Redis, match_id: str) -> None:
    result = queue.get_result(conn, match_id)
    if result is None:
        return
    res = result["result"]
    print(f"result of {match_id} ({res['unit'].replace('_', ' ')}; winners marked *):")
    for seat, (bot, total) in enumerate(zip(result["seats"], res["totals"], strict=True)):
        st = result["stats"][seat]
        mark = "*" if seat in res["winners"] else " "
        print(
            f" {mark} seat {seat} {bot:<20} {total:>6}   decisions {st['decisions']}"
            f"  timeouts {st['timeouts']}  invalid {st['invalid_actions']}"
            f"  illegal passes {st['illegal_passes']}  fallbacks {st.get('fallbacks', 0)}"
            + ("  AUTOPILOT" if st["autopilot"] else "")
        )


def queue_position(conn: redis.Redis, match_id: str) -> tuple[int, int] | None:
    """``(place, length)`` of the match's job in the work queue (1 = next), or ``None``
    when it is not waiting there."""
    ids = queue.get_queue(conn, queue.queue_name(match_id)).get_job_ids()
    first = queue.job_id(match_id)
    for place, job in enumerate(ids, 1):
        if job == first or job.startswith(f"{first}-retry"):
            return place, len(ids)
    return None


def _progress(conn: redis.Redis, match_id: str, state: str) -> str:
    """What ``match run --wait`` says while it waits: the state, and the queue position."""
    if state == queue.QUEUED:
        position = queue_position(conn, match_id)
        if position is not None:
            place, length = position
            return f"queued, {place - 1} match(es) ahead of it ({length} in the queue)"
    return state


def _match_run(args: argparse.Namespace) -> int:
    spec = build_spec(args)
    conn = connect(args)
    if not queue.enqueue_match(conn, spec):
        return fail(f"match {spec.match_id} is already queued, running or done")
    print(f"enqueued match {spec.match_id} (seed {spec.seed})", flush=True)
    absent = store.bots_without_stream(conn, spec.seats)
    warning = store.absent_bots_warning(
        absent, spec.time_control, spec.strikes, f"match {spec.match_id}"
    )
    if warning:
        print(f"warning: {warning}", file=sys.stderr, flush=True)
    if not args.wait:
        return 0
    deadline = time.monotonic() + args.timeout
    shown = ""
    while time.monotonic() < deadline:
        status = queue.match_status(conn, spec.match_id)
        now = _progress(conn, spec.match_id, status["state"])
        if now != shown:
            print(f"{spec.match_id}: {now}", flush=True)
            shown = now
        if status["state"] == queue.DONE:
            _print_result(conn, spec.match_id)
            return 0
        if status["state"] == queue.FAILED:
            return fail(f"match {spec.match_id} failed: {status.get('error', '?')}")
        time.sleep(0.2)
    return fail(
        f"match {spec.match_id} did not finish within {args.timeout:.0f}s: is a worker "
        "running (`arena worker`)?"
    )


def local_time(ms: str | float) -> str:
    """An epoch-milliseconds stamp as local time (``2026-12-03 15:02:04``)."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ms) / 1000))


def _seconds(ms: float) -> str:
    s = ms / 1000
    return f"{s:.1f} s" if s < 60 else f"{int(s // 60)} min {int(s % 60):02d} s"


_STATUS_SHOWN = frozenset(
    {"match_id", "state", "attempt", "season", "game", "seats", "worker", "error", "retries"}
    | {"queued_ms", "started_ms", "heartbeat_ms", "finished_ms", "failed_ms", REVEALED}
)


def status_lines(status: Mapping[str, str], now_ms: float) -> list[str]:
    """``arena match status`` for people: the state, where it belongs, and its times as
    local time and durations (the runner's bookkeeping fields, ``start:<token>`` and the
    reveal mark, stay out; any other field is listed as it is)."""
    state = status.get("state", "unknown")
    attempt = f" (attempt {status['attempt']})" if status.get("attempt") else ""
    lines = [f"match {status.get('match_id', '?')}: {state}{attempt}"]
    if state == "unknown":
        return [*lines[:1], "  never enqueued here (arena match list shows the recent ones)"]
    where = f"season {status['season']}" if status.get("season") else "a one-off match"
    seats = ", ".join(s for s in status.get("seats", "").split(",") if s)
    lines.append(f"  {where}, {status.get('game') or '?'}" + (f"; seats: {seats}" if seats else ""))
    stamp = {k: float(v) for k, v in status.items() if k.endswith("_ms") and v}
    if "queued_ms" in stamp:
        lines.append(f"  queued    {local_time(stamp['queued_ms'])}")
    if "started_ms" in stamp:
        worker = f" on {status['worker']}" if status.get("worker") else ""
        waited = stamp["started_ms"] - stamp.get("queued_ms", stamp["started_ms"])
        lines.append(
            f"  started   {local_time(stamp['started_ms'])}{worker}"
            + (f", {_seconds(waited)} after it was queued" if waited > 0 else "")
        )
    for key, word in (("finished_ms", "finished "), ("failed_ms", "failed   ")):
        if key in stamp:
            took = stamp[key] - stamp.get("started_ms", stamp[key])
            lines.append(
                f"  {word} {local_time(stamp[key])}"
                + (f", {_seconds(took)} after it started" if took > 0 else "")
            )
    if state == "running" and "heartbeat_ms" in stamp:
        lines.append(f"  last heartbeat {_seconds(max(0.0, now_ms - stamp['heartbeat_ms']))} ago")
    if status.get("retries") not in (None, "", "0"):
        lines.append(f"  retried {status['retries']} time(s)")
    if status.get("error"):
        lines.append(f"  error: {status['error']}")
    for key in sorted(status):
        if key not in _STATUS_SHOWN and not key.startswith("start:"):
            lines.append(f"  {key}: {status[key]}")
    return lines


def _match_status(args: argparse.Namespace) -> int:
    conn = connect(args)
    status = queue.match_status(conn, args.match_id)
    print("\n".join(terminal_safe(line) for line in status_lines(status, time.time() * 1000)))
    _print_result(conn, args.match_id)
    return 0 if status["state"] != "unknown" else 1


def _match_list(args: argparse.Namespace) -> int:
    conn = connect(args)
    if args.bot:  # look further back: only some matches are the bot's
        wanted = [
            m
            for m in queue.list_matches(conn, args.season, max(args.limit * 50, 1000))
            if args.bot in m.get("seats", "").split(",")
        ]
        matches = wanted[: args.limit]
    else:
        matches = queue.list_matches(conn, args.season, args.limit)
    for m in matches:
        print(
            f"{m['match_id']:<32} {m.get('state', '?'):<8} {m.get('game', ''):<7} "
            f"attempt {m.get('attempt', '-'):<3} {m.get('seats', '')}"
            + (f"  error: {m['error']}" if m.get("error") else "")
        )
    return 0
