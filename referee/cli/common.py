"""What every command module shares: the command registry, where the platform's data
lives, the one place that builds the Redis connection, secrets read from the environment
or a file, and the one place that turns errors into a line for a person.

A handler returns its exit code and lets :class:`~referee.errors.ArenaError` and
``redis.RedisError`` go: :func:`run_handler` prints them as one ``arena: error: ...`` line
and returns 1 (as rq's CLI builds its connection once and reports its errors once).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import redis
from rich.text import Text

from referee.defaults import DATA_DIR_ENV, default_data_dir
from referee.embedded_redis import EmbeddedRedis, write_private
from referee.embedded_redis import redacted_url as redacted_url  # re-exported
from referee.errors import ArenaError, ConfigError
from referee.games.errors import RulesError

REDIS_URL_FILE = "redis.url"
"""``arena up`` (and other commands that start the embedded Redis) write its URL here (0600:
the URL carries the embedded Redis's password)."""
REDIS_URL_ENV = "ARENA_REDIS_URL"
ADMIN_TOKEN_ENV = "ARENA_ADMIN_TOKEN"
BOT_TOKEN_ENV = "ARENA_TOKEN"

Handler = Callable[[argparse.Namespace], int]


class Commands:
    """Where command modules add their subcommands.

    ``commands.add("presets", handler, help=...)`` adds a top-level command;
    ``commands.add("register", handler, group="bot")`` adds ``arena bot register``.
    """

    GROUP_HELP: ClassVar[dict[str, str]] = {
        "bot": "register, manage and check bots",
        "season": "run league seasons",
        "match": "one-off matches: run, status, list",
    }

    def __init__(self, top: argparse._SubParsersAction[argparse.ArgumentParser]):
        self._top = top
        self._groups: dict[str, argparse._SubParsersAction[argparse.ArgumentParser]] = {}

    def add(
        self, name: str, handler: Handler, *, help: str, group: str | None = None, **kw: Any
    ) -> argparse.ArgumentParser:
        subparsers = self._top if group is None else self._group(group)
        parser = subparsers.add_parser(name, help=help, description=help, **kw)
        parser.set_defaults(handler=handler)
        return parser

    def _group(self, name: str) -> argparse._SubParsersAction[argparse.ArgumentParser]:
        if name not in self._groups:
            text = self.GROUP_HELP.get(name, f"{name} commands")
            group_parser = self._top.add_parser(name, help=text, description=text)
            group_parser.set_defaults(handler=lambda _args, p=group_parser: _usage(p))
            self._groups[name] = group_parser.add_subparsers(
                dest=f"{name}_command", metavar="COMMAND"
            )
        return self._groups[name]


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


# --- Redis: the one place that finds and connects to it -----------------------------------


def add_redis_options(parser: argparse.ArgumentParser) -> None:
    """``--redis-url`` and ``--data-dir``, shared by every command that needs Redis."""
    parser.add_argument(
        "--redis-url",
        default=os.environ.get(REDIS_URL_ENV),
        help="use this Redis: redis://[:PASSWORD@]HOST:PORT/DB, rediss://... for TLS "
        f"(default: ${REDIS_URL_ENV}, better than this flag when it holds a password; "
        "else the embedded one of --data-dir)",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"folder of the embedded Redis and local state (default: ${DATA_DIR_ENV}, "
        "else ~/.local/state/arena)",
    )


def data_dir_of(args: argparse.Namespace) -> Path:
    """``--data-dir``, else :func:`default_data_dir`."""
    given = getattr(args, "data_dir", None)
    return Path(given).expanduser().resolve() if given else default_data_dir()


@contextlib.contextmanager
def record_store_env(args: argparse.Namespace) -> Iterator[None]:
    """While a command runs, the record store it and its children write to is fixed in its
    environment (``$ARENA_RECORDS`` if set, else ``records/`` in the data dir:
    ``referee.records.store_url``); children inherit it, whatever their own data dir."""
    from referee.records import RECORDS_ENV, store_url

    if os.environ.get(RECORDS_ENV):
        yield
        return
    os.environ[RECORDS_ENV] = store_url(data_dir_of(args))
    try:
        yield
    finally:
        os.environ.pop(RECORDS_ENV, None)


def add_cluster_secret_option(parser: argparse.ArgumentParser) -> None:
    """``--cluster-secret-file``: the secret of the internal referee <-> worker stream (a
    file, or $ARENA_CLUSTER_SECRET; never a value on the command line)."""
    parser.add_argument(
        "--cluster-secret-file",
        default=os.environ.get("ARENA_CLUSTER_SECRET_FILE"),
        help="file holding the cluster secret of the internal stream (default: "
        "$ARENA_CLUSTER_SECRET, else <data-dir>/cluster.secret, created if missing)",
    )


def resolve_redis_url(args: argparse.Namespace) -> str:
    """The Redis to talk to: ``--redis-url`` (or ``$ARENA_REDIS_URL``), else the embedded
    one that ``arena up`` runs for the data dir."""
    if getattr(args, "redis_url", None):
        args.connected_redis_url = str(args.redis_url)
        return str(args.redis_url)
    data_dir = data_dir_of(args)
    url_file = data_dir / REDIS_URL_FILE
    if url_file.exists():
        url = url_file.read_text().strip()
        try:
            client = redis.Redis.from_url(url, socket_connect_timeout=0.5)
            client.ping()
            client.close()
            args.connected_redis_url = url  # for the error line of run_handler
            return url
        except (redis.RedisError, ValueError):
            pass
    raise ConfigError(
        f"no Redis to talk to: no running platform in the data dir {data_dir}; start it with "
        f"`arena up` (it writes {url_file}), set {DATA_DIR_ENV} (or --data-dir) to the data "
        f"dir of a running one, or pass --redis-url redis://HOST:PORT/0"
    )


@contextlib.contextmanager
def running_or_embedded_redis(args: argparse.Namespace) -> Iterator[str]:
    """The Redis URL of ``arena up`` / ``arena worker``: ``--redis-url``, the running
    embedded one of the data dir, or a new embedded Redis there, its URL written to
    ``<data-dir>/redis.url`` (0600) while it runs."""
    try:
        url = resolve_redis_url(args)
    except ConfigError:
        if getattr(args, "redis_url", None):
            raise
    else:
        with connection(args, socket_timeout=5.0) as probe:
            probe.ping()  # a dead --redis-url fails here, in one line, not in every child
        yield url
        return
    data_dir = data_dir_of(args)
    server = EmbeddedRedis(data_dir)
    url = server.start()
    args.connected_redis_url = url
    url_file = write_redis_url(data_dir, url)
    logging.getLogger("arena").info(
        "embedded Redis at %s (data in %s)", redacted_url(url), server.data_dir
    )
    try:
        yield url
    finally:
        with contextlib.suppress(FileNotFoundError):
            url_file.unlink()
        server.stop()


def child_env(**secrets: str | None) -> dict[str, str]:
    """This process's environment plus ``secrets`` (e.g. ``ARENA_REDIS_URL``): how the
    platform hands a child its Redis URL and tokens, since argv shows in ``ps``."""
    env = dict(os.environ)
    for key, value in secrets.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def write_redis_url(data_dir: Path, url: str) -> Path:
    """Record the embedded Redis's URL for later commands (0600: it holds the password)."""
    path = data_dir / REDIS_URL_FILE
    write_private(path, url + "\n")
    return path


def connect(args: argparse.Namespace, **options: Any) -> redis.Redis:
    """A client of the Redis of :func:`resolve_redis_url` (text replies unless
    ``decode_responses=False``); a malformed URL is a :class:`ConfigError`."""
    url = resolve_redis_url(args)
    options.setdefault("decode_responses", True)
    options.setdefault("socket_connect_timeout", 5.0)
    try:
        return redis.Redis.from_url(url, **options)
    except ValueError as exc:
        raise ConfigError(
            f"--redis-url {redacted_url(url)} is not a Redis URL ({exc}): use "
            "redis://[:PASSWORD@]HOST:PORT/DB, rediss://... (TLS) or unix:///PATH"
        ) from None


@contextlib.contextmanager
def connection(args: argparse.Namespace, **options: Any) -> Iterator[redis.Redis]:
    """:func:`connect`, closed at the end of the block."""
    client = connect(args, **options)
    try:
        yield client
    finally:
        client.close()


# --- secrets: from the environment or a file, never from argv ------------------------------


def add_secret_file_option(parser: argparse.ArgumentParser, name: str, env: str, what: str) -> None:
    """``--NAME-file PATH``: read a secret from a file (the other way is ``$ENV``); a bare
    ``--NAME VALUE`` is refused, since argv shows in ``ps`` to every user of the host."""
    dest = name.replace("-", "_")
    parser.add_argument(
        f"--{name}-file",
        dest=f"{dest}_file",
        type=Path,
        help=f"file holding the {what} (default: ${env}; never on the command line)",
    )
    parser.add_argument(f"--{name}", dest=f"{dest}_argv", help=argparse.SUPPRESS)


def read_secret(args: argparse.Namespace, name: str, env: str) -> str | None:
    """The secret of :func:`add_secret_file_option`: ``--NAME-file``, else ``$ENV``, else
    ``None``; a value given as ``--NAME`` is a :class:`ConfigError` that says what to do."""
    dest = name.replace("-", "_")
    if getattr(args, f"{dest}_argv", None) is not None:
        raise ConfigError(
            f"--{name} on the command line shows in `ps` to every user of this host: "
            f"set ${env}, or put it in a file (0600) and pass --{name}-file PATH"
        )
    path: Path | None = getattr(args, f"{dest}_file", None)
    if path is not None:
        try:
            text = Path(path).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"--{name}-file {path}: cannot read it ({exc.strerror})") from None
        if not text:
            raise ConfigError(f"--{name}-file {path} is empty: put the {name} in it")
        return text
    return os.environ.get(env) or None


