"""The version store of hosted bots: submit, build, activate.

A submission (a folder or an archive) is checked and unpacked in a staging folder first
(``referee.hosting.archive``); only then does it get the bot's next version number ``vN``
and a folder under the data dir, so a refused submission stores nothing::

    <data_dir>/hosted/<bot>/vN/archive.tar.gz|.zip   the bytes submitted (sha256 in Redis)
                              /src/                  the checked, unpacked code
                              /build/                the build's output: what a run mounts
                              /build.log             head and tail of the build's output
                              /manifest.json         how to run it (:class:`RunManifest`)

Redis holds the small part: ``keys.bot_versions(bot)`` (one JSON per version) and, in the
bot's hash, ``active_version`` (absent: an external bot), ``last_version`` and
``hosted_uid``, the user id its build and play sandboxes run as.

The build runs in the sandbox (``referee.hosting.sandbox``) with :data:`BUILD_LIMITS`: the
code is bound read-only at ``/src`` and copied into the scratch tmpfs, the language's build
command runs there with its output going to the log, and the folder leaves the sandbox as a
tar stream on stdout, unpacked with the same checks as a submission. Nothing the build does
can write to the host. A version becomes active only when its build succeeds; a failed build
leaves the active version as it was. Folders of a version are never changed after its build,
so a bot still running an older version is not disturbed: the run side reads
``active_version`` when it starts a bot for a match (``HOSTING_EVENTS`` tells it when to).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

import redis

from referee import bots, keys
from referee.errors import ConflictError, NotFoundError, StateConflict
from referee.hosting.archive import ArchiveLimits, archive_kind, pack_folder, unpack
from referee.hosting.errors import ArchiveRefused, BuildFailed
from referee.hosting.languages import Recipe, detect, runtime_mounts
from referee.hosting.sandbox import (
    MIB,
    SCRATCH,
    WALL_TIME_STATUS,
    Mount,
    SandboxLimits,
    require_sandbox,
    sandbox_argv,
)
from referee.metrics_store import incr_counter

BUILD_LIMITS = SandboxLimits(
    memory_mb=1024, pids=128, open_files=512, disk_mb=512, cpu_s=600, wall_s=600
)
"""A build's share: 10 minutes, 1 GiB per process, 512 MiB of scratch, no network."""

BUILDS_METRIC = "arena_hosted_builds_total"

LOG_PART_BYTES = 10 * 1024
"""The build log keeps this much of its head and of its tail."""

UID_BASE = 200_000
"""Hosted bots run as user ids from here up, one each (never a user of the host)."""

RUN_DIR = "/bot"
"""Where a version's build folder is mounted (read-only) when the bot runs."""

BUILD_DIR = f"{SCRATCH}/build"

