"""``arena demo --keep-running`` says where things are without a secret in clear: it
printed the Redis URL with its password and suggested `arena standings ...
--redis-url redis://:PASSWORD@...`, a command line every user of the host reads in
``ps``, which ``--help`` itself advises against."""

from __future__ import annotations

import shlex
from pathlib import Path
from urllib.parse import urlparse

from referee.cli.common import REDIS_URL_FILE, resolve_redis_url, write_redis_url
from referee.cli.demo import running_note
from referee.cli.main import build_parser
from referee.embedded_redis import EmbeddedRedis


def test_the_note_names_files_for_the_secrets_and_its_command_finds_the_redis(
    embedded_redis: EmbeddedRedis, tmp_path: Path
) -> None:
    url = embedded_redis.url
    password = urlparse(url).password
    assert password, f"the embedded Redis has a password: {url}"
    token = "adm1n-T0ken-xyz"
    token_file = tmp_path / "admin.token"
    token_file.write_text(token + "\n")
    note = running_note(tmp_path, 8080, 50051, url, "demo-sevens-1", token_file)
    assert password not in note and token not in note
    assert "--redis-url" not in note
    assert f"{tmp_path / REDIS_URL_FILE} (0600)" in note
    assert f"admin token in {token_file} (0600)" in note
    # The suggested command reaches the platform's Redis through the data dir's URL file.
    command = note.rsplit("try", 1)[1].strip()
    argv = shlex.split(command)
    assert argv[:3] == ["arena", "standings", "demo-sevens-1"], argv
    write_redis_url(tmp_path, url)
    args = build_parser().parse_args(argv[1:])
    assert resolve_redis_url(args) == url
