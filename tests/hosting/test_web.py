"""The upload form on a bot's page, over a real HTTP server, Redis and sandbox: the author
submits with the bot's token, sees the build and its log; a wrong token, a bad archive and a
failed build each answer in words."""

from __future__ import annotations

import http.client
import io
import secrets
import zipfile
from pathlib import Path

import pytest
import redis

from referee import bots, keys
from referee.hosting.archive import pack_folder
from tests.metrics.http_helpers import Reply, get, running_server
from tests.polyglot.helpers import ROOT

pytestmark = pytest.mark.usefixtures("sandbox")


def post_form(
    port: int, path: str, fields: dict[str, str], upload: tuple[str, bytes] | None = None
) -> Reply:
    boundary = "----arena" + secrets.token_hex(8)
    body = io.BytesIO()
    for key, value in fields.items():
        body.write(f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'.encode())
        body.write(value.encode() + b"\r\n")
    if upload is not None:
        body.write(
            f'--{boundary}\r\nContent-Disposition: form-data; name="archive"; '
            f'filename="{upload[0]}"\r\nContent-Type: application/octet-stream\r\n\r\n'.encode()
        )
        body.write(upload[1] + b"\r\n")
    body.write(f"--{boundary}--\r\n".encode())
    client = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        client.request(
            "POST",
            path,
            body=body.getvalue(),
            headers={"Content-Type": f"multipart/form-data; boundary={boundary}"},
        )
        response = client.getresponse()
        return Reply(response.status, dict(response.getheaders()), response.read())
    finally:
        client.close()


def test_the_author_uploads_on_the_bots_page_and_sees_the_build(
    redis_url: str, redis_client: redis.Redis, data_dir: Path
) -> None:
    token = bots.register(redis_client, "web-bot", owner="ada")
    other = bots.register(redis_client, "web-other")
    archive = io.BytesIO()
    pack_folder(ROOT / "examples/hosted/shell", archive)
    with running_server(redis_url, hosting_dir=str(data_dir)) as port:
        page = get(port, "/bot/web-bot").text
        assert 'action="/bot/web-bot/submit"' in page and 'type="password" name="token"' in page
        assert "No hosted version" in page

        reply = post_form(
            port, "/bot/web-bot/submit", {"token": token}, ("bot.tar.gz", archive.getvalue())
        )
        assert reply.status == 200, reply.text
        assert "v1 (script, stdio) is built and active from the bot's next match" in reply.text
        assert "$ chmod +x bot" in reply.text  # the build log, for the author

        broken = io.BytesIO()
        with zipfile.ZipFile(broken, "w") as z:
            z.writestr("bot.c", "int main(void) { return undeclared_here; }\n")
        reply = post_form(
            port, "/bot/web-bot/submit", {"token": token}, ("bot.zip", broken.getvalue())
        )
        assert reply.status == 200
        assert "v2 did not build" in reply.text and "v1 stays active" in reply.text
        assert "undeclared_here" in reply.text and "error" in reply.text

        page = get(port, "/bot/web-bot").text
        assert "v1 <strong>active</strong>" in page and "failed" in page
        assert "undeclared_here" not in page  # logs only for the author

        reply = post_form(port, "/bot/web-bot/builds", {"token": token})
        assert reply.status == 200 and "undeclared_here" in reply.text

        denied = post_form(
            port, "/bot/web-bot/submit", {"token": other}, ("bot.tar.gz", archive.getvalue())
        )
        assert denied.status == 403 and "web-other" in denied.text

        slip = io.BytesIO()
        with zipfile.ZipFile(slip, "w") as z:
            z.writestr("bot.py", "pass\n")
            z.writestr("../escape.py", "pass\n")
        refused = post_form(
            port, "/bot/web-bot/submit", {"token": token}, ("bot.zip", slip.getvalue())
        )
        assert refused.status == 400 and "would escape the bot" in refused.text
        assert sorted(redis_client.hkeys(keys.bot_versions("web-bot"))) == ["1", "2"]


def test_without_a_data_dir_the_page_has_no_form(redis_url: str, redis_client: redis.Redis) -> None:
    token = bots.register(redis_client, "web-external")
    with running_server(redis_url) as port:
        page = get(port, "/bot/web-external").text
        assert "No hosted version" in page and "/submit" not in page
        reply = post_form(port, "/bot/web-external/submit", {"token": token}, ("b.zip", b"x"))
        assert reply.status == 403 and "keeps no hosted bots" in reply.text
