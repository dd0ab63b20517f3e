"""How much of the machine the platform takes by default: ``arena up`` and ``arena worker``
without ``-n`` / ``--matches`` (docs/workers.md "Sizing to the machine").

The rule, in the order it is applied:

* **cores**: the CPUs this process may run on (its affinity mask, which a container's
  cpuset narrows) and, when a cgroup CPU quota is set, no more than the quota;
* **room for bots**: a quarter of the cores, rounded up (or ``--reserve-cores``), is left for
  the bots on this machine (hosted bots run on the platform's own cores, and an SDK bot
  spends about as much CPU per decision as the platform does), never all of them: 1 core
  of 2 to 4, 2 of 8, 4 of 16. On 2 cores that is one platform process: ``bench/cores.py``
  measured a second process there (a separate host, which costs more CPU per decision
  than co-hosted matches) no faster than one process with as many slots, since the bots
  share the two cores;
* **processes**: ``max(1, cores - reserved)``. ``arena up`` runs one of them as the referee
  (which co-hosts matches) and the rest as separate match hosts; ``arena worker`` runs them
  all as match hosts;
* **matches per process**: as memory allows, a quarter of the available memory shared by
  the processes at :data:`MB_PER_MATCH` each, between :data:`DEFAULT_MATCHES` and
  :data:`MAX_MATCHES` (a match in a host holds about 0.4 MB: 145 MB for the referee with 256
  matches in the README's scale row; 1 MB leaves the margin). The cap is the most one
  process was measured running with no timeouts (the scale row): past it a busy process's
  loop would lag, and the lag would be stamped on the bots' think time. More slots than the
  queue needs cost nothing: a host takes a match from the queue only when a slot is free.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from referee.defaults import DEFAULT_MATCHES

MB_PER_MATCH: Final = 1.0
MAX_MATCHES: Final = 256
MEMORY_SHARE: Final = 0.25
"""The share of the available memory the platform's matches may take."""


@dataclass(frozen=True)
class Sizing:
    cores: int
    reserved: int
    processes: int
    matches: int
    memory_mb: int | None

    def describe(self) -> str:
        memory = f"{self.memory_mb:,} MB available" if self.memory_mb else "memory unknown"
        return (
            f"{self.cores} core(s), {self.reserved} left for bots: {self.processes} "
            f"process(es) x {self.matches} matches ({memory})"
        )


def usable_cores(cgroup_root: Path = Path("/sys/fs/cgroup")) -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 quota."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        quota, period = (cgroup_root / "cpu.max").read_text().split()[:2]
        if quota != "max":
            cores = min(cores, max(1, int(int(quota) // int(period))))
    except (OSError, ValueError):
        pass
    return max(1, cores)


def available_memory_mb(
    meminfo: Path = Path("/proc/meminfo"), cgroup_root: Path = Path("/sys/fs/cgroup")
) -> int | None:
    """``MemAvailable``, capped by a cgroup v2 memory limit; None when neither is known."""
    available: int | None = None
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) // 1024
                break
    except (OSError, ValueError):
        pass
    try:
        limit = (cgroup_root / "memory.max").read_text().strip()
        used = int((cgroup_root / "memory.current").read_text().strip())
        if limit != "max":
            room = max(0, (int(limit) - used) // (1024 * 1024))
            available = room if available is None else min(available, room)
    except (OSError, ValueError):
        pass
    return available


def size(cores: int, memory_mb: int | None, reserve: int | None = None) -> Sizing:
    """The platform's processes and matches per process on ``cores`` CPUs and
    ``memory_mb`` of available memory (the module's rule); ``reserve``: cores left for bots
    (None: a quarter, rounded up)."""
    if cores < 1:
        raise ValueError(f"cores must be at least 1, not {cores}")
    if reserve is not None and reserve < 0:
        raise ValueError(f"--reserve-cores {reserve}: use 0 (no room for bots) or more")
    wanted = -(-cores // 4) if reserve is None else reserve
    reserved = min(wanted, cores - 1)
    processes = max(1, cores - reserved)
    matches = DEFAULT_MATCHES
    if memory_mb is not None:
        fit = int(memory_mb * MEMORY_SHARE / processes / MB_PER_MATCH)
        matches = max(DEFAULT_MATCHES, min(MAX_MATCHES, fit))
    return Sizing(cores, reserved, processes, matches, memory_mb)


def this_machine(reserve: int | None = None) -> Sizing:
    """:func:`size` for the machine this process runs on."""
    return size(usable_cores(), available_memory_mb(), reserve)