BUILDS_AT_ONCE = max(1, (os.cpu_count() or 2) // 2)
"""Builds one process runs at a time (the CLI, a referee's API and upload form): more wait,
so a burst of submissions cannot take every core from the matches."""
_build_slots = threading.BoundedSemaphore(BUILDS_AT_ONCE)


ENTRY_OF = "entry_of"
"""Field of a version entry's bot hash (:meth:`VersionStore.version_entry`): ``NAME@vN``."""


class BuildState:
    PENDING = "pending"
    OK = "ok"
    FAILED = "failed"


@dataclass(frozen=True)
class VersionInfo:
    """One version of a hosted bot, as kept in Redis."""

    version: int
    sha256: str
    created_at: int  # Unix seconds
    language: str
    protocol: str
    archive_bytes: int
    files: int
    build: str = BuildState.PENDING
    built_at: int = 0
    build_seconds: float = 0.0
    summary: str = ""  # one line: why the build failed

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, raw: str | bytes) -> VersionInfo:
        data = json.loads(raw)
        return cls(**{k: v for k, v in data.items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class RunManifest:
    """How the run side starts a built version: ``argv`` in :data:`RUN_DIR`, with ``env``,
    speaking ``protocol`` ("stdio" or "grpc"); :meth:`mounts` are its read-only binds."""

    bot: str
    version: int
    language: str
    protocol: str
    argv: list[str]
    build_dir: Path
    uid: int
    env: dict[str, str] = field(default_factory=dict)
    workdir: str = RUN_DIR

    def mounts(self) -> list[Mount]:
        return [Mount(self.build_dir, RUN_DIR), *runtime_mounts(self.language)]


def _text(value: str | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else value


class VersionStore:
    """Versions of hosted bots: ``client`` is the platform's Redis, ``data_dir`` the data
    dir whose ``hosted/`` folder holds their code."""

    def __init__(
        self,
        client: redis.Redis,
        data_dir: Path,
        *,
        archive_limits: ArchiveLimits | None = None,
        build_limits: SandboxLimits = BUILD_LIMITS,
    ) -> None:
        self.client = client
        self.root = Path(data_dir) / "hosted"
        self.archive_limits = archive_limits or ArchiveLimits()
        self.build_limits = build_limits

    # --- reading ----------------------------------------------------------------------

    def bot_dir(self, bot: str) -> Path:
        return self.root / bots.validate_name(bot)

    def version_dir(self, bot: str, version: int) -> Path:
        return self.bot_dir(bot) / f"v{version}"

    def versions(self, bot: str) -> list[VersionInfo]:
        """Every version of ``bot``, oldest first."""
        raw = self.client.hgetall(keys.bot_versions(bot))
        return sorted((VersionInfo.from_json(v) for v in raw.values()), key=lambda v: v.version)

    def version(self, bot: str, version: int) -> VersionInfo:
        raw = self.client.hget(keys.bot_versions(bot), str(version))
        if raw is None:
            raise NotFoundError(
                f"bot {bot!r} has no version {version}: `arena bot versions {bot}` lists them"
            )
        return VersionInfo.from_json(raw)

    def active_version(self, bot: str) -> int | None:
        """The version the bot's next match runs; None for an external bot."""
        raw = self.client.hget(keys.bot(bot), "active_version")
        return int(_text(raw)) if raw else None

    def build_log(self, bot: str, version: int) -> str:
        self.version(bot, version)
        path = self.version_dir(bot, version) / "build.log"
        return path.read_text("utf-8", "replace") if path.exists() else ""

    def manifest(self, bot: str, version: int | None = None) -> RunManifest:
        """How to run ``version`` of ``bot`` (its active one by default)."""
        if version is None:
            version = self.active_version(bot)
            if version is None:
                raise NotFoundError(
                    f"bot {bot!r} has no built version: `arena bot submit {bot} PATH` sends one"
                )
        info = self.version(bot, version)
        if info.build != BuildState.OK:
            raise BuildFailed(f"version {version} of {bot!r} is not built ({info.build})")
        data = json.loads((self.version_dir(bot, version) / "manifest.json").read_text())
        return RunManifest(
            bot=bot,
            version=version,
            language=data["language"],
            protocol=data["protocol"],
            argv=list(data["argv"]),
            env=dict(data["env"]),
            build_dir=self.version_dir(bot, version) / "build",
            uid=self.uid(bot),
        )

    def uid(self, bot: str) -> int:
        """The bot's own user id, given at its first submission and kept."""
        raw = self.client.hget(keys.bot(bot), "hosted_uid")
        if raw is not None:
            return int(_text(raw))
        offset = int(self.client.incr(keys.HOSTED_UIDS))
        self.client.hsetnx(keys.bot(bot), "hosted_uid", str(UID_BASE + offset))
        return int(_text(self.client.hget(keys.bot(bot), "hosted_uid") or "0"))

    def version_entry(self, bot: str, version: int) -> str:
        """A bot that plays version ``version`` of ``bot`` and nothing else, for a season
        that seats two versions of one bot (``arena bot test NAME@v2 --against NAME@v1``):
        ``NAME.vN``, registered to ``bot``'s owner, whose one version is ``bot``'s archive
        of that version built anew in the sandbox. Made once, then reused."""
        info = self.version(bot, version)
        if info.build != BuildState.OK:
            raise BuildFailed(
                f"version {version} of {bot!r} is not built ({info.build}): "
                f"`arena bot builds {bot}` shows why"
            )
        entry = bots.validate_name(f"{bot}.v{version}")
        pinned = f"{bot}@v{version}"
        if self.client.exists(keys.bot(entry)):
            if _text(self.client.hget(keys.bot(entry), ENTRY_OF) or "") != pinned:
                raise ConflictError(
                    f"{pinned}: the bot {entry!r} exists and plays something else; rename it "
                    "to test this version"
                )
            if self.active_version(entry) is not None:
                return entry
        else:
            owner = _text(self.client.hget(keys.bot(bot), "owner") or "")
            bots.register(self.client, entry, owner=owner, description=f"{pinned}, pinned")
            self.client.hset(keys.bot(entry), ENTRY_OF, pinned)
        folder = self.version_dir(bot, version)
        archive = next(folder.glob("archive.*"))
        built = self.submit_and_build(entry, archive, language=info.language)
        if built.build != BuildState.OK:
            raise BuildFailed(f"{pinned} did not build again as {entry!r}: {built.summary}")
        return entry

    # --- submitting -------------------------------------------------------------------

    def submit(
        self,
        bot: str,
        path: Path | None = None,
        *,
        data: bytes | None = None,
        filename: str = "",
        language: str | None = None,
    ) -> VersionInfo:
        """Store a new version of ``bot`` from a folder or archive at ``path``, or from the
        archive bytes ``data`` named ``filename``; not built yet (:meth:`build`).
        :class:`ArchiveRefused` stores nothing."""
        bots.validate_name(bot)
        if not self.client.exists(keys.bot(bot)):
            raise NotFoundError(
                f"no bot named {bot!r}: register it first (`arena bot register {bot}`)"
            )
        self.root.mkdir(parents=True, exist_ok=True, mode=0o755)
        staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=self.root))
        try:
            archive, kind = self._take(staging, path, data, filename)
            with open(archive, "rb") as source:
                members = unpack(source, kind, staging / "src", self.archive_limits)
            recipe = detect(staging / "src", language)
            digest = hashlib.sha256(archive.read_bytes()).hexdigest()
            with self._locked(bot):
                number = int(self.client.hincrby(keys.bot(bot), "last_version", 1))
                info = VersionInfo(
                    version=number,
                    sha256=digest,
                    created_at=int(time.time()),
                    language=recipe.language,
                    protocol=recipe.protocol,
                    archive_bytes=archive.stat().st_size,
                    files=len(members),
                )
                (staging / "recipe.json").write_text(json.dumps(asdict(recipe)))
                staging.chmod(0o755)
                staging.rename(self.version_dir(bot, number))
                self.client.hset(keys.bot_versions(bot), str(number), info.to_json())
            self.uid(bot)
            return info
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _take(
        self, staging: Path, path: Path | None, data: bytes | None, filename: str
    ) -> tuple[Path, str]:
        """The submission as an archive file in ``staging``, and its kind."""
        limit = self.archive_limits.archive_bytes
        if data is not None:
            kind = archive_kind(filename or "upload")
            if len(data) > limit:
                raise ArchiveRefused(_too_large(len(data), limit))
            target = staging / ("archive.zip" if kind == "zip" else "archive.tar.gz")
            target.write_bytes(data)
            return target, kind
        if path is None:
            raise ArchiveRefused("nothing submitted: give a folder, a .tar.gz or a .zip")
        if path.is_dir():
            target = staging / "archive.tar.gz"
            with open(target, "wb") as out:
                pack_folder(path, out, self.archive_limits)
            if target.stat().st_size > limit:
                raise ArchiveRefused(_too_large(target.stat().st_size, limit))
            return target, "tar"
        if not path.is_file():
            raise ArchiveRefused(f"{path}: no such file or folder")
        kind = archive_kind(path.name)
        size = path.stat().st_size
        if size > limit:
            raise ArchiveRefused(_too_large(size, limit))
        target = staging / ("archive.zip" if kind == "zip" else "archive.tar.gz")
        shutil.copyfile(path, target)
        return target, kind

    @contextmanager
    def _locked(self, bot: str) -> Iterator[None]:
        folder = self.bot_dir(bot)
        folder.mkdir(parents=True, exist_ok=True, mode=0o755)
        with open(folder / ".lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    # --- building ---------------------------------------------------------------------

    def build(self, bot: str, version: int) -> VersionInfo:
        """Build ``version`` in the sandbox; on success make it the active version. A failed
        build is recorded (its log kept) and leaves the active version as it was."""
        require_sandbox()
        info = self.version(bot, version)
        if info.build == BuildState.OK:
            raise StateConflict(
                f"v{version} of {bot!r} is built already and may be running; submit a new "
                "version to change it"
            )
        folder = self.version_dir(bot, version)
        recipe = Recipe(**json.loads((folder / "recipe.json").read_text()))
        with _build_slots, self._locked(bot):
            shutil.rmtree(folder / "build", ignore_errors=True)  # a failed build's leftovers
            started = time.monotonic()
            ok, summary = self._run_build(folder, recipe, self.uid(bot))
            took = time.monotonic() - started
        built = VersionInfo(
            **{
                **asdict(info),
                "build": BuildState.OK if ok else BuildState.FAILED,
                "built_at": int(time.time()),
                "build_seconds": round(took, 3),
                "summary": summary,
            }
        )
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(keys.bot_versions(bot), str(version), built.to_json())
        if ok:
            pipe.hset(keys.bot(bot), "active_version", str(version))
        incr_counter(pipe, BUILDS_METRIC, {"bot": bot, "kind": built.build})
        event = {"bot": bot, "version": version, "event": "activated" if ok else "build_failed"}
        pipe.publish(keys.HOSTING_EVENTS, json.dumps(event))
        pipe.execute()
        return built

    def submit_and_build(
        self,
        bot: str,
        path: Path | None = None,
        *,
        data: bytes | None = None,
        filename: str = "",
        language: str | None = None,
    ) -> VersionInfo:
        """:meth:`submit` then :meth:`build`; refuses before storing anything where no
        sandbox can be had."""
        require_sandbox()
        info = self.submit(bot, path, data=data, filename=filename, language=language)
        return self.build(bot, info.version)

    def _run_build(self, folder: Path, recipe: Recipe, uid: int) -> tuple[bool, str]:
        """Run the build; write build/, build.log and manifest.json. Returns (ok, summary)."""
        limits = self.build_limits
        step = recipe.build or "true"
        if recipe.requires:
            needed = shlex.quote(recipe.requires)
            missing = shlex.quote(f"the interpreter {recipe.requires} is not installed here")
            step = f"{{ test -x {needed} || {{ echo {missing}; exit 1; }}; }} && {step}"
        if recipe.makes:
            made = shlex.quote(recipe.makes)
            missing = shlex.quote(f"the build made no executable ./{recipe.makes}")
            step = f"{{ {step}; }} && {{ test -x {made} || {{ echo {missing}; exit 1; }}; }}"
        script = (
            f"cp -R /src/. {BUILD_DIR} && cd {BUILD_DIR} && "
            f"{{ echo {shlex.quote('$ ' + (recipe.build or 'true'))}; {step}; }} 1>&2 "
            "&& tar -cf - ."
        )
        argv = sandbox_argv(
            ["/bin/sh", "-c", script],
            workdir=SCRATCH,
            mounts=[Mount(folder / "src", "/src"), *runtime_mounts(recipe.language)],
            uid=uid,
            limits=limits,
            env=recipe.env,
        )
        out_path, log_path = folder / "build.tar", folder / "build.raw"
        with open(out_path, "wb") as out, open(log_path, "wb") as log:
            status = subprocess.run(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=log, check=False
            ).returncode
        try:
            text = _bounded_log(log_path)
            summary = ""
            if status == WALL_TIME_STATUS:
                summary = f"the build took longer than {limits.wall_s:g} s (its wall limit)"
            elif status != 0:
                summary = f"the build failed (exit status {status})" + _first_error(text)
            if not summary:
                try:
                    with open(out_path, "rb") as stream:
                        unpack(stream, "tar", folder / "build", _output_limits(limits))
                except ArchiveRefused as exc:
                    shutil.rmtree(folder / "build", ignore_errors=True)
                    summary = f"the build's output was refused: {exc}"
            if summary:
                text += f"\n[arena] {summary}\n"
            (folder / "build.log").write_text(text)
            if summary:
                return False, summary
            manifest = {
                "language": recipe.language,
                "protocol": recipe.protocol,
                "argv": recipe.run,
                "env": recipe.env,
            }
            (folder / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
            return True, ""
        finally:
            out_path.unlink(missing_ok=True)
            log_path.unlink(missing_ok=True)


def _output_limits(limits: SandboxLimits) -> ArchiveLimits:
    disk = limits.disk_mb * MIB
    return ArchiveLimits(archive_bytes=disk, unpacked_bytes=disk, files=50_000)


def _first_error(log: str) -> str:
    """': ' and the log's first line that reports an error (else its last line), cut."""
    lines = [line for line in log.splitlines() if line.strip()]
    errors = [line for line in lines if "error" in line.lower()]
    chosen = (errors or lines)[:1]
    return f": {chosen[0].strip()[:200]}" if chosen else ""


def _bounded_log(path: Path) -> str:
    """The log's first and last :data:`LOG_PART_BYTES`, with what was cut between."""
    size = path.stat().st_size
    with open(path, "rb") as log:
        if size <= 2 * LOG_PART_BYTES:
            return log.read().decode("utf-8", "replace")
        head = log.read(LOG_PART_BYTES)
        log.seek(size - LOG_PART_BYTES)
        tail = log.read()
    cut = size - 2 * LOG_PART_BYTES
    return (
        head.decode("utf-8", "replace")
        + f"\n[arena] ... {cut} bytes of the build's output cut here ...\n"
        + tail.decode("utf-8", "replace")
    )


def _too_large(size: int, limit: int) -> str:
    return (
        f"the archive is {size / MIB:.1f} MiB; at most {limit / MIB:g} MiB is taken (leave out "
        "build products and dependencies the platform provides)"
    )
