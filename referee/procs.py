"""Child processes of the platform: the ``arena`` command line, the referee's ready line, and
stopping a child politely.

Everything that runs the platform as processes (``arena up``, the seasons platform, the
``arena bot check`` harness, the end-to-end tests) starts and stops its children through
these few functions, so they all agree on how a referee says it is ready and how long a
child gets to shut down before it is killed.
"""

from __future__ import annotations

import ctypes
import gc
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import IO, Any, Final

_PR_SET_PDEATHSIG: Final = 1


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (no-op elsewhere).

    Meant for a child's ``preexec_fn`` or the first line of a child process's body, so that
    no platform process outlives the one that started it."""
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig)


#: How the referee announces itself (``referee.gateway.server.serve`` prints it, flushed).
LISTENING = re.compile(r"referee listening on (\S+)")


def arena_command(*args: str) -> list[str]:
    """``arena ARGS`` run with this interpreter (works without the console script)."""
    return [sys.executable, "-m", "referee.cli.main", *args]


def listening_address(text: str) -> str | None:
    """The ``HOST:PORT`` of the first ``referee listening on HOST:PORT`` line in ``text``."""
    found = LISTENING.search(text)
    return found.group(1) if found else None


def stop_process(
    proc: subprocess.Popen[Any], timeout: float = 10.0, sig: int = signal.SIGTERM
) -> int:
    """Send ``sig`` (SIGTERM: a graceful stop), wait up to ``timeout`` seconds, then SIGKILL
    and reap. A child that has already exited is only reaped. Returns its exit code."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


class RefereeStartError(RuntimeError):
    """The referee exited, or printed no ``referee listening on`` line in time (the message
    carries the output it did print)."""


def _pump(stream: IO[bytes], lines: list[str], on_line: Callable[[str], None] | None) -> None:
    with stream:  # closed at the child's end: no unclosed-file warning later
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            lines.append(line)
            if on_line is not None:
                on_line(line)


ERROR_PREFIX = "arena: error: "
"""How the CLI's one error line starts (``referee.cli.main``)."""


def _why_exited(lines: list[str]) -> str:
    """A referee's reason for exiting, from its output: its own error line when it printed
    one (one line: a taken port, a missing TLS file...), else its last 20 lines."""
    errors = [line for line in lines if line.startswith(ERROR_PREFIX)]
    if errors:
        return errors[-1][len(ERROR_PREFIX) :]
    return "its output:\n" + "\n".join(lines[-20:])


def start_referee(
    redis_url: str,
    *args: str,
    timeout: float = 60.0,
    on_line: Callable[[str], None] | None = None,
    **popen: Any,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``arena referee --port 0 --http-port 0 ARGS`` on ``redis_url`` and wait for its
    ``referee listening on HOST:PORT`` line; returns the process and ``HOST:PORT``.

    Its output (stdout and stderr) is read to the end by a daemon thread, so the pipe never
    fills; each line goes to ``on_line`` if given. ``popen`` are extra ``subprocess.Popen``
    arguments (``env``, ``cwd``, ``preexec_fn``...). Later ``--port``/``--http-port`` in
    ``args`` override the zeros. Stop it with :func:`stop_process`. On failure the process
    is stopped and :class:`RefereeStartError` raised.

    The URL (it may hold a password) goes to the child as ``$ARENA_REDIS_URL``, never on
    its command line, which every user of the host can read in ``ps``.
    """
    env = dict(popen.pop("env", None) or os.environ)
    env["ARENA_REDIS_URL"] = redis_url
    proc = subprocess.Popen(
        arena_command("referee", "--port", "0", "--http-port", "0", *args),
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **popen,
    )
    assert proc.stdout is not None
    lines: list[str] = []
    reader = threading.Thread(target=_pump, args=(proc.stdout, lines, on_line), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    while True:
        exited = proc.poll() is not None
        if exited:
            reader.join(10.0)  # take the last lines it printed (EOF comes at its exit)
        address = next(filter(None, map(listening_address, list(lines))), None)
        if address:
            return proc, address
        if exited or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    stop_process(proc)
    from referee.embedded_redis import redacted_url  # (embedded_redis imports this module)

    if exited:
        raise RefereeStartError(
            f"the referee exited with code {proc.returncode} after "
            f"{time.monotonic() - (deadline - timeout):.1f} s: {_why_exited(lines)}"
        )
    tail = "\n".join(lines[-20:])
    raise RefereeStartError(
        f"the referee (redis {redacted_url(redis_url)}) did not print 'referee listening on "
        f"HOST:PORT' within {timeout:g} s (exit code {proc.returncode}); its output:\n{tail}"
    )


def settle_garbage_collector() -> None:
    """Collect once, then put every object alive now out of the cyclic collector's reach
    (``gc.freeze``): a platform process calls it once, with its modules imported (gRPC,
    protobuf descriptors, the platform's own: about 80,000 objects in a co-hosting
    referee), just before its event loop starts. A full collection stops the event loop, and every
    match on it, while it scans all of them, and in a match host it finds almost nothing
    to free: in 20 s runs of 64 matches at a time its pauses went from 20-131 ms (416-459
    ms in all) to 20-60 ms (140-195 ms in all), docs/performance.md. Objects made later
    are collected as before; these stay until the process ends, as they would anyway."""
    gc.collect()
    gc.freeze()