def warn_token_flag(flag: str = "--token") -> None:
    """Bots keep ``--token`` working, with this warning (argv shows in ``ps``)."""
    print(
        f"arena: warning: {flag} on the command line shows in `ps` to every user of this "
        f"host: set ${BOT_TOKEN_ENV} instead",
        file=sys.stderr,
    )


# --- small argument helpers shared by the command modules ---------------------------------


def program_of(args: argparse.Namespace) -> list[str]:
    """The program after ``--`` of ``arena bridge`` / ``arena bot check``."""
    command = list(getattr(args, "command", None) or [])
    if command and command[0] == "--":
        command = command[1:]
    return command


def comma_list(text: str | None) -> list[str]:
    """``"a, b,,c"`` -> ``["a", "b", "c"]``."""
    return [word.strip() for word in (text or "").split(",") if word.strip()]


# --- text someone else wrote -----------------------------------------------------------------

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: object) -> str:
    """``text`` fit for a terminal: every control character (escape sequences, carriage
    returns, bidi overrides) shown as its ``\\xNN``/``\\uNNNN`` escape, newlines and tabs
    kept. The one helper for printing what a bot or a user wrote (a bot's ``Hello.games``, a
    description, an error that quotes them)."""
    return _UNSAFE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(text))


def cell(text: object) -> Text:
    """``text`` for a rich table or console: :func:`terminal_safe`, and never read as rich
    markup (``[bold]`` stays text)."""
    return Text(terminal_safe(text))


