"""``arena bot submit|versions|builds`` on the real sandbox and Redis: what the author sees."""

from __future__ import annotations

from pathlib import Path

import pytest

from referee.cli.main import main as arena_main
from tests.polyglot.helpers import ROOT

pytestmark = pytest.mark.usefixtures("sandbox")


def test_submit_then_versions_and_builds_show_the_compiler_error(
    redis_url: str, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--redis-url", redis_url, "--data-dir", str(data_dir)]
    assert arena_main(["bot", "register", "cli-bot", *base]) == 0
    capsys.readouterr()
    assert arena_main(["bot", "submit", "cli-bot", str(ROOT / "examples/hosted/c"), *base]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cli-bot v1 (c, stdio, 1 file, sha256 ") and "next match" in out

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bot.c").write_text("int main(void) { return nope; }\n")
    assert arena_main(["bot", "submit", "cli-bot", str(broken), *base]) == 1
    err = capsys.readouterr().err
    assert "cli-bot v2 did not build" in err and "nope" in err and "v1 stays active" in err

    assert arena_main(["bot", "versions", "cli-bot", *base]) == 0
    rows = capsys.readouterr().out.splitlines()
    assert rows[1].startswith("*v1 ") and " ok " in rows[1], rows
    assert rows[2].startswith(" v2 ") and " failed " in rows[2], rows

    assert arena_main(["bot", "builds", "cli-bot", *base]) == 0
    out = capsys.readouterr().out
    assert "v2 failed" in out and "--- build log of v2" in out and "error:" in out

    assert arena_main(["bot", "submit", "cli-bot", "/etc/hostname", *base]) == 1
    err = capsys.readouterr().err
    assert "not an archive this platform takes" in err


def test_a_stored_version_is_built_later_and_a_built_one_is_never_rebuilt(
    redis_url: str, data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = ["--redis-url", redis_url, "--data-dir", str(data_dir)]
    assert arena_main(["bot", "register", "cli-later", *base]) == 0
    shell = str(ROOT / "examples/hosted/shell")
    assert arena_main(["bot", "submit", "cli-later", shell, "--no-build", *base]) == 0
    assert "build it with `arena bot build cli-later 1`" in capsys.readouterr().out
    assert arena_main(["bot", "build", "cli-later", "1", *base]) == 0
    assert "active from the bot's next match" in capsys.readouterr().out
    assert arena_main(["bot", "build", "cli-later", "1", *base]) == 1
    assert "built already and may be running" in capsys.readouterr().err
