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
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Area:
    files: tuple[str, ...]
    tests: tuple[str, ...]


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
        ("tests/sedma/test_match.py", "tests/sedma/test_hand.py", "tests/sedma/test_rules.py"),
    ),
    "engines-common": Area(
        ("referee/games/base.py", "referee/games/cards.py", "referee/games/record.py"),
        ("tests/games", "tests/foundation/test_cards.py"),
    ),
    "clock": Area(("workers/clock.py",), ("tests/workers/test_clock.py",)),
    "runner": Area(("workers/runner.py",), ("tests/workers/test_runner.py",)),
    "schedule": Area(("referee/seasons/schedule.py",), ("tests/seasons/test_schedule.py",)),
    "ratings": Area(("referee/seasons/ratings.py",), ("tests/seasons/test_ratings.py",)),
    "standings": Area(("referee/seasons/standings.py",), ("tests/seasons/test_standings.py",)),
    "auth": Area(("referee/gateway/auth.py",), ("tests/gateway/test_auth.py",)),
}
COUNTED = {"killed": "killed", "survived": "survived", "timeout": "killed"}
STATUS = {0: "survived", 1: "killed", 3: "killed", 5: "no tests", 33: "no tests", 36: "timeout"}


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
        'source_paths = ["referee", "workers", "sample_bots", "arena"]\n'
        f"only_mutate = {toml_list(area.files)}\n"
        f"pytest_add_cli_args_test_selection = {toml_list(area.tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q"]\n'
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


def run_area(name: str, area: Area, max_children: int) -> tuple[dict[str, object], list[str]]:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"arena-mutate-{name}-") as tmp:
        work = Path(tmp)
        _copy_project(work)
        pyproject = work / "pyproject.toml"
        pyproject.write_text(pyproject.read_text() + _config(area))
        mutmut = Path(sys.executable).with_name("mutmut")
        cmd = [str(mutmut), "run", "--max-children", str(max_children)]
        subprocess.run(cmd, cwd=work, stdout=subprocess.DEVNULL, check=False)
        statuses: dict[str, str] = {}
        for meta in (work / "mutants").rglob("*.meta"):
            codes = json.loads(meta.read_text())["exit_code_by_key"]
            statuses.update({k: STATUS.get(v, "suspicious") for k, v in codes.items()})
        survivors = [line for rel in area.files for line in _survivor_lines(work, rel, statuses)]
    counts: dict[str, int] = {}
    for status in statuses.values():
        counts[status] = counts.get(status, 0) + 1
    killed = sum(n for s, n in counts.items() if COUNTED.get(s) == "killed")
    survived = counts.get("survived", 0)
    score = killed / (killed + survived) if killed + survived else 0.0
    summary: dict[str, object] = {
        "area": name,
        "files": list(area.files),
        "tests": list(area.tests),
        "mutants": len(statuses),
        "counts": counts,
        "score": round(score, 4),
        "minutes": round((time.monotonic() - started) / 60, 1),
        "survivors": survivors,
    }
    return summary, survivors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("areas", nargs="*", help=f"areas to run (default: all): {list(AREAS)}")
    parser.add_argument("--list", action="store_true", help="list the areas and exit")
    parser.add_argument("--max-children", type=int, default=2)
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()
    if args.list:
        for name, area in AREAS.items():
            print(f"{name}: {' '.join(area.files)}  <-  {' '.join(area.tests)}")
        return 0
    unknown = [a for a in args.areas if a not in AREAS]
    if unknown:
        parser.error(f"unknown area(s) {unknown}: use {list(AREAS)}")
    results = []
    for name in args.areas or list(AREAS):
        result, survivors = run_area(name, AREAS[name], args.max_children)
        results.append(result)
        print(
            f"== {name}: {result['mutants']} mutants, {result['counts']}, "
            f"score {result['score']:.1%} killed of killed+survived, {result['minutes']} min"
        )
        for line in survivors:
            print("  " + line)
        sys.stdout.flush()
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
