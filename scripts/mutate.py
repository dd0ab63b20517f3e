"""Mutation testing of the modules that decide results and fairness (``make mutate``).

For each area, copies the project to a temporary directory, runs mutmut there on the
area's modules with the area's tests, and prints the score and every surviving mutant as
``file:line: original -> mutated``. The working tree is never touched. Not part of
``make test``: a full run takes hours on two cores (docs/testing.md has the measured
scores and what each remaining survivor means).

    python scripts/mutate.py                      # every area
    python scripts/mutate.py standings clock      # some areas
    python scripts/mutate.py --list               # the areas and their files

Scores: killed / (killed + survived + timeout); mutants no test reaches ("no tests") are
counted separately, as survivors of a kind.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Area:
    """Modules to mutate, the fast unit tests that exercise them, and how to run them.

    ``fork=False`` runs each mutant's tests from mutmut's fork server instead of forking
    mutmut's own process: needed where the tests use gRPC (not fork-safe once started).
    ``deselect``: test ids of ``tests`` left out of the run (pytest ``--deselect``): slow
    cases whose kills other cases make too; a run without them can only count more
    survivors, never fewer (the comment above each area says which and why).
    ``functions``: the mutants run when no ``--functions`` is given (an area over some
    functions of a file: mutmut mutates whole files).
    """

    files: tuple[str, ...]
    tests: tuple[str, ...]
    fork: bool = True
    deselect: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()


AREAS: dict[str, Area] = {
    "engines-sevens": Area(
        ("referee/games/sevens/match.py", "referee/games/sevens/rules.py"),
        ("tests/sevens/test_clauses.py", "tests/sevens/test_match_api.py", "tests/games"),
    ),
    "engines-sedma": Area(
        (
            "referee/games/sedma/match.py",
            "referee/games/sedma/hand.py",
            "referee/games/sedma/rules.py",
        ),
        # tests/games: the contract tests (hidden information, records) for every game
        (
            "tests/sedma/test_match.py",
            "tests/sedma/test_hand.py",
            "tests/sedma/test_rules.py",
            "tests/games",
        ),
    ),
    "engines-common": Area(
        ("referee/games/base.py", "referee/games/cards.py", "referee/games/record.py"),
        ("tests/games", "tests/foundation/test_cards.py"),
    ),
    "clock": Area(("referee/match/clock.py",), ("tests/workers/test_clock.py",)),
    # The match loop the match host runs (workers/host.py calls runner.MatchRun and the
    # attempt ledger's start_attempt, reveal, commit, mark_failed), its fencing, the
    # decision asked, the notices and the record, and the spec's re-deal seeds and tally.
    "runner": Area(
        (
            "workers/runner.py",
            "workers/attempts.py",
            "workers/ask.py",
            "workers/notices.py",
            "workers/record.py",
            "referee/match/spec.py",
            "referee/games/loop.py",  # Walk: the one match loop the host walks
        ),
        # test_runner.py is left out: it starts a real referee process per module, i.e.
        # per mutant (about 20 s each here); test_match_loop.py plays the same loop with
        # scripted referee links, the others are unit tests with real Redis only.
        (
            "tests/workers/test_match_loop.py",
            "tests/workers/test_runner_pins.py",
            "tests/workers/test_begin_retry.py",  # start_attempt through an outage
            "tests/workers/test_clock.py",
            "tests/workers/test_queue.py",
            "tests/workers/test_match_states.py",  # the state machine and the seat tally
            "tests/workers/test_commit_drop.py",  # a commit whose reply was lost
            "tests/workers/test_records.py",  # the commit of a record store's pointer
            "tests/games/test_seeds.py",  # the seed derivations of referee/match/spec.py
            "tests/games/test_loop.py",
        ),
        fork=False,
        # a real S3 server (moto) per mutant: the record store's, not the runner's
        deselect=(
            "tests/workers/test_records.py::"
            "test_the_s3_store_keeps_records_on_a_real_server_and_says_when_it_is_away",
        ),
    ),
    # The six slowest cases (about 32 s of the file's 53 s, the largest tables of the same
    # property tests) are left out: a surviving mutant runs every case reaching it.
    "schedule": Area(
        ("referee/seasons/schedule.py",),
        ("tests/seasons/test_schedule.py",),
        deselect=tuple(
            f"tests/seasons/test_schedule.py::{case}"
            for case in (
                "test_balanced_design_pairs_seats_and_appearances[12-6]",
                "test_schedule_seats_and_dealers_rotate[12-6]",
                "test_schedule_seats_and_dealers_rotate[8-4]",
                "test_field_duplicate_never_deals_a_bot_a_shuffle_twice[sevens-10-5]",
                "test_field_duplicate_never_deals_a_bot_a_shuffle_twice[sevens-11-5]",
                "test_field_duplicate_never_deals_a_bot_a_shuffle_twice[sevens-12-4]",
            )
        ),
    ),
    "ratings": Area(("referee/seasons/ratings.py",), ("tests/seasons/test_ratings.py",)),
    # test_rank_by: the rank_by orders and their words (an embedded Redis, no process)
    "standings": Area(
        ("referee/seasons/standings.py",),
        ("tests/seasons/test_standings.py", "tests/seasons/test_rank_by.py"),
    ),
    # test_tokens and test_protocol run an in-process referee (no process per mutant): they
    # reach the interceptor and the token watch's stream ending over real gRPC.
    "auth": Area(
        ("referee/gateway/auth.py",),
        (
            "tests/gateway/test_auth.py",
            "tests/adversarial/test_tokens.py",
            "tests/gateway/test_protocol.py",
        ),
        fork=False,
    ),
    # The gateway's answer checks: does an action answer an open request of this bot's
    # stream (match, seat, request id, attempt), in time, once? Run with --functions
    # (ANSWER_CHECKS) to mutate only those functions of hub.py and session.py.
    "gateway-answers": Area(
        ("referee/gateway/hub.py", "referee/gateway/session.py"),
        ("tests/gateway/test_relay.py", "tests/gateway/test_answer_checks.py"),
        fork=False,
    ),
    # The season hash read and written as a typed row (the League API, web, metrics, CLI).
    "season-row": Area(("referee/match/season_row.py",), ("tests/seasons/test_season_row.py",)),
    # The one replay of a record's steps (record store, web replays, verification): its
    # functions only; the record told in words (``render_replay``) is wording.
    "replay": Area(
        ("referee/match/replay.py",),
        (
            "tests/workers/test_apply_steps.py",
            "tests/workers/test_replay_text.py",
            "tests/web/test_replay_frames.py",
        ),
        functions=tuple(
            f"referee.match.replay.x_{name}__mutmut_*"
            for name in (
                "_new_match",
                "apply_steps",
                "_applied_steps",
                "resimulate",
                "verify_record",
            )
        ),
    ),
}
# What a match host decides about its matches (workers/host.py): which attempts are
# superseded and which matches heartbeat (tick), what a played match ends as (_play), the
# commit retried while Redis is away (_commit), the matches handed back on a stop, a
# dequeued match started at once or its job ended (_dequeue), the backlog started several
# at once and a slot freed during the casual wait refilled (_start_more, _refill_while), a
# job a dead host dequeued but never started queued again (_give_back_unstarted_jobs).
HOST_DECISIONS = tuple(
    f"workers.host.xǁMatchHostǁ{name}__mutmut_*"
    for name in (
        "tick",
        "_play",
        "_reveal",
        "_commit",
        "_finish",
        "_hand_back",
        "_dequeue",
        "_refill_while",
        "_start_more",
        "_give_back_unstarted_jobs",
    )
)
AREAS["host"] = Area(
    ("workers/host.py",),
    ("tests/workers/test_host_decisions.py", "tests/metrics/test_host_totals.py"),
    fork=False,
    functions=HOST_DECISIONS,
)
# The gateway's answer checks in hub.py and session.py (``--functions`` patterns for
# gateway-answers):
# whether an answer is accepted (right match, attempt, seq and bot; once; in time: the send
# stamp, the TIMEOUT timer, the stamps the host judges by), which turns are refused or
# expire unsent, and what a bot is told of its answers (the accepted-results filter).
ANSWER_CHECKS = (
    "referee.gateway.session.xǁBotSessionǁ_on_action__mutmut_*",
    "referee.gateway.session.xǁBotSessionǁ_not_a_player__mutmut_*",
    "referee.gateway.session.xǁBotSessionǁ_close_request__mutmut_*",
    "referee.gateway.session.xǁBotSessionǁ_time_out__mutmut_*",
    "referee.gateway.session.xǁBotSessionǁ_start_clock__mutmut_*",
    "referee.gateway.session.xǁBotSessionǁ_remember_answered__mutmut_*",
    "referee.gateway.session.xǁBotSessionǁhold__mutmut_*",
    "referee.gateway.hub.xǁHubǁsubmit__mutmut_*",
    "referee.gateway.hub.xǁHubǁsubmit_turn__mutmut_*",
    "referee.gateway.hub.xǁHubǁ_expire__mutmut_*",
    "referee.gateway.hub.xǁHubǁ_reply__mutmut_*",
    "referee.gateway.hub.xǁHubǁnotify_bot__mutmut_*",
    "referee.gateway.hub.xǁHostLinkǁreply__mutmut_*",
)
COUNTED = {
    "killed": "killed",
    "survived": "survived",
    "timeout": "killed",
    "type check": "killed",
    "segfault": "killed",
}
STATUS = {
    0: "survived",
    1: "killed",
    3: "killed",
    5: "no tests",
    33: "no tests",
    36: "timeout",
    37: "type check",
    # the CPU limit mutmut sets per mutant (SIGXCPU): an endless loop, counted as killed
    -24: "timeout",
    24: "timeout",
    152: "timeout",
    255: "timeout",
    # the tests crashed (SIGSEGV): the mutant broke something in C, e.g. gRPC handed None
    -11: "segfault",
}
# Logging calls are not mutated: their wording and arguments are not behaviour (every line
# of a ``log.<level>(...)`` statement gets ``# pragma: no mutate`` in the temporary copy).
LOG_LEVELS = {"debug", "info", "warning", "error", "exception", "critical"}


def _log_lines(source: str) -> set[int]:
    """1-based lines of every ``log.<level>(...)``/``logger.<level>(...)`` statement."""
    lines: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in LOG_LEVELS
            and isinstance(node.value.func.value, ast.Name)
            and node.value.func.value.id in {"log", "logger", "LOG"}
        ):
            lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return lines


def _skip_logging(path: Path) -> int:
    """Mark the logging statements of ``path`` (a temporary copy) ``# pragma: no mutate``.

    A line ending inside a string (a triple-quoted literal) or with a backslash cannot take
    a comment and is left alone. Line numbers do not change. Returns the lines marked."""
    source = path.read_text()
    wanted = _log_lines(source)
    if not wanted:
        return 0
    open_string_lines: set[int] = set()
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
            open_string_lines.update(range(tok.start[0], tok.end[0]))
    out = source.split("\n")
    marked = 0
    for line in sorted(wanted):
        text = out[line - 1]
        if line in open_string_lines or text.rstrip().endswith("\\") or "#" in text:
            continue
        out[line - 1] = text.rstrip() + "  # pragma: no mutate"
        marked += 1
    path.write_text("\n".join(out))
    return marked


def _copy_project(dest: Path) -> None:
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split("\n")
    for name in filter(None, tracked):
        src = ROOT / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


def _config(area: Area) -> str:
    def toml_list(items: tuple[str, ...]) -> str:
        return "[" + ", ".join(json.dumps(i) for i in items) + "]"

    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["referee", "workers", "arena_sdk", "sample_bots", "arena"]\n'
        f"only_mutate = {toml_list(area.files)}\n"
        "pytest_add_cli_args_test_selection = "
        f"{toml_list(area.tests + tuple(a for t in area.deselect for a in ('--deselect', t)))}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
        # tests/games/test_docs.py checks the documents the engines cite exist
        'also_copy = ["docs", "proto"]\n'
        f'process_isolation = "{"fork" if area.fork else "forkserver"}"\n'
        "use_git_change_detection = false\n"
    )


def _function_start(source: list[str], mangled: str) -> int:
    """1-based line of the ``def`` of a mutmut-mangled function name in the original."""
    name = mangled.removeprefix("x_").split("ǁ")[-1]
    pattern = re.compile(rf"^\s*(async\s+)?def {re.escape(name)}\(")
    for i, line in enumerate(source, start=1):
        if pattern.match(line):
            return i
    return 0


def _survivor_lines(work: Path, rel: str, statuses: dict[str, str]) -> list[str]:
    mutated = work / "mutants" / rel
    spans_file = mutated.with_name(mutated.name + ".spans")
    if not spans_file.exists():
        return []
    spans = json.loads(spans_file.read_text())["spans"]
    text = mutated.read_text().split("\n")
    original = (work / rel).read_text().split("\n")
    out = []
    module = rel.removesuffix(".py").replace("/", ".")
    for key, status in sorted(statuses.items()):
        if status not in ("survived", "no tests") or not key.startswith(module + "."):
            continue
        local = key.removeprefix(module + ".")
        function, _, _number = local.rpartition("__mutmut_")
        if local not in spans or function + "__mutmut_orig" not in spans:
            continue
        a0, a1 = spans[function + "__mutmut_orig"]
        b0, b1 = spans[local]
        before = text[a0 - 1 : a1]
        after = [line.replace(local, function + "__mutmut_orig") for line in text[b0 - 1 : b1]]
        start = next((i for i, line in enumerate(before) if "def " in line), 0)
        offset, old, new = 0, "", ""
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=before, b=after).get_opcodes():
            if op != "equal":
                offset = i1 - start
                old = " / ".join(s.strip() for s in before[i1:i2])
                new = " / ".join(s.strip() for s in after[j1:j2])
                break
        line = _function_start(original, function) + offset
        note = "" if status == "survived" else "  [no test reaches it]"
        out.append(f"{rel}:{line}: {old}  ->  {new}{note}")
    return out


def _run_for(cmd: list[str], work: Path, minutes: float) -> bool:
    """Run mutmut; after ``minutes`` (0: no limit) stop it and its children. True if
    stopped: the mutants checked by then keep their results, the rest are counted as
    not checked (a partial run, never shown as the area's score)."""
    with subprocess.Popen(cmd, cwd=work, stdout=subprocess.DEVNULL, start_new_session=True) as proc:
        try:
            proc.wait(timeout=minutes * 60 if minutes > 0 else None)
            return False
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            return True


def run_area(
    name: str,
    area: Area,
    max_children: int,
    functions: tuple[str, ...] = (),
    minutes: float = 0.0,
) -> tuple[dict[str, object], list[str]]:
    """Mutate ``area`` in a temporary copy; ``functions``: only these mutants (mutmut
    name patterns, e.g. ``referee.games.sevens.rules.x_legal_actions__mutmut_*``);
    ``minutes``: stop after that long (a partial run)."""
    started = time.monotonic()
    patterns = [f.replace("__init__.", "") for f in functions]
    with tempfile.TemporaryDirectory(prefix=f"arena-mutate-{name}-") as tmp:
        work = Path(tmp)
        _copy_project(work)
        skipped = {rel: _skip_logging(work / rel) for rel in area.files}
        pyproject = work / "pyproject.toml"
        pyproject.write_text(pyproject.read_text() + _config(area))
        mutmut = Path(sys.executable).with_name("mutmut")
        cmd = [str(mutmut), "run", "--max-children", str(max_children), *functions]
        stopped = _run_for(cmd, work, minutes)
        statuses: dict[str, str] = {}
        unchecked = 0
        for meta in (work / "mutants").rglob("*.meta"):
            data = json.loads(meta.read_text())
            codes = data["exit_code_by_key"]
            # no result (None): left out by ``functions``, or not reached when stopped
            statuses.update(
                {k: STATUS.get(v, "suspicious") for k, v in codes.items() if v is not None}
            )
            if stopped:
                unchecked += sum(
                    1
                    for k, v in codes.items()
                    if v is None and (not patterns or any(fnmatch.fnmatch(k, p) for p in patterns))
                )
        survivors = [line for rel in area.files for line in _survivor_lines(work, rel, statuses)]
    counts: dict[str, int] = {}
    by_function: dict[str, dict[str, int]] = {}
    for key, status in statuses.items():
        counts[status] = counts.get(status, 0) + 1
        per = by_function.setdefault(key.rpartition("__mutmut_")[0], {})
        per[status] = per.get(status, 0) + 1
    if stopped:
        counts["not checked (stopped)"] = unchecked
    killed = sum(n for s, n in counts.items() if COUNTED.get(s) == "killed")
    survived = counts.get("survived", 0)
    score = killed / (killed + survived) if killed + survived else 0.0
    tested = killed + survived
    summary: dict[str, object] = {
        "area": name,
        "files": list(area.files),
        "tests": list(area.tests),
        "deselected": list(area.deselect),
        "functions": list(functions),
        "stopped_after_minutes": minutes if stopped else None,
        "log_lines_skipped": skipped,
        "mutants": len(statuses),
        "counts": counts,
        "score": round(score, 4),
        "minutes": round((time.monotonic() - started) / 60, 1),
        # wall time (the stats run included) per mutant tested, under whatever load there is
        "seconds_per_mutant": round((time.monotonic() - started) / tested, 1) if tested else 0.0,
        "survivors": survivors,
        "by_function": by_function,
    }
    return summary, survivors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("areas", nargs="*", help=f"areas to run (default: all): {list(AREAS)}")
    parser.add_argument("--list", action="store_true", help="list the areas and exit")
    parser.add_argument(
        "--max-children", type=int, default=1, help="mutants tested at once (default 1)"
    )
    parser.add_argument(
        "--minutes",
        type=float,
        default=0.0,
        help="stop each area after this long and report what was checked (a partial run)",
    )
    parser.add_argument(
        "--functions",
        nargs="+",
        default=(),
        help="only these mutants (mutmut patterns, e.g. 'referee.games.sevens.rules.x_*'); "
        "'answer-checks' stands for the gateway's answer checks in hub.py and session.py",
    )
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    if args.list:
        for name, area in AREAS.items():
            left_out = f" (left out: {' '.join(area.deselect)})" if area.deselect else ""
            only = f" (only: {' '.join(area.functions)})" if area.functions else ""
            print(f"{name}: {' '.join(area.files)}{only}  <-  {' '.join(area.tests)}{left_out}")
        return 0
    unknown = [a for a in args.areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown area(s) {unknown}: use {list(AREAS)}")
    results = []
    for name in args.areas or list(AREAS):
        functions = (
            tuple(
                p for f in args.functions for p in (ANSWER_CHECKS if f == "answer-checks" else (f,))
            )
            or AREAS[name].functions
        )
        result, survivors = run_area(name, AREAS[name], args.max_children, functions, args.minutes)
        results.append(result)
        partial = " (PARTIAL: stopped)" if result["stopped_after_minutes"] else ""
        print(
            f"== {name}{partial}: {result['mutants']} mutants checked, {result['counts']}, "
            f"score {result['score']:.1%} killed of killed+survived, {result['minutes']} min, "
            f"{result['seconds_per_mutant']} s (wall) per mutant tested, "
            f"log lines not mutated: {result['log_lines_skipped']}"
        )
        for line in survivors:
            print("  " + line)
        sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
