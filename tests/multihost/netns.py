"""Several "machines" on this one: Linux network namespaces joined by a bridge.

A :class:`Network` is one test subnet (``198.18.17.0/24``, from the 198.18.0.0/15 range
that RFC 2544 sets aside for benchmarking, so it can clash with no real network). Each
:class:`Host` is a network namespace with a loopback and one veth link to a bridge that
lives in a namespace of its own (the "switch"): nothing of the test network is visible
in the machine's own namespace, no namespace has a default route, and so no packet can
leave the machine. :meth:`Network.cut` takes a host's cable out (its switch port down)
and :meth:`Network.mend` puts it back.

Processes run in a host with :meth:`Host.popen` (``ip netns exec``); they get
``PR_SET_PDEATHSIG`` so they die with the test process, and :meth:`Network.close` stops
them (SIGTERM, then SIGKILL), then deletes the namespaces, which deletes their links.
Every name starts with :data:`PREFIX` and the creating process's pid: :func:`sweep`
deletes what a crashed run (a pid that no longer exists) left behind, and runs before
every new network.

Needs root and iproute2's ``ip``; :func:`unavailable` says why not when it can't work.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import os
import re
import shutil
import signal
import subprocess
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from referee.procs import die_with_parent, stop_process

PREFIX = "arena-mh-"
"""Every namespace the harness makes is named ``arena-mh-<pid>-<n>-<host>``."""
SUBNET = "198.18.17"
"""The test network's /24 (RFC 2544 benchmarking range): addresses are ``SUBNET.x``."""
_CLONE_NEWNET = 0x40000000
_counter = itertools.count()
_NAME = re.compile(rf"^{re.escape(PREFIX)}(\d+)-")

T = TypeVar("T")


class NetnsError(RuntimeError):
    """An ``ip`` command failed (the message has the command and its output)."""


def ip(*args: str, check: bool = True) -> str:
    """Run ``ip ARGS``; raise :class:`NetnsError` with its output when it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise NetnsError(f"ip {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


def unavailable() -> str | None:
    """Why namespaces can't be used here, or None when they can (tried for real)."""
    if shutil.which("ip") is None:
        return "iproute2's `ip` is not installed (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root (CI runs as root; `sudo make test` here)"
    probe = f"{PREFIX}{os.getpid()}-probe"
    try:
        ip("netns", "add", probe)
        ip("-n", probe, "link", "add", "probe0", "type", "veth", "peer", "name", "probe1")
    except (NetnsError, subprocess.TimeoutExpired) as exc:
        return f"cannot create network namespaces and veth links here: {exc}"
    finally:
        ip("netns", "del", probe, check=False)
    return None


def namespaces() -> list[str]:
    """Names of the harness's namespaces that exist now (any owner)."""
    out = ip("netns", "list", check=False)
    return [line.split()[0] for line in out.splitlines() if line.startswith(PREFIX)]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill_inside(name: str) -> None:
    for pid in ip("netns", "pids", name, check=False).split():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.kill(int(pid), signal.SIGKILL)


def sweep(owner_alive: Callable[[int], bool] = _alive) -> list[str]:
    """Delete namespaces (with their processes and links) left by runs whose process is
    gone; returns their names. Another live run's namespaces are left alone."""
    swept = []
    for name in namespaces():
        found = _NAME.match(name)
        if found and owner_alive(int(found.group(1))):
            continue
        _kill_inside(name)
        ip("netns", "del", name, check=False)
        swept.append(name)
    return swept


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    die_with_parent(signal.SIGTERM)


