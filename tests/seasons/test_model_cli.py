"""The season spec (TOML) and the ``arena season`` / ``arena standings`` commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from referee import bots
from referee.cli.main import main
from referee.errors import ConfigError
from referee.seasons import store
from referee.seasons.model import SeasonSpec, derive_seed, seed_sha256

ROOT = Path(__file__).resolve().parents[2]


def test_example_toml_is_valid() -> None:
    spec = SeasonSpec.from_toml((ROOT / "examples" / "season.toml").read_text())
    rules = spec.validate_with_engine()
    assert spec.seed is None and spec.options.duplicate and rules
    assert SeasonSpec.from_json(spec.to_json()) == spec


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('game = "sevens"\nbots = "a"', "list of bot names"),
        ('game = "sevens"\ncolour = 1', "unknown season field"),
        ('game = "sevens"\n[options]\nduplcate = true', "unknown season option"),
        ('game = "sevens"\ntable_size = "four"', "whole number"),
        ('game = "sevens"\n[options]\nduplicate = "yes"', "true or false"),
        ("bots = []", "needs a game"),
        ('game = "sevens" = 1', "does not parse"),
    ],
)
def test_bad_toml_says_what_to_fix(toml: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SeasonSpec.from_toml(toml)


def test_validation_against_the_engine() -> None:
    base = {"name": "x", "game": "sevens", "bots": ["a", "b", "c"], "table_size": 3}
    with pytest.raises(ConfigError, match="multiple of 3"):
        SeasonSpec.from_dict({**base, "deals_per_match": 4}).validate()
    with pytest.raises(ConfigError, match="fixed number of deals"):
        SeasonSpec.from_dict(base).validate()
    with pytest.raises(ConfigError, match="preset"):
        SeasonSpec.from_dict(
            {**base, "deals_per_match": 3, "preset": "nope"}
        ).validate_with_engine()
    with pytest.raises(ConfigError, match="listed twice"):
        SeasonSpec.from_dict({**base, "bots": ["a", "a", "b"], "deals_per_match": 3}).validate()
    with pytest.raises(ConfigError, match="at least 3 bots"):
        SeasonSpec.from_dict({**base, "bots": ["a", "b"], "deals_per_match": 3}).validate()


def test_seed_derivation_is_sha256_of_the_parts() -> None:
    assert seed_sha256(42) == "73475cb40a568e8da8a045ced110137e159f890ac4da883b6b17dc651b3a8049"
    assert derive_seed(42, 0, 1) != derive_seed(42, 1, 0)
    assert 0 <= derive_seed(42, 3, 2) < 2**63


@pytest.fixture
def conn(redis_url: str) -> redis.Redis:
    client = store.connect(redis_url)
    for name in ("a", "b", "c", "d"):
        bots.register(client, name)
    return client


def test_cli_create_status_standings_export_cancel(
    conn: redis.Redis, redis_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = tmp_path / "s.toml"
    toml.write_text(
        'name = "from-file"\ngame = "sevens"\npreset = "sevens"\nbots = ["a", "b", "c"]\n'
        "table_size = 3\ndeals_per_match = 3\nseed = 5\n"
    )
    url = ["--redis-url", redis_url]
    # flags win over the file
    assert main(["season", "create", str(toml), "--name", "cli", "--bots", "a,b,c,d", *url]) == 0
    out = capsys.readouterr().out
    assert "season cli: created, 4 matches" in out and seed_sha256(5) in out
    info = store.get_season(conn, "cli")
    assert json.loads(info["spec"])["bots"] == ["a", "b", "c", "d"]
    assert main(["season", "create", str(toml), *url]) == 0
    assert main(["season", "create", str(toml), *url]) == 1  # the name is taken
    assert "exists already" in capsys.readouterr().err
    assert main(["season", "start", "cli", *url]) == 0
    assert main(["season", "pause", "cli", *url]) == 0
    capsys.readouterr()
    assert main(["season", "status", "cli", "--json", *url]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["state"] == "paused" and status["match_states"]
    assert "seed" not in status
    assert main(["season", "verify", "cli", *url]) == 1
    assert "revealed only when" in capsys.readouterr().out
    assert main(["season", "list", *url]) == 0
    assert "from-file" in capsys.readouterr().out
    assert main(["standings", "cli", "--json", *url]) == 0
    standings = json.loads(capsys.readouterr().out)
    assert standings["season"] == "cli" and standings["matches_done"] == 0
    assert main(["season", "standings", "cli", "--csv", *url]) == 0
    assert capsys.readouterr().out.startswith("season,unit,bot,rank,matches")
    assert main(["season", "cancel", "cli", *url]) == 0
    assert "seed 5 " in capsys.readouterr().out
    assert main(["season", "export", "cli", str(tmp_path / "out"), *url]) == 0
    assert (tmp_path / "out" / "standings.csv").exists()
    assert json.loads((tmp_path / "out" / "season.json").read_text())["state"] == "cancelled"
    assert main(["season", "start", "nope", *url]) == 1
    assert "no season 'nope'" in capsys.readouterr().err
