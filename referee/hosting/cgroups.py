"""One control group per hosted bot, over cgroup v2 or v1 behind one interface.

A :class:`BotGroup` caps a bot's memory, process count and CPU, freezes and thaws it,
reads the CPU time it has used and counts the limit hits its sandbox met (out-of-memory
kills, refused forks, CPU throttling). :func:`open_hierarchy` finds what the host
mounts:

* **v2** (most current hosts): one tree at ``/sys/fs/cgroup``; ``memory.max``,
  ``memory.swap.max``, ``pids.max``, ``cpu.max``, ``cpu.weight``, ``cgroup.freeze``,
  ``cpu.stat`` (``usage_usec``), ``memory.events`` (``oom_kill``), ``pids.events``
  (``max``), ``cgroup.kill``. The controllers must be delegated to our parent
  (``cgroup.subtree_control``); :func:`open_hierarchy` enables them.
* **v1** (these machines): one tree per controller, ``/sys/fs/cgroup/{memory,pids,cpu,
  cpuacct,freezer}``; ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``
  where swap accounting is on), ``pids.max``, ``cpu.cfs_quota_us``/``cpu.shares``,
  ``freezer.state``, ``cpuacct.usage`` (ns), ``memory.oom_control`` (``oom_kill``),
  ``pids.events``, ``cpu.stat`` (``nr_throttled``).

Only v1 is exercised by the tests on the machines this was written on
(tests/hosting/test_cgroups.py); v2 follows the kernel's cgroup-v2 documentation.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from referee.errors import ArenaError

ROOT = Path("/sys/fs/cgroup")
V1_CONTROLLERS = ("memory", "pids", "cpu", "cpuacct", "freezer")
V1_REQUIRED = ("memory", "pids", "cpu", "cpuacct")
"""Without the v1 ``freezer`` tree (or v2's ``cgroup.freeze``, kernels before 5.2) groups
freeze by signals (:class:`SignalFreezer`)."""
V2_CONTROLLERS = ("memory", "pids", "cpu")
CPU_PERIOD_US = 100_000
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$")


class CgroupUnavailable(ArenaError):
    """No writable cgroup hierarchy with the controllers a hosted bot needs."""

    status = "FAILED_PRECONDITION"


@dataclass(frozen=True, slots=True)
class GroupLimits:
    """What one bot's group may use: ``cpus`` cores of CPU time per wall second (quota),
    ``memory_mb`` of memory (swap included where the kernel accounts it), ``pids``
    processes and threads."""

    memory_mb: int = 512
    pids: int = 64
    cpus: float = 1.0


@dataclass(frozen=True, slots=True)
class Events:
    """Limit hits counted by the kernel since the group was made."""

    oom_kills: int = 0
    pids_refused: int = 0  # forks refused at pids.max
    cpu_throttled: int = 0  # scheduling periods in which the CPU quota ran out


class BotGroup(Protocol):
    """One bot's control group (both versions)."""

    name: str

    def add(self, pid: int) -> None:
        """Move process ``pid`` (and so its future children) into the group."""

    def pids(self) -> list[int]:
        """The processes in the group now."""

    def procs_files(self) -> list[Path]:
        """Where a process writes its pid to join the group (one file per tree)."""

    def exists(self) -> bool: ...

    def create(self, limits: GroupLimits) -> None:
        """Make the group (or keep it) and set ``limits``."""

    def freeze(self, wait: bool = True) -> None:
        """Stop every process of the group until :meth:`thaw` (``wait``: return only once
        the kernel reports it frozen)."""

    def thaw(self) -> None: ...

    def frozen(self) -> bool: ...

    def cpu_ns(self) -> int:
        """CPU time (user and system) the group's processes used, in nanoseconds."""

    def memory_bytes(self) -> int: ...

    def events(self) -> Events: ...

    def kill(self) -> None:
        """SIGKILL every process of the group (thawed first so they can die)."""

    def remove(self) -> None:
        """Kill what is left and delete the group."""

    def close(self) -> None:
        """Close the group's files kept open (the group stays)."""


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


class _Files:
    """Files of one group kept open: a read or write of an open cgroup file costs about a
    microsecond, opening it a hundred times that (measured here), and the meter touches
    them on every decision."""

    def __init__(self) -> None:
        self._fds: dict[Path, int] = {}

    def _fd(self, path: Path, flags: int) -> int:
        fd = self._fds.get(path)
        if fd is None:
            fd = self._fds[path] = os.open(path, flags)
        return fd

    def pread(self, path: Path) -> str:
        return os.pread(self._fd(path, os.O_RDONLY), 4096, 0).decode()

    def pwrite(self, path: Path, value: str) -> None:
        os.pwrite(self._fd(path, os.O_WRONLY), value.encode(), 0)

    def close(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()


def _keyed(path: Path, key: str) -> int:
    """The integer after ``key`` in a flat-keyed file (``memory.events``, ``cpu.stat``)."""
    try:
        text = _read(path)
    except FileNotFoundError:
        return 0
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key:
            return int(parts[1])
    return 0


def _procs(path: Path) -> list[int]:
    try:
        return [int(p) for p in _read(path / "cgroup.procs").split()]
    except FileNotFoundError:
        return []


def _kill_all(dirs: Iterable[Path]) -> None:
    for _ in range(50):
        pids = {p for d in dirs for p in _procs(d)}
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _rmdir(path: Path) -> None:
    for _ in range(500):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:  # EBUSY while the last killed processes are reaped
            time.sleep(0.01)
    path.rmdir()


def _wait_frozen(state: Path, expect: str) -> None:
    for _ in range(1000):
        if _read(state).strip() == expect:
            return
        time.sleep(0.001)
    raise CgroupUnavailable(f"{state} did not reach {expect} within 1 s")


def _stopped(pid: int) -> bool | None:
    """Whether ``pid`` runs nothing: stopped by a signal (state ``T``) or a zombie; None
    once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("T", "Z", "X")
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None


class SignalFreezer:
    """Freezing by SIGSTOP/SIGCONT of every process of a group: the fallback where the
    cgroup freezer is missing. Weaker than the freezer: the stop goes process by process
    (a fork during it is caught by sweeping until no new process appears), and a process
    can observe being stopped and continued (its parent may get ``SIGCHLD``)."""

    def __init__(self, pids: Callable[[], list[int]]) -> None:
        self.pids = pids

    def freeze(self, wait: bool = True) -> None:
        stopped: set[int] = set()
        for _ in range(100):
            fresh = set(self.pids()) - stopped
            if not fresh:
                break
            for pid in fresh:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGSTOP)
            stopped |= fresh
        if wait:
            for _ in range(1000):
                if self.frozen():
                    return
                time.sleep(0.001)
            raise CgroupUnavailable("the group's processes did not stop within 1 s")

    def thaw(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

    def frozen(self) -> bool:
        """Every process of the group is stopped (and there is one)."""
        states = [_stopped(pid) for pid in self.pids()]
        live = [s for s in states if s is not None]
        return bool(live) and all(live)


class V1Group:
    """A bot's group in each v1 controller tree: ``<root>/<controller>/<parent>/<name>``."""

    def __init__(self, root: Path, parent: str, name: str, freezer: bool = True) -> None:
        self.name = name
        controllers = V1_CONTROLLERS if freezer else V1_REQUIRED
        self.dirs = {c: root / c / parent / name for c in controllers}
        self.files = _Files()
        self.signals = None if freezer else SignalFreezer(self.pids)

    def exists(self) -> bool:
        return all(d.is_dir() for d in self.dirs.values())

    def create(self, limits: GroupLimits) -> None:
        for d in self.dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        mem = self.dirs["memory"]
        limit = str(limits.memory_mb * 1024 * 1024)
        _write(mem / "memory.limit_in_bytes", limit)
        memsw = mem / "memory.memsw.limit_in_bytes"
        if memsw.exists():
            _write(memsw, limit)
        _write(self.dirs["pids"] / "pids.max", str(limits.pids))
        cpu = self.dirs["cpu"]
        _write(cpu / "cpu.cfs_period_us", str(CPU_PERIOD_US))
        _write(cpu / "cpu.cfs_quota_us", str(max(1000, int(limits.cpus * CPU_PERIOD_US))))
        _write(cpu / "cpu.shares", "1024")

    def add(self, pid: int) -> None:
        for d in self.dirs.values():
            _write(d / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        return _procs(self.dirs["pids"])

    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs.values()]

    def close(self) -> None:
        self.files.close()

    def freeze(self, wait: bool = True) -> None:
        if self.signals is not None:
            self.signals.freeze(wait)
            return
        state = self.dirs["freezer"] / "freezer.state"
        self.files.pwrite(state, "FROZEN")
        if wait:
            _wait_frozen(state, "FROZEN")

    def thaw(self) -> None:
        if self.signals is not None:
            self.signals.thaw()
            return
        self.files.pwrite(self.dirs["freezer"] / "freezer.state", "THAWED")

    def frozen(self) -> bool:
        if self.signals is not None:
            return self.signals.frozen()
        return _read(self.dirs["freezer"] / "freezer.state").strip() != "THAWED"

    def cpu_ns(self) -> int:
        return int(self.files.pread(self.dirs["cpuacct"] / "cpuacct.usage"))

    def memory_bytes(self) -> int:
        return int(_read(self.dirs["memory"] / "memory.usage_in_bytes"))

    def events(self) -> Events:
        return Events(
            oom_kills=_keyed(self.dirs["memory"] / "memory.oom_control", "oom_kill"),
            pids_refused=_keyed(self.dirs["pids"] / "pids.events", "max"),
            cpu_throttled=_keyed(self.dirs["cpu"] / "cpu.stat", "nr_throttled"),
        )

    def kill(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.thaw()
        _kill_all(self.dirs.values())

    def remove(self) -> None:
        self.kill()
        self.files.close()
        for d in self.dirs.values():
            _rmdir(d)


class V2Group:
    """A bot's group in the unified tree: ``<root>/<parent>/<name>``."""

    def __init__(self, root: Path, parent: str, name: str, freezer: bool = True) -> None:
        self.name = name
        self.dir = root / parent / name
        self.files = _Files()
        self.signals = None if freezer else SignalFreezer(self.pids)

    def exists(self) -> bool:
        return self.dir.is_dir()

    def create(self, limits: GroupLimits) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        limit = str(limits.memory_mb * 1024 * 1024)
        _write(self.dir / "memory.max", limit)
        swap = self.dir / "memory.swap.max"
        if swap.exists():
            _write(swap, "0")
        _write(self.dir / "pids.max", str(limits.pids))
        quota = max(1000, int(limits.cpus * CPU_PERIOD_US))
        _write(self.dir / "cpu.max", f"{quota} {CPU_PERIOD_US}")
        _write(self.dir / "cpu.weight", "100")

    def add(self, pid: int) -> None:
        _write(self.dir / "cgroup.procs", str(pid))

    def pids(self) -> list[int]:
        return _procs(self.dir)

    def procs_files(self) -> list[Path]:
        return [self.dir / "cgroup.procs"]

    def close(self) -> None:
        self.files.close()

    def freeze(self, wait: bool = True) -> None:
        if self.signals is not None:
            self.signals.freeze(wait)
            return
        self.files.pwrite(self.dir / "cgroup.freeze", "1")
        if not wait:
            return
        events = self.dir / "cgroup.events"
        for _ in range(1000):
            if _keyed(events, "frozen") == 1:
                return
            time.sleep(0.001)
        raise CgroupUnavailable(f"{self.dir} did not freeze within 1 s")

    def thaw(self) -> None:
        if self.signals is not None:
            self.signals.thaw()
            return
        self.files.pwrite(self.dir / "cgroup.freeze", "0")

    def frozen(self) -> bool:
        if self.signals is not None:
            return self.signals.frozen()
        return _read(self.dir / "cgroup.freeze").strip() == "1"

    def cpu_ns(self) -> int:
        for line in self.files.pread(self.dir / "cpu.stat").splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1]) * 1000
        return 0

    def memory_bytes(self) -> int:
        return int(_read(self.dir / "memory.current"))

    def events(self) -> Events:
        return Events(
            oom_kills=_keyed(self.dir / "memory.events", "oom_kill"),
            pids_refused=_keyed(self.dir / "pids.events", "max"),
            cpu_throttled=_keyed(self.dir / "cpu.stat", "nr_throttled"),
        )

    def kill(self) -> None:
        killer = self.dir / "cgroup.kill"
        if killer.exists():
            _write(killer, "1")
        with contextlib.suppress(FileNotFoundError):
            self.thaw()
        _kill_all([self.dir])

    def remove(self) -> None:
        self.kill()
        self.files.close()
        _rmdir(self.dir)


@dataclass(frozen=True, slots=True)
class Hierarchy:
    """Where bot groups are made: the cgroup version, its mount and our parent group."""

    version: int
    root: Path
    parent: str
    freezer: bool = True
    """False: the cgroup freezer is missing, groups freeze by signals (:class:`SignalFreezer`)."""

    def group(self, name: str, limits: GroupLimits) -> BotGroup:
        """Make (or reuse) the group of ``name`` with ``limits``."""
        group = self.handle(name)
        group.create(limits)
        return group

    def handle(self, name: str) -> BotGroup:
        """The group of ``name``, made or not (see ``exists``)."""
        if not _NAME.match(name):
            raise ValueError(
                f"cgroup name {name!r} refused: use letters, digits, '_', '.' or '-' "
                "(up to 100, not starting with a symbol)"
            )
        if self.version == 2:
            return V2Group(self.root, self.parent, name, self.freezer)
        return V1Group(self.root, self.parent, name, self.freezer)

    def path_of(self, name: str) -> Path:
        """The directory whose CPU counter :func:`cpu_ns_of` reads for ``name``."""
        if self.version == 2:
            return self.root / self.parent / name
        return self.root / "cpuacct" / self.parent / name

    def cleanup(self) -> int:
        """Kill and delete every group under our parent (left by a crashed supervisor);
        returns how many were removed."""
        removed = 0
        tops = (
            [self.root / self.parent]
            if self.version == 2
            else [self.root / c / self.parent for c in V1_CONTROLLERS if (self.root / c).is_dir()]
        )
        for top in tops:
            if not top.is_dir():
                continue
            for d in sorted(p for p in top.iterdir() if p.is_dir()):
                with contextlib.suppress(ValueError, OSError):
                    self.handle(d.name).kill()  # thawed first: a frozen process never dies
                _kill_all([d])
                _rmdir(d)
                removed += 1
        for top in tops:
            if top.is_dir() and not any(p.is_dir() for p in top.iterdir()):
                _rmdir(top)
        return removed


def cpu_ns_of(path: Path) -> int | None:
    """CPU time used by the group at ``path`` (v1 cpuacct dir or v2 dir); None if it
    is gone or unreadable. For readers that know a group only by its path."""
    try:
        if (path / "cpuacct.usage").exists():
            return int(_read(path / "cpuacct.usage"))
        return _keyed(path / "cpu.stat", "usage_usec") * 1000
    except (OSError, ValueError):
        return None


def detect(root: Path = ROOT) -> int | None:
    """2 or 1 for the hierarchy mounted at ``root`` with the controllers we need, or None."""
    controllers = root / "cgroup.controllers"
    if controllers.exists():
        have = set(_read(controllers).split())
        return 2 if set(V2_CONTROLLERS) <= have else None
    if all((root / c).is_dir() for c in V1_REQUIRED):
        return 1
    return None


def open_hierarchy(
    parent: str = "arena", root: Path = ROOT, *, signal_freeze: bool = False
) -> Hierarchy:
    """The hierarchy bot groups go in, checked writable; raises :class:`CgroupUnavailable`
    saying what is missing. Groups freeze by the cgroup freezer where it exists, else (or
    with ``signal_freeze``) by SIGSTOP/SIGCONT of their processes."""
    version = detect(root)
    if version is None:
        raise CgroupUnavailable(
            f"no cgroup hierarchy with the {'/'.join(V1_REQUIRED)} controllers at {root}: "
            "hosted bots need cgroup v2 (memory, pids, cpu delegated) or v1 "
            "(memory, pids, cpu, cpuacct mounted; freezer too, else freezing uses signals)"
        )
    try:
        if version == 2:
            top = root / parent
            top.mkdir(exist_ok=True)
            wanted = " ".join(f"+{c}" for c in V2_CONTROLLERS)
            _write(root / "cgroup.subtree_control", wanted)
            _write(top / "cgroup.subtree_control", wanted)
            freezer = (top / "cgroup.freeze").exists()
        else:
            freezer = (root / "freezer").is_dir()
            for c in V1_CONTROLLERS if freezer else V1_REQUIRED:
                (root / c / parent).mkdir(exist_ok=True)
    except OSError as exc:
        raise CgroupUnavailable(
            f"cgroup v{version} at {root} is not writable ({exc.strerror}): run the bot "
            "supervisor as root, or delegate a cgroup subtree to its user"
        ) from exc
    return Hierarchy(version, root, parent, freezer and not signal_freeze)