@dataclass
class Host:
    """One namespace: ``address`` on its ``eth0``, loopback up, no default route."""

    network: Network
    name: str  # short: "redis", "referee-a", ...
    netns: str
    address: str
    port: str  # its cable's end in the switch namespace
    procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _executor: ThreadPoolExecutor | None = None

    def command(self, argv: list[str]) -> list[str]:
        return ["ip", "netns", "exec", self.netns, *argv]

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        """Start ``argv`` in this host; it dies with the test process and is stopped by
        :meth:`Network.close` (or earlier by :meth:`stop`)."""
        kw.setdefault("stdin", subprocess.DEVNULL)
        proc = subprocess.Popen(self.command(argv), preexec_fn=_die_with_parent, **kw)
        self.procs.append(proc)
        return proc

    def run(self, argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` to its end in this host (text output captured)."""
        kw.setdefault("capture_output", True)
        kw.setdefault("timeout", 60)
        return subprocess.run(self.command(argv), text=True, **kw)

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 15.0) -> int:
        code = stop_process(proc, timeout)
        with contextlib.suppress(ValueError):
            self.procs.remove(proc)
        return code

    def call(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(*args)`` on a thread of this process that has entered this host's
        namespace: sockets it opens are in this host (a Redis client of the test, say).
        Always the same thread, so a client made here keeps reconnecting from here."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                1, thread_name_prefix=f"netns-{self.name}", initializer=self._enter
            )
        return self._executor.submit(fn, *args).result()

    def _enter(self) -> None:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        with open(f"/run/netns/{self.netns}", "rb") as handle:
            if libc.setns(handle.fileno(), _CLONE_NEWNET) != 0:
                raise NetnsError(f"setns into {self.netns}: {os.strerror(ctypes.get_errno())}")

    def close(self) -> None:
        for proc in reversed(list(self.procs)):
            stop_process(proc, 10)
        self.procs.clear()
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None


class Network:
    """A switch namespace with a bridge, and hosts plugged into it. A context manager:
    everything (processes, namespaces, links) is gone after the ``with``, error or not."""

    def __init__(self, label: str = "net") -> None:
        sweep()
        self.id = f"{PREFIX}{os.getpid()}-{next(_counter)}"
        self.label = label
        self.switch = f"{self.id}-switch"
        self.hosts: dict[str, Host] = {}
        self._made: list[str] = []
        self._lock = threading.Lock()
        try:
            self._add_netns(self.switch)
            ip("-n", self.switch, "link", "set", "lo", "up")
            ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
            ip("-n", self.switch, "link", "set", "br0", "up")
        except BaseException:
            self.close()
            raise

    def _add_netns(self, name: str) -> None:
        ip("netns", "add", name)
        self._made.append(name)

    def add_host(self, name: str, last_octet: int) -> Host:
        """A new host at ``SUBNET.last_octet``/24, cabled to the switch."""
        netns = f"{self.id}-{name}"
        port = f"p{last_octet}"
        self._add_netns(netns)
        ip(
            "-n",
            self.switch,
            "link",
            "add",
            port,
            "type",
            "veth",
            "peer",
            "name",
            "eth0",
            "netns",
            netns,
        )
        ip("-n", self.switch, "link", "set", port, "master", "br0")
        ip("-n", self.switch, "link", "set", port, "up")
        address = f"{SUBNET}.{last_octet}"
        ip("-n", netns, "link", "set", "lo", "up")
        ip("-n", netns, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", netns, "link", "set", "eth0", "up")
        host = Host(self, name, netns, address, port)
        self.hosts[name] = host
        return host

    def cut(self, host: Host) -> None:
        """Pull the host's cable: its switch port goes down (the host sees no carrier)."""
        ip("-n", self.switch, "link", "set", host.port, "down")

    def mend(self, host: Host) -> None:
        ip("-n", self.switch, "link", "set", host.port, "up")

    @contextlib.contextmanager
    def cut_off(self, host: Host) -> Iterator[None]:
        """The host is cut off inside the ``with`` (and mended even if it raises)."""
        self.cut(host)
        try:
            yield
        finally:
            self.mend(host)

    def close(self) -> None:
        """Stop every process, then delete every namespace (their links go with them)."""
        with self._lock:
            for host in reversed(list(self.hosts.values())):
                host.close()
            for name in reversed(self._made):
                _kill_inside(name)
                ip("netns", "del", name, check=False)
            self._made.clear()
            self.hosts.clear()

    def __enter__(self) -> Network:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
