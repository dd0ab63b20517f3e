"""Small units of the polyglot commands: argument handling and the scratch bot's command."""

from __future__ import annotations

import pytest

from referee.botcheck.harness import HarnessError, ScratchPlatform
from referee.cli.main import main as arena_main


def test_bridge_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["bridge", "--server", "127.0.0.1:1", "--token", "t", "--"]) == 1
    assert "no program to run" in capsys.readouterr().err


def test_check_needs_a_bot(capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["bot", "check"]) == 1
    assert "say which bot to check" in capsys.readouterr().err


def test_check_refuses_an_unknown_game(capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["bot", "check", "--games", "poker", "--", "true"]) == 1
    assert "unknown game poker" in capsys.readouterr().err


def test_grpc_bot_command_gets_server_and_token() -> None:
    platform = ScratchPlatform(["node", "bot.js"], grpc=True)
    platform.port, platform.token = 4321, "arena_tok"
    assert platform.bot_argv() == [
        "node",
        "bot.js",
        "--server",
        "127.0.0.1:4321",
        "--token",
        "arena_tok",
    ]
    templated = ScratchPlatform(["./bot", "-s", "{server}", "-t={token}"], grpc=True)
    templated.port, templated.token = 4321, "arena_tok"
    assert templated.bot_argv() == ["./bot", "-s", "127.0.0.1:4321", "-t=arena_tok"]
    platform.close()
    templated.close()


def test_stdio_bot_runs_behind_the_bridge() -> None:
    platform = ScratchPlatform(["perl", "smart.pl"], games=["sedma"])
    platform.port, platform.token = 4321, "arena_tok"
    argv = platform.bot_argv()
    assert argv[-3:] == ["--", "perl", "smart.pl"]
    assert argv[argv.index("--games") + 1] == "sedma"
    assert argv[argv.index("--token") + 1] == "arena_tok"
    assert "bridge" in argv and "--report-file" in argv
    platform.close()


def test_scratch_platform_needs_a_command() -> None:
    with pytest.raises(HarnessError, match="no bot command"):
        ScratchPlatform([])
