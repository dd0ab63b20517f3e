"""The ladders' reference bots pass ``arena bot check`` as the gRPC bots a user runs
(``python -m referee.cli.policy_bot --policy NAME``): every scenario, both families, every
preset, the clock near its limit and a referee restart (README "Strength ladder")."""

from __future__ import annotations

import sys

import pytest

from referee.cli.main import main as arena_main

pytestmark = pytest.mark.slow

# Each family's rungs above random (bench/strength.py LADDERS): the heuristic, the Sevens
# family's solver and priced-pass, Sedma's mc; each plays both families.
RUNGS = ("heuristic", "solver", "mc", "priced-pass")


@pytest.mark.parametrize("policy", RUNGS)
def test_reference_bot_passes_bot_check(policy: str, capsys: pytest.CaptureFixture[str]) -> None:
    command = [sys.executable, "-m", "referee.cli.policy_bot", "--policy", policy]
    code = arena_main(["bot", "check", "--grpc", "--", *command])
    out = capsys.readouterr().out
    assert code == 0, out
    summary = out.strip().splitlines()[-1]
    assert summary.startswith("PASSED") and "0 failed, 0 skipped" in summary, out
    for scenario in ("sedma: every preset", "sevens: every preset", "clock near its limit"):
        assert any(
            line.strip().startswith("pass") and scenario in line for line in out.splitlines()
        ), out
