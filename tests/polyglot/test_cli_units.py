"""Small units of the polyglot commands: argument handling and the scratch bot's command."""

from __future__ import annotations

import pytest

from referee.botcheck.harness import HarnessError, ScratchPlatform
from referee.cli.main import main as arena_main


def test_bridge_needs_a_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert arena_main(["bridge", "--server", "127.0.0.1:1", "--"]) == 1
    assert "no program to run" in capsys.readouterr().err


def test_bridge_takes_its_token_from_the_environment_and_warns_about_the_flag(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ARENA_TOKEN", raising=False)
    assert arena_main(["bridge", "--server", "127.0.0.1:1", "--", "true"]) == 1
    assert "set $ARENA_TOKEN" in capsys.readouterr().err
    assert arena_main(["bridge", "--server", "127.0.0.1:1", "--token", "t", "--"]) == 1
    err = capsys.readouterr().err
    assert "--token on the command line shows in `ps`" in err


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
    assert "--token" not in argv and "arena_tok" not in argv  # the bridge reads $ARENA_TOKEN
    assert "bridge" in argv and "--report-file" in argv
    platform.close()


def test_scratch_platform_needs_a_command() -> None:
    with pytest.raises(HarnessError, match="no bot command"):
        ScratchPlatform([])
