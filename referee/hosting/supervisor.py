"""The bot supervisor: keeps hosted bots running, each in its sandbox and control group.

For every hosted bot it should run (the active hosted bots of the seasons that are created,
running or paused; or a list given to it) the supervisor:

* makes the bot's control group (:func:`referee.hosting.meter.group_name`, limits from
  :class:`RunLimits`) and starts the built version's run manifest in the sandbox
  (``referee.hosting.sandbox.sandbox_argv``: no network, read-only system, its own user
  id, a private scratch tmpfs), moved into the group before it runs anything;
* reaches the referee only through the referee's Unix socket (``--hosted-socket``), bound
  at :data:`SOCKET_TARGET` in the sandbox: a ``grpc`` bot dials ``unix:`` there itself
  (``$ARENA_SERVER``); a ``stdio`` bot is spoken for by the bridge (``arena bridge``),
  which runs outside the sandbox and talks JSON lines with it;
* hands the bot its token without any command line: a ``grpc`` bot's token is a file
  readable by its user id only, bound at :data:`TOKEN_TARGET`, which a one-line shell
  reads into ``$ARENA_TOKEN`` inside the sandbox; the bridge of a ``stdio`` bot gets it in
  its own environment (the sandbox starts with an empty one). The token is a second one,
  of the hosted run only (``referee.bots.hosted_token``): the author's stays valid;
* restarts a bot that exited with backoff (:data:`BACKOFF_S`), and records as events
  (:class:`RunEvent`) every exit, out-of-memory kill, refused fork, disk or CPU limit
  hit and crash loop: kept per bot (``keys.hosted_run_events``), counted in metrics
  (``arena_hosted_bot_events_total``) and told to the author on the bot's stream
  (a ``hosted`` notice) and by ``arena bots events NAME``.

Where no sandbox can be had (``require_sandbox``) or no cgroup hierarchy is writable,
:class:`Supervisor` refuses to start: hosted bots never run unsandboxed.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import redis

from referee import bots, keys, metrics_store
from referee.errors import NotFoundError
from referee.gateway.notices import HOSTED as HOSTED_NOTICE
from referee.gateway.notices import bot_notice_payload
from referee.hosting.cgroups import BotGroup, Events, GroupLimits, Hierarchy, open_hierarchy
from referee.hosting.errors import HostingError
from referee.hosting.meter import group_name
from referee.hosting.sandbox import Mount, SandboxLimits, require_sandbox, sandbox_argv
from referee.hosting.versions import RunManifest, VersionStore
from referee.procs import arena_command
from referee.seasons import store as seasons

log = logging.getLogger(__name__)

SOCKET_TARGET = "/run/arena/referee.sock"
TOKEN_TARGET = "/run/arena/token"
BACKOFF_S = (1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
"""Waits before restarting a bot after its 1st, 2nd, ... consecutive quick exit."""
STABLE_S = 60.0
"""A bot that ran this long before exiting starts its backoff again from the first wait."""
CRASH_LOOP = 5
"""This many exits within :data:`CRASH_WINDOW_S` is a ``crash_loop`` event."""
CRASH_WINDOW_S = 300.0
EVENTS_KEPT = 200
POLL_S = 0.25
LINGER_S = 30.0
"""A bot no season wants any more is stopped this long after (its season-end notice, or the
next season created meanwhile)."""


class RunEvent(StrEnum):
    STARTED = "started"
    EXITED = "exited"  # ended on its own or by a signal that is not a limit's
    OOM_KILL = "oom_kill"  # the kernel killed it at its memory limit
    PIDS_LIMIT = "pids_limit"  # a fork refused at its process limit
    DISK_LIMIT = "disk_limit"  # a file write past its disk limit (SIGXFSZ)
    CPU_LIMIT = "cpu_limit"  # past its CPU-seconds limit (SIGXCPU)
    CRASH_LOOP = "crash_loop"
    START_FAILED = "start_failed"


@dataclass(frozen=True, slots=True)
class RunLimits:
    """What every hosted bot of this supervisor gets (the same for all: equal resources).
    ``cpus``: cores of CPU time per wall second; ``memory_mb`` for the whole sandbox
    (cgroup) and per process (rlimit); ``pids`` processes and threads; ``disk_mb`` of
    scratch; ``open_files`` per process."""

    cpus: float = 1.0
    memory_mb: int = 512
    pids: int = 64
    disk_mb: int = 64
    open_files: int = 256

    def group(self) -> GroupLimits:
        return GroupLimits(memory_mb=self.memory_mb, pids=self.pids, cpus=self.cpus)

    def sandbox(self) -> SandboxLimits:
        """The rlimits under the group: ``RLIMIT_NPROC`` counts every process of the bot's
        user id on the host, so it is a floor at twice ``pids``, and the group's
        ``pids.max`` (per sandbox, and counted as an event) is the limit a bot meets."""
        return SandboxLimits(
            memory_mb=self.memory_mb,
            pids=2 * self.pids,
            open_files=self.open_files,
            disk_mb=self.disk_mb,
        )


@dataclass
class Running:
    """One hosted bot this supervisor keeps alive."""

    bot: str
    manifest: RunManifest
    group: BotGroup
    proc: subprocess.Popen[bytes] | None = None
    started: float = 0.0
    next_start: float = 0.0
    quick_exits: int = 0
    exits: deque[float] = field(default_factory=deque)
    seen: Events = field(default_factory=Events)
    unwanted_since: float = 0.0


def cgroup_wrapper(procs_files: Iterable[Path], argv: list[str]) -> list[str]:
    """``argv`` run by a shell that first moves itself into the group (each controller's
    ``cgroup.procs``), so nothing of the bot ever runs outside it."""
    script = 'for f; do [ "$f" = -- ] && break; echo $$ > "$f"; shift; done; shift; exec "$@"'
    return ["/bin/sh", "-c", script, "cgexec", *map(str, procs_files), "--", *argv]


def record_event(conn: redis.Redis, bot: str, kind: RunEvent, detail: str) -> dict[str, Any]:
    """Keep the event (newest first, bounded), count it, and tell the bot's author."""
    event = {"ts_ms": int(time.time() * 1000), "bot": bot, "event": str(kind), "detail": detail}
    pipe = conn.pipeline(transaction=False)
    pipe.lpush(keys.hosted_run_events(bot), json.dumps(event))
    pipe.ltrim(keys.hosted_run_events(bot), 0, EVENTS_KEPT - 1)
    metrics_store.incr_counter(pipe, "arena_hosted_bot_events_total", {"bot": bot, "kind": kind})
    if kind != RunEvent.STARTED:
        notice = {"code": HOSTED_NOTICE, "message": f"hosted bot {bot}: {kind}: {detail}"}
        pipe.publish(keys.BOT_NOTICES_CHANNEL, bot_notice_payload(bot, notice))
    pipe.execute()
    log.log(logging.INFO if kind == RunEvent.STARTED else logging.WARNING, "%s: %s", bot, detail)
    return event


