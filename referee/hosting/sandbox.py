"""The sandbox primitive: the command line that runs a submitted program contained.

One function, :func:`sandbox_argv`, turns a command into the command line that runs it under
bubblewrap (``bwrap``), with rlimits (``prlimit``) as the floor beneath the cgroups that the
run side adds, and a wall-time backstop (``timeout``). Builds and play use the same
primitive with their own :class:`SandboxLimits`.

What the program sees and may do:

* its own pid, IPC, UTS and cgroup namespaces and a network namespace of its own holding only
  a loopback (no route out, no name resolution): ``network=False``, always, for builds and
  play;
* a read-only system: ``/usr`` (and ``/bin``, ``/lib*``, ``/sbin`` as on the host), the few
  files of ``/etc`` that compilers and runtimes read (:data:`ETC_FILES`); no ``/work``, no
  ``/root``, no data dir, no other bot: only what the caller mounts (:class:`Mount`);
* ``/proc`` of its own pid namespace, a minimal ``/dev``, and a private writable ``/tmp``: a
  tmpfs of ``limits.disk_mb`` (its scratch folder, ``HOME``), gone when the sandbox ends;
* its own user id: bwrap starts as root without a user namespace, keeps only ``CAP_SETUID``
  and ``CAP_SETGID`` for the sandbox, and ``setpriv`` drops to ``uid``/``uid`` with no
  supplementary groups, no capabilities left (inheritable, ambient, bounding) and
  ``no_new_privs``, so the program runs as a plain host user that owns nothing outside;
* a new session (no terminal to push input into), killed with its parent
  (``--die-with-parent``), an empty environment except ``PATH``, ``HOME``, ``LANG`` and what
  the caller passes (never a secret: every value is on the command line, visible in ``ps``).

Why not ``--unshare-all``: as root it makes a user namespace that maps only uid 0, so the
program could not take a user id of its own; the namespaces are listed one by one instead,
all but the user namespace.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from referee.hosting.errors import SandboxUnavailable

MIB = 1024 * 1024

#: Files and folders of the host's /etc bound read-only when present: the dynamic loader's
#: cache, the compiler alternatives (``cc``, ``c++``), OpenSSL's configuration (Node reads
#: it at start; not /etc/ssl/private), Perl's and the time zone. No passwd, no hosts, no
#: secrets.
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/ssl/openssl.cnf",
    "/etc/perl",
    "/etc/localtime",
)

#: Top-level system folders: bound read-only, or re-created as the same symlink where the
#: host merges them into /usr.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")

#: The sandbox's only writable folder, a size-limited tmpfs; also ``HOME``.
SCRATCH = "/tmp"

#: Mount points a caller may not take: they hold the system or the sandbox's own mounts.
RESERVED_TARGETS = ("/", "/usr", "/etc", "/proc", "/dev", SCRATCH, *SYSTEM_DIRS)

#: The exit status of a sandbox killed at ``limits.wall_s`` (``timeout``'s).
WALL_TIME_STATUS = 124

PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandbox may use. ``memory_mb`` is the data segment of each process
    (``RLIMIT_DATA``; the run side's cgroup bounds the whole tree), ``pids`` the processes
    of its user id (``RLIMIT_NPROC``), ``open_files`` per process, ``disk_mb`` the scratch
    tmpfs and the largest file it may write anywhere (``RLIMIT_FSIZE``), ``cpu_s`` the CPU
    seconds of each process (``RLIMIT_CPU``), ``wall_s`` the whole sandbox's wall time (it
    is killed after)."""

    memory_mb: int = 512
    pids: int = 64
    open_files: int = 256
    disk_mb: int = 256
    cpu_s: int | None = None
    wall_s: float | None = None

    def __post_init__(self) -> None:
        for name in ("memory_mb", "pids", "open_files", "disk_mb"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"sandbox limit {name} must be a positive integer, not {value!r}")
        if self.cpu_s is not None and self.cpu_s < 1:
            raise ValueError(f"sandbox limit cpu_s must be at least 1 second, not {self.cpu_s!r}")
        if self.wall_s is not None and self.wall_s <= 0:
            raise ValueError(f"sandbox limit wall_s must be positive, not {self.wall_s!r}")


@dataclass(frozen=True)
class Mount:
    """A host path bound at ``target`` inside the sandbox, read-only unless ``writable``."""

    source: Path
    target: str
    writable: bool = False

    def __post_init__(self) -> None:
        target = self.target
        if not target.startswith("/") or ".." in target.split("/"):
            raise ValueError(f"mount target {target!r} must be an absolute path without '..'")
        normal = os.path.normpath(target)
        if normal in RESERVED_TARGETS or normal.startswith(("/proc/", "/dev/")):
            raise ValueError(
                f"mount target {target!r} is the sandbox's own; mount under another folder "
                "(e.g. /bot, /opt/NAME, /run/arena)"
            )


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SandboxUnavailable(_MISSING[name])
    return path


_MISSING = {
    "bwrap": "bubblewrap (bwrap) is not installed: `apt-get install bubblewrap` (Debian/Ubuntu); "
    "hosted bots are never run without a sandbox",
    "prlimit": "prlimit is not installed (util-linux): `apt-get install util-linux`",
    "timeout": "timeout is not installed (coreutils): `apt-get install coreutils`",
}

