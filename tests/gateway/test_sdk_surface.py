"""The SDK's public surface (docs/bots.md "The SDK's public surface"): what a bot gets from
``from arena_sdk.sdk import *`` or the alias ``sample_bots.sdk``, and nothing else."""

from __future__ import annotations

import re
import types
from pathlib import Path
from typing import Any

import arena_sdk.observation
import arena_sdk.sdk

ROOT = Path(__file__).resolve().parents[2]

PUBLIC = frozenset(
    {
        # writing a bot
        "Bot",
        "Turn",
        "Clock",
        "ActionInfo",
        "ActionOutcome",
        "Fallback",
        "BotRefused",
        "main",
        "first_legal",
        "CHOOSE_RAISED",
        "CHOOSE_BAD_RETURN",
        # the observation's declared type
        "Observation",
        "HistoryItem",
        "TrickCard",
        "SevensFields",
        "SedmaFields",
        # the protocol's limits and knobs
        "PROTOCOL_VERSION",
        "MAX_ACTION_CHARS",
        "MAX_MESSAGE_BYTES",
        "KEEPALIVE_TIME_MS",
        "KEEPALIVE_TIMEOUT_MS",
        "MIN_KEEPALIVE_TIME_MS",
        "MIN_KEEPALIVE_TIMEOUT_MS",
        "PROBE_DECISIONS",
        "INLINE_LIMIT_MS",
        # clients of the protocol that are not a Bot
        "SEASON_NOTICES",
        "TurnParser",
        "turn_from_proto",
        "observation_to_dict",
        "outcome_from_proto",
        "notification_to_dict",
        "notice_to_dict",
        "channel_options",
        "open_channel",
        "check_keepalive",
        "is_fatal",
    }
)
"""Change this only together with ``arena_sdk.sdk.__all__`` and docs/bots.md."""


def _star(module: str) -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(f"from {module} import *", namespace)
    namespace.pop("__builtins__")
    return namespace


def test_the_sdk_exports_its_curated_names_and_nothing_else() -> None:
    assert set(arena_sdk.sdk.__all__) == PUBLIC
    assert len(arena_sdk.sdk.__all__) == len(PUBLIC)  # no name twice
    for module in ("arena_sdk.sdk", "sample_bots.sdk"):
        exported = _star(module)
        assert set(exported) == PUBLIC, module
        modules = sorted(n for n, v in exported.items() if isinstance(v, types.ModuleType))
        assert not modules, f"{module} exports modules: {modules}"


def test_the_observation_types_are_the_sdk_s_and_the_engines() -> None:
    from referee.games import base

    assert set(_star("arena_sdk.observation")) == set(arena_sdk.observation.__all__)
    for name in arena_sdk.observation.__all__:
        if name in PUBLIC:
            assert getattr(arena_sdk.sdk, name) is getattr(arena_sdk.observation, name)
    assert base.Observation is arena_sdk.observation.Observation
    assert base.HistoryItem is arena_sdk.observation.HistoryItem


def test_every_public_name_is_documented() -> None:
    text = (ROOT / "docs" / "bots.md").read_text()
    section = text.split("### The SDK's public surface", 1)[1].split("\n#", 1)[0]
    documented = set(re.findall(r"`(\w+)`", section))
    missing = sorted(PUBLIC - documented)
    assert not missing, f"docs/bots.md does not name {missing}"


def test_the_declared_keys_are_the_keys_the_engines_build() -> None:
    """What ``Observation`` declares is what ``Match.observation`` returns, game by game."""
    from referee.games.registry import get_game

    own = {"sevens": arena_sdk.observation.SEVENS_KEYS, "sedma": arena_sdk.observation.SEDMA_KEYS}
    for name, keys in own.items():
        game = get_game(name)
        for preset in sorted(game.presets()):
            rules = game.preset(preset)
            match = game.new_match(rules, min(game.player_counts(rules)), seed=1)
            assert set(match.observation(0)) == arena_sdk.observation.COMMON_KEYS | keys, preset