def read_events(conn: redis.Redis, bot: str, limit: int = 50) -> list[dict[str, Any]]:
    """The bot's latest run events, newest first."""
    raw = conn.lrange(keys.hosted_run_events(bot), 0, limit - 1)
    return [json.loads(r) for r in raw]


def wanted_bots(conn: redis.Redis, store: VersionStore) -> list[str]:
    """The hosted bots (with an active version) of every season created, running or
    paused."""
    names: set[str] = set()
    for season in seasons.season_rows(conn):
        if season.state not in (seasons.CREATED, seasons.RUNNING, seasons.PAUSED):
            continue
        try:
            names.update(seasons.get_spec(conn, season.season).bots)
        except (NotFoundError, ValueError):
            continue
    return sorted(b for b in names if store.active_version(b) is not None)


def terminate_bot(proc: subprocess.Popen[bytes], group: BotGroup) -> None:
    """SIGTERM, then SIGKILL to the whole group 5 s later; reaped either way (the sandbox
    dies with it). The group is thawed first: a frozen process acts on no signal, and the
    referee's meter freezes a bot between its turns."""
    if proc.poll() is None:
        with contextlib.suppress(OSError):
            group.thaw()
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                group.kill()  # thaws again (the meter may have frozen it meanwhile)
            proc.kill()
            proc.wait(5)


