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
from referee.seasons.schedule import duplicate_plan

ROOT = Path(__file__).resolve().parents[2]


def test_example_toml_is_valid() -> None:
    spec = SeasonSpec.from_toml((ROOT / "examples" / "season.toml").read_text())
    rules = spec.validate_with_engine()
    assert spec.seed is None and spec.options.duplicate and rules
    assert SeasonSpec.from_json(spec.to_json()) == spec
    # the duplicate it asks for is one its field can have
    assert duplicate_plan(spec).tables_per_board >= 2, duplicate_plan(spec).note
    assert spec.options.rank_by == "score"


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
    same_table = {"options": {"duplicate": "same_table_leaks_hands"}}
    with pytest.raises(ConfigError, match="multiple of 3"):
        SeasonSpec.from_dict({**base, **same_table, "deals_per_match": 4}).validate()
    SeasonSpec.from_dict({**base, "deals_per_match": 4}).validate()  # field: any number
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


@pytest.mark.parametrize(
    ("time_control", "message"),
    [
        ('move_ms = "fast"', "time_control.move_ms must be a whole number of milliseconds"),
        ("move_ms = -5", "time_control.move_ms = -5: use 1 or more"),
        ("bank_ms = -1", "time_control.bank_ms = -1: use 0 or more"),
        ("mve_ms = 500", "unknown time_control field.*mve_ms"),
        ("grace_ms = true", "time_control.grace_ms must be a whole number"),
    ],
)
def test_time_control_is_validated_like_the_other_sections(time_control: str, message: str) -> None:
    """A typo, a word or a negative clock is refused, not run (or crashed)."""
    toml = f'game = "sevens"\nbots = ["a", "b", "c"]\n[time_control]\n{time_control}\n'
    with pytest.raises(ConfigError, match=message):
        SeasonSpec.from_toml(toml)


def test_time_control_reports_every_problem_at_once() -> None:
    toml = 'game = "sevens"\n[time_control]\nmove_ms = "fast"\nqueue_ms = 0\nspeed = 2\n'
    with pytest.raises(ConfigError) as refused:
        SeasonSpec.from_toml(toml)
    text = str(refused.value)
    assert text.startswith("3 problems")
    assert "speed" in text and "move_ms" in text and "queue_ms = 0" in text


def test_flags_only_create_reports_every_problem_in_flag_words(
    redis_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --deals, with an unknown bot, a preset typo and a wrong
    clock, one run names all of them, as flags (--deals, --no-duplicate, --move-ms)."""
    code = main(
        ["season", "create", "--game", "sevens", "--preset", "fantan", "--bots", "a,b,c",
         "--move-ms", "-5", "--redis-url", redis_url]
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert "--move-ms = -5" in err and "time_control" not in err
    code = main(
        ["season", "create", "--game", "sevens", "--preset", "fantan", "--bots", "a,b,nobody",
         "--table-size", "3", "--redis-url", redis_url]
    )  # fmt: skip
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("arena: error: 3 problems with this season:")
    assert "set --deals (1 or more)" in err and "--no-duplicate" in err
    assert "deals_per_match" not in err and "options.duplicate" not in err
    assert "--preset: unknown sevens preset 'fantan'" in err
    assert "unknown bot(s) a, b, nobody" in err
    # a game typo is reported together with the rest too
    code = main(
        ["season", "create", "--game", "sevnes", "--bots", "a,b,c", "--table-size", "3",
         "--redis-url", redis_url]
    )  # fmt: skip
    err = capsys.readouterr().err
    assert code == 1 and "--game = 'sevnes' is not a game" in err and "--deals" in err


def test_a_toml_season_is_told_in_toml_words(tmp_path: Path) -> None:
    toml = tmp_path / "season.toml"
    toml.write_text('name = "s"\ngame = "sevens"\nbots = ["a", "b", "c"]\ntable_size = 3\n')
    spec = SeasonSpec.from_toml(toml.read_text())
    with pytest.raises(ConfigError) as refused:
        spec.validate()
    assert "set deals_per_match (1 or more)" in str(refused.value)
    assert "options.duplicate = false" in str(refused.value)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        (
            "deals_per_match = 200000",
            "deals_per_match = 200000: use at most 100 (the range is 0 .. 100)",
        ),
        ("table_size = 40", "table_size = 40: use at most 16 (the range is 2 .. 16)"),
        ("[options]\nrounds = 100000", "rounds = 100000: use at most 100 (the range is 1 .. 100)"),
        ("[options]\nwindow = 0", "window = 0: use 1 or more (at most 1000)"),
        (
            "[time_control]\nmove_ms = 5000000000",
            "time_control.move_ms = 5000000000: use at most 600000 ms (the range is 1 .. 600000)",
        ),
        (
            "[time_control]\nbank_ms = 3600001",
            "time_control.bank_ms = 3600001: use at most 3600000 ms (the range is 0 .. 3600000)",
        ),
    ],
)
def test_sizes_out_of_range_name_the_field_the_value_and_the_range(toml: str, message: str) -> None:
    """Every size has a documented range (docs/seasons.md), refused in
    one line; a stored spec (``from_json``) reads without the maximums."""
    text = f'name = "x"\ngame = "sevens"\npreset = "fan-tan"\nbots = ["a", "b", "c", "d"]\n{toml}\n'
    with pytest.raises(ConfigError) as caught:
        SeasonSpec.from_toml(text).validate()
    said = str(caught.value)
    assert said == message or f"  - {message}" in said.splitlines(), said


def test_a_stored_spec_beyond_the_ranges_still_reads() -> None:
    spec = SeasonSpec.from_toml('game = "sevens"\nbots = ["a", "b", "c"]\ndeals_per_match = 4\n')
    stored = spec.to_dict()
    stored["time_control"]["move_ms"] = 5_000_000_000
    stored["options"]["rounds"] = 100_000
    old = SeasonSpec.from_json(json.dumps(stored))
    assert old.time_control.move_ms == 5_000_000_000 and old.options.rounds == 100_000
    with pytest.raises(ConfigError, match="move_ms = 5000000000: use at most"):
        SeasonSpec.from_dict(stored)
