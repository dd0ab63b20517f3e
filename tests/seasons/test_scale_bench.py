"""bench/scale.py's smoke run: a small league through the real commit, record store, driver
and standings path; the kept standings must equal ``compute_standings`` over every result."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scale.py"


def test_the_scale_bench_runs_and_its_kept_standings_equal_a_recount() -> None:
    out = subprocess.run(
        [sys.executable, str(BENCH), "--matches", "200", "--every", "100", "--bots", "8"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    rows = [
        f for f in (line.split() for line in lines) if len(f) > 10 and f[1].isdigit()
    ]  # the table's rows: matches, Redis bytes per match, ...
    assert [r[0] for r in rows] == ["0", "100", "200"], out.stdout
    assert "kept standings == compute_standings over all results: True" in lines, out.stdout
    assert any(line.startswith("Redis B per match, by key:") for line in lines), out.stdout