class Supervisor:
    """Keeps hosted bots alive; :meth:`step` is one pass, :meth:`run` loops it."""

    def __init__(
        self,
        conn: redis.Redis,
        store: VersionStore,
        socket_path: Path,
        run_dir: Path,
        *,
        limits: RunLimits | None = None,
        bots_to_run: Callable[[], Iterable[str]] | None = None,
        hierarchy: Hierarchy | None = None,
        cgroup_parent: str = "arena",
        linger_s: float = LINGER_S,
    ) -> None:
        require_sandbox()  # raises SandboxUnavailable saying what is missing
        self.hierarchy = hierarchy or open_hierarchy(cgroup_parent)
        self.conn = conn
        self.store = store
        self.socket_path = Path(socket_path)
        self.run_dir = Path(run_dir)
        self.limits = limits or RunLimits()
        self.bots_to_run = bots_to_run or (lambda: wanted_bots(conn, store))
        self.linger_s = linger_s
        self.running: dict[str, Running] = {}
        self._lock = threading.Lock()

    # --- one pass ----------------------------------------------------------------------
    def step(self) -> None:
        wanted = set(self.bots_to_run())
        with self._lock:
            now = time.monotonic()
            for bot in sorted(set(self.running) - wanted):
                entry = self.running[bot]
                entry.unwanted_since = entry.unwanted_since or now
                if now - entry.unwanted_since >= self.linger_s:
                    self._stop(self.running.pop(bot))
            for bot in sorted(wanted):
                found = self.running.get(bot) or self._prepare(bot)
                if found is None:
                    continue
                self.running[bot] = found
                found.unwanted_since = 0.0
                self._check(found, now)

    def _prepare(self, bot: str) -> Running | None:
        try:
            manifest = self.store.manifest(bot)
        except (NotFoundError, HostingError) as exc:
            log.warning("not running hosted bot %s: %s", bot, exc)
            return None
        group = self.hierarchy.group(group_name(bot), self.limits.group())
        return Running(bot, manifest, group, seen=group.events())

    def _check(self, entry: Running, now: float) -> None:
        self._limit_events(entry)
        self._switch_version(entry, now)
        proc = entry.proc
        if proc is not None and proc.poll() is not None:
            self._exited(entry, proc.returncode, now)
            entry.proc = proc = None
        if proc is None and now >= entry.next_start:
            self._start(entry, now)

    def _switch_version(self, entry: Running, now: float) -> None:
        """A newer active version replaces the running one between matches, never in one:
        the bot is restarted at once when no running match seats it."""
        proc = entry.proc
        if proc is None or proc.poll() is not None:
            return
        active = self.store.active_version(entry.bot)
        if active is None or active == entry.manifest.version or self._in_a_match(entry.bot):
            return
        record_event(
            self.conn,
            entry.bot,
            RunEvent.EXITED,
            f"stopping version {entry.manifest.version} for the new active version {active}",
        )
        terminate_bot(proc, entry.group)
        entry.proc = None
        entry.quick_exits = 0
        entry.next_start = now

    def _in_a_match(self, bot: str) -> bool:
        running = self.conn.zrange(keys.MATCHES_RUNNING, 0, -1)
        if not running:
            return False
        pipe = self.conn.pipeline(transaction=False)
        for match_id in running:
            pipe.get(keys.match_spec(str(match_id)))
        for raw in pipe.execute():
            with contextlib.suppress(ValueError, TypeError):
                if bot in json.loads(raw).get("seats", ()):
                    return True
        return False

    def _limit_events(self, entry: Running) -> None:
        try:
            events = entry.group.events()
        except OSError:
            return
        if events.oom_kills > entry.seen.oom_kills:
            n = events.oom_kills - entry.seen.oom_kills
            record_event(
                self.conn,
                entry.bot,
                RunEvent.OOM_KILL,
                f"{n} process(es) killed at the memory limit of {self.limits.memory_mb} MB",
            )
        if events.pids_refused > entry.seen.pids_refused:
            n = events.pids_refused - entry.seen.pids_refused
            record_event(
                self.conn,
                entry.bot,
                RunEvent.PIDS_LIMIT,
                f"{n} fork(s) refused at the limit of {self.limits.pids} processes",
            )
        entry.seen = events

    def _exited(self, entry: Running, code: int, now: float) -> None:
        ran = now - entry.started
        signum = -code if code < 0 else (code - 128 if code > 128 else 0)
        if signum == signal.SIGXFSZ:
            kind, why = RunEvent.DISK_LIMIT, f"killed writing past {self.limits.disk_mb} MB"
        elif signum == signal.SIGXCPU:
            kind, why = RunEvent.CPU_LIMIT, "killed at its CPU-seconds limit"
        else:
            kind = RunEvent.EXITED
            why = f"signal {signal.Signals(signum).name}" if signum else f"exit status {code}"
        entry.quick_exits = 1 if ran >= STABLE_S else entry.quick_exits + 1
        wait = BACKOFF_S[min(entry.quick_exits, len(BACKOFF_S)) - 1]
        entry.next_start = now + wait
        record_event(
            self.conn,
            entry.bot,
            kind,
            f"version {entry.manifest.version} ended after {ran:.1f} s ({why}); "
            f"restarting in {wait:g} s",
        )
        entry.exits.append(now)
        while entry.exits and entry.exits[0] < now - CRASH_WINDOW_S:
            entry.exits.popleft()
        if len(entry.exits) == CRASH_LOOP:
            record_event(
                self.conn,
                entry.bot,
                RunEvent.CRASH_LOOP,
                f"{CRASH_LOOP} exits within {CRASH_WINDOW_S:g} s: see `arena bots events "
                f"{entry.bot}` and fix the bot, then submit a new version",
            )

    def _start(self, entry: Running, now: float) -> None:
        try:
            manifest = self.store.manifest(entry.bot)  # a newer active version, if any
        except (NotFoundError, HostingError) as exc:
            record_event(self.conn, entry.bot, RunEvent.START_FAILED, str(exc))
            entry.next_start = now + BACKOFF_S[-1]
            return
        entry.manifest = manifest
        try:
            # the meter may have frozen the group when the last turn of the exited bot closed
            entry.group.thaw()
            entry.proc = self._spawn(manifest, entry.group)
        except (OSError, ValueError) as exc:
            record_event(self.conn, entry.bot, RunEvent.START_FAILED, str(exc))
            entry.next_start = now + BACKOFF_S[-1]
            return
        entry.started = now
        record_event(
            self.conn,
            entry.bot,
            RunEvent.STARTED,
            f"version {manifest.version} ({manifest.language}, {manifest.protocol}) started",
        )

    def _spawn(self, manifest: RunManifest, group: BotGroup) -> subprocess.Popen[bytes]:
        """Start the bot: sandboxed, in its group, its token never on a command line."""
        folder = self.run_dir / manifest.bot
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        token = bots.hosted_token(self.conn, manifest.bot)
        mounts = [*manifest.mounts(), Mount(self.socket_path, SOCKET_TARGET)]
        env = dict(manifest.env)
        log_file = open(folder / "bot.log", "ab")  # noqa: SIM115 (the child holds it)
        try:
            if manifest.protocol == "stdio":
                inner = sandbox_argv(
                    manifest.argv,
                    workdir=manifest.workdir,
                    mounts=mounts,
                    uid=manifest.uid,
                    limits=self.limits.sandbox(),
                    env=env,
                )
                argv = arena_command(
                    "bridge",
                    "--server",
                    f"unix:{self.socket_path}",
                    "--",
                    *cgroup_wrapper(group.procs_files(), inner),
                )
                child_env = {**os.environ, "ARENA_TOKEN": token}
                return subprocess.Popen(
                    argv, stdin=subprocess.DEVNULL, stdout=log_file, stderr=log_file, env=child_env
                )
            token_file = folder / "token"
            token_file.unlink(missing_ok=True)
            fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400)
            with os.fdopen(fd, "w") as f:
                f.write(token)
            os.chown(token_file, manifest.uid, manifest.uid)
            mounts.append(Mount(token_file, TOKEN_TARGET))
            env["ARENA_SERVER"] = f"unix:{SOCKET_TARGET}"
            reader = f'ARENA_TOKEN=$(cat {TOKEN_TARGET}); export ARENA_TOKEN; exec "$@"'
            inner = sandbox_argv(
                ["/bin/sh", "-c", reader, "bot", *manifest.argv],
                workdir=manifest.workdir,
                mounts=mounts,
                uid=manifest.uid,
                limits=self.limits.sandbox(),
                env=env,
            )
            return subprocess.Popen(
                cgroup_wrapper(group.procs_files(), inner),
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
                start_new_session=True,
            )
        finally:
            log_file.close()

    def _stop(self, entry: Running) -> None:
        if entry.proc is not None:
            terminate_bot(entry.proc, entry.group)
        entry.proc = None
        entry.group.remove()

    # --- the loop ----------------------------------------------------------------------
    def run(self, stop: threading.Event, poll_s: float = POLL_S) -> None:
        """Pass every ``poll_s`` until ``stop``; then stop every bot and remove its group."""
        try:
            while not stop.is_set():
                try:
                    self.step()
                except redis.RedisError as exc:
                    log.warning("bot supervisor: Redis unavailable (%s); retrying", exc)
                stop.wait(poll_s)
        finally:
            self.stop_all()

    def stop_all(self) -> None:
        """Stop every bot at once (SIGTERM to all, then SIGKILL what is left after 5 s)."""
        with self._lock:
            entries = list(self.running.values())
            self.running.clear()
            for entry in entries:
                if entry.proc is not None and entry.proc.poll() is None:
                    with contextlib.suppress(OSError):
                        entry.group.thaw()  # a frozen process acts on no signal
                    entry.proc.terminate()
            deadline = time.monotonic() + 5.0
            for entry in entries:
                if entry.proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        entry.proc.wait(max(0.0, deadline - time.monotonic()))
                self._stop(entry)
