"""The sandbox primitive on the real bubblewrap: what a sandboxed program can and cannot
reach."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from referee.hosting.sandbox import SCRATCH, WALL_TIME_STATUS, Mount, SandboxLimits, sandbox_argv

UID = 64100


def run(
    script: str,
    *,
    mounts: tuple[Mount, ...] = (),
    limits: SandboxLimits | None = None,
    workdir: str = SCRATCH,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    argv = sandbox_argv(
        ["/bin/sh", "-c", script],
        workdir=workdir,
        mounts=mounts,
        uid=UID,
        limits=limits or SandboxLimits(wall_s=20),
        env=env,
    )
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


pytestmark = pytest.mark.usefixtures("sandbox")


def test_the_program_runs_as_its_own_user_with_no_capabilities() -> None:
    done = run("id -u; id -g; id -G; grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status")
    lines = done.stdout.split("\n")
    assert lines[:3] == [str(UID)] * 3, done
    assert all(line.endswith("0000000000000000") for line in lines[3:6]), done


def test_no_network_but_its_own_loopback() -> None:
    script = (
        'python3 -c "import socket\n'
        "for host in ('1.1.1.1', '127.0.0.53'):\n"
        "    try: socket.create_connection((host, 53), timeout=2); print('connected', host)\n"
        "    except OSError as e: print('refused', host, e.errno)\n"
        "try: socket.getaddrinfo('example.com', 80); print('resolved')\n"
        "except OSError: print('no resolution')\n"
        "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
        "c = socket.create_connection(s.getsockname()); print('loopback ok')\""
    )
    done = run(script)
    assert "connected" not in done.stdout and "resolved" not in done.stdout, done
    assert "no resolution" in done.stdout and "loopback ok" in done.stdout, done


def test_only_the_system_and_its_mounts_are_visible(tmp_path: Path) -> None:
    bot = tmp_path / "bot"
    bot.mkdir()
    (bot / "code.sh").write_text("echo hi\n")
    done = run(
        "ls / | tr '\\n' ' '; echo; test -e /work && echo SEES_WORK;"
        " test -e /root && echo SEES_ROOT; test -e /etc/passwd && echo SEES_PASSWD;"
        " test -e /etc/ssl/private && echo SEES_SSL_PRIVATE;"
        f" test -e {tmp_path} && echo SEES_HOST_TMP; cat /bot/code.sh",
        mounts=(Mount(bot, "/bot"),),
    )
    assert "SEES" not in done.stdout, done
    top = set(done.stdout.split("\n")[0].split())
    system = {"bin", "sbin", "lib", "lib32", "lib64", "libx32", "usr", "etc", "proc", "dev"}
    assert top <= system | {"tmp", "bot"} and "bot" in top, done
    assert "echo hi" in done.stdout, done


def test_writes_only_in_scratch_and_writable_mounts(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    rw = tmp_path / "rw"
    ro.mkdir()
    rw.mkdir()
    os.chown(rw, UID, UID)
    done = run(
        "for f in /usr/x /etc/x /x /ro/x /rw/x /tmp/x; do "
        "(echo data > $f) 2>/dev/null && echo wrote $f || echo refused $f; done",
        mounts=(Mount(ro, "/ro"), Mount(rw, "/rw", writable=True)),
    )
    wrote = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("wrote")}
    assert wrote == {"/rw/x", "/tmp/x"}, done
    assert (rw / "x").stat().st_uid == UID
    assert list(ro.iterdir()) == []


def test_the_scratch_is_limited_to_its_disk_share() -> None:
    done = run(
        "dd if=/dev/zero of=/tmp/big bs=1M count=8 2>&1; rm /tmp/big;"
        " for f in a b c; do dd if=/dev/zero of=/tmp/$f bs=512K count=3 2>&1; done;"
        " du -sk /tmp",
        limits=SandboxLimits(disk_mb=2, wall_s=20),
    )
    assert "File size limit exceeded" in done.stdout, done  # one file: RLIMIT_FSIZE
    assert "No space left on device" in done.stdout, done  # all files: the tmpfs
    assert int(done.stdout.split()[-2]) <= 2048, done


def test_the_environment_is_cleared_and_the_host_processes_unseen() -> None:
    os.environ["HOSTING_TEST_SECRET"] = "s3cret"
    try:
        done = run("env; echo ---; ls /proc | grep -c '^[0-9]'", env={"BOT": "x"})
    finally:
        del os.environ["HOSTING_TEST_SECRET"]
    variables, processes = done.stdout.split("---")
    assert "s3cret" not in variables and "BOT=x" in variables, done
    assert int(processes) < 5, done  # its own pid namespace: bwrap's init, sh, ls, grep


def test_a_fork_bomb_hits_the_process_limit() -> None:
    done = run(
        'python3 -c "import os, time\n'
        "n = 0\n"
        "try:\n"
        "    while n < 100:\n"
        "        if os.fork() == 0: time.sleep(5); os._exit(0)\n"
        "        n += 1\n"
        "except OSError: print('refused after', n)\"",
        limits=SandboxLimits(pids=16, wall_s=20),
    )
    assert done.stdout.startswith("refused after"), done
    assert int(done.stdout.split()[-1]) < 16, done


def test_the_wall_limit_kills_the_whole_sandbox() -> None:
    started = time.monotonic()
    done = run("sleep 30 & sleep 30", limits=SandboxLimits(wall_s=1))
    assert time.monotonic() - started < 15
    assert done.returncode == WALL_TIME_STATUS, done
    deadline = time.monotonic() + 10  # killed at once; reaped a moment later
    while True:
        alive = subprocess.run(["pgrep", "-u", str(UID)], capture_output=True, check=False)
        if alive.stdout == b"" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert alive.stdout == b"", alive


def test_the_memory_limit_refuses_a_large_allocation() -> None:
    done = run(
        "python3 -c 'b = bytearray(200 * 1024 * 1024); print(len(b))'",
        limits=SandboxLimits(memory_mb=64, wall_s=20),
    )
    assert done.returncode != 0 and "MemoryError" in done.stderr, done


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        ({"uid": 0}, "unprivileged user id"),
        ({"workdir": "bot"}, "absolute path"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, object], words: str) -> None:
    args: dict[str, object] = {
        "workdir": SCRATCH,
        "mounts": (),
        "uid": UID,
        "limits": SandboxLimits(),
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=words):
        sandbox_argv(["true"], **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("target", "words"),
    [
        ("bot", "absolute"),
        ("/bot/../etc", "'..'"),
        ("/usr", "the sandbox's own"),
        ("/proc/1", "own"),
    ],
)
def test_bad_mount_targets_are_refused(target: str, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        Mount(Path("/tmp"), target)


def test_bad_limits_are_refused() -> None:
    with pytest.raises(ValueError, match="memory_mb must be a positive integer"):
        SandboxLimits(memory_mb=0)


def test_no_signal_reaches_a_process_outside_the_sandbox() -> None:
    neighbour = subprocess.Popen(
        sandbox_argv(
            ["/bin/sleep", "30"],
            workdir=SCRATCH,
            mounts=(),
            uid=UID + 1,
            limits=SandboxLimits(wall_s=40),
        )
    )
    try:
        deadline = time.monotonic() + 20  # a loaded machine starts it late
        while True:
            found = subprocess.run(
                ["pgrep", "-u", str(UID + 1), "-x", "sleep"], capture_output=True, text=True
            )
            if found.stdout.strip() or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        targets = [os.getpid(), 1, *map(int, found.stdout.split())]
        assert len(targets) == 3, found  # the neighbour's sleep runs, under its own user
        done = run(" ; ".join(f"kill -9 {pid} 2>&1 || echo failed {pid}" for pid in targets))
        assert all(f"failed {pid}" in done.stdout for pid in targets if pid != 1), done
        assert neighbour.poll() is None  # the neighbour still runs
    finally:
        neighbour.kill()
        neighbour.wait()


def test_a_missing_sandbox_is_refused_naming_what_is_missing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from referee.hosting import sandbox as module
    from referee.hosting.errors import SandboxUnavailable

    monkeypatch.setattr(module, "_checked", False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SandboxUnavailable, match=r"bubblewrap \(bwrap\) is not installed"):
        module.require_sandbox()
    monkeypatch.undo()
    monkeypatch.setattr(module, "_checked", False)
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(SandboxUnavailable, match="need root to give each bot a user id"):
        module.require_sandbox()
