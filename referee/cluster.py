"""What referees and match hosts share about the internal stream (docs/workers.md).

* The cluster secret that authenticates the internal stream (``MatchRelay.Link``): from
  ``$ARENA_CLUSTER_SECRET``, else the file named by ``$ARENA_CLUSTER_SECRET_FILE`` (or
  ``--cluster-secret-file``), else ``<data-dir>/cluster.secret``, created (mode 0600) by
  the first process that needs it. Never a command-line value (argv is visible in ``ps``).
* The bot-streams directory entries (``keys.bot_streams``) that say which referee holds a
  bot, and the address (``link``) where that referee takes turns from hosts.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from referee.bots import STREAM_STALE_MS
from referee.errors import ConfigError

SECRET_ENV: Final = "ARENA_CLUSTER_SECRET"
SECRET_FILE_ENV: Final = "ARENA_CLUSTER_SECRET_FILE"
SECRET_FILE_NAME: Final = "cluster.secret"
MIN_SECRET_CHARS: Final = 16
AUTH_HEADER: Final = "authorization"

LINK_MAX_MESSAGE_BYTES: Final = 16 * 1024 * 1024
"""Largest batch on the internal stream (many turns of many matches in one message)."""
LINK_KEEPALIVE_MS: Final = 2_000
"""Both ends of the internal stream ping every 2 s and give up after LINK_KEEPALIVE_TIMEOUT_MS:
a referee host that vanished from the network is noticed within seconds."""
LINK_KEEPALIVE_TIMEOUT_MS: Final = 3_000


def link_channel_options() -> list[tuple[str, int]]:
    return [
        ("grpc.keepalive_time_ms", LINK_KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", LINK_KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.max_pings_without_data", 0),
        ("grpc.max_receive_message_length", LINK_MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", LINK_MAX_MESSAGE_BYTES),
        ("grpc.enable_retries", 0),
    ]


def link_server_options() -> list[tuple[str, int]]:
    return [
        ("grpc.keepalive_time_ms", LINK_KEEPALIVE_MS),
        ("grpc.keepalive_timeout_ms", LINK_KEEPALIVE_TIMEOUT_MS),
        ("grpc.keepalive_permit_without_calls", 1),
        ("grpc.http2.min_ping_interval_without_data_ms", LINK_KEEPALIVE_MS // 2),
        ("grpc.http2.max_ping_strikes", 0),
        ("grpc.max_receive_message_length", LINK_MAX_MESSAGE_BYTES),
        ("grpc.max_send_message_length", LINK_MAX_MESSAGE_BYTES),
        ("grpc.so_reuseport", 0),
    ]


def resolve_secret(secret_file: str | None = None, data_dir: str | None = None) -> str:
    """The cluster secret (see the module docstring); raises ``ConfigError`` when there is
    none and no data dir to keep a new one in, or when it is too short."""
    value = os.environ.get(SECRET_ENV, "").strip()
    source = f"${SECRET_ENV}"
    path_text = secret_file or os.environ.get(SECRET_FILE_ENV)
    if not value and path_text:
        path = Path(path_text)
        try:
            value = path.read_text().strip()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the cluster secret file {path}: {exc}; give a readable file "
                f"or set ${SECRET_ENV}"
            ) from None
        source = str(path)
    if not value and data_dir:
        value = _data_dir_secret(Path(data_dir))
        source = str(Path(data_dir) / SECRET_FILE_NAME)
    if not value:
        raise ConfigError(
            f"no cluster secret: set ${SECRET_ENV}, or ${SECRET_FILE_ENV} / "
            "--cluster-secret-file to a file holding it (the same on every referee and worker)"
        )
    if len(value) < MIN_SECRET_CHARS:
        raise ConfigError(
            f"the cluster secret from {source} has {len(value)} characters; use at least "
            f"{MIN_SECRET_CHARS} random ones (e.g. python -c 'import secrets; "
            "print(secrets.token_urlsafe(32))')"
        )
    return value


def _data_dir_secret(data_dir: Path) -> str:
    """The secret kept in ``<data_dir>/cluster.secret``, created 0600 if missing."""
    path = data_dir / SECRET_FILE_NAME
    data_dir.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_urlsafe(32) + "\n")
    return path.read_text().strip()


def bearer(secret: str) -> tuple[tuple[str, str], ...]:
    """The call metadata that authenticates a host on the internal stream."""
    return ((AUTH_HEADER, f"Bearer {secret}"),)


def secret_matches(metadata: Mapping[str, str] | None, secret: str) -> bool:
    """True if ``metadata`` carries ``Bearer <secret>`` (compared in constant time)."""
    if not metadata:
        return False
    given = str(metadata.get(AUTH_HEADER, ""))
    return hmac.compare_digest(given.encode(), f"Bearer {secret}".encode())


@dataclass(frozen=True, slots=True)
class Route:
    """One open stream of a bot in the directory: which referee, and where hosts reach it."""

    referee: str
    link: str
    since_ms: float


def routes(entries: Mapping[str, str], now_ms: float) -> list[Route]:
    """The live entries of ``keys.bot_streams(bot)`` (``HGETALL``), newest stream first;
    entries without a link address or not refreshed for ``STREAM_STALE_MS`` are skipped."""
    out = []
    for raw in entries.values():
        try:
            entry = json.loads(raw)
            referee = str(entry["referee"])
            link = str(entry.get("link") or "")
            seen = float(entry.get("seen_ms", 0))
            since = float(entry.get("since_ms", 0))
        except (TypeError, ValueError, KeyError):
            continue
        if link and now_ms - seen <= STREAM_STALE_MS:
            out.append(Route(referee, link, since))
    out.sort(key=lambda r: (-r.since_ms, r.referee))
    return out
