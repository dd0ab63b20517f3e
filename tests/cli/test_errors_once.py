"""Every ``arena`` subcommand against a dead Redis: one ``arena: error:`` line on stderr and
a non-zero exit, never a traceback (the CLI handles errors in one place).

The table below names an argv for every subcommand of the parser; a new subcommand that is
not in it (or in ``NO_REDIS``) fails the first test, so it gets checked too.
"""

from __future__ import annotations

import argparse
import os
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from referee.cli.main import build_parser
from referee.cli.main import main as arena_main
from referee.embedded_redis import free_port
from referee.procs import arena_command

ROOT = Path(__file__).resolve().parents[2]

REDIS_COMMANDS: dict[str, list[str]] = {
    "referee": ["referee", "--port", "0", "--http-port", "0"],
    "bot register": ["bot", "register", "alice"],
    "bot list": ["bot", "list"],
    "bot revoke": ["bot", "revoke", "alice"],
    "bot rotate-token": ["bot", "rotate-token", "alice"],
    "bot check": ["bot", "check", "--server", "127.0.0.1:1"],  # token from $ARENA_TOKEN
    "bot submit": ["bot", "submit", "alice", "."],
    "bot versions": ["bot", "versions", "alice"],
    "bot builds": ["bot", "builds", "alice"],
    "bot build": ["bot", "build", "alice", "1"],
    "bot events": ["bot", "events", "alice"],
    "bots run": ["bots", "run", "--socket", "."],
    "up": ["up", "--port", "0", "--http-port", "0"],
    "worker": ["worker"],
    "replay": ["replay", "m1"],
    "match run": ["match", "run", "--game", "sevens", "--preset", "sevens", "--bots", "a,b,c"],
    "match status": ["match", "status", "m1"],
    "match list": ["match", "list"],
    "season create": ["season", "create", "--game", "sevens", "--bots", "a,b,c,d", "--deals", "4"],
    "season start": ["season", "start", "s1"],
    "season pause": ["season", "pause", "s1"],
    "season resume": ["season", "resume", "s1"],
    "season cancel": ["season", "cancel", "s1"],
    "season status": ["season", "status", "s1"],
    "season list": ["season", "list"],
    "season standings": ["season", "standings", "s1"],
    "season export": ["season", "export", "s1", "EXPORT_DIR"],
    "season archive": ["season", "archive", "s1"],
    "season verify": ["season", "verify", "s1"],
    "season watch": ["season", "watch", "s1"],
    "season collusion": ["season", "collusion", "s1"],
    "standings": ["standings", "s1", "--json"],
    "ladder serve": ["ladder", "serve", "--server", "127.0.0.1:1"],
    "ladder gauntlet": ["ladder", "gauntlet", "alice"],
    "ladder start": ["ladder", "start", "--bots", "a,b"],
    "ladder pause": ["ladder", "pause", "l1"],
    "ladder resume": ["ladder", "resume", "l1"],
    "ladder status": ["ladder", "status", "l1"],
    "ladder replay": ["ladder", "replay", "l1"],
    "ladder standings": ["ladder", "standings", "l1"],
    "ladder join": ["ladder", "join", "l1", "alice"],
    "ladder leave": ["ladder", "leave", "l1", "alice"],
    "ladder list": ["ladder", "list"],
    "bot test": ["bot", "test", "alice", "--against", "bob"],
    "play": ["play", "--against", "a,b"],
}
NO_REDIS = {"presets", "selfplay", "demo", "bridge"}
"""Commands that talk to no Redis of the user's (demo starts its own)."""


def _leaves(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _leaves(sub, (*prefix, name))
            return
    yield " ".join(prefix)


def test_the_table_names_every_subcommand() -> None:
    leaves = set(_leaves(build_parser()))
    assert leaves - NO_REDIS == set(REDIS_COMMANDS), "add the new subcommand to REDIS_COMMANDS"


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        arena_command(*argv), capture_output=True, text=True, env=env, cwd=ROOT, timeout=120
    )


def _one_error_line(name: str, code: int, err: str) -> str | None:
    """``None`` when ``err`` is the one line of a dead Redis, else what is wrong."""
    lines = err.strip().splitlines()
    if (
        code != 0
        and len(lines) == 1
        and lines[0].startswith("arena: error: cannot talk to the Redis at redis://127.0.0.1")
    ):
        return None
    return f"arena {name}: exit {code}, stderr {err!r}"


def test_every_subcommand_reports_a_dead_redis_in_one_line(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """In process (one import of the CLI, so it stays fast): stderr at the descriptor level,
    so log lines or warnings would count too."""
    dead = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    monkeypatch.setenv("ARENA_TOKEN", "arena_nobody")
    monkeypatch.setenv("ARENA_DATA_DIR", str(tmp_path / "data"))
    problems = []
    for name, argv in REDIS_COMMANDS.items():
        argv = [a.replace("EXPORT_DIR", str(tmp_path / "export")) for a in argv]
        code = arena_main([*argv, "--redis-url", dead])
        problem = _one_error_line(name, code, capfd.readouterr().err)
        if problem:
            problems.append(problem)
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_the_commands_that_printed_tracebacks_print_one_line_as_processes(tmp_path: Path) -> None:
    """As real processes (nothing at interpreter exit either): the commands of the issue."""
    dead = f"redis://127.0.0.1:{free_port()}/0"
    env = {**os.environ, "ARENA_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    names = ["season list", "standings", "replay", "match list"]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(
            pool.map(lambda n: _run([*REDIS_COMMANDS[n], "--redis-url", dead], env), names)
        )
    problems = [
        _one_error_line(n, r.returncode, r.stderr) for n, r in zip(names, results, strict=True)
    ]
    assert not [p for p in problems if p], problems


def test_without_any_redis_the_error_names_the_data_dir_it_looked_in(tmp_path: Path) -> None:
    """Item 11: from any folder, the platform is found through the data dir; when there is
    none running, the one line says which data dir was searched."""
    data = tmp_path / "somewhere"
    env = {**os.environ, "ARENA_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    env.pop("ARENA_REDIS_URL", None)
    result = _run(["season", "list"], env)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("arena: error: no Redis to talk to")
    assert f"data dir {data}" in line


def test_a_closed_stdout_ends_quietly(tmp_path: Path) -> None:
    """``arena ... | head`` closes the pipe early: no BrokenPipeError traceback."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        arena_command("presets", "--json"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the command writes
    err = proc.stderr.read().decode()
    proc.stderr.close()
    proc.wait(60)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