# --- errors: the one place that prints them ------------------------------------------------


def fail(message: str, code: int = 1) -> int:
    """Print an error for a person (one line, :func:`terminal_safe`) and return the exit
    code."""
    text = terminal_safe(message)
    line = " ".join(text.split()) if "\n" not in text else text
    print(f"arena: error: {line}", file=sys.stderr)
    return code


def redis_error_message(args: argparse.Namespace, exc: redis.RedisError) -> str:
    """One line for a Redis failure: which Redis, what went wrong, what to do."""
    url = getattr(args, "connected_redis_url", None) or getattr(args, "redis_url", None)
    where = f"the Redis at {redacted_url(url)}" if url else "Redis"
    detail = " ".join(str(exc).split()) or type(exc).__name__
    if isinstance(exc, redis.AuthenticationError) or "NOAUTH" in detail or "WRONGPASS" in detail:
        hint = "the URL needs the right password: redis://:PASSWORD@HOST:PORT/DB"
    else:
        hint = "is the platform running? (arena up), or pass --redis-url"
    return f"cannot talk to {where} ({detail}): {hint}"


def run_handler(handler: Handler, args: argparse.Namespace) -> int:
    """Run a command's handler; ArenaError and RedisError become one line and exit 1, a
    closed stdout (``arena ... | head``) ends quietly."""
    try:
        code = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
        return code
    except (ArenaError, RulesError) as exc:
        return fail(str(exc))
    except redis.RedisError as exc:
        return fail(redis_error_message(args, exc))
    except BrokenPipeError:
        # The reader went away (| head): stop writing, without a traceback at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        return 130