#: setpriv runs inside the sandbox, from its read-only /usr.
SETPRIV = "/usr/bin/setpriv"


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--perms", "0755", "--dir", "/etc"]
    for path in ETC_FILES:
        parent = os.path.dirname(path)
        if parent != "/etc" and os.path.exists(path):
            args += ["--perms", "0755", "--dir", parent]  # bwrap would make it 0700
        args += ["--ro-bind-try", path, path]
    return args


def _parents(target: str, made: set[str]) -> list[str]:
    """``--dir`` for the folders above ``target`` not made yet, world-readable: bwrap would
    make them 0700 as root, and the sandboxed user could not reach the mount."""
    args: list[str] = []
    parent = os.path.dirname(os.path.normpath(target))
    missing: list[str] = []
    while parent not in made and parent != "/":
        missing.append(parent)
        parent = os.path.dirname(parent)
    for folder in reversed(missing):
        args += ["--perms", "0755", "--dir", folder]
        made.add(folder)
    made.add(os.path.normpath(target))
    return args


def _prlimit(limits: SandboxLimits) -> list[str]:
    mib = MIB
    args = [
        _tool("prlimit"),
        f"--data={limits.memory_mb * mib}",
        f"--nproc={limits.pids}",
        f"--nofile={limits.open_files}",
        f"--fsize={limits.disk_mb * mib}",
        "--core=0",
    ]
    if limits.cpu_s is not None:
        # soft: SIGXCPU (catchable, a chance to log); hard one second later: SIGKILL
        args.append(f"--cpu={limits.cpu_s}:{limits.cpu_s + 1}")
    return [*args, "--"]


def sandbox_argv(
    command: Sequence[str],
    *,
    workdir: str,
    mounts: Sequence[Mount],
    uid: int,
    limits: SandboxLimits,
    network: bool = False,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """The command line that runs ``command`` in the sandbox as user and group ``uid``, in
    ``workdir`` (a mount target or the scratch folder). ``env`` adds variables to the empty
    environment; values appear on the command line, so never pass a secret (hand it over a
    mounted file or the socket instead). ``network=True`` keeps the host's network (for an
    operator's own tools only; builds and bots never get it)."""
    if not command:
        raise ValueError("sandbox_argv needs a command to run")
    if isinstance(uid, bool) or not isinstance(uid, int) or uid < 1000 or uid >= 2**31:
        raise ValueError(f"sandbox uid must be an unprivileged user id (1000 or more), not {uid!r}")
    if not workdir.startswith("/"):
        raise ValueError(f"sandbox workdir {workdir!r} must be an absolute path")
    argv: list[str] = []
    if limits.wall_s is not None:
        # TERM to bwrap, KILL 2 s later; the whole sandbox dies with bwrap
        # (--die-with-parent, pid namespace); exit status WALL_TIME_STATUS
        argv += [_tool("timeout"), "--kill-after=2", f"{limits.wall_s:g}"]
    argv += _prlimit(limits)
    argv += [_tool("bwrap"), "--unshare-ipc", "--unshare-pid", "--unshare-uts"]
    argv += ["--unshare-cgroup-try", "--hostname", "sandbox"]
    if not network:
        argv.append("--unshare-net")
    argv += ["--die-with-parent", "--new-session"]
    argv += _system_binds()
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--perms", "1777", "--size", str(limits.disk_mb * MIB), "--tmpfs", SCRATCH]
    made = {"/", SCRATCH, *SYSTEM_DIRS, "/etc", "/proc", "/dev"}
    for mount in mounts:
        if not mount.source.exists():
            raise ValueError(f"mount source {mount.source} does not exist")
        argv += _parents(mount.target, made)
        flag = "--bind" if mount.writable else "--ro-bind"
        argv += [flag, str(mount.source), mount.target]
    argv += ["--chdir", workdir, "--clearenv"]
    variables = {"PATH": PATH, "HOME": SCRATCH, "LANG": "C.UTF-8", "TMPDIR": SCRATCH}
    variables.update(env or {})
    for name, value in variables.items():
        argv += ["--setenv", name, value]
    argv += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--"]
    argv += [SETPRIV, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
    argv += ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"]
    return [*argv, *command]


#: The user id :func:`require_sandbox` tries the sandbox with.
PROBE_UID = 65533

_checked = False


def require_sandbox() -> None:
    """Raise :class:`SandboxUnavailable`, saying what is missing, unless a sandboxed
    program can run here: bwrap, prlimit, timeout and setpriv present, root (to give each
    bot a user id of its own) and namespaces allowed. A success is remembered."""
    global _checked
    if _checked:
        return
    for name in ("bwrap", "prlimit", "timeout"):
        _tool(name)
    if not os.path.exists(SETPRIV):
        raise SandboxUnavailable(f"{SETPRIV} is missing (util-linux): `apt-get install util-linux`")
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            f"hosted bots need root to give each bot a user id of its own (running as uid "
            f"{os.geteuid()}): run the hosting process as root, in a container if need be"
        )
    argv = sandbox_argv(
        ["/bin/sh", "-c", "exit 0"],
        workdir=SCRATCH,
        mounts=(),
        uid=PROBE_UID,
        limits=SandboxLimits(wall_s=30),
    )
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxUnavailable(f"bubblewrap could not start a sandbox: {exc}") from exc
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        raise SandboxUnavailable(
            f"bubblewrap could not start a sandbox here ({why[0]}); it needs pid, network "
            "and mount namespaces (a container must allow them, e.g. docker --privileged or "
            "a seccomp profile that permits unshare and mount)"
        )
    _checked = True
