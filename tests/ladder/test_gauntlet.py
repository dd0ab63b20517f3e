"""``arena ladder gauntlet``: the season of one bot against the reference bots (its end to
end run is in test_reference_bots_grpc.py, on that module's platform)."""

from __future__ import annotations

import pytest

from referee.cli.ladder_cmd import gauntlet_spec
from referee.errors import ConfigError


def test_gauntlet_spec_seats_the_bot_against_the_rungs() -> None:
    spec = gauntlet_spec("mybot", "sedma", rungs=("heuristic", "mc"), rounds=2, seed=3)
    assert spec.bots == ("mybot", "ladder-heuristic", "ladder-mc")
    assert spec.head_to_head and spec.options.duplicate and spec.preset == "sedma"
    with pytest.raises(ConfigError):
        gauntlet_spec("ladder-mc", "sevens")
    with pytest.raises(ConfigError):
        gauntlet_spec("mybot", "chess")
